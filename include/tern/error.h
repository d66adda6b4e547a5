// Library code reports failures by throwing tern::Error; only main() turns
// them into exit codes. Messages are one line and name the file involved.
#pragma once
#include <stdexcept>
#include <string>

namespace tern {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "path: problem" - the one-line form every user-facing error takes.
inline Error file_error(const std::string& path, const std::string& problem) {
  return Error(path + ": " + problem);
}

}  // namespace tern

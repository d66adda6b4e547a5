// Creating an output file safely (tern pack's GGUF, generate's JSONL).
// Output is written to a temporary beside the target and renamed into
// place at the end, so no reader ever sees half a file.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tern {

// Refuses a target that exists and is not a regular file: rename() would
// replace a device node, a FIFO, a socket or the symbolic link itself.
// Throws file_error "path: is a FIFO; ...".
void check_output_path(const std::string& path);

// A new temporary "<path>.tmp-XXXXXX" in the target's directory, made by
// mkstemp (O_CREAT | O_EXCL: a name planted in advance, symlink or not, is
// never opened), with the permissions a plain create would give. It is
// registered for removal by the signal handlers below until
// forget_temporary().
struct Temporary {
  int fd = -1;
  std::string path;
};
Temporary create_temporary(const std::string& target);
void forget_temporary(const std::string& temporary_path);

// Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGXFSZ that remove
// every registered temporary, then die of the same signal. Called once by
// main(); a library never installs signal handlers on its own. SIGKILL
// cannot be caught: it leaves the "<path>.tmp-XXXXXX" file behind.
void remove_temporaries_on_signals();

// A file written through a Temporary and renamed into place by commit();
// destroyed uncommitted (an error, an exception), it leaves nothing behind.
// Every failure throws file_error naming the target.
class OutputFile {
 public:
  explicit OutputFile(std::string path);  // "path: cannot create a temporary in DIR: ..."
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const void* p, size_t n);  // "path: write failed: ...", the temporary dropped
  void write(std::string_view s) { write(s.data(), s.size()); }
  uint64_t tell() const;                // bytes written so far
  // Flushes and syncs the temporary and renames it onto the target, which
  // is checked again (check_output_path): it may have appeared meanwhile.
  void commit();
  const std::string& path() const { return path_; }

 private:
  void drop();
  std::string path_, tmp_;
  std::FILE* fp_ = nullptr;
  uint64_t written_ = 0;
  bool committed_ = false;
};

}  // namespace tern

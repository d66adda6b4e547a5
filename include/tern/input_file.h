// Opening the files a user names (models, checkpoints, tokenizers, texts).
// Anything but a regular file is refused before a byte is read: a FIFO
// would block the reader forever and a device such as /dev/zero never
// ends. Every whole-file read has a size limit named in its error.
#pragma once
#include <cstdint>
#include <string>

namespace tern {

// A read-only descriptor of a regular file and its size at open time.
struct InputFile {
  int fd = -1;
  uint64_t size = 0;
};

// Opens without blocking (O_NONBLOCK, so a FIFO with no writer cannot
// hang the open) and checks with fstat that path is a regular file.
// Throws file_error "path: is a FIFO, not a regular file" and the like.
InputFile open_input_file(const std::string& path);

// The whole of a regular file of at most max_bytes; `what` names it in the
// size error ("path: 2.0 GiB, over the 1 GiB limit for a text file").
std::string read_input_file(const std::string& path, uint64_t max_bytes, const std::string& what);

// "1 GiB", "16 MiB", "512 bytes": sizes in error messages.
std::string byte_size(uint64_t n);

}  // namespace tern

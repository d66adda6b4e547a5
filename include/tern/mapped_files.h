// Files read through mmap (GGUF models) fault with SIGBUS when they shrink
// under the process: another tern pack renaming over them is safe (the old
// inode lives on), but truncation or an in-place rewrite is not. These
// hooks turn that signal into tern's one-line error naming the file.
#pragma once
#include <cstdint>
#include <string>

namespace tern {

// A mapping of `path` at [base, base + size). Registration is cheap and
// lock-free; an unregistered address still gets a generic message.
void register_mapped_file(const void* base, uint64_t size, const std::string& path);
void forget_mapped_file(const void* base);

// Installs the SIGBUS handler: "tern: error: PATH: changed on disk while
// mapped (truncated or rewritten in place); rerun, or use --no-mmap" on
// stderr, then exit status 1. Called once by main().
void report_bus_errors_on_mapped_files();

}  // namespace tern

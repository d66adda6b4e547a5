#include "tern/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "tern/error.h"

namespace tern {
namespace {

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a file";
}

}  // namespace

std::string byte_size(uint64_t n) {
  char buf[48];
  if (n >= (uint64_t(1) << 30) && n % (uint64_t(1) << 30) == 0)
    std::snprintf(buf, sizeof buf, "%llu GiB", static_cast<unsigned long long>(n >> 30));
  else if (n >= (uint64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", double(n) / double(uint64_t(1) << 30));
  else if (n >= (uint64_t(1) << 20) && n % (uint64_t(1) << 20) == 0)
    std::snprintf(buf, sizeof buf, "%llu MiB", static_cast<unsigned long long>(n >> 20));
  else if (n >= (uint64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(n) / double(1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(n));
  return buf;
}

InputFile open_input_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    throw file_error(path, err == ENOENT ? std::string("not found") : std::string("cannot open: ") + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw file_error(path, std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw file_error(path, std::string("is ") + kind_of(st.st_mode) + ", not a regular file");
  }
  // Reads of a regular file never return EAGAIN, but blocking mode is what
  // every later reader expects.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return {fd, static_cast<uint64_t>(st.st_size)};
}

std::string read_input_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
  const InputFile in = open_input_file(path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{in.fd};
  auto over = [&](const std::string& size) {
    return file_error(path, size + ", over the " + byte_size(max_bytes) + " limit for " + what);
  };
  if (in.size > max_bytes) throw over(byte_size(in.size));
  // The size at open is a hint: the file may grow while it is read (or be
  // /proc-like and report 0), so it is read to its end, but never more than
  // one byte past the limit.
  const size_t cap = static_cast<size_t>(std::min<uint64_t>(max_bytes, SIZE_MAX - 1)) + 1;
  std::string text(static_cast<size_t>(std::min<uint64_t>(in.size + 1, cap)), '\0');
  size_t got = 0;
  for (;;) {
    if (got == text.size()) {
      if (got == cap) throw over("more than " + byte_size(max_bytes));
      text.resize(std::min(std::max<size_t>(2 * got, 4096), cap));
    }
    const ssize_t r = ::read(in.fd, text.data() + got, text.size() - got);
    if (r == 0) break;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw file_error(path, std::string("read error: ") + std::strerror(errno));
    got += static_cast<size_t>(r);
  }
  text.resize(got);
  return text;
}

}  // namespace tern

#include "tern/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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
  auto too_big = [&](uint64_t n) {
    ::close(in.fd);
    return file_error(path, byte_size(n) + ", over the " + byte_size(max_bytes) + " limit for " + what);
  };
  if (in.size > max_bytes) throw too_big(in.size);
  // The size at open is a hint: the file may grow or shrink while it is read.
  std::string text(static_cast<size_t>(in.size), '\0');
  size_t got = 0;
  for (;;) {
    if (got == text.size()) {
      if (text.size() > max_bytes) throw too_big(text.size());
      text.resize(std::max<size_t>(text.size() * 2, 4096));
    }
    const ssize_t r = ::read(in.fd, text.data() + got, text.size() - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(in.fd);
      throw file_error(path, std::string("read error: ") + std::strerror(err));
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(in.fd);
  if (got > max_bytes) throw file_error(path, byte_size(got) + ", over the " + byte_size(max_bytes) + " limit for " + what);
  text.resize(got);
  return text;
}

}  // namespace tern

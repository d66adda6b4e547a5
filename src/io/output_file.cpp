#include "tern/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "tern/error.h"

namespace tern {
namespace {

// Paths a signal handler may unlink: fixed slots of strdup'd strings, read
// with lock-free atomics, because a handler can neither lock nor allocate.
constexpr int kSlots = 16;
std::atomic<char*> g_temporaries[kSlots];
static_assert(std::atomic<char*>::is_always_lock_free);

void register_temporary(const std::string& path) {
  char* copy = ::strdup(path.c_str());
  if (!copy) throw std::bad_alloc();
  for (auto& slot : g_temporaries) {
    char* expected = nullptr;
    if (slot.compare_exchange_strong(expected, copy)) return;
  }
  std::free(copy);  // more than kSlots open outputs: this one is not cleaned on a signal
}

extern "C" void on_fatal_signal(int sig) {
  for (auto& slot : g_temporaries)
    if (char* p = slot.load()) ::unlink(p);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

void check_output_path(const std::string& path) {
  struct stat st {};
  // Absent, or unreachable (EACCES on a parent): creating the temporary
  // reports the real problem with the directory's name.
  if (::lstat(path.c_str(), &st) != 0) return;
  if (S_ISREG(st.st_mode)) return;
  const char* kind = S_ISLNK(st.st_mode)   ? "a symbolic link (the output would replace the link; give the file it points to)"
                     : S_ISDIR(st.st_mode) ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                    : "not a regular file";
  throw file_error(path, std::string("output exists and is ") + kind);
}

Temporary create_temporary(const std::string& target) {
  check_output_path(target);
  std::string name = target + ".tmp-XXXXXX";
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  const int fd = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0)
    throw file_error(target, "cannot create a temporary in " + directory_of(target) + ": " + std::strerror(errno));
  // mkstemp makes 0600; a packed model should be as readable as a file
  // made by open(O_CREAT, 0666) under this process's umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  Temporary t{fd, std::string(buf.data())};
  try {
    register_temporary(t.path);
  } catch (...) {
    ::close(fd);
    ::unlink(t.path.c_str());
    throw;
  }
  return t;
}

void forget_temporary(const std::string& temporary_path) {
  for (auto& slot : g_temporaries) {
    char* p = slot.load();
    if (p && temporary_path == p && slot.compare_exchange_strong(p, nullptr)) {
      std::free(p);
      return;
    }
  }
}

void remove_temporaries_on_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGXFSZ}) {
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  const Temporary t = create_temporary(path_);
  tmp_ = t.path;
  fp_ = ::fdopen(t.fd, "wb");
  if (!fp_) {
    const int err = errno;
    ::close(t.fd);
    drop();
    throw file_error(path_, std::string("cannot create: ") + std::strerror(err));
  }
}

OutputFile::~OutputFile() {
  if (fp_) std::fclose(fp_);
  if (!committed_) drop();
}

void OutputFile::drop() {
  ::unlink(tmp_.c_str());
  forget_temporary(tmp_);
}

void OutputFile::write(const void* p, size_t n) {
  if (!fp_) throw file_error(path_, "write after an earlier failure");
  if (n == 0) return;
  if (std::fwrite(p, 1, n, fp_) != n) {
    const int err = errno;
    // Dropped now; the destructor would too, but a caller that keeps the
    // file around should not keep a broken temporary.
    std::fclose(fp_);
    fp_ = nullptr;
    drop();
    throw file_error(path_, std::string("write failed: ") + std::strerror(err));
  }
  written_ += n;
}

uint64_t OutputFile::tell() const { return written_; }

void OutputFile::commit() {
  if (committed_) throw file_error(path_, "committed twice");
  if (!fp_) throw file_error(path_, "commit after an earlier failure");
  std::FILE* fp = std::exchange(fp_, nullptr);
  // fflush/fsync/fclose are where ENOSPC and EIO surface for buffered data.
  int err = 0;
  if (std::fflush(fp) != 0) err = errno;
  if (!err && ::fsync(::fileno(fp)) != 0 && errno != EINVAL) err = errno;
  if (std::fclose(fp) != 0 && !err) err = errno;
  if (err) {
    drop();
    throw file_error(path_, std::string("write failed: ") + std::strerror(err));
  }
  try {
    check_output_path(path_);
  } catch (...) {
    drop();
    throw;
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    err = errno;
    drop();
    throw file_error(path_, std::string("cannot rename temporary into place: ") + std::strerror(err));
  }
  forget_temporary(tmp_);
  committed_ = true;
}

}  // namespace tern

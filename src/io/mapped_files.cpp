#include "tern/mapped_files.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace tern {
namespace {

// A signal handler can neither lock nor allocate, so mappings live in fixed
// slots whose message is composed when the file is mapped. `message` is
// published last and cleared first, so a handler never sees a slot half
// filled; writers take g_mutex, the handler only reads.
struct Slot {
  std::atomic<uintptr_t> begin{0}, end{0};
  std::atomic<char*> message{nullptr};
};
constexpr int kSlots = 32;
Slot g_slots[kSlots];
std::mutex g_mutex;

void write_all(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= size_t(w);
  }
}

extern "C" void on_bus_error(int sig, siginfo_t* info, void*) {
  const auto at = reinterpret_cast<uintptr_t>(info ? info->si_addr : nullptr);
  for (Slot& s : g_slots) {
    char* m = s.message.load();
    if (m && at >= s.begin.load() && at < s.end.load()) {
      write_all(m);
      ::_exit(1);
    }
  }
  write_all("tern: error: bus error (SIGBUS) outside any mapped model file\n");
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void register_mapped_file(const void* base, uint64_t size, const std::string& path) {
  const std::string line = "tern: error: " + path +
                           ": changed on disk while mapped (truncated or rewritten in place); run again, or use --no-mmap\n";
  char* msg = ::strdup(line.c_str());
  if (!msg) return;
  for (char* p = msg; p[1] != '\0'; ++p)  // one line, whatever the path holds
    if (static_cast<unsigned char>(*p) < 0x20 || *p == 0x7f) *p = '?';
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Slot& s : g_slots)
    if (!s.message.load()) {
      s.begin.store(reinterpret_cast<uintptr_t>(base));
      s.end.store(reinterpret_cast<uintptr_t>(base) + size);
      s.message.store(msg);
      return;
    }
  std::free(msg);  // more mappings than slots: a fault there gets the generic line
}

void forget_mapped_file(const void* base) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Slot& s : g_slots)
    if (s.message.load() && s.begin.load() == reinterpret_cast<uintptr_t>(base)) {
      std::free(s.message.exchange(nullptr));
      return;
    }
}

void report_bus_errors_on_mapped_files() {
  struct sigaction sa {};
  sa.sa_sigaction = on_bus_error;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

}  // namespace tern

#include "conn_watch.h"

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <string_view>
#include <vector>

namespace tern::serve {

namespace {

int local_port(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return -1;
}

// "addr:port" of fd's peer as httplib writes a request's remote_addr and
// remote_port (getnameinfo, numeric); "" when fd is not a connected socket
// on `port`.
std::string peer_of(int fd, int port) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return {};
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || local_port(a) != port) return {};
  len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return {};  // the listening socket
  char host[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return {};
  return ConnectionWatch::peer_key(host, local_port(a));
}

// Whether fd's unread bytes hold a whole request (headers and the body its
// Content-Length or chunked encoding asks for): a client that sent it all
// and waits for an HTTP thread, which is not to be cut.
bool whole_request_waiting(int fd) {
  int n = 0;
  if (ioctl(fd, FIONREAD, &n) != 0 || n <= 0) return false;
  std::vector<char> buf(size_t(std::min(n, 2 << 20)));
  const ssize_t got = recv(fd, buf.data(), buf.size(), MSG_PEEK | MSG_DONTWAIT);
  if (got <= 0) return false;
  const std::string_view v(buf.data(), size_t(got));
  const size_t head = v.find("\r\n\r\n");
  if (head == std::string_view::npos) return false;
  std::string lower(v.substr(0, head));
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (lower.find("transfer-encoding: chunked") != std::string::npos) return v.ends_with("0\r\n\r\n");
  const size_t cl = lower.find("content-length:");
  const long long body = cl == std::string::npos ? 0 : std::atoll(lower.c_str() + cl + 15);
  return body >= 0 && n >= 0 && (long long)(head + 4) + body <= (long long)n;
}

}  // namespace

ConnectionWatch::ConnectionWatch(int port, std::chrono::milliseconds deadline,
                                 std::function<void(const std::string&)> on_close)
    : port_(port), deadline_(deadline), on_close_(std::move(on_close)) {
  thread_ = std::thread([this] { loop(); });
}

ConnectionWatch::~ConnectionWatch() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ConnectionWatch::begin(const std::string& peer) {
  std::lock_guard<std::mutex> lock(m_);
  Peer& p = peers_[peer];
  ++p.in_request;
  p.last_live = Clock::now();
}

void ConnectionWatch::end(const std::string& peer) {
  std::lock_guard<std::mutex> lock(m_);
  Peer& p = peers_[peer];
  p.in_request = std::max(p.in_request - 1, 0);
  p.idle_since = Clock::now();
}

void ConnectionWatch::loop() {
  // A tenth of the deadline (at most 1 s) between scans: a connection is cut
  // within 1.1x the deadline. Idle, a scan lists a few dozen fds.
  const auto period = std::min<std::chrono::milliseconds>(deadline_ / 10 + std::chrono::milliseconds(1),
                                                          std::chrono::milliseconds(1000));
  std::unique_lock<std::mutex> lock(m_);
  while (!cv_.wait_for(lock, period, [&] { return stop_; })) {
    lock.unlock();
    scan(Clock::now());
    lock.lock();
  }
}

void ConnectionWatch::scan(Clock::time_point now) {
  std::set<int> live;
  std::set<std::string> peers;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  while (const dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || fd < 0 || fd == dirfd(d)) continue;
    const std::string peer = peer_of(int(fd), port_);
    if (peer.empty()) continue;
    live.insert(int(fd));
    peers.insert(peer);
    auto [it, fresh] = conns_.try_emplace(int(fd), Conn{peer, now});
    if (!fresh && it->second.peer != peer) it->second = {peer, now};  // the fd was reused
    Clock::time_point since = it->second.seen;
    {
      std::lock_guard<std::mutex> lock(m_);
      auto p = peers_.find(peer);
      if (p != peers_.end()) {
        p->second.last_live = now;
        if (p->second.in_request > 0) continue;
        since = std::max(since, p->second.idle_since);
      }
    }
    if (now - since < deadline_) continue;
    if (whole_request_waiting(int(fd))) {
      // The client has done its part and waits for an HTTP thread. Its clock
      // restarts: the thread that reads the request calls begin() a moment
      // later, and a scan in that moment (the bytes read, begin() not yet
      // called) must not take it for a trickler.
      it->second.seen = now;
      continue;
    }
    // Still the same connection (the fd is not one reused since)?
    if (peer_of(int(fd), port_) != peer) continue;
    shutdown(int(fd), SHUT_RDWR);  // httplib's blocked read returns; it closes the socket itself
    if (on_close_) on_close_(peer);
    it->second.seen = now + std::chrono::hours(1);  // once
  }
  closedir(d);
  std::erase_if(conns_, [&](const auto& c) { return !live.count(c.first); });
  std::lock_guard<std::mutex> lock(m_);
  // A peer is forgotten once its connection is gone; one in a request (its
  // response not yet logged) a minute later, should httplib not log it.
  std::erase_if(peers_, [&](const auto& p) {
    return !peers.count(p.first) && (p.second.in_request == 0 || now - p.second.last_live > std::chrono::minutes(1));
  });
}

}  // namespace tern::serve

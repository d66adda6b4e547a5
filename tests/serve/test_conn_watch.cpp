// ConnectionWatch on a socket pair of this process: which connections of
// the port it cuts, and when. The deadline is 1 s so that the checks keep
// hundreds of milliseconds of margin on a loaded machine.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "serve/conn_watch.h"

namespace tern::serve {
namespace {

using namespace std::chrono_literals;

// A listening socket on 127.0.0.1 and the connections made to it: the
// client ends and the accepted (server) ends, all in this process.
struct Port {
  int listener = -1;
  int port = 0;
  std::vector<int> fds;
  Port() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(listener, 8), 0);
    socklen_t len = sizeof a;
    getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Port() {
    for (int fd : fds) close(fd);
    close(listener);
  }
  // Connects; returns (client fd, server fd, the peer key the watch uses).
  std::tuple<int, int, std::string> connect_one() {
    const int c = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(uint16_t(port));
    EXPECT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    const int s = accept(listener, nullptr, nullptr);
    fds.push_back(c);
    fds.push_back(s);
    socklen_t len = sizeof a;
    getsockname(c, reinterpret_cast<sockaddr*>(&a), &len);
    return {c, s, ConnectionWatch::peer_key("127.0.0.1", ntohs(a.sin_port))};
  }
};

struct Cuts {
  std::mutex m;
  std::vector<std::string> peers;
  size_t count() {
    std::lock_guard<std::mutex> lock(m);
    return peers.size();
  }
  bool has(const std::string& p) {
    std::lock_guard<std::mutex> lock(m);
    return std::find(peers.begin(), peers.end(), p) != peers.end();
  }
  std::function<void(const std::string&)> recorder() {
    return [this](const std::string& p) {
      std::lock_guard<std::mutex> lock(m);
      peers.push_back(p);
    };
  }
};

void send_all(int fd, const std::string& s) { ASSERT_EQ(send(fd, s.data(), s.size(), 0), ssize_t(s.size())); }

TEST(ConnectionWatch, CutsATricklerAfterTheDeadline) {
  Port port;
  Cuts cuts;
  ConnectionWatch watch(port.port, 1000ms, cuts.recorder());
  auto [c, s, peer] = port.connect_one();
  const auto t0 = std::chrono::steady_clock::now();
  while (!cuts.has(peer) && std::chrono::steady_clock::now() - t0 < 5s) {
    send_all(c, "P");  // never a whole request
    std::this_thread::sleep_for(100ms);
  }
  const auto lived = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(cuts.has(peer)) << "a trickling connection lived 5 s on a 1 s deadline";
  EXPECT_GE(lived, 900ms);
  char b;
  EXPECT_EQ(recv(c, &b, 1, 0), 0) << "the client end sees the connection closed";
}

TEST(ConnectionWatch, AWholeRequestWaitingIsSparedAndSoIsItsReader) {
  Port port;
  Cuts cuts;
  ConnectionWatch watch(port.port, 1000ms, cuts.recorder());
  auto [c, s, peer] = port.connect_one();
  const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
  send_all(c, req);
  // Waiting for an HTTP thread well past the deadline: not cut.
  std::this_thread::sleep_for(2500ms);
  EXPECT_FALSE(cuts.has(peer));
  // A thread reads it and is about to call begin(): the watch must not cut
  // the connection in that moment, although it is older than the deadline
  // and nothing is waiting in it any more.
  std::string got(req.size(), '\0');
  ASSERT_EQ(recv(s, got.data(), got.size(), MSG_WAITALL), ssize_t(req.size()));
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(cuts.has(peer)) << "cut between reading a request and begin()";
  watch.begin(peer);
  std::this_thread::sleep_for(1500ms);  // a response slower than the deadline
  EXPECT_FALSE(cuts.has(peer));
  watch.end(peer);
  // Idle after its response: a keep-alive connection is cut a deadline later.
  const auto t0 = std::chrono::steady_clock::now();
  while (!cuts.has(peer) && std::chrono::steady_clock::now() - t0 < 5s) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(cuts.has(peer));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 850ms);
}

TEST(ConnectionWatch, OtherPortsAreLeftAlone) {
  Port watched, other;
  Cuts cuts;
  ConnectionWatch watch(watched.port, 300ms, cuts.recorder());
  auto [c, s, _] = other.connect_one();
  std::this_thread::sleep_for(1000ms);
  EXPECT_EQ(cuts.count(), 0u);
  send_all(c, "still open");
  char b[10];
  EXPECT_EQ(recv(s, b, sizeof b, MSG_WAITALL), ssize_t(sizeof b));
}

}  // namespace
}  // namespace tern::serve

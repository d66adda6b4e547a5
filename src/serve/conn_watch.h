// A deadline on reading a whole request. cpp-httplib's read timeout is per
// read, so a client that sends a byte every few seconds (slowloris) holds
// an HTTP thread for as long as it likes, and enough of them hold them
// all. ConnectionWatch closes (shutdown(2)) every connection of the
// server's port that has not delivered a whole request within `deadline`
// of connecting or of its last response, whatever it trickles meanwhile;
// a whole request waiting unread for an HTTP thread restarts that clock.
// httplib does not hand its sockets out, so the watch finds them in
// /proc/self/fd (Linux) by their local port and tells them apart by peer
// address, which is also what httplib gives a request.
#pragma once
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace tern::serve {

class ConnectionWatch {
 public:
  using Clock = std::chrono::steady_clock;
  // `on_close(peer)` is called for each connection the watch cuts.
  ConnectionWatch(int port, std::chrono::milliseconds deadline, std::function<void(const std::string&)> on_close);
  ~ConnectionWatch();
  ConnectionWatch(const ConnectionWatch&) = delete;
  ConnectionWatch& operator=(const ConnectionWatch&) = delete;

  // A request from `peer` ("addr:port") has been read: its connection is
  // left alone until end(peer), when its response has been written.
  void begin(const std::string& peer);
  void end(const std::string& peer);

  static std::string peer_key(const std::string& addr, int port) { return addr + ":" + std::to_string(port); }

 private:
  struct Conn {
    std::string peer;
    Clock::time_point seen;  // when the watch first saw it, or last saw a whole request waiting in it
  };
  struct Peer {
    int in_request = 0;
    Clock::time_point idle_since{};  // the end of its last response
    Clock::time_point last_live{};   // when a scan last saw its connection
  };
  void loop();
  void scan(Clock::time_point now);

  const int port_;
  const std::chrono::milliseconds deadline_;
  std::function<void(const std::string&)> on_close_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<int, Conn> conns_;          // by fd; only the watch thread touches it
  std::map<std::string, Peer> peers_;  // under m_
  std::thread thread_;
};

}  // namespace tern::serve

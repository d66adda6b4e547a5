// Seconds since a steady-clock time point: the timing the application layer
// (generation, perplexity) and the kernel auto-tuner share.
#pragma once
#include <chrono>

namespace tern {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace tern

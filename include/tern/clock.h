// Timing shared by generation and perplexity (internal to src/model).
#pragma once
#include <chrono>

namespace tern {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace tern

// Comparing logits of two engines (whole-model and family tests).
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

namespace tern::test {

// max |a - b| relative to max |b|: logits near zero make per-element
// relative error meaningless.
inline double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::fabs(double(a[i]) - b[i]));
    den = std::max(den, std::fabs(double(b[i])));
  }
  return num / den;
}

}  // namespace tern::test

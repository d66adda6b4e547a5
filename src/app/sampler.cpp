#include <algorithm>
#include <cmath>

#include "tern/generate.h"

namespace tern {

Sampler::Sampler(const SamplerParams& p) : p_(p), state_(p.seed) {}

double Sampler::uniform() {
  // splitmix64: tiny, portable, and identical everywhere (unlike <random>
  // distributions, whose output the standard leaves to the implementation).
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}

namespace {

// Ties broken by id so the order never depends on the sort implementation.
bool better(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

}  // namespace

void Sampler::accept(int32_t token) {
  if (p_.presence_penalty == 0 && p_.frequency_penalty == 0) return;
  for (auto& [t, n] : counts_)
    if (t == token) {
      ++n;
      return;
    }
  counts_.push_back({token, 1});
}

std::span<const float> Sampler::adjust(std::span<const float> logits) {
  if (p_.logit_bias.empty() && counts_.empty()) return logits;
  adjusted_.assign(logits.begin(), logits.end());
  for (auto [t, b] : p_.logit_bias)
    if (t >= 0 && size_t(t) < adjusted_.size()) adjusted_[size_t(t)] += b;
  for (auto [t, n] : counts_)
    if (size_t(t) < adjusted_.size()) adjusted_[size_t(t)] -= p_.presence_penalty + p_.frequency_penalty * float(n);
  return adjusted_;
}

int32_t Sampler::sample(std::span<const float> raw) {
  const std::span<const float> logits = adjust(raw);
  if (p_.temp <= 0) return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  std::vector<double> prob;
  const int keep = candidates(logits, prob);
  double kept = 0;
  for (int i = 0; i < keep; ++i) kept += prob[size_t(i)];
  double u = uniform() * kept;
  for (int i = 0; i < keep; ++i) {
    u -= prob[size_t(i)];
    if (u < 0) return cand_[size_t(i)].second;
  }
  return cand_[size_t(keep - 1)].second;
}

// Top-k by logit, then temperature softmax weights (unnormalized) in prob,
// then top-p: returns how many of cand_ are kept.
int Sampler::candidates(std::span<const float> logits, std::vector<double>& prob) {
  const int n = int(logits.size());
  cand_.resize(size_t(n));
  for (int i = 0; i < n; ++i) cand_[size_t(i)] = {logits[size_t(i)], i};
  const int k = p_.top_k > 0 ? std::min(p_.top_k, n) : n;
  std::partial_sort(cand_.begin(), cand_.begin() + k, cand_.end(), better);
  cand_.resize(size_t(k));
  prob.assign(size_t(k), 0.0);
  double sum = 0;
  for (int i = 0; i < k; ++i) {
    prob[size_t(i)] = std::exp(double(cand_[size_t(i)].first - cand_[0].first) / p_.temp);
    sum += prob[size_t(i)];
  }
  int keep = k;
  if (p_.top_p < 1.0f) {
    double cum = 0;
    for (int i = 0; i < k; ++i) {
      cum += prob[size_t(i)] / sum;
      if (cum >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  // prob[0] is the largest (1: the weights are relative to the best).
  while (keep > 1 && prob[size_t(keep - 1)] < double(p_.min_p)) --keep;
  return keep;
}

void Sampler::distribution(std::span<const float> raw, Dist& out) {
  const std::span<const float> logits = adjust(raw);
  out.clear();
  if (p_.temp <= 0) {
    out.push_back({int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()), 1.0});
    return;
  }
  std::vector<double> prob;
  const int keep = candidates(logits, prob);
  double kept = 0;
  for (int i = 0; i < keep; ++i) kept += prob[size_t(i)];
  for (int i = 0; i < keep; ++i) out.push_back({cand_[size_t(i)].second, prob[size_t(i)] / kept});
}

int32_t Sampler::draw(const Dist& d) {
  if (d.size() == 1) return d[0].first;
  double u = uniform();
  for (const auto& [id, p] : d) {
    u -= p;
    if (u < 0) return id;
  }
  return d.back().first;
}

}  // namespace tern

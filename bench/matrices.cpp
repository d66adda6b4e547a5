// Weight matrices for the kernel benchmark. DRAM-cold runs rotate over
// distinct copies whose total exceeds 4 x L3, so each call finds its matrix
// evicted; the copies differ in content (random blocks negated) so no layer
// below us (KSM on a VM host, say) can merge them into one physical copy.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "bench.h"
#include "tern/error.h"
#include "tern/quant.h"

namespace tern::bench {

namespace {

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Per-byte negation of every trit a code byte holds (code c -> 2 - c), so a
// negated block is as valid as the original.
struct NegationLut {
  uint8_t tq2[256], tq1[256];
  NegationLut() {
    for (int b = 0; b < 256; ++b) {
      int out = 0;
      for (int n = 0; n < 4; ++n) {
        const int c = (b >> (2 * n)) & 3;
        out |= (c == 3 ? 3 : 2 - c) << (2 * n);
      }
      tq2[b] = uint8_t(out);
      // quant.h: code n = ((uint8_t)(b * 3^n) * 3) >> 8, and the byte of the
      // base-3 number v is ceil(v * 256 / 243).
      int v = 0, pow3 = 1;
      for (int n = 0; n < 5; ++n, pow3 *= 3) {
        const int c = (uint8_t(b * pow3) * 3) >> 8;
        v = v * 3 + (2 - c);
      }
      tq1[b] = uint8_t((v * 256 + 242) / 243);
    }
  }
};

int64_t mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return -1;
}

// Copies of one random matrix; copies[0] is the warm matrix.
struct RawSet {
  gguf::TensorType type = gguf::TensorType::TQ2_0;
  int64_t M = 0, K = 0, row_bytes = 0;
  std::vector<float> scale;
  std::vector<AlignedBuffer> copies;
  size_t next = 0, warm_next = 0;
};

// prepare()d layouts of the first packed.size() raw copies, for one set.
struct PackedSet {
  Prepare prep = nullptr;
  std::vector<std::shared_ptr<const void>> packed;
  int64_t bytes = 0;  // of one copy, as the set reports it
  size_t next = 0;
};

RawSet g_raw;
PackedSet g_packed;

int64_t matrix_bytes(const RawSet& r) { return r.M * r.row_bytes; }

void make_original(RawSet& r, gguf::TensorType type, int64_t M, int64_t K) {
  release_matrices();
  r.type = type;
  r.M = M;
  r.K = K;
  r.row_bytes = ternary_row_bytes(type, K);
  r.scale.resize(size_t(M));
  AlignedBuffer data = alloc_aligned(size_t(matrix_bytes(r)), "a benchmark weight matrix");
  std::vector<int8_t> trits(static_cast<size_t>(K));
  uint64_t seed = 0x7465726eull ^ uint64_t(M) << 20 ^ uint64_t(K) << 40 ^ uint64_t(type);
  for (int64_t row = 0; row < M; ++row) {
    for (int64_t k = 0; k < K; k += 8) {
      const uint64_t bits = splitmix(seed);
      for (int j = 0; j < 8; ++j) trits[size_t(k + j)] = int8_t(((bits >> (8 * j)) & 0xff) % 3) - 1;
    }
    r.scale[size_t(row)] = 0.5f + float(splitmix(seed) >> 40) / float(1 << 24);
    pack_ternary_row(type, trits.data(), K, f32_to_fp16(r.scale[size_t(row)]),
                     data.get() + row * r.row_bytes);
  }
  r.copies.push_back(std::move(data));
}

void ensure_copies(RawSet& r, size_t n) {
  if (r.copies.size() >= n) return;
  check_fits(int64_t(n - r.copies.size()) * matrix_bytes(r), "DRAM-cold matrix copies");
  static const NegationLut lut;
  const uint8_t* neg = r.type == gguf::TensorType::TQ2_0 ? lut.tq2 : lut.tq1;
  const int64_t block = r.type == gguf::TensorType::TQ2_0 ? int64_t(sizeof(BlockTQ2))
                                                          : int64_t(sizeof(BlockTQ1));
  // Only the 5-trit bytes of TQ1_0 (its qh bytes hold 4 trits) and never d.
  const int64_t codes = r.type == gguf::TensorType::TQ2_0 ? int64_t(sizeof(BlockTQ2::qs))
                                                          : int64_t(sizeof(BlockTQ1::qs));
  const int64_t blocks = matrix_bytes(r) / block;
  const uint8_t* src = r.copies[0].get();
  uint64_t seed = 0x636f7079ull + r.copies.size();
  while (r.copies.size() < n) {
    AlignedBuffer b = alloc_aligned(size_t(matrix_bytes(r)), "a benchmark weight copy");
    std::memcpy(b.get(), src, size_t(matrix_bytes(r)));
    for (int64_t i = 0; i < blocks; i += 64) {
      const uint64_t flip = splitmix(seed);
      for (int64_t j = i; j < std::min(blocks, i + 64); ++j) {
        if (((flip >> (j - i)) & 1) == 0) continue;
        uint8_t* p = b.get() + j * block;
        for (int64_t c = 0; c < codes; ++c) p[c] = neg[p[c]];
      }
    }
    r.copies.push_back(std::move(b));
  }
  r.next = 1 % r.copies.size();  // copies were just written in order; 0 is the warm one
  g_packed.next = 1 % std::max<size_t>(1, g_packed.packed.size());
}

TernaryMatrix view(const RawSet& r, size_t i, const void* packed) {
  TernaryMatrix w;
  w.type = r.type;
  w.rows = r.M;
  w.cols = r.K;
  w.data = r.copies[i].get();
  w.row_scale = r.scale.data();
  w.packed = packed;
  return w;
}

void ensure_packed(PackedSet& p, const RawSet& r, size_t n) {
  if (p.packed.size() >= n) return;
  if (p.bytes > 0) check_fits(int64_t(n - p.packed.size()) * p.bytes, "prepared matrix copies");
  while (p.packed.size() < n) {
    std::shared_ptr<const void> l = p.prep(view(r, p.packed.size(), nullptr));
    if (!l) throw Error("bench: prepare() returned no layout");
    p.packed.push_back(std::move(l));
  }
  p.next = 1 % p.packed.size();
  g_raw.next = 1 % g_raw.copies.size();  // prepare() read the raw copies in order
}

size_t cold_count(int64_t bytes_per_copy) {
  return size_t(std::max<int64_t>(2, cold_bytes() / std::max<int64_t>(1, bytes_per_copy) + 1));
}

}  // namespace

void check_fits(int64_t extra, const char* what) {
  const int64_t avail = mem_available_bytes();
  if (avail >= 0 && extra > avail / 10 * 8)
    throw Error("bench: " + std::string(what) + " needs " + std::to_string(extra >> 20) +
                " MiB more, only " + std::to_string(avail >> 20) +
                " MiB available (set TERN_BENCH_L3_BYTES lower)");
}

int64_t l3_bytes(std::string* source) {
  auto say = [&](const char* s) {
    if (source != nullptr) *source = s;
  };
  if (const char* env = std::getenv("TERN_BENCH_L3_BYTES"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    double v = std::strtod(env, &end);
    const std::string unit = end;
    if (unit == "K" || unit == "k") v *= 1024;
    else if (unit == "M" || unit == "m") v *= 1024 * 1024;
    else if (unit == "G" || unit == "g") v *= 1024.0 * 1024 * 1024;
    else if (!unit.empty() || end == env)
      throw Error(std::string("TERN_BENCH_L3_BYTES=") + env + ": not a size (use e.g. 32M)");
    if (v < 1) throw Error(std::string("TERN_BENCH_L3_BYTES=") + env + ": must be positive");
    say("TERN_BENCH_L3_BYTES");
    return int64_t(v);
  }
  if (const long v = sysconf(_SC_LEVEL3_CACHE_SIZE); v > 0) {
    say("sysconf(_SC_LEVEL3_CACHE_SIZE)");
    return v;
  }
  std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index3/size");
  int64_t v = 0;
  std::string unit;
  if (f >> v && v > 0) {
    f >> unit;
    say("/sys/devices/system/cpu/cpu0/cache/index3/size");
    return unit == "K" ? v * 1024 : unit == "M" ? v * 1024 * 1024 : v;
  }
  say("fallback");
  return int64_t(32) << 20;
}

Rotation matrices(gguf::TensorType type, int64_t M, int64_t K, const KernelSet& set, bool cold) {
  const Prepare prep = set.prepare;
  RawSet& r = g_raw;
  if (r.copies.empty() || r.type != type || r.M != M || r.K != K) make_original(r, type, M, K);
  Rotation rot;
  // A set that reads this type in place prepares nothing for it.
  if (prep == nullptr || set.prepared_bytes(view(r, 0, nullptr)) == 0) {
    rot.read_bytes = matrix_bytes(r);
    const size_t n = cold ? std::max(cold_count(rot.read_bytes), r.copies.size()) : 1;
    ensure_copies(r, n);
    for (size_t i = 0; i < n; ++i) rot.mats.push_back(view(r, i, nullptr));
    rot.next = cold ? &r.next : &r.warm_next;
    return rot;
  }
  PackedSet& p = g_packed;
  if (p.prep != prep) {
    p = PackedSet{};
    p.prep = prep;
    if (set.prepared_bytes == nullptr) throw Error(std::string("bench: ") + set.name + " prepares but reports no layout size");
    p.bytes = set.prepared_bytes(view(r, 0, nullptr));
  }
  ensure_packed(p, r, 1);
  rot.read_bytes = p.bytes;
  rot.packed = true;
  const size_t n = cold ? std::max(cold_count(p.bytes), p.packed.size()) : 1;
  ensure_copies(r, n);
  ensure_packed(p, r, n);
  for (size_t i = 0; i < n; ++i) rot.mats.push_back(view(r, i, p.packed[i].get()));
  rot.next = cold ? &p.next : &r.warm_next;
  return rot;
}

void release_matrices() {
  g_packed = PackedSet{};
  g_raw = RawSet{};
}

ThreadPool& pool(int threads) {
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  auto& p = pools[threads];
  if (!p) p = std::make_unique<ThreadPool>(threads);
  return *p;
}

bool split_rows(const KernelSet& set, ActMode mode, const TernaryMatrix& w, const float* x, const int8_t* q,
                int64_t n, float* y, int32_t* sums, int threads) {
  return for_rows(threads, w.rows, [&](int64_t r0, int64_t r1) {
    if (mode == ActMode::Float) set.gemm_f32(w, x, n, y, r0, r1);
    else set.gemm_i8(w, q, n, sums, r0, r1);
  });
}

}  // namespace tern::bench

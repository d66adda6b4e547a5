// The reference kernels: decode each weight row to trits with the same
// unpack the tests check against llama.cpp, then take plain dot products.
// Every other kernel set is tested against these.
//
// Float summation order (what "exact" means for float comparisons): for each
// 256-element block, the products t[k] * x[k] are added to a float partial
// sum in increasing k; the partial sums are added to the row total in block
// order; the total is multiplied by row_scale[r]. Since t is -1, 0 or +1 the
// products are exact, so fused multiply-add contraction cannot change the
// result. Every vector of a batch takes the same dot product, so a vector's
// result does not depend on the batch it came in. Fairy2i's order is
// kernels.h's (PhaseGemm).
#include <cmath>
#include <vector>

#include "kernel_sets.h"
#include "phase_driver.h"
#include "tern/error.h"
#include "tern/phase.h"
#include "tern/quant.h"
#include "tern/quant_group.h"

namespace tern {
namespace {

using kernels_detail::check_call;

void decode_row(const TernaryMatrix& w, int64_t row_bytes, int64_t r, int8_t* t) {
  unpack_ternary_row(w.type, w.data + r * row_bytes, w.cols, t);
}

float dot_f32(const int8_t* t, const float* x, int64_t K) {
  float total = 0.0f;
  for (int64_t b = 0; b < K; b += QK) {
    float part = 0.0f;
    for (int64_t k = b; k < b + QK; ++k) part += float(t[k]) * x[k];
    total += part;
  }
  return total;
}

int32_t dot_i8(const int8_t* t, const int8_t* q, int64_t K) {
  int32_t sum = 0;  // |sum| <= 128 * K: no overflow for any K below 2^24
  for (int64_t k = 0; k < K; ++k) sum += int32_t(t[k]) * int32_t(q[k]);
  return sum;
}

void gemm_f32(const TernaryMatrix& w, const float* x, int64_t n, float* y, int64_t r0,
              int64_t r1) {
  check_call(w, ActMode::Float, n, r0, r1);
  const int64_t K = w.cols, M = w.rows, rb = ternary_row_bytes(w.type, K);
  std::vector<int8_t> t(static_cast<size_t>(K));
  for (int64_t r = r0; r < r1; ++r) {
    decode_row(w, rb, r, t.data());
    for (int64_t i = 0; i < n; ++i) y[i * M + r] = w.row_scale[r] * dot_f32(t.data(), x + i * K, K);
  }
}

void gemm_i8(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums, int64_t r0,
             int64_t r1) {
  check_call(w, ActMode::Int8, n, r0, r1);
  const int64_t K = w.cols, M = w.rows, rb = ternary_row_bytes(w.type, K);
  std::vector<int8_t> t(static_cast<size_t>(K));
  for (int64_t r = r0; r < r1; ++r) {
    decode_row(w, rb, r, t.data());
    for (int64_t i = 0; i < n; ++i) sums[i * M + r] = dot_i8(t.data(), q + i * K, K);
  }
}

// Dense (output head): the order kernels.h documents, written out plainly.
float widen(gguf::TensorType type, const uint8_t* row, int64_t k) {
  switch (type) {
    case gguf::TensorType::F32: return reinterpret_cast<const float*>(row)[k];
    case gguf::TensorType::F16: return fp16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]);
    case gguf::TensorType::BF16: return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]);
    default: throw Error("dense kernel: unexpected type");  // check_dense_call refused it
  }
}

// Quantized rows against int8 activations: each vector quantized once by
// the shared function, then dot(row's blocks, vector's blocks, nb) per
// (row, vector).
template <class Block, class Act, int64_t QK, class Dot>
void dense_gemm_blocks(const DenseMatrix& w, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
                       int64_t r1, void (*quantize)(const float*, int64_t, Act*), Dot dot) {
  const int64_t K = w.cols, nb = K / QK, rb = dense_stride(w);
  std::vector<Act> acts(static_cast<size_t>(n * nb));
  for (int64_t i = 0; i < n; ++i) quantize(x + i * K, K, &acts[size_t(i * nb)]);
  for (int64_t r = r0; r < r1; ++r) {
    const auto* row = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w.data) + r * rb);
    for (int64_t i = 0; i < n; ++i) y[i * ldy + r] = dot(row, &acts[size_t(i * nb)], nb);
  }
}

// 8 lanes, lane j the products 4j .. 4j + 3 of each block in block order.
float dot_q8_0(const BlockQ8_0* row, const ActQ8* acts, int64_t nb) {
  float lane[8] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const float d = fp16_to_f32(row[b].d) * acts[b].d;
    for (int j = 0; j < 8; ++j) {
      int32_t s = 0;
      for (int t = 4 * j; t < 4 * j + 4; ++t) s += int32_t(row[b].qs[t]) * int32_t(acts[b].qs[t]);
      lane[j] = std::fma(d, float(s), lane[j]);
    }
  }
  for (int half = 4; half >= 1; half /= 2)
    for (int j = 0; j < half; ++j) lane[j] = lane[j] + lane[j + half];
  return lane[0];
}

// One chain: the exact int32 sum of each block, scaled, in block order.
float dot_q6_k(const BlockQ6_K* row, const ActQ8K* acts, int64_t nb) {
  float acc = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t s = 0;
    for (int g = 0; g < QK_K / 16; ++g) {
      int32_t t = 0;
      for (int e = 16 * g; e < 16 * g + 16; ++e) t += q6_k_code(row[b], e) * int32_t(acts[b].qs[e]);
      s += int32_t(row[b].scales[g]) * t;
    }
    acc = std::fma(fp16_to_f32(row[b].d) * acts[b].d, float(s), acc);
  }
  return acc;
}

void dense_gemm(const DenseMatrix& w, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
                int64_t r1) {
  kernels_detail::check_dense_call(w, n, ldy, r0, r1);
  if (w.type == gguf::TensorType::Q8_0)
    return dense_gemm_blocks<BlockQ8_0, ActQ8, QK8_0>(w, x, n, y, ldy, r0, r1, quantize_act_q8, dot_q8_0);
  if (w.type == gguf::TensorType::Q6_K)
    return dense_gemm_blocks<BlockQ6_K, ActQ8K, QK_K>(w, x, n, y, ldy, r0, r1, quantize_act_q8k, dot_q6_k);
  const int64_t K = w.cols, padded = (K + 15) / 16 * 16, rb = dense_stride(w);
  std::vector<float> row(static_cast<size_t>(padded), 0.0f), xs(static_cast<size_t>(padded), 0.0f);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * rb;
    for (int64_t k = 0; k < K; ++k) row[size_t(k)] = widen(w.type, p, k);
    for (int64_t i = 0; i < n; ++i) {
      std::copy(x + i * K, x + (i + 1) * K, xs.begin());
      float lane[16] = {};
      for (int64_t k = 0; k < padded; ++k)
        lane[k % 16] = std::fma(row[size_t(k)], xs[size_t(k)], lane[k % 16]);
      for (int half = 8; half >= 1; half /= 2)
        for (int j = 0; j < half; ++j) lane[j] = lane[j] + lane[j + half];
      y[i * ldy + r] = lane[0];
    }
  }
}

// Fairy2i (kernels.h, PhaseGemm): the eight real ternary GEMVs of a stage
// run one after another, each over all rows, as an unfused reference for
// the fused kernels to match bit for bit.
struct SubProduct {
  bool w_matrix;   // W, else U
  bool imag_axis;  // the entries on the imaginary axis, else the real one
  bool b_half;     // multiplies b = Im x_c, else a = Re x_c
};
// In the order kernels.h names the sums: TrUa, TiUb, TrWa, TiWb, TrUb, TiUa, TrWb, TiWa.
constexpr SubProduct kSubProducts[8] = {{false, false, false}, {false, true, true}, {true, false, false},
                                        {true, true, true},    {false, false, true}, {false, true, false},
                                        {true, false, true},   {true, true, false}};

float masked_sum(const BlockPhase* row, int64_t cols, SubProduct g, const float* x) {
  float lane[16] = {};
  for (int64_t k = 0; k < cols; ++k) {
    const BlockPhase& b = row[k / kPhaseBlock];
    const int j = int(k % kPhaseBlock);
    const uint64_t axis = g.w_matrix ? b.w_axis : b.u_axis, sign = g.w_matrix ? b.w_sign : b.u_sign;
    if (((axis >> j) & 1) != uint64_t(g.imag_axis)) continue;
    lane[k % 16] += (sign >> j) & 1 ? -x[k] : x[k];
  }
  for (int half = 8; half >= 1; half /= 2)
    for (int j = 0; j < half; ++j) lane[j] = lane[j] + lane[j + half];
  return lane[0];
}

void phase_gemm(const PhaseMatrix& w, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
                int64_t r1) {
  kernels_detail::check_phase_call(w, n, ldy, r0, r1);
  const int64_t M = w.rows, K = w.cols, nb = K / kPhaseBlock, R = r1 - r0;
  const auto* blocks = reinterpret_cast<const BlockPhase*>(w.data);
  std::vector<float> sums(size_t(8 * R));  // [sub-product][row - r0]
  for (int64_t i = 0; i < n; ++i) {
    const float* a = x + i * 2 * K;
    for (int st = 0; st < w.stages; ++st) {
      for (int g = 0; g < 8; ++g)
        for (int64_t r = r0; r < r1; ++r)
          sums[size_t(g * R + r - r0)] = masked_sum(blocks + (st * M + r) * nb, K, kSubProducts[g],
                                                    kSubProducts[g].b_half ? a + K : a);
      for (int64_t r = r0; r < r1; ++r) {
        float S[8];
        for (int g = 0; g < 8; ++g) S[g] = sums[size_t(g * R + r - r0)];
        kernels_detail::phase_store(w.scales + 4 * st, S, st, &y[i * ldy + r], &y[i * ldy + M + r]);
      }
    }
  }
}

// The eight integer sums of one row and stage against int8 vectors q +
// v * stride (a, then b at cols), straight from the code of each column.
void phase_sums_i8(const BlockPhase* row, int64_t nb, const int8_t* q, int64_t stride, int count,
                   int32_t (*S)[8]) {
  const int64_t K = nb * kPhaseBlock;
  for (int v = 0; v < count; ++v) {
    const int8_t* a = q + v * stride;
    const int8_t* b = a + K;
    int32_t s[8] = {};
    for (int64_t k = 0; k < K; ++k) {
      const BlockPhase& p = row[k / kPhaseBlock];
      const int j = int(k % kPhaseBlock);
      const int32_t u = (p.u_sign >> j) & 1 ? -1 : 1, w = (p.w_sign >> j) & 1 ? -1 : 1;
      if ((p.u_axis >> j) & 1) s[1] += u * b[k], s[5] += u * a[k];  // Ti_U
      else s[0] += u * a[k], s[4] += u * b[k];                       // Tr_U
      if ((p.w_axis >> j) & 1) s[3] += w * b[k], s[7] += w * a[k];  // Ti_W
      else s[2] += w * a[k], s[6] += w * b[k];                       // Tr_W
    }
    for (int g = 0; g < 8; ++g) S[v][g] = s[g];
  }
}

void phase_gemm_i8(const PhaseMatrix& w, const int8_t* xq, int64_t n, const int* digits, const float* xscale,
                   float* y, int64_t ldy, int64_t r0, int64_t r1) {
  kernels_detail::phase_gemm_i8_driver<kMaxActDigits>(w, xq, n, digits, xscale, y, ldy, r0, r1, &phase_sums_i8);
}

// Group-scaled rows: each group's codes decoded and multiplied with every
// vector; the driver combines the sums (kernels.h GroupGemmI8).
void group_sums_i8(const uint8_t* row, int64_t G, int group, const int8_t* q, int64_t stride, int64_t count,
                   int32_t* S) {
  const int64_t bb = group_block_bytes(group);
  for (int64_t g = 0; g < G; ++g) {
    const uint8_t* qs = row + g * bb + 2;
    for (int64_t v = 0; v < count; ++v) {
      const int8_t* x = q + v * stride + g * group;
      int32_t s = 0;
      for (int j = 0; j < group; ++j) s += (q2_group_code(qs, j) - 1) * int32_t(x[j]);
      S[v * G + g] = s;
    }
  }
}

// kernels.h's order, row by row: one row's scales and sums, then each
// token's digits combined per group and the groups in the double fma chain.
void group_gemm_i8(const GroupMatrix& w, const int8_t* xq, int64_t n, const int* digits, const float* xscale,
                   float* y, int64_t ldy, int64_t r0, int64_t r1) {
  kernels_detail::check_group_call(w, n, ldy, r0, r1);
  const int64_t K = w.cols, G = w.groups(), bb = group_block_bytes(w.group);
  int64_t nq = 0;
  for (int64_t i = 0; i < n; ++i) nq += digits[i];
  std::vector<double> d(static_cast<size_t>(G));          // [G] one row's scales
  std::vector<int32_t> S(static_cast<size_t>(nq * G));    // [nq][G] its sums
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.data + r * G * bb;
    for (int64_t g = 0; g < G; ++g) d[size_t(g)] = double(fp16_to_f32(uint16_t(row[g * bb] | row[g * bb + 1] << 8)));
    group_sums_i8(row, G, w.group, xq, K, nq, S.data());
    const int32_t* s = S.data();  // token i's first vector
    for (int64_t i = 0; i < n; ++i) {
      const int nd = digits[i];
      double acc = 0;
      for (int64_t g = 0; g < G; ++g) {
        int64_t v = 0;
        for (int j = 0; j < nd; ++j) v = 255 * v + s[j * G + g];
        acc = std::fma(double(v), d[size_t(g)], acc);
      }
      y[i * ldy + r] = float(acc) * (1.0f / xscale[i]);
      s += nd * G;
    }
  }
}

void group_gemm_f32(const GroupMatrix& w, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
                    int64_t r1) {
  kernels_detail::check_group_call(w, n, ldy, r0, r1);
  const int64_t K = w.cols, G = w.groups(), bb = group_block_bytes(w.group);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.data + r * G * bb;
    for (int64_t i = 0; i < n; ++i) {
      const float* xi = x + i * K;
      float acc = 0;
      for (int64_t g = 0; g < G; ++g) {
        const uint8_t* b = row + g * bb;
        float s = 0;
        for (int j = 0; j < w.group; ++j) s += float(q2_group_code(b + 2, j) - 1) * xi[g * w.group + j];
        acc = std::fma(fp16_to_f32(uint16_t(b[0] | b[1] << 8)), s, acc);
      }
      y[i * ldy + r] = acc;
    }
  }
}

bool always(const CpuFeatures&) { return true; }

}  // namespace

const KernelSet& scalar_kernels() {
  static const KernelSet set = [] {
    KernelSet s{"scalar", &always, &gemm_f32, &gemm_i8, &dense_gemm, nullptr, nullptr, &phase_gemm,
                &quantize_act_i8, &phase_gemm_i8};
    s.group_gemm_i8 = &group_gemm_i8;
    s.group_gemm_f32 = &group_gemm_f32;
    return s;
  }();
  return set;
}

}  // namespace tern

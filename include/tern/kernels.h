// The one interface every ternary kernel implements. Kernels compute
//   float mode: y[r]    = row_scale[r] * sum_k T[r][k] * x[k]
//   int8 mode:  sums[r] = sum_k T[r][k] * q[k]          (exact int32)
// over a row range [r0, r1), single-threaded; the caller splits rows among
// threads. Each model chooses its kernel set when it loads (select_kernels:
// the best the CPU's CPUID/XCR0 allow, or the one --kernel / TERN_KERNEL
// names); `scalar` is always built and is the oracle.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tern/gguf.h"
#include "tern/quant.h"

namespace tern {

enum class ActMode { Float, Int8 };

// A ternary weight matrix [rows x cols] as stored in the file.
struct TernaryMatrix {
  gguf::TensorType type = gguf::TensorType::TQ2_0;  // TQ1_0 or TQ2_0
  int64_t rows = 0;                // M (output features)
  int64_t cols = 0;                // K (input features), K % 256 == 0
  const uint8_t* data = nullptr;   // rows * row_bytes, GGUF block layout; may be null
                                   // once prepare() has made `packed`
  const float* row_scale = nullptr;  // [rows]
  const void* packed = nullptr;    // kernel-private layout made by prepare(), or null
};

struct CpuFeatures {
  bool sse42 = false, avx = false, avx2 = false, fma = false, f16c = false;
  bool bmi2 = false, avx_vnni = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512vnni = false;
  bool avx512vbmi = false, os_avx = false, os_avx512 = false;  // XCR0 state
  // AMX tiles with int8 products; os_amx: XCR0 enables the tile state and
  // Linux granted this process its use (arch_prctl, asked once at detection).
  bool amx_tile = false, amx_int8 = false, os_amx = false;
  bool fast_pext = false;  // false on AMD before Zen 3 (microcoded pext)
  bool clflushopt = false;  // unordered cache-line flush (--kernel auto's cold timing)
  bool neon = false, dotprod = false;
  std::string vendor, brand;
  std::string summary() const;  // "avx2 fma bmi2 avx512f ..."
};
const CpuFeatures& cpu_features();  // detected once

// X[N][K] -> Y[N][M] (rows r0..r1 of every output vector). A decode step
// is n = 1 (with n = 1 the output stride M is never used); a set that has a
// faster single-vector path takes it inside, so there is one entry per mode.
using GemmF32 = void (*)(const TernaryMatrix& w, const float* x, int64_t n, float* y, int64_t r0,
                         int64_t r1);
using GemmI8 = void (*)(const TernaryMatrix& w, const int8_t* q, int64_t n, int32_t* sums,
                        int64_t r0, int64_t r1);

// A float matrix [rows x cols] in F32, F16, BF16, Q8_0 (cols a multiple
// of 32) or Q6_K (of 256): the output head (and tied token embeddings), rows contiguous as
// GGUF stores them, or a view of the KV cache (keys [pos][head_dim], values
// transposed [head_dim][pos], the first n_pos of max_seq columns).
struct DenseMatrix {
  gguf::TensorType type = gguf::TensorType::F32;
  int64_t rows = 0, cols = 0;
  const void* data = nullptr;
  int64_t row_stride = 0;  // bytes from a row to the next; 0: dense_row_bytes(type, cols)
};
// y[i * ldy + r] = sum_k W[r][k] * x[i * cols + k] for i < n, r in [r0, r1).
// Every set computes it bit for bit as the scalar set does, so logits do not
// depend on the kernel: per (row, vector), 16 float lanes, lane j summing
// fma(W[r][k], x[k], lane) over k = j mod 16 in increasing k (a last partial
// group of 16 is padded with zeros of both), then lanes j and j + 8 added,
// then j and j + 4, j + 2, j + 1; weights widened to f32 exactly. A Q8_0
// matrix multiplies int8 activations instead, as llama.cpp does (x
// quantized by quantize_act_q8, per 32 values): 8 float lanes, lane j
// adding fma(fp16(d_w) * d_x, s, lane) over the blocks in order, s the exact
// integer sum of the block's products at positions 4j .. 4j + 3; then lanes
// j and j + 4 added, then j + 2, j + 1. A Q6_K matrix (cols a multiple of
// 256) multiplies x quantized by quantize_act_q8k (per 256 values): one
// float accumulator per (row, vector), fma(fp16(d_w) * d_x, s, acc) over the
// blocks in order, s the exact integer sum over the block of
// scales[i / 16] * (q_i - 32) * x_i.
using DenseGemm = void (*)(const DenseMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
                           int64_t r0, int64_t r1);

// Bytes of one row of a DenseMatrix of `type` (K values).
int64_t dense_row_bytes(gguf::TensorType type, int64_t K);
// Bytes from one row of m to the next. (Out of line: the ISA translation
// units include this header and must not define shared inline code.)
int64_t dense_stride(const DenseMatrix& m);

// Builds a kernel's private weight layout once, at load; the result is
// stored in TernaryMatrix::packed and must outlive every call on w. Null
// for a matrix the set reads in place (avx2: TQ2_0), whose stored bytes
// must then stay. Every layout begins with one header naming its
// arrangement, type and shape, which the kernels check (kernels/layout.h).
using Prepare = std::shared_ptr<const void> (*)(const TernaryMatrix& w);
// Bytes of the layout prepare() builds for w: what one GEMV over it reads;
// 0 when prepare() returns null for w.
using PreparedBytes = int64_t (*)(const TernaryMatrix& w);

// A Fairy2i linear (include/tern/phase.h, docs/FAIRY2I.md): `rows` complex
// rows (2 * rows real outputs, Re then Im) by `cols` complex columns (a
// multiple of kPhaseBlock), `stages` residual stages of BlockPhase planes.
struct PhaseMatrix {
  int64_t rows = 0, cols = 0;
  int stages = 0;
  const uint8_t* data = nullptr;   // [stages][rows][cols / kPhaseBlock] BlockPhase
  const float* scales = nullptr;   // [stages][4]: U re, U im, W re, W im (PhaseScale)
};
// For each vector i < n, input x + i * 2 * cols holding a = Re x_c (cols
// values, the padding zero) then b = Im x_c: writes y[i * ldy + r] (Re) and
// y[i * ldy + rows + r] (Im) for r in [r0, r1). Every set computes it bit
// for bit as the scalar set does. Per stage, per row, eight sums
//   Tr_U a, Ti_U b, Tr_W a, Ti_W b, Tr_U b, Ti_U a, Tr_W b, Ti_W a
// (Tr: the entries on the real axis as -1/+1, the others 0; Ti: the same
// for the imaginary axis), each over 16 float lanes, lane j adding +x[k] or
// -x[k] where the mask has column k, k = j mod 16, in increasing k; then
// lanes j and j + 8 added, then j + 4, j + 2, j + 1. The stage's outputs:
//   re = fma(sWim, TiWb, fma(sWre, TrWa, fma(-sUim, TiUb, sUre * TrUa)))
//   im = fma(sWim, TiWa, fma(-sWre, TrWb, fma(sUim, TiUa, sUre * TrUb)))
// and y is stage 0's value plus each further stage's, in order.
using PhaseGemm = void (*)(const PhaseMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
                           int64_t r0, int64_t r1);

// PhaseGemm on int8 activations (Fairy2i run with --float-act i8 or i16).
// Token i < n is digits[i] vectors of 2 * cols int8 values in [-127, 127]
// (a then b, the padding zero), one after another in xq, most significant
// digit first: it stands for (sum_j 255^(digits[i]-1-j) q_j) / xscale[i].
// Per stage and row the eight sums of kernels.h's PhaseGemm are exact
// integers (int32 per digit, combined in int64), so every set gets the
// same bits without fixing an order; each becomes float(sum) * (1 /
// xscale[i]) and the outputs are PhaseGemm's fma sequence of those.
using PhaseGemmI8 = void (*)(const PhaseMatrix& w, const int8_t* xq, int64_t n, const int* digits,
                             const float* xscale, float* y, int64_t ldy, int64_t r0, int64_t r1);

// A group-scaled matrix [rows x cols] (tern/quant_group.h: PQ2_0 or Q2_0
// blocks, rows contiguous), weight (c - 1) * d_g with one fp16 d_g per
// group of `group` weights, code 3 (+2 d) included.
struct GroupMatrix {
  gguf::TensorType type = gguf::TensorType::PQ2_0;
  int64_t rows = 0, cols = 0;      // cols % group == 0
  int group = 128;
  const uint8_t* data = nullptr;   // rows * (cols / group) blocks
  int64_t groups() const { return group ? cols / group : 0; }
};
// Int8 digits as PhaseGemmI8 takes them (token i: digits[i] vectors of cols
// values in xq, most significant first, standing for their base-255 number
// over xscale[i]): y[i * ldy + r] for r in [r0, r1). Per (row, token) and
// group g, v_g is the exact integer sum of (c - 1) * x over the group
// (int32 per digit, combined in int64); acc = fma(double(v_g),
// double(d_g), acc) over g in increasing order from 0 (each product exact
// in double); y = float(acc) * (1 / xscale[i]). Every set gives these bits.
using GroupGemmI8 = void (*)(const GroupMatrix& w, const int8_t* xq, int64_t n, const int* digits,
                             const float* xscale, float* y, int64_t ldy, int64_t r0, int64_t r1);
// Float activations x[n][cols]: per (row, vector) and group, s_g = the
// float sum in increasing k of (c - 1) * x[k] (exact products), acc =
// fma(d_g, s_g, acc) in increasing g, y[i * ldy + r] = acc.
using GroupGemmF32 = void (*)(const GroupMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
                              int64_t r0, int64_t r1);

// Int8 activations for the int8 mode: x[n] -> q[n], returning the scale,
// byte for byte as quantize_act_i8 (quant.h), the scalar reference.
using QuantizeI8 = float (*)(const float* x, int64_t n, int8_t* q);

// The FFN's gated activation, in place: gate[i] = act(gate[i]) * up[i].
// Every set gives the reference's bits (kernels/glu.h says why they can).
using Glu = void (*)(float* gate, const float* up, int n);
// The references: act = silu (SwiGLU), and act(g) = max(g, 0)^2 (BitNet
// 2B-4T's squared-ReLU GLU).
void silu_glu(float* gate, const float* up, int n);
void relu2_glu(float* gate, const float* up, int n);

// A set may implement one activation mode only; the other's pointers are null.
struct KernelSet {
  const char* name;
  bool (*available)(const CpuFeatures&);
  GemmF32 gemm_f32;
  GemmI8 gemm_i8;
  DenseGemm dense_gemm;  // every set has it
  Prepare prepare = nullptr;  // null: the kernel reads the GGUF layout of every matrix directly
  PreparedBytes prepared_bytes = nullptr;  // set exactly when prepare is
  PhaseGemm phase_gemm = nullptr;  // Fairy2i linears; null: the set has no path for them
  QuantizeI8 quantize_i8 = &quantize_act_i8;  // every set has it
  PhaseGemmI8 phase_gemm_i8 = nullptr;  // Fairy2i linears on int8 digits; null: none
  // The set whose loop this one runs for a decode's few int8 vectors, if
  // another's (avx512-amx tiles only prompts): --kernel auto, which times
  // decode, times one loop once, as the first set that runs it.
  const char* decodes_as = nullptr;
  Glu glu_silu = &silu_glu;  // every set has both
  Glu glu_relu2 = &relu2_glu;
  // Group-scaled matrices; null: the scalar set's (same bits either way).
  GroupGemmI8 group_gemm_i8 = nullptr;
  GroupGemmF32 group_gemm_f32 = nullptr;
};
// The set's group-scaled kernels, or the scalar set's where it has none.
GroupGemmI8 group_gemm_i8_of(const KernelSet& s);
GroupGemmF32 group_gemm_f32_of(const KernelSet& s);

// The read roof's loop (kernels/read_roof.cpp): sums the bytes p[0, n) (n
// rounded down to kReadChunk, p 64-byte aligned) with the widest vector
// loads this CPU has, prefetching ahead; `isa` (if given) names the path.
constexpr size_t kReadChunk = 256;
uint64_t read_sum(const uint8_t* p, size_t n, const char** isa = nullptr);

// Every kernel set built into this binary, best first; scalar is last.
std::span<const KernelSet* const> all_kernel_sets();
// The set a name asks for: nullptr for "" or "auto" (the best available),
// else the set of that name. Throws tern::Error beginning with `source`
// (default "kernel NAME") if the name is unknown ("kernel foo: unknown
// kernel (known: ..., scalar, auto)") or this CPU cannot run the set.
const KernelSet* find_kernel_set(std::string_view name, std::string_view source = {});
// The set used for weights seen with `mode` activations: the named one
// (find_kernel_set), or for "" / "auto" the first available set that has
// that mode's functions (a set may leave the other mode's null). Throws
// tern::Error as find_kernel_set does, or if the named set has no path for
// `mode`. No process-wide state: the choice is a load option
// (LoadOptions::kernel), resolved from --kernel or TERN_KERNEL in tools/cli.
// With `phase`, the model's linears are Fairy2i's and the set must have
// phase_gemm. `why` (if given) says in that error why the model needs
// `mode`, and what the user can do about it.
const KernelSet& select_kernels(std::string_view name, ActMode mode, bool phase = false,
                                std::string_view why = {});
bool kernel_supports(const KernelSet& s, ActMode mode, bool phase = false);

// The scalar reference, callable directly by tests as the oracle. Its exact
// float summation order is documented in kernels/scalar.cpp.
const KernelSet& scalar_kernels();

}  // namespace tern

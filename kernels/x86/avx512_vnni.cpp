// avx512-vnni: int8 activations, 512-bit vpdpbusd over weight codes t + 1
// (the kernels and why they look as they do: avx512_vnni.h).
#include "avx512_vnni.h"

namespace tern::kernels_detail {

const KernelSet& avx512_vnni_kernels() {
  static const KernelSet set{"avx512-vnni", &available, nullptr, &gemm_i8, &dense_gemm_avx512, &prepare,
                             &prepared_bytes, nullptr, &quantize_i8_avx2,
                             &phase_gemm_i8_avx512, nullptr, &silu_glu_avx512, &relu2_glu_avx512,
                             &group_gemm_i8_avx512<GroupDpbusd512>};
  return set;
}

}  // namespace tern::kernels_detail

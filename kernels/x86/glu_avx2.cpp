// The gated activations (../glu.h) at AVX2's width, for the x86 sets that
// have it.
#include "../glu.h"

#include "../kernel_sets.h"

namespace tern::kernels_detail {

void silu_glu_avx2(float* gate, const float* up, int n) { silu_glu_loop(gate, up, n); }
void relu2_glu_avx2(float* gate, const float* up, int n) { relu2_glu_loop(gate, up, n); }

}  // namespace tern::kernels_detail

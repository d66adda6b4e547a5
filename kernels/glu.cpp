// The reference gated activations (glu.h) at the baseline's width.
#include "glu.h"

#include "tern/kernels.h"

namespace tern {

void silu_glu(float* gate, const float* up, int n) { kernels_detail::silu_glu_loop(gate, up, n); }
void relu2_glu(float* gate, const float* up, int n) { kernels_detail::relu2_glu_loop(gate, up, n); }

}  // namespace tern

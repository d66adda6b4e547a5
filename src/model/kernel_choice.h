// Timing kernel sets on weight matrices, for --kernel auto (internal to
// src/model; Model::choose_kernels calls it at load).
#pragma once
#include <span>
#include <vector>

#include "tern/model.h"

namespace tern {

// Times each candidate on each matrix w of `shapes`: its layout prepared (not timed) and touched
// once, then products of every row with n fixed int8 vectors (n = 1: the
// GEMV; int16 activations are n = 2), `calls` times, each after the
// matrix's lines were flushed from the caches, keeping the fastest. The chosen set
// follows KernelChoice's rule (tern/model.h: the fastest, a later set
// displacing an earlier only when more than kDisplaceMargin faster).
std::vector<KernelChoice> time_kernels(std::span<const TernaryMatrix> shapes, int n,
                                       std::span<const KernelSet* const> candidates, int calls);

}  // namespace tern

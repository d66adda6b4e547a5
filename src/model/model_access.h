// What the forward pass needs of a Model beyond its public interface: the
// checked embedding lookup, and the head's check and move after load, the
// one state of a Model that changes once it is loaded. Both are done once,
// atomically, by whichever context gets there first; a context reading the
// head meanwhile reads the same values from the mapping. Internal to
// src/model.
#pragma once
#include <cstdint>

#include "tern/model.h"
#include "tern/thread_pool.h"

namespace tern {

struct ModelAccess {
  // Token's embedding row into out[dim]; throws naming the file and row if
  // the row holds a NaN or an infinity.
  static void embed(const Model& m, int32_t token, float* out);
  // After a product over the whole head, `logits` [vocab] one token's row
  // of it: the first such product checks the head (Model::check_head).
  static void after_head_product(const Model& m, const float* logits);
  // Before a forward step: the first step after the head was checked
  // moves it off the file's mapping (Model::move_head) on `pool`.
  static void before_step(const Model& m, ThreadPool& pool);
};

}  // namespace tern

// VOXRT_CUDA_REPEAT=kind[,kind...]: a measurement switch of the CUDA backend. Each operation of a
// named kind launches twice, so a pass's time with a kind repeated, less its time without, is
// what that kind costs inside the recording, its overlap with neighbours and its gaps included:
// the in-graph split that a per-kernel profile (each kernel alone, caches cold) cannot give.
// Kinds: attention (the chunk kernel and its combine), norm (RMS norms), rope (RoPE + K/V store),
// product (the GEMV launches). Repeating an in-place operation (rope, an accumulating product)
// changes the pass's outputs, so this is for `voxrt bench` only.
#pragma once

#include <array>
#include <string>

namespace voxrt::cuda {

enum class OpKind { Attention, Norm, Rope, Product };

struct OpRepeat {
  std::array<int, 4> times{1, 1, 1, 1};
  int operator[](OpKind k) const { return times[static_cast<int>(k)]; }
};

// Parses the switch's value (null or empty: every kind once); throws voxrt::Error naming an
// unknown kind.
OpRepeat parse_op_repeat(const char* value);

}  // namespace voxrt::cuda

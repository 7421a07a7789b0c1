// How a quantized weight (quant/weight_format.h) is laid out on the GPU: one place that says where
// each packed value and each scale of a 4w or 8w weight lives, read by the upload (host), the
// products and the embedding lookup (device).
//
// The products multiply a 16-feature tile of the weight by x on the tensor cores (mma m16n8k16, the
// weight as the A operand), a 64-element chunk of K at a time. A lane's A fragment of one k16
// group is four registers of two bf16: register j holds row g + 8 (j % 2), elements
// 2t + 8 (j / 2) and the next one (g = lane / 4, t = lane % 4). The packed values are stored so
// that a lane's fragments for a whole chunk are one contiguous piece (4w 16 bytes, 8w 32), in the
// order they are converted, and the lane dequantizes them straight into its registers: no shared
// memory tile, no ldmatrix, and no lane reads another's values (Marlin's layout idea).
//   4w: word h (of 4) holds group h; register j's elements are nibbles j and j + 4 (bits 4j and
//       16 + 4j), so one shift and mask put both in the low bits of a bf16 pair.
//   8w: words 2h and 2h + 1 hold group h; register j's elements are bytes 2 (j % 2) and the next
//       one of word 2h + j / 2.
// The scales and biases (8w: biases 0) are stored per (tile, group of K): 8 rows of 8 bytes,
// row g holding (scale, bias) of feature g and of feature g + 8, so the lanes of one g read the 8
// bytes every register of theirs needs.
// Storage is padded to whole tiles and chunks with zero values and zero scales (zero weights).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#ifdef __CUDACC__
#define VOXRT_HOST_DEVICE __host__ __device__
#else
#define VOXRT_HOST_DEVICE
#endif

namespace voxrt::cuda {

// How a product's weight is stored: bf16, or a quantized format. 4w and 8w are packed as below;
// fp8 (W8A8) is stored as bf16 is, row-major, a byte an element: an e4m3 tile of 16 x 32 has the
// bytes of a bf16 tile of 16 x 16, and mma.sync m16n8k32 e4m3 takes the fragments m16n8k16 bf16
// takes, byte for byte, so fp8 products run the bf16 kernels over rows of K / 2 "elements"
// (product_dispatch.cpp) with the e4m3 instruction (tensor_core.cuh: mma_e4m3).
enum GemvWeightFormat : int { kGemvBf16 = 0, kGemvInt4 = 1, kGemvInt8 = 2, kGemvFp8 = 3 };
// Whether a format's values are packed in quant_layout.h's tiles (4w, 8w), not in rows as bf16 and fp8.
VOXRT_HOST_DEVICE constexpr bool packed_format(int fmt) { return fmt == kGemvInt4 || fmt == kGemvInt8; }
// f(std::integral_constant<int, FMT>{}) for a weight's format: the one place the product launchers
// turn a runtime format into the kernel instance for it (a new format is one more case here).
template <typename F>
void with_format(int fmt, F&& f) {
  switch (fmt) {
    case kGemvInt4: f(std::integral_constant<int, kGemvInt4>{}); return;
    case kGemvInt8: f(std::integral_constant<int, kGemvInt8>{}); return;
    case kGemvFp8: f(std::integral_constant<int, kGemvFp8>{}); return;
    default: f(std::integral_constant<int, kGemvBf16>{});
  }
}

namespace qlayout {

constexpr int kTileRows = 16;  // features a tile
constexpr int kChunk = 64;     // elements of K a chunk
// Bytes of one lane's values of one (tile, chunk): 4w 16, 8w 32.
VOXRT_HOST_DEVICE constexpr int lane_bytes(int fmt) { return fmt == kGemvInt4 ? 16 : 32; }
VOXRT_HOST_DEVICE constexpr int chunks_of(int K) { return (K + kChunk - 1) / kChunk; }
VOXRT_HOST_DEVICE constexpr int tiles_of(int n) { return (n + kTileRows - 1) / kTileRows; }
VOXRT_HOST_DEVICE constexpr int groups_of(int K, int group) { return (K + group - 1) / group; }
// Bytes of a weight's values and of its scale blocks (64 bytes a tile and group).
VOXRT_HOST_DEVICE constexpr size_t values_bytes(int fmt, int n, int K) {
  return static_cast<size_t>(tiles_of(n)) * chunks_of(K) * 32 * lane_bytes(fmt);
}
VOXRT_HOST_DEVICE constexpr size_t scale_block_bytes(int n, int K, int group) {
  return static_cast<size_t>(tiles_of(n)) * groups_of(K, group) * 64;
}

// Where element (f, k) of a weight with K columns is: its byte, and (4w) the nibble's shift.
struct Place {
  size_t byte;
  int shift;
};
VOXRT_HOST_DEVICE inline Place value_place(int fmt, int f, int k, int K) {
  const int r = f % kTileRows, kk = k % kChunk, h = kk / 16, col = kk % 16;
  const int g = r % 8, j = r / 8 + 2 * (col / 8), t = (col % 8) / 2, odd = col % 2;
  const size_t lane_at = ((static_cast<size_t>(f / kTileRows) * chunks_of(K) + k / kChunk) * 32 + 4 * g + t) *
                         static_cast<size_t>(lane_bytes(fmt));
  if (fmt == kGemvInt4) {
    const int nibble = j + 4 * odd;
    return {lane_at + 4 * h + nibble / 2, 4 * (nibble % 2)};
  }
  return {lane_at + 4 * (2 * h + j / 2) + 2 * (j % 2) + odd, 0};
}
// n / d by a multiply and a shift, for 0 <= n < 2^31 and d >= 2 (a group size: 32 or more), as the
// kernels need a chunk's group of K at every chunk and a division by a value known only at run time
// costs some twenty instructions. mul = ceil(2^(31 + l) / d) with 2^l >= d: the quotient's error,
// n (mul d - 2^(31 + l)) / (d 2^(31 + l)), is below n d / (d 2^(31 + l)) < 1 / d, too little to
// carry n / d past the next integer.
struct Divider {
  uint32_t mul = 0;
  int shift = 0;  // l - 1: the high word of n * mul shifted by it is n * mul / 2^(31 + l)
};
inline Divider divider(int d) {
  int l = 0;
  while ((1ll << l) < d) ++l;
  const unsigned long long big = 1ull << (31 + l);
  return {static_cast<uint32_t>((big + static_cast<unsigned long long>(d) - 1) / static_cast<unsigned long long>(d)),
          l - 1};
}
VOXRT_HOST_DEVICE inline int divide(int n, Divider dv) {
#ifdef __CUDA_ARCH__
  return static_cast<int>(__umulhi(static_cast<uint32_t>(n), dv.mul) >> dv.shift);
#else
  return static_cast<int>(((static_cast<unsigned long long>(n) * dv.mul) >> 32) >> dv.shift);
#endif
}

// The bf16 index of feature f's scale for group gi of K (its bias follows it).
VOXRT_HOST_DEVICE inline size_t scale_index(int f, int gi, int groups) {
  const int r = f % kTileRows;
  return ((static_cast<size_t>(f / kTileRows) * groups + gi) * 8 + r % 8) * 4 + 2 * (r / 8);
}

}  // namespace qlayout
}  // namespace voxrt::cuda

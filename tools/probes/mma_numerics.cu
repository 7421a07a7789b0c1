// How the tensor cores round a bf16 dot product, measured: the facts a wgmma GEMM needs before it
// can promise the GEMV's bits (docs/scheduler.md, step 6). For many random 64 x 8 x 16 products
// with an fp32 accumulator, on values spread over a wide range of exponents (so that any difference
// in alignment or rounding shows), it compares:
//   1. mma.sync m16n8k16 with K in its natural order against the same products with the 16
//      k-slots permuted (the same permutation on both operands): does the order of the products
//      within one mma change the result? Three permutations: the two halves of eight swapped, a
//      shuffle within each half, and the GEMV's chunk layout (kernels_gemv_mma.cu) applied to one
//      16-element block;
//   2. wgmma m64n8k16 (operands in shared memory, no swizzle) against mma.sync on the same data:
//      do the two instructions round alike?
//   3. a control: the same products in two mma (8 and 8) against one, which must differ somewhere.
// Prints, for each comparison, how many of the outputs differ in any bit.
// The CUDA build makes it (build/cuda/voxrt_mma_numerics); on the GPU machine, or there directly:
//   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a tools/probes/mma_numerics.cu -o /tmp/mma_numerics && /tmp/mma_numerics
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_check.h"

namespace {

constexpr int kM = 64, kN = 8, kK = 16, kTrials = 4096;

__device__ uint32_t pair(const __nv_bfloat16* p) { return *reinterpret_cast<const uint32_t*>(p); }

// One trial per block of 128 threads (a warpgroup): A [64][16], B [8][16] (K contiguous), C [64][8].
// out_mma and out_wgmma [64][8]: C + A B^T by each instruction.
__global__ void probe(const __nv_bfloat16* A, const __nv_bfloat16* B, const float* C, float* out_mma, float* out_wgmma) {
  const int trial = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const __nv_bfloat16* a = A + trial * kM * kK;
  const __nv_bfloat16* b = B + trial * kN * kK;
  const float* c = C + trial * kM * kN;

  // mma.sync: warp w takes rows 16w .. 16w + 15.
  {
    const int r = 16 * warp + g;
    float d[4] = {c[r * kN + 2 * t], c[r * kN + 2 * t + 1], c[(r + 8) * kN + 2 * t], c[(r + 8) * kN + 2 * t + 1]};
    const uint32_t a0 = pair(a + r * kK + 2 * t), a1 = pair(a + (r + 8) * kK + 2 * t);
    const uint32_t a2 = pair(a + r * kK + 2 * t + 8), a3 = pair(a + (r + 8) * kK + 2 * t + 8);
    const uint32_t b0 = pair(b + g * kK + 2 * t), b1 = pair(b + g * kK + 2 * t + 8);
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    float* o = out_mma + trial * kM * kN;
    o[r * kN + 2 * t] = d[0];
    o[r * kN + 2 * t + 1] = d[1];
    o[(r + 8) * kN + 2 * t] = d[2];
    o[(r + 8) * kN + 2 * t + 1] = d[3];
  }

  // wgmma: both operands in shared memory, K-major, no swizzle: core matrices of 8 rows x 16 bytes,
  // stored 128 bytes each; A's core matrix (row group i, k half h) at (2i + h) * 128, B's at h * 128.
  __shared__ __align__(128) __nv_bfloat16 sa[kM * kK];
  __shared__ __align__(128) __nv_bfloat16 sb[kN * kK];
  for (int i = threadIdx.x; i < kM * kK; i += blockDim.x) {
    const int row = i / kK, k = i % kK;
    sa[((row / 8) * 2 + k / 8) * 64 + (row % 8) * 8 + k % 8] = a[i];
  }
  for (int i = threadIdx.x; i < kN * kK; i += blockDim.x) {
    const int row = i / kK, k = i % kK;
    sb[(k / 8) * 64 + row * 8 + k % 8] = b[i];
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  auto desc = [](const void* p, uint32_t lbo, uint32_t sbo) {
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
    return static_cast<uint64_t>((addr >> 4) & 0x3fff) | (static_cast<uint64_t>((lbo >> 4) & 0x3fff) << 16) |
           (static_cast<uint64_t>((sbo >> 4) & 0x3fff) << 32);
  };
  const uint64_t da = desc(sa, 128, 256), db = desc(sb, 128, 256);
  const int r = 16 * warp + g;
  float d[4] = {c[r * kN + 2 * t], c[r * kN + 2 * t + 1], c[(r + 8) * kN + 2 * t], c[(r + 8) * kN + 2 * t + 1]};
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  asm volatile(
      "{\n"
      ".reg .pred accumulate;\n"
      "setp.ne.b32 accumulate, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, %4, %5, accumulate, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(da), "l"(db), "r"(1));
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  float* o = out_wgmma + trial * kM * kN;
  o[r * kN + 2 * t] = d[0];
  o[r * kN + 2 * t + 1] = d[1];
  o[(r + 8) * kN + 2 * t] = d[2];
  o[(r + 8) * kN + 2 * t + 1] = d[3];
}

// Values m * 2^e with e spread over [-24, 24]: sums whose terms differ widely in magnitude.
float spread(std::mt19937& rng) {
  std::uniform_real_distribution<float> m(1.0f, 2.0f);
  std::uniform_int_distribution<int> e(-24, 24), s(0, 1);
  return (s(rng) ? -1.0f : 1.0f) * std::ldexp(m(rng), e(rng));
}

struct Results {
  std::vector<float> mma, wgmma;
};

Results run(const std::vector<__nv_bfloat16>& A, const std::vector<__nv_bfloat16>& B, const std::vector<float>& C) {
  __nv_bfloat16 *da, *db;
  float *dc, *dm, *dw;
  const size_t outs = static_cast<size_t>(kTrials) * kM * kN;
  CHECK(cudaMalloc(&da, A.size() * 2));
  CHECK(cudaMalloc(&db, B.size() * 2));
  CHECK(cudaMalloc(&dc, C.size() * 4));
  CHECK(cudaMalloc(&dm, outs * 4));
  CHECK(cudaMalloc(&dw, outs * 4));
  CHECK(cudaMemcpy(da, A.data(), A.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, B.data(), B.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dc, C.data(), C.size() * 4, cudaMemcpyHostToDevice));
  probe<<<kTrials, 128>>>(da, db, dc, dm, dw);
  CHECK(cudaGetLastError());
  Results r{std::vector<float>(outs), std::vector<float>(outs)};
  CHECK(cudaMemcpy(r.mma.data(), dm, outs * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(r.wgmma.data(), dw, outs * 4, cudaMemcpyDeviceToHost));
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dc), static_cast<void*>(dm),
                  static_cast<void*>(dw)})
    CHECK(cudaFree(p));
  return r;
}

size_t differing(const std::vector<float>& x, const std::vector<float>& y) {
  size_t n = 0;
  for (size_t i = 0; i < x.size(); ++i) n += std::memcmp(&x[i], &y[i], 4) != 0;
  return n;
}

// The operands with K permuted: slot k of the result holds element perm[k].
std::vector<__nv_bfloat16> permuted(const std::vector<__nv_bfloat16>& v, const int (&perm)[kK]) {
  std::vector<__nv_bfloat16> out(v.size());
  for (size_t row = 0; row < v.size() / kK; ++row)
    for (int k = 0; k < kK; ++k) out[row * kK + k] = v[row * kK + perm[k]];
  return out;
}

}  // namespace

int main() {
  std::mt19937 rng(2026);
  std::vector<__nv_bfloat16> A(static_cast<size_t>(kTrials) * kM * kK), B(static_cast<size_t>(kTrials) * kN * kK);
  std::vector<float> C(static_cast<size_t>(kTrials) * kM * kN);
  for (auto& v : A) v = __float2bfloat16(spread(rng));
  for (auto& v : B) v = __float2bfloat16(spread(rng));
  for (auto& v : C) v = spread(rng);
  const Results base = run(A, B, C);
  const size_t outs = base.mma.size();
  std::printf("%zu outputs of C + A B^T (64 x 8 x 16, fp32 accumulate), values m * 2^e, e in [-24, 24]\n", outs);
  std::printf("wgmma vs mma.sync, same data:                    %zu differ\n", differing(base.wgmma, base.mma));

  const int swap_halves[kK] = {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7};
  const int within_halves[kK] = {3, 0, 7, 1, 6, 2, 5, 4, 11, 15, 8, 14, 9, 13, 10, 12};
  // The GEMV's first k16 of a 32-element chunk is elements {8t .. 8t+3}; applied to one 16-element
  // block, slot 2t, 2t+1 <- elements 4t, 4t+1 and slot 2t+8, 2t+9 <- elements 4t+2, 4t+3.
  const int gemv_like[kK] = {0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15};
  struct Case {
    const char* name;
    const int (&perm)[kK];
  };
  for (const Case& c : {Case{"halves swapped", swap_halves}, Case{"shuffled within each half", within_halves},
                        Case{"the GEMV's slot layout", gemv_like}}) {
    const Results p = run(permuted(A, c.perm), permuted(B, c.perm), C);
    std::printf("mma.sync, K permuted (%-26s): %zu differ; wgmma on it vs mma.sync on it: %zu differ\n", c.name,
                differing(p.mma, base.mma), differing(p.wgmma, p.mma));
  }
  // The control: the same sums in two mma, the first 8 products then the last 8 (the others zero),
  // must differ somewhere, or the probe could not see a difference in rounding at all.
  std::vector<__nv_bfloat16> lo = A, hi = A;
  for (size_t i = 0; i < A.size(); ++i) (i % kK < 8 ? hi : lo)[i] = __float2bfloat16(0.0f);
  const Results first = run(lo, B, C), both = run(hi, B, first.mma);
  std::printf("control, the 16 products in two mma of 8 against one mma: %zu differ\n", differing(both.mma, base.mma));
  return 0;
}

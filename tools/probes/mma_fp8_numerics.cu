// How the tensor cores round an fp8 (e4m3) dot product, measured: the facts an fp8 W8A8 product
// needs before a GEMV on mma.sync and a GEMM on wgmma can promise each other's bits (as
// tools/probes/mma_numerics.cu established for bf16). For many random 64 x 8 x 32 products of e4m3
// values over their whole range with an fp32 accumulator C spread over a wide range, it compares:
//   1. wgmma m64n8k32 against mma.sync m16n8k32 on the same data: do the two instructions round
//      alike? Two ways of feeding wgmma: both operands in shared memory (K-major, no swizzle: the
//      leading byte offset between the core matrices along K, the stride one between 8-row groups)
//      and A from registers in mma.sync's fragment layout (B in shared memory). A first run
//      disagreed with mma.sync on almost every output; the first outputs printed beside the exact
//      sum tell a wrong operand layout (unrelated values) from rounding (values within a few
//      thousand ulp: bench/results/2026-12-06-issue36-wgmma-4w.txt found the latter).
//   2. mma.sync with the 32 k-slots permuted (the same permutation on both operands): does the
//      order of the products within one instruction change the result?
//   3. both against the exact value C + sum(a b) (in double, then rounded once to fp32): how many
//      outputs are the correctly rounded sum, and the largest error in units of the result's last
//      place (Hopper's fp8 accumulation is reported to keep fewer bits than fp32);
//   4. a control: the same 32 products in two mma of 16 (the others zero) against one, which must
//      differ somewhere.
// Prints, for each comparison, how many of the outputs differ in any bit.
// The CUDA build makes it (build/cuda/voxrt_mma_fp8_numerics); on the GPU machine, or there directly:
//   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a tools/probes/mma_fp8_numerics.cu -o /tmp/p && /tmp/p
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_check.h"

namespace {

constexpr int kM = 64, kN = 8, kK = 32, kTrials = 4096;

__device__ uint32_t quad(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

// One trial per block of 128 threads (a warpgroup): A [64][32], B [8][32] (K contiguous, e4m3
// bytes), C [64][8]. out_mma and out_wgmma [64][8]: C + A B^T by each instruction.
// variant: how wgmma gets its operands (0: both in shared memory; 1: A from registers).
__global__ void probe(const uint8_t* A, const uint8_t* B, const float* C, float* out_mma, float* out_wgmma,
                      int variant) {
  const int trial = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const uint8_t* a = A + trial * kM * kK;
  const uint8_t* b = B + trial * kN * kK;
  const float* c = C + trial * kM * kN;
  const int r = 16 * warp + g;

  // mma.sync m16n8k32: warp w takes rows 16w .. 16w + 15. A register: 4 bytes of K (4t .. 4t + 3,
  // then 16 + 4t ..), rows g and g + 8; B: column g, the same K.
  {
    float d[4] = {c[r * kN + 2 * t], c[r * kN + 2 * t + 1], c[(r + 8) * kN + 2 * t], c[(r + 8) * kN + 2 * t + 1]};
    const uint32_t a0 = quad(a + r * kK + 4 * t), a1 = quad(a + (r + 8) * kK + 4 * t);
    const uint32_t a2 = quad(a + r * kK + 16 + 4 * t), a3 = quad(a + (r + 8) * kK + 16 + 4 * t);
    const uint32_t b0 = quad(b + g * kK + 4 * t), b1 = quad(b + g * kK + 16 + 4 * t);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
    float* o = out_mma + trial * kM * kN;
    o[r * kN + 2 * t] = d[0];
    o[r * kN + 2 * t + 1] = d[1];
    o[(r + 8) * kN + 2 * t] = d[2];
    o[(r + 8) * kN + 2 * t + 1] = d[3];
  }

  // wgmma: both operands in shared memory, K-major, no swizzle: core matrices of 8 rows x 16 bytes
  // (16 elements), 128 bytes each; A's core matrix (row group i, k half h) at (2i + h) * 128, B's at
  // h * 128.
  __shared__ __align__(128) uint8_t sa[kM * kK];
  __shared__ __align__(128) uint8_t sb[kN * kK];
  for (int i = threadIdx.x; i < kM * kK; i += blockDim.x) {
    const int row = i / kK, k = i % kK;
    sa[((row / 8) * 2 + k / 16) * 128 + (row % 8) * 16 + k % 16] = a[i];
  }
  for (int i = threadIdx.x; i < kN * kK; i += blockDim.x) {
    const int row = i / kK, k = i % kK;
    sb[(k / 16) * 128 + row * 16 + k % 16] = b[i];
  }
  float d[4] = {c[r * kN + 2 * t], c[r * kN + 2 * t + 1], c[(r + 8) * kN + 2 * t], c[(r + 8) * kN + 2 * t + 1]};
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  auto desc = [](const void* p, uint32_t lbo, uint32_t sbo) {
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
    return static_cast<uint64_t>((addr >> 4) & 0x3fff) | (static_cast<uint64_t>((lbo >> 4) & 0x3fff) << 16) |
           (static_cast<uint64_t>((sbo >> 4) & 0x3fff) << 32);
  };
  const uint64_t da = desc(sa, 128, 256), db = desc(sb, 128, 256);
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  if (variant == 1) {
    // A in registers: warp w's rows 16w .. 16w + 15 in mma.sync m16n8k32's A fragment layout.
    const uint32_t a0 = quad(a + r * kK + 4 * t), a1 = quad(a + (r + 8) * kK + 4 * t);
    const uint32_t a2 = quad(a + r * kK + 16 + 4 * t), a3 = quad(a + (r + 8) * kK + 16 + 4 * t);
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %9, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(1));
  } else {
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %6, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0,%1,%2,%3}, %4, %5, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "l"(da), "l"(db), "r"(1));
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#endif
  float* o = out_wgmma + trial * kM * kN;
  o[r * kN + 2 * t] = d[0];
  o[r * kN + 2 * t + 1] = d[1];
  o[(r + 8) * kN + 2 * t] = d[2];
  o[(r + 8) * kN + 2 * t + 1] = d[3];
}

// A random e4m3 byte: any finite value (0x7f and 0xff are NaN).
uint8_t random_e4m3(std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  for (;;) {
    const int v = byte(rng);
    if ((v & 0x7f) != 0x7f) return static_cast<uint8_t>(v);
  }
}

double e4m3_value(uint8_t v) {
  __nv_fp8_e4m3 f;
  f.__x = v;
  return static_cast<double>(static_cast<float>(f));
}

// Values m * 2^e, e in [lo, hi].
float spread(std::mt19937& rng, int lo, int hi) {
  std::uniform_real_distribution<float> m(1.0f, 2.0f);
  std::uniform_int_distribution<int> e(lo, hi), s(0, 1);
  return (s(rng) ? -1.0f : 1.0f) * std::ldexp(m(rng), e(rng));
}

struct Results {
  std::vector<float> mma, wgmma;
};

Results run(const std::vector<uint8_t>& A, const std::vector<uint8_t>& B, const std::vector<float>& C,
            int variant = 1) {
  uint8_t *da, *db;
  float *dc, *dm, *dw;
  const size_t outs = static_cast<size_t>(kTrials) * kM * kN;
  CHECK(cudaMalloc(&da, A.size()));
  CHECK(cudaMalloc(&db, B.size()));
  CHECK(cudaMalloc(&dc, C.size() * 4));
  CHECK(cudaMalloc(&dm, outs * 4));
  CHECK(cudaMalloc(&dw, outs * 4));
  CHECK(cudaMemcpy(da, A.data(), A.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, B.data(), B.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dc, C.data(), C.size() * 4, cudaMemcpyHostToDevice));
  probe<<<kTrials, 128>>>(da, db, dc, dm, dw, variant);
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

// C + A B^T exactly (every e4m3 product and their sum are exact in double), rounded once to fp32.
std::vector<float> exact(const std::vector<uint8_t>& A, const std::vector<uint8_t>& B, const std::vector<float>& C) {
  std::vector<float> out(C.size());
  for (int trial = 0; trial < kTrials; ++trial)
    for (int m = 0; m < kM; ++m)
      for (int n = 0; n < kN; ++n) {
        double s = C[(static_cast<size_t>(trial) * kM + m) * kN + n];
        for (int k = 0; k < kK; ++k)
          s += e4m3_value(A[(static_cast<size_t>(trial) * kM + m) * kK + k]) *
               e4m3_value(B[(static_cast<size_t>(trial) * kN + n) * kK + k]);
        out[(static_cast<size_t>(trial) * kM + m) * kN + n] = static_cast<float>(s);
      }
  return out;
}

// How far x is from the exact fp32 value, at most, in units of the exact value's last place.
double worst_ulps(const std::vector<float>& x, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (want[i] == 0) continue;
    const double ulp = std::ldexp(1.0, std::ilogb(want[i]) - 23);
    worst = std::max(worst, std::fabs(static_cast<double>(x[i]) - want[i]) / ulp);
  }
  return worst;
}

std::vector<uint8_t> permuted(const std::vector<uint8_t>& v, const int (&perm)[kK]) {
  std::vector<uint8_t> out(v.size());
  for (size_t row = 0; row < v.size() / kK; ++row)
    for (int k = 0; k < kK; ++k) out[row * kK + k] = v[row * kK + perm[k]];
  return out;
}

void report(const char* what, const std::vector<float>& C, const std::vector<uint8_t>& A, const std::vector<uint8_t>& B) {
  const Results base = run(A, B, C);
  const std::vector<float> want = exact(A, B, C);
  std::printf("== %s\n", what);
  std::printf("mma.sync vs exact, rounded once:               %zu differ, worst %.3g ulp\n", differing(base.mma, want),
              worst_ulps(base.mma, want));
  const char* variants[2] = {"wgmma, both in shared memory", "wgmma, A in registers"};
  for (int v = 0; v < 2; ++v) {
    const Results r = v == 1 ? base : run(A, B, C, v);
    std::printf("%-31s: vs mma.sync %zu differ; vs exact %zu differ, worst %.3g ulp; first outputs", variants[v],
                differing(r.wgmma, base.mma), differing(r.wgmma, want), worst_ulps(r.wgmma, want));
    for (int i = 0; i < 3; ++i) std::printf(" %.6g (mma %.6g, exact %.6g)", r.wgmma[i], base.mma[i], want[i]);
    std::printf("\n");
  }
  int reversed[kK], halves[kK];
  for (int k = 0; k < kK; ++k) reversed[k] = kK - 1 - k, halves[k] = (k + 16) % kK;
  for (const auto& [name, perm] : {std::pair<const char*, const int(*)[kK]>{"halves swapped", &halves},
                                   std::pair<const char*, const int(*)[kK]>{"reversed", &reversed}}) {
    const Results p = run(permuted(A, *perm), permuted(B, *perm), C);
    std::printf("mma.sync, K permuted (%-14s):            %zu differ; wgmma (A in registers) on it vs mma.sync on it: %zu differ\n", name,
                differing(p.mma, base.mma), differing(p.wgmma, p.mma));
  }
  std::vector<uint8_t> lo = A, hi = A;
  for (size_t i = 0; i < A.size(); ++i) (i % kK < 16 ? hi : lo)[i] = 0;
  const Results first = run(lo, B, C), both = run(hi, B, first.mma);
  std::printf("control, the 32 products in two mma of 16 against one: %zu differ\n", differing(both.mma, base.mma));
}

}  // namespace

int main() {
  int device = 0;
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("%s (sm_%d%d): %d outputs of C + A B^T (64 x 8 x 32, e4m3 operands, fp32 accumulate)\n", prop.name,
              prop.major, prop.minor, kTrials * kM * kN);
  std::mt19937 rng(2026);
  std::vector<uint8_t> A(static_cast<size_t>(kTrials) * kM * kK), B(static_cast<size_t>(kTrials) * kN * kK);
  for (auto& v : A) v = random_e4m3(rng);
  for (auto& v : B) v = random_e4m3(rng);
  // C over a wide range, then C of the products' own size (as in a long dot product's running sum).
  std::vector<float> wide(static_cast<size_t>(kTrials) * kM * kN), near(wide.size()), zero(wide.size(), 0.0f);
  for (auto& v : wide) v = spread(rng, -24, 24);
  for (auto& v : near) v = spread(rng, 8, 14);
  report("C spread over 2^-24 .. 2^24", wide, A, B);
  report("C near the products' size (2^8 .. 2^14)", near, A, B);
  report("C zero", zero, A, B);
  return 0;
}

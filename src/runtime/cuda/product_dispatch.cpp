#include "runtime/cuda/product_dispatch.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <string>

#include "common/error.h"
#include "runtime/cuda/cuda_check.h"

namespace voxrt::cuda {

ProductDispatch::ProductDispatch(const DeviceStream& device, DeviceMemory& memory, Recorder& recorder,
                                 const CudaOptions& options, const OpRepeat& repeat)
    : device_(device), memory_(memory), recorder_(recorder), options_(options), repeat_(repeat) {
  try {
    VOXRT_CUBLAS_CHECK(cublasCreate(&cublas_));
    VOXRT_CUBLAS_CHECK(cublasSetStream(cublas_, device_.stream()));
    VOXRT_CUDA_CHECK(cudaMalloc(&cublas_workspace_, kCublasWorkspace));
    VOXRT_CUBLAS_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_, kCublasWorkspace));

    tuning_.tensor_cores = options_.tensor_core_gemv;
    tuning_.split_warps_per_sm = options_.gemv_split_warps_per_sm;
    tuning_.min_piece_chunks = options_.gemv_min_piece_chunks;
    tuning_.packed_split_warps_per_sm = options_.gemv_packed_split_warps_per_sm;
    tuning_.packed_min_piece_chunks = options_.gemv_packed_min_piece_chunks;
    // The tiles and splits follow the GPU's SMs and shared memory, and wgmma is used where both
    // the GPU (as the backend decides it: DeviceStream::caps) and the code have it.
    const GpuCaps& caps = device_.caps();
    tuning_.sm_count = caps.sms;
    tuning_.smem_per_sm = caps.smem_per_sm;
    tuning_.ring_smem_percent = options_.gemv_ring_smem_percent;
    tuning_.smem_per_block = caps.smem_per_block;
    tuning_.wgmma_gemm = options_.wgmma_gemm && has_wgmma(caps) && gemm_wgmma_available();
    tuning_.gemm_split_percent = options_.gemm_split_percent;
  } catch (...) {
    if (cublas_) cublasDestroy(cublas_);
    if (cublas_workspace_) cudaFree(cublas_workspace_);
    throw;
  }
}

ProductDispatch::~ProductDispatch() {
  make_current(device_.device());
  for (Scratch* s : {&xbf_, &fp8_rows_, &gemv_partials_, &gemv_counters_, &gemm_workspace_}) memory_.drop(*s);
  cudaStreamSynchronize(device_.stream());
  if (cublas_) cublasDestroy(cublas_);
  if (cublas_workspace_) cudaFree(cublas_workspace_);
}

ProductRoute ProductDispatch::route(const DeviceWeight& w, int K, bool library) {
  // A quantized weight's products are the GEMV's, which dequantizes it on the way (cuBLAS takes no
  // such weights; K is a multiple of the group, 32 or more).
  if (w.quantized()) return ProductRoute::Kernels;
  if (!w.bf16) return ProductRoute::Fp32Weight;  // a weight stored as a vector: [N, 1], so K == 1
  // Every batch goes through the GEMV kernel in groups of gemv_max_rows() rows, or through the
  // tiled GEMM that computes the same bits (run_products): each row's reduction order is then the
  // same whatever the batch, so a live session (8 mel rows, 4 encoder rows, 1 decoder row per
  // step) computes exactly what an offline pass or a batch of sessions does. cuBLAS, whose tiling
  // depends on M, is used only for K not a multiple of 8 and when asked for (Library, or
  // VOXRT_CUDA_GEMV_MAX_ROWS=0).
  if (!library && gemv_supports_k(K)) return ProductRoute::Kernels;
  return ProductRoute::Library;
}

void ProductDispatch::linear(Mat x, const Weight& w, const Weight* bias, Mat y, bool accumulate) {
  const int M = x.rows, K = x.cols, N = w.rows;
  check_with(K == w.cols && y.rows == M && y.cols == N, "cuda linear", [&] {
    return "shape mismatch: x [" + std::to_string(M) + ", " + std::to_string(K) + "], W [" + std::to_string(w.rows) +
           ", " + std::to_string(w.cols) + "], y [" + std::to_string(y.rows) + ", " + std::to_string(y.cols) + "]";
  });
  if (M == 0 || N == 0) return;
  device_.use();
  linear_impl(x.data, M, K, K, w, bias, y.data, N, accumulate, "cuda linear");
}

// linears (two or three products over x) as one GEMV launch per group of rows; false when it cannot be.
bool ProductDispatch::linears(Mat x, std::span<const LinearOut> outs) {
  const char* where = "cuda linears";
  const int M = x.rows, K = x.cols;
  for (const LinearOut& o : outs)
    check(o.w && K == o.w->cols && o.y.rows == M && o.y.cols == o.w->rows, where, "shape mismatch");
  bool ok = outs.size() >= 2 && outs.size() <= static_cast<size_t>(kGemvMaxOutputs);
  for (const LinearOut& o : outs) ok = ok && kernels_take(x, *o.w, where) && o.w->format == outs[0].w->format;
  if (!ok) return false;
  device_.use();
  GemvOut g[kGemvMaxOutputs];
  const int n = static_cast<int>(outs.size());
  for (int i = 0; i < n; ++i)
    g[i] = gemv_out(*outs[i].w, outs[i].bias, outs[i].y.data, outs[i].y.cols, outs[i].accumulate, where);
  run_products(x.data, M, K, K, g, n, false);
  return true;
}

// gated_linear as one GEMV launch per group of rows; false when it cannot be.
bool ProductDispatch::gated_linear(Mat x, const Weight& w_gate, const Weight& w_up, Mat y) {
  const char* where = "cuda gated_linear";
  const int M = x.rows, K = x.cols;
  check(w_gate.cols == K && w_up.cols == K && w_gate.rows == w_up.rows && y.rows == M && y.cols == w_gate.rows, where,
        "shape mismatch");
  if (M == 0) return true;
  if (!kernels_take(x, w_gate, where) || !kernels_take(x, w_up, where) || !(w_gate.format == w_up.format)) return false;
  device_.use();
  GemvOut g[2] = {gemv_out(w_gate, nullptr, y.data, y.cols, false, where),
                  gemv_out(w_up, nullptr, nullptr, 0, false, where)};
  run_products(x.data, M, K, K, g, 2, true);
  return true;
}

void ProductDispatch::conv1d_k3(Mat x, const Weight& w, const Weight& bias, int stride, Mat y) {
  const int cin = x.cols, t_out = y.rows;
  check(stride >= 1 && x.rows >= 3 && t_out == (x.rows - 3) / stride + 1 && w.cols == 3 * cin && y.cols == w.rows,
        "cuda conv1d", "shape mismatch");
  device_.use();
  // Patch row t is x rows s*t .. s*t+2, contiguous: a matrix [t_out, 3 cin] with row stride s * cin.
  linear_impl(x.data, t_out, 3 * cin, static_cast<size_t>(stride) * cin, w, &bias, y.data, y.cols, false,
              "cuda conv1d");
}

void ProductDispatch::admit(const Weight& w) {
  if (route(device_weight(w, "cuda upload_weight"), w.cols, false) == ProductRoute::Library) cublas_weights_ = true;
}

bool ProductDispatch::set_kernels(KernelSwitches::ProductKernels k) {
  if (k == KernelSwitches::ProductKernels::Gemm && !tuning_.tensor_cores) return false;
  products_ = k;
  return true;
}

bool ProductDispatch::kernels_take(Mat x, const Weight& w, const char* where) const {
  return x.rows > 0 && gemv_reads_f32(x.data, x.cols) &&
         route(device_weight(w, where), x.cols, library()) == ProductRoute::Kernels;
}

void ProductDispatch::linear_impl(const float* x, int M, int K, size_t ldx, const Weight& w, const Weight* bias,
                                  float* y, int ldy, bool accumulate, const char* where) {
  const DeviceWeight& W = device_weight(w, where);
  const int N = w.rows;
  DevVec b;
  if (bias) {
    check(static_cast<size_t>(bias->rows) * bias->cols == static_cast<size_t>(N), where, "bias size mismatch");
    b = vec_of(*bias, where);
  }
  if (M == 0 || N == 0) return;
  switch (route(W, K, library())) {
    case ProductRoute::Fp32Weight:
      if (recorder_.recorded(20, x, M, K, ldx, W.data, N, b.data, y, ldy, accumulate)) return;
      launch_linear_f32_weight(x, M, K, ldx, static_cast<const float*>(W.data), N, b, y, ldy, accumulate,
                               device_.launch());
      return;
    case ProductRoute::Kernels: {
      GemvOut g = gemv_out(w, bias, y, ldy, accumulate, where);
      run_products(x, M, K, ldx, &g, 1, false);
      return;
    }
    case ProductRoute::Library:
      break;
  }
  auto* xb = static_cast<__nv_bfloat16*>(memory_.grow(xbf_, static_cast<size_t>(M) * K * sizeof(__nv_bfloat16)));
  const auto* wb = static_cast<const __nv_bfloat16*>(W.data);
  if (recorder_.recorded(21, x, M, K, ldx, xb, wb, N, b.data, y, ldy, accumulate)) return;
  launch_f32_to_bf16(x, M, K, ldx, xb, device_.launch());
  // Column-major view: y^T [N, M] (ld ldy) = W^T^T ... i.e. C = op(A) B with A = W stored column-major
  // as [K, N] (ld K) and op(A) = A^T = W [N, K]; B = x^T stored column-major as [K, M] (ld K).
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  VOXRT_CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, wb, CUDA_R_16BF, K, xb,
                                  CUDA_R_16BF, K, &beta, y, CUDA_R_32F, ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  if (b.data) launch_add_bias(y, M, N, b, device_.launch());
}

GemvOut ProductDispatch::gemv_out(const Weight& w, const Weight* bias, float* y, int ldy, bool accumulate,
                                  const char* where) {
  GemvOut g;
  const DeviceWeight& d = device_weight(w, where);
  if (d.format == kGemvFp8) {
    g.format = d.format;
    g.w = static_cast<const __nv_bfloat16*>(d.data);  // the e4m3 codes, read as bf16 pairs
    g.row_scales = static_cast<const float*>(d.scales);
  } else if (d.quantized()) {
    g.format = d.format;
    g.packed = static_cast<const uint8_t*>(d.data);
    g.scales = static_cast<const __nv_bfloat16*>(d.scales);
    g.group = d.group;
  } else {
    g.w = static_cast<const __nv_bfloat16*>(d.data);
  }
  g.n = w.rows;
  if (bias) {
    check(static_cast<size_t>(bias->rows) * bias->cols == static_cast<size_t>(w.rows), where, "bias size mismatch");
    g.bias = vec_of(*bias, where);
  }
  g.y = y;
  g.ldy = ldy;
  g.accumulate = accumulate ? 1 : 0;
  return g;
}

bool ProductDispatch::library() const {
  return products_ == KernelSwitches::ProductKernels::Library ||
         (products_ == KernelSwitches::ProductKernels::Automatic && options_.library_products);
}

// Both compute the same bits for every row (the products' order, tensor_core.cuh), so the choice
// is one of speed alone. Measured (bench/results/2026-12-03-products-one-chain.txt): the GEMM's
// time is flat from 1 to 64 rows; at one row the two are level over a decoder step's products, at
// 8 the GEMM is faster on every product, so it takes 2 rows and more (CudaOptions::gemm_min_rows).
// Quantized weights: their own thresholds (CudaOptions::gemm_packed_min_rows, gemm_fp8_min_rows).
bool ProductDispatch::tiled(int M, int format) const {
  if (!tuning_.tensor_cores || products_ == KernelSwitches::ProductKernels::Gemv) return false;
  // fp8 on Hopper: every row count on wgmma, whose e4m3 sums the GEMV's mma.sync would not match.
  if (format == kGemvFp8 && tuning_.wgmma_gemm) return true;
  const int min_rows = format == kGemvBf16  ? options_.gemm_min_rows
                       : format == kGemvFp8 ? options_.gemm_fp8_min_rows
                                            : options_.gemm_packed_min_rows;
  return products_ == KernelSwitches::ProductKernels::Gemm || M >= min_rows;
}

const __nv_bfloat16* ProductDispatch::bf16_copy(const float* x, int M, int K, size_t ldx) {
  auto* xb = static_cast<__nv_bfloat16*>(memory_.grow(xbf_, static_cast<size_t>(M) * K * sizeof(__nv_bfloat16)));
  if (!recorder_.recorded(22, x, M, K, ldx, xb)) launch_f32_to_bf16(x, M, K, ldx, xb, device_.launch());
  return xb;
}

void ProductDispatch::run_products(const float* x, int M, int K, size_t ldx, GemvOut* outs, int n_outs, bool gated) {
  if (outs[0].format == kGemvFp8) {
    // fp8 (W8A8): the rows of x quantized to e4m3 codes and scales, then the kernels over the codes
    // read as bf16 pairs, K / 2 of them a row (quant_layout.h: kGemvFp8).
    const uint8_t* codes = fp8_rows(x, M, K, ldx, outs, n_outs);
    launch_products(codes, true, K / 2, M, K / 2, outs, n_outs, gated);
    return;
  }
  // The tiled GEMM reads bf16 rows; the GEMV reads fp32 rows directly where they are 16-byte
  // aligned, else the same bf16 copy (same rounding, same result).
  if (tiled(M, outs[0].format) || !gemv_reads_f32(x, ldx)) launch_products(bf16_copy(x, M, K, ldx), true, K, M, K, outs, n_outs, gated);
  else launch_products(x, false, ldx, M, K, outs, n_outs, gated);
}

const uint8_t* ProductDispatch::fp8_rows(const float* x, int M, int K, size_t ldx, GemvOut* outs, int n_outs) {
  const size_t code_bytes = (static_cast<size_t>(M) * K + 15) / 16 * 16;  // the scales 16-byte aligned after them
  auto* codes = static_cast<uint8_t*>(memory_.grow(fp8_rows_, code_bytes + static_cast<size_t>(M) * sizeof(float)));
  auto* scales = reinterpret_cast<float*>(codes + code_bytes);
  if (!recorder_.recorded(28, x, M, K, ldx, codes, scales))
    launch_quantize_rows_e4m3(x, M, K, ldx, codes, scales, device_.launch());
  for (int i = 0; i < n_outs; ++i) outs[i].x_scales = scales;
  return codes;
}

// The products of M rows of x (row stride ld elements: fp32, or bf16 when x_bf16) through the tiled
// GEMM (bf16 x only) or the GEMV in groups of gemv_max_rows() rows (tiled()).
void ProductDispatch::launch_products(const void* x, bool x_bf16, size_t ld, int M, int K, GemvOut* outs, int n_outs,
                                      bool gated) {
  if (tiled(M, outs[0].format)) {
    check(x_bf16, "cuda products", "the tiled GEMM reads bf16 rows");
    const auto* xb = static_cast<const __nv_bfloat16*>(x);
    const size_t ws_floats = gemm_workspace_floats(M, K, outs, n_outs, gated, tuning_);
    float* ws = ws_floats ? static_cast<float*>(memory_.grow(gemm_workspace_, ws_floats * sizeof(float))) : nullptr;
    uint64_t h = Recorder::words(24, xb, ld, M, K, n_outs, gated, device_.sm_count(), ws);
    for (int i = 0; i < n_outs; ++i)
      h ^= Recorder::words(outs[i].data(), outs[i].n, outs[i].bias.data, outs[i].y, outs[i].ldy, outs[i].accumulate,
                           outs[i].x_scales) +
           i;
    if (recorder_.recorded(h, repeat_[OpKind::Product])) return;
    for (int i = 0; i < repeat_[OpKind::Product]; ++i)
      launch_gemm(xb, ld, M, K, outs, n_outs, gated, ws, ws_floats, tuning_, device_.launch());
    return;
  }
  const size_t elem = x_bf16 ? sizeof(__nv_bfloat16) : sizeof(float);
  const GemvWorkspace ws = gemv_workspace(K, outs, n_outs, gated);
  GemvOut group[kGemvMaxOutputs];
  const int group_rows = gemv_max_rows(tuning_);
  for (int m0 = 0; m0 < M; m0 += group_rows) {
    const int rows = std::min(group_rows, M - m0);
    uint64_t h = Recorder::words(23, x, ld, rows, K, n_outs, gated, x_bf16, ws.partials, ws.counters);
    for (int i = 0; i < n_outs; ++i) {
      group[i] = outs[i];
      if (group[i].y) group[i].y += static_cast<size_t>(m0) * group[i].ldy;
      if (group[i].x_scales) group[i].x_scales += m0;
      h ^= Recorder::words(group[i].data(), group[i].n, group[i].bias.data, group[i].y, group[i].ldy,
                           group[i].accumulate, group[i].x_scales) +
           i;
    }
    const void* xg = static_cast<const char*>(x) + static_cast<size_t>(m0) * ld * elem;
    if (recorder_.recorded(h, xg, repeat_[OpKind::Product])) continue;
    for (int i = 0; i < repeat_[OpKind::Product]; ++i)
      launch_gemv(xg, x_bf16, ld, rows, K, group, n_outs, gated, ws, tuning_, device_.launch());
  }
}

// The split-K workspace for these weights (kernels_gemv_mma.cu); counters are zeroed when made,
// and every launch leaves them zero.
GemvWorkspace ProductDispatch::gemv_workspace(int K, const GemvOut* outs, int n_outs, bool gated) {
  const GemvWorkspaceSize need = gemv_workspace_size(K, outs, n_outs, gated, tuning_);
  GemvWorkspace ws;
  if (need.partial_floats > 0) {
    ws.partials = static_cast<float*>(memory_.grow(gemv_partials_, need.partial_floats * sizeof(float)));
    ws.partial_floats = gemv_partials_.bytes / sizeof(float);
  }
  if (need.counters > 0) {
    const bool fresh = gemv_counters_.bytes < need.counters * sizeof(int);
    ws.counters = static_cast<int*>(memory_.grow(gemv_counters_, need.counters * sizeof(int)));
    if (fresh) VOXRT_CUDA_CHECK(cudaMemsetAsync(ws.counters, 0, gemv_counters_.bytes, device_.stream()));
    ws.counter_count = gemv_counters_.bytes / sizeof(int);
  }
  return ws;
}

}  // namespace voxrt::cuda

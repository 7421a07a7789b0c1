#include "bench/kernels/cuda/product_inputs.h"

#include "bench/kernels/random_data.h"
#include "bench/kernels/reference_ops.h"
#include "common/bf16.h"

namespace voxrt::bench {

ProductInputs make_product_inputs(const KernelArgs& a) {
  ProductInputs in;
  RandomData random(a.seed);
  const size_t x_n = static_cast<size_t>(a.batch) * a.cols, w_n = static_cast<size_t>(a.rows) * a.cols;
  in.x = random.uniform(x_n);
  in.x_bf16 = in.x;
  for (float& v : in.x_bf16) v = bf16_to_float(float_to_bf16(v));
  in.w = random.uniform_bf16(w_n);
  if (a.gated) in.up = random.uniform_bf16(w_n);
  in.want = reference_product(in.x_bf16, a.batch, a.cols, in.w, a.rows, a.gated ? &in.up : nullptr);
  in.tolerance = product_tolerance(in.want);
  return in;
}

DeviceProducts::DeviceProducts(const KernelArgs& a, const Gpu& gpu, const ProductInputs& in)
    : gated_(a.gated), rows_(a.rows), batch_(a.batch) {
  const size_t w_n = static_cast<size_t>(a.rows) * a.cols;
  weight_stride_ = copy_stride(w_n * sizeof(uint16_t));
  copy_bytes_ = weight_stride_ * n_outs();
  std::vector<uint16_t> one_copy(copy_bytes_ / sizeof(uint16_t));
  const std::vector<uint16_t> w = to_bf16_bits(in.w);
  std::copy(w.begin(), w.end(), one_copy.begin());
  if (gated_) {
    const std::vector<uint16_t> up = to_bf16_bits(in.up);
    std::copy(up.begin(), up.end(), one_copy.begin() + weight_stride_ / sizeof(uint16_t));
  }
  copies_ = data_copies(a, gpu, copy_bytes_);
  weights_ = upload_copies(one_copy, copies_, copy_bytes_, "the weights");
  y_ = DeviceBuffer(static_cast<size_t>(a.batch) * a.rows * sizeof(float), "y");
}

const cuda::GemvOut* DeviceProducts::outs(int copy) {
  const size_t base = static_cast<size_t>(copy) * copy_bytes_;
  outs_[0] = cuda::GemvOut{};
  outs_[0].w = weights_.get<const __nv_bfloat16>(base);
  outs_[0].n = rows_;
  outs_[0].y = y_.get<float>();
  outs_[0].ldy = rows_;
  if (gated_) {  // as the backend's gated_linear: the up weight rides in out[1], which has no y
    outs_[1] = cuda::GemvOut{};
    outs_[1].w = weights_.get<const __nv_bfloat16>(base + weight_stride_);
    outs_[1].n = rows_;
  }
  return outs_;
}

LaunchedKernel DeviceProducts::launched(std::function<void(int copy)> launch) const {
  LaunchedKernel k;
  k.launch = std::move(launch);
  k.poison_output = [this] { poison(y_); };
  k.output = [this] { return download(y_.get<const float>(), static_cast<size_t>(batch_) * rows_); };
  k.copies = copies_;
  k.copy_bytes = copy_bytes_;
  return k;
}

std::string product_shape(const KernelArgs& a) {
  std::string s = "M " + std::to_string(a.batch) + ", N " + std::to_string(a.rows) + ", K " + std::to_string(a.cols) +
                  ", " + a.weights + " weights";
  if (a.family == Family::Gemv) s += ", " + a.input + " x";
  if (a.gated) s += ", gated (silu(x Wg^T) * (x Wu^T))";
  return s;
}

}  // namespace voxrt::bench

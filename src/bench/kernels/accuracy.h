// How far a kernel's output is from the CPU reference, and whether that is within the kernel's
// stated tolerance: every element |got - want| <= atol + rtol |want| (NaN never is).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace voxrt::bench {

struct Tolerance {
  double rtol = 0, atol = 0;
  std::string why;  // how it was set, for the report
};

// Products: normwise, max |got - want| <= 1e-5 max |want| (fp32 sums of the same bf16 products, in
// another order than the reference's double sums), as the CUDA backend's tests hold them.
Tolerance product_tolerance(const std::vector<float>& want);
// Attention: |got - want| <= 1e-5 |want| + 2e-6 max |V| (the output is a convex combination of V).
Tolerance attention_tolerance(const std::vector<float>& values);

struct Accuracy {
  double max_abs = 0;  // max |got - want|
  double max_rel = 0;  // max |got - want| / max |want| (normwise)
  double worst_ratio = 0;  // max |got - want| / (atol + rtol |want|): <= 1 within tolerance
  size_t worst_index = 0;
  size_t misses = 0;  // elements beyond the tolerance
  bool within() const { return misses == 0; }
};
// got and want of the same size (else std::invalid_argument).
Accuracy compare(const std::vector<float>& got, const std::vector<float>& want, const Tolerance& t);

double max_abs(const std::vector<float>& v);

}  // namespace voxrt::bench

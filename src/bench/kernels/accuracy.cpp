#include "bench/kernels/accuracy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace voxrt::bench {

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

Tolerance product_tolerance(const std::vector<float>& want) {
  return {0.0, 1e-5 * max_abs(want), "|gpu - cpu| <= 1e-5 max|cpu| (fp32 sums of the same bf16 products)"};
}

Tolerance attention_tolerance(const std::vector<float>& values) {
  return {1e-5, 2e-6 * max_abs(values), "|gpu - cpu| <= 1e-5 |cpu| + 2e-6 max|V|"};
}

Accuracy compare(const std::vector<float>& got, const std::vector<float>& want, const Tolerance& t) {
  if (got.size() != want.size())
    throw std::invalid_argument("compare: " + std::to_string(got.size()) + " results for " +
                                std::to_string(want.size()) + " reference values");
  Accuracy a;
  const double scale = max_abs(want);
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double tol = t.atol + t.rtol * std::fabs(want[i]);
    const double inf = std::numeric_limits<double>::infinity();
    const double ratio = std::isnan(d) ? inf : tol > 0 ? d / tol : d > 0 ? inf : 0;
    if (!(d <= tol)) ++a.misses;
    if (ratio > a.worst_ratio) {
      a.worst_ratio = ratio;
      a.worst_index = i;
    }
    if (!(d <= a.max_abs)) a.max_abs = std::isnan(d) ? inf : d;
  }
  a.max_rel = scale > 0 ? a.max_abs / scale : a.max_abs;
  return a;
}

}  // namespace voxrt::bench

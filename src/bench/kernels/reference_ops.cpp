#include "bench/kernels/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <thread>

namespace voxrt::bench {
namespace {

// f(r) for r in [0, rows), the rows split over the machine's cores.
template <typename F>
void for_rows(int rows, F f) {
  const int threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, std::max(1, rows));
  std::vector<std::thread> team;
  for (int t = 0; t < threads; ++t)
    team.emplace_back([&, t] {
      for (int r = t; r < rows; r += threads) f(r);
    });
  for (std::thread& th : team) th.join();
}

double dot(const float* a, const float* b, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

}  // namespace

std::vector<float> reference_product(const std::vector<float>& x, int M, int K, const std::vector<float>& w, int N,
                                     const std::vector<float>* up) {
  std::vector<float> y(static_cast<size_t>(M) * N);
  for_rows(M, [&](int m) {
    const float* xm = x.data() + static_cast<size_t>(m) * K;
    for (int n = 0; n < N; ++n) {
      const double g = dot(xm, w.data() + static_cast<size_t>(n) * K, K);
      double v = g;
      if (up) v = g / (1.0 + std::exp(-g)) * dot(xm, up->data() + static_cast<size_t>(n) * K, K);
      y[static_cast<size_t>(m) * N + n] = static_cast<float>(v);
    }
  });
  return y;
}

std::vector<float> reference_attention(const std::vector<float>& q, const std::vector<AttendedKeys>& rows,
                                       const std::vector<float>& keys, const std::vector<float>& values,
                                       const AttentionShape& s) {
  const int hd = s.head_dim, group = s.heads / s.kv_heads, width = s.heads * hd;
  const size_t entry = static_cast<size_t>(s.kv_heads) * hd;
  std::vector<float> out(rows.size() * width);
  for_rows(static_cast<int>(rows.size()), [&](int r) {
    const AttendedKeys& a = rows[r];
    std::vector<double> score(a.count), acc(hd);
    for (int h = 0; h < s.heads; ++h) {
      const float* qh = q.data() + static_cast<size_t>(r) * width + static_cast<size_t>(h) * hd;
      const size_t head_at = static_cast<size_t>(h / group) * hd;
      auto at = [&](int j) {
        return (static_cast<size_t>(a.slot) * s.ring + static_cast<size_t>((a.first + j) % s.ring)) * entry + head_at;
      };
      double most = -INFINITY;
      for (int j = 0; j < a.count; ++j) {
        score[j] = s.scale * dot(qh, keys.data() + at(j), hd);
        most = std::max(most, score[j]);
      }
      double sum = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int j = 0; j < a.count; ++j) {
        const double p = std::exp(score[j] - most);
        sum += p;
        const float* v = values.data() + at(j);
        for (int d = 0; d < hd; ++d) acc[d] += p * v[d];
      }
      float* o = out.data() + static_cast<size_t>(r) * width + static_cast<size_t>(h) * hd;
      for (int d = 0; d < hd; ++d) o[d] = static_cast<float>(acc[d] / sum);
    }
  });
  return out;
}

}  // namespace voxrt::bench

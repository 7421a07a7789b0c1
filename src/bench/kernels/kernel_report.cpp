#include "bench/kernels/kernel_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace voxrt::bench {
namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

bool default_floor(const KernelArgs& a) {
  const KernelArgs d;
  return a.bandwidth == d.bandwidth && a.peak_flops == d.peak_flops;
}

}  // namespace

KernelCost product_cost(const KernelArgs& a) {
  const double M = a.batch, N = a.rows, K = a.cols, outs = a.gated ? 2 : 1;
  const double x_bytes = a.family == Family::Gemv && a.input == "f32" ? 4 : 2;
  return {outs * N * K * 2 + M * K * x_bytes + M * N * 4, 2 * M * N * K * outs};
}

KernelCost attention_cost(const KernelArgs& a) {
  const double entries = a.layout == "frames" ? a.keys + a.query_rows - 1.0 : static_cast<double>(a.query_rows) * a.keys;
  const double elem = a.cache == "fp8" ? 1 : a.cache == "bf16" ? 2 : 4;
  const double scales = a.cache == "fp8" ? 4.0 * a.kv_heads : 0;
  const double kv = 2 * entries * (static_cast<double>(a.kv_heads) * a.head_dim * elem + scales);
  const double q_and_out = 2.0 * a.query_rows * a.heads * a.head_dim * 4;
  return {kv + q_and_out, 4.0 * a.query_rows * a.heads * static_cast<double>(a.keys) * a.head_dim};
}

double floor_seconds(const KernelRun& r) {
  return std::max(r.cost.bytes / r.args.bandwidth, r.cost.flops / r.args.peak_flops);
}

std::string format_report(const KernelRun& r) {
  const KernelArgs& a = r.args;
  const Accuracy& acc = r.accuracy;
  std::ostringstream out;
  out << family_name(a.family) << " --kernel " << a.kernel << ": " << r.shape << " (seed " << a.seed << ")\n";
  out << "device: " << r.device << "\n";
  out << "accuracy: max |gpu - cpu| " << fmt("%.3g", acc.max_abs) << ", relative to max|cpu| "
      << fmt("%.3g", acc.max_rel) << "; tolerance " << r.tolerance.why << ": "
      << (acc.within() ? "within" : "EXCEEDED") << " (worst element " << acc.worst_index << " at "
      << fmt("%.3g", acc.worst_ratio) << " of its tolerance";
  if (!acc.within()) out << ", " << acc.misses << " elements beyond it";
  out << ")\n";
  out << "time: " << fmt("%.2f", r.seconds * 1e6) << " us a launch (" << a.repeat << " timed after " << a.warmup
      << " warm-up; ";
  if (r.copies > 1)
    out << r.copies << " copies of the data rotated, " << fmt("%.1f", r.copy_bytes / 1e6) << " MB each, "
        << fmt("%.1f", r.copies * r.copy_bytes / 1e6) << " MB in all";
  else
    out << "one copy of the data, " << fmt("%.1f", r.copy_bytes / 1e6) << " MB" << (a.hot ? ", L2-warm (--hot)" : "");
  out << ")\n";
  const double bw_s = r.cost.bytes / a.bandwidth, flop_s = r.cost.flops / a.peak_flops;
  out << "floor: " << fmt("%.2f", bw_s * 1e6) << " us for " << fmt("%.1f", r.cost.bytes / 1e6) << " MB at "
      << fmt("%.3g", a.bandwidth) << " B/s, " << fmt("%.2f", flop_s * 1e6) << " us for "
      << fmt("%.3g", r.cost.flops / 1e9) << " GFLOP at " << fmt("%.3g", a.peak_flops) << " FLOP/s ("
      << (default_floor(a) ? "the H200's HBM and dense bf16 rate; --bandwidth, --peak-flops for another GPU" : "as given")
      << "): the launch takes " << fmt("%.2f", r.seconds / floor_seconds(r)) << "x the floor, "
      << fmt("%.0f", r.cost.bytes / r.seconds / 1e9) << " GB/s, " << fmt("%.1f", r.cost.flops / r.seconds / 1e12)
      << " TFLOP/s\n";
  return out.str();
}

nlohmann::json report_json(const KernelRun& r) {
  const KernelArgs& a = r.args;
  return {{"family", family_name(a.family)},
          {"kernel", a.kernel},
          {"shape", r.shape},
          {"device", r.device},
          {"seed", a.seed},
          {"max_abs_error", r.accuracy.max_abs},
          {"relative_error", r.accuracy.max_rel},
          {"tolerance", {{"rtol", r.tolerance.rtol}, {"atol", r.tolerance.atol}, {"rule", r.tolerance.why}}},
          {"within_tolerance", r.accuracy.within()},
          {"elements_beyond_tolerance", r.accuracy.misses},
          {"seconds_per_launch", r.seconds},
          {"repeat", a.repeat},
          {"warmup", a.warmup},
          {"data_copies", r.copies},
          {"bytes", r.cost.bytes},
          {"flops", r.cost.flops},
          {"bandwidth", a.bandwidth},
          {"peak_flops", a.peak_flops},
          {"floor_seconds", floor_seconds(r)},
          {"times_floor", r.seconds / floor_seconds(r)}};
}

}  // namespace voxrt::bench

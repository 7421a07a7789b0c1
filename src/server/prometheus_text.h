// Prometheus's text exposition format (version 0.0.4), written out by GET /metrics: metric
// families (HELP and TYPE lines) and their samples, label values escaped, histograms as cumulative
// `_bucket{le=...}` lines with `_sum` and `_count`.
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "voxrt/voxrt.h"

namespace voxrt::server {

using Labels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
 public:
  // Starts a family: "gauge", "counter" or "histogram". Its samples follow.
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, double value, const Labels& labels = {});
  // A family of one sample.
  void gauge(std::string_view name, std::string_view help, double value);
  void counter(std::string_view name, std::string_view help, double value);
  // A whole histogram family; values (bounds and sum) multiplied by `scale` (ms -> s: 1e-3).
  void histogram(std::string_view name, std::string_view help, const Histogram& h, double scale = 1);
  std::string str() const { return out_.str(); }

  static std::string escape_label(std::string_view value);  // \\, \" and \n, as the format asks

 private:
  std::ostringstream out_;
};

}  // namespace voxrt::server

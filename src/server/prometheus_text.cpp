#include "server/prometheus_text.h"

#include <cmath>
#include <cstdio>

namespace voxrt::server {
namespace {

// Shortest form that reads back the same; Prometheus spells the infinities +Inf and -Inf.
std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  double back = 0;
  for (int precision = 6; precision < 17; ++precision) {  // the shortest that round-trips
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", precision, v);
    if (std::sscanf(shorter, "%lf", &back) == 1 && back == v) return shorter;
  }
  return buf;
}

}  // namespace

std::string PrometheusText::escape_label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ << "# HELP " << name << ' ';
  for (char c : help) {  // HELP escapes backslash and newline only
    if (c == '\\') out_ << "\\\\";
    else if (c == '\n') out_ << "\\n";
    else out_ << c;
  }
  out_ << "\n# TYPE " << name << ' ' << type << '\n';
}

void PrometheusText::sample(std::string_view name, double value, const Labels& labels) {
  out_ << name;
  if (!labels.empty()) {
    out_ << '{';
    for (size_t i = 0; i < labels.size(); ++i)
      out_ << (i ? "," : "") << labels[i].first << "=\"" << escape_label(labels[i].second) << '"';
    out_ << '}';
  }
  out_ << ' ' << number(value) << '\n';
}

void PrometheusText::gauge(std::string_view name, std::string_view help, double value) {
  family(name, "gauge", help);
  sample(name, value);
}

void PrometheusText::counter(std::string_view name, std::string_view help, double value) {
  family(name, "counter", help);
  sample(name, value);
}

void PrometheusText::histogram(std::string_view name, std::string_view help, const Histogram& h, double scale) {
  family(name, "histogram", help);
  const std::string n(name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    cumulative += h.counts[i];
    const std::string le = i < h.upper_bounds.size() ? number(h.upper_bounds[i] * scale) : "+Inf";
    sample(n + "_bucket", static_cast<double>(cumulative), {{"le", le}});
  }
  sample(n + "_sum", h.sum * scale);
  sample(n + "_count", static_cast<double>(h.count));
}

}  // namespace voxrt::server

// Reading golden fixtures written by tools/reference (safetensors of f32/i32 tensors plus string
// metadata) and comparing engine outputs with them.
#pragma once

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "safetensors/safetensors.h"
#include "test_paths.h"

namespace voxrt::test {

class Golden {
 public:
  explicit Golden(const std::filesystem::path& file) : file_(SafetensorsFile::open(file)) {}
  bool has(const std::string& name) const { return file_->find(name) != nullptr; }
  std::vector<float> f32(const std::string& name) const {
    const TensorInfo* t = file_->find(name);
    if (!t) return {};
    std::vector<float> v(t->numel());
    convert_to_f32(t->dtype, t->data, v.data(), v.size());
    return v;
  }
  std::vector<int32_t> i32(const std::string& name) const {
    const TensorInfo* t = file_->find(name);
    if (!t) return {};
    std::vector<int32_t> v(t->numel());
    if (t->dtype == DType::I32) {
      std::memcpy(v.data(), t->data, v.size() * 4);
    } else {
      for (size_t i = 0; i < v.size(); ++i) {
        int64_t x;
        std::memcpy(&x, t->data + i * 8, 8);
        v[i] = static_cast<int32_t>(x);
      }
    }
    return v;
  }
  std::vector<int64_t> shape(const std::string& name) const { return file_->find(name)->shape; }
  std::string meta(const std::string& key, const std::string& fallback = "") const {
    auto it = file_->metadata().find(key);
    return it == file_->metadata().end() ? fallback : it->second;
  }

 private:
  std::unique_ptr<SafetensorsFile> file_;
};

// ||a - b|| / ||b|| over the common length (sizes must match; checked by the caller).
inline double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

inline double max_abs_error(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

}  // namespace voxrt::test

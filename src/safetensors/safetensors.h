// A memory-mapped safetensors file. The header is parsed and every entry checked before any tensor
// is handed out: dtype known, shape non-negative and not overflowing, offsets inside the data
// section, byte size == product(shape) * dtype size, no two tensors overlapping. Any violation
// throws voxrt::Error naming the file and the tensor or byte at fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace voxrt {

// F8_E4M3: fp8 e4m3 codes, a byte each (quant/fp8_e4m3.h), as safetensors names them.
enum class DType : uint8_t { F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL, F8_E4M3 };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);  // the safetensors spelling: "F32", "BF16", ...

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // inside the mapping; valid while the file object lives
  size_t nbytes = 0;
  int64_t numel() const;
};

class SafetensorsFile {
 public:
  // Maps and validates the file. Throws voxrt::Error("<path>: <what is wrong>").
  static std::unique_ptr<SafetensorsFile> open(const std::filesystem::path& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(const std::string& name) const;  // nullptr when absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Drops the pages of [data, data + nbytes), a range inside this file's mapping, from the
  // process's resident memory. A loader calls it once it has copied a tensor out: the file-backed
  // pages a read touches count in the process's RSS until they are unmapped, so a model loaded
  // without it holds the whole file resident (8.86 GB for the full-size checkpoint) on top of the
  // weights it made. The bytes stay valid: a later read faults them in again from the page cache
  // (the kernel keeps the file cached; nothing is read from disk twice while memory allows).
  // Pages around the range (up to the 64 KiB windows the kernel maps a read fault's neighbours in)
  // are dropped as well, harmlessly: a neighbouring tensor's pages are read again when it is.
  void release(const uint8_t* data, size_t nbytes) const;

 private:
  SafetensorsFile() = default;
  std::filesystem::path path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Converts n elements of a bf16/f16/f32 buffer to f32. Throws for other dtypes.
void convert_to_f32(DType dtype, const uint8_t* src, float* dst, size_t n);

// Writes tensors to a safetensors file (used by tests and tools; header padded to 8 bytes).
struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace voxrt

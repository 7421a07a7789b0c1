// libFuzzer target: the safetensors reader (src/safetensors/safetensors.cpp) on any file (scripts/fuzz.sh).
// The input is the whole file: the 8-byte header length, the JSON header, the data section. It is
// opened by path and mapped as a checkpoint is, then every tensor it accepts is read end to end and
// the float ones converted, as a model load would. Every input must either open or be refused with
// voxrt::Error; anything else is a bug: another exception, a crash or a read outside the mapping, a
// read out of bounds (ASan) or undefined behaviour (UBSan), an allocation that follows a length field
// instead of the bytes present (scripts/fuzz.sh caps memory with -malloc_limit_mb/-rss_limit_mb),
// or an accepted tensor whose size disagrees with its shape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "common/error.h"
#include "fuzz_input_file.h"
#include "safetensors/safetensors.h"

namespace {
volatile unsigned sink;  // keeps the reads of the tensors' bytes
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace voxrt;
  static fuzz::InputFile file("fuzz.safetensors");
  std::unique_ptr<SafetensorsFile> st;
  try {
    st = SafetensorsFile::open(file.write(data, size));
  } catch (const Error&) {
    return 0;
  }
  for (const TensorInfo& t : st->tensors()) {
    if (st->find(t.name) != &t) std::abort();
    // The bytes a shape needs are those the file gives it: nothing less, nothing more.
    if (t.nbytes != static_cast<size_t>(t.numel()) * dtype_size(t.dtype)) std::abort();
    if (t.nbytes > size) std::abort();
    unsigned sum = 0;
    for (size_t i = 0; i < t.nbytes; ++i) sum += t.data[i];  // faults outside the mapping
    sink = sum;
    if (t.dtype == DType::F32 || t.dtype == DType::F16 || t.dtype == DType::BF16) {
      std::vector<float> f32(static_cast<size_t>(t.numel()));
      convert_to_f32(t.dtype, t.data, f32.data(), f32.size());
    }
    st->release(t.data, t.nbytes);
  }
  return 0;
}

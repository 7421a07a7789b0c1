// Where the full-size checks find the model and which backend they run on: VOXRT_FULL_DIR (a
// directory with mistral/, hf/ and golden/, made by tools/reference/full_size_check.sh on the GPU
// machine) and VOXRT_FULL_DEVICE=cuda (the CUDA backend, else the CPU's).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "runtime/backend.h"  // make_cpu_backend, make_cuda_backend

namespace voxrt::test {

inline std::filesystem::path full_dir() {
  const char* d = std::getenv("VOXRT_FULL_DIR");
  return d ? std::filesystem::path(d) : std::filesystem::path();
}

struct FullSizeSetup {
  std::filesystem::path dir;
  std::unique_ptr<Backend> backend;
  bool cuda = false;
  std::string skip;  // why the check cannot run here (then nothing else is set)
};

inline FullSizeSetup full_size_setup() {
  FullSizeSetup s;
  s.dir = full_dir();
  if (s.dir.empty()) {
    s.skip = "VOXRT_FULL_DIR not set: full-size check skipped (runs on the GPU machine)";
    return s;
  }
  const char* device = std::getenv("VOXRT_FULL_DEVICE");
  s.cuda = device && std::string(device) == "cuda";
#ifdef VOXRT_WITH_CUDA
  if (s.cuda) s.backend = make_cuda_backend(0);
#endif
  if (s.cuda && !s.backend) {
    s.skip = "VOXRT_FULL_DEVICE=cuda but this build has no CUDA backend";
    return s;
  }
  if (!s.backend) s.backend = make_cpu_backend(0);
  return s;
}

}  // namespace voxrt::test

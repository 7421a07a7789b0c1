// The probes' (tools/probes/*.cu) check of a CUDA runtime call: on failure, the call and CUDA's
// message on stderr, and exit 1 (a probe has nothing to recover).
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                  \
  do {                                                                               \
    const cudaError_t e = (call);                                                    \
    if (e != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e));                \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

// What a voxrt_kernel run found, as the lines it prints and as its --json file: the accuracy
// against the CPU reference, and the time a launch against the physical floor (the bytes it must
// move at the memory's bandwidth, its FLOPs at the tensor rate; the H200's figures unless
// --bandwidth and --peak-flops say otherwise).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "bench/kernels/accuracy.h"
#include "bench/kernels/kernel_args.h"

namespace voxrt::bench {

// The least a launch must do: bytes from and to memory, and arithmetic.
struct KernelCost {
  double bytes = 0, flops = 0;
};
// Products: each weight read once, x read and y written once (fp32 x when it is read as fp32).
KernelCost product_cost(const KernelArgs& a);
// Attention: each attended K/V entry read once (frames share their slot's; fp8 entries with their
// scales), q read and the output written once; 4 FLOPs a key and dimension (q.k and p v).
KernelCost attention_cost(const KernelArgs& a);

struct KernelRun {
  KernelArgs args;
  std::string shape;   // "M 1, N 3072, K 3072, ..."
  std::string device;  // "NVIDIA H200 (sm_90, 139.8 GiB)"
  Tolerance tolerance;
  Accuracy accuracy;
  double seconds = 0;   // a launch, averaged over args.repeat
  int copies = 1;       // copies of the data the timed launches rotated through
  double copy_bytes = 0;  // one copy's
  KernelCost cost;
};

// The floor's time: max(bytes / bandwidth, flops / peak).
double floor_seconds(const KernelRun& r);
std::string format_report(const KernelRun& r);
nlohmann::json report_json(const KernelRun& r);

}  // namespace voxrt::bench

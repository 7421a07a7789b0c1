// voxrt_kernel: one CUDA kernel of the backend on random data, checked against the same operation
// on the CPU, then timed against the physical floor (docs/cuda.md, "Running one kernel"), so that
// kernel work needs neither a model nor the engine. Exit status: 0 within tolerance, 1 beyond it
// or a CUDA failure, 2 a command line that cannot mean anything, 77 no CUDA device (CTest's skip).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/kernels/cuda/kernel_runs.h"
#include "bench/kernels/kernel_args.h"
#include "bench/kernels/kernel_report.h"
#include "runtime/cuda/cuda_device.h"

namespace {

constexpr int kSkipped = 77;

voxrt::bench::KernelRun run(const voxrt::bench::KernelArgs& a) {
  using voxrt::bench::Family;
  const voxrt::bench::Gpu gpu;
  switch (a.family) {
    case Family::Gemv: return voxrt::bench::run_gemv(a, gpu);
    case Family::Gemm: return voxrt::bench::run_gemm(a, gpu);
    case Family::Attention: return voxrt::bench::run_attention(a, gpu);
  }
  throw std::logic_error("unknown family");
}

void write_json(const voxrt::bench::KernelRun& r, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << voxrt::bench::report_json(r).dump(2) << "\n";
  out.close();
  if (!out) throw std::runtime_error("--json " + path + ": cannot write the file");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace voxrt::bench;
  try {
    const KernelArgs a = parse_kernel_args(std::vector<std::string>(argv + 1, argv + argc));
    if (a.help || a.list) {
      std::fputs((a.help ? kernel_usage() : kernel_list()).c_str(), stdout);
      return 0;
    }
    if (voxrt::cuda::device_count() == 0) {
      std::puts("voxrt_kernel: skipped: no CUDA device");
      return kSkipped;
    }
    const KernelRun r = run(a);
    std::fputs(format_report(r).c_str(), stdout);
    if (!a.json.empty()) write_json(r, a.json);
    if (!r.accuracy.within()) {
      std::fprintf(stderr, "voxrt_kernel: %s --kernel %s: %zu elements beyond the tolerance\n", family_name(a.family),
                   a.kernel.c_str(), r.accuracy.misses);
      return 1;
    }
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "voxrt_kernel: error: %s\n(voxrt_kernel --help lists the options)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "voxrt_kernel: error: %s\n", e.what());
    return 1;
  }
}

// What one voxrt_kernel run asks for (docs/cuda.md, "Running one kernel"): the kernel family and
// which of its kernels, the shape, the data's formats, and how to time and report it.
// parse_kernel_args() checks every value before anything touches a GPU and names the flag at
// fault; what only the GPU code can judge (a head size the tensor-core attention does not take)
// is checked where the kernel is run, again naming the flag. Plain C++: the CPU build compiles and
// tests it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace voxrt::bench {

enum class Family { Gemv, Gemm, Attention };

// A command line that cannot mean anything (exit status 2); the message names the flag.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct KernelArgs {
  Family family = Family::Gemv;
  std::string kernel;  // one of kernel_infos()' names for the family (its default when not given)
  // Products (gemv, gemm): y [batch, rows] = x [batch, cols] W^T, W bf16. gemm's --m, --n, --k
  // are batch, rows and cols.
  int rows = 3072, cols = 3072, batch = 1;
  std::string weights = "bf16";
  std::string input = "f32";  // gemv: x as fp32 (rounded to bf16 as it is read) or packed bf16
  bool gated = false;         // silu(x Wg^T) * (x Wu^T), two weights of [rows, cols] (the SwiGLU)
  // Attention: query_rows rows, each over `keys` keys of the cache (the window is `keys`).
  int query_rows = 8, keys = 8192, heads = 32, kv_heads = 8, head_dim = 128;
  std::string cache = "bf16";  // bf16 | fp8 | fp32
  // streams: each row its own slot (decoder steps of many sessions); frames: the rows are
  // consecutive positions of one slot (an encoder step, an offline chunk), sharing their keys.
  std::string layout = "streams";
  int page_len = 0;  // ring entries a page of the cache holds (0: one page a slot)
  int rows_per_position = 1;  // the rows of a live step the key split is planned for (AttentionParams::rows_per_position)
  // The run.
  uint64_t seed = 1;
  int repeat = 100, warmup = 10;
  double bandwidth = 4.8e12;    // bytes/s: the H200's HBM3e
  double peak_flops = 989e12;   // FLOP/s: the H200's dense bf16 tensor rate
  bool hot = false;             // time on one copy of the data (L2-warm) instead of rotating copies
  std::string json;             // write the figures to this file
  bool list = false, help = false;
};

// A kernel the driver can run, and what the backend calls it.
struct KernelInfo {
  Family family;
  const char* name;
  bool is_default;
  const char* what;
};
const std::vector<KernelInfo>& kernel_infos();
const char* family_name(Family f);

// args: the command line without the program name. Throws UsageError.
KernelArgs parse_kernel_args(const std::vector<std::string>& args);

// --help's text, and --list's.
std::string kernel_usage();
std::string kernel_list();

}  // namespace voxrt::bench

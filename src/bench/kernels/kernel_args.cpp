#include "bench/kernels/kernel_args.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <sstream>

namespace voxrt::bench {
namespace {

unsigned bit(Family f) { return 1u << static_cast<unsigned>(f); }
constexpr unsigned kGemv = 1, kGemm = 2, kAttention = 4, kProducts = kGemv | kGemm, kAll = 7;
constexpr int kMaxDim = 1 << 20;  // any one size; the GPU's memory refuses large products first

using Setter = std::function<void(KernelArgs&, const std::string& flag, const std::string& value)>;
struct Flag {
  const char* name;
  unsigned families;
  const char* value;  // what the value is, for --help; nullptr for a switch
  const char* what;
  Setter set;
};

long long whole_number(const std::string& flag, const std::string& value, long long lo, long long hi) {
  long long v = 0;
  const char* end = value.data() + value.size();
  const auto r = std::from_chars(value.data(), end, v);
  if (value.empty() || r.ec == std::errc::invalid_argument || r.ptr != end)
    throw UsageError(flag + ": '" + value + "' is not a whole number");
  if (r.ec == std::errc::result_out_of_range || v < lo || v > hi)
    throw UsageError(flag + ": " + value + " out of range (" + std::to_string(lo) + " .. " + std::to_string(hi) + ")");
  return v;
}

double positive_number(const std::string& flag, const std::string& value) {
  std::istringstream in(value);
  double v = 0;
  if (!(in >> v) || !in.eof() || !std::isfinite(v) || v <= 0)
    throw UsageError(flag + ": '" + value + "' is not a positive number (like 4.8e12)");
  return v;
}

std::string one_of(const std::string& flag, const std::string& value, const std::vector<std::string>& choices) {
  for (const std::string& c : choices)
    if (value == c) return value;
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  throw UsageError(flag + ": '" + value + "' is not one of " + list);
}

Setter size(int KernelArgs::*field) {
  return [field](KernelArgs& a, const std::string& f, const std::string& v) {
    a.*field = static_cast<int>(whole_number(f, v, 1, kMaxDim));
  };
}

const std::vector<Flag>& flags() {
  static const std::vector<Flag> table = {
      {"--kernel", kAll, "NAME", "which kernel of the family (--list)",
       [](KernelArgs& a, const std::string&, const std::string& v) { a.kernel = v; }},
      {"--rows", kGemv, "N", "output features (rows of W; default 3072)", size(&KernelArgs::rows)},
      {"--cols", kGemv, "K", "inputs (columns of W and x, a multiple of 8; default 3072)", size(&KernelArgs::cols)},
      {"--batch", kGemv, "M", "rows of x (default 1)", size(&KernelArgs::batch)},
      {"--n", kGemm, "N", "output features (default 3072)", size(&KernelArgs::rows)},
      {"--k", kGemm, "K", "inputs (a multiple of 8; default 3072)", size(&KernelArgs::cols)},
      {"--m", kGemm, "M", "rows of x (default 64)", size(&KernelArgs::batch)},
      {"--weights", kProducts, "bf16", "the weights' format (the kernels take bf16)",
       [](KernelArgs& a, const std::string& f, const std::string& v) { a.weights = one_of(f, v, {"bf16"}); }},
      {"--input", kGemv, "f32|bf16", "x as fp32, rounded as it is read (the backend's), or packed bf16",
       [](KernelArgs& a, const std::string& f, const std::string& v) { a.input = one_of(f, v, {"f32", "bf16"}); }},
      {"--gated", kProducts, nullptr, "silu(x Wg^T) * (x Wu^T), two weights (the SwiGLU)",
       [](KernelArgs& a, const std::string&, const std::string&) { a.gated = true; }},
      {"--rows", kAttention, "R", "query rows (default 8)", size(&KernelArgs::query_rows)},
      {"--keys", kAttention, "N", "keys each row attends, its window (default 8192)", size(&KernelArgs::keys)},
      {"--heads", kAttention, "H", "query heads (default 32)", size(&KernelArgs::heads)},
      {"--kv-heads", kAttention, "G", "key/value heads (default 8)", size(&KernelArgs::kv_heads)},
      {"--head-dim", kAttention, "D", "32, 64, 128 or 256 (default 128)", size(&KernelArgs::head_dim)},
      {"--cache", kAttention, "bf16|fp8|fp32", "the K/V cache's elements (default bf16)",
       [](KernelArgs& a, const std::string& f, const std::string& v) { a.cache = one_of(f, v, {"bf16", "fp8", "fp32"}); }},
      {"--layout", kAttention, "streams|frames",
       "each row its own slot (decoder steps), or consecutive positions of one slot (an encoder step)",
       [](KernelArgs& a, const std::string& f, const std::string& v) { a.layout = one_of(f, v, {"streams", "frames"}); }},
      {"--page-len", kAttention, "P", "ring entries a cache page holds (default 0: one page a slot)",
       [](KernelArgs& a, const std::string& f, const std::string& v) {
         a.page_len = static_cast<int>(whole_number(f, v, 0, kMaxDim));
       }},
      {"--step-rows", kAttention, "N", "rows of a live step the key split is planned for (default 1: a decoder step)",
       size(&KernelArgs::rows_per_position)},
      {"--seed", kAll, "S", "the random data's seed (default 1)",
       [](KernelArgs& a, const std::string& f, const std::string& v) {
         a.seed = static_cast<uint64_t>(whole_number(f, v, 0, (1ll << 62)));
       }},
      {"--repeat", kAll, "N", "timed launches (default 100)",
       [](KernelArgs& a, const std::string& f, const std::string& v) {
         a.repeat = static_cast<int>(whole_number(f, v, 1, 1000000));
       }},
      {"--warmup", kAll, "N", "launches before timing (default 10)",
       [](KernelArgs& a, const std::string& f, const std::string& v) {
         a.warmup = static_cast<int>(whole_number(f, v, 0, 1000000));
       }},
      {"--bandwidth", kAll, "B/s", "memory bandwidth of the floor (default 4.8e12, the H200's)",
       [](KernelArgs& a, const std::string& f, const std::string& v) { a.bandwidth = positive_number(f, v); }},
      {"--peak-flops", kAll, "FLOP/s", "tensor rate of the floor (default 989e12, the H200's dense bf16)",
       [](KernelArgs& a, const std::string& f, const std::string& v) { a.peak_flops = positive_number(f, v); }},
      {"--hot", kAll, nullptr, "time on one copy of the data, which may stay in L2 (default: copies rotated)",
       [](KernelArgs& a, const std::string&, const std::string&) { a.hot = true; }},
      {"--json", kAll, "FILE", "also write the figures to FILE as JSON",
       [](KernelArgs& a, const std::string&, const std::string& v) { a.json = v; }},
  };
  return table;
}

const Flag* find_flag(const std::string& name, Family family) {
  for (const Flag& f : flags())
    if (name == f.name && (f.families & bit(family))) return &f;
  return nullptr;
}

std::string options_of(Family family) {
  std::string out;
  for (const Flag& f : flags())
    if (f.families & bit(family)) out += (out.empty() ? "" : " ") + std::string(f.name);
  return out;
}

std::string kernels_of(Family family) {
  std::string out;
  for (const KernelInfo& k : kernel_infos())
    if (k.family == family) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

// The names the size flags have in this family, for messages.
struct SizeNames {
  const char *rows, *cols, *batch;
};
SizeNames size_names(Family f) {
  return f == Family::Gemm ? SizeNames{"--n", "--k", "--m"} : SizeNames{"--rows", "--cols", "--batch"};
}

// What no kernel of the family can take, and the kernel's default.
void check_and_complete(KernelArgs& a) {
  const std::string family = family_name(a.family);
  if (a.family == Family::Attention) {
    if (a.heads % a.kv_heads != 0)
      throw UsageError("--heads: " + std::to_string(a.heads) + " is not a multiple of --kv-heads " +
                       std::to_string(a.kv_heads));
    if (a.kernel.empty()) a.kernel = a.cache == "fp32" ? "simt" : "mma";
    if (a.kernel == "mma" && a.cache == "fp32")
      throw UsageError("--cache fp32: the tensor-core attention (--kernel mma) takes bf16 and fp8 caches; "
                       "fp32 caches run on --kernel simt");
  } else {
    const SizeNames n = size_names(a.family);
    if (a.cols % 8 != 0 && a.kernel != "cublas")
      throw UsageError(std::string(n.cols) + ": " + std::to_string(a.cols) +
                       " is not a multiple of 8 (the product kernels read rows of W in 8-element vectors; "
                       "--kernel cublas takes any)");
  }
  for (const KernelInfo& k : kernel_infos())
    if (k.family == a.family && (a.kernel.empty() ? k.is_default : a.kernel == k.name)) {
      a.kernel = k.name;
      return;
    }
  throw UsageError("--kernel: '" + a.kernel + "' is not a " + family + " kernel (" + kernels_of(a.family) + ")");
}

}  // namespace

const std::vector<KernelInfo>& kernel_infos() {
  static const std::vector<KernelInfo> table = {
      {Family::Gemv, "mma", true, "the tensor-core GEMV, up to 32 rows a launch (kernels_gemv_mma.cu)"},
      {Family::Gemv, "simt", false, "the CUDA-core GEMV, up to 8 rows a launch (kernels_gemv.cu; VOXRT_CUDA_GEMV=simt)"},
      {Family::Gemv, "cublas", false,
       "cublasGemmEx on a bf16 copy of x, any K (the backend's for K not a multiple of 8; VOXRT_CUDA_GEMV_MAX_ROWS=0)"},
      {Family::Gemm, "wgmma", true, "the tiled GEMM on wgmma and TMA, sm_90a (kernels_gemm_wgmma.cu)"},
      {Family::Gemm, "mma", false, "the tiled GEMM on mma.sync, the same bits (kernels_gemm_mma.cu; VOXRT_CUDA_GEMM=mma)"},
      {Family::Gemm, "cublas", false,
       "cublasGemmEx, any K (the backend's for K not a multiple of 8; VOXRT_CUDA_GEMV_MAX_ROWS=0)"},
      {Family::Attention, "mma", true,
       "tensor-core attention, bf16 and fp8 caches (kernels_attention_mma.cu)"},
      {Family::Attention, "simt", false,
       "CUDA-core attention, every cache type (kernels_attention.cu; VOXRT_CUDA_ATTN=simt)"},
  };
  return table;
}

const char* family_name(Family f) {
  switch (f) {
    case Family::Gemv: return "gemv";
    case Family::Gemm: return "gemm";
    case Family::Attention: return "attention";
  }
  return "?";
}

KernelArgs parse_kernel_args(const std::vector<std::string>& args) {
  KernelArgs a;
  if (args.empty()) throw UsageError("no kernel family given (gemv, gemm or attention; --list, --help)");
  if (args.size() == 1 && (args[0] == "--list" || args[0] == "--help" || args[0] == "-h")) {
    a.list = args[0] == "--list";
    a.help = !a.list;
    return a;
  }
  const std::string& family = args[0];
  if (family == "gemv") {
    a.family = Family::Gemv;
  } else if (family == "gemm") {
    a.family = Family::Gemm;
    a.batch = 64;  // a GEMM's rows: many sessions' (a GEMV's default is one)
  } else if (family == "attention") {
    a.family = Family::Attention;
  } else {
    throw UsageError("'" + family + "' is not a kernel family (gemv, gemm, attention; --list)");
  }
  for (size_t i = 1; i < args.size(); ++i) {
    std::string name = args[i], value;
    const size_t eq = name.find('=');
    const bool inline_value = name.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (name == "--help" || name == "-h") {
      a.help = true;
      continue;
    }
    const Flag* f = find_flag(name, a.family);
    if (!f) {
      for (const Family other : {Family::Gemv, Family::Gemm, Family::Attention})
        if (find_flag(name, other))
          throw UsageError(name + " is an option of " + family_name(other) + ", not of " + family + " (" + family +
                           "'s: " + options_of(a.family) + ")");
      throw UsageError("unknown option '" + name + "' for " + family + " (its options: " + options_of(a.family) + ")");
    }
    if (f->value && !inline_value) {
      if (i + 1 >= args.size()) throw UsageError(name + " needs a value (" + f->value + ")");
      value = args[++i];
    } else if (!f->value && inline_value) {
      throw UsageError(name + " takes no value");
    }
    f->set(a, name, value);
  }
  check_and_complete(a);
  return a;
}

std::string kernel_usage() {
  std::ostringstream out;
  out << "voxrt_kernel: one CUDA kernel on random data, checked against the same operation on the CPU and timed\n"
         "\n"
         "  voxrt_kernel gemv --rows 3072 --cols 3072 --batch 1 --weights bf16 --repeat 100\n"
         "  voxrt_kernel gemm --m 64 --n 3072 --k 3072\n"
         "  voxrt_kernel attention --rows 8 --keys 8192 --heads 32 --kv-heads 8 --head-dim 128 --cache bf16|fp8\n"
         "  voxrt_kernel --list        the kernels it runs\n"
         "\n"
         "Exit status: 0 within the tolerance, 1 beyond it (or a CUDA failure), 2 a command line that cannot\n"
         "mean anything, 77 no CUDA device (skipped).\n";
  for (const Family fam : {Family::Gemv, Family::Gemm, Family::Attention}) {
    out << "\n" << family_name(fam) << ":\n";
    for (const Flag& f : flags()) {
      if (!(f.families & bit(fam))) continue;
      std::string head = "  ";
      head += f.name;
      if (f.value) head.append(" ").append(f.value);
      if (head.size() < 24) head.resize(24, ' ');
      else head += ' ';
      out << head << f.what << "\n";
    }
  }
  return out.str();
}

std::string kernel_list() {
  std::ostringstream out;
  for (const KernelInfo& k : kernel_infos()) {
    std::string head = std::string(family_name(k.family)) + " --kernel " + k.name + (k.is_default ? " (default)" : "");
    if (head.size() < 34) head.resize(34, ' ');
    out << head << k.what << "\n";
  }
  return out.str();
}

}  // namespace voxrt::bench

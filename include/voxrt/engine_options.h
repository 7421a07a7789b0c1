// How an Engine is loaded (Engine::load): the device, the checkpoint layout, the key/value cache
// format, and the capacity of the engine. validate() holds every rule its fields follow.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "voxrt/export.h"

namespace voxrt {

// Where the model runs: Auto takes a GPU when the build has the CUDA backend and the machine a
// device, else the CPU (ModelInfo::device_note says why).
enum class Device { Auto, Cuda, Cpu };
// Which checkpoint files to read: Auto takes Mistral's (params.json, consolidated.safetensors) when
// the directory has them, else Hugging Face's (config.json, model*.safetensors).
enum class Layout { Auto, Mistral, Hf };
// How the GPU stores the key/value caches: Auto is bf16 (as the reference's cache); Fp8 is e4m3
// with a float scale per cached head (half the memory a session takes, with the error README.md
// states). The CPU keeps them in fp32 (Auto only).
enum class KvCacheFormat { Auto, Bf16, Fp8 };
// How weights are stored (README.md, "Quantized weights"), named as ExecuTorch's export options
// name them: None keeps the checkpoint's bf16; W4 is 4-bit integers with a bf16 scale and bias a
// group of 32, 64 or 128 along the input (W4A16); W8 is 8-bit integers with a bf16 scale an output
// channel or a group (W8A16, symmetric); Fp8 is e4m3 with a bf16 scale an output channel, the
// activations quantized to e4m3 per token on the fly (W8A8: linear layers and the LM head, not the
// embedding; the CPU computes it, the CUDA backend's kernels for it are still to come).
enum class WeightScheme { None, W4, W8, Fp8 };
// How a group's scale and bias are chosen: Search (the default) minimizes the group's error over
// clipped ranges and least-squares fits; Rtn rounds over the group's whole range.
enum class QuantizationMethod { Search, Rtn };

// Which weights are quantized, and how, when a model loads (or `voxrt quantize` writes one). A
// model directory already quantized by `voxrt quantize` loads as it was written; asking for another
// scheme on it is an error.
struct WeightQuantization {
  WeightScheme linear = WeightScheme::None;  // the decoder's linear layers (--qlinear)
  int linear_group_size = 0;                 // 0: 32 for W4, an output channel for W8 (Fp8: always; no other)
  WeightScheme encoder = WeightScheme::None;  // the encoder's linear layers and the adapter (--qlinear-encoder)
  int encoder_group_size = 0;
  // The token embedding (--qembedding, 8w as ExecuTorch's). The checkpoint ties the LM head to it: with the
  // decoder's linears quantized, the head is quantized apart in their format (ExecuTorch unties it too: it is
  // the largest product of a step); otherwise the head is the embedding, stored once.
  WeightScheme embedding = WeightScheme::None;
  int embedding_group_size = 0;  // 0: 128
  QuantizationMethod method = QuantizationMethod::Search;
  bool any() const {
    return linear != WeightScheme::None || encoder != WeightScheme::None || embedding != WeightScheme::None;
  }
};

// The names the command line and the docs use: "auto", "cuda", "cpu"; "auto", "mistral", "hf";
// "auto", "bf16", "fp8".
VOXRT_API std::string_view to_string(Device device);
VOXRT_API std::string_view to_string(Layout layout);
VOXRT_API std::string_view to_string(KvCacheFormat format);
VOXRT_API std::string_view to_string(WeightScheme scheme);         // "none", "4w", "8w", "fp8"
VOXRT_API std::string_view to_string(QuantizationMethod method);   // "search", "rtn"
// The reverse, exactly those names; anything else throws an OptionError naming the field and the
// names it takes ("device tpu: expected auto, cuda or cpu").
VOXRT_API Device parse_device(std::string_view name);
VOXRT_API Layout parse_layout(std::string_view name);
VOXRT_API KvCacheFormat parse_kv_cache_format(std::string_view name);
VOXRT_API WeightScheme parse_weight_scheme(std::string_view name, const char* field);
VOXRT_API QuantizationMethod parse_quantization_method(std::string_view name);

struct EngineOptions {
  Device device = Device::Auto;
  int gpu = 0;  // CUDA device index
  // Several devices in one engine (data parallel): the checkpoint is read once and its weights
  // uploaded to each, each runs a scheduler of its own, and every new session or file goes to the
  // device with the fewest sessions (then the most free cache memory). A device whose model work
  // fails takes no new sessions (EngineStats::devices says why) while the others go on. CUDA device
  // indices, each at most once; empty: `gpu` alone. On the CPU, N entries load N copies (each with
  // `threads`), as placement tests do (they share the host: its memory figures count once a copy).
  // max_memory and max_sessions apply to each device.
  std::vector<int> gpus;
  // CPU threads: 1 to the CPUs this machine has; 0: the cores this process may use (affinity,
  // cgroup CPU quota).
  int threads = 0;
  Layout layout = Layout::Auto;
  // Decoder positions verified in one pass when audio is ahead of the decoder: 0 picks 8 on the
  // GPU (whose ids are identical to stepping one position at a time) and 1 on the CPU (where a pass
  // of several rows may round differently).
  int draft_rows = 0;
  static constexpr int kMaxDraftRows = 32;  // the most draft_rows may ask for
  // Sessions and transcriptions in progress at once. 0: no limit. N: one more live session is
  // refused with a voxrt::Error (or waits: SessionOptions::wait_for_room), and a transcription
  // waits for room. Without max_memory the caches of N sessions of max_session_seconds are
  // allocated at load (a whole window: about 1.1 GB each for the full model on the GPU), so memory
  // is known up front and never grows. With neither, the caches grow as sessions open, within what
  // the device has free less the passes' working memory (2 GiB on a GPU): a session that would
  // pass it is refused (or waits) as a full engine's. Growing copies the caches (doubling, and
  // the last growth takes what is left), so grown caches reach about four fifths of that memory;
  // max_memory_fraction 1 holds all of it. When not even one session fits, the load fails naming
  // both sizes.
  int max_sessions = 0;
  // Memory for the sessions' key/value caches, in bytes, allocated at load (the weights and the
  // passes' working memory come on top). The caches are paged: a session reserves the pages of
  // its length (SessionOptions::max_seconds, a transcription its file's) when it opens, and one
  // that does not fit is refused at once (or waits), so none ever runs out of memory midway.
  // 0: as max_sessions says.
  size_t max_memory = 0;
  // The same as a fraction (0 to 1) of the memory free once the weights are loaded, less the
  // passes' working memory (the device's, or the host's for the CPU): 1 gives the caches all the
  // memory the engine may. 0: not given. At most one of the two.
  double max_memory_fraction = 0;
  // The length a session reserves when it does not say (seconds of audio, at most kMaxSessionSeconds;
  // 0: a whole window, the decoder's 8192 positions, about 11 minutes, after which it keeps
  // recycling its own pages). It also splits max_memory between the encoder's and the decoder's pages.
  double max_session_seconds = 0;
  static constexpr double kMaxSessionSeconds = 1e7;
  // The key/value caches' format (KvCacheFormat): a GPU option.
  KvCacheFormat kv_cache = KvCacheFormat::Auto;
  // Quantize the weights while loading (WeightQuantization).
  WeightQuantization quantization;
  // Fairness under load: while the sessions fed at real time wait longer for their steps than the
  // 80 ms of audio a step brings (90th percentile over the last 2 s), a new session is refused with
  // a voxrt::Error saying so (or waits: SessionOptions::wait_for_room), so that those already open
  // keep real time. Off by default (a library may feed sessions at any pace); a server turns it on.
  bool refuse_when_overloaded = false;
  // The wait (ms) past which refuse_when_overloaded counts the engine overloaded: the 80 ms of audio
  // a step brings, or less to keep a margin for the sessions already open. More than 0.
  double overload_wait_ms = 80;
};

// Every rule of the fields above: throws an OptionError naming the first field at fault. Engine::load
// calls it first; a front end calls it to check its flags before anything loads. (Whether a CUDA
// device is there to run on is found by Engine::load, which says so with an OptionError too.)
VOXRT_API void validate(const EngineOptions& options);
// The rules of a WeightQuantization alone (the group sizes each scheme takes).
VOXRT_API void validate_quantization(const WeightQuantization& quantization);

}  // namespace voxrt

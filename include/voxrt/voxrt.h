// voxrt: Voxtral Realtime speech-to-text. The public C++ API.
//
//   auto engine = voxrt::Engine::load("/models/Voxtral-Mini-4B-Realtime-2602");
//   voxrt::Transcript t = engine->transcribe_file("talk.wav");
//   std::cout << t.text << "\n";
//
// An Engine holds the loaded model and is safe to share between threads: transcriptions and live
// sessions on any number of threads go through its scheduler together, their positions sharing
// the model's passes, and each result is the one it gets alone. Errors throw voxrt::Error (a
// std::runtime_error) with a message that names the file, field or value at fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "voxrt/context_bias.h"
#include "voxrt/delays.h"
#include "voxrt/engine_options.h"
#include "voxrt/error.h"
#include "voxrt/export.h"
#include "voxrt/version.h"

namespace voxrt {

class Session;
struct SessionOptions;
struct StreamEvent;  // voxrt/session.h

struct TranscribeOptions {
  int delay_ms = 0;  // 0: tekken.json's transcription_delay_ms (480 officially)
  // Called with (positions done, positions total) as the positions run, on the calling thread. Not called by
  // transcribe_each / transcribe_batch.
  std::function<void(int, int)> progress;
  // The model's events as its positions run (text as the model decides it, words, segments), on the
  // calling thread: what a caller streams before the transcript is complete. The transcript
  // returned is the same with or without it. Not called by transcribe_each / transcribe_batch.
  std::function<void(const StreamEvent&)> on_event;
  // Audio longer than this (seconds) is refused with an InputError: transcribe_file checks the
  // file's header before any model work, and stops decoding when a file holds more than its header
  // said. 0: no limit (a server sets one: a small compressed file can hold hours of audio).
  double max_audio_seconds = 0;
  // How long to wait for room when the engine is full (max_sessions, max_memory): < 0 as long as it
  // takes, 0 not at all, else at most that many seconds; then a BusyError.
  double wait_for_room_seconds = -1;
  // Asked between pieces of the input (every few seconds of audio): true stops the transcription
  // with a CancelledError and frees its session (a client that went away, a server stopping).
  std::function<bool()> cancelled;  // Context biasing (voxrt/context_bias.h): words and phrases to prefer, such as names and terms the
  // model may not know (Mistral's context_bias): at most 100, each 1 to 100 bytes of UTF-8 once
  // trimmed and 32 tokens. Their tokens' logits are raised by context_bias_strength (logit units, 0 to
  // 20; default 3) as the greedy decoder chooses. Empty (or a strength of 0): no biasing, and the ids
  // are exactly those without it. A list out of these limits is refused with an OptionError naming
  // the field.
  std::vector<std::string> context_bias;
  float context_bias_strength = kDefaultContextBiasStrength;
};

// Times. Every time is in seconds from the start of the input, a whole number of milliseconds, and
// never past the end of the audio (a word heard at the very end is reported at most at `duration`).
// The model decides one token per 80 ms position and speaks `delay_ms` behind the audio; a token's
// time is its position less the delay, so times are quantised to 80 ms, and since the model may emit
// a word's tokens a position or two after it was heard, a word's start can be late by that much.

// A word: text between whitespace in the decoded text, punctuation attached ("world," or "¿qué").
// It starts at the position of its first token and ends at the end of the position of its last one.
struct Word {
  double start = 0;
  double end = 0;
  std::string text;
};

// A word group: the text from one [STREAMING_WORD] mark of the model to the next (or to EOS).
struct Segment {
  double start = 0;  // the position of the mark (or of the first text, when no mark preceded it)
  double end = 0;    // the end of its last text position
  std::string text;
  std::vector<Word> words;
};

struct Transcript {
  std::string text;
  std::vector<int32_t> tokens;  // every decoder output id, one per position after the prompt
  std::vector<Segment> segments;
  std::vector<Word> words;      // every segment's words, in order
  double duration = 0;          // seconds of input audio
  int delay_ms = 0;
  bool eos = false;             // decoding ended at the end-of-sequence token
};

// One file of transcribe_each / transcribe_batch: its transcript, or why it failed.
struct BatchItem {
  size_t index = 0;  // in the input list
  std::filesystem::path file;
  Transcript transcript;
  std::string error;  // empty when the file was transcribed
  bool ok() const { return error.empty(); }
};

struct ModelInfo {
  std::filesystem::path dir;
  std::string layout;   // "mistral" or "hf"
  std::string backend;  // "cpu" or "cuda"
  std::string device_note;  // e.g. why "auto" chose the CPU
  // How the weights are stored: "bf16" (as the checkpoint), or the quantized formats of the encoder,
  // decoder and embedding ("encoder 4w/32, decoder 4w/32, embedding 8w/128").
  std::string weights = "bf16";
  int encoder_layers = 0, decoder_layers = 0, vocab_size = 0;
  DelayRange delays;          // the delays the model accepts (TranscribeOptions::delay_ms, SessionOptions::delay_ms)
  int default_delay_ms = 480;  // the one a transcription or session that gives none gets
  double load_seconds = 0;
};

// A distribution of values in fixed buckets, for monitoring (Prometheus-style, not cumulative).
struct Histogram {
  std::vector<double> upper_bounds;  // each bucket's upper bound, ascending; a last bucket (+Inf) follows
  std::vector<uint64_t> counts;      // values per bucket: upper_bounds.size() + 1 of them
  double sum = 0;
  uint64_t count = 0;
};

// One device of an engine (EngineStats::devices): its health and its share of the load.
struct DeviceStats {
  std::string device;       // "cuda:0", "cpu:1"
  bool failed = false;      // its model work failed: it takes no new sessions
  std::string failure;      // why (the first failure)
  int sessions_open = 0;
  uint64_t sessions_opened = 0;
  uint64_t rounds = 0;  // rounds of its scheduler's loop
  uint64_t steps = 0;   // deprecated, kept for one release: the same as rounds
  size_t cache_bytes_in_use = 0, cache_bytes_total = 0;
  size_t memory_in_use = 0, memory_available = 0;
};

// An engine's counters since it was loaded (Engine::stats), for monitoring: voxrt serve's /metrics.
// With several devices, the counters are their sums (histograms added bucket by bucket, the
// overload percentile the highest device's) and `devices` has each.
struct EngineStats {
  int sessions_open = 0;          // live sessions and transcriptions holding caches now
  uint64_t sessions_opened = 0;   // since load
  // Sessions (and transcriptions) refused when opened, by reason: the caches or max_sessions were
  // full, the live sessions did not keep real time (refuse_when_overloaded), or one so long it could
  // never fit.
  uint64_t refused_full = 0, refused_overloaded = 0, refused_too_long = 0;
  // Rounds of the scheduler's loop: each runs every session with work, together.
  uint64_t rounds = 0;
  uint64_t steps = 0;             // deprecated, kept for one release: the same as rounds
  uint64_t decoder_rows = 0;      // decoder rows those rounds ran (a session's position is a row)
  Histogram round_ms;             // a round's wall time
  Histogram step_ms;              // deprecated, kept for one release: the same as round_ms
  // A live session's hand-over: 80 ms of its audio handed to the engine -> the positions it makes
  // possible done. What the engine adds to a live caption's lag (past the model's delay).
  Histogram live_wait_ms;
  double live_wait_p90_ms = 0;    // over the last 2 s: what refuse_when_overloaded compares with
  double audio_seconds = 0;       // input audio received by sessions and transcriptions
  size_t cache_bytes_in_use = 0;  // cache pages holding sessions' positions or kept for them
  size_t cache_bytes_total = 0;   // all the cache pages (0 while the caches grow on demand)
  int cache_pages_in_use = 0;     // encoder and decoder pages mapped
  // The backend's memory: the device's in use and free (on the CPU: the process's peak resident
  // memory and the host's available memory).
  size_t memory_in_use = 0;
  size_t memory_available = 0;
  // Whether a session of the default length (max_session_seconds) would be admitted now: false
  // while the engine is full (max_sessions, the caches) or overloaded (refuse_when_overloaded).
  bool has_room = true;
  // How long the oldest work handed to the scheduler's loop has waited without a round finishing (0 when
  // nothing waits, or rounds are finishing): seconds past a round's time mean the model work is stuck.
  double stalled_seconds = 0;
  std::vector<DeviceStats> devices;  // one per device, in EngineOptions::gpus order
};

// CUDA devices this machine and build have (0 without the CUDA backend or a device): what
// `--gpus all` takes.
VOXRT_API int cuda_device_count();

class VOXRT_API Engine {
 public:
  static std::unique_ptr<Engine> load(const std::filesystem::path& model_dir, const EngineOptions& options = {});
  virtual ~Engine() = default;

  // Audio must be 16 kHz mono in [-1, 1].
  virtual Transcript transcribe(std::span<const float> audio_16k, const TranscribeOptions& options = {}) = 0;
  // Any format libsndfile reads, any sample rate, any channel count.
  virtual Transcript transcribe_file(const std::filesystem::path& audio, const TranscribeOptions& options = {}) = 0;
  // Several files side by side: up to `files_in_flight` at once (0: as many as the backend runs
  // together with profit: 16 on the GPU, 1 on the CPU, whose passes are one stream each), their
  // positions sharing the scheduler's passes, each transcript identical to transcribe_file's.
  // on_result gets every file in input order, on the calling thread, as soon as it and all before it
  // are done, so that results can be written while later files run; a file that fails is reported
  // there and the others go on. Files finished ahead of an unfinished earlier one wait, at most
  // max(64, 8 x files_in_flight) of them: memory is bounded however many files there are. An
  // exception from on_result stops the run (the files in flight finish first) and is rethrown.
  virtual void transcribe_each(std::span<const std::filesystem::path> files, const TranscribeOptions& options,
                               const std::function<void(BatchItem&)>& on_result, int files_in_flight = 0) = 0;
  // transcribe_each, collected.
  std::vector<BatchItem> transcribe_batch(std::span<const std::filesystem::path> files,
                                          const TranscribeOptions& options = {}, int files_in_flight = 0);
  // A live session (include/voxrt/session.h). Many sessions may share this engine.
  virtual std::unique_ptr<Session> open_session(const SessionOptions& options) = 0;
  virtual const ModelInfo& info() const = 0;
  // Counters since load; cheap enough to read a few times a second, from any thread.
  virtual EngineStats stats() const = 0;
};

// What quantize_model wrote (README.md, "Quantized weights").
struct QuantizeResult {
  std::string weights;                      // the formats: "encoder 4w/32, decoder 4w/32, embedding 8w/128"
  size_t tensors = 0, quantized = 0;        // tensors written, of them quantized
  size_t bytes_before = 0, bytes_after = 0;  // the weights as bf16, and as written
  // Each component's quantized weights against the original values: sqrt(squared error / energy).
  double encoder_error = 0, decoder_error = 0, embedding_error = 0, head_error = 0;  // head: 0 when tied
  double seconds = 0;
};

// Writes `model_dir`'s model, in either layout, to `out_dir` (created; an existing one must be
// empty) with its weights quantized as `quantization` says: a Mistral-layout directory (params.json,
// consolidated.safetensors holding the packed weights, scales and biases with the formats in its
// metadata, tekken.json) that Engine::load takes like any model. Throws OptionError for options
// that break a rule, Error for a directory that cannot be read or written or is quantized already.
VOXRT_API QuantizeResult quantize_model(const std::filesystem::path& model_dir, const std::filesystem::path& out_dir,
                                        const WeightQuantization& quantization, Layout layout = Layout::Auto);

}  // namespace voxrt

// The Engine behind the public API: loads a model directory onto a backend, transcribes files
// (through the streaming pipeline, see transcribe_chunks()) and opens live sessions. The model work
// of every call and session on one engine runs on its scheduler's loop, rounds of all of them
// together (scheduler/scheduler.h); the mel front end runs on the caller's thread.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "audio/audio_reader.h"
#include "audio/log_mel.h"
#include "common/error.h"
#include "models/voxtral/checkpoint.h"
#ifdef VOXRT_WITH_CUDA
#include "runtime/cuda/cuda_device.h"
#endif
#include "engine/bench_access.h"
#include "engine/bias_phrases.h"
#include "engine/live_session.h"
#include "engine/turn_session.h"
#include "engine/model_families.h"
#include "engine/multi_device_engine.h"
#include "engine/ordered_batch.h"
#include "scheduler/scheduler.h"
#include "tokenizer/tekken.h"
#include "tokenizer/text_encoder.h"
#include "voxrt/voxrt.h"
#include "models/voxtral/stream_pipeline.h"
#include "models/voxtral/model.h"
#include "models/voxtral/quantized_writer.h"
#include "models/voxtral/stream_decoder.h"
#include "models/voxtral/transcript_assembler.h"
#include "models/voxtral/voxtral_stream_model.h"

namespace voxrt {
namespace {

// Audio handed to the pipeline at a time by offline transcription: bounds the buffered samples, and
// the progress callback is called for each piece's steps once they have run.
constexpr double kOfflineChunkSeconds = 5.0;
// Draft rows a pass on a batch-invariant backend (EngineOptions::draft_rows = 0). A pass reads the
// weights once however many rows it takes, so more rows save passes, but each row adds its
// attention: 8 is the balance offline, 16 rows cost more than the passes they save (bench/README.md).
// It is the most a stream drafts: each stream's width follows how often its guesses hold
// (StreamState::next_draft_width).
constexpr int kDefaultDraftRows = 8;
// Files transcribed side by side by transcribe_each on a batch-invariant backend (the GPU): enough
// rows to fill the decoder's passes, few enough that each file's memory stays small.
constexpr int kDefaultFilesInFlight = 16;

LayoutPreference layout_preference(Layout layout) {
  switch (layout) {
    case Layout::Mistral: return LayoutPreference::Mistral;
    case Layout::Hf: return LayoutPreference::HuggingFace;
    case Layout::Auto: break;
  }
  return LayoutPreference::Auto;
}

// "auto" takes the GPU when this build has the CUDA backend and the machine a device, else the CPU
// (saying why in `note`); "cuda" without a usable device is an error.
// (validate() has checked the options; what needs the machine is checked here.)
std::unique_ptr<Backend> make_backend(const EngineOptions& o, std::string& note) {
  if (o.device == Device::Cpu) return make_cpu_backend(o.threads);
  // "auto" that finds no GPU: a kv_cache format then asks for what the CPU has not.
  auto cpu = [&](const char* why) {
    if (o.kv_cache != KvCacheFormat::Auto)
      throw OptionError("kv_cache", " " + std::string(to_string(o.kv_cache)) +
                                        ": the key/value cache storage is a GPU option; the CPU keeps fp32 caches: " + why);
    return make_cpu_backend(o.threads);
  };
#ifdef VOXRT_WITH_CUDA
  const int n = cuda::device_count();
  if (n > 0) {
    if (o.gpu >= n) throw OptionError("gpu", " " + std::to_string(o.gpu) + ": there are " + std::to_string(n) + " CUDA devices");
    CudaOptions options = cuda_options_from_environment();
    if (o.kv_cache != KvCacheFormat::Auto) {
      options.fp8_kv = o.kv_cache == KvCacheFormat::Fp8;
      options.fp32_kv = false;
    }
    return make_cuda_backend(o.gpu, options);
  }
  if (o.device == Device::Cuda) throw OptionError("device", " cuda: no CUDA device found");
  note = "no CUDA device found: using the CPU";
  return cpu("no CUDA device found");
#else
  if (o.device == Device::Cuda)
    throw OptionError("device", " cuda: this build has no CUDA backend (build it with cmake --preset cuda)");
  note = "built without CUDA: using the CPU";
  return cpu("this build has no CUDA backend");
#endif
}

LogMelParams mel_params(const ModelConfig& c) {
  LogMelParams p;
  p.sample_rate = c.audio.sampling_rate;
  p.n_fft = c.audio.window_size;
  p.hop = c.audio.hop_length;
  p.n_mels = c.encoder.num_mel_bins;
  p.global_log_mel_max = c.audio.global_log_mel_max;
  return p;
}

// Also a device of `voxrt bench` (engine/bench_access.h): its own, or one of a multi-device engine's.
class EngineImpl final : public Engine, public BenchDevice {
 public:
  // `shared`: the checkpoint already open (a multi-device engine reads it once for every device).
  EngineImpl(const std::filesystem::path& dir, const EngineOptions& o, const Checkpoint* shared = nullptr) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::filesystem::path tekken = dir / "tekken.json";
    if (!std::filesystem::exists(tekken)) throw Error(dir.string() + ": missing tekken.json (the tokenizer)");
    tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::load(tekken));
    backend_ = make_backend(o, info_.device_note);
    device_ = backend_->name() + ":" + std::to_string(o.gpu);
    {
      std::optional<Checkpoint> own;
      const Checkpoint& ckpt = shared != nullptr ? *shared : own.emplace(Checkpoint::open(dir, layout_preference(o.layout)));
      check(ckpt.config().decoder.vocab_size <= tokenizer_->vocab_size() || tokenizer_->vocab_size() == 0,
            tekken.string(), "vocabulary smaller than the model's");
      const QuantPlan quantize = QuantPlan::from_options(o.quantization);
      const QuantPlan& weights = ckpt.stored_quantization().any() ? ckpt.stored_quantization() : quantize;
      model_ = std::make_unique<VoxtralModel>(ckpt, *backend_, quantize);
      info_.weights = weights.any() ? weights.describe() : "bf16";
      family_ = std::make_unique<VoxtralStreamModel>(
          *model_, VoxtralStreamModel::Setup{tokenizer_->audio().streaming_n_left_pad_tokens, ids(),
                                             StreamState::Options{}.max_batch_positions});
      info_.layout = ckpt.layout() == CheckpointLayout::Mistral ? "mistral" : "hf";
    }
    logmel_ = std::make_unique<LogMel>(mel_params(model_->config()));
    info_.dir = dir;
    info_.backend = backend_->name();
    info_.encoder_layers = model_->config().encoder.n_layers;
    info_.decoder_layers = model_->config().decoder.n_layers;
    info_.vocab_size = model_->config().decoder.vocab_size;
    info_.delays = model_delays();
    info_.default_delay_ms = tokenizer_->audio().transcription_delay_ms;
    draft_rows_ = o.draft_rows > 0 ? o.draft_rows : backend_->batch_invariant() ? kDefaultDraftRows : 1;
    SchedulerLimits limits;
    limits.max_streams = o.max_sessions;
    limits.max_cache_bytes = o.max_memory;
    if (o.max_memory_fraction > 0) {  // of what the weights and the passes' working memory leave
      limits.max_cache_bytes = static_cast<size_t>(o.max_memory_fraction * static_cast<double>(backend_->memory_for_caches()));
      check(limits.max_cache_bytes > 0, "engine", "max_memory_fraction: the device has no memory free after the weights");
    }
    limits.stream_seconds = o.max_session_seconds;
    limits.refuse_when_overloaded = o.refuse_when_overloaded;
    limits.overload_wait_ms = o.overload_wait_ms;
    scheduler_ = std::make_unique<Scheduler>(*family_, mu_, stream_options(info_.default_delay_ms, /*stop_at_eos=*/false),
                                             limits);
    info_.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // Offline transcription: decode_whole with stop-at-EOS.
  Transcript transcribe(std::span<const float> audio, const TranscribeOptions& o) override {
    const auto bias = context_bias(o.context_bias, o.context_bias_strength);
    check_audio_length(static_cast<int64_t>(audio.size()), o, "the audio");
    return transcribe_chunks(chunks_of(audio), static_cast<int64_t>(audio.size()), o, bias);
  }

  // The file is read a block at a time while it is transcribed: host memory does not grow with its
  // length. Its header's frame count sizes the progress (an estimate for some formats).
  // A file that does not decode, or is longer than o.max_audio_seconds by its header, is an
  // InputError before any model work.
  Transcript transcribe_file(const std::filesystem::path& path, const TranscribeOptions& o) override {
    return transcribe_file_biased(path, o, context_bias(o.context_bias, o.context_bias_strength));
  }

  void transcribe_each(std::span<const std::filesystem::path> files, const TranscribeOptions& o,
                       const std::function<void(BatchItem&)>& on_result, int files_in_flight) override {
    if (files_in_flight < 0) throw Error("files_in_flight " + std::to_string(files_in_flight) + ": expected 0 (automatic) or more");
    const int workers = files_in_flight > 0 ? files_in_flight : default_files_in_flight();
    TranscribeOptions each = o;
    each.progress = nullptr;
    each.on_event = nullptr;
    // The list's trie once for every file; a list out of its limits is refused before any file.
    const auto bias = context_bias(o.context_bias, o.context_bias_strength);
    transcribe_files_in_order(
        files, workers, [&](const std::filesystem::path& file) { return transcribe_file_biased(file, each, bias); },
        on_result);
  }

  std::unique_ptr<Session> open_session(const SessionOptions& o) override {
    const int delay_ms = o.delay_ms > 0 ? o.delay_ms : info_.default_delay_ms;
    const Protocol p = protocol(delay_ms);
    const int rate = model_->config().audio.sampling_rate;
    if (o.turns)  // each turn an utterance of its own, opened as a plain session of this engine
      return std::make_unique<TurnSession>(o, rate, p.samples_per_position * 1000 / rate, delay_ms,
                                           [this](const SessionOptions& utterance) { return open_session(utterance); });
    const StreamOptions so = stream_options(delay_ms, o.stop_at_eos, context_bias(o.context_bias, o.context_bias_strength));
    return std::make_unique<LiveSession>(*logmel_, *tokenizer_, *scheduler_, so, p, o, delay_ms, rate);
  }

  const ModelInfo& info() const override { return info_; }

  EngineStats stats() const override {
    EngineStats s = scheduler_->stats();
    s.memory_in_use = backend_->memory_in_use();
    s.memory_available = backend_->memory_available();
    DeviceStats d;
    d.device = device_;
    d.failure = scheduler_->failure();
    d.failed = !d.failure.empty();
    d.sessions_open = s.sessions_open;
    d.sessions_opened = s.sessions_opened;
    d.rounds = d.steps = s.rounds;
    d.cache_bytes_in_use = s.cache_bytes_in_use;
    d.cache_bytes_total = s.cache_bytes_total;
    d.memory_in_use = s.memory_in_use;
    d.memory_available = s.memory_available;
    s.devices = {d};
    return s;
  }

  // ---- BenchDevice ----
  const std::string& device_name() const override { return device_; }
  Scheduler& scheduler() override { return *scheduler_; }
  VoxtralModel& model() override { return *model_; }
  void run_alone(const std::function<void()>& work) override {
    std::lock_guard<std::mutex> lock(mu_);
    work();
  }
  AloneRun transcribe_alone(std::span<const float> audio, const Protocol& p,
                            const std::function<void(int32_t, double)>& on_step) override {
    StreamDecoder decoder(*model_, *logmel_, family_->stream_options(p, /*stop_at_eos=*/false, draft_rows_));
    const ChunkSource next = chunks_of(audio);
    for (std::span<const float> chunk = next(); !chunk.empty(); chunk = next()) decoder.feed(chunk, on_step);
    decoder.flush(on_step);
    return {decoder.decoder_passes(), decoder.encoder_seconds()};
  }

  // transcribe_each's files at once when its caller does not say: as many as the backend steps
  // together with profit.
  int default_files_in_flight() const { return backend_->batch_invariant() ? kDefaultFilesInFlight : 1; }

 private:
  // The next piece of the input; an empty span ends it.
  using ChunkSource = std::function<std::span<const float>()>;

  size_t offline_chunk_samples() const {
    return static_cast<size_t>(kOfflineChunkSeconds * model_->config().audio.sampling_rate);
  }

  // An input held in memory, handed out in offline chunks.
  ChunkSource chunks_of(std::span<const float> audio) const {
    return [audio, at = size_t{0}, chunk = offline_chunk_samples()]() mutable {
      const std::span<const float> piece = audio.subspan(at, std::min(chunk, audio.size() - at));
      at += piece.size();
      return piece;
    };
  }

  // Refuses (InputError) `samples` of audio past o.max_audio_seconds; `what` names the input.
  void check_audio_length(int64_t samples, const TranscribeOptions& o, const std::string& what) const {
    const double seconds = static_cast<double>(samples) / model_->config().audio.sampling_rate;
    if (o.max_audio_seconds > 0 && seconds > o.max_audio_seconds) {
      char buf[160];
      std::snprintf(buf, sizeof buf, ": %.0f s of audio, more than the %.0f s allowed (max_audio_seconds)", seconds,
                    o.max_audio_seconds);
      throw InputError(what + buf);
    }
  }

  // transcribe_file with the trie of o.context_bias made already.
  Transcript transcribe_file_biased(const std::filesystem::path& path, const TranscribeOptions& o,
                                    const std::shared_ptr<const BiasTrie>& bias) {
    const auto input_error = [](const Error& e) { return InputError(e.what()); };
    std::optional<AudioFileReader> reader;
    try {
      reader.emplace(path, model_->config().audio.sampling_rate);
    } catch (const Error& e) {
      throw input_error(e);
    }
    const int64_t expected = reader->expected_samples().value_or(0);
    check_audio_length(expected, o, path.string() + " (by its header)");
    std::vector<float> block;
    const ChunkSource next = [&]() {
      try {
        reader->read(block, offline_chunk_samples());
      } catch (const Error& e) {
        throw input_error(e);
      }
      return std::span<const float>(block);
    };
    return transcribe_chunks(next, expected, o, bias, path.string());
  }

  // `expected_samples` sizes the progress total and the caches reserved only; the input may turn
  // out shorter or longer. `source` names the input in errors.
  Transcript transcribe_chunks(const ChunkSource& next, int64_t expected_samples, const TranscribeOptions& o,
                               const std::shared_ptr<const BiasTrie>& bias, const std::string& source = "the audio") {
    const int delay_ms = o.delay_ms > 0 ? o.delay_ms : info_.default_delay_ms;
    const Protocol p = protocol(delay_ms);
    const int64_t expected_steps = expected_samples > 0 ? p.offline_outputs(static_cast<size_t>(expected_samples)) : 0;
    const double rate = model_->config().audio.sampling_rate;
    const double step_s = static_cast<double>(p.samples_per_position) / rate;
    std::vector<int32_t> tokens;
    // The events as the steps run (o.on_event), from an assembler of their own: the transcript is
    // assembled from all the ids at the end, as without them.
    std::optional<TranscriptAssembler> events;
    if (o.on_event) events.emplace(*tokenizer_, step_s);
    std::vector<StreamEvent> pending;
    const auto deliver = [&] {
      for (const StreamEvent& e : pending) o.on_event(e);
      pending.clear();
    };
    auto on_step = [&](int32_t id, double) {
      tokens.push_back(id);
      if (events) events->push(id, pending), deliver();
      // A header that under-states the length must not take the progress past 100 %.
      const int64_t done = static_cast<int64_t>(tokens.size());
      if (o.progress) o.progress(static_cast<int>(done), static_cast<int>(std::max(expected_steps, done)));
    };
    WholeRun::Hooks hooks;
    hooks.before_chunk = [&](int64_t samples_so_far) {
      if (o.cancelled && o.cancelled()) throw CancelledError("transcription cancelled");
      check_audio_length(samples_so_far, o, source);
    };
    // The right pad's steps map past the end of the audio: their events are clamped to it, as a
    // live session's.
    hooks.before_flush = [&](int64_t samples) {
      if (events) events->limit_times(static_cast<double>(samples) / rate);
    };
    // What the stream reserves: the input's length where it is known (a header's count may be an
    // estimate: a little more), else the engine's default. Past it the stream goes on while spare
    // pages last.
    const double max_seconds = expected_samples > 0 ? expected_samples / rate * 1.02 + 1.0 : -1.0;
    const WholeRun run =
        decode_whole(next, stream_options(delay_ms, /*stop_at_eos=*/true, bias), p, on_step, max_seconds,
                     o.wait_for_room_seconds, hooks);
    const double duration = static_cast<double>(run.audio_samples) / rate;
    if (events) events->finish(duration, pending), deliver();
    Transcript t = assemble_transcript(*tokenizer_, tokens, step_s, duration);
    t.eos = run.stopped;
    t.delay_ms = delay_ms;
    return t;
  }

  // Offline transcription runs the streaming pipeline over the whole input, a stream of the
  // scheduler fed in chunks and stopped at EOS: its ids are identical to the whole-file pass
  // (run_offline; the parity and streaming tests hold both to the reference), its memory stays flat
  // however long the input is, and transcriptions on several threads share the scheduler's passes.
  // No audio at all gives no steps (MelFrontEnd::flush).
  struct WholeRun {
    bool stopped = false;  // at EOS
    int64_t audio_samples = 0;  // of the whole input, also the part after an EOS
    struct Hooks {
      // Before each piece's model work, with the samples read so far (that piece's included): may
      // throw to stop (a cancellation, too much audio).
      std::function<void(int64_t)> before_chunk;
      // Before the right pad is decoded, with the input's length in samples.
      std::function<void(int64_t)> before_flush;
    };
  };
  WholeRun decode_whole(const ChunkSource& next, const StreamOptions& stream_options, const Protocol& p,
                        const std::function<void(int32_t, double)>& on_step,
                        double max_seconds, double wait_seconds = Scheduler::kWaitForever,
                        const WholeRun::Hooks& hooks = {}) {
    if (hooks.before_chunk) hooks.before_chunk(0);  // cancelled before it even waited for room
    const std::unique_ptr<Scheduler::Stream> stream =
        scheduler_->open(stream_options, wait_seconds, max_seconds);
    StreamPipeline pipeline(*logmel_, p, *stream);
    auto take = [&](const std::vector<PositionOutput>& steps) {
      for (const PositionOutput& s : steps) on_step(s.token, s.seconds);
    };
    WholeRun run;
    for (std::span<const float> chunk = next(); !chunk.empty(); chunk = next()) {
      run.audio_samples += static_cast<int64_t>(chunk.size());
      if (hooks.before_chunk) hooks.before_chunk(run.audio_samples);
      stream->count_audio(static_cast<double>(chunk.size()) / model_->config().audio.sampling_rate);
      take(pipeline.feed(chunk));
    }
    if (hooks.before_flush) hooks.before_flush(run.audio_samples);
    take(pipeline.flush());
    run.stopped = pipeline.stopped();
    return run;
  }

  // A stream's options as the scheduler takes them (the family makes its protocol of them).
  StreamOptions stream_options(int delay_ms, bool stop_at_eos, std::shared_ptr<const BiasTrie> bias = nullptr) const {
    validate_delay_ms(delay_ms);  // an OptionError naming the caller's field, as the options' rules
    return {delay_ms, stop_at_eos, draft_rows_, std::move(bias)};
  }

  // The trie of a context-bias list (null: none), tokenized by the encoder made the first time a
  // list is given (indexing the vocabulary takes a moment and memory no caller without one pays).
  std::shared_ptr<const BiasTrie> context_bias(const std::vector<std::string>& phrases, float strength) {
    if (phrases.empty() || strength == 0.0f) {  // no biasing: its options checked all the same
      validate_context_bias(phrases, strength);
      return nullptr;
    }
    std::call_once(encoder_once_, [&] { encoder_ = std::make_unique<TextEncoder>(*tokenizer_); });
    return make_bias_trie(phrases, strength, *encoder_, tokenizer_->num_special());
  }

  Protocol protocol(int delay_ms) const override {
    validate_delay_ms(delay_ms);  // an OptionError naming the caller's field, as the options' rules
    return family_->protocol(delay_ms);
  }
  ProtocolIds ids() const {
    return {tokenizer_->bos_id(), tokenizer_->eos_id(), tokenizer_->streaming_pad_id(), tokenizer_->streaming_word_id()};
  }

  std::mutex mu_;  // serialises every use of the model and backend (the scheduler's rounds, run_alone)
  std::unique_ptr<Tokenizer> tokenizer_;
  std::once_flag encoder_once_;
  std::unique_ptr<TextEncoder> encoder_;  // context_bias's, made on first use
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<VoxtralModel> model_;
  std::unique_ptr<VoxtralStreamModel> family_;  // the model as the scheduler drives it
  std::unique_ptr<LogMel> logmel_;
  std::unique_ptr<Scheduler> scheduler_;  // after the model: its loop stops before the model goes
  ModelInfo info_;
  std::string device_;  // "cuda:0", "cpu:1": its EngineStats::devices entry
  int draft_rows_ = 1;
};

}  // namespace

std::vector<BatchItem> Engine::transcribe_batch(std::span<const std::filesystem::path> files,
                                                const TranscribeOptions& options, int files_in_flight) {
  std::vector<BatchItem> items;
  items.reserve(files.size());
  transcribe_each(files, options, [&](BatchItem& item) { items.push_back(std::move(item)); }, files_in_flight);
  return items;
}

int cuda_device_count() {
#ifdef VOXRT_WITH_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}

namespace {

// EngineOptions::gpus of two devices or more: the checkpoint opened once, each device's engine
// built from it on a thread of its own (their uploads overlap), any device's failure to load the
// whole load's error.
std::vector<std::unique_ptr<EngineImpl>> load_devices(const std::filesystem::path& dir, const EngineOptions& options) {
  const Checkpoint ckpt = Checkpoint::open(dir, layout_preference(options.layout));
  std::vector<std::unique_ptr<EngineImpl>> engines(options.gpus.size());
  std::vector<std::string> errors(options.gpus.size());
  std::vector<std::thread> loaders;
  for (size_t i = 0; i < options.gpus.size(); ++i)
    loaders.emplace_back([&, i] {
      EngineOptions one = options;
      one.gpus.clear();
      one.gpu = options.gpus[i];
      try {
        engines[i] = std::make_unique<EngineImpl>(dir, one, &ckpt);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (std::thread& t : loaders) t.join();
  for (size_t i = 0; i < errors.size(); ++i)
    if (!errors[i].empty()) throw Error("device " + std::to_string(options.gpus[i]) + ": " + errors[i]);
  return engines;
}

}  // namespace

BenchEngine load_bench_engine(const std::filesystem::path& model_dir, const EngineOptions& options) {
  validate(options);
  // Voxtral is the one family so far: EngineImpl builds it. A directory of another model is refused
  // here, naming its config's field, rather than read as a Voxtral checkpoint; a family added to
  // ModelFamily warns here (-Wswitch) until it is built.
  switch (model_family_of(model_dir)) {
    case ModelFamily::Voxtral: break;
  }
  BenchEngine loaded;
  if (options.gpus.size() > 1) {
    std::vector<std::unique_ptr<Engine>> engines;
    int files_in_flight = 0;
    for (std::unique_ptr<EngineImpl>& device : load_devices(model_dir, options)) {
      files_in_flight += device->default_files_in_flight();
      loaded.devices.push_back(device.get());
      engines.push_back(std::move(device));
    }
    loaded.engine = std::make_unique<MultiDeviceEngine>(std::move(engines), files_in_flight);
    return loaded;
  }
  EngineOptions one = options;
  if (one.gpus.size() == 1) one.gpu = one.gpus.front();
  one.gpus.clear();
  auto device = std::make_unique<EngineImpl>(model_dir, one);
  loaded.devices.push_back(device.get());
  loaded.engine = std::move(device);
  return loaded;
}

std::unique_ptr<Engine> Engine::load(const std::filesystem::path& model_dir, const EngineOptions& options) {
  return load_bench_engine(model_dir, options).engine;
}

QuantizeResult quantize_model(const std::filesystem::path& model_dir, const std::filesystem::path& out_dir,
                              const WeightQuantization& quantization, Layout layout) {
  validate_quantization(quantization);
  const auto t0 = std::chrono::steady_clock::now();
  const Checkpoint ckpt = Checkpoint::open(model_dir, layout_preference(layout));
  const QuantPlan plan = QuantPlan::from_options(quantization);
  const QuantizeReport r = write_quantized_model(ckpt, plan, out_dir);
  QuantizeResult out;
  out.weights = plan.describe();
  out.tensors = r.tensors;
  out.quantized = r.quantized;
  out.bytes_before = r.weight_bytes_before;
  out.bytes_after = r.weight_bytes_after;
  out.encoder_error = r.encoder_error;
  out.decoder_error = r.decoder_error;
  out.embedding_error = r.embedding_error;
  out.head_error = r.head_error;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace voxrt

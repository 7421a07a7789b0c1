// voxrt stream --model DIR [--delay-ms N] [--format txt|jsonl|json|srt|vtt] [-o FILE]
//              [--raw s16le|s32le|f32le [--rate HZ] [--channels N]] [--realtime] [--stats] [--stop-at-eos]
//              [--chunk-ms N] [--turns [--turn-silence-ms N] [--turn-threshold X] [--turn-prefix-ms N]
//              [--turn-timeout-ms N]] [--context-bias "a,b"] [--context-bias-file FILE]
//              [--context-bias-strength X] [INPUT|-]
//
// Live transcription through a Session (include/voxrt/session.h): text is printed as the model
// decides it, while the audio is still arriving. The input is a file (fed in chunks, optionally at
// real-time pace) or standard input: a WAV stream (`arecord ... | voxrt stream -`) or headerless
// PCM (--raw). Ctrl-C or SIGTERM ends the input like EOF does: the session is flushed so the last
// words still come out, and the exit status is 0. Every write is checked: output that cannot be
// written stops the stream with exit status 1.
//
// --turns: turn detection (SessionOptions::turns): txt prints one line per finished turn, its final
// text; jsonl adds speech_started, speech_stopped and turn events to the text and word events.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "audio/audio_reader.h"
#include "audio/pcm_stream.h"
#include "cli/commands.h"
#include "cli/context_bias_options.h"
#include "cli/engine_options.h"
#include "cli/input_check.h"
#include "cli/output_sink.h"
#include "cli/usage.h"
#include "common/error.h"
#include "formats/output_formats.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::cli {

using formats::Format;
using formats::json_seconds;
using formats::render;
namespace {

constexpr int kSampleRate = 16000;     // what the engine hears
constexpr double kStepBudgetMs = 80.0;  // one decoder step per 80 ms of audio: the real-time budget
constexpr size_t kReadBytes = 1 << 15;  // per read(2); a pipe hands over whatever it holds, up to this
// poll(2) timeout. A signal normally interrupts poll at once (EINTR), but the kernel may deliver it
// to one of the compute threads instead; the timeout bounds how long the flag can go unnoticed.
constexpr int kPollMs = 100;

struct StreamArgs {
  EngineArgs engine;
  int delay_ms = 0;
  std::string format = "txt";
  std::string raw;
  int rate = kSampleRate;
  int channels = 1;
  bool realtime = false;
  bool stats = false;
  bool stop_at_eos = false;
  int chunk_ms = 80;
  std::string output;
  std::string input = "-";
  ContextBiasArgs bias;
  bool rate_given = false, channels_given = false;
  bool turns = false;
  TurnDetection turn;
  bool turn_option_given = false;  // a --turn-* value without --turns
};

// txt and jsonl are printed as the model decides; json, srt and vtt are the whole transcript at the end.
enum class StreamFormat { Txt, Jsonl, Json, Srt, Vtt };

StreamFormat parse_stream_format(const std::string& given) {
  const std::string name = formats::normalized_format_name(given);
  if (name == "txt") return StreamFormat::Txt;
  if (name == "jsonl") return StreamFormat::Jsonl;
  if (name == "json") return StreamFormat::Json;
  if (name == "srt") return StreamFormat::Srt;
  if (name == "vtt") return StreamFormat::Vtt;
  throw UsageError("--format " + given + ": expected txt, jsonl, json, srt or vtt");
}

// ---- stopping: signals, and EOS with --stop-at-eos ----

std::atomic<bool> g_signalled{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

extern "C" void on_stop_signal(int) { g_signalled.store(true); }

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // No SA_RESTART: a blocked poll/read returns EINTR so the loop sees the flag at once.
  // SA_RESETHAND: a second Ctrl-C gets the default action and kills a flush the user gave up on.
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// True once the input should end early: a signal arrived, or the model said EOS under --stop-at-eos
// (the session ignores audio after that, so reading more would only wait on the microphone).
class StopCondition {
 public:
  explicit StopCondition(bool stop_at_eos) : stop_at_eos_(stop_at_eos) {}
  void on_eos() { eos_ = true; }
  bool operator()() const { return g_signalled.load() || (stop_at_eos_ && eos_); }

 private:
  bool stop_at_eos_;
  bool eos_ = false;
};

// ---- output ----

std::string dump(const nlohmann::json& j) {
  // Invalid UTF-8 cannot come from the session (it emits complete characters), but never throw here.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Prints session events as they come (txt, jsonl) or the whole transcript at the end (json, srt,
// vtt), through a checked output.
class EventPrinter {
 public:
  // turns: a txt line per turn (its final text) rather than the text as it comes.
  EventPrinter(StreamFormat format, std::string source, OutputSink& out, bool turns)
      : format_(format), source_(std::move(source)), out_(out), turns_(turns) {}

  void on_event(const StreamEvent& e) {
    if (format_ == StreamFormat::Txt && !turns_ && e.kind == StreamEvent::Kind::Text) print_text(e.text);
    if (format_ == StreamFormat::Txt && turns_ && e.kind == StreamEvent::Kind::TurnEnd && !e.text.empty())
      out_.write(e.text + "\n");
    if (format_ == StreamFormat::Jsonl) print_jsonl(e);
  }

  void finish(const Session& s) {
    const Transcript t = s.transcript();
    switch (format_) {
      case StreamFormat::Txt:
        if (!turns_) out_.write("\n");  // per turn, each line was ended as it was printed
        break;
      case StreamFormat::Jsonl:
        out_.write(dump({{"type", "done"}, {"duration", json_seconds(t.duration)}, {"positions", s.stats().positions}, {"steps", s.stats().positions}}) + "\n");
        break;
      case StreamFormat::Json: out_.write(render(t, Format::Json, source_)); break;
      case StreamFormat::Srt: out_.write(render(t, Format::Srt, source_)); break;
      case StreamFormat::Vtt: out_.write(render(t, Format::Vtt, source_)); break;
    }
  }

 private:
  // The transcript's text is trimmed; skipping the leading blanks keeps txt output equal to it.
  void print_text(const std::string& delta) {
    std::string_view text = delta;
    if (!started_) {
      const size_t b = text.find_first_not_of(" \t\n");
      if (b == std::string_view::npos) return;
      text.remove_prefix(b);
      started_ = true;
    }
    out_.write(text);
  }

  void print_jsonl(const StreamEvent& e) {
    nlohmann::json j;
    switch (e.kind) {
      case StreamEvent::Kind::Text: j = {{"type", "text"}, {"text", e.text}, {"position", e.position}, {"step", e.position}, {"start", json_seconds(e.start)}}; break;
      case StreamEvent::Kind::SegmentEnd:
        j = {{"type", "segment"}, {"start", json_seconds(e.start)}, {"end", json_seconds(e.end)}, {"text", e.text}};
        break;
      case StreamEvent::Kind::Eos: j = {{"type", "eos"}, {"position", e.position}, {"step", e.position}}; break;
      case StreamEvent::Kind::Word:
        j = {{"type", "word"}, {"start", json_seconds(e.start)}, {"end", json_seconds(e.end)}, {"text", e.text}, {"position", e.position}, {"step", e.position}};
        break;
      case StreamEvent::Kind::SegmentStart: return;  // the segment is printed whole when it ends
      case StreamEvent::Kind::SpeechStarted: j = {{"type", "speech_started"}, {"start", json_seconds(e.start)}}; break;
      case StreamEvent::Kind::SpeechStopped:
        j = {{"type", "speech_stopped"}, {"start", json_seconds(e.start)}, {"end", json_seconds(e.end)}};
        break;
      case StreamEvent::Kind::TurnEnd:
        j = {{"type", "turn"}, {"start", json_seconds(e.start)}, {"end", json_seconds(e.end)}, {"text", e.text}};
        break;
    }
    out_.write(dump(j) + "\n");
  }

  StreamFormat format_;
  std::string source_;
  OutputSink& out_;
  bool turns_;
  bool started_ = false;
};

// Nearest-rank percentile of unsorted values (p in [0, 100]).
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

void print_stats(const SessionStats& st) {
  char line[256];
  const double rtf = st.compute_seconds > 0 ? st.audio_seconds / st.compute_seconds : 0.0;
  std::snprintf(line, sizeof line, "voxrt: stats: %lld steps, %.2f s of audio, %.3f s of compute: %.1fx real time\n",
                static_cast<long long>(st.positions), st.audio_seconds, st.compute_seconds, rtf);
  std::cerr << line;
  if (st.position_ms.empty()) return;
  const double p50 = percentile(st.position_ms, 50), p99 = percentile(st.position_ms, 99);
  std::snprintf(line, sizeof line,
                "voxrt: stats: step time p50 %.2f ms, p99 %.2f ms; budget %.0f ms per step: p99 margin %.1fx\n", p50,
                p99, kStepBudgetMs, p99 > 0 ? kStepBudgetMs / p99 : 0.0);
  std::cerr << line;
}

// ---- input ----

// Sleeps until `due` or until stop() holds. Short naps, because libstdc++ resumes a sleep that a
// signal interrupted, so a single long sleep would hold Ctrl-C back.
void sleep_until_or_stopped(std::chrono::steady_clock::time_point due, const StopCondition& stop) {
  for (auto now = std::chrono::steady_clock::now(); now < due && !stop(); now = std::chrono::steady_clock::now())
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(due - now, std::chrono::milliseconds(kPollMs)));
}

// A file (any format libsndfile reads), decoded and resampled incrementally and fed in chunks of
// chunk_ms: memory stays that of one chunk however long the file. With --realtime, chunk k is fed
// once it would have been captured live: (k + 1) chunk durations after the start.
void stream_file(const std::string& path, const StreamArgs& a, Session& session, const StopCondition& stop) {
  AudioFileReader reader(path, kSampleRate);
  const size_t chunk = static_cast<size_t>(a.chunk_ms) * kSampleRate / 1000;
  std::vector<float> samples;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t k = 0;; ++k) {
    if (a.realtime) sleep_until_or_stopped(start + std::chrono::milliseconds((k + 1) * a.chunk_ms), stop);
    if (stop() || reader.read(samples, chunk) == 0) break;
    session.feed(samples);
  }
}

// Waits for input on fd. Returns false when the wait was cut short (signal, timeout): check stop().
bool wait_readable(int fd, const std::string& name) {
  pollfd p{fd, POLLIN, 0};
  const int r = poll(&p, 1, kPollMs);
  if (r < 0 && errno != EINTR) throw Error(name + ": poll failed: " + std::strerror(errno));
  return r > 0;
}

// Reads a byte stream (stdin or a raw file) as it arrives and feeds every complete sample at once.
void stream_fd(int fd, const std::string& name, const StreamArgs& a, Session& session, const StopCondition& stop) {
  PcmStreamOptions o;
  if (!a.raw.empty()) o.raw = PcmFormat{parse_raw_sample_type(a.raw), a.rate, a.channels};
  o.target_rate = kSampleRate;
  o.source = name;
  o.not_wav_hint = "use --raw s16le for headerless PCM";
  PcmStream pcm(o);

  std::vector<uint8_t> buf(kReadBytes);
  std::vector<float> samples;
  bool eof = false;
  while (!eof && !stop()) {
    if (!wait_readable(fd, name)) continue;
    const ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw Error(name + ": read failed: " + std::strerror(errno));
    }
    eof = n == 0;
    samples.clear();
    pcm.push(std::span<const uint8_t>(buf.data(), static_cast<size_t>(n)), samples);
    session.feed(samples);
  }
  // At EOF a stream cut inside its WAV header is an error; after a signal it is just an early end
  // (EOF may follow the signal closely: Ctrl-C stops the writer of the pipe too).
  if (!pcm.format() && (!eof || g_signalled.load())) return;
  samples.clear();
  pcm.finish(samples);
  session.feed(samples);
}

// Headerless PCM from a file (--raw with a path): the same reader as standard input.
void stream_path(const std::string& path, const StreamArgs& a, Session& session, const StopCondition& stop) {
  struct File {
    int fd;
    ~File() { close(fd); }
  } file{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  stream_fd(file.fd, path, a, session, stop);
}

// The option that sets each TurnDetection field check_turn_detection may name.
std::string turn_option_of(const std::string& field) {
  if (field == "turns.threshold") return "--turn-threshold";
  if (field == "turns.prefix_padding_ms") return "--turn-prefix-ms";
  if (field == "turns.silence_duration_ms") return "--turn-silence-ms";
  if (field == "turns.end_timeout_ms") return "--turn-timeout-ms";
  return field;
}

// Every value and the input are checked before the model loads: a typo should not cost a load.
void check_args(StreamArgs& a) {
  parse_stream_format(a.format);
  if (!a.raw.empty()) {
    try {
      parse_raw_sample_type(a.raw);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }
  if (a.raw.empty() && (a.rate_given || a.channels_given))
    throw UsageError(std::string(a.rate_given ? "--rate" : "--channels") +
                     " describes headerless input: use it with --raw (WAV and other files carry their own)");
  if (a.realtime && a.input == "-")
    throw UsageError("--realtime paces a file input; standard input arrives at its own pace");
  if (a.chunk_ms < 1 || a.chunk_ms > 60000) throw UsageError("--chunk-ms " + std::to_string(a.chunk_ms) + ": expected 1 to 60000");
  if (a.rate < 1 || a.rate > 1'000'000) throw UsageError("--rate " + std::to_string(a.rate) + ": expected a sample rate in Hz, 1 to 1000000");
  if (a.channels < 1 || a.channels > 256) throw UsageError("--channels " + std::to_string(a.channels) + ": expected 1 to 256");
  check_engine_args(a.engine);
  if (a.turn_option_given && !a.turns) throw UsageError("--turn-* options tune turn detection: add --turns");
  if (a.turns) {
    try {
      check_turn_detection(a.turn);
    } catch (const OptionError& e) {
      throw UsageError(e.renamed(turn_option_of(e.field())));
    }
  }
  check_context_bias_args(a.bias);
  if (a.input == "-") {
    if (isatty(0))
      throw UsageError("standard input is a terminal: pipe audio in (arecord -f S16_LE -r 16000 -c 1 | voxrt stream -) "
                       "or name a file");
  } else {
    check_audio_input(a.input, /*open_as_audio=*/a.raw.empty());
    if (!a.output.empty() && a.output != "-" && same_file(a.output, a.input)) throw Error("-o " + a.output + ": is the input " + a.input);
  }
}

void run_stream(StreamArgs a) {
  check_args(a);
  // Made before the load too, so that an output that cannot be written costs nothing. A file is
  // renamed into place when the stream ends (Ctrl-C included); follow standard output to watch it live.
  const std::unique_ptr<OutputSink> out = OutputSink::standard_output_or_file(a.output);
  const std::unique_ptr<Engine> engine = load_engine(a.engine);
  // Only now: Ctrl-C during the load keeps its default action (quit at once, nothing to flush yet).
  install_stop_handlers();

  const bool from_stdin = a.input == "-";
  EventPrinter printer(parse_stream_format(a.format), a.input, *out, a.turns);
  StopCondition stop(a.stop_at_eos);
  SessionOptions so;
  so.delay_ms = a.delay_ms;
  so.stop_at_eos = a.stop_at_eos;
  if (a.turns) so.turns = a.turn;
  so.context_bias = a.bias.phrases;
  so.context_bias_strength = a.bias.strength;
  so.on_event = [&](const StreamEvent& e) {
    if (e.kind == StreamEvent::Kind::Eos) stop.on_eos();
    printer.on_event(e);
  };
  std::unique_ptr<Session> session;
  try {
    session = engine->open_session(so);
  } catch (const OptionError& e) {  // a phrase of more tokens than allowed, found once the tokenizer is loaded
    throw Error(as_option(e));
  }
  if (!a.engine.quiet && from_stdin) std::cerr << "voxrt: listening on standard input (Ctrl-C to stop)\n";

  if (from_stdin)
    stream_fd(0, "stdin", a, *session, stop);
  else if (!a.raw.empty())
    stream_path(a.input, a, *session, stop);
  else
    stream_file(a.input, a, *session, stop);

  session->flush();  // the right pad: without it the last words never come out
  printer.finish(*session);
  out->commit();
  if (session->stats().audio_seconds == 0 && !a.engine.quiet)
    std::cerr << "voxrt: " << (from_stdin ? "stdin" : a.input) << ": no audio (0 samples): the transcript is empty\n";
  if (a.stats) print_stats(session->stats());
}

}  // namespace

void add_stream_command(CLI::App& app) {
  auto args = std::make_shared<StreamArgs>();
  CLI::App* cmd = app.add_subcommand("stream", "Transcribe live: standard input (WAV or raw PCM) or a file, printing text as it is decided");
  add_engine_options(cmd, args->engine);
  add_delay_option(cmd, args->delay_ms);
  cmd->add_option("--format,-f", args->format,
                  "Output: txt (text as it comes), jsonl (one event per line), or at the end json, srt or vtt")
      ->capture_default_str();
  cmd->add_option("--output,-o", args->output, "Write to FILE (renamed into place when the stream ends) instead of standard output (- is standard output)");
  cmd->add_option("--raw", args->raw, "Headerless PCM input of this sample type: s16le, s32le, f32le, f16le, mulaw or alaw (default: WAV)");
  cmd->add_option("--rate", args->rate, "Sample rate of --raw input in Hz (resampled to 16000)")
      ->capture_default_str();
  cmd->add_option("--channels", args->channels, "Channels of --raw input (averaged to mono)")
      ->capture_default_str();
  cmd->add_flag("--realtime", args->realtime, "Feed a file input at real-time pace (as a microphone would)");
  cmd->add_flag("--stats", args->stats, "Print step timings and the real-time factor on standard error at the end");
  cmd->add_flag("--stop-at-eos", args->stop_at_eos, "End at the model's end-of-sequence token (like transcribe)");
  cmd->add_option("--chunk-ms", args->chunk_ms, "Chunk size for file input, in ms")->capture_default_str();
  cmd->add_flag("--turns", args->turns,
                "Turn detection: find where speech starts and stops; each turn's text is final when it ends "
                "(txt: a line per turn; jsonl: speech_started, speech_stopped and turn events)");
  cmd->add_option("--turn-silence-ms", args->turn.silence_duration_ms, "Silence that ends a turn, in ms")
      ->capture_default_str();
  cmd->add_option("--turn-threshold", args->turn.threshold, "How sure of speech the detector must be, 0 to 1")
      ->capture_default_str();
  cmd->add_option("--turn-prefix-ms", args->turn.prefix_padding_ms, "Audio kept before a turn's detected onset, in ms")
      ->capture_default_str();
  cmd->add_option("--turn-timeout-ms", args->turn.end_timeout_ms,
                  "The longest a turn waits for the model to stop writing after the silence, in ms "
                  "(0: --turn-silence-ms + 1000)")
      ->capture_default_str();
  add_context_bias_options(cmd, args->bias);
  cmd->add_option("input", args->input, "Audio file, or - for standard input (the default)");
  cmd->callback([args, cmd] {
    for (const char* o : {"--turn-silence-ms", "--turn-threshold", "--turn-prefix-ms", "--turn-timeout-ms"})
      if (cmd->count(o) > 0) args->turn_option_given = true;
    args->rate_given = cmd->count("--rate") > 0;
    args->channels_given = cmd->count("--channels") > 0;
    run_stream(*args);
  });
}

}  // namespace voxrt::cli

// `voxrt stream` end to end on the tiny reference model, with audio written into its standard input
// by a driver that picks the chunk sizes and pauses: the token ids must equal `transcribe` on the
// same audio whatever the split (raw PCM and WAV streams), events are well formed and spell the
// final text, text comes out before the input ends, a signal mid-stream still flushes, other rates
// are resampled, and bad input is refused with a clear message.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "../parity/golden.h"
#include "audio/audio_file.h"
#include "checkpoint_test_util.h"
#include "cli_run.h"

extern char** environ;

namespace voxrt::test {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;
using json = nlohmann::json;
using namespace std::chrono_literals;

// voxrt started with a pipe on its standard input; stdout and stderr go to files (a pipe could fill
// up and block the child while the test is busy writing).
class VoxrtProcess {
 public:
  explicit VoxrtProcess(const std::vector<std::string>& args) {
    // A child that exits early (bad input) must give the writer EPIPE, not kill the test binary.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &old_sigpipe_);

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    stdin_ = fds[1];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
    posix_spawn_file_actions_addopen(&fa, 1, (tmp_ / "out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, (tmp_ / "err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t defaults;  // SIG_IGN survives exec: give the child its normal SIGPIPE back
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);

    std::vector<std::string> argv_s = {voxrt_binary().string()};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, argv_s[0].c_str(), &fa, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(fds[0]);
    if (rc != 0) throw std::runtime_error(std::string("posix_spawn failed: ") + std::strerror(rc));
  }

  ~VoxrtProcess() {
    close_stdin();
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    sigaction(SIGPIPE, &old_sigpipe_, nullptr);
  }

  // Writes everything; false once the child has closed its end (it exited).
  bool write_all(const uint8_t* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(stdin_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  void close_stdin() {
    if (stdin_ >= 0) close(stdin_);
    stdin_ = -1;
  }

  void signal(int sig) { kill(pid_, sig); }
  std::string out_so_far() const { return slurp(tmp_ / "out"); }
  std::string err_so_far() const { return slurp(tmp_ / "err"); }

  // Waits for the exit; a child still running after `timeout` is killed (a hang fails the test).
  RunResult wait(std::chrono::seconds timeout = 120s) {
    close_stdin();
    RunResult r;
    int raw = 0;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (waitpid(pid_, &raw, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &raw, 0);
        r.err = "<killed: still running after the timeout>\n";
        break;
      }
      std::this_thread::sleep_for(5ms);
    }
    pid_ = -1;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    r.out = slurp(tmp_ / "out");
    r.err += slurp(tmp_ / "err");
    return r;
  }

 private:
  testutil::TempDir tmp_;
  pid_t pid_ = -1;
  int stdin_ = -1;
  struct sigaction old_sigpipe_ {};
};

// How the driver cuts the input: chunk sizes in bytes, cycled, with a pause after every `pause_every`
// bytes written (so the reader sees the stream arrive in pieces rather than all at once).
struct Schedule {
  std::string name;
  std::vector<size_t> chunk_bytes;
  size_t pause_every = 2560;  // 80 ms of 16 kHz s16
  std::chrono::microseconds pause = 1000us;
};

Schedule samples_schedule(size_t samples) {
  return {std::to_string(samples) + " samples", {samples * 2}};
}
// Random sizes from 1 byte up, odd sizes included, so samples and headers split anywhere.
Schedule random_schedule(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<size_t> sizes;
  for (int i = 0; i < 64; ++i) {
    const int kind = static_cast<int>(rng() % 3);
    sizes.push_back(kind == 0 ? 1 + rng() % 8 : kind == 1 ? 1 + rng() % 400 : 1 + rng() % 9000);
  }
  return {"random mix " + std::to_string(seed), sizes};
}

bool write_scheduled(VoxrtProcess& p, const Bytes& data, const Schedule& s) {
  size_t since_pause = 0;
  for (size_t pos = 0, k = 0; pos < data.size(); ++k) {
    const size_t n = std::min(s.chunk_bytes[k % s.chunk_bytes.size()], data.size() - pos);
    if (!p.write_all(data.data() + pos, n)) return false;
    pos += n;
    since_pause += n;
    if (since_pause >= s.pause_every) {
      std::this_thread::sleep_for(s.pause);
      since_pause = 0;
    }
  }
  return true;
}

std::vector<std::string> stream_args(std::vector<std::string> extra) {
  std::vector<std::string> a = {"stream", "-q", "--model", model_dir()};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

RunResult run_stream(const std::vector<std::string>& extra, const Bytes& input, const Schedule& s) {
  VoxrtProcess p(stream_args(extra));
  write_scheduled(p, input, s);
  return p.wait();
}

Bytes to_s16le(const std::vector<float>& x) {
  Bytes b;
  b.reserve(x.size() * 2);
  for (float v : x) {
    const long q = std::lround(std::clamp(v * 32768.0f, -32768.0f, 32767.0f));
    b.push_back(static_cast<uint8_t>(q & 0xFF));
    b.push_back(static_cast<uint8_t>((q >> 8) & 0xFF));
  }
  return b;
}
Bytes pcm_of(const std::string& name) { return to_s16le(load_audio_mono(audio(name))); }
Bytes file_bytes(const std::string& path) { return testutil::read_bytes(path); }

// `transcribe --format json` on a file: the reference every stream must reproduce.
json offline(const std::string& path) {
  testutil::TempDir tmp;
  const std::string cmd = voxrt_binary().string() + " transcribe -q -f json --model " + model_dir() + " " + path +
                          " >" + (tmp / "out").string() + " </dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return json::parse(slurp(tmp / "out"));
}

json parse_json(const RunResult& r) {
  EXPECT_EQ(r.status, 0) << r.err;
  try {
    return json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\n" << r.out << "\n" << r.err;
    return json::object();
  }
}

void expect_same_transcript(const json& got, const json& want) {
  EXPECT_EQ(got["tokens"], want["tokens"]);
  EXPECT_EQ(got["text"], want["text"]);
  EXPECT_EQ(got["segments"], want["segments"]);
  EXPECT_NEAR(got["duration"].get<double>(), want["duration"].get<double>(), 1e-9);
  EXPECT_EQ(got["delay_ms"], want["delay_ms"]);
}

TEST(StreamCli, RawS16OnStdinGivesTheOfflineTokensForAnyChunking) {
  const json want = offline(audio("speech_short"));
  const Bytes pcm = pcm_of("speech_short");
  for (const Schedule& s : {samples_schedule(1), samples_schedule(37), samples_schedule(160), samples_schedule(1280),
                            samples_schedule(4000), random_schedule(1), random_schedule(2)}) {
    SCOPED_TRACE(s.name);
    expect_same_transcript(parse_json(run_stream({"-f", "json", "--raw", "s16le", "-"}, pcm, s)), want);
  }
}

TEST(StreamCli, RawS16OnStdinLongerInput) {
  const json want = offline(audio("jfk"));
  const Bytes pcm = pcm_of("jfk");
  for (const Schedule& s : {samples_schedule(1280), random_schedule(3)}) {
    SCOPED_TRACE(s.name);
    expect_same_transcript(parse_json(run_stream({"-f", "json", "--raw", "s16le"}, pcm, s)), want);
  }
}

// The header fields arecord / sox / ffmpeg write when their output is a pipe.
Bytes with_unknown_sizes(Bytes wav, uint32_t size) {
  auto put = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) wav[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  put(4, size);
  for (size_t i = 12; i + 8 <= wav.size(); i += 8 + (wav[i + 4] | wav[i + 5] << 8 | wav[i + 6] << 16 | wav[i + 7] << 24)) {
    if (std::memcmp(&wav[i], "data", 4) == 0) {
      put(i + 4, size);
      return wav;
    }
  }
  ADD_FAILURE() << "no data chunk";
  return wav;
}

TEST(StreamCli, WavStreamOnStdinGivesTheOfflineTokens) {
  for (const std::string name : {"speech_short", "jfk"}) {  // jfk.wav has a LIST chunk before its data
    SCOPED_TRACE(name);
    const json want = offline(audio(name));
    const Bytes wav = file_bytes(audio(name));
    expect_same_transcript(parse_json(run_stream({"-f", "json", "-"}, wav, random_schedule(4))), want);
    for (uint32_t size : {0x7FFFFFFFu, 0u}) {
      SCOPED_TRACE(size);
      expect_same_transcript(parse_json(run_stream({"-f", "json", "-"}, with_unknown_sizes(wav, size), samples_schedule(160))),
                             want);
    }
  }
}

TEST(StreamCli, FileInputGivesTheOfflineTokens) {
  const json want = offline(audio("speech_short"));
  for (const std::string chunk : {"80", "37", "1000"}) {
    SCOPED_TRACE(chunk);
    const json got = parse_json(run_stream({"-f", "json", "--chunk-ms", chunk, audio("speech_short")}, {}, samples_schedule(1)));
    expect_same_transcript(got, want);
    EXPECT_EQ(got["file"], audio("speech_short"));
  }
}

TEST(StreamCli, RawFileInput) {
  testutil::TempDir tmp;
  testutil::write_bytes(tmp / "audio.s16", pcm_of("speech_short"));
  const json got = parse_json(run_stream({"-f", "json", "--raw", "s16le", (tmp / "audio.s16").string()}, {}, samples_schedule(1)));
  expect_same_transcript(got, offline(audio("speech_short")));
}

std::vector<json> parse_lines(const std::string& out) {
  std::vector<json> events;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    try {
      events.push_back(json::parse(line));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a JSON line: " << line;
    }
  }
  return events;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
}

TEST(StreamCli, JsonlEventsAreWellFormedAndSpellTheText) {
  const json want = offline(audio("jfk"));
  const RunResult r = run_stream({"-f", "jsonl", "--raw", "s16le", "-"}, pcm_of("jfk"), random_schedule(5));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<json> events = parse_lines(r.out);
  ASSERT_FALSE(events.empty());
  std::string text;
  std::vector<json> segments, words;
  int64_t last_step = -1;
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    const std::string type = e.value("type", "");
    if (type == "text") {
      EXPECT_TRUE(e["text"].is_string() && e["step"].is_number_integer() && e["start"].is_number()) << e;
      EXPECT_GE(e["step"].get<int64_t>(), last_step) << "steps go forward";
      last_step = e["step"].get<int64_t>();
      EXPECT_EQ(e["position"], e["step"]) << "step: the deprecated name of position";
      text += e["text"].get<std::string>();
    } else if (type == "segment") {
      EXPECT_LE(e["start"].get<double>(), e["end"].get<double>()) << e;
      segments.push_back({{"start", e["start"]}, {"end", e["end"]}, {"text", e["text"]}});
    } else if (type == "word") {
      EXPECT_LE(e["start"].get<double>(), e["end"].get<double>()) << e;
      words.push_back({{"start", e["start"]}, {"end", e["end"]}, {"text", e["text"]}});
    } else if (type == "eos") {
      EXPECT_TRUE(e["step"].is_number_integer()) << e;
    } else if (type == "done") {
      EXPECT_EQ(i + 1, events.size()) << "done is the last event";
      EXPECT_NEAR(e["duration"].get<double>(), want["duration"].get<double>(), 1e-9);
      EXPECT_EQ(e["steps"].get<size_t>(), want["tokens"].size());
      EXPECT_EQ(e["positions"], e["steps"]) << "steps: the deprecated name of positions";
    } else {
      ADD_FAILURE() << "unknown event " << e;
    }
  }
  EXPECT_EQ(events.back().value("type", ""), "done");
  EXPECT_EQ(trim(text), want["text"].get<std::string>());
  json want_segments = want["segments"];
  for (json& s : want_segments) s.erase("words");  // segment events carry no words: word events do
  EXPECT_EQ(json(segments), want_segments);
  EXPECT_EQ(json(words), want["words"]);
}

TEST(StreamCli, TxtPrintsTheTranscriptText) {
  const json want = offline(audio("speech_short"));
  const RunResult r = run_stream({"--raw", "s16le"}, pcm_of("speech_short"), samples_schedule(1280));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, want["text"].get<std::string>() + "\n");
}

// Polls the child's output until `pred` holds or the time runs out.
bool wait_for_output(VoxrtProcess& p, const std::function<bool(const std::string&)>& pred,
                     std::chrono::seconds timeout = 60s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred(p.out_so_far())) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(StreamCli, TextComesOutWhileTheInputIsStillOpen) {
  VoxrtProcess p(stream_args({"-f", "jsonl", "--raw", "s16le", "-"}));
  const Bytes pcm = pcm_of("jfk");
  // Four seconds of audio, and the pipe stays open: events must not wait for EOF.
  ASSERT_TRUE(p.write_all(pcm.data(), 4 * 32000));
  EXPECT_TRUE(wait_for_output(p, [](const std::string& out) { return out.find("\"type\":\"text\"") != std::string::npos; }));
  EXPECT_EQ(p.out_so_far().find("\"done\""), std::string::npos);
  p.write_all(pcm.data() + 4 * 32000, pcm.size() - 4 * 32000);
  const RunResult r = p.wait();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"type\":\"done\""), std::string::npos);
}

// The highest step among the complete event lines printed so far (-1: none).
int64_t last_step(const std::string& out) {
  int64_t step = -1;
  std::istringstream lines(out.substr(0, out.rfind('\n') + 1));
  for (std::string line; std::getline(lines, line);) {
    const json e = json::parse(line, nullptr, false);
    if (e.is_object() && e.contains("step")) step = std::max(step, e["step"].get<int64_t>());
  }
  return step;
}

// Writes half of jfk into a live stream, waits until the model has answered part of it, then signals.
// The transcript must be the offline one for exactly the audio heard (the flush really happened).
void check_signal_flushes(int sig) {
  const std::vector<float> all = load_audio_mono(audio("jfk"));
  const std::vector<float> half(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(all.size() / 2));
  VoxrtProcess p(stream_args({"-f", "jsonl", "--raw", "s16le", "-"}));
  const Bytes pcm = to_s16le(half);
  ASSERT_TRUE(p.write_all(pcm.data(), pcm.size()));
  // Steps arrive 80 ms of audio apart: an event at step 40 means at least 3.8 s were heard.
  ASSERT_TRUE(wait_for_output(p, [](const std::string& out) { return last_step(out) >= 40; }));
  std::this_thread::sleep_for(300ms);  // let it take the rest of what sits in the pipe
  p.signal(sig);
  const RunResult r = p.wait(60s);  // stdin stays open until wait(): only the signal can end the stream
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<json> events = parse_lines(r.out);
  ASSERT_FALSE(events.empty());
  ASSERT_EQ(events.back().value("type", ""), "done") << r.out;
  const double heard = events.back()["duration"].get<double>();
  EXPECT_GT(heard, 3.0);
  EXPECT_LE(heard, static_cast<double>(half.size()) / 16000 + 1e-9);

  // The same audio offline: same number of steps, same text.
  testutil::TempDir tmp;
  const fs::path wav = tmp / "heard.wav";
  write_wav_f32(wav, std::vector<float>(all.begin(), all.begin() + std::lround(heard * 16000)), 16000);
  const json want = offline(wav.string());
  EXPECT_EQ(events.back()["steps"].get<size_t>(), want["tokens"].size());
  std::string text;
  for (const json& e : events)
    if (e["type"] == "text") text += e["text"].get<std::string>();
  EXPECT_EQ(trim(text), want["text"].get<std::string>());
}

TEST(StreamCli, SigintMidStreamStillFlushes) { check_signal_flushes(SIGINT); }
TEST(StreamCli, SigtermMidStreamStillFlushes) { check_signal_flushes(SIGTERM); }

TEST(StreamCli, SigintWhileWaitingForAWavHeaderExitsCleanly) {
  VoxrtProcess p({"stream", "--model", model_dir(), "-f", "json", "-"});
  ASSERT_TRUE(p.write_all(reinterpret_cast<const uint8_t*>("RIFF"), 4));
  // Until the model is loaded Ctrl-C keeps its default action; "listening" says the handler is in.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (p.err_so_far().find("listening") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(100ms);  // and it is waiting for the rest of the header
  p.signal(SIGINT);
  const RunResult r = p.wait(60s);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(parse_json(r)["duration"], 0.0);
}

TEST(StreamCli, RawAtAnotherRateAndChannelCountIsResampled) {
  // stereo_44k.wav as headerless PCM: the reference ran on what `transcribe` hears from the file.
  const json want = offline(audio("stereo_44k"));
  const DecodedAudio d = read_audio_file(audio("stereo_44k"));
  ASSERT_EQ(d.channels, 2);
  const json got = parse_json(run_stream({"-f", "json", "--raw", "s16le", "--rate", "44100", "--channels", "2", "-"},
                                         to_s16le(d.samples), random_schedule(6)));
  expect_same_transcript(got, want);
}

TEST(StreamCli, RawWithAWrongRateIsResampledToTheStatedRate) {
  // 16 kHz audio declared as 8 kHz: heard at half speed, twice as long.
  const Bytes pcm = pcm_of("speech_short");
  const json got = parse_json(run_stream({"-f", "json", "--raw", "s16le", "--rate", "8000", "-"}, pcm, samples_schedule(160)));
  EXPECT_NEAR(got["duration"].get<double>(), 2.0 * (pcm.size() / 2) / 16000.0, 1e-3);
}

TEST(StreamCli, F32RawMatchesS16Raw) {
  const std::vector<float> x = load_audio_mono(audio("speech_short"));
  Bytes f32(x.size() * 4);
  std::memcpy(f32.data(), x.data(), f32.size());
  const json want = offline(audio("speech_short"));
  expect_same_transcript(parse_json(run_stream({"-f", "json", "--raw", "f32le"}, f32, random_schedule(7))), want);
}

TEST(StreamCli, GarbageWithoutRawIsRefusedClearly) {
  const std::string text = "this is a text file, not audio\n";
  const RunResult r = run_stream({"-"}, Bytes(text.begin(), text.end()), samples_schedule(1));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "voxrt: error: stdin: not a WAV stream (expected 'RIFF'); use --raw s16le for headerless PCM\n");
}

TEST(StreamCli, StreamCutInsideTheWavHeaderIsAnError) {
  const Bytes wav = file_bytes(audio("speech_short"));
  const RunResult r = run_stream({"-"}, Bytes(wav.begin(), wav.begin() + 30), samples_schedule(1));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("stdin: WAV stream ended inside its header"), std::string::npos) << r.err;
}

TEST(StreamCli, BadOptionsAreRejectedBeforeLoading) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{{{"--format", "docx"}, "--format docx: expected txt, jsonl, json, srt or vtt"},
                                         {{"--raw", "mp3"}, "--raw mp3: expected s16le"},
                                         {{"--delay-ms", "500"}, "--delay-ms 500"},
                                         {{"--chunk-ms", "0"}, "--chunk-ms 0"},
                                         {{"--raw", "s16le", "--rate", "0"}, "--rate 0"},
                                         {{"--raw", "s16le", "--channels", "0"}, "--channels 0"}}) {
    std::vector<std::string> args = {"stream", "--model", "/nonexistent"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    VoxrtProcess p(args);
    const RunResult r = p.wait();
    EXPECT_EQ(r.status, 2) << r.err;  // usage errors, found before the missing model
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
}

TEST(StreamCli, RealtimePacesAFileAndStatsReportTheSteps) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = run_stream({"--realtime", "--stats", audio("speech_short")}, {}, samples_schedule(1));
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GE(elapsed, 42641 / 16000.0 - 0.1) << "fed faster than real time";
  EXPECT_NE(r.err.find("44 steps, 2.67 s of audio"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("p50"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("p99"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("x real time"), std::string::npos) << r.err;
}

TEST(StreamCli, EmptyRawInputGivesAnEmptyResult) {
  const RunResult r = run_stream({"-f", "jsonl", "--raw", "s16le"}, {}, samples_schedule(1));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<json> events = parse_lines(r.out);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["type"], "done");
  EXPECT_EQ(events.back()["duration"], 0.0);
}

}  // namespace
}  // namespace voxrt::test

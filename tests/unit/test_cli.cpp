// The voxrt command end to end on the tiny reference model: output formats, options, several
// inputs, non-16 kHz stereo input, and bad input answered with exit status 1 and a message that
// names the file and what is wrong (never a crash, never a hang).
#include <gtest/gtest.h>

#include "models/voxtral/protocol.h"
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../parity/golden.h"
#include "audio/audio_file.h"
#include "checkpoint_test_util.h"
#include "cli_run.h"

namespace voxrt::test {
namespace {

namespace fs = std::filesystem;

std::vector<int32_t> golden_tokens(const std::string& name) {
  return Golden(test_data() / "tiny" / "golden" / (name + ".safetensors")).i32("tokens");
}

TEST(Cli, TranscribeJsonGivesTheReferenceTokens) {
  const RunResult r = run_voxrt("transcribe -q --format json --model " + model_dir() + " " + audio("speech_short"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), golden_tokens("speech_short_480"));
  EXPECT_EQ(j["delay_ms"], 480);
  EXPECT_NEAR(j["duration"].get<double>(), 42640 / 16000.0, 1e-3);
  EXPECT_TRUE(j["text"].is_string());
  for (const auto& s : j["segments"]) {
    EXPECT_LE(s["start"].get<double>(), s["end"].get<double>());
    EXPECT_LE(s["end"].get<double>(), j["duration"].get<double>() + 1e-9);
    EXPECT_FALSE(s["text"].get<std::string>().empty());
  }
}

TEST(Cli, DelayOptionSelectsTheDelay) {
  const RunResult r =
      run_voxrt("transcribe -q -f json --delay-ms 160 --model " + model_dir() + " " + audio("speech_short"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].get<std::vector<int32_t>>(), golden_tokens("speech_short_160"));
}

TEST(Cli, SeveralInputsGiveOneJsonObjectEach) {
  const RunResult r = run_voxrt("transcribe -q -f json --model " + model_dir() + " " + audio("speech_short") + " " +
                                audio("odd_length"));
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string a, b;
  ASSERT_TRUE(std::getline(lines, a) && std::getline(lines, b));
  EXPECT_EQ(nlohmann::json::parse(a)["file"], audio("speech_short"));
  EXPECT_EQ(nlohmann::json::parse(b)["tokens"].get<std::vector<int32_t>>(), golden_tokens("odd_length_480"));
}

TEST(Cli, StereoAt44kIsDownmixedAndResampled) {
  // stereo_44k.wav is speech_short.wav at 44.1 kHz on two channels. Resampling is not lossless, so
  // the reference ran on exactly what voxrt hears (stereo_44k_heard.wav, from `voxrt decode-audio`).
  testutil::TempDir tmp;
  const std::string heard = (tmp / "heard.wav").string();
  RunResult r = run_voxrt("decode-audio " + audio("stereo_44k") + " " + heard);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<float> ours = load_audio_mono(heard), committed = load_audio_mono(audio("stereo_44k_heard"));
  ASSERT_EQ(ours.size(), committed.size());
  EXPECT_LE(max_abs_error(ours, committed), 1e-5) << "soxr output differs from the committed decode";
  r = run_voxrt("transcribe -q -f json --model " + model_dir() + " " + audio("stereo_44k"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"].get<std::vector<int32_t>>(), golden_tokens("stereo_44k_heard_480"));
}

TEST(Cli, SubtitleFormatsAndOutputFile) {
  testutil::TempDir tmp;
  const std::string srt = (tmp / "a.srt").string();
  RunResult r = run_voxrt("transcribe -q -f srt -o " + srt + " --model " + model_dir() + " " + audio("jfk"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string s = slurp(srt);
  EXPECT_EQ(s.rfind("1\n00:00:", 0), 0u) << s;
  EXPECT_NE(s.find(" --> "), std::string::npos);
  r = run_voxrt("transcribe -q -f vtt --model " + model_dir() + " " + audio("jfk"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("WEBVTT\n\n00:00:", 0), 0u) << r.out;
}

TEST(Cli, BadDelayIsRejectedBeforeLoading) {
  const RunResult r = run_voxrt("transcribe --delay-ms 500 --model /nonexistent " + audio("speech_short"));
  EXPECT_EQ(r.status, 2);  // a usage error
  EXPECT_NE(r.err.find("--delay-ms 500"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("80 to 1200"), std::string::npos) << r.err;
}

TEST(Cli, BadFormatIsRejected) {
  const RunResult r = run_voxrt("transcribe -f docx --model " + model_dir() + " " + audio("speech_short"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--format docx"), std::string::npos) << r.err;
}

// Copies the tiny model so a test can break one file of it.
fs::path copy_model(const testutil::TempDir& tmp) {
  const fs::path dst = tmp / "model";
  fs::copy(model_dir(), dst, fs::copy_options::recursive);
  return dst;
}

TEST(Cli, TruncatedCheckpointNamesTheFile) {
  testutil::TempDir tmp;
  const fs::path m = copy_model(tmp);
  fs::resize_file(m / "consolidated.safetensors", fs::file_size(m / "consolidated.safetensors") / 2);
  const RunResult r = run_voxrt("transcribe --model " + m.string() + " " + audio("speech_short"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("consolidated.safetensors"), std::string::npos) << r.err;
}

TEST(Cli, MalformedParamsJsonNamesTheFile) {
  testutil::TempDir tmp;
  const fs::path m = copy_model(tmp);
  std::ofstream(m / "params.json") << "{\"dim\": 64,";
  const RunResult r = run_voxrt("transcribe --model " + m.string() + " " + audio("speech_short"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("params.json"), std::string::npos) << r.err;
}

TEST(Cli, MissingTokenizerIsNamed) {
  testutil::TempDir tmp;
  const fs::path m = copy_model(tmp);
  fs::remove(m / "tekken.json");
  const RunResult r = run_voxrt("transcribe --model " + m.string() + " " + audio("speech_short"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("tekken.json"), std::string::npos) << r.err;
}

// Inputs that do not open as audio are found before the model loads, every one of them named; the
// model loads only when one of them can be read, and the others are transcribed (exit status 1).
// (An input that fails while it is transcribed does not stop the others either:
// CliOutputs.OneFailingInputDoesNotStopTheOthers.)
TEST(Cli, BrokenAudioIsFoundBeforeLoading) {
  testutil::TempDir tmp;
  const fs::path garbage = tmp / "garbage.wav";
  std::ofstream(garbage) << "RIFF\x10\x00\x00\x00WAVEjunkjunkjunk";
  const fs::path empty = tmp / "empty.flac";
  std::ofstream{empty};
  const RunResult r = run_voxrt("transcribe -f json --model " + model_dir() + " " + garbage.string() + " " +
                                audio("speech_short") + " " + empty.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("garbage.wav: cannot decode audio"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("empty.flac: cannot decode audio"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 of 3 inputs failed"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["file"], audio("speech_short"));
  const RunResult none = run_voxrt("transcribe -f json --model " + model_dir() + " " + garbage.string() + " " + empty.string());
  EXPECT_EQ(none.status, 1);
  EXPECT_NE(none.err.find("none of the 2 inputs can be read"), std::string::npos) << none.err;
  EXPECT_EQ(none.err.find("loaded "), std::string::npos) << none.err;
  EXPECT_EQ(none.out, "");
}

TEST(Cli, MissingModelDirectoryIsExplained) {
  const RunResult r = run_voxrt("transcribe --model /nonexistent/voxtral " + audio("speech_short"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("/nonexistent/voxtral"), std::string::npos) << r.err;
}

TEST(Cli, PullWithoutNetworkFailsFastWithAMessage) {
  testutil::TempDir tmp;
  const auto t0 = std::chrono::steady_clock::now();
  // Port 1 on the loopback: nothing listens there, the connection is refused at once.
  const RunResult r = run_voxrt("pull -q --endpoint http://127.0.0.1:1 --dir " + (tmp / "m").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot reach"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
}

}  // namespace
}  // namespace voxrt::test

namespace voxrt::test {
namespace {


// voxrt bench runs and records every figure with its floor (the figures themselves are not
// checked: timing never goes in a test).
TEST(Cli, BenchWritesEveryFigureWithItsFloor) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(run_bench("--passes 3 --offline-seconds 2,4", "decoder_pass", j));
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_GT(j["ceilings"]["copy_GBps"].get<double>(), 0);
  EXPECT_GT(j["ceilings"]["matmul_TFLOPs"].get<double>(), 0);
  for (const char* pass : {"encoder_pass", "decoder_pass"}) {
    EXPECT_GT(j[pass]["p50_ms"].get<double>(), 0) << pass;
    EXPECT_GT(j[pass]["floor_ms"].get<double>(), 0) << pass;
  }
  // The pass figures under their old keys too (deprecated, kept for one release: scripts read them).
  EXPECT_EQ(j["encoder_step"], j["encoder_pass"]);
  EXPECT_EQ(j["decoder_step"], j["decoder_pass"]);
  EXPECT_EQ(j["decoder_step_full_window"], j["decoder_pass_full_window"]);
  ASSERT_EQ(j["offline"].size(), 2u);
  EXPECT_EQ(j["offline"][1]["audio_s"].get<double>(), 4.0);
  EXPECT_GT(j["offline"][1]["rtfx"].get<double>(), 0);
  // The time inside the model's steps is part of the wall time.
  EXPECT_GT(j["offline"][1]["in_steps_s"].get<double>(), 0);
  EXPECT_LE(j["offline"][1]["in_steps_s"].get<double>(), j["offline"][1]["wall_s"].get<double>());
  EXPECT_GT(j["offline"][1]["encoder_s"].get<double>(), 0);
  EXPECT_LE(j["offline"][1]["encoder_s"].get<double>(), j["offline"][1]["wall_s"].get<double>());
  // The CPU decodes one position a pass unless asked to draft.
  EXPECT_EQ(j["offline"][1]["decoder_passes"].get<int64_t>(), j["offline"][1]["steps"].get<int64_t>());
  EXPECT_EQ(j["offline"][1]["passes_floor_s"].get<double>(), j["offline"][1]["floor_s"].get<double>());
  EXPECT_GT(j["memory_in_use_bytes"].get<double>(), 0);
  EXPECT_GT(j["memory_after_pass_figures_bytes"].get<double>(), 0);
}

// --steps, the old name of --passes, still sets the timed passes (deprecated, kept for one
// release) but is left out of the help.
TEST(Cli, BenchStepsIsTheDeprecatedNameOfPasses) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(run_bench("--figures decoder --steps 2", "decoder_pass", j));
  EXPECT_GT(j["decoder_pass"]["p50_ms"].get<double>(), 0);
  const RunResult help = run_voxrt("bench --help");
  EXPECT_NE(help.out.find("--passes"), std::string::npos) << help.out;
  EXPECT_EQ(help.out.find("--steps"), std::string::npos) << help.out;
}

// With draft rows, the offline figure counts fewer decoder passes than steps (the tiny model's
// output repeats tokens), and at least one pass per draft_rows steps.
TEST(Cli, BenchOfflineFigureCountsDraftedPasses) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(run_bench("--draft-rows 4 --figures offline --offline-seconds 6", "decoder passes", j));
  ASSERT_EQ(j["offline"].size(), 1u);
  const int64_t steps = j["offline"][0]["steps"].get<int64_t>(), passes = j["offline"][0]["decoder_passes"].get<int64_t>();
  EXPECT_LT(passes, steps);
  EXPECT_GE(passes * 4, steps);
  EXPECT_LE(j["offline"][0]["passes_floor_s"].get<double>(), j["offline"][0]["floor_s"].get<double>());
}

// The products figure times each of a pass's matrix products alone, with its floor.
TEST(Cli, BenchProductsFigureListsEveryProductOfAPass) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(run_bench("--figures products", "decoder gate+up", j));
  ASSERT_EQ(j["products"].size(), 11u);
  for (const auto& p : j["products"]) {
    EXPECT_GT(p["kernels"]["auto"]["p50_us"].get<double>(), 0) << p["name"];
    EXPECT_GT(p["floor_us"].get<double>(), 0) << p["name"];
    EXPECT_GT(p["weight_bytes"].get<double>(), 0) << p["name"];
  }
  EXPECT_FALSE(j.contains("encoder_pass"));
  EXPECT_EQ(j["offline"].size(), 0u);
}

// --product-rows: every product at each row count, through each kernel path the backend has (the
// CPU has only its own), with the FLOPs of that many rows.
TEST(Cli, BenchProductRowsTimesEachProductAtEachRowCount) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(run_bench("--product-rows 1,5", "lm head", j));
  ASSERT_EQ(j["products"].size(), 22u);
  for (size_t i = 0; i < j["products"].size(); i += 2) {
    const auto &one = j["products"][i], five = j["products"][i + 1];
    EXPECT_EQ(one["name"], five["name"]);
    EXPECT_EQ(one["rows"].get<int>(), 1);
    EXPECT_EQ(five["rows"].get<int>(), 5);
    EXPECT_DOUBLE_EQ(five["flops"].get<double>(), 5 * one["flops"].get<double>());
    EXPECT_GT(five["kernels"]["auto"]["TFLOPs"].get<double>(), 0) << five["name"];
  }
}

// --attention-streams: one layer's attention of the encoder and the decoder for each stream count,
// through each attention kernel the backend has (the CPU: its own), against the K/V bytes read.
TEST(Cli, BenchAttentionFigureTimesEachShapeAtEachStreamCount) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(run_bench("--figures attention --attention-streams 1,3", "encoder step", j));
  // The tiny model's decoder window (64 keys) is shorter than a minute: the encoder's full window
  // and the decoder's, each at 1 and 3 streams.
  ASSERT_EQ(j["attention"].size(), 4u) << j["attention"].dump();
  for (size_t i = 0; i < j["attention"].size(); i += 2) {
    const auto &one = j["attention"][i], three = j["attention"][i + 1];
    EXPECT_EQ(one["name"], three["name"]);
    EXPECT_EQ(one["streams"].get<int>(), 1);
    EXPECT_EQ(three["streams"].get<int>(), 3);
    EXPECT_EQ(three["rows"].get<int>(), 3 * one["rows"].get<int>());
    EXPECT_DOUBLE_EQ(three["kv_bytes"].get<double>(), 3 * one["kv_bytes"].get<double>());
    EXPECT_GT(three["floor_us"].get<double>(), 0);
    EXPECT_GT(three["kernels"]["auto"]["p50_us"].get<double>(), 0) << three["name"];
  }
  EXPECT_EQ(j["attention"][0]["name"], "encoder step");
  EXPECT_EQ(j["attention"][0]["rows"].get<int>(), 4);  // an encoder step's frames
  EXPECT_FALSE(j.contains("encoder_pass"));
}

TEST(Cli, BenchProductRowsOutOfRangeIsAUsageError) {
  const RunResult r = run_voxrt("bench --model " + model_dir() + " --product-rows 0");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--product-rows 0"), std::string::npos) << r.err;
}

// --streams N: N paced live sessions at once; every paced chunk's lag is recorded and the
// scheduler's rounds with it (the figures themselves are not checked).
TEST(Cli, BenchStreamsRecordsLagsRoundsAndMemory) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(run_bench("--streams 3 --stream-seconds 3 --measure-seconds 1", "live streams of 3 s", j));
  EXPECT_EQ(j["streams"].get<int>(), 3);
  EXPECT_GE(j["lag_ms"]["max"].get<double>(), j["lag_ms"]["p50"].get<double>());
  EXPECT_GT(j["rounds"]["count"].get<int>(), 0);
  EXPECT_GE(j["rounds"]["streams"]["max"].get<double>(), 1);
  EXPECT_LE(j["rounds"]["streams"]["max"].get<double>(), 3);
  EXPECT_GT(j["rounds"]["floor_ms"].get<double>(), 0);
  // A round's floor counts its own streams: never more than a step of all three.
  EXPECT_GT(j["rounds"]["round_floor_ms"]["p50"].get<double>(), 0);
  EXPECT_LE(j["rounds"]["round_floor_ms"]["max"].get<double>(), j["rounds"]["floor_ms"].get<double>() * (1 + 1e-9));
  // The rounds' time for each step of audio: some, and no more than the paced part's wall time allows.
  EXPECT_GT(j["busy_ms_per_step"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j["step_ms"].get<double>(), 80.0);
  EXPECT_DOUBLE_EQ(j["fill"]["audio_seconds"].get<double>(), 3 * 2.0);
  EXPECT_FALSE(j["fill"]["drafts_kept"].get<bool>()) << "the fill decodes as any stream does unless asked";
  EXPECT_TRUE(j.contains("within_real_time"));
  EXPECT_EQ(j["arrivals"], "spread over a step");
  // The backend's recordings since load (a GPU's captured, replayed and eager; none on the CPU).
  ASSERT_TRUE(j.contains("recordings"));
  for (const char* k : {"captured", "replayed", "eager"}) EXPECT_TRUE(j["recordings"].contains(k)) << k;
  // The rounds' cost split into a fixed part and a part a stream: fitted where rounds held
  // different numbers of streams, null where they all held as many.
  ASSERT_TRUE(j["rounds"].contains("fit"));
  if (const auto& fit = j["rounds"]["fit"]; !fit.is_null()) {
    EXPECT_GT(fit["rounds"].get<int>(), 1);
    EXPECT_GE(fit["r2"].get<double>(), 0.0);
    EXPECT_LE(fit["r2"].get<double>(), 1.0 + 1e-9);
  }
}

// A cache budget instead of a session count: the streams reserve their length's pages from it,
// and the record says what a stream reserved and what it holds once filled.
TEST(Cli, BenchStreamsInAMemoryBudget) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(
      run_bench("--streams 2 --stream-seconds 2 --measure-seconds 1 --max-memory 64MiB", "live streams of 2 s", j));
  const auto& m = j["memory"];
  EXPECT_GT(m["cache_bytes_per_stream"].get<double>(), 0);
  EXPECT_GT(m["cache_mapped_bytes_per_stream"].get<double>(), 0);
  EXPECT_LE(m["cache_mapped_bytes_per_stream"].get<double>(), m["cache_bytes_per_stream"].get<double>())
      << "a stream holds no more than it reserved for its length";
  EXPECT_NEAR(m["cache_total_bytes"].get<double>(), 64.0 * 1048576, 64.0 * 1048576 * 0.02);
  // A fraction of what the model leaves free works too; fp8 caches are the GPU's.
  ASSERT_NO_FATAL_FAILURE(
      run_bench("--streams 1 --stream-seconds 2 --measure-seconds 1 --max-memory 0.01", "live streams of 2 s", j));
  const RunResult r = run_voxrt("bench --model " + model_dir() + " --device cpu --kv fp8 --streams 1");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--kv fp8"), std::string::npos) << r.err;
}

// --windows K: one fill, then K measured windows one after the other, each reported on its own;
// the whole is every window's (its rounds are theirs). Here the fill keeps its drafted rows
// (--fill-drafts).
TEST(Cli, BenchStreamsMeasuresSeveralWindowsAfterOneFill) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(run_bench("--streams 2 --stream-seconds 3 --measure-seconds 1 --windows 2 --fill-drafts",
                                    "measured over the last 2 s in 2 windows of 1 s", j));
  EXPECT_EQ(j["windows"].get<int>(), 2);
  EXPECT_TRUE(j["fill"]["drafts_kept"].get<bool>());
  EXPECT_DOUBLE_EQ(j["fill"]["audio_seconds"].get<double>(), 2 * (3.0 - 2 * 1.0));
  ASSERT_EQ(j["by_window"].size(), 2u);
  int rounds = 0;
  bool all_kept_up = true;
  for (const auto& w : j["by_window"]) {
    EXPECT_GT(w["lag_ms"]["max"].get<double>(), 0) << w;
    EXPECT_LE(w["lag_ms"]["max"].get<double>(), j["lag_ms"]["max"].get<double>()) << w;
    rounds += w["rounds"]["count"].get<int>();
    all_kept_up = all_kept_up && w["within_real_time"].get<bool>();
  }
  EXPECT_EQ(rounds, j["rounds"]["count"].get<int>());
  EXPECT_EQ(all_kept_up, j["within_real_time"].get<bool>());
  for (const char* bad : {"--streams 2 --windows 0", "--windows 2", "--streams 2 --stream-seconds 3 --measure-seconds 2 --windows 2",
                          "--fill-drafts"}) {
    const RunResult r = run_voxrt("bench --model " + model_dir() + " " + bad);
    EXPECT_EQ(r.status, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--"), std::string::npos) << r.err;
  }
}

// --find-capacity: doubles from --streams until a run fails, then bisects; here the engine's
// session limit is what fails (the 4th stream cannot open, and the run gives up without filling
// the others), so the search ends at 3. Each trial is printed as it ends, once, and recorded.
TEST(Cli, BenchFindCapacityPrintsEachTrialAsItEndsAndStopsAtTheFirstFailure) {
  testutil::TempDir tmp;
  const RunResult r = run_voxrt("bench -q --streams 1 --find-capacity --max-sessions 3 --stream-seconds 2 --measure-seconds 1 --model " +
                                model_dir() + " --audio " + audio("speech_short") + " --out " + tmp.path().string());
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(tmp.path())) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  const nlohmann::json j = nlohmann::json::parse(slurp(files[0]));
  EXPECT_EQ(j["capacity"].get<int>(), 3);
  EXPECT_EQ(j["first_failing"].get<int>(), 4);
  ASSERT_EQ(j["trials"].size(), 4u) << j["trials"].dump();
  const int tried[] = {1, 2, 4, 3};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(j["trials"][i]["streams"].get<int>(), tried[i]) << i;
  EXPECT_NE(j["trials"][2]["error"].get<std::string>().find("max_sessions"), std::string::npos) << j["trials"][2];
  // Printed in the order run, each once, the capacity last.
  std::vector<size_t> at;
  for (const char* trial : {"1 live streams of 2 s", "2 live streams of 2 s", "--- 4 streams:", "3 live streams of 2 s",
                            "capacity: 3 streams keep within one step (80 ms) of real time; 4 do not"}) {
    at.push_back(r.out.find(trial));
    ASSERT_NE(at.back(), std::string::npos) << trial << " not in:\n" << r.out;
    EXPECT_EQ(r.out.find(trial, at.back() + 1), std::string::npos) << trial << " twice in:\n" << r.out;
  }
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end())) << r.out;
}

// --aligned-arrivals: every stream's chunks at the same instant (the worst case), and said so.
TEST(Cli, BenchStreamsAlignedArrivals) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(
      run_bench("--streams 2 --stream-seconds 2 --measure-seconds 1 --aligned-arrivals", "arrivals aligned", j));
  EXPECT_EQ(j["arrivals"], "aligned");
  const RunResult r = run_voxrt("bench --model " + model_dir() + " --aligned-arrivals");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--aligned-arrivals needs --streams"), std::string::npos) << r.err;
}

// --offline-batch B: B transcriptions at once, each running every step of its input (no stop at
// EOS), so the step count is B times the offline count.
TEST(Cli, BenchOfflineBatchRunsEveryStepOfEveryInput) {
  nlohmann::json j;
  ASSERT_NO_FATAL_FAILURE(run_bench("--offline-batch 3 --offline-seconds 4", "3 transcriptions of 4 s at once", j));
  Protocol p;  // the tiny model's tekken.json: 32 left-pad tokens, 480 ms
  EXPECT_EQ(j["steps"].get<int64_t>(), 3 * p.offline_outputs(4 * 16000));
  EXPECT_GT(j["rtfx"].get<double>(), 0);
  EXPECT_GT(j["rtfx_floor"].get<double>(), 0);
  EXPECT_GT(j["rounds"]["count"].get<int>(), 0);
  // Every step after each prompt's is a decoder row (rows past a wrong draft are decoded too); the
  // parts' seconds add up to no more than the rounds', and those to no more than the wall time.
  EXPECT_GE(j["decoder_rows"].get<int64_t>(), j["steps"].get<int64_t>() - 3);
  const nlohmann::json& in = j["seconds_in"];
  const double parts = in["encoder"].get<double>() + in["prompts"].get<double>() + in["decoder"].get<double>();
  EXPECT_GT(in["encoder"].get<double>(), 0);
  EXPECT_GT(in["decoder"].get<double>(), 0);
  EXPECT_LE(parts, in["rounds"].get<double>() + 1e-6);
  EXPECT_LE(in["rounds"].get<double>(), j["wall_s"].get<double>() + 1e-6);
}

}  // namespace
}  // namespace voxrt::test

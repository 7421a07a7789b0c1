// What a new user trips on (issue 33), in the command line and its outputs: each test is one of the
// rough edges the issue lists, and failed before its fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"

namespace voxrt::test {
namespace {

namespace fs = std::filesystem;
using testutil::TempDir;

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

std::string transcribe(const std::string& args) { return "transcribe -q --model " + model_dir() + " " + args; }

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// ---- point 4: one unreadable file does not cancel a batch ----

TEST(CliNewUser, AnUnreadableInputIsNamedAndTheOthersAreTranscribed) {
  TempDir tmp;
  write_text(tmp / "notaudio.wav", "these are notes, not audio\n");
  const RunResult r = run_voxrt(transcribe(audio("jfk") + " " + (tmp / "notaudio.wav").string()));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "voxrt: error: " + (tmp / "notaudio.wav").string() + ": cannot decode audio")) << r.err;
  EXPECT_TRUE(contains(r.err, "1 of 2 inputs failed")) << r.err;
  EXPECT_EQ(r.out.rfind("==> " + audio("jfk") + " <==\n", 0), 0u) << r.out;
  EXPECT_FALSE(contains(r.out, "notaudio.wav")) << r.out;
}

TEST(CliNewUser, AFolderWithOneCorruptFileTranscribesTheRest) {
  TempDir tmp;
  const fs::path dir = tmp / "talks", out = tmp / "out";
  fs::create_directories(dir);
  fs::copy_file(audio("jfk"), dir / "a.wav");
  write_text(dir / "b.wav", "RIFF\x10\x00\x00\x00WAVEjunkjunkjunk");
  fs::copy_file(audio("speech_short"), dir / "c.wav");
  const RunResult r = run_voxrt(transcribe("-f json --output-dir " + out.string() + " " + dir.string()));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "b.wav: cannot decode audio")) << r.err;
  EXPECT_TRUE(fs::exists(out / "a.json") && fs::exists(out / "c.json")) << r.err;
  EXPECT_FALSE(fs::exists(out / "b.json"));
}

// ---- point 12: the command line ----

TEST(CliNewUser, DashAsOutputIsStandardOutput) {
  TempDir tmp;
  for (const std::string cmd : {"transcribe", "stream"}) {
    const RunResult r = run_voxrt(cmd + " -q -o - --model " + model_dir() + " " + audio("jfk"), {.cwd = tmp.path().string()});
    EXPECT_EQ(r.status, 0) << cmd << "\n" << r.err;
    EXPECT_FALSE(r.out.empty()) << cmd;
    EXPECT_FALSE(fs::exists(tmp / "-")) << cmd << " wrote a file named -";
  }
}

TEST(CliNewUser, TranscribeReadsAudioFromStandardInput) {
  const RunResult file = run_voxrt(transcribe("-f json " + audio("stereo_44k")));
  ASSERT_EQ(file.status, 0) << file.err;
  const RunResult piped = run_voxrt(transcribe("-f json -"), {.stdin_from = audio("stereo_44k")});
  ASSERT_EQ(piped.status, 0) << piped.err;
  EXPECT_EQ(nlohmann::json::parse(piped.out)["tokens"], nlohmann::json::parse(file.out)["tokens"]);
  EXPECT_EQ(nlohmann::json::parse(piped.out)["file"], "-");
  // Something that is no audio is named as standard input, not as a temporary file.
  TempDir tmp;
  write_text(tmp / "notes.txt", "not audio\n");
  const RunResult bad = run_voxrt(transcribe("-"), {.stdin_from = (tmp / "notes.txt").string()});
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.err.rfind("voxrt: error: standard input: cannot decode audio", 0), 0u) << bad.err;
  const RunResult twice = run_voxrt(transcribe("- -"), {.stdin_from = audio("jfk")});
  EXPECT_EQ(twice.status, 2) << twice.err;
}

TEST(CliNewUser, QuietMeansQuietEverywhere) {
  TempDir tmp;
  RunResult r = run_voxrt("decode-audio -q " + audio("jfk") + " " + (tmp / "heard.wav").string());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // pull -q: only the error (nothing listens on port 1), no "pulling ..." note before it.
  r = run_voxrt("pull -q --endpoint http://127.0.0.1:1 --dir " + (tmp / "m").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err.rfind("voxrt: error: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find("pulling"), std::string::npos) << r.err;
}

TEST(CliNewUser, VoxrtAloneAndVoxrtHelpShowTheHelp) {
  const RunResult alone = run_voxrt("");
  EXPECT_EQ(alone.status, 0) << alone.err;
  EXPECT_TRUE(contains(alone.out, "transcribe")) << alone.out;
  const RunResult help = run_voxrt("help");
  EXPECT_EQ(help.status, 0) << help.err;
  EXPECT_EQ(help.out, alone.out);
  const RunResult command = run_voxrt("help transcribe");
  EXPECT_EQ(command.status, 0) << command.err;
  EXPECT_EQ(command.out, run_voxrt("transcribe --help").out);
  const RunResult unknown = run_voxrt("help transcibe");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_TRUE(contains(unknown.err, "did you mean transcribe?")) << unknown.err;
}

TEST(CliNewUser, AWholeNumberWrittenAsAFloatIsADelay) {
  const RunResult r = run_voxrt(transcribe("-f json --delay-ms 160.0 " + audio("speech_short")));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["delay_ms"], 160);
  const RunResult half = run_voxrt(transcribe("--delay-ms 160.5 " + audio("speech_short")));
  EXPECT_EQ(half.status, 2);
  EXPECT_TRUE(contains(half.err, "--delay-ms 160.5: expected a whole number")) << half.err;
}

TEST(CliNewUser, ValuesAreRefusedConsistentlyNamingTheOption) {
  struct Case {
    std::string args, message;
    int status;
  };
  TempDir tmp;
  for (const Case& c : std::vector<Case>{
           {transcribe("--batch 0 " + audio("jfk")), "--batch 0: expected 1 to", 2},
           {transcribe("--device cpu --kv fp8 " + audio("jfk")), "--kv fp8: the key/value cache storage is a GPU option", 2},
           {"pull --endpoint ftp://x --dir " + (tmp / "m").string(), "--endpoint ftp://x: expected an http:// or https://", 2},
       }) {
    const RunResult r = run_voxrt(c.args);
    EXPECT_EQ(r.status, c.status) << c.args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.message)) << c.args << "\n" << r.err;
    EXPECT_FALSE(contains(r.err, "kv_cache")) << r.err;
  }
}

TEST(CliNewUser, FormatNamesInAnyCaseWithBlanksAfterCommas) {
  TempDir tmp;
  RunResult r = run_voxrt(transcribe("-f SRT " + audio("jfk")));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("1\n00:00:", 0), 0u) << r.out;
  r = run_voxrt(transcribe("-f 'srt, vtt' --output-dir " + tmp.path().string() + " " + audio("jfk")));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(tmp / "jfk.srt") && fs::exists(tmp / "jfk.vtt"));
  r = run_voxrt("stream -q -f JSONL --model " + model_dir() + " " + audio("jfk"));
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST(CliNewUser, AMisspeltOptionOrCommandGetsASuggestion) {
  RunResult r = run_voxrt(transcribe("--formt srt " + audio("jfk")));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "unknown option --formt (did you mean --format?)")) << r.err;
  r = run_voxrt("transcibe " + audio("jfk"));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "unknown command 'transcibe' (did you mean transcribe?)")) << r.err;
  r = run_voxrt(transcribe("--bogus " + audio("jfk")));
  EXPECT_FALSE(contains(r.err, "did you mean")) << r.err;
}

TEST(CliNewUser, DecodeAudioWritesTheFormatItsExtensionNames) {
  TempDir tmp;
  RunResult r = run_voxrt("decode-audio -q " + audio("jfk") + " " + (tmp / "heard.flac").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(tmp / "heard.flac").substr(0, 4), "fLaC");
  r = run_voxrt("decode-audio -q " + audio("jfk") + " " + (tmp / "heard.mp3").string());
  if (r.status == 0) {
    const std::string mp3 = slurp(tmp / "heard.mp3");
    EXPECT_TRUE(mp3.substr(0, 3) == "ID3" || (static_cast<unsigned char>(mp3[0]) == 0xFF)) << "not an MP3";
  } else {  // a libsndfile without MP3 writing says so
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "heard.mp3: this build of libsndfile cannot write .mp3")) << r.err;
  }
  r = run_voxrt("decode-audio " + audio("jfk") + " " + (tmp / "heard.xyz").string());
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "heard.xyz: no audio format is named by the extension .xyz")) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "heard.xyz"));
}

}  // namespace
}  // namespace voxrt::test

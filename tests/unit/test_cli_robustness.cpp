// The voxrt command as a careful user tries it (issue 12): every write checked, outputs that never
// replace an input or leave a truncated file, one output per input and format, one error style with
// exit status 2 for usage errors and 1 for failures, values and inputs checked before the model
// loads, empty input as an empty transcript on every route, and bench from any directory. Each test
// is a defect the issue found; it failed before the fix.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "audio_fixtures.h"
#include "cli_run.h"

namespace voxrt::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testutil::TempDir;

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

std::string transcribe(const std::string& args) { return "transcribe -q --model " + model_dir() + " " + args; }

// A model that loads says so on stderr ("voxrt: loaded ..."): a usage error must come before that.
bool loaded(const RunResult& r) { return contains(r.err, "loaded "); }

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

// ---- defect 2: write errors ----

TEST(CliWrites, FullStandardOutputIsAFailureNamingIt) {
  for (const std::string& args : {transcribe(audio("speech_short")), transcribe("-f json " + audio("speech_short")),
                                  std::string("stream -q --model ") + model_dir() + " " + audio("speech_short")}) {
    const RunResult r = run_voxrt(args, {.stdout_to = "/dev/full"});
    EXPECT_EQ(r.status, 1) << args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "voxrt: error: standard output: write failed")) << args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "No space left on device")) << r.err;
  }
}

TEST(CliWrites, FullOutputFileIsAFailureNamingIt) {
  for (const std::string& cmd : {std::string("transcribe"), std::string("stream")}) {
    const RunResult r = run_voxrt(cmd + " -q -o /dev/full --model " + model_dir() + " " + audio("speech_short"));
    EXPECT_EQ(r.status, 1) << cmd << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "/dev/full: write failed")) << cmd << "\n" << r.err;
  }
  const RunResult r = run_voxrt("decode-audio " + audio("speech_short") + " /dev/full");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "/dev/full")) << r.err;
}

// ---- defect 3: outputs never destroy inputs or existing files ----

TEST(CliOutputs, DecodeAudioRefusesToOverwriteItsInput) {
  TempDir tmp;
  const fs::path in = tmp / "in.wav";
  fs::copy_file(audio("speech_short"), in);
  const std::string before = slurp(in);
  RunResult r = run_voxrt("decode-audio " + in.string() + " " + in.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "is the input")) << r.err;
  EXPECT_EQ(slurp(in), before);
  // The same file under another name (a hard link) is the same inode.
  fs::create_hard_link(in, tmp / "link.wav");
  r = run_voxrt("decode-audio " + in.string() + " " + (tmp / "link.wav").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(slurp(in), before);
}

TEST(CliOutputs, TranscribeRefusesAnOutputThatIsAnInput) {
  TempDir tmp;
  const fs::path in = tmp / "talk.wav";
  fs::copy_file(audio("speech_short"), in);
  const std::string before = slurp(in);
  RunResult r = run_voxrt(transcribe("-o " + in.string() + " " + in.string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "is the input")) << r.err;
  EXPECT_FALSE(loaded(r)) << r.err;
  // --output-dir beside the input with a format named like it: talk.wav -> talk.wav is refused too.
  fs::copy_file(audio("speech_short"), tmp / "talk.txt");
  r = run_voxrt(transcribe("--output-dir " + tmp.path().string() + " " + (tmp / "talk.txt").string()));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "it would be overwritten")) << r.err;
  EXPECT_EQ(slurp(in), before);
}

// A FLAC whose header announces frames that are not there: it opens (the checks before the load
// pass) and fails while it is transcribed.
fs::path broken_flac(const TempDir& tmp) {
  const fs::path p = tmp / "broken.flac";
  testutil::write_quiet_noise_flac(p, 16000, 1, 2);
  testutil::cut_flac_after_metadata(p);
  return p;
}

TEST(CliOutputs, AnOutputFileIsLeftAsItWasWhenEveryInputFails) {
  TempDir tmp;
  const fs::path out = tmp / "out.txt";
  write_text(out, "yesterday's transcript\n");
  const RunResult r = run_voxrt(transcribe("-o " + out.string() + " " + broken_flac(tmp).string()));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "broken.flac")) << r.err;
  EXPECT_EQ(slurp(out), "yesterday's transcript\n");
  // No temporary left beside it.
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp.path())) ++files;
  EXPECT_EQ(files, 2);
}

TEST(CliOutputs, OneFailingInputDoesNotStopTheOthers) {
  TempDir tmp;
  const fs::path out = tmp / "out.txt";
  const RunResult r = run_voxrt(transcribe("-o " + out.string() + " " + broken_flac(tmp).string() + " " + audio("speech_short")));
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(slurp(out), "==> " + audio("speech_short") + " <==")) << slurp(out);
}

TEST(CliOutputs, DecodeAudioLeavesAnExistingOutputWhenTheInputFails) {
  TempDir tmp;
  const fs::path out = tmp / "heard.wav";
  write_text(out, "an older file");
  const RunResult r = run_voxrt("decode-audio " + broken_flac(tmp).string() + " " + out.string());
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(slurp(out), "an older file");
}

// Ctrl-C in the middle of `transcribe -o FILE`: the run stops as interrupted, and neither FILE nor
// its temporary is left behind.
TEST(CliOutputs, AnInterruptedRunLeavesNoFileBehind) {
  TempDir tmp;
  const fs::path long_input = tmp / "long.wav", out_dir = tmp / "out";
  testutil::write_sparse_silent_wav(long_input, 16000, 1, 16000ull * 60 * 60);  // an hour: minutes to transcribe
  fs::create_directories(out_dir);
  const std::string exe = voxrt_binary().string(), model = model_dir(), out = (out_dir / "talk.txt").string();
  const pid_t pid = fork();
  if (pid == 0) {
    const int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0), dup2(devnull, 1), dup2(devnull, 2);
    execl(exe.c_str(), exe.c_str(), "transcribe", "-q", "-t", "1", "--model", model.c_str(), "-o", out.c_str(),
          long_input.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  // The temporary appears before the model loads; then the hour of audio takes its time.
  auto entries = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(out_dir)) names.push_back(e.path().filename().string());
    return names;
  };
  for (int i = 0; i < 1000 && entries().empty(); ++i) usleep(10'000);
  ASSERT_EQ(entries().size(), 1u) << "no temporary output appeared";
  EXPECT_TRUE(entries()[0].starts_with(".talk.txt.") && entries()[0].ends_with(".part")) << entries()[0];
  usleep(200'000);  // inside the transcription
  kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited with " << WEXITSTATUS(status) << " before the signal";
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_TRUE(entries().empty()) << entries()[0];
}

// ---- defect 4: one output per input and format ----

TEST(CliOutputs, OutputDirWritesAFilePerInputAndFormat) {
  TempDir tmp;
  const fs::path dir = tmp / "subs";  // created by the command
  const RunResult r = run_voxrt(transcribe("-f srt,vtt,json --output-dir " + dir.string() + " " + audio("speech_short") +
                                           " " + audio("jfk")));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  for (const std::string stem : {"speech_short", "jfk"}) {
    const std::string srt = slurp(dir / (stem + ".srt")), vtt = slurp(dir / (stem + ".vtt"));
    EXPECT_EQ(srt.rfind("1\n00:00:", 0), 0u) << stem << ":\n" << srt;
    EXPECT_EQ(vtt.rfind("WEBVTT\n\n", 0), 0u) << stem << ":\n" << vtt;
    EXPECT_EQ(vtt.find("WEBVTT", 1), std::string::npos) << "one header a file";
    const json j = json::parse(slurp(dir / (stem + ".json")));
    EXPECT_TRUE(j["file"].get<std::string>().ends_with(stem + ".wav")) << j.dump();
  }
}

TEST(CliOutputs, SeveralInputsInOneSubtitleFileAreRefused) {
  for (const char* f : {"srt", "vtt"}) {
    const RunResult r = run_voxrt(transcribe(std::string("-f ") + f + " " + audio("speech_short") + " " + audio("jfk")));
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "--output-dir")) << r.err;
    EXPECT_FALSE(loaded(r));
  }
  const RunResult r = run_voxrt(transcribe("-f srt,json " + audio("speech_short")));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "several formats need --output-dir")) << r.err;
}

TEST(CliOutputs, SeveralTxtInputsAreNamed) {
  const RunResult r = run_voxrt(transcribe(audio("speech_short") + " " + audio("jfk")));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("==> " + audio("speech_short") + " <==\n", 0), 0u) << r.out;
  EXPECT_TRUE(contains(r.out, "\n==> " + audio("jfk") + " <==\n")) << r.out;
}

TEST(CliOutputs, InputsThatWouldWriteTheSameFileAreRefused) {
  TempDir tmp;
  fs::create_directories(tmp / "a");
  fs::create_directories(tmp / "b");
  fs::copy_file(audio("speech_short"), tmp / "a" / "talk.wav");
  fs::copy_file(audio("jfk"), tmp / "b" / "talk.wav");
  const RunResult r = run_voxrt(transcribe("--output-dir " + (tmp / "out").string() + " " + (tmp / "a" / "talk.wav").string() +
                                           " " + (tmp / "b" / "talk.wav").string()));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "would both write")) << r.err;
}

// ---- defect 5: one error style, exit 2 for the command line, 1 for failures ----

TEST(CliErrors, CommandLineMistakesExit2WithOneStyleAndAHint) {
  struct Case {
    std::string args, message, hint;
  };
  for (const Case& c : std::vector<Case>{
           {"frobnicate", "voxrt: error: unknown command 'frobnicate'", "voxrt: see `voxrt --help`"},
           {"-V", "voxrt: error: unknown option -V", "voxrt: see `voxrt --help`"},
           {"transcribe", "voxrt: error: no inputs", "voxrt: see `voxrt transcribe --help`"},
           {"transcribe --bogus x.wav", "voxrt: error: unknown option --bogus", "voxrt: see `voxrt transcribe --help`"},
           {"stream --chunk-ms", "voxrt: error: --chunk-ms", "voxrt: see `voxrt stream --help`"},
           {"bench --passes many", "voxrt: error: --passes", "voxrt: see `voxrt bench --help`"},
           {"bench --steps many", "voxrt: error: --steps", "voxrt: see `voxrt bench --help`"},
       }) {
    const RunResult r = run_voxrt(c.args);
    EXPECT_EQ(r.status, 2) << "voxrt " << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind(c.message, 0), 0u) << "voxrt " << c.args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.hint)) << "voxrt " << c.args << "\n" << r.err;
  }
}

TEST(CliErrors, AnOutputThatCannotBeMadeIsNamedBeforeLoading) {
  const RunResult r = run_voxrt(transcribe("-o /nonexistent/dir/x.txt " + audio("jfk")));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "voxrt: error: /nonexistent/dir/x.txt: cannot create a file in /nonexistent/dir: No such file or directory\n");
}

TEST(CliErrors, HelpAndVersionExit0) {
  for (const char* args : {"--help", "transcribe --help", "--version"}) {
    const RunResult r = run_voxrt(args);
    EXPECT_EQ(r.status, 0) << args << "\n" << r.err;
    EXPECT_FALSE(r.out.empty()) << args;
  }
}

TEST(CliErrors, StreamAcceptsAnOutputFile) {
  TempDir tmp;
  const RunResult r = run_voxrt("stream -q -o " + (tmp / "live.txt").string() + " --model " + model_dir() + " " + audio("speech_short"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(slurp(tmp / "live.txt").empty());
}

// ---- defect 6: values that mean nothing, refused before anything loads ----

TEST(CliValues, EveryValueIsCheckedBeforeTheModelLoads) {
  struct Case {
    std::string args, message;
  };
  const std::string m = " --model " + model_dir() + " ";
  const std::string in = audio("speech_short");
  for (const Case& c : std::vector<Case>{
           {"transcribe --delay-ms 0" + m + in, "--delay-ms 0"},
           {"transcribe --delay-ms 500" + m + in, "--delay-ms 500"},
           {"transcribe -t -5" + m + in, "--threads -5"},
           {"transcribe -t 0" + m + in, "--threads 0"},
           {"transcribe -t 100000" + m + in, "--threads 100000"},
           {"transcribe --draft-rows -1" + m + in, "--draft-rows -1"},
           {"transcribe --device tpu" + m + in, "--device tpu"},
           {"transcribe --layout gguf" + m + in, "--layout gguf"},
           {"transcribe -f srt --max-line-chars 5" + m + in, "--max-line-chars 5"},
           {"transcribe -f srt --max-cue-seconds 0" + m + in, "--max-cue-seconds"},
           {"transcribe -f json --timestamps" + m + in, "--timestamps applies to --format txt"},
           {"transcribe -o a.txt --output-dir d" + m + in, "-o and --output-dir"},
           {"stream --rate 8000" + m + in, "--rate describes headerless input"},
           {"stream --channels 2" + m + in, "--channels describes headerless input"},
           {"stream --realtime" + m + "-", "--realtime paces a file input"},
           {"stream --chunk-ms 0" + m + in, "--chunk-ms 0"},
           {"stream --raw s16le --rate 0" + m + in, "--rate 0"},
           {"bench --offline-seconds -3" + m, "--offline-seconds -3"},
           {"bench --offline-seconds 0" + m, "--offline-seconds 0"},
           {"bench --find-capacity" + m, "--find-capacity needs --streams"},
           {"bench --max-sessions -1" + m, "--max-sessions -1"},
           {"bench --max-memory 12XB" + m, "--max-memory 12XB"},
           {"bench --max-memory -4GB" + m, "--max-memory -4GB"},
           {"bench --max-memory 1.5" + m, "--max-memory 1.5"},
           {"bench --max-session-seconds -1" + m, "--max-session-seconds"},
           {"transcribe --kv fp4" + m + in, "--kv fp4"},
           {"bench --streams 2 --offline-batch 2" + m, "--streams and --offline-batch"},
           {"bench --streams -1" + m, "--streams -1"},
           {"bench --streams 2 --stream-seconds 5 --measure-seconds 10" + m, "--stream-seconds"},
           {"bench --figures foo" + m, "--figures foo"},
           {"bench --attention-streams 0" + m, "--attention-streams 0"},
           {"bench --passes 0" + m, "--passes 0"},
           {"bench --steps 0" + m, "--steps 0"},
           {"bench --steps 2 --passes 2" + m, "--steps and --passes: give one of them"},
           {"pull --layout gguf --endpoint http://127.0.0.1:1", "--layout gguf"},
       }) {
    const RunResult r = run_voxrt(c.args);
    EXPECT_EQ(r.status, 2) << "voxrt " << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("voxrt: error: ", 0), 0u) << "voxrt " << c.args << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.message)) << "voxrt " << c.args << "\n" << r.err;
    EXPECT_FALSE(loaded(r)) << "voxrt " << c.args << " loaded the model first:\n" << r.err;
  }
}

// ---- defect 7: a model directory that is not one, inputs checked before the load ----

TEST(CliInputs, AModelPathThatIsNoDirectoryIsNamed) {
  RunResult r = run_voxrt("transcribe -m /nonexistent " + audio("speech_short"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "voxrt: error: --model /nonexistent: no such directory\n");
  r = run_voxrt("transcribe -m " + audio("jfk") + " " + audio("speech_short"));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "--model " + audio("jfk") + ": not a directory")) << r.err;
  EXPECT_FALSE(contains(r.err, "tekken.json: ")) << r.err;
}

TEST(CliInputs, BadInputsAreFoundBeforeTheModelLoads) {
  TempDir tmp;
  write_text(tmp / "notes.txt", "not audio\n");
  RunResult r = run_voxrt("transcribe --model " + model_dir() + " /no/such.wav");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "voxrt: error: /no/such.wav: no such file\n");
  r = run_voxrt("transcribe --model " + model_dir() + " " + (tmp / "notes.txt").string());
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "notes.txt: cannot decode audio")) << r.err;
  EXPECT_FALSE(loaded(r)) << r.err;
  // Every bad input is reported at once, before the load; the readable one still runs.
  r = run_voxrt("transcribe --model " + model_dir() + " /no/a.wav " + audio("jfk") + " /no/b.wav");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "/no/a.wav: no such file") && contains(r.err, "/no/b.wav: no such file")) << r.err;
  EXPECT_LT(r.err.find("/no/b.wav: no such file"), r.err.find("loaded ")) << r.err;
  EXPECT_TRUE(contains(r.err, "2 of 3 inputs failed")) << r.err;
  EXPECT_TRUE(contains(r.out, "==> " + audio("jfk") + " <==")) << r.out;
  r = run_voxrt("stream --model " + model_dir() + " " + tmp.path().string());
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "is a directory, not an audio file")) << r.err;
  EXPECT_FALSE(loaded(r)) << r.err;
}

// ---- defect 8: empty input is an empty transcript, on every route ----

TEST(CliEmptyInput, IsAnEmptyTranscriptWithANoteOnEveryRoute) {
  TempDir tmp;
  const fs::path empty = tmp / "empty.wav";
  testutil::write_sparse_silent_wav(empty, 16000, 1, 0);
  struct Route {
    std::string args;
    RunOptions options;
  };
  const std::string m = " --model " + model_dir() + " ";
  for (const Route& route : std::vector<Route>{
           {"transcribe -f json" + m + empty.string(), {}},
           {"stream -f json" + m + empty.string(), {}},
           {"stream -f json" + m + "-", {.stdin_from = empty.string()}},
       }) {
    const RunResult r = run_voxrt(route.args, route.options);
    ASSERT_EQ(r.status, 0) << route.args << "\n" << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["text"], "") << route.args;
    EXPECT_TRUE(j["tokens"].empty()) << route.args << ": " << j["tokens"].dump();
    EXPECT_TRUE(j["segments"].empty()) << route.args;
    EXPECT_EQ(j["duration"], 0.0) << route.args;
    EXPECT_TRUE(contains(r.err, "no audio (0 samples): the transcript is empty")) << route.args << "\n" << r.err;
  }
}

// ---- defect 9: bench from any directory ----

TEST(CliBench, RunsFromAnotherDirectoryAndWritesThere) {
  TempDir cwd;
  const RunResult r = run_voxrt("bench -q --figures decoder --passes 2 --model " + model_dir(), {.cwd = cwd.path().string()});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<fs::path> written;
  for (const auto& e : fs::directory_iterator(cwd.path())) written.push_back(e.path());
  ASSERT_EQ(written.size(), 1u) << "the result goes into the current directory";
  const json j = json::parse(slurp(written[0]));
  EXPECT_TRUE(j.dump().find("jfk.wav") != std::string::npos) << "the default recording is found next to the program";
}

// ---- defect 12: printed times rounded ----

TEST(CliMessages, LoadTimeIsRounded) {
  const RunResult r = run_voxrt("transcribe --model " + model_dir() + " " + audio("speech_short"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(loaded .* in [0-9]+\.[0-9]{2} s\n)"))) << r.err;
}

TEST(CliMessages, JsonlTimesAreWholeMilliseconds) {
  const RunResult r = run_voxrt("stream -q -f jsonl --model " + model_dir() + " " + audio("jfk"));
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  int checked = 0;
  for (std::string line; std::getline(lines, line);) {
    const json e = json::parse(line);
    for (const char* key : {"start", "end", "duration"})
      if (e.contains(key)) {
        const double v = e[key].get<double>();
        EXPECT_EQ(v, std::round(v * 1000) / 1000) << line;
        ++checked;
      }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace voxrt::test

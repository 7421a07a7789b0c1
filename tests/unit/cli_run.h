// Running the voxrt command from a test: through the shell (so that a test can redirect its output
// to /dev/full or run it from another directory), with its exit status, standard output and
// standard error; and `voxrt bench` with its result parsed. Shared by the command-line tests.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "test_paths.h"

namespace voxrt::test {

struct RunResult {
  int status = -1;  // exit status, or 128 + signal
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Single quotes for the shell.
inline std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct RunOptions {
  std::string stdout_to;  // a path standard output goes to instead of being captured (/dev/full)
  std::string cwd;        // the directory it runs in (default: the test's)
  std::string stdin_from = "/dev/null";
};

// `voxrt ARGS` (ARGS as the shell splits them).
inline RunResult run_voxrt(const std::string& args, const RunOptions& o = {}) {
  testutil::TempDir tmp;
  const std::string out = o.stdout_to.empty() ? (tmp / "out").string() : o.stdout_to;
  std::string cmd = voxrt_binary().string() + " " + args + " >" + quoted(out) + " 2>" + quoted((tmp / "err").string()) +
                    " <" + quoted(o.stdin_from);
  if (!o.cwd.empty()) cmd = "cd " + quoted(o.cwd) + " && " + cmd;
  const int raw = std::system(cmd.c_str());
  RunResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  if (o.stdout_to.empty()) r.out = slurp(tmp / "out");
  r.err = slurp(tmp / "err");
  return r;
}

inline std::string model_dir() { return (test_data() / "tiny" / "mistral").string(); }
inline std::string audio(const std::string& name) { return (test_data() / "audio" / (name + ".wav")).string(); }

// Runs `voxrt bench ARGS` on the tiny model and speech_short, checks it succeeded and printed
// `printed`, and parses the one result file it wrote into out (fatal failures otherwise: call it
// inside ASSERT_NO_FATAL_FAILURE).
inline void run_bench(const std::string& args, const char* printed, nlohmann::json& out) {
  testutil::TempDir tmp;
  const RunResult r = run_voxrt("bench -q " + args + " --model " + model_dir() + " --audio " + audio("speech_short") +
                                " --out " + tmp.path().string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find(printed), std::string::npos) << r.out;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  out = nlohmann::json::parse(slurp(files[0]));
}

}  // namespace voxrt::test

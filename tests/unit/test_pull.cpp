// Tests for `voxrt pull` against a fake hub served from a temp directory by LocalHttpServer. The
// tree listing is computed here (sha256 for the LFS file, git blob sha1 for the small ones) with
// OpenSSL directly, independent of the code under test.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>

#include "common/error.h"
#include "hub/progress.h"
#include "hub/pull.h"
#include "hub/sha.h"
#include "cli_run.h"
#include "local_http_server.h"

namespace voxrt {
namespace {

namespace fs = std::filesystem;
using test::LocalHttpServer;

const std::string kRepo = "mistralai/Voxtral-Mini-4B-Realtime-2602";
const std::string kResolve = "/" + kRepo + "/resolve/main/";
const std::string kTree = "/api/models/" + kRepo + "/tree/main";
constexpr size_t kWeightsSize = 3 * 1000 * 1000 + 17;

std::string hex_digest(const EVP_MD* md, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, md, nullptr);
  std::ostringstream hex;
  for (unsigned int i = 0; i < len; ++i) hex << std::hex << (out[i] >> 4) << (out[i] & 15);
  return hex.str();
}

std::string sha256(const std::string& data) { return hex_digest(EVP_sha256(), data); }
std::string git_blob_sha1(const std::string& data) {
  return hex_digest(EVP_sha1(), "blob " + std::to_string(data.size()) + std::string(1, '\0') + data);
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const fs::path& p, const std::string& data) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << data;
}

std::string random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t r = rng();
    std::memcpy(s.data() + i, &r, std::min<size_t>(8, n - i));
  }
  return s;
}

// A port nothing listens on: bind an ephemeral one, then close it.
uint16_t closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Runs `fn`, expects a voxrt::Error and returns its message.
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected voxrt::Error";
  return {};
}

class PullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The client must talk to the local server directly, whatever the developer's shell holds.
    ::setenv("no_proxy", "127.0.0.1,localhost", 1);
    ::unsetenv("HF_TOKEN");
    ::unsetenv("HF_ENDPOINT");
    tmp_ = fs::temp_directory_path() /
           ("voxrt_pull_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(tmp_);
    files_ = {{"params.json", R"({"dim": 3072, "n_layers": 26})"},
              {"tekken.json", R"({"vocab": ["a", "b"]})"},
              {"consolidated.safetensors", random_bytes(kWeightsSize, 42)}};
    publish();
    server_ = std::make_unique<LocalHttpServer>(tmp_ / "server");
  }

  void TearDown() override {
    server_.reset();
    fs::remove_all(tmp_);
  }

  // Writes the repo files and the tree listing the hub would send for them.
  void publish() {
    std::string tree = "[";
    for (const auto& [name, data] : files_) {
      write_all(tmp_ / "server" / kResolve.substr(1) / name, data);
      if (tree.size() > 1) tree += ",";
      tree += R"({"type":"file","path":")" + name + R"(","size":)" + std::to_string(data.size()) +
              R"(,"oid":")" + git_blob_sha1(name.ends_with(".safetensors") ? "pointer" : data) + "\"";
      if (name.ends_with(".safetensors")) {
        tree += R"(,"lfs":{"oid":")" + sha256(data) + R"(","size":)" + std::to_string(data.size()) +
                R"(,"pointerSize":134})";
      }
      tree += "}";
    }
    tree += R"(,{"type":"directory","path":"docs","oid":"0000000000000000000000000000000000000000","size":0}])";
    write_all(tmp_ / "server" / kTree.substr(1), tree);
  }

  fs::path served(const std::string& name) const { return tmp_ / "server" / kResolve.substr(1) / name; }
  fs::path model_dir() const { return tmp_ / "models"; }

  PullOptions options() const {
    PullOptions o;
    o.repo = kRepo;
    o.dir = model_dir();
    o.endpoint = server_->url();
    o.progress = false;
    o.connect_timeout_s = 5;
    return o;
  }

  void expect_complete_download() {
    for (const auto& [name, data] : files_) {
      EXPECT_EQ(read_all(model_dir() / name), data) << name;
      EXPECT_FALSE(fs::exists(model_dir() / (name + ".part"))) << name;
    }
  }

  fs::path tmp_;
  std::map<std::string, std::string> files_;
  std::unique_ptr<LocalHttpServer> server_;
  std::ostringstream log_;
};

TEST_F(PullTest, DownloadsAllFilesWithCorrectContents) {
  fs::path dir = pull_model(options(), log_);
  EXPECT_EQ(dir, model_dir());
  expect_complete_download();
  EXPECT_EQ(server_->count(kTree), 1);
  EXPECT_NE(log_.str().find("consolidated.safetensors: downloaded, sha256 verified"), std::string::npos)
      << log_.str();
  EXPECT_NE(log_.str().find("params.json: downloaded, sha1 verified"), std::string::npos) << log_.str();
}

// `voxrt pull` with standard error to a file (a log, CI): the per-file lines, and no progress bar
// whose '\r' redraws would fill the log (issue 33).
TEST_F(PullTest, TheCommandWritesNoCarriageReturnsIntoALog) {
  const test::RunResult r = test::run_voxrt("pull " + kRepo + " --endpoint " + server_->url() + " --dir " + model_dir().string());
  ASSERT_EQ(r.status, 0) << r.err;
  expect_complete_download();
  EXPECT_NE(r.err.find("consolidated.safetensors: downloaded"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
}

TEST_F(PullTest, ResumesAfterInterruptedDownload) {
  const std::string weights = kResolve + "consolidated.safetensors";
  server_->fail_after(weights, 1000000);
  std::string msg = error_of([&] { pull_model(options(), log_); });
  EXPECT_NE(msg.find("consolidated.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("resume"), std::string::npos) << msg;
  fs::path part = model_dir() / "consolidated.safetensors.part";
  ASSERT_TRUE(fs::exists(part));
  uintmax_t kept = fs::file_size(part);
  EXPECT_GT(kept, 0u);
  EXPECT_LE(kept, 1000000u);
  EXPECT_FALSE(fs::exists(model_dir() / "consolidated.safetensors"));

  pull_model(options(), log_);
  expect_complete_download();
  auto requests = server_->requests();
  ASSERT_FALSE(requests.empty());
  bool resumed = false;
  for (const auto& r : requests) resumed |= r.path == weights && r.range == "bytes=" + std::to_string(kept) + "-";
  EXPECT_TRUE(resumed) << "no Range request for the kept part";
  EXPECT_NE(log_.str().find("params.json: already present"), std::string::npos) << log_.str();
}

TEST_F(PullTest, ServerIgnoringRangeRestartsFromZero) {
  server_->ignore_ranges(true);
  write_all(model_dir() / "consolidated.safetensors.part", files_["consolidated.safetensors"].substr(0, 5000));
  pull_model(options(), log_);
  expect_complete_download();
}

TEST_F(PullTest, OversizedPartIsDiscarded) {
  write_all(model_dir() / "tekken.json.part", std::string(1000, 'x'));
  pull_model(options(), log_);
  expect_complete_download();
}

TEST_F(PullTest, CorruptServerFileFailsSha256AndLeavesNothing) {
  std::string bad = files_["consolidated.safetensors"];
  bad[bad.size() / 2] ^= 0x5a;
  write_all(served("consolidated.safetensors"), bad);
  std::string msg = error_of([&] { pull_model(options(), log_); });
  std::string expected = "consolidated.safetensors: sha256 mismatch: expected " +
                         sha256(files_["consolidated.safetensors"]) + ", got " + sha256(bad);
  EXPECT_NE(msg.find(expected), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(model_dir() / "consolidated.safetensors"));
  EXPECT_FALSE(fs::exists(model_dir() / "consolidated.safetensors.part"));
}

TEST_F(PullTest, CorruptSmallFileFailsGitBlobSha1) {
  std::string bad = files_["tekken.json"];
  bad[0] = '[';
  write_all(served("tekken.json"), bad);
  std::string msg = error_of([&] { pull_model(options(), log_); });
  EXPECT_NE(msg.find("tekken.json: sha1 mismatch: expected " + git_blob_sha1(files_["tekken.json"])),
            std::string::npos)
      << msg;
  EXPECT_FALSE(fs::exists(model_dir() / "tekken.json"));
}

TEST_F(PullTest, FileMissingFromListingNamesFileAndRepo) {
  PullOptions o = options();
  o.files = {"params.json", "nonexistent.bin"};
  std::string msg = error_of([&] { pull_model(o, log_); });
  EXPECT_NE(msg.find("nonexistent.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find(kRepo), std::string::npos) << msg;
  EXPECT_EQ(server_->count(kResolve + "params.json"), 0) << "checked before downloading anything";
}

TEST_F(PullTest, NotFoundNamesTheUrl) {
  fs::remove(served("tekken.json"));
  std::string msg = error_of([&] { pull_model(options(), log_); });
  EXPECT_NE(msg.find("404"), std::string::npos) << msg;
  EXPECT_NE(msg.find(server_->url() + kResolve + "tekken.json"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(model_dir() / "tekken.json.part"));
}

TEST_F(PullTest, UnknownRevisionNamesTheListingUrl) {
  PullOptions o = options();
  o.revision = "no-such-branch";
  std::string msg = error_of([&] { pull_model(o, log_); });
  EXPECT_NE(msg.find(server_->url() + "/api/models/" + kRepo + "/tree/no-such-branch"), std::string::npos)
      << msg;
  EXPECT_FALSE(fs::exists(model_dir())) << "nothing is created before the hub answers";
}

TEST_F(PullTest, AccessDeniedMentionsHfToken) {
  server_->respond_status(kTree, 401);
  std::string msg = error_of([&] { pull_model(options(), log_); });
  EXPECT_NE(msg.find("401"), std::string::npos) << msg;
  EXPECT_NE(msg.find("HF_TOKEN"), std::string::npos) << msg;
}

TEST_F(PullTest, UnreachableEndpointFailsFast) {
  PullOptions o = options();
  o.endpoint = "http://127.0.0.1:" + std::to_string(closed_port());
  auto start = std::chrono::steady_clock::now();
  std::string msg = error_of([&] { pull_model(o, log_); });
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 20.0);
  EXPECT_NE(msg.find("cannot reach " + o.endpoint), std::string::npos) << msg;
  // The address came from --endpoint: the hint names it, not HF_ENDPOINT (which was not set).
  EXPECT_NE(msg.find("wrong --endpoint?"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("HF_ENDPOINT"), std::string::npos) << msg;
}

TEST_F(PullTest, UnreachableHfEndpointIsNamed) {
  PullOptions o = options();
  o.endpoint.clear();
  const std::string url = "http://127.0.0.1:" + std::to_string(closed_port());
  ::setenv("HF_ENDPOINT", url.c_str(), 1);
  std::string msg = error_of([&] { pull_model(o, log_); });
  ::unsetenv("HF_ENDPOINT");
  EXPECT_NE(msg.find("wrong HF_ENDPOINT=" + url + "?"), std::string::npos) << msg;
}

TEST_F(PullTest, HfEndpointEnvironmentIsUsed) {
  PullOptions o = options();
  o.endpoint.clear();
  ::setenv("HF_ENDPOINT", (server_->url() + "/").c_str(), 1);
  pull_model(o, log_);
  ::unsetenv("HF_ENDPOINT");
  expect_complete_download();
}

TEST_F(PullTest, CompleteFilesAreSkipped) {
  pull_model(options(), log_);
  log_.str("");
  pull_model(options(), log_);
  for (const auto& [name, data] : files_) {
    EXPECT_EQ(server_->count(kResolve + name), 1) << name << " downloaded again";
    EXPECT_NE(log_.str().find(name + ": already present"), std::string::npos) << log_.str();
  }
  EXPECT_EQ(server_->count(kTree), 2);
}

TEST_F(PullTest, ChangedLocalFileIsDownloadedAgain) {
  pull_model(options(), log_);
  write_all(model_dir() / "params.json", "{}");
  pull_model(options(), log_);
  expect_complete_download();
  EXPECT_EQ(server_->count(kResolve + "params.json"), 2);
}

TEST_F(PullTest, SendsTokenAndFollowsRedirects) {
  // The hub answers LFS downloads with a redirect to its CDN.
  write_all(tmp_ / "server" / "cdn" / "blob", files_["consolidated.safetensors"]);
  server_->redirect(kResolve + "consolidated.safetensors", server_->url() + "/cdn/blob");
  ::setenv("HF_TOKEN", "hf_test_token\n", 1);
  pull_model(options(), log_);
  ::unsetenv("HF_TOKEN");
  expect_complete_download();
  EXPECT_EQ(server_->count("/cdn/blob"), 1);
  for (const auto& r : server_->requests()) {
    if (r.path == kTree) {
      EXPECT_EQ(r.authorization, "Bearer hf_test_token");
    }
  }
}

TEST_F(PullTest, ProgressBarIsDrawn) {
  PullOptions o = options();
  o.progress = true;
  pull_model(o, log_);
  const std::string out = log_.str();
  EXPECT_NE(out.find("\rconsolidated.safetensors  100.0%  3.0/3.0 MB"), std::string::npos) << out;
  EXPECT_NE(out.find("MB/s"), std::string::npos) << out;
}

TEST_F(PullTest, RejectsFileNamesLeavingTheDirectory) {
  PullOptions o = options();
  o.files = {"../evil"};
  std::string msg = error_of([&] { pull_model(o, log_); });
  EXPECT_NE(msg.find("../evil"), std::string::npos) << msg;
}

// Saves and restores the variables default_model_dir reads.
class PullDefaultDir : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVars) {
      const char* v = std::getenv(name);
      saved_.push_back(v ? std::optional<std::string>(v) : std::nullopt);
    }
  }
  void TearDown() override {
    for (size_t i = 0; i < std::size(kVars); ++i) {
      if (saved_[i]) ::setenv(kVars[i], saved_[i]->c_str(), 1);
      else ::unsetenv(kVars[i]);
    }
  }
  static constexpr const char* kVars[] = {"VOXRT_MODELS", "XDG_CACHE_HOME", "HOME"};
  std::vector<std::optional<std::string>> saved_;
};

TEST_F(PullDefaultDir, FollowsTheEnvironmentInOrder) {
  ::setenv("VOXRT_MODELS", "/models", 1);
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(default_model_dir(kRepo), fs::path("/models/mistralai--Voxtral-Mini-4B-Realtime-2602"));
  ::unsetenv("VOXRT_MODELS");
  EXPECT_EQ(default_model_dir(kRepo), fs::path("/xdg/voxrt/mistralai--Voxtral-Mini-4B-Realtime-2602"));
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(default_model_dir(kRepo), fs::path("/home/u/.cache/voxrt/mistralai--Voxtral-Mini-4B-Realtime-2602"));
  ::unsetenv("HOME");
  EXPECT_THROW(default_model_dir(kRepo), Error);
}

TEST_F(PullDefaultDir, RejectsMalformedRepoIds) {
  ::setenv("VOXRT_MODELS", "/models", 1);
  EXPECT_THROW(default_model_dir("../etc"), Error);
  EXPECT_THROW(default_model_dir("a/b/c"), Error);
  EXPECT_THROW(default_model_dir(""), Error);
}

TEST(PullDigest, MatchesKnownVectors) {
  hub::Digest d = hub::Digest::sha256();
  d.update("abc");
  EXPECT_EQ(d.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  hub::Digest s = hub::Digest::sha1();
  s.update("ab");
  s.update("c");
  EXPECT_EQ(s.hex(), "a9993e364706816aba3e25717850c26c9cd0d89d");
  s.reset();
  EXPECT_EQ(s.hex(), "da39a3ee5e6b4b0d3255bfef95601890afd80709");  // sha1 of nothing
}

TEST(PullProgress, FormatsDurations) {
  EXPECT_EQ(hub::format_duration(12.2), "12s");
  EXPECT_EQ(hub::format_duration(171), "2m51s");
  EXPECT_EQ(hub::format_duration(3720), "1h02m");
}

}  // namespace
}  // namespace voxrt

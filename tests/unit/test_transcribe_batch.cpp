// Several files side by side (Engine::transcribe_each / transcribe_batch, `voxrt transcribe` with
// several inputs; issue 13, item 5): each transcript equals transcribe_file's, results come in
// input order whatever order the files finish in, a file that fails is reported while the others
// go on, and an error in the caller's handler stops the run. The ordering and the bound on results
// waiting for a slow earlier file are tested on run_ordered_batch itself.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "../test_paths.h"
#include "audio/audio_file.h"
#include "cli_run.h"
#include "engine/ordered_batch.h"
#include "temp_dir.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

namespace fs = std::filesystem;

Engine& engine() {
  static std::unique_ptr<Engine> e = Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .threads = 1});
  return *e;
}

void expect_same(const Transcript& a, const Transcript& b) {
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.duration, b.duration);
  EXPECT_EQ(a.eos, b.eos);
}

TEST(TranscribeBatch, EachFileEqualsItsTranscriptionAloneInInputOrder) {
  testutil::TempDir dir;
  const fs::path broken = dir / "broken.wav";
  std::ofstream(broken) << "RIFF but not really";
  const std::vector<fs::path> files{test_data() / "audio" / "jfk.wav", test_data() / "audio" / "odd_length.wav", broken,
                                    test_data() / "audio" / "speech_short.wav", test_data() / "audio" / "stereo_44k.wav",
                                    test_data() / "audio" / "speech_to_end.wav"};
  const std::vector<BatchItem> items = engine().transcribe_batch(files, {}, 3);
  ASSERT_EQ(items.size(), files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(files[i].string());
    EXPECT_EQ(items[i].index, i);
    EXPECT_EQ(items[i].file, files[i]);
    if (files[i] == broken) {
      EXPECT_FALSE(items[i].ok());
      EXPECT_NE(items[i].error.find("broken.wav"), std::string::npos) << items[i].error;
      continue;
    }
    ASSERT_TRUE(items[i].ok()) << items[i].error;
    EXPECT_FALSE(items[i].transcript.tokens.empty());
    expect_same(items[i].transcript, engine().transcribe_file(files[i]));
  }
}

TEST(TranscribeBatch, AnErrorInTheHandlerStopsTheRunAndIsRethrown) {
  std::vector<fs::path> files(12, test_data() / "audio" / "odd_length.wav");
  int delivered = 0;
  EXPECT_THROW(engine().transcribe_each(
                   files, {},
                   [&](BatchItem& item) {
                     ++delivered;
                     if (item.index == 2) throw Error("disk full");
                   },
                   2),
               Error);
  EXPECT_EQ(delivered, 3);
  EXPECT_THROW(engine().transcribe_each(files, {}, [](BatchItem&) {}, -1), Error);
}

TEST(OrderedBatch, ResultsComeInOrderAndWorkersStayWithinTheWindow) {
  constexpr size_t n = 40, window = 5;
  std::atomic<size_t> started{0}, max_ahead{0};
  std::atomic<size_t> delivered{0};
  std::vector<size_t> order;
  run_ordered_batch(
      n, 4, window,
      [&](size_t i) {
        started.fetch_add(1);
        const size_t ahead = i - delivered.load();
        size_t seen = max_ahead.load();
        while (ahead > seen && !max_ahead.compare_exchange_weak(seen, ahead)) {
        }
        // Job 0 is the slow one: the others finish first and must wait for it.
        std::this_thread::sleep_for(std::chrono::milliseconds(i == 0 ? 80 : i % 3));
        BatchItem item;
        item.index = i;
        return item;
      },
      [&](BatchItem& item) {
        order.push_back(item.index);
        delivered.fetch_add(1);
      });
  ASSERT_EQ(order.size(), n);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(order[i], i);
  EXPECT_LT(max_ahead.load(), window) << "a job started more than the window ahead of the next result";
  EXPECT_EQ(started.load(), n);
}

TEST(TranscribeCli, DirectoriesAndInputListsGoSideBySideAndEqualOneAtATime) {
  testutil::TempDir dir;
  const fs::path audio_dir = dir / "audio";
  fs::create_directories(audio_dir / "nested");
  for (const char* name : {"jfk", "speech_short", "odd_length"}) fs::copy_file(audio(name), audio_dir / (std::string(name) + ".wav"));
  fs::copy_file(audio("speech_to_end"), audio_dir / "nested" / "skipped.wav");  // not descended into
  std::ofstream(audio_dir / "notes.txt") << "not audio";                          // not an audio name
  const fs::path list = dir / "list.txt";
  std::ofstream(list) << "# the same files, listed\n\n" << (audio_dir / "jfk.wav").string() << "\n  "
                      << (audio_dir / "odd_length.wav").string() << "  \n" << (audio_dir / "speech_short.wav").string() << "\n";

  const RunResult one_by_one = run_voxrt("transcribe -q -m " + model_dir() + " --batch 1 " + quoted(audio_dir.string()));
  ASSERT_EQ(one_by_one.status, 0) << one_by_one.err;
  for (const char* name : {"jfk.wav <==", "odd_length.wav <==", "speech_short.wav <=="})
    EXPECT_NE(one_by_one.out.find(name), std::string::npos) << one_by_one.out;
  EXPECT_EQ(one_by_one.out.find("skipped.wav"), std::string::npos);
  EXPECT_LT(one_by_one.out.find("jfk.wav <=="), one_by_one.out.find("odd_length.wav <=="));  // sorted

  const RunResult batched = run_voxrt("transcribe -q -m " + model_dir() + " --batch 3 --input-list " + quoted(list.string()));
  ASSERT_EQ(batched.status, 0) << batched.err;
  EXPECT_EQ(batched.out, one_by_one.out);

  fs::create_directories(dir / "empty");
  const RunResult no_audio = run_voxrt("transcribe -q -m " + model_dir() + " " + quoted((dir / "empty").string()));
  EXPECT_EQ(no_audio.status, 1);
  EXPECT_NE(no_audio.err.find("a directory without audio files"), std::string::npos) << no_audio.err;
  const RunResult missing_list = run_voxrt("transcribe -q -m " + model_dir() + " --input-list " + quoted((dir / "nope.txt").string()));
  EXPECT_EQ(missing_list.status, 1);
  EXPECT_NE(missing_list.err.find("nope.txt: cannot open it"), std::string::npos) << missing_list.err;
  const RunResult bad_batch = run_voxrt("transcribe -q -m " + model_dir() + " --batch -2 " + quoted(audio("jfk")));
  EXPECT_EQ(bad_batch.status, 2) << bad_batch.err;
}

}  // namespace
}  // namespace voxrt::test

// What a caller that serves others needs from a transcription (issue 32): a bounded wait for room
// (then a BusyError), a cancellation that stops the work between pieces of the audio and frees its
// session, a limit on the audio's length checked from the file's header before any model work,
// errors typed by whose fault they are, the model's events as its steps run, and the engine's
// room and progress in its stats.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>
#include <span>
#include <string>

#include "../test_paths.h"
#include "audio/audio_file.h"
#include "scheduler/scheduler.h"
#include "models/voxtral/voxtral_stream_model.h"
#include "parity/tiny_engine.h"
#include "temp_dir.h"
#include "tokenizer/tekken.h"
#include "models/voxtral/mel_front_end.h"
#include "voxrt/session.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

using Clock = std::chrono::steady_clock;

std::unique_ptr<Engine> tiny_engine(int max_sessions = 0) {
  return Engine::load(test_data() / "tiny" / "mistral", {.device = Device::Cpu, .threads = 1, .max_sessions = max_sessions});
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

TEST(TranscribeLimits, TheWaitForRoomIsBoundedThenBusy) {
  auto engine = tiny_engine(1);
  const std::vector<float> audio = load_audio_mono(test_data() / "audio" / "speech_short.wav");
  EXPECT_TRUE(engine->stats().has_room);
  auto holder = engine->open_session({});
  EXPECT_FALSE(engine->stats().has_room) << "the one session the engine was loaded for is open";

  TranscribeOptions o;
  o.wait_for_room_seconds = 0.3;
  auto t0 = Clock::now();
  try {
    engine->transcribe(audio, o);
    FAIL() << "transcribed on a full engine";
  } catch (const BusyError& e) {
    EXPECT_NE(std::string(e.what()).find("max_sessions"), std::string::npos) << e.what();
  }
  EXPECT_GE(seconds_since(t0), 0.3);
  EXPECT_LT(seconds_since(t0), 5.0);

  o.wait_for_room_seconds = 0;  // not at all
  t0 = Clock::now();
  EXPECT_THROW(engine->transcribe(audio, o), BusyError);
  EXPECT_LT(seconds_since(t0), 0.25);

  holder.reset();
  EXPECT_TRUE(engine->stats().has_room);
  EXPECT_EQ(engine->transcribe(audio, o).tokens, tiny_engine()->transcribe(audio).tokens);
}

TEST(TranscribeLimits, CancelledStopsBetweenPiecesAndFreesTheSession) {
  auto engine = tiny_engine(1);
  const std::vector<float> one = load_audio_mono(test_data() / "audio" / "jfk.wav");
  std::vector<float> long_audio;
  for (int i = 0; i < 6; ++i) long_audio.insert(long_audio.end(), one.begin(), one.end());  // 66 s: many pieces
  int steps = 0, asked = 0;
  TranscribeOptions o;
  o.progress = [&](int done, int) { steps = done; };
  o.cancelled = [&] { return ++asked > 2; };  // after a piece or two
  EXPECT_THROW(engine->transcribe(long_audio, o), CancelledError);
  EXPECT_GT(steps, 0);
  EXPECT_LT(steps, 66 * 1000 / 80 / 2) << "it went on past the cancellation";
  EXPECT_EQ(engine->stats().sessions_open, 0);
  EXPECT_TRUE(engine->stats().has_room) << "the cancelled transcription's session was not freed";

  o.cancelled = [] { return true; };  // cancelled before it starts: no model work at all
  steps = 0;
  EXPECT_THROW(engine->transcribe(one, o), CancelledError);
  EXPECT_EQ(steps, 0);
  EXPECT_EQ(engine->transcribe(one).tokens, tiny_engine()->transcribe(one).tokens);
}

TEST(TranscribeLimits, AudioLongerThanAllowedIsRefusedBeforeAnyModelWork) {
  auto engine = tiny_engine();
  const std::filesystem::path jfk = test_data() / "audio" / "jfk.wav";  // 11 s
  int steps = 0;
  TranscribeOptions o;
  o.max_audio_seconds = 5;
  o.progress = [&](int done, int) { steps = done; };
  try {
    engine->transcribe_file(jfk, o);
    FAIL() << "11 s transcribed with a 5 s limit";
  } catch (const InputError& e) {
    const std::string why = e.what();
    EXPECT_NE(why.find(jfk.string() + " (by its header): 11 s of audio, more than the 5 s allowed"), std::string::npos) << why;
  }
  EXPECT_EQ(steps, 0);
  EXPECT_THROW(engine->transcribe(load_audio_mono(jfk), o), InputError);
  EXPECT_EQ(steps, 0);
  o.max_audio_seconds = 12;
  EXPECT_EQ(engine->transcribe_file(jfk, o).text, engine->transcribe_file(jfk).text);
}

TEST(TranscribeLimits, AFileThatDoesNotDecodeIsTheInputsFault) {
  auto engine = tiny_engine();
  testutil::TempDir dir;
  const std::filesystem::path bad = dir.path() / "notaudio.wav";
  std::ofstream(bad) << "this is not audio";
  try {
    engine->transcribe_file(bad);
    FAIL() << "text transcribed as audio";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
  }
}

// The events as the steps run add up to the transcript, which is the same with or without them.
TEST(TranscribeLimits, EventsAsTheStepsRunAddUpToTheTranscript) {
  auto engine = tiny_engine();
  const std::filesystem::path jfk = test_data() / "audio" / "jfk.wav";
  const Transcript plain = engine->transcribe_file(jfk);
  std::string text;
  size_t words = 0, steps_seen = 0;
  TranscribeOptions o;
  o.progress = [&](int done, int) { steps_seen = static_cast<size_t>(done); };
  o.on_event = [&](const StreamEvent& e) {
    if (e.kind == StreamEvent::Kind::Text) {
      text += e.text;
      EXPECT_LE(static_cast<size_t>(e.step), steps_seen) << "an event before its step ran";
    }
    if (e.kind == StreamEvent::Kind::Word) ++words;
  };
  const Transcript with_events = engine->transcribe_file(jfk, o);
  EXPECT_EQ(with_events.tokens, plain.tokens);
  EXPECT_EQ(with_events.text, plain.text);
  const size_t first = text.find_first_not_of(" \t\n"), last = text.find_last_not_of(" \t\n");
  EXPECT_EQ(first == std::string::npos ? "" : text.substr(first, last - first + 1), plain.text);
  EXPECT_EQ(words, plain.words.size());
}

TEST(TranscribeLimits, NothingIsStalledWhileIdleOrWorking) {
  auto engine = tiny_engine();
  EXPECT_EQ(engine->stats().stalled_seconds, 0);
  engine->transcribe(load_audio_mono(test_data() / "audio" / "speech_short.wav"));
  EXPECT_EQ(engine->stats().stalled_seconds, 0);
}

// Work handed to the step loop that no round takes on (here: the model held elsewhere, as a round
// that never ends would hold it) reads as stalled, for as long as it waits; /health says so.
TEST(TranscribeLimits, HandedWorkThatNoRoundRunsReadsAsStalled) {
  auto backend = make_cpu_backend(1);
  const auto model = tiny_model(*backend);
  const Tokenizer tok = Tokenizer::load(test_data() / "tiny" / "mistral" / "tekken.json");
  std::mutex model_mutex;
  Protocol p;
  p.n_left_pad_tokens = tok.audio().streaming_n_left_pad_tokens;
  p.samples_per_position = model->config().samples_per_position();
  VoxtralStreamModel family(*model, {p.n_left_pad_tokens, {tok.bos_id(), tok.eos_id(), tok.streaming_pad_id(), tok.streaming_word_id()}});
  Scheduler scheduler(family, model_mutex, StreamOptions{});
  const auto stream = scheduler.open(StreamOptions{});
  const LogMel logmel;
  MelFrontEnd front(logmel, p);
  front.feed(wav("speech_short"));
  EXPECT_EQ(scheduler.stats().stalled_seconds, 0);
  std::unique_lock<std::mutex> held(model_mutex);
  auto run = std::async(std::launch::async, [&] { return stream->run(front.take_frames(), -1); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_GE(scheduler.stats().stalled_seconds, 0.25);
  held.unlock();
  EXPECT_FALSE(run.get().empty());
  EXPECT_EQ(scheduler.stats().stalled_seconds, 0);
}

}  // namespace
}  // namespace voxrt::test

// Turn detection in each realtime dialect of voxrt serve (docs/serve.md), in process on a loopback
// port with the tiny model, over the labelled set's meeting (tests/data/turns: six turns): every
// turn's events come in the dialect's order and shape, and their times and texts are those of an
// engine session with the same turn detection fed the audio the model hears (turns end while the
// audio is still arriving: it is sent whole before anything is read). OpenAI's commit ends a turn
// in progress (and is an error between turns) and clear drops one; Mistral's and vLLM's end of
// input ends a turn in progress before their done event, which holds every turn's text. Bad
// turn_detection values are refused naming the field.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/base64.h"
#include "server_test_support.h"
#include "voxrt/session.h"

namespace voxrt::test {
namespace {

using nlohmann::json;
using Kind = StreamEvent::Kind;

constexpr const char* kMistralPath = "/v1/audio/transcriptions/realtime?model=voxtral-mini-transcribe-realtime-2602";
constexpr const char* kOpenAiPath = "/v1/realtime?intent=transcription";

struct TurnSeen {
  double start = 0, end = 0;  // seconds
  std::string text;
};

struct Reference {
  std::vector<TurnSeen> turns;
  std::string text;  // the whole transcript's
};

// An engine session with turn detection fed `heard` (16 kHz), in one piece, then flushed.
Reference reference_turns(const std::vector<float>& heard, const TurnDetection& t) {
  Reference r;
  SessionOptions o;
  o.turns = t;
  o.on_event = [&](const StreamEvent& e) {
    if (e.kind == Kind::TurnEnd) r.turns.push_back({e.start, e.end, e.text});
  };
  std::unique_ptr<Session> s = reference().open_session(o);
  s->feed(heard);
  s->flush();
  r.text = s->transcript().text;
  return r;
}

std::vector<float> first_seconds(const std::vector<float>& x, double seconds) {  // at 16 kHz
  return {x.begin(), x.begin() + static_cast<std::ptrdiff_t>(seconds * 16000)};
}

const std::filesystem::path meeting() { return test_data() / "turns" / "meeting.flac"; }

void send_pcm(RealtimeClient& c, const std::string& bytes, size_t piece, const char* type) {
  for (size_t at = 0; at < bytes.size(); at += piece)
    c.send({{"type", type}, {"audio", base64_encode(bytes.substr(at, piece))}});
}

// ---- OpenAI ----

struct OpenAiTurn {
  std::string item_id, deltas;
  long long start_ms = -1, end_ms = -1;
  bool committed = false;
  json completed;
};

// Reads one turn's events, in their order: speech_started, deltas, speech_stopped, committed,
// item.added and .done, deltas, completed.
OpenAiTurn openai_turn(RealtimeClient& c) {
  OpenAiTurn t;
  const json started = c.receive();
  EXPECT_EQ(started["type"], "input_audio_buffer.speech_started") << started.dump();
  t.item_id = started.value("item_id", "");
  t.start_ms = started.value("audio_start_ms", -1LL);
  bool stopped = false;
  for (;;) {
    const json e = c.receive();
    const std::string type = e["type"];
    if (type != "error") EXPECT_EQ(e.value("item_id", t.item_id), t.item_id) << e.dump();
    if (type == "conversation.item.input_audio_transcription.delta") {
      t.deltas += e["delta"].get<std::string>();
    } else if (type == "input_audio_buffer.speech_stopped") {
      EXPECT_FALSE(stopped);
      stopped = true;
      t.end_ms = e["audio_end_ms"];
    } else if (type == "input_audio_buffer.committed") {
      EXPECT_TRUE(stopped) << "committed before speech_stopped";
      t.committed = true;
    } else if (type == "conversation.item.added" || type == "conversation.item.done") {
      EXPECT_TRUE(t.committed);
      EXPECT_EQ(e["item"]["id"], t.item_id);
    } else if (type == "conversation.item.input_audio_transcription.completed") {
      EXPECT_TRUE(t.committed);
      t.completed = e;
      return t;
    } else {
      ADD_FAILURE() << "unexpected event " << e.dump();
      return t;
    }
  }
}

void expect_turn(const OpenAiTurn& got, const TurnSeen& want, double offset_s) {
  EXPECT_EQ(got.start_ms, std::llround((want.start + offset_s) * 1000));
  EXPECT_EQ(got.end_ms, std::llround((want.end + offset_s) * 1000));
  EXPECT_EQ(got.completed["transcript"], want.text);
  EXPECT_EQ(got.deltas, want.text) << "a turn's deltas add up to its transcript";
}

TEST(RealtimeTurns, OpenAiServerVadItemsAreTheEnginesTurns) {
  RunningServer s;
  RealtimeClient c(s.port(), kOpenAiPath);
  ASSERT_EQ(c.receive()["type"], "session.created");
  TurnDetection t;
  t.silence_duration_ms = 600;
  c.send({{"type", "session.update"},
          {"session",
           {{"type", "transcription"},
            {"audio", {{"input", {{"turn_detection", {{"type", "server_vad"}, {"threshold", 0.5}, {"prefix_padding_ms", 300},
                                                      {"silence_duration_ms", 600}}}}}}}}}});
  const json updated = c.receive();
  ASSERT_EQ(updated["type"], "session.updated") << updated.dump();
  EXPECT_EQ(updated["session"]["audio"]["input"]["turn_detection"]["type"], "server_vad");
  EXPECT_EQ(updated["session"]["audio"]["input"]["turn_detection"]["silence_duration_ms"], 600);

  const Pcm16Audio audio = pcm16_of(meeting(), 24000);
  const Reference want = reference_turns(audio.heard, t);
  ASSERT_EQ(want.turns.size(), 6u);
  send_pcm(c, audio.bytes, 4800, "input_audio_buffer.append");  // all of it, before reading
  std::string previous;
  for (const TurnSeen& w : want.turns) {
    const OpenAiTurn got = openai_turn(c);
    expect_turn(got, w, 0);
    EXPECT_NE(got.item_id, previous);
    previous = got.item_id;
  }

}

TEST(RealtimeTurns, OpenAiCommitEndsATurnInProgressAndClearDropsIt) {
  RunningServer s;
  RealtimeClient c(s.port(), kOpenAiPath);
  ASSERT_EQ(c.receive()["type"], "session.created");
  c.send({{"type", "session.update"},
          {"session", {{"type", "transcription"}, {"audio", {{"input", {{"turn_detection", {{"type", "server_vad"}}}}}}}}}});
  ASSERT_EQ(c.receive()["type"], "session.updated");
  // A commit inside a turn (the first runs from 1.0 s to 5.4 s) ends it now.
  const std::string three_seconds = pcm16_of(meeting(), 24000).bytes.substr(0, 3 * 24000 * 2);
  send_pcm(c, three_seconds, 4800, "input_audio_buffer.append");
  c.send({{"type", "input_audio_buffer.commit"}});
  std::vector<float> sent(three_seconds.size() / 2);
  for (size_t i = 0; i < sent.size(); ++i) {
    int16_t v;
    std::memcpy(&v, three_seconds.data() + 2 * i, 2);
    sent[i] = static_cast<float>(v) / 32768.0f;
  }
  const Reference cut = reference_turns(resample(sent, 24000, 16000), TurnDetection{});
  ASSERT_EQ(cut.turns.size(), 1u);
  const OpenAiTurn committed = openai_turn(c);
  expect_turn(committed, cut.turns[0], 0);

  // A commit between turns: nothing to commit.
  c.send({{"type", "input_audio_buffer.append"}, {"audio", base64_encode(std::string(24000, '\0'))}});
  c.send({{"type", "input_audio_buffer.commit"}, {"event_id", "evt_9"}});
  const json empty = c.receive();
  ASSERT_EQ(empty["type"], "error") << empty.dump();
  EXPECT_EQ(empty["error"]["code"], "input_audio_buffer_commit_empty") << empty.dump();
  EXPECT_EQ(empty["error"]["event_id"], "evt_9");

  // Clear inside a turn drops it: speech_started and maybe deltas, then cleared, and nothing of the
  // dropped item after it.
  send_pcm(c, three_seconds, 4800, "input_audio_buffer.append");
  c.send({{"type", "input_audio_buffer.clear"}});
  for (json e = c.receive();; e = c.receive()) {
    const std::string type = e["type"];
    if (type == "input_audio_buffer.speech_started" || type == "conversation.item.input_audio_transcription.delta") continue;
    EXPECT_EQ(type, "input_audio_buffer.cleared") << e.dump();
    break;
  }
  // Turn detection off between items: a commit ends an item again.
  c.send({{"type", "session.update"}, {"session", {{"type", "transcription"}, {"audio", {{"input", {{"turn_detection", nullptr}}}}}}}});
  const json off = c.receive();
  EXPECT_TRUE(off["session"]["audio"]["input"]["turn_detection"].is_null()) << off.dump();
}

TEST(RealtimeTurns, OpenAiBadTurnDetectionNamesTheField) {
  RunningServer s;
  RealtimeClient c(s.port(), kOpenAiPath);
  ASSERT_EQ(c.receive()["type"], "session.created");
  const auto expect_error = [&](const json& turn_detection, const std::string& param) {
    c.send({{"type", "session.update"},
            {"session", {{"type", "transcription"}, {"audio", {{"input", {{"turn_detection", turn_detection}}}}}}}});
    const json e = c.receive();
    ASSERT_EQ(e["type"], "error") << e.dump();
    EXPECT_EQ(e["error"]["code"], "invalid_value") << e.dump();
    EXPECT_EQ(e["error"]["param"], param) << e.dump();
  };
  const std::string p = "session.audio.input.turn_detection";
  expect_error({{"type", "semantic_vad"}}, p + ".type");
  expect_error({{"type", "server_vad"}, {"threshold", 1.5}}, p + ".threshold");
  expect_error({{"type", "server_vad"}, {"silence_duration_ms", 5}}, p + ".silence_duration_ms");
  expect_error({{"type", "server_vad"}, {"silence_duration_ms", 2.5}}, p + ".silence_duration_ms");
  expect_error({{"type", "server_vad"}, {"eagerness", "high"}}, p + ".eagerness");
  expect_error("server_vad", p);
  // Not while an item is open.
  c.send({{"type", "input_audio_buffer.append"}, {"audio", base64_encode(std::string(4800, '\0'))}});
  c.send({{"type", "session.update"},
          {"session", {{"type", "transcription"}, {"audio", {{"input", {{"turn_detection", {{"type", "server_vad"}}}}}}}}}});
  const json busy = c.receive();
  EXPECT_EQ(busy["error"]["code"], "session_busy") << busy.dump();
}

// ---- Mistral ----

TEST(RealtimeTurns, MistralTurnEventsThenDoneWithEveryTurn) {
  RunningServer s;
  RealtimeClient c(s.port(), kMistralPath);
  ASSERT_EQ(c.receive()["type"], "session.created");
  c.send({{"type", "session.update"}, {"session", {{"turn_detection", {{"min_silence_ms", 500}, {"end_timeout_ms", 1200}}}}}});
  const json updated = c.receive();
  ASSERT_EQ(updated["type"], "session.updated") << updated.dump();
  EXPECT_EQ(updated["session"]["turn_detection"]["min_silence_ms"], 500);
  EXPECT_EQ(updated["session"]["turn_detection"]["end_timeout_ms"], 1200);
  TurnDetection t;
  t.end_timeout_ms = 1200;
  const Pcm16Audio audio = pcm16_of(meeting(), 16000);
  // Ended inside the last turn (26.7 s): the end decodes it.
  const std::string cut = audio.bytes.substr(0, 26 * 16000 * 2);
  const Reference want = reference_turns(first_seconds(audio.heard, 26.0), t);
  ASSERT_EQ(want.turns.size(), 6u);
  send_pcm(c, cut, 3200, "input_audio.append");
  c.send({{"type", "input_audio.end"}});
  size_t turn = 0;
  bool in_turn = false;
  std::string deltas;
  for (;;) {
    const json e = c.receive();
    const std::string type = e["type"];
    if (type == "transcription.speech_started") {
      EXPECT_FALSE(in_turn);
      in_turn = true;
      deltas.clear();
      ASSERT_LT(turn, want.turns.size());
      EXPECT_DOUBLE_EQ(e["start"].get<double>(), want.turns[turn].start);
    } else if (type == "transcription.text.delta") {
      EXPECT_TRUE(in_turn);
      deltas += e["text"].get<std::string>();
    } else if (type == "transcription.segment") {
      EXPECT_TRUE(in_turn);
    } else if (type == "transcription.speech_stopped") {
      EXPECT_DOUBLE_EQ(e["end"].get<double>(), want.turns[turn].end);
    } else if (type == "transcription.turn.done") {
      EXPECT_EQ(e["text"], want.turns[turn].text);
      EXPECT_EQ(deltas, want.turns[turn].text);
      EXPECT_DOUBLE_EQ(e["start"].get<double>(), want.turns[turn].start);
      EXPECT_TRUE(e["words"].is_array() && e["segments"].is_array());
      in_turn = false;
      ++turn;
    } else if (type == "transcription.done") {
      EXPECT_FALSE(in_turn);
      EXPECT_EQ(e["text"], want.text);
      break;
    } else {
      ADD_FAILURE() << "unexpected event " << e.dump();
      break;
    }
  }
  EXPECT_EQ(turn, want.turns.size());

  RealtimeClient bad(s.port(), kMistralPath);
  ASSERT_EQ(bad.receive()["type"], "session.created");
  bad.send({{"type", "session.update"}, {"session", {{"turn_detection", {{"min_silence_ms", 800}, {"end_timeout_ms", 400}}}}}});
  const json e = bad.receive();
  ASSERT_EQ(e["type"], "error") << e.dump();
  EXPECT_NE(e["error"]["message"].get<std::string>().find("session.turn_detection.end_timeout_ms 400"), std::string::npos)
      << e.dump();
}

// ---- vLLM ----

TEST(RealtimeTurns, VllmTurnEventsThenDoneWithEveryTurn) {
  RunningServer s;
  RealtimeClient c(s.port());
  ASSERT_EQ(c.receive()["type"], "session.created");
  c.send({{"type", "session.update"}, {"model", "voxtral"}, {"turn_detection", {{"type", "server_vad"}}}});
  c.send({{"type", "input_audio_buffer.commit"}});
  const Pcm16Audio audio = pcm16_of(meeting(), 16000);
  const Reference want = reference_turns(audio.heard, TurnDetection{});
  send_pcm(c, audio.bytes, 3200, "input_audio_buffer.append");
  c.send({{"type", "input_audio_buffer.commit"}, {"final", true}});
  size_t turn = 0;
  for (;;) {
    const json e = c.receive();
    const std::string type = e["type"];
    if (type == "input_audio_buffer.speech_started") {
      ASSERT_LT(turn, want.turns.size());
      EXPECT_EQ(e["audio_start_ms"], std::llround(want.turns[turn].start * 1000));
    } else if (type == "input_audio_buffer.speech_stopped") {
      EXPECT_EQ(e["audio_end_ms"], std::llround(want.turns[turn].end * 1000));
    } else if (type == "transcription.turn.done") {
      EXPECT_EQ(e["text"], want.turns[turn].text);
      ++turn;
    } else if (type == "transcription.done") {
      EXPECT_EQ(e["text"], want.text);
      break;
    } else if (type != "transcription.delta") {
      ADD_FAILURE() << "unexpected event " << e.dump();
      break;
    }
  }
  EXPECT_EQ(turn, want.turns.size());

  c.send({{"type", "session.update"}, {"turn_detection", {{"type", "server_vad"}, {"prefix_padding_ms", -1}}}});
  const json e = c.receive();
  EXPECT_EQ(e["type"], "error");
  EXPECT_EQ(e["code"], "invalid_turn_detection") << e.dump();
}

}  // namespace
}  // namespace voxrt::test

// Context biasing through voxrt serve (docs/serve.md, "Context biasing"), in process with the tiny
// model: Mistral's context_bias (repeated form fields on the transcription route, a list in a
// realtime session.update), OpenAI's prompt (its phrases), vLLM's extension: each transcript equals
// the engine's with the same list, the list changes it ("text" is a runner-up of the tiny model on
// jfk.wav: tests/unit/test_context_bias.cpp), and lists out of their limits are refused naming the field.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/base64.h"
#include "http_test_client.h"
#include "server/context_bias_fields.h"
#include "server_test_support.h"

namespace voxrt::test {
namespace {

using nlohmann::json;
namespace http = boost::beast::http;
using testutil::FormField;

const std::vector<std::string> kPhrases = {"text"};

std::string jfk_bytes() {
  std::ifstream in(test_data() / "audio" / "jfk.wav", std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Transcript biased_reference(const std::vector<float>& heard, const std::vector<std::string>& phrases) {
  TranscribeOptions o;
  o.context_bias = phrases;
  return reference().transcribe(heard, o);
}

testutil::HttpAnswer post(const RunningServer& s, std::vector<FormField> fields) {
  fields.insert(fields.begin(), FormField{"file", "jfk.wav", jfk_bytes()});
  return s.client().request(http::verb::post, "/v1/audio/transcriptions", testutil::form_body(fields),
                            {{"Content-Type", testutil::form_type()}});
}

TEST(ServeContextBias, PromptPhrasesSplitAtCommasSemicolonsAndLineBreaks) {
  EXPECT_EQ(server::prompt_phrases(" Ada Lovelace, Kubernetes;voxrt\n\n  ,Tuesday "),
            (std::vector<std::string>{"Ada Lovelace", "Kubernetes", "voxrt", "Tuesday"}));
  EXPECT_TRUE(server::prompt_phrases("").empty());
  EXPECT_TRUE(server::prompt_phrases(" ,; \n").empty());
}

TEST(ServeContextBias, TranscriptionRouteTakesContextBiasFieldsAndThePrompt) {
  RunningServer s;
  const Pcm16Audio audio = pcm16_of(test_data() / "audio" / "jfk.wav", 16000);
  const Transcript want = reference_transcript(test_data() / "audio" / "jfk.wav");
  TranscribeOptions biased;
  biased.context_bias = kPhrases;
  const Transcript want_biased = reference().transcribe_file(test_data() / "audio" / "jfk.wav", biased);
  ASSERT_NE(want.text, want_biased.text) << "the list is meant to change the transcript";
  const auto text_of = [](const testutil::HttpAnswer& a) {
    EXPECT_EQ(a.status, 200) << a.body;
    return json::parse(a.body).value("text", "");
  };
  EXPECT_EQ(text_of(post(s, {{"model", "", "voxtral"}})), want.text);
  EXPECT_EQ(text_of(post(s, {{"context_bias", "", "text"}})), want_biased.text);
  EXPECT_EQ(text_of(post(s, {{"prompt", "", " text "}})), want_biased.text);
  EXPECT_EQ(text_of(post(s, {{"context_bias", "", "text"}, {"context_bias_strength", "", "0"}})), want.text);

  std::vector<FormField> many;
  for (int i = 0; i <= kMaxContextBiasPhrases; ++i) many.push_back({"context_bias", "", "phrase " + std::to_string(i)});
  const auto refused = [&](std::vector<FormField> fields, const std::string& param) {
    const testutil::HttpAnswer a = post(s, std::move(fields));
    EXPECT_EQ(a.status, 400) << a.body;
    EXPECT_EQ(json::parse(a.body)["error"]["param"], param) << a.body;
  };
  refused(many, "context_bias");
  refused({{"context_bias", "", "text"}, {"context_bias_strength", "", "50"}}, "context_bias_strength");
  refused({{"context_bias_strength", "", "strong"}}, "context_bias_strength");
  refused({{"prompt", "", std::string(150, 'a')}}, "prompt");
}

TEST(ServeContextBias, RealtimeSessionsTakeTheirDialectsList) {
  RunningServer s;
  const Pcm16Audio audio = pcm16_of(test_data() / "audio" / "jfk.wav", 16000);
  const Transcript want = biased_reference(audio.heard, kPhrases);
  ASSERT_NE(want.text, biased_reference(audio.heard, {}).text);

  // Mistral's: context_bias in session.update, echoed.
  RealtimeClient m(s.port(), "/v1/audio/transcriptions/realtime?model=voxtral");
  ASSERT_EQ(m.receive()["type"], "session.created");
  m.send({{"type", "session.update"}, {"session", {{"context_bias", kPhrases}}}});
  const json updated = m.receive();
  ASSERT_EQ(updated["type"], "session.updated") << updated.dump();
  EXPECT_EQ(updated["session"]["context_bias"], json(kPhrases));
  m.send_binary(audio.bytes);
  m.send({{"type", "input_audio.end"}});
  for (json e = m.receive();; e = m.receive()) {
    if (e["type"] != "transcription.done") continue;
    EXPECT_EQ(e["text"], want.text);
    break;
  }
  RealtimeClient bad(s.port(), "/v1/audio/transcriptions/realtime?model=voxtral");
  ASSERT_EQ(bad.receive()["type"], "session.created");
  bad.send({{"type", "session.update"}, {"session", {{"context_bias", json::array({""})}}}});
  const json e = bad.receive();
  ASSERT_EQ(e["type"], "error") << e.dump();
  EXPECT_NE(e["error"]["message"].get<std::string>().find("session.context_bias"), std::string::npos) << e.dump();

  // vLLM's: the extension in session.update.
  RealtimeClient v(s.port());
  ASSERT_EQ(v.receive()["type"], "session.created");
  v.send({{"type", "session.update"}, {"model", "voxtral"}, {"context_bias", kPhrases}});
  v.send({{"type", "input_audio_buffer.commit"}});
  v.send_binary(audio.bytes);
  v.send({{"type", "input_audio_buffer.commit"}, {"final", true}});
  std::string deltas;
  EXPECT_EQ(v.until_done(deltas)["text"], want.text);
  v.send({{"type", "session.update"}, {"context_bias_strength", 25}});
  EXPECT_EQ(v.receive()["code"], "invalid_context_bias");

  // OpenAI's: the transcription's prompt.
  const Pcm16Audio audio24 = pcm16_of(test_data() / "audio" / "jfk.wav", 24000);
  const Transcript want24 = biased_reference(audio24.heard, kPhrases);
  RealtimeClient o(s.port(), "/v1/realtime?intent=transcription");
  ASSERT_EQ(o.receive()["type"], "session.created");
  o.send({{"type", "session.update"},
          {"session", {{"type", "transcription"}, {"audio", {{"input", {{"transcription", {{"prompt", "text"}}}}}}}}}});
  ASSERT_EQ(o.receive()["type"], "session.updated");
  o.send_binary(audio24.bytes);
  o.send({{"type", "input_audio_buffer.commit"}});
  for (json e = o.receive();; e = o.receive()) {
    if (e["type"] != "conversation.item.input_audio_transcription.completed") continue;
    EXPECT_EQ(e["transcript"], want24.text);
    break;
  }
}

}  // namespace
}  // namespace voxrt::test

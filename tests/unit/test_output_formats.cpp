// Rendering transcripts (no model): JSON carries words at the top level and in each segment with times
// in whole milliseconds; srt and vtt are built from word-timed cues (numbered from 1, one header); txt
// can carry whisper.cpp-style timestamps; format lists parse in order and refuse unknown or repeated
// names.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/output_formats.h"
#include "common/error.h"

namespace voxrt::formats {
namespace {

Transcript hello_world() {
  Transcript t;
  t.text = "Hello, world. Bye";
  t.tokens = {32, 33, 1100};
  t.duration = 3.0666875;  // 49067 samples at 16 kHz
  t.delay_ms = 480;
  // 0.08 * 48 in binary: the JSON must still say 3.84... clamped here to the audio's 3.066.
  const std::vector<Word> first = {{1.24, 1.8, "Hello,"}, {1.8, 0.08 * 30, "world."}};
  const std::vector<Word> second = {{0.08 * 35, 3.066, "Bye"}};
  t.segments = {{1.2, 0.08 * 30, "Hello, world.", first}, {0.08 * 34, 3.066, "Bye", second}};
  t.words = first;
  t.words.insert(t.words.end(), second.begin(), second.end());
  return t;
}

TEST(OutputFormats, JsonHasWordsEverywhereAndKeepsEveryField) {
  const nlohmann::json j = nlohmann::json::parse(render(hello_world(), Format::Json, "a.wav"));
  for (const char* key : {"file", "text", "tokens", "segments", "words", "duration", "delay_ms", "eos"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["file"], "a.wav");
  EXPECT_EQ(j["tokens"], nlohmann::json({32, 33, 1100}));
  ASSERT_EQ(j["words"].size(), 3u);
  EXPECT_EQ(j["words"][0], nlohmann::json({{"start", 1.24}, {"end", 1.8}, {"text", "Hello,"}}));
  ASSERT_EQ(j["segments"].size(), 2u);
  EXPECT_EQ(j["segments"][0]["words"].size(), 2u);
  EXPECT_EQ(j["segments"][1]["words"][0]["text"], "Bye");
  EXPECT_EQ(j["segments"][1]["text"], "Bye");
}

TEST(OutputFormats, JsonTimesAreWholeMilliseconds) {
  const std::string out = render(hello_world(), Format::Json, "a.wav");
  EXPECT_EQ(out.find("000000"), std::string::npos) << out;
  EXPECT_EQ(out.find("999999"), std::string::npos) << out;
  EXPECT_NE(out.find("\"end\":2.4,"), std::string::npos) << out;       // 0.08 * 30 = 2.4000000000000004
  EXPECT_NE(out.find("\"start\":2.8,"), std::string::npos) << out;     // 0.08 * 35 = 2.8000000000000003
  EXPECT_NE(out.find("\"duration\":3.067"), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(out.find('\n'), out.size() - 1) << "one line";
}

TEST(OutputFormats, SrtNumbersCuesFromOneAndVttHasOneHeader) {
  Transcript t;
  t.duration = 30;
  for (int i = 0; i < 60; ++i) t.words.push_back({0.4 * i, 0.4 * i + 0.4, "word" + std::to_string(i)});
  const std::string srt = render(t, Format::Srt, "a.wav");
  EXPECT_EQ(srt.rfind("1\n00:00:00,000 --> 00:00:", 0), 0u) << srt;
  EXPECT_NE(srt.find("\n\n2\n00:00:"), std::string::npos) << srt;
  EXPECT_NE(srt.find(" --> 00:00:24,000\n"), std::string::npos) << "the last word's end" << srt;
  const std::string vtt = render(t, Format::Vtt, "a.wav");
  EXPECT_EQ(vtt.rfind("WEBVTT\n\n00:00:00.000 --> 00:00:", 0), 0u) << vtt;
  EXPECT_EQ(vtt.find("WEBVTT", 1), std::string::npos);
  EXPECT_EQ(vtt.substr(vtt.size() - 2), "\n\n");
}

TEST(OutputFormats, SubtitleLimitsComeFromTheOptions) {
  Transcript t;
  t.duration = 10;
  for (int i = 0; i < 6; ++i) t.words.push_back({0.5 * i, 0.5 * i + 0.5, "abcd"});
  EXPECT_EQ(render(t, Format::Srt, "a.wav", {.max_line_chars = 9}),
            "1\n00:00:00,000 --> 00:00:02,000\nabcd abcd\nabcd abcd\n\n"
            "2\n00:00:02,000 --> 00:00:03,000\nabcd abcd\n\n");
  EXPECT_EQ(render(t, Format::Vtt, "a.wav", {.max_line_chars = 42, .max_cue_seconds = 1.0}),
            "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nabcd abcd\n\n00:00:01.000 --> 00:00:02.000\nabcd abcd\n\n"
            "00:00:02.000 --> 00:00:03.000\nabcd abcd\n\n");
}

TEST(OutputFormats, TxtWithTimestampsHasOneLinePerCue) {
  EXPECT_EQ(render(hello_world(), Format::Txt, "a.wav"), "Hello, world. Bye\n");
  EXPECT_EQ(render(hello_world(), Format::Txt, "a.wav", {.timestamps = true}),
            "[00:00:01.240 --> 00:00:03.066]  Hello, world. Bye\n");
  EXPECT_EQ(render(hello_world(), Format::Txt, "a.wav", {.max_line_chars = 6, .timestamps = true}),
            "[00:00:01.067 --> 00:00:02.067]  Hello, world.\n[00:00:02.067 --> 00:00:03.067]  Bye\n")
      << "the last cue, 0.27 s long, stays up a second, ending with the audio";
}

// A transcript holding markup characters: WebVTT escapes them (else "&", "<b>" and "-->" break the
// file: a parser reads tags, entities and an early end of the cue); srt and txt keep the text as is.
TEST(OutputFormats, VttEscapesWhatWebVttReadsAsMarkup) {
  Transcript t;
  t.duration = 5;
  t.text = "Tom & Jerry <b>x</b> a-->b";
  for (const char* w : {"Tom", "&", "Jerry", "<b>x</b>", "a-->b"}) t.words.push_back({0.5 * t.words.size(), 0.5 * t.words.size() + 0.5, w});
  const std::string vtt = render(t, Format::Vtt, "a.wav");
  EXPECT_EQ(vtt, "WEBVTT\n\n00:00:00.000 --> 00:00:02.500\nTom &amp; Jerry &lt;b&gt;x&lt;/b&gt; a--&gt;b\n\n");
  EXPECT_NE(render(t, Format::Srt, "a.wav").find("Tom & Jerry <b>x</b> a-->b\n"), std::string::npos);
}

TEST(OutputFormats, FormatListsKeepTheirOrder) {
  EXPECT_EQ(parse_format_list("srt,vtt,json"), (std::vector<Format>{Format::Srt, Format::Vtt, Format::Json}));
  EXPECT_EQ(parse_format_list("txt"), std::vector<Format>{Format::Txt});
  // Any case, blanks after the commas (issue 33: -f SRT and -f "srt, vtt" were refused).
  EXPECT_EQ(parse_format_list("SRT, Vtt ,json"), (std::vector<Format>{Format::Srt, Format::Vtt, Format::Json}));
  for (const std::string bad : {"srt,srt", "srt,mp3", "", "srt,", ",srt", "srt, ", "SRT,srt"}) {
    SCOPED_TRACE(bad);
    try {
      parse_format_list(bad);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--format ", 0), 0u) << e.what();
    }
  }
  try {
    parse_format_list("json,srt,json");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("json is given twice"), std::string::npos) << e.what();
  }
}

TEST(OutputFormats, ExtensionsAreTheFormatNames) {
  for (const std::string name : {"txt", "json", "srt", "vtt"}) EXPECT_EQ(format_extension(parse_format(name)), name);
}

}  // namespace
}  // namespace voxrt::formats

#include "server/openai_transcriptions.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "formats/output_formats.h"
#include "server/request_error.h"

namespace voxrt::server {
namespace {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

ResponseFormat parse_format(std::string_view v) {
  if (v == "json") return ResponseFormat::Json;
  if (v == "text") return ResponseFormat::Text;
  if (v == "srt") return ResponseFormat::Srt;
  if (v == "vtt") return ResponseFormat::Vtt;
  if (v == "verbose_json") return ResponseFormat::VerboseJson;
  throw RequestError(400, "response_format '" + std::string(v.substr(0, 64)) +
                              "' is not one of json, text, srt, vtt, verbose_json", "response_format");
}

bool parse_bool(std::string_view v, const char* field) {
  if (v == "true" || v == "True" || v == "1") return true;
  if (v == "false" || v == "False" || v == "0") return false;
  throw RequestError(400, std::string(field) + " must be true or false", field);
}

// Times in whole milliseconds, as every JSON output of voxrt writes them.
double seconds(double s) { return formats::json_seconds(s); }

json usage(const Transcript& t) { return {{"type", "duration"}, {"seconds", seconds(t.duration)}}; }

}  // namespace

TranscriptionRequest parse_transcription_request(const std::vector<FormPart>& form, const DelayRange& delays) {
  TranscriptionRequest r;
  bool has_file = false;
  for (const FormPart& p : form) {
    const std::string_view v = p.data;
    if (p.name == "file") {
      if (has_file) throw RequestError(400, "more than one file in the form", "file");
      has_file = true;
      r.filename = p.filename.empty() ? "file" : p.filename;
      r.audio = v;
    } else if (p.name == "model") {
      r.model = std::string(v);
    } else if (p.name == "response_format") {
      r.format = parse_format(v);
    } else if (p.name == "language") {
      r.language = std::string(v);
    } else if (p.name == "prompt") {
      r.prompt = std::string(v);
    } else if (p.name == "context_bias" || p.name == "context_bias[]") {
      if (r.bias.phrases.size() == static_cast<size_t>(kMaxContextBiasPhrases))
        throw RequestError(400, "context_bias: more than " + std::to_string(kMaxContextBiasPhrases) + " phrases", "context_bias");
      r.bias.phrases.emplace_back(v);
    } else if (p.name == "context_bias_strength") {
      float s = -1;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
      if (ec != std::errc() || end != v.data() + v.size())
        throw RequestError(400, "context_bias_strength must be a number", "context_bias_strength");
      r.bias.strength = s;
    } else if (p.name == "temperature") {
      double t = -1;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), t);
      if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(t))
        throw RequestError(400, "temperature must be a number", "temperature");
      if (t != 0) throw RequestError(400, "temperature must be 0: the model decodes greedily", "temperature");
    } else if (p.name == "stream") {
      r.stream = parse_bool(v, "stream");
    } else if (p.name == "timestamp_granularities[]" || p.name == "timestamp_granularities") {
      if (v == "word") {
        r.words = true;
      } else if (v == "segment") {
        r.segments = true;
      } else {
        throw RequestError(400, "timestamp_granularities[] must be word or segment", "timestamp_granularities[]");
      }
    } else if (p.name == "delay_ms") {
      int d = -1;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
      if (ec != std::errc() || end != v.data() + v.size()) throw RequestError(400, "delay_ms must be an integer", "delay_ms");
      if (!delays.accepts(d))
        throw RequestError(400, "delay_ms " + std::to_string(d) + ": the model's delays are " + to_string(delays), "delay_ms");
      r.delay_ms = d;
    }
    // Other fields (include[], chunking_strategy, ...) are OpenAI's options for other models: ignored.
  }
  if (!has_file) throw RequestError(400, "no file: the audio goes in the form field 'file'", "file");
  if (r.stream && r.format != ResponseFormat::Json && r.format != ResponseFormat::Text)
    throw RequestError(400, "stream=true answers text events: response_format must be json or text", "stream");
  if (!r.words && !r.segments) r.segments = true;  // OpenAI's default granularity
  const bool from_prompt = r.bias.phrases.empty();
  for (std::string& phrase : prompt_phrases(r.prompt)) r.bias.phrases.push_back(std::move(phrase));
  try {
    check_bias(r.bias, from_prompt && !r.prompt.empty() ? "prompt" : "context_bias", "context_bias_strength");
  } catch (const BiasFieldError& e) {
    throw RequestError(400, e.what(), e.param());
  }
  return r;
}

RenderedTranscription render_transcription(const Transcript& t, const TranscriptionRequest& request) {
  switch (request.format) {
    case ResponseFormat::Json:
      return {dump({{"text", t.text}, {"usage", usage(t)}}), "application/json"};
    case ResponseFormat::Text:
      return {t.text + "\n", "text/plain; charset=utf-8"};
    case ResponseFormat::Srt:
      return {formats::render(t, formats::Format::Srt, request.filename), "application/x-subrip; charset=utf-8"};
    case ResponseFormat::Vtt:
      return {formats::render(t, formats::Format::Vtt, request.filename), "text/vtt; charset=utf-8"};
    case ResponseFormat::VerboseJson: break;
  }
  json j = {{"task", "transcribe"}, {"language", request.language}, {"duration", seconds(t.duration)},
            {"text", t.text},       {"usage", usage(t)}};
  if (request.segments) {
    json segments = json::array();
    for (size_t i = 0; i < t.segments.size(); ++i) {
      const Segment& s = t.segments[i];
      // Whisper's decoding statistics do not exist for this model: 0, so that typed clients parse.
      segments.push_back({{"id", i},
                          {"seek", 0},
                          {"start", seconds(s.start)},
                          {"end", seconds(s.end)},
                          {"text", s.text},
                          {"tokens", json::array()},
                          {"temperature", 0.0},
                          {"avg_logprob", 0.0},
                          {"compression_ratio", 0.0},
                          {"no_speech_prob", 0.0}});
    }
    j["segments"] = std::move(segments);
  }
  if (request.words) {
    json words = json::array();
    for (const Word& w : t.words) words.push_back({{"word", w.text}, {"start", seconds(w.start)}, {"end", seconds(w.end)}});
    j["words"] = std::move(words);
  }
  return {dump(j), "application/json"};
}

std::string text_delta_event(const std::string& delta) {
  return "data: " + dump({{"type", "transcript.text.delta"}, {"delta", delta}}) + "\n\n";
}

std::string text_done_event(const Transcript& t) {
  // No usage: OpenAI's done event counts tokens there, which says nothing about audio seconds.
  return "data: " + dump({{"type", "transcript.text.done"}, {"text", t.text}}) + "\n\n";
}

}  // namespace voxrt::server

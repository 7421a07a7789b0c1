#include "server/turn_detection_json.h"

#include <functional>
#include <limits>
#include <map>

#include "voxrt/error.h"

namespace voxrt::server {
namespace {

using nlohmann::json;

// How one field is read: into `turns`, from a value that is not null.
using FieldReader = std::function<void(const json& v, const std::string& param, TurnDetection& turns)>;

int whole_ms(const json& v, const std::string& param) {
  if (!v.is_number_integer() || (v.is_number_unsigned() ? v.get<uint64_t>() > 600000 : v.get<int64_t>() < -600000 || v.get<int64_t>() > 600000))
    throw TurnDetectionError(param, "Invalid '" + param + "': expected a whole number of milliseconds.");
  return v.get<int>();
}

float fraction(const json& v, const std::string& param) {
  if (!v.is_number() || !(v.get<double>() >= 0.0 && v.get<double>() <= 1.0))
    throw TurnDetectionError(param, "Invalid '" + param + "': expected a number from 0 to 1.");
  return static_cast<float>(v.get<double>());
}

void boolean(const json& v, const std::string& param) {
  if (!v.is_boolean()) throw TurnDetectionError(param, "Invalid '" + param + "': expected true or false.");
}

// Reads the object's fields with `readers` (keyed by the dialect's names), refusing others, then
// checks the whole as open_session would, naming the dialect's field.
TurnDetection read(const json& value, const std::string& path, const std::map<std::string, FieldReader>& readers,
                   const std::map<std::string, std::string>& field_names) {
  if (!value.is_object()) throw TurnDetectionError(path, "Invalid '" + path + "': expected an object or null.");
  TurnDetection turns;
  for (const auto& [key, v] : value.items()) {
    const std::string param = path + "." + key.substr(0, 64);
    const auto reader = readers.find(key);
    if (reader == readers.end()) throw TurnDetectionError(param, "Unknown parameter: '" + param + "'.");
    if (!v.is_null()) reader->second(v, param, turns);
  }
  try {
    check_turn_detection(turns);
  } catch (const OptionError& e) {
    const std::string field = e.field().substr(std::string("turns.").size());
    const auto name = field_names.find(field);
    throw TurnDetectionError(path + "." + (name != field_names.end() ? name->second : field),
                             e.renamed(path + "." + (name != field_names.end() ? name->second : field)));
  }
  return turns;
}

}  // namespace

TurnDetection openai_turn_detection(const json& value, const std::string& path) {
  static const std::map<std::string, FieldReader> readers = {
      {"type",
       [](const json& v, const std::string& param, TurnDetection&) {
         if (v != "server_vad")
           throw TurnDetectionError(param, "Invalid '" + param + "': this server detects turns with server_vad only.");
       }},
      {"threshold", [](const json& v, const std::string& p, TurnDetection& t) { t.threshold = fraction(v, p); }},
      {"prefix_padding_ms", [](const json& v, const std::string& p, TurnDetection& t) { t.prefix_padding_ms = whole_ms(v, p); }},
      {"silence_duration_ms", [](const json& v, const std::string& p, TurnDetection& t) { t.silence_duration_ms = whole_ms(v, p); }},
      {"end_timeout_ms", [](const json& v, const std::string& p, TurnDetection& t) { t.end_timeout_ms = whole_ms(v, p); }},
      {"create_response", [](const json& v, const std::string& p, TurnDetection&) { boolean(v, p); }},
      {"interrupt_response", [](const json& v, const std::string& p, TurnDetection&) { boolean(v, p); }},
  };
  static const std::map<std::string, std::string> names = {{"threshold", "threshold"},
                                                           {"prefix_padding_ms", "prefix_padding_ms"},
                                                           {"silence_duration_ms", "silence_duration_ms"},
                                                           {"end_timeout_ms", "end_timeout_ms"}};
  return read(value, path, readers, names);
}

json openai_turn_detection_json(const TurnDetection& t) {
  return {{"type", "server_vad"},
          {"threshold", t.threshold},
          {"prefix_padding_ms", t.prefix_padding_ms},
          {"silence_duration_ms", t.silence_duration_ms},
          {"end_timeout_ms", t.end_timeout_ms > 0 ? json(t.end_timeout_ms) : json(nullptr)}};
}

TurnDetection mistral_turn_detection(const json& value, const std::string& path) {
  static const std::map<std::string, FieldReader> readers = {
      {"min_silence_ms", [](const json& v, const std::string& p, TurnDetection& t) { t.silence_duration_ms = whole_ms(v, p); }},
      {"end_timeout_ms", [](const json& v, const std::string& p, TurnDetection& t) { t.end_timeout_ms = whole_ms(v, p); }},
      {"start_threshold", [](const json& v, const std::string& p, TurnDetection& t) { t.threshold = fraction(v, p); }},
      {"end_threshold", [](const json& v, const std::string& p, TurnDetection&) { fraction(v, p); }},
      {"eager_end_threshold", [](const json& v, const std::string& p, TurnDetection&) { fraction(v, p); }},
      {"prefix_padding_ms", [](const json& v, const std::string& p, TurnDetection& t) { t.prefix_padding_ms = whole_ms(v, p); }},
  };
  static const std::map<std::string, std::string> names = {{"threshold", "start_threshold"},
                                                           {"prefix_padding_ms", "prefix_padding_ms"},
                                                           {"silence_duration_ms", "min_silence_ms"},
                                                           {"end_timeout_ms", "end_timeout_ms"}};
  return read(value, path, readers, names);
}

json mistral_turn_detection_json(const TurnDetection& t) {
  return {{"min_silence_ms", t.silence_duration_ms},
          {"end_timeout_ms", t.end_timeout_ms > 0 ? json(t.end_timeout_ms) : json(nullptr)},
          {"start_threshold", t.threshold},
          {"prefix_padding_ms", t.prefix_padding_ms}};
}

std::optional<TurnDetection> updated_turn_detection(const json& holder, const std::optional<TurnDetection>& current,
                                                    TurnDetection (*read)(const json&, const std::string&),
                                                    const std::string& path) {
  if (!holder.is_object() || !holder.contains("turn_detection")) return current;
  const json& value = holder["turn_detection"];
  if (value.is_null()) return std::nullopt;
  return read(value, path);
}

}  // namespace voxrt::server

#include "server/event_json.h"

namespace voxrt::server {

using nlohmann::json;

json parse_event(std::string_view text, std::string_view audio_type, const EventJsonLimits& limits) {
  size_t values = 0;
  // `depth` is the number of arrays and objects around the event's start: the outermost opens at 0.
  const json::parser_callback_t bounded = [&](int depth, json::parse_event_t event, json&) {
    const bool opens = event == json::parse_event_t::array_start || event == json::parse_event_t::object_start;
    if (opens && static_cast<size_t>(depth) >= limits.max_depth)
      throw EventJsonError(EventJsonError::Kind::TooNested,
                           "invalid JSON: nested deeper than " + std::to_string(limits.max_depth) + " levels");
    if ((opens || event == json::parse_event_t::value) && ++values > limits.max_values)
      throw EventJsonError(EventJsonError::Kind::TooNested,
                           "invalid JSON: more than " + std::to_string(limits.max_values) + " values in one event");
    return true;
  };
  json event = json::parse(text, bounded, /*allow_exceptions=*/false);
  if (event.is_discarded() || !event.is_object())
    throw EventJsonError(EventJsonError::Kind::NotJson, "invalid JSON: each message is one JSON object");
  if (text.size() > limits.max_event_bytes) {
    const auto type = event.find("type");
    if (type == event.end() || !type->is_string() || type->get_ref<const std::string&>() != audio_type)
      throw EventJsonError(EventJsonError::Kind::TooLarge,
                           "event too large: " + std::to_string(text.size()) + " bytes, where an event other than " +
                               std::string(audio_type) + " is at most " + std::to_string(limits.max_event_bytes));
  }
  return event;
}

}  // namespace voxrt::server

// A realtime client's text message as a JSON event, parsed within bounds that hold whatever it
// sends. nlohmann's parser builds its whole document before anyone can look at it: 16 MB of '['
// took 1.3 GB and 6 s of an I/O thread, every other connection on that thread waiting. Here the
// parser's callback counts depth and values as they come and stops at the first one too many, so
// a message past the limits costs microseconds and a few kilobytes, whatever its size. Only the
// dialect's audio event (its base64 audio) may be large; any other event is a few fields.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace voxrt::server {

struct EventJsonLimits {
  size_t max_depth = 32;                   // arrays and objects nested in one another
  size_t max_values = 4096;                // values in one event (arrays, objects and scalars)
  size_t max_event_bytes = size_t{64} << 10;  // a message that is not the audio event
};

class EventJsonError : public std::runtime_error {
 public:
  enum class Kind {
    NotJson,    // not JSON, or JSON that is not an object
    TooNested,  // past max_depth or max_values
    TooLarge,   // past max_event_bytes, and not the audio event
  };
  EventJsonError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// The event in `text`: a JSON object. `audio_type` is the dialect's audio event ("type"), the one
// allowed past max_event_bytes. Throws EventJsonError, its message one to show the client.
nlohmann::json parse_event(std::string_view text, std::string_view audio_type, const EventJsonLimits& limits);

}  // namespace voxrt::server

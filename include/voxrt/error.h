// voxrt::Error: the one exception type voxrt throws. Its message is meant for the user and names the
// file, field or byte at fault ("params.json: missing field n_kv_heads"). Public so that callers can
// catch it apart from other failures; nothing in the library aborts.
//
// Three kinds are told apart by their type, for callers that answer others (a server's status
// codes): the engine had no room (BusyError: the same call may succeed later), the input is at fault
// (InputError: it fails again whenever it is given), the caller cancelled (CancelledError).
// Everything else is a plain Error; an option at fault is an OptionError, which names its field.
#pragma once

#include <stdexcept>
#include <string>

#include "voxrt/export.h"

namespace voxrt {

class VOXRT_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// The engine could not take the work now: full (max_sessions, the caches), overloaded (the live
// sessions would fall behind), or the wait for room ran out. Retrying later may succeed.
class VOXRT_API BusyError : public Error {
 public:
  using Error::Error;
};

// The input cannot be transcribed as given: audio that does not decode, longer than the caller's
// limit (TranscribeOptions::max_audio_seconds) or than the engine could ever hold.
class VOXRT_API InputError : public Error {
 public:
  using Error::Error;
};

// An option's value is not one voxrt takes (an EngineOptions field, a delay). what() starts with the
// field's name as the API spells it ("draft_rows 40: expected 0 (automatic) to 32"); field() is that
// name alone, so that a front end can say the same with its own name for the option (renamed()).
class VOXRT_API OptionError : public Error {
 public:
  // after_field follows the name: " 40: expected ..." (a value) or ": ..." (none).
  OptionError(const std::string& field, const std::string& after_field) : Error(field + after_field), field_(field) {}
  const std::string& field() const { return field_; }
  // The message with `name` in place of the field's name: renamed("--draft-rows").
  std::string renamed(const std::string& name) const { return name + std::string(what()).substr(field_.size()); }

 private:
  std::string field_;
};

// The caller's TranscribeOptions::cancelled said stop; nothing more was decoded.
class VOXRT_API CancelledError : public Error {
 public:
  using Error::Error;
};

}  // namespace voxrt

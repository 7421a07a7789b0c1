// Base64 (RFC 4648, standard alphabet): tekken.json's token bytes, and the audio realtime clients
// send. Strict, because junk in either must be an error named to whoever sent it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace voxrt {

// The decoded bytes, or nullopt for a character outside the alphabet, more than two '=', '=' with
// a length that is not a multiple of 4, or a length no encoding has. Padding is optional.
std::optional<std::string> base64_decode(std::string_view in);
std::string base64_encode(std::string_view bytes);  // padded

}  // namespace voxrt

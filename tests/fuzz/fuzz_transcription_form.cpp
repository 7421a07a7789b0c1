// libFuzzer target: the server's multipart/form-data parser and OpenAI transcription fields on any
// bytes (scripts/fuzz.sh). The input's first line is the Content-Type, the rest the body. Every
// input must either parse or be refused with a RequestError (400); anything else (another
// exception, a crash, a read out of bounds under ASan, undefined behaviour under UBSan) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/multipart_form.h"
#include "server/openai_transcriptions.h"
#include "server/request_error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t eol = input.find('\n');
  const std::string_view type = input.substr(0, eol);
  const std::string_view body = eol == std::string_view::npos ? std::string_view() : input.substr(eol + 1);
  try {
    const auto parts = voxrt::server::parse_form(type, body);
    for (const auto& p : parts)  // every view lies inside the body
      if (p.data.data() < body.data() || p.data.data() + p.data.size() > body.data() + body.size()) std::abort();
    voxrt::server::parse_transcription_request(parts, voxrt::model_delays());
  } catch (const voxrt::server::RequestError& e) {
    if (e.status() != 400) std::abort();
  }
  return 0;
}

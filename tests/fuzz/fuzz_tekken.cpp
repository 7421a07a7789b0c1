// libFuzzer target: loading tekken.json (src/tokenizer/tekken.cpp) from any bytes, then decoding
// (scripts/fuzz.sh): the vocabulary's base64 token_bytes, the special tokens, the config and audio
// blocks. Every file must either load or be refused with voxrt::Error. A loaded tokenizer then decodes
// every id it has, the ids around its edges (negative, the last special, past the end) and each
// token alone; decode() promises UTF-8, invalid bytes becoming U+FFFD. Anything else is a bug:
// another exception, a crash, a read out of bounds (ASan), undefined behaviour (UBSan), memory that
// follows a configured size rather than the file (scripts/fuzz.sh caps it), a control token (<s>,
// </s>, [STREAMING_PAD], [STREAMING_WORD]) that is not a special id, or text that is not UTF-8.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "fuzz_input_file.h"
#include "tokenizer/tekken.h"

namespace {

// An independent check of the decoder's promise (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF).
bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = len == 1 ? b : b & (0x7f >> len);
    for (size_t k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    const uint32_t min = len == 1 ? 0 : len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace voxrt;
  static fuzz::InputFile file("tekken.json");
  std::optional<Tokenizer> tok;
  try {
    tok = Tokenizer::load(file.write(data, size));
  } catch (const Error&) {
    return 0;
  }
  const int n = tok->vocab_size(), special = tok->num_special();
  if (special < 0 || n < special) std::abort();
  // The control tokens the engine steers by are special ones, never text.
  for (int id : {tok->bos_id(), tok->eos_id(), tok->streaming_pad_id(), tok->streaming_word_id()})
    if (!tok->is_special(id)) std::abort();

  std::vector<int32_t> ids = {-1, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(),
                              special - 1, special, n - 1, n};
  for (int id = special; id < n; ++id) ids.push_back(id);
  if (!valid_utf8(tok->decode(ids))) std::abort();
  for (int32_t id : ids) {
    const int32_t one[] = {id};
    if (!valid_utf8(tok->decode(one))) std::abort();
    if (!tok->token_bytes(id).empty() && (id < special || id >= n)) std::abort();
  }
  return 0;
}

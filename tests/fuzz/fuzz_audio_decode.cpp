// libFuzzer target: an uploaded audio file decoded as uploads are (scripts/fuzz.sh): the bytes as a
// file, opened by AudioFileReader (open_audio_source: libmpg123 for MP3, libsndfile for WAV, FLAC, Ogg Vorbis, Opus,
// and the rest libsndfile reads), down-mixed and resampled to 16 kHz mono, read in the chunks
// load_audio_mono reads. Every file must either decode or be refused with voxrt::Error; anything
// else is a bug: another exception, a crash, a read out of bounds (ASan) or undefined behaviour
// (UBSan) in voxrt, a crash in libsndfile or its codecs (built without sanitizers, they fault only
// on what leaves their mappings), a hang (scripts/fuzz.sh limits the time per input), or memory
// beyond the reader's bound (one block and one read's output, whatever the file's rate, channels or
// length).
//
// A few KB of FLAC can hold hours of audio (a decompression bomb). Decoding stops after kMaxSamples
// here, so that the fuzzer measures robustness, not duration; the limit on an upload's duration is
// the server's.
#include <sndfile.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string_view>
#include <vector>

#include "audio/audio_reader.h"
#include "common/error.h"
#include "fuzz_input_file.h"

namespace {

constexpr size_t kChunkSamples = 1 << 16;    // load_audio_mono's read size
constexpr int64_t kMaxSamples = 16000 * 30;  // 30 s of 16 kHz output

// libsndfile and its codecs are the system's libraries, without coverage instrumentation: libFuzzer
// sees only voxrt's code take its paths. These counters tell it what a file did inside libsndfile
// instead (its container and codec, channels, rate, how much decoded, or which error), so that an
// input reaching a new outcome there is kept and mutated further.
__attribute__((section("__libfuzzer_extra_counters"))) uint8_t outcomes[1 << 14];

void note(uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  const uint64_t h = (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full) ^ (c * 0x165667B19E3779F9ull);
  outcomes[(h ^ (h >> 29)) % sizeof outcomes] = 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace voxrt;
  static fuzz::InputFile file("upload");
  const std::filesystem::path& path = file.write(data, size);
  SF_INFO info{};
  if (SNDFILE* f = sf_open(path.c_str(), SFM_READ, &info)) {
    note(1, static_cast<uint32_t>(info.format), std::bit_width(static_cast<unsigned>(info.channels)));
    note(2, static_cast<uint32_t>(info.format), std::bit_width(static_cast<unsigned>(info.samplerate)));
    note(3, static_cast<uint32_t>(info.format), std::bit_width(static_cast<uint64_t>(info.frames)));
    sf_close(f);
  }
  try {
    AudioFileReader reader(path, 16000);
    const size_t channels = static_cast<size_t>(reader.source_channels());
    // The reader's buffers: the block read from the file and its mono mix, and the output pending:
    // under one read's worth plus one block's (at most kBlockFrames samples and the filter's
    // latency, whatever the rates), held in a vector that may have doubled.
    const size_t block = AudioFileReader::kBlockFrames;
    const size_t bound = block * (channels + 1) + 2 * (kChunkSamples + 2 * block);
    std::vector<float> samples;
    while (reader.samples_read() < kMaxSamples && reader.read(samples, kChunkSamples) > 0)
      if (reader.buffered_capacity() > bound) std::abort();
    note(4, static_cast<uint32_t>(info.format), std::bit_width(static_cast<uint64_t>(reader.samples_read())));
  } catch (const Error& e) {
    note(5, std::hash<std::string_view>()(e.what()));
  }
  return 0;
}

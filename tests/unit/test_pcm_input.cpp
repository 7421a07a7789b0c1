// The byte-stream audio decoder behind `voxrt stream`: WAV headers and PCM that arrive split at
// any byte (one byte at a time, random chunk sizes), every supported encoding, the sizes pipe
// writers put in headers, chunks to skip, clear errors, and streaming resampling that matches the
// one-shot resampler used for files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "audio/audio_file.h"
#include "audio/pcm_stream.h"
#include "checkpoint_test_util.h"
#include "common/error.h"
#include "temp_dir.h"
#include "test_paths.h"

namespace voxrt::test {
namespace {

using Bytes = std::vector<uint8_t>;
const std::string kHint = "use --raw s16le for headerless PCM";

void put_u16(Bytes& b, uint32_t v) {
  b.push_back(static_cast<uint8_t>(v));
  b.push_back(static_cast<uint8_t>(v >> 8));
}
void put_u32(Bytes& b, uint32_t v) {
  put_u16(b, v & 0xFFFF);
  put_u16(b, v >> 16);
}
void put_id(Bytes& b, const char* id) { b.insert(b.end(), id, id + 4); }
void put_chunk(Bytes& b, const char* id, const Bytes& body) {
  put_id(b, id);
  put_u32(b, static_cast<uint32_t>(body.size()));
  b.insert(b.end(), body.begin(), body.end());
  if (body.size() % 2) b.push_back(0);  // RIFF pads odd chunks
}

struct WavSpec {
  uint16_t tag = 1;  // 1 PCM, 3 float
  int channels = 1;
  int rate = 16000;
  int bits = 16;
  bool extensible = false;
  std::optional<uint32_t> data_size;  // unset: the real size
  Bytes before_data;                  // extra chunks between fmt and data
};

Bytes fmt_body(const WavSpec& s) {
  Bytes f;
  put_u16(f, s.extensible ? 0xFFFE : s.tag);
  put_u16(f, static_cast<uint32_t>(s.channels));
  put_u32(f, static_cast<uint32_t>(s.rate));
  put_u32(f, static_cast<uint32_t>(s.rate * s.channels * s.bits / 8));
  put_u16(f, static_cast<uint32_t>(s.channels * s.bits / 8));
  put_u16(f, static_cast<uint32_t>(s.bits));
  if (s.extensible) {
    put_u16(f, 22);
    put_u16(f, static_cast<uint32_t>(s.bits));  // valid bits
    put_u32(f, 0);                              // channel mask
    put_u16(f, s.tag);                          // the GUID's first two bytes carry the real tag
    const uint8_t guid_rest[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};
    f.insert(f.end(), guid_rest, guid_rest + 14);
  }
  return f;
}

Bytes make_wav(const WavSpec& s, const Bytes& pcm) {
  Bytes b;
  put_id(b, "RIFF");
  put_u32(b, s.data_size ? 0xFFFFFFFFu : static_cast<uint32_t>(4 + 8 + fmt_body(s).size() + s.before_data.size() + 8 + pcm.size()));
  put_id(b, "WAVE");
  put_chunk(b, "fmt ", fmt_body(s));
  b.insert(b.end(), s.before_data.begin(), s.before_data.end());
  put_id(b, "data");
  put_u32(b, s.data_size.value_or(static_cast<uint32_t>(pcm.size())));
  b.insert(b.end(), pcm.begin(), pcm.end());
  return b;
}

// Random PCM bytes for `samples` samples and the floats libsndfile would read from them.
struct Pcm {
  Bytes bytes;
  std::vector<float> values;  // interleaved
};
Pcm random_pcm(SampleType type, size_t samples, uint32_t seed) {
  std::mt19937 rng(seed);
  Pcm p;
  for (size_t i = 0; i < samples; ++i) {
    const uint32_t r = rng();
    switch (type) {
      case SampleType::U8:
        p.bytes.push_back(static_cast<uint8_t>(r));
        p.values.push_back((static_cast<int>(r & 0xFF) - 128) / 128.0f);
        break;
      case SampleType::S16:
        put_u16(p.bytes, r & 0xFFFF);
        p.values.push_back(static_cast<int16_t>(r & 0xFFFF) / 32768.0f);
        break;
      case SampleType::S24: {
        const int32_t v = static_cast<int32_t>(r << 8) >> 8;
        for (int k = 0; k < 3; ++k) p.bytes.push_back(static_cast<uint8_t>(r >> (8 * k)));
        p.values.push_back(static_cast<float>(v) / 8388608.0f);
        break;
      }
      case SampleType::S32:
        put_u32(p.bytes, r);
        p.values.push_back(static_cast<float>(static_cast<int32_t>(r)) / 2147483648.0f);
        break;
      case SampleType::F32: {
        const float f = std::uniform_real_distribution<float>(-1, 1)(rng);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        put_u32(p.bytes, u);
        p.values.push_back(f);
        break;
      }
      case SampleType::F64: {
        const double d = std::uniform_real_distribution<double>(-1, 1)(rng);
        uint8_t raw[8];
        std::memcpy(raw, &d, 8);
        p.bytes.insert(p.bytes.end(), raw, raw + 8);
        p.values.push_back(static_cast<float>(d));
        break;
      }
      default:
        ADD_FAILURE() << "random_pcm: no random samples for " << sample_type_name(type);
        return p;
    }
  }
  return p;
}

std::vector<float> mono_of(const std::vector<float>& interleaved, int channels) {
  return downmix_to_mono(interleaved, channels);
}

// Chunk-size policies: every byte alone, a fixed size, or random sizes (1 to max).
using Splitter = std::function<size_t(size_t /*remaining*/)>;
Splitter fixed(size_t n) {
  return [n](size_t) { return n; };
}
Splitter random_sizes(uint32_t seed, size_t max) {
  auto rng = std::make_shared<std::mt19937>(seed);
  return [rng, max](size_t) { return std::uniform_int_distribution<size_t>(1, max)(*rng); };
}

std::vector<float> feed(PcmStream& s, const Bytes& bytes, const Splitter& split) {
  std::vector<float> out;
  for (size_t pos = 0; pos < bytes.size();) {
    const size_t n = std::min(split(bytes.size() - pos), bytes.size() - pos);
    s.push(std::span<const uint8_t>(bytes).subspan(pos, n), out);
    pos += n;
  }
  s.finish(out);
  return out;
}

std::vector<float> decode_wav(const Bytes& bytes, const Splitter& split, int target_rate = 0) {
  PcmStreamOptions o;
  o.not_wav_hint = kHint;
  if (target_rate == 0) {
    // Read the rate from the header first so that no resampling happens.
    PcmStream probe(o);
    std::vector<float> ignored;
    probe.push(bytes, ignored);
    o.target_rate = probe.format() ? probe.format()->sample_rate : 16000;
  } else {
    o.target_rate = target_rate;
  }
  PcmStream stream(o);
  return feed(stream, bytes, split);
}

std::vector<float> decode_raw(const Bytes& bytes, PcmFormat f, const Splitter& split, int target_rate) {
  PcmStreamOptions o;
  o.raw = f;
  o.target_rate = target_rate;
  PcmStream s(o);
  return feed(s, bytes, split);
}

std::vector<Splitter> all_splitters() {
  return {fixed(1), fixed(2), fixed(3), fixed(7), fixed(37), fixed(4096), random_sizes(1, 50), random_sizes(2, 3000)};
}

TEST(PcmInput, WavS16MonoAnySplit) {
  const Pcm pcm = random_pcm(SampleType::S16, 5000, 1);
  const Bytes wav = make_wav({}, pcm.bytes);
  for (const Splitter& split : all_splitters()) EXPECT_EQ(decode_wav(wav, split), pcm.values);
}

TEST(PcmInput, EveryWavEncodingAndChannelCount) {
  struct Case {
    uint16_t tag;
    int bits;
    SampleType type;
  };
  const Case cases[] = {{1, 8, SampleType::U8},   {1, 16, SampleType::S16}, {1, 24, SampleType::S24},
                        {1, 32, SampleType::S32}, {3, 32, SampleType::F32}, {3, 64, SampleType::F64}};
  for (const Case& c : cases) {
    for (int channels : {1, 2, 3}) {
      for (bool extensible : {false, true}) {
        SCOPED_TRACE(sample_type_name(c.type) + " x" + std::to_string(channels) + (extensible ? " extensible" : ""));
        const Pcm pcm = random_pcm(c.type, 999 * static_cast<size_t>(channels), 7);
        WavSpec spec{.tag = c.tag, .channels = channels, .rate = 22050, .bits = c.bits, .extensible = extensible};
        const Bytes wav = make_wav(spec, pcm.bytes);
        const std::vector<float> want = mono_of(pcm.values, channels);
        EXPECT_EQ(decode_wav(wav, fixed(1)), want);
        EXPECT_EQ(decode_wav(wav, random_sizes(3, 200)), want);
      }
    }
  }
}

TEST(PcmInput, FormatIsKnownOnceTheHeaderIsIn) {
  const Pcm pcm = random_pcm(SampleType::S24, 100, 1);
  const Bytes wav = make_wav({.channels = 2, .rate = 48000, .bits = 24}, pcm.bytes);
  PcmStream s(PcmStreamOptions{.raw = std::nullopt, .target_rate = 48000});
  std::vector<float> out;
  s.push(std::span<const uint8_t>(wav).first(20), out);
  EXPECT_FALSE(s.format());
  s.push(std::span<const uint8_t>(wav).subspan(20, 30), out);
  ASSERT_TRUE(s.format());
  EXPECT_EQ(s.format()->type, SampleType::S24);
  EXPECT_EQ(s.format()->channels, 2);
  EXPECT_EQ(s.format()->sample_rate, 48000);
}

TEST(PcmInput, UnknownDataSizeMeansUntilTheEnd) {
  // arecord writes 0x7FFFFFFF or 0 when writing to a pipe; ffmpeg 0xFFFFFFFF.
  const Pcm pcm = random_pcm(SampleType::S16, 3001, 2);
  for (uint32_t size : {0x7FFFFFFFu, 0u, 0xFFFFFFFFu, 0x7FFFF000u}) {
    SCOPED_TRACE(size);
    const Bytes wav = make_wav({.data_size = size}, pcm.bytes);
    EXPECT_EQ(decode_wav(wav, random_sizes(size, 100)), pcm.values);
  }
}

TEST(PcmInput, KnownDataSizeIgnoresTrailingChunks) {
  const Pcm pcm = random_pcm(SampleType::S16, 400, 3);
  Bytes wav = make_wav({}, pcm.bytes);
  put_chunk(wav, "LIST", Bytes(33, 'x'));
  EXPECT_EQ(decode_wav(wav, fixed(5)), pcm.values);
}

TEST(PcmInput, ChunksBeforeDataAreSkipped) {
  WavSpec spec;
  put_chunk(spec.before_data, "LIST", Bytes(27, 'i'));  // odd: a pad byte follows
  put_chunk(spec.before_data, "fact", Bytes{1, 2, 3, 4});
  put_chunk(spec.before_data, "junk", Bytes{});
  const Pcm pcm = random_pcm(SampleType::S16, 700, 4);
  const Bytes wav = make_wav(spec, pcm.bytes);
  for (const Splitter& split : all_splitters()) EXPECT_EQ(decode_wav(wav, split), pcm.values);
}

TEST(PcmInput, PipedWavFileMatchesTheFileReader) {
  // jfk.wav carries a LIST chunk before its data (as ffmpeg writes it).
  const std::filesystem::path jfk = test_data() / "audio" / "jfk.wav";
  const Bytes bytes = testutil::read_bytes(jfk);
  EXPECT_EQ(decode_wav(bytes, random_sizes(5, 5000), 16000), load_audio_mono(jfk));
}

TEST(PcmInput, PipedStereo44kMatchesTheFileReaderAfterResampling) {
  const std::filesystem::path f = test_data() / "audio" / "stereo_44k.wav";
  const std::vector<float> want = load_audio_mono(f);
  const std::vector<float> got = decode_wav(testutil::read_bytes(f), random_sizes(6, 6000), 16000);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << "sample " << i;
}

TEST(PcmInput, RawS16AndF32AnySplitIncludingOddByteCounts) {
  for (SampleType type : {SampleType::S16, SampleType::S32, SampleType::F32}) {
    for (int channels : {1, 2}) {
      SCOPED_TRACE(sample_type_name(type) + " x" + std::to_string(channels));
      const Pcm pcm = random_pcm(type, 2000 * static_cast<size_t>(channels), 9);
      const PcmFormat f{type, 16000, channels};
      const std::vector<float> want = mono_of(pcm.values, channels);
      for (const Splitter& split : all_splitters()) EXPECT_EQ(decode_raw(pcm.bytes, f, split, 16000), want);
    }
  }
}

TEST(PcmInput, G711WavDecodesAsLibsndfileDecodesTheFile) {
  // Every one of the 256 codes, A-law (tag 6) and mu-law (tag 7), piped and as a file.
  Bytes codes(256);
  for (int i = 0; i < 256; ++i) codes[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  testutil::TempDir dir;
  for (uint16_t tag : {uint16_t{6}, uint16_t{7}}) {
    SCOPED_TRACE("format tag " + std::to_string(tag));
    WavSpec spec;
    spec.tag = tag;
    spec.rate = 8000;
    spec.bits = 8;
    const Bytes wav = make_wav(spec, codes);
    const std::filesystem::path file = dir / ("g711_" + std::to_string(tag) + ".wav");
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(wav.data()), static_cast<std::streamsize>(wav.size()));
    const std::vector<float> want = load_audio_mono(file, 8000);
    EXPECT_EQ(decode_wav(wav, fixed(7), 8000), want);
    // Spot values of G.711's tables: the loudest codes and the quietest.
    const PcmFormat raw{tag == 7 ? SampleType::MuLaw : SampleType::ALaw, 8000, 1};
    const std::vector<float> got = decode_raw(codes, raw, fixed(256), 8000);
    if (tag == 7) {
      EXPECT_EQ(got[0x00], -32124 / 32768.0f);
      EXPECT_EQ(got[0x80], 32124 / 32768.0f);
      EXPECT_EQ(got[0xFF], 0.0f);
    } else {
      EXPECT_EQ(got[0xAA], 32256 / 32768.0f);
      EXPECT_EQ(got[0x2A], -32256 / 32768.0f);
      EXPECT_EQ(got[0xD5], 8 / 32768.0f);
    }
  }
}

TEST(PcmInput, HalfFloatSamples) {
  Bytes bytes;
  for (uint16_t h : {0x3C00, 0xC000, 0x0000, 0x8000, 0x3800, 0x0001, 0x03FF, 0x7BFF, 0x3555}) put_u16(bytes, h);
  const std::vector<float> got = decode_raw(bytes, {SampleType::F16, 16000, 1}, fixed(3), 16000);
  const std::vector<float> want = {1.0f, -2.0f, 0.0f, -0.0f, 0.5f, std::ldexp(1.0f, -24), std::ldexp(1023.0f, -24),
                                   65504.0f, 0.333251953125f};
  EXPECT_EQ(got, want);
  EXPECT_TRUE(std::signbit(got[3]));
}

TEST(PcmInput, PartialFrameAtTheEndIsDropped) {
  const Pcm pcm = random_pcm(SampleType::S16, 10, 1);
  Bytes bytes = pcm.bytes;
  bytes.push_back(0x7F);  // half a sample: a writer killed mid-write
  EXPECT_EQ(decode_raw(bytes, {SampleType::S16, 16000, 1}, fixed(3), 16000), pcm.values);
}

TEST(PcmInput, RawSampleTypeNames) {
  EXPECT_EQ(parse_raw_sample_type("s16le"), SampleType::S16);
  EXPECT_EQ(parse_raw_sample_type("f32le"), SampleType::F32);
  EXPECT_EQ(parse_raw_sample_type("f16le"), SampleType::F16);
  EXPECT_EQ(parse_raw_sample_type("mulaw"), SampleType::MuLaw);
  EXPECT_EQ(parse_raw_sample_type("alaw"), SampleType::ALaw);
  testutil::expect_error([] { parse_raw_sample_type("mp3"); }, {"--raw mp3", "s16le"});
}

std::string wav_error(const Bytes& bytes, const Splitter& split) {
  return testutil::error_message([&] { decode_wav(bytes, split, 16000); });
}

TEST(PcmInput, NonWavInputIsRejectedAtOnceWithAHint) {
  const std::string text = "hello, this is not audio at all\n";
  const Bytes garbage(text.begin(), text.end());
  const std::string want = "stdin: not a WAV stream (expected 'RIFF'); " + kHint;
  EXPECT_EQ(wav_error(garbage, fixed(1)), want);
  EXPECT_EQ(wav_error(garbage, fixed(4096)), want);
  // Rejected on the first byte that cannot start a WAV stream, not at the end of the input.
  PcmStream s(PcmStreamOptions{.not_wav_hint = kHint});
  std::vector<float> out;
  const uint8_t h = 'h';
  EXPECT_THROW(s.push(std::span<const uint8_t>(&h, 1), out), Error);
  // Too short to be anything: still "not a WAV stream", not "truncated".
  EXPECT_EQ(wav_error(Bytes{'x', 'y'}, fixed(1)), want);
}

TEST(PcmInput, HeaderErrorsAreClear) {
  const Pcm pcm = random_pcm(SampleType::S16, 100, 1);
  Bytes avi = make_wav({}, pcm.bytes);
  std::memcpy(avi.data() + 8, "AVI ", 4);
  EXPECT_NE(wav_error(avi, fixed(3)).find("form type 'AVI ', expected 'WAVE'"), std::string::npos);

  const std::string adpcm = wav_error(make_wav({.tag = 2, .bits = 4}, pcm.bytes), fixed(1));
  EXPECT_NE(adpcm.find("unsupported WAV encoding (format tag 0x0002, 4 bits)"), std::string::npos) << adpcm;

  Bytes no_fmt;
  put_id(no_fmt, "RIFF");
  put_u32(no_fmt, 100);
  put_id(no_fmt, "WAVE");
  put_chunk(no_fmt, "data", pcm.bytes);
  EXPECT_NE(wav_error(no_fmt, fixed(1)).find("data chunk before the fmt chunk"), std::string::npos);

  Bytes bad_align = make_wav({.channels = 2}, pcm.bytes);
  bad_align[32] = 3;  // block align
  EXPECT_NE(wav_error(bad_align, fixed(9)).find("block align 3"), std::string::npos);
}

TEST(PcmInput, StreamEndingInsideTheHeaderIsAnError) {
  const Bytes wav = make_wav({}, random_pcm(SampleType::S16, 100, 1).bytes);
  for (size_t cut : {2, 4, 11, 12, 20, 43}) {
    SCOPED_TRACE(cut);
    const std::string e = wav_error(Bytes(wav.begin(), wav.begin() + static_cast<std::ptrdiff_t>(cut)), fixed(1));
    EXPECT_NE(e.find("stdin: WAV stream ended inside its header (after " + std::to_string(cut) + " bytes"),
              std::string::npos)
        << e;
  }
  EXPECT_EQ(wav_error(Bytes{}, fixed(1)), "stdin: no input (expected a WAV stream)");
  // The header alone, data chunk included, is a valid empty stream.
  EXPECT_TRUE(decode_wav(Bytes(wav.begin(), wav.begin() + 44), fixed(1)).empty());
}

// ---- streaming resampler ----

std::vector<float> test_signal(size_t n, int rate) {
  std::mt19937 rng(42);
  std::normal_distribution<float> noise(0, 0.05f);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / rate;
    x[i] = static_cast<float>(0.4 * std::sin(2 * M_PI * 440 * t) + 0.2 * std::sin(2 * M_PI * 3100 * t)) + noise(rng);
  }
  return x;
}

std::vector<float> resample_streaming(const std::vector<float>& x, int from, int to, const std::vector<size_t>& chunks) {
  StreamResampler r(from, to);
  std::vector<float> out;
  size_t pos = 0;
  for (size_t k = 0; pos < x.size(); ++k) {
    const size_t n = std::min(chunks[k % chunks.size()], x.size() - pos);
    r.process(std::span<const float>(x).subspan(pos, n), out);
    pos += n;
  }
  r.finish(out);
  return out;
}

TEST(PcmInput, StreamingResamplingEqualsOneShot) {
  for (int from : {8000, 11025, 22050, 44100, 48000}) {
    const std::vector<float> x = test_signal(static_cast<size_t>(from) * 3 / 2 + 17, from);
    const std::vector<float> want = resample(x, from, 16000);
    for (const std::vector<size_t>& chunks :
         std::vector<std::vector<size_t>>{{1}, {37}, {160}, {1280}, {4000}, {1, 37, 160, 1280, 4000, 3, 999}}) {
      SCOPED_TRACE(std::to_string(from) + " Hz in chunks of " + std::to_string(chunks[0]) + "...");
      const std::vector<float> got = resample_streaming(x, from, 16000, chunks);
      ASSERT_EQ(got.size(), want.size());
      float worst = 0;
      for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
      EXPECT_LE(worst, 1e-4f);
    }
  }
}

TEST(PcmInput, StreamingResamplerEdgeCases) {
  std::vector<float> out;
  StreamResampler empty(44100, 16000);
  empty.finish(out);
  EXPECT_TRUE(out.empty());
  StreamResampler tiny(48000, 16000);
  tiny.process(std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f}, out);
  tiny.finish(out);
  EXPECT_EQ(out.size(), 1u);  // round(4 / 3)
  tiny.finish(out);           // twice is harmless
  EXPECT_EQ(out.size(), 1u);
}

TEST(PcmInput, RawAtAnotherRateIsResampledIncrementally) {
  // 44.1 kHz stereo s16 on a pipe: the samples come out as the first chunks arrive, not at EOF.
  const Pcm pcm = random_pcm(SampleType::S16, 44100 * 2, 11);
  PcmStream s(PcmStreamOptions{.raw = PcmFormat{SampleType::S16, 44100, 2}});
  std::vector<float> out;
  s.push(std::span<const uint8_t>(pcm.bytes).first(pcm.bytes.size() / 2), out);
  EXPECT_GT(out.size(), 7000u);  // most of the first 0.5 s (the filter holds back a little)
  s.push(std::span<const uint8_t>(pcm.bytes).subspan(pcm.bytes.size() / 2), out);
  s.finish(out);
  const std::vector<float> want = resample(mono_of(pcm.values, 2), 44100, 16000);
  ASSERT_EQ(out.size(), want.size());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 1e-4) << i;
}

TEST(PcmInput, InvalidRawFormatIsRejected) {
  testutil::expect_error([] { PcmStream(PcmStreamOptions{.raw = PcmFormat{SampleType::S16, 0, 1}}); },
                         {"stdin", "invalid sample rate 0"});
  testutil::expect_error([] { PcmStream(PcmStreamOptions{.raw = PcmFormat{SampleType::S16, 16000, 0}}); },
                         {"stdin", "invalid channel count 0"});
}

}  // namespace
}  // namespace voxrt::test

#include "audio/pcm_stream.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

#include "common/error.h"

namespace voxrt {

// Samples are copied straight from the byte stream into host integers and floats.
static_assert(std::endian::native == std::endian::little, "pcm_stream assumes a little-endian host");

namespace {

uint16_t u16_at(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t u32_at(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

// G.711 (ITU-T, 1988) expansion to 16-bit linear. mu-law: the byte is stored inverted; its exponent
// shifts a mantissa biased by 0x84 (132), which is taken off again.
int mulaw_to_linear(uint8_t byte) {
  const int u = static_cast<uint8_t>(~byte);
  const int magnitude = (((u & 0x0F) << 3) + 0x84) << ((u >> 4) & 7);
  return (u & 0x80) ? 0x84 - magnitude : magnitude - 0x84;
}

// A-law: even bits inverted (XOR 0x55); segment 0 is linear, the others shift a mantissa carrying
// its implied leading one; the sign bit set means positive.
int alaw_to_linear(uint8_t byte) {
  const int a = byte ^ 0x55;
  const int exponent = (a >> 4) & 7, mantissa = a & 0x0F;
  const int magnitude = exponent == 0 ? (mantissa << 4) + 8 : ((mantissa << 4) + 0x108) << (exponent - 1);
  return (a & 0x80) ? magnitude : -magnitude;
}

// IEEE 754 half precision (1 sign, 5 exponent, 10 mantissa bits) to float, subnormals included.
float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const int exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x3FF, bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);  // inf, NaN
  } else if (exponent != 0) {
    bits = sign | static_cast<uint32_t>(exponent - 15 + 127) << 23 | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // +-0
  } else {  // subnormal: normalise it
    int e = -1;
    do {
      mantissa <<= 1;
      ++e;
    } while (!(mantissa & 0x400));
    bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | ((mantissa & 0x3FF) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// One sample as libsndfile's sf_read_float returns it (normalised by the integer range, so the
// values are exact: the scales are powers of two).
float sample_at(const uint8_t* p, SampleType t) {
  switch (t) {
    case SampleType::U8: return static_cast<float>(static_cast<int>(p[0]) - 128) * (1.0f / 128.0f);
    case SampleType::S16: return static_cast<float>(static_cast<int16_t>(u16_at(p))) * (1.0f / 32768.0f);
    case SampleType::S24: {
      // Sign-extend by placing the 3 bytes at the top of an int32.
      const int32_t v = static_cast<int32_t>(static_cast<uint32_t>(p[0]) << 8 | static_cast<uint32_t>(p[1]) << 16 |
                                             static_cast<uint32_t>(p[2]) << 24);
      return static_cast<float>(v >> 8) * (1.0f / 8388608.0f);
    }
    case SampleType::S32: return static_cast<float>(static_cast<int32_t>(u32_at(p))) * (1.0f / 2147483648.0f);
    case SampleType::F16: return half_to_float(u16_at(p));
    case SampleType::MuLaw: return static_cast<float>(mulaw_to_linear(p[0])) * (1.0f / 32768.0f);
    case SampleType::ALaw: return static_cast<float>(alaw_to_linear(p[0])) * (1.0f / 32768.0f);
    case SampleType::F32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case SampleType::F64: {
      double d;
      std::memcpy(&d, p, 8);
      return static_cast<float>(d);
    }
  }
  return 0.0f;
}

std::string fourcc(const uint8_t* p) {
  std::string s(reinterpret_cast<const char*>(p), 4);
  for (char& c : s)
    if (c < 0x20 || c > 0x7e) c = '?';
  return s;
}

// Data sizes that mean "unknown": 0 (arecord, some encoders) and values near 2^31 or 2^32 (arecord
// writes 0x7FFFFFFF, ffmpeg and RF64 0xFFFFFFFF, sox rounds down to a block multiple).
bool is_unknown_data_size(uint32_t size) { return size == 0 || size >= 0x7FFF0000u; }

constexpr uint32_t kMaxFmtBytes = 1024;  // real fmt chunks are 16, 18 or 40 bytes
constexpr int kMaxChannels = 256;
constexpr int kMaxSampleRate = 1'000'000;

}  // namespace

int bytes_per_sample(SampleType t) {
  switch (t) {
    case SampleType::U8:
    case SampleType::MuLaw:
    case SampleType::ALaw: return 1;
    case SampleType::F16: return 2;
    case SampleType::S16: return 2;
    case SampleType::S24: return 3;
    case SampleType::S32: return 4;
    case SampleType::F32: return 4;
    case SampleType::F64: return 8;
  }
  return 0;
}

std::string sample_type_name(SampleType t) {
  switch (t) {
    case SampleType::U8: return "u8";
    case SampleType::S16: return "s16le";
    case SampleType::S24: return "s24le";
    case SampleType::S32: return "s32le";
    case SampleType::F32: return "f32le";
    case SampleType::F64: return "f64le";
    case SampleType::F16: return "f16le";
    case SampleType::MuLaw: return "mulaw";
    case SampleType::ALaw: return "alaw";
  }
  return "?";
}

SampleType parse_raw_sample_type(const std::string& name) {
  if (name == "s16le") return SampleType::S16;
  if (name == "s32le") return SampleType::S32;
  if (name == "f32le") return SampleType::F32;
  if (name == "f16le") return SampleType::F16;
  if (name == "mulaw") return SampleType::MuLaw;
  if (name == "alaw") return SampleType::ALaw;
  // "s24le" is left out on purpose: ALSA's S24_LE is 24 bits in a 4-byte container, not packed.
  throw Error("--raw " + name + ": expected s16le, s32le, f32le, f16le, mulaw or alaw");
}

// ---- PcmDecoder ----

PcmDecoder::PcmDecoder(const PcmFormat& format) : format_(format) {
  check(format.channels > 0, "PcmDecoder", "invalid channel count " + std::to_string(format.channels));
}

void PcmDecoder::decode_frames(const uint8_t* p, size_t frames, std::vector<float>& out) const {
  const int channels = format_.channels;
  const size_t bps = static_cast<size_t>(bytes_per_sample(format_.type));
  const size_t frame_bytes = bps * static_cast<size_t>(channels);
  out.reserve(out.size() + frames);
  for (size_t i = 0; i < frames; ++i, p += frame_bytes) {
    if (channels == 1) {
      out.push_back(sample_at(p, format_.type));
      continue;
    }
    double sum = 0.0;  // as downmix_to_mono does, so a piped file matches the file read directly
    for (int c = 0; c < channels; ++c) sum += sample_at(p + static_cast<size_t>(c) * bps, format_.type);
    out.push_back(static_cast<float>(sum / channels));
  }
}

void PcmDecoder::decode(std::span<const uint8_t> bytes, std::vector<float>& out) {
  const size_t frame_bytes = static_cast<size_t>(format_.frame_bytes());
  if (!partial_.empty()) {
    const size_t take = std::min(frame_bytes - partial_.size(), bytes.size());
    partial_.insert(partial_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(take));
    bytes = bytes.subspan(take);
    if (partial_.size() < frame_bytes) return;
    decode_frames(partial_.data(), 1, out);
    partial_.clear();
  }
  const size_t frames = bytes.size() / frame_bytes;
  decode_frames(bytes.data(), frames, out);
  partial_.assign(bytes.begin() + static_cast<std::ptrdiff_t>(frames * frame_bytes), bytes.end());
}

// ---- WavStreamParser ----

WavStreamParser::WavStreamParser(std::string source, std::string not_wav_hint)
    : source_(std::move(source)), not_wav_hint_(std::move(not_wav_hint)) {}

void WavStreamParser::fail(const std::string& what) const { throw Error(source_ + ": " + what); }

std::span<const uint8_t> WavStreamParser::push(std::span<const uint8_t> bytes) {
  total_bytes_ += bytes.size();
  while (!bytes.empty()) {
    switch (state_) {
      case State::Data: {
        // Everything from here is audio, up to the declared size when there is one.
        const size_t take = data_left_ ? static_cast<size_t>(std::min<uint64_t>(*data_left_, bytes.size())) : bytes.size();
        if (data_left_) {
          *data_left_ -= take;
          if (*data_left_ == 0) state_ = State::Trailer;
        }
        return bytes.first(take);
      }
      case State::Trailer:  // chunks after the data (LIST at the end of a file): not audio
        return {};
      case State::Skip: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(skip_, bytes.size()));
        skip_ -= n;
        bytes = bytes.subspan(n);
        if (skip_ == 0) {
          state_ = State::ChunkHeader;
          need_ = 8;
        }
        break;
      }
      default: {
        const size_t n = std::min(need_ - buf_.size(), bytes.size());
        buf_.insert(buf_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
        bytes = bytes.subspan(n);
        // Reject non-WAV input from its first 4 bytes, without waiting for a whole header.
        if (state_ == State::Riff && buf_.size() - n < 4) check_riff_magic();
        if (buf_.size() == need_) on_buffer_full();
        break;
      }
    }
  }
  return {};
}

// True when the first min(n, 4) bytes agree with "RIFF" or "RF64" (RF64: WAV with 64-bit sizes).
bool WavStreamParser::magic_matches(size_t n) const {
  n = std::min<size_t>(n, 4);
  return std::memcmp(buf_.data(), "RIFF", n) == 0 || std::memcmp(buf_.data(), "RF64", n) == 0;
}

void WavStreamParser::check_riff_magic() const {
  if (!magic_matches(buf_.size()))
    fail("not a WAV stream (expected 'RIFF')" + (not_wav_hint_.empty() ? "" : "; " + not_wav_hint_));
}

void WavStreamParser::on_buffer_full() {
  switch (state_) {
    case State::Riff:
      if (std::memcmp(buf_.data() + 8, "WAVE", 4) != 0)
        fail("not a WAV stream (RIFF form type '" + fourcc(buf_.data() + 8) + "', expected 'WAVE')");
      state_ = State::ChunkHeader;
      need_ = 8;
      break;
    case State::ChunkHeader: on_chunk_header(); break;
    case State::FmtBody:
      on_fmt_body();
      state_ = State::ChunkHeader;
      need_ = 8;
      break;
    default: break;
  }
  buf_.clear();
}

void WavStreamParser::on_chunk_header() {
  const std::string id = fourcc(buf_.data());
  const uint32_t size = u32_at(buf_.data() + 4);
  if (id == "fmt ") {
    if (size < 16 || size > kMaxFmtBytes) fail("WAV fmt chunk of " + std::to_string(size) + " bytes (expected 16 to 40)");
    state_ = State::FmtBody;
    need_ = size + (size & 1);  // chunk bodies are padded to an even length
  } else if (id == "data") {
    if (!format_) fail("WAV data chunk before the fmt chunk");
    if (!is_unknown_data_size(size)) data_left_ = size;
    state_ = State::Data;
  } else {
    skip_ = static_cast<uint64_t>(size) + (size & 1);
    state_ = skip_ > 0 ? State::Skip : State::ChunkHeader;
    need_ = 8;
  }
}

void WavStreamParser::on_fmt_body() {
  const uint8_t* p = buf_.data();
  uint16_t tag = u16_at(p);
  const int channels = u16_at(p + 2);
  const uint32_t rate = u32_at(p + 4);
  const int block_align = u16_at(p + 12);
  const int bits = u16_at(p + 14);
  if (tag == 0xFFFE) {  // WAVE_FORMAT_EXTENSIBLE: the real tag opens the sub-format GUID
    if (buf_.size() < 40) fail("WAV extensible fmt chunk of " + std::to_string(buf_.size()) + " bytes (expected 40)");
    tag = u16_at(p + 24);
  }
  std::optional<SampleType> type;
  if (tag == 1 && bits == 8) type = SampleType::U8;
  if (tag == 1 && bits == 16) type = SampleType::S16;
  if (tag == 1 && bits == 24) type = SampleType::S24;
  if (tag == 1 && bits == 32) type = SampleType::S32;
  if (tag == 3 && bits == 32) type = SampleType::F32;
  if (tag == 3 && bits == 64) type = SampleType::F64;
  if (tag == 6 && bits == 8) type = SampleType::ALaw;
  if (tag == 7 && bits == 8) type = SampleType::MuLaw;
  if (!type) {
    char tag_hex[8];
    std::snprintf(tag_hex, sizeof tag_hex, "0x%04x", tag);
    fail(std::string("unsupported WAV encoding (format tag ") + tag_hex + ", " + std::to_string(bits) +
         " bits); supported: PCM 8/16/24/32-bit, float 32/64-bit, A-law and mu-law");
  }
  if (channels < 1 || channels > kMaxChannels) fail("WAV header: invalid channel count " + std::to_string(channels));
  if (rate < 1 || rate > kMaxSampleRate) fail("WAV header: invalid sample rate " + std::to_string(rate));
  PcmFormat f{*type, static_cast<int>(rate), channels};
  if (block_align != f.frame_bytes())
    fail("WAV header: block align " + std::to_string(block_align) + " does not match " + std::to_string(channels) +
         " channels of " + std::to_string(bits) + " bits");
  format_ = f;
}

void WavStreamParser::finish() const {
  if (state_ == State::Data || state_ == State::Trailer) return;
  if (total_bytes_ == 0) fail("no input (expected a WAV stream)");
  // A stream too short to show its magic is called non-WAV unless it starts like "RIFF".
  if (state_ == State::Riff && buf_.size() < 4) check_riff_magic();
  fail("WAV stream ended inside its header (after " + std::to_string(total_bytes_) + " bytes, before the data chunk)");
}

// ---- PcmStream ----

PcmStream::PcmStream(PcmStreamOptions options) : options_(std::move(options)) {
  if (options_.raw) {
    const PcmFormat& f = *options_.raw;
    check(f.channels >= 1 && f.channels <= kMaxChannels, options_.source, "invalid channel count " + std::to_string(f.channels));
    check(f.sample_rate >= 1 && f.sample_rate <= kMaxSampleRate, options_.source,
          "invalid sample rate " + std::to_string(f.sample_rate));
    start(f);
  } else {
    wav_ = std::make_unique<WavStreamParser>(options_.source, options_.not_wav_hint);
  }
}

PcmStream::~PcmStream() = default;

void PcmStream::start(const PcmFormat& format) {
  format_ = format;
  decoder_.emplace(format);
  if (format.sample_rate != options_.target_rate)
    resampler_ = std::make_unique<StreamResampler>(format.sample_rate, options_.target_rate);
}

void PcmStream::decode(std::span<const uint8_t> bytes, std::vector<float>& out) {
  if (bytes.empty()) return;
  if (!resampler_) {
    decoder_->decode(bytes, out);
    return;
  }
  mono_.clear();
  decoder_->decode(bytes, mono_);
  resampler_->process(mono_, out);
}

void PcmStream::push(std::span<const uint8_t> bytes, std::vector<float>& out) {
  if (wav_) {
    bytes = wav_->push(bytes);
    if (!format_ && wav_->format()) start(*wav_->format());
  }
  decode(bytes, out);
}

void PcmStream::finish(std::vector<float>& out) {
  if (wav_) wav_->finish();
  if (resampler_) resampler_->finish(out);
}

}  // namespace voxrt

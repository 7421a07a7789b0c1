// Decoding audio that arrives as a byte stream (a pipe, a socket): headerless PCM or a WAV stream
// whose header is parsed as the bytes come, down-mixed to mono and resampled incrementally. Every
// piece accepts any split of the input (one byte at a time included): partial headers and partial
// samples are carried over to the next call. Used by `voxrt stream` for standard input.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "audio/stream_resampler.h"

namespace voxrt {

// Little-endian sample encodings. U8 is unsigned (WAV's 8-bit PCM); S24 is packed in 3 bytes; F16
// is IEEE half precision; MuLaw and ALaw are G.711's 8-bit companded telephone samples.
enum class SampleType { U8, S16, S24, S32, F16, F32, F64, MuLaw, ALaw };

int bytes_per_sample(SampleType t);
std::string sample_type_name(SampleType t);  // "s16le", ...
// Names accepted for headerless input: s16le, s32le, f32le, f16le, mulaw, alaw. Throws
// voxrt::Error otherwise.
SampleType parse_raw_sample_type(const std::string& name);

struct PcmFormat {
  SampleType type = SampleType::S16;
  int sample_rate = 16000;
  int channels = 1;
  int frame_bytes() const { return bytes_per_sample(type) * channels; }
};

// Interleaved PCM bytes -> mono floats in [-1, 1]. The conversion and the channel average are the
// ones libsndfile + downmix_to_mono apply to files, so a piped WAV gives the samples the same WAV
// file would give.
class PcmDecoder {
 public:
  explicit PcmDecoder(const PcmFormat& format);
  // Appends one mono sample per complete frame; an incomplete frame waits for the next call.
  void decode(std::span<const uint8_t> bytes, std::vector<float>& out);
  size_t pending_bytes() const { return partial_.size(); }

 private:
  void decode_frames(const uint8_t* p, size_t frames, std::vector<float>& out) const;
  PcmFormat format_;
  std::vector<uint8_t> partial_;  // the start of a frame split across calls
};

// The RIFF/WAVE header of a stream, parsed incrementally. Chunks before `data` other than `fmt `
// (LIST, fact, PEAK, RF64's ds64...) are skipped without being buffered. A data size of 0 or near
// 2^31/2^32 is what writers to a pipe (arecord, sox, ffmpeg) put there when they cannot seek back:
// it means "until the end of the stream".
class WavStreamParser {
 public:
  // `source` names the stream in error messages; `not_wav_hint` is appended to the error for
  // input that is not WAV at all (the CLI suggests its --raw option there).
  explicit WavStreamParser(std::string source = "stdin", std::string not_wav_hint = "");
  // Consumes the bytes and returns the part of them that is audio payload (a sub-span of `bytes`).
  // Throws voxrt::Error as soon as the header is known to be invalid or unsupported.
  std::span<const uint8_t> push(std::span<const uint8_t> bytes);
  // End of the stream: throws voxrt::Error if it ended before the data chunk.
  void finish() const;
  const std::optional<PcmFormat>& format() const { return format_; }

 private:
  enum class State { Riff, ChunkHeader, FmtBody, Skip, Data, Trailer };
  void on_buffer_full();
  bool magic_matches(size_t n) const;
  void check_riff_magic() const;
  void on_chunk_header();
  void on_fmt_body();
  [[noreturn]] void fail(const std::string& what) const;

  std::string source_, not_wav_hint_;
  State state_ = State::Riff;
  std::vector<uint8_t> buf_;  // the header piece being assembled
  size_t need_ = 12;          // bytes buf_ must hold before it is parsed
  uint64_t skip_ = 0;         // bytes of an ignored chunk still to skip
  std::optional<uint64_t> data_left_;  // unset: data runs to the end of the stream
  std::optional<PcmFormat> format_;
  uint64_t total_bytes_ = 0;
};

struct PcmStreamOptions {
  std::optional<PcmFormat> raw;  // set: headerless PCM in this format; unset: a WAV stream
  int target_rate = 16000;
  std::string source = "stdin";
  std::string not_wav_hint;
};

// Bytes in, mono samples at target_rate out: WAV header parsing (or none), decoding, down-mixing
// and streaming resampling, chained.
class PcmStream {
 public:
  explicit PcmStream(PcmStreamOptions options);
  ~PcmStream();
  // Appends the samples the bytes complete (none while a WAV header is still arriving).
  void push(std::span<const uint8_t> bytes, std::vector<float>& out);
  // End of the stream: appends the resampler's tail. Throws if a WAV stream ended inside its header.
  // A trailing partial frame (a writer killed mid-sample) is dropped.
  void finish(std::vector<float>& out);
  // The input format, once known (at once for raw input, after the header for WAV).
  const std::optional<PcmFormat>& format() const { return format_; }

 private:
  void start(const PcmFormat& format);
  void decode(std::span<const uint8_t> bytes, std::vector<float>& out);

  PcmStreamOptions options_;
  std::unique_ptr<WavStreamParser> wav_;
  std::optional<PcmFormat> format_;
  std::optional<PcmDecoder> decoder_;
  std::unique_ptr<StreamResampler> resampler_;
  std::vector<float> mono_;  // scratch: decoded samples before resampling
};

}  // namespace voxrt

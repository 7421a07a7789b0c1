#include "audio/mpg123_source.h"

#include <mpg123.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>

#include "common/error.h"

namespace voxrt {
namespace {

// A layer I, II or III frame header: 11 sync bits, a version and layer that are not reserved, a
// bitrate index that is not "bad", a sample rate index that is not reserved. (ADTS AAC shares the
// sync word with layer bits 00, and is not read.)
bool is_mpeg_frame_header(const std::array<unsigned char, 4>& b) {
  const int version = (b[1] >> 3) & 3, layer = (b[1] >> 1) & 3, bitrate = b[2] >> 4, rate = (b[2] >> 2) & 3;
  return b[0] == 0xFF && (b[1] & 0xE0) == 0xE0 && version != 1 && layer != 0 && bitrate != 15 && rate != 3;
}

}  // namespace

bool Mpg123Source::starts_as_mpeg_audio(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, 10> head{};
  std::streamoff at = 0;
  // ID3v2 tags (sometimes more than one) come before the first frame: "ID3", version, flags, and a
  // size in four 7-bit bytes, not counting the 10-byte header nor a 10-byte footer (flag 0x10).
  for (int tag = 0; tag < 8; ++tag) {
    in.seekg(at);
    if (!in.read(reinterpret_cast<char*>(head.data()), head.size())) return false;
    if (head[0] != 'I' || head[1] != 'D' || head[2] != '3') break;
    if ((head[6] | head[7] | head[8] | head[9]) & 0x80) return false;  // not a tag's size
    const std::streamoff size = (std::streamoff{head[6]} << 21) | (head[7] << 14) | (head[8] << 7) | head[9];
    at += 10 + size + ((head[5] & 0x10) ? 10 : 0);
  }
  return is_mpeg_frame_header({head[0], head[1], head[2], head[3]});
}

void Mpg123Source::Closer::operator()(mpg123_handle_struct* handle) const {
  mpg123_close(handle);
  mpg123_delete(handle);
}

Mpg123Source::Mpg123Source(const std::filesystem::path& path) : AudioSource(path) {
  const std::string where = path.string();
  // Once per process: libmpg123's tables (a no-op since 1.27, required before).
  static std::once_flag initialised;
  static int init_status = MPG123_OK;
  std::call_once(initialised, [] { init_status = mpg123_init(); });
  if (init_status != MPG123_OK)
    throw Error(where + ": cannot decode audio: libmpg123 did not initialise: " + mpg123_plain_strerror(init_status));
  int status = MPG123_OK;
  handle_.reset(mpg123_new(nullptr, &status));
  if (!handle_) throw Error(where + ": cannot decode audio: libmpg123: " + mpg123_plain_strerror(status));
  mpg123_handle* h = handle_.get();
  // libsndfile's settings (floats at the file's own rate, encoder delay and padding removed) but
  // two: no printing (a damaged stream is reported by what decodes, not by notes on standard
  // error), and MP3 files joined end to end (`cat a.mp3 b.mp3`, a "Frankenstein" stream, which
  // libsndfile stops at the join) decode whole.
  mpg123_param(h, MPG123_REMOVE_FLAGS, MPG123_AUTO_RESAMPLE, 0.0);
  mpg123_param(h, MPG123_ADD_FLAGS, MPG123_QUIET | MPG123_FORCE_FLOAT | MPG123_GAPLESS, 0.0);
  mpg123_param(h, MPG123_RESYNC_LIMIT, kResyncLimitBytes, 0.0);
  if (mpg123_open(h, where.c_str()) != MPG123_OK)
    throw Error(where + ": cannot decode audio: " + mpg123_strerror(h));
  long rate = 0;
  int channels = 0, encoding = 0;
  if (mpg123_getformat(h, &rate, &channels, &encoding) != MPG123_OK) throw Error(where + ": cannot decode audio: " + kNoFrames);
  // The output format is the first frame's from here on. A later frame of another channel count or
  // rate (a file joined to another, or damage taken for a frame) is mixed or copied to these
  // channels and resampled by libmpg123 to this rate, rather than ending the audio there (with an
  // error libmpg123 prints past MPG123_QUIET). Frames at this rate are not resampled: the samples of
  // a file of one format are libsndfile's.
  mpg123_param(h, MPG123_FORCE_RATE, rate, 0.0);
  mpg123_format_none(h);
  if (mpg123_format(h, rate, channels, MPG123_ENC_FLOAT_32) != MPG123_OK)
    throw Error(where + ": cannot decode audio: libmpg123 cannot give floats at " + std::to_string(rate) + " Hz");
  // The length from a Xing/Info header, else from a scan of the frames (reads the file once).
  off_t length = mpg123_length(h);
  if (length <= 0 && mpg123_scan(h) == MPG123_OK) length = mpg123_length(h);
  set_format(rate, channels, length >= 0 ? std::optional<int64_t>(length) : std::nullopt);
}

size_t Mpg123Source::decode(float* dst, size_t frames) {
  if (ended_) return 0;
  const size_t frame_bytes = sizeof(float) * static_cast<size_t>(channels());
  // libmpg123 may announce the format once more (at the first read, at a join): read on. Another
  // format cannot come out (see the constructor); should one, the audio ends there.
  for (int announcements = 0; announcements < 4; ++announcements) {
    size_t done = 0;
    const int status = mpg123_read(handle_.get(), reinterpret_cast<unsigned char*>(dst), frames * frame_bytes, &done);
    if (status == MPG123_NEW_FORMAT) {
      long rate = 0;
      int channels_now = 0, encoding = 0;
      mpg123_getformat(handle_.get(), &rate, &channels_now, &encoding);
      if (rate != sample_rate() || channels_now != channels() || encoding != MPG123_ENC_FLOAT_32) {
        ended_ = true;
        return done / frame_bytes;  // what decoded before the change
      }
      if (done == 0) continue;
    }
    // A decoder error (damage past the resync limit, a cut-off frame) reads as the end: partial
    // audio is more useful than none.
    return done / frame_bytes;
  }
  return 0;
}

}  // namespace voxrt

// Audio files the audio and memory tests make: long ones written quickly (a WAV whose data is a hole
// in a sparse file: hours of silence that cost no disk and no encoding; a FLAC of quiet noise
// written in one-second blocks, a real compressed format as users have it) and a damaged one.
#pragma once

#include <sndfile.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace voxrt::testutil {

// Writes interleaved float samples with libsndfile in `format` (SF_FORMAT_WAV | SF_FORMAT_FLOAT,
// SF_FORMAT_FLAC | SF_FORMAT_PCM_16, ...). Throws std::runtime_error when it cannot.
inline void write_audio_file(const std::filesystem::path& path, const std::vector<float>& interleaved, int rate,
                             int channels, int format) {
  SF_INFO info{};
  info.samplerate = rate;
  info.channels = channels;
  info.format = format;
  SNDFILE* f = sf_open(path.c_str(), SFM_WRITE, &info);
  if (f == nullptr) throw std::runtime_error(path.string() + ": " + sf_strerror(nullptr));
  const auto frames = static_cast<sf_count_t>(interleaved.size() / static_cast<size_t>(channels));
  const bool ok = sf_writef_float(f, interleaved.data(), frames) == frames;
  if (sf_close(f) != 0 || !ok) throw std::runtime_error(path.string() + ": write failed");
}

// A 16-bit PCM WAV of `frames` frames of silence. Only the 44-byte header is written; the data is
// the hole that resize_file leaves (reads as zeros).
inline void write_sparse_silent_wav(const std::filesystem::path& path, int rate, int channels, uint64_t frames) {
  const uint32_t block_align = 2u * static_cast<uint32_t>(channels);
  const uint64_t data_bytes = frames * block_align;
  if (data_bytes > 0xFFFFFFFFull - 36) throw std::runtime_error("write_sparse_silent_wav: too long for RIFF");
  std::string h;
  auto u32 = [&h](uint32_t v) { for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>(v >> (8 * i))); };
  auto u16 = [&h](uint16_t v) { for (int i = 0; i < 2; ++i) h.push_back(static_cast<char>(v >> (8 * i))); };
  h += "RIFF";
  u32(static_cast<uint32_t>(36 + data_bytes));
  h += "WAVEfmt ";
  u32(16);
  u16(1);  // PCM
  u16(static_cast<uint16_t>(channels));
  u32(static_cast<uint32_t>(rate));
  u32(static_cast<uint32_t>(rate) * block_align);
  u16(static_cast<uint16_t>(block_align));
  u16(16);
  h += "data";
  u32(static_cast<uint32_t>(data_bytes));
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(h.data(), static_cast<std::streamsize>(h.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
  }
  std::filesystem::resize_file(path, h.size() + data_bytes);
}

// A 16-bit FLAC of `seconds` of quiet pseudo-random noise (a few LSBs: fast to encode and decode).
inline void write_quiet_noise_flac(const std::filesystem::path& path, int rate, int channels, int seconds) {
  SF_INFO info{};
  info.samplerate = rate;
  info.channels = channels;
  info.format = SF_FORMAT_FLAC | SF_FORMAT_PCM_16;
  SNDFILE* f = sf_open(path.c_str(), SFM_WRITE, &info);
  if (f == nullptr) throw std::runtime_error(path.string() + ": " + sf_strerror(nullptr));
  std::vector<int16_t> block(static_cast<size_t>(rate) * static_cast<size_t>(channels));
  uint32_t x = 1;
  bool ok = true;
  for (int s = 0; s < seconds && ok; ++s) {
    for (int16_t& v : block) {
      x = x * 1664525u + 1013904223u;  // a fixed LCG: the same file every run
      v = static_cast<int16_t>(static_cast<int>(x >> 16) % 8);
    }
    ok = sf_writef_short(f, block.data(), rate) == rate;
  }
  if (sf_close(f) != 0 || !ok) throw std::runtime_error(path.string() + ": FLAC write failed");
}

// Cuts a FLAC file right after its metadata blocks: the header still announces every frame, none
// is left to decode.
inline void cut_flac_after_metadata(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> head(4);
  in.read(reinterpret_cast<char*>(head.data()), 4);
  if (std::string(head.begin(), head.end()) != "fLaC") throw std::runtime_error(path.string() + ": not FLAC");
  uint64_t end = 4;
  for (bool last = false; !last;) {
    unsigned char h[4];
    if (!in.read(reinterpret_cast<char*>(h), 4)) throw std::runtime_error(path.string() + ": metadata cut short");
    last = (h[0] & 0x80) != 0;
    const uint32_t length = static_cast<uint32_t>(h[1]) << 16 | static_cast<uint32_t>(h[2]) << 8 | h[3];
    end += 4 + length;
    in.seekg(static_cast<std::streamoff>(end));
  }
  in.close();
  std::filesystem::resize_file(path, end);
}

}  // namespace voxrt::testutil

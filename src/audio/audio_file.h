// Decoding audio files to 16 kHz mono float samples: libsndfile reads WAV/FLAC/OGG/Opus (and
// whatever else the installed libsndfile supports), libmpg123 MP3, channels are averaged, soxr resamples.
// Whole-file functions, for tests and tools; what runs on files of any length reads them
// incrementally (audio/audio_reader.h) and writes them incrementally (audio/wav_writer.h).
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

namespace voxrt {

struct DecodedAudio {
  std::vector<float> samples;  // interleaved when channels > 1
  int sample_rate = 0;
  int channels = 0;
};

// Reads the whole file. Throws voxrt::Error("<path>: <what is wrong>") for missing or undecodable
// files and for a header whose data is cut off entirely; a truncated file gives what decoded, a
// file of 0 frames no samples.
DecodedAudio read_audio_file(const std::filesystem::path& path);

// Averages the channels of interleaved samples.
std::vector<float> downmix_to_mono(const std::vector<float>& interleaved, int channels);
// The same average for `frames` frames into mono[0, frames) (the incremental reader's form).
void downmix_frames(const float* interleaved, size_t frames, int channels, float* mono);

// High-quality resampling (soxr, VHQ). Returns the input unchanged when the rates are equal.
std::vector<float> resample(const std::vector<float>& mono, int from_rate, int to_rate);

// Writes mono float samples as a 32-bit float WAV (what `voxrt decode-audio` produces: the exact
// samples the engine hears). Throws voxrt::Error naming the path on failure.
void write_wav_f32(const std::filesystem::path& path, const std::vector<float>& mono, int sample_rate);

// The whole file as AudioFileReader delivers it: down-mixed and resampled to target_rate.
std::vector<float> load_audio_mono(const std::filesystem::path& path, int target_rate = 16000);

}  // namespace voxrt

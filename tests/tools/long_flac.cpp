// voxrt_long_flac OUT.flac MINUTES [RATE] [CHANNELS]: writes a 16-bit FLAC of quiet noise of that
// length (default 48 kHz stereo), for measuring that memory does not grow with the input
// (scripts/flat_memory.sh). A real compressed format, as users have it, made on machines without
// sox (the GPU machine); the same bytes on every run.
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "../unit/audio_fixtures.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 5) {
    std::fprintf(stderr, "usage: %s OUT.flac MINUTES [RATE] [CHANNELS]\n", argv[0]);
    return 2;
  }
  try {
    const int minutes = std::stoi(argv[2]);
    const int rate = argc > 3 ? std::stoi(argv[3]) : 48000;
    const int channels = argc > 4 ? std::stoi(argv[4]) : 2;
    if (minutes < 1 || rate < 8000 || channels < 1) throw std::invalid_argument("MINUTES >= 1, RATE >= 8000, CHANNELS >= 1");
    voxrt::testutil::write_quiet_noise_flac(argv[1], rate, channels, minutes * 60);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "voxrt_long_flac: %s\n", e.what());
    return 1;
  }
  return 0;
}

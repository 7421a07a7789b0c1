// voxrt decode-audio IN OUT.wav: writes the 16 kHz mono float samples the engine hears for IN
// (after decoding, down-mixing and resampling), e.g. to check an input or to run the reference
// tool on exactly the same samples.
#include <iostream>
#include <memory>

#include "audio/audio_file.h"
#include "cli/commands.h"

namespace voxrt::cli {

void add_decode_audio_command(CLI::App& app) {
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("decode-audio", "Write the 16 kHz mono samples voxrt hears as a float WAV");
  cmd->add_option("input", *in, "Audio file (any format libsndfile reads)")->required();
  cmd->add_option("output", *out, "Output WAV (32-bit float, 16 kHz, mono)")->required();
  cmd->callback([in, out] {
    const std::vector<float> mono = load_audio_mono(*in, 16000);
    write_wav_f32(*out, mono, 16000);
    std::cerr << *out << ": " << mono.size() << " samples (" << mono.size() / 16000.0 << " s)\n";
  });
}

}  // namespace voxrt::cli

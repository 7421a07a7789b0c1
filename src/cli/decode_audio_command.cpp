// voxrt decode-audio IN OUT.wav: writes the 16 kHz mono float samples the engine hears for IN
// (after decoding, down-mixing and resampling), e.g. to check an input or to run the reference
// tool on exactly the same samples. OUT's extension names its container (.wav: the exact floats;
// .flac, .mp3, ...: to listen to). OUT is written beside its final name and renamed into place, and
// may not be IN itself.
#include <cstdio>
#include <iostream>
#include <memory>

#include "audio/audio_reader.h"
#include "audio/wav_writer.h"
#include "cli/audio_output_format.h"
#include "cli/commands.h"
#include "cli/input_check.h"
#include "cli/output_sink.h"
#include "common/error.h"

namespace voxrt::cli {

constexpr int kRate = 16000;  // what the engine hears

void add_decode_audio_command(CLI::App& app) {
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("decode-audio", "Write the 16 kHz mono samples voxrt hears (a float WAV, or the format OUT's extension names)");
  cmd->add_option("input", *in, "Audio file (any format libsndfile reads)")->required();
  cmd->add_option("output", *out,
                  "Output file, 16 kHz mono, in the format its extension names: .wav (32-bit float), .flac, .ogg, .opus, "
                  ".mp3, .aiff, .au, .caf, .w64, .rf64")
      ->required();
  cmd->add_flag("--quiet,-q", *quiet, "No messages on standard error (errors excepted)");
  cmd->callback([in, out, quiet] {
    const int format = sndfile_format_for_output(*out, kRate);
    check_audio_input(*in);
    if (same_file(*in, *out)) throw Error(*out + ": is the input; give another output file");
    const std::unique_ptr<OutputSink> sink = OutputSink::file(*out);
    // Block by block, so that hours of audio never sit in memory. libsndfile writes by name: to the
    // temporary, or to a device such as /dev/null directly.
    AudioFileReader reader(*in, kRate);
    WavFileWriter writer(sink->temporary_path().empty() ? std::filesystem::path(*out) : sink->temporary_path(), kRate,
                         format);
    std::vector<float> block;
    while (reader.read(block, AudioFileReader::kBlockFrames) > 0) writer.write(block);
    writer.close();
    sink->commit();
    if (*quiet) return;
    const int64_t samples = writer.samples_written();
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", static_cast<double>(samples) / kRate);
    std::cerr << *out << ": " << samples << " samples (" << seconds << " s)\n";
  });
}

}  // namespace voxrt::cli

// voxrt transcribe --model DIR [--delay-ms N] [--format txt|json|srt|vtt] [-o FILE] AUDIO...
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "cli/output_formats.h"
#include "common/error.h"
#include "voxrt/voxrt.h"
#include "voxtral/protocol.h"

namespace voxrt::cli {
namespace {

struct TranscribeArgs {
  EngineArgs engine;
  int delay_ms = 0;
  std::string format = "txt";
  std::string output;
  std::vector<std::string> inputs;
};

// Progress on stderr for inputs longer than this: short files finish before it would help.
constexpr double kProgressMinSeconds = 20.0;

class ProgressLine {
 public:
  ProgressLine(std::string name, bool enabled) : name_(std::move(name)), enabled_(enabled), tty_(isatty(2)) {}
  void update(int done, int total) {
    if (!enabled_ || total <= 0) return;
    const auto now = std::chrono::steady_clock::now();
    const int pct = static_cast<int>(100.0 * done / total);
    if (tty_) {
      if (done < total && now - last_ < std::chrono::milliseconds(200)) return;
      std::cerr << "\r" << name_ << ": " << pct << "% (" << done << "/" << total << " steps)" << std::flush;
    } else if (pct / 10 != last_pct_ / 10 || done == total) {
      std::cerr << name_ << ": " << pct << "%\n";
    }
    last_ = now;
    last_pct_ = pct;
  }
  void finish() {
    if (enabled_ && tty_) std::cerr << "\n";
  }

 private:
  std::string name_;
  bool enabled_, tty_;
  std::chrono::steady_clock::time_point last_{};
  int last_pct_ = -1;
};

void run_transcribe(const TranscribeArgs& a) {
  const Format format = parse_format(a.format);
  if (a.delay_ms != 0) delay_tokens_from_ms(a.delay_ms);  // reject bad delays before loading
  std::unique_ptr<Engine> engine = load_engine(a.engine);

  std::ofstream file;
  if (!a.output.empty()) {
    file.open(a.output, std::ios::binary);
    if (!file) throw Error(a.output + ": cannot open for writing");
  }
  std::ostream& out = a.output.empty() ? std::cout : file;
  for (const std::string& input : a.inputs) {
    try {
      TranscribeOptions to;
      to.delay_ms = a.delay_ms;
      auto progress = std::make_shared<ProgressLine>(input, false);
      to.progress = [&, progress](int done, int total) {
        // Enable once the input is known to be long: 12.5 steps per second of audio.
        if (done == 1 && total / 12.5 > kProgressMinSeconds && !a.engine.quiet)
          *progress = ProgressLine(input, true);
        progress->update(done, total);
      };
      const Transcript t = engine->transcribe_file(input, to);
      progress->finish();
      out << render(t, format, input) << std::flush;
    } catch (const std::exception& e) {
      std::cerr << "voxrt: error: " << e.what() << "\n";
      set_exit_status(1);
    }
  }
}

}  // namespace

void add_transcribe_command(CLI::App& app) {
  auto args = std::make_shared<TranscribeArgs>();
  CLI::App* cmd = app.add_subcommand("transcribe", "Transcribe audio files (offline, whole file)");
  add_engine_options(cmd, args->engine);
  add_delay_option(cmd, args->delay_ms);
  cmd->add_option("--format,-f", args->format, "Output format: txt, json, srt or vtt")->capture_default_str();
  cmd->add_option("--output,-o", args->output, "Write to FILE instead of standard output");
  cmd->add_option("audio", args->inputs, "Audio files (WAV, FLAC, OGG/Opus, MP3; any rate, any channels)")->required();
  cmd->callback([args] { run_transcribe(*args); });
}

}  // namespace voxrt::cli

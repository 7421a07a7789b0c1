// The voxrt command: transcribe files and live streams, pull the model, show what the engine hears,
// measure it. Each subcommand is set up by its own add_* function; run_command_line (usage.h) turns
// every outcome into one message style and exit status (0 done, 1 failure, 2 usage error).
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/data_files.h"
#include "cli/usage.h"

int main(int argc, char** argv) {
  voxrt::cli::set_program_path(argc > 0 ? argv[0] : nullptr);
  CLI::App app{"voxrt: Voxtral Realtime speech-to-text"};
  app.name("voxrt");  // in the help's usage line, which `voxrt` alone prints before any parse names it
  app.require_subcommand(1);
  app.set_version_flag("--version", "voxrt 0.1.0");
  voxrt::cli::add_transcribe_command(app);
  voxrt::cli::add_stream_command(app);
  voxrt::cli::add_serve_command(app);
  voxrt::cli::add_pull_command(app);
  voxrt::cli::add_quantize_command(app);
  voxrt::cli::add_decode_audio_command(app);
  voxrt::cli::add_bench_command(app);
  voxrt::cli::add_help_command(app);
  return voxrt::cli::run_command_line(app, argc, argv);
}

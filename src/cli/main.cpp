// The voxrt command: transcribe files, pull the model, show what the engine hears. Each subcommand is set up by its own
// function; errors print one line "voxrt: error: ..." and exit with status 1.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "common/error.h"

int main(int argc, char** argv) {
  CLI::App app{"voxrt: Voxtral Realtime speech-to-text"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "voxrt 0.1.0");
  voxrt::cli::add_transcribe_command(app);
  voxrt::cli::add_pull_command(app);
  voxrt::cli::add_decode_audio_command(app);
  voxrt::cli::add_bench_command(app);
  voxrt::cli::add_stream_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "voxrt: error: " << e.what() << "\n";
    return 1;
  }
  return voxrt::cli::exit_status();
}

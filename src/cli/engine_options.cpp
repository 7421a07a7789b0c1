#include "cli/engine_options.h"

#include <iostream>

#include "cli/commands.h"

namespace voxrt::cli {

void add_engine_options(CLI::App* cmd, EngineArgs& a) {
  cmd->add_option("--model,-m", a.model, "Model directory (default: the one `voxrt pull` downloads)");
  cmd->add_option("--device", a.device, "auto (a GPU if there is one), cuda or cpu")->capture_default_str();
  cmd->add_option("--gpu", a.gpu, "CUDA device index")->capture_default_str();
  cmd->add_option("--layout", a.layout, "Checkpoint files to read: auto, mistral or hf")->capture_default_str();
  cmd->add_option("--threads,-t", a.threads, "CPU threads (default: all cores)");
  cmd->add_option("--draft-rows", a.draft_rows,
                  "Decoder positions verified per pass when audio is ahead (0: 8 on the GPU, 1 on the CPU)")
      ->capture_default_str()
      ->check(CLI::Range(0, EngineOptions::kMaxDraftRows));
  cmd->add_flag("--quiet,-q", a.quiet, "No messages on standard error");
}

void add_delay_option(CLI::App* cmd, int& delay_ms) {
  cmd->add_option("--delay-ms", delay_ms, "Transcription delay: 80-1200 in steps of 80, or 2400 (default: tekken.json's, 480)");
}

std::unique_ptr<Engine> load_engine(const EngineArgs& a) {
  const std::filesystem::path dir = resolve_model_dir(a.model);
  EngineOptions eo;
  eo.device = a.device;
  eo.gpu = a.gpu;
  eo.threads = a.threads;
  eo.layout = a.layout;
  eo.draft_rows = a.draft_rows;
  std::unique_ptr<Engine> engine = Engine::load(dir, eo);
  const ModelInfo& info = engine->info();
  if (!a.quiet) {
    if (!info.device_note.empty()) std::cerr << "voxrt: " << info.device_note << "\n";
    std::cerr << "voxrt: loaded " << dir.string() << " (" << info.layout << " layout, " << info.backend << ") in "
              << info.load_seconds << " s\n";
  }
  return engine;
}

}  // namespace voxrt::cli

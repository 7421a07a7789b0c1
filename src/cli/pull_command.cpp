// voxrt pull [REPO] [--dir DIR] [--endpoint URL] [--layout mistral|hf]
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/usage.h"
#include "common/error.h"
#include "hub/pull.h"

namespace voxrt::cli {
namespace {

const char* kDefaultRepo = "mistralai/Voxtral-Mini-4B-Realtime-2602";

struct PullArgs {
  std::string repo = kDefaultRepo;
  std::string dir;
  std::string endpoint;
  std::string revision = "main";
  std::string layout = "mistral";
  bool quiet = false;
};

std::vector<std::string> layout_files(const std::string& layout) {
  if (layout == "mistral") return {"params.json", "consolidated.safetensors", "tekken.json"};
  if (layout == "hf") return {"config.json", "model.safetensors", "tekken.json"};
  throw UsageError("--layout " + layout + ": expected mistral or hf");
}

}  // namespace

std::filesystem::path resolve_model_dir(const std::string& model_option) {
  if (!model_option.empty()) return model_option;
  const std::filesystem::path dir = default_model_dir(kDefaultRepo);
  if (!std::filesystem::exists(dir / "tekken.json"))
    throw Error("no --model given and no model at " + dir.string() +
                ": run `voxrt pull` first, or pass --model DIR");
  return dir;
}

void add_pull_command(CLI::App& app) {
  auto args = std::make_shared<PullArgs>();
  CLI::App* cmd = app.add_subcommand("pull", "Download the model from the Hugging Face hub (resumable, verified)");
  cmd->add_option("repo", args->repo, "Repository id")->capture_default_str();
  cmd->add_option("--dir,-d", args->dir, "Target directory (default: ~/.cache/voxrt/<repo>)");
  cmd->add_option("--endpoint", args->endpoint, "Hub address (default: $HF_ENDPOINT or https://huggingface.co)");
  cmd->add_option("--revision", args->revision, "Branch, tag or commit")->capture_default_str();
  cmd->add_option("--layout", args->layout, "Files to fetch: mistral (params.json + consolidated.safetensors) or hf")
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", args->quiet, "No progress bar");
  cmd->callback([args] {
    PullOptions o;
    o.files = layout_files(args->layout);  // before anything is asked of the hub
    o.repo = args->repo;
    o.dir = args->dir;
    o.endpoint = args->endpoint;
    o.revision = args->revision;
    o.progress = !args->quiet;
    const std::filesystem::path dir = pull_model(o, std::cerr);
    std::cout << dir.string() << "\n";
  });
}

}  // namespace voxrt::cli

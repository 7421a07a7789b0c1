// voxrt pull [REPO] [--dir DIR] [--endpoint URL] [--layout mistral|hf]
#include <unistd.h>

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

// The hub is spoken to over HTTP(S) only: another scheme (ftp://, a bare host name) is a mistake
// in the command line, found before anything is asked of the network.
void check_endpoint(const std::string& endpoint) {
  if (endpoint.empty() || endpoint.starts_with("http://") || endpoint.starts_with("https://")) return;
  throw UsageError("--endpoint " + endpoint + ": expected an http:// or https:// address (e.g. https://hf-mirror.com)");
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
  cmd->add_flag("--quiet,-q", args->quiet, "No messages on standard error (errors excepted)");
  cmd->callback([args] {
    PullOptions o;
    o.files = layout_files(args->layout);  // before anything is asked of the hub
    check_endpoint(args->endpoint);
    o.repo = args->repo;
    o.dir = args->dir;
    o.endpoint = args->endpoint;
    o.revision = args->revision;
    // The bar redraws its line with '\r': in a log (stderr not a terminal) that is noise, and the
    // per-file lines say what happened.
    o.progress = !args->quiet && isatty(STDERR_FILENO);
    std::ostream silent(nullptr);  // -q: the per-file notes go nowhere; errors still throw
    const std::filesystem::path dir = pull_model(o, args->quiet ? silent : std::cerr);
    std::cout << dir.string() << "\n";
  });
}

}  // namespace voxrt::cli

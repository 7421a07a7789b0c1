// `voxrt pull`: fetch the official model directory from the Hugging Face hub (or a mirror named
// by HF_ENDPOINT). Each file is downloaded to <name>.part, resumed with a Range request when a
// part is already there, checked against the size and checksum the hub lists (sha256 for LFS
// files, the git blob sha1 otherwise) and only then renamed into place, so a file with the final
// name is always complete. Files already present and verified are skipped.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace voxrt {

struct PullOptions {
  std::string repo = "mistralai/Voxtral-Mini-4B-Realtime-2602";
  std::string revision = "main";
  std::filesystem::path dir;          // empty -> default_model_dir(repo)
  std::string endpoint;               // empty -> $HF_ENDPOINT, else https://huggingface.co
  std::vector<std::string> files;     // empty -> the Mistral layout: params.json, consolidated.safetensors, tekken.json
  bool progress = true;               // progress bar on the given stream
  long connect_timeout_s = 15;        // fail fast when the network is unreachable
};

// $VOXRT_MODELS, else $XDG_CACHE_HOME/voxrt, else ~/.cache/voxrt; then the repo id with '/'
// replaced by "--" (mistralai--Voxtral-Mini-4B-Realtime-2602). Throws Error if none is set.
std::filesystem::path default_model_dir(const std::string& repo);

// Downloads the wanted files of opts.repo at opts.revision into the model directory and returns
// it. Progress and skip notices go to `log`. Throws Error with a message naming the file, URL or
// host at fault; an interrupted download keeps its .part so the next call resumes it.
std::filesystem::path pull_model(const PullOptions& opts, std::ostream& log);

}  // namespace voxrt

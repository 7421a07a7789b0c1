// libFuzzer target: a checkpoint directory's configuration files (src/models/voxtral/config_json.cpp and
// src/models/voxtral/checkpoint.cpp) on any bytes (scripts/fuzz.sh). The input's first byte picks the file
// the rest becomes: params.json (Mistral layout), config.json (Hugging Face layout) or
// model.safetensors.index.json (a sharded Hugging Face checkpoint, beside config.json "{}"). The file
// is parsed alone, and the directory it sits in, whose weights file holds no tensor, is opened with
// Checkpoint::open as a model load would: every configuration the parser accepts is then checked
// against the tensors it asks for, so the first one is found missing.
//
// Every input must be refused with voxrt::Error (or, parsed alone, accepted); anything else is a
// bug: another exception, a crash, undefined behaviour (UBSan: a signed overflow or a division by
// zero on a huge or zero value), or work or memory that follows a configured size (a layer count of
// 2^31) rather than the files present (scripts/fuzz.sh caps memory and time per input).
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"
#include "models/voxtral/checkpoint.h"
#include "safetensors/safetensors.h"

namespace {

namespace fs = std::filesystem;

// Three model directories in memory-backed storage, removed at exit.
struct Directories {
  fs::path root, mistral, hf, sharded;
  Directories() {
    std::string tmpl = (fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path()) /
                       "voxrt-fuzz-config-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    root = tmpl;
    mistral = root / "mistral";
    hf = root / "hf";
    sharded = root / "sharded";
    for (const fs::path& d : {mistral, hf, sharded}) fs::create_directory(d);
    voxrt::write_safetensors(mistral / "consolidated.safetensors", {});
    voxrt::write_safetensors(hf / "model.safetensors", {});
    voxrt::write_safetensors(sharded / "model-00001-of-00001.safetensors", {});
    std::ofstream(sharded / "config.json") << "{}";  // the defaults: the full-size model
  }
  ~Directories() {
    std::error_code ignored;
    fs::remove_all(root, ignored);
  }
};

void write_file(const fs::path& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace voxrt;
  if (size == 0) return 0;
  static const Directories dirs;
  const int mode = data[0] % 3;
  const fs::path& dir = mode == 0 ? dirs.mistral : mode == 1 ? dirs.hf : dirs.sharded;
  const fs::path file = dir / (mode == 0 ? "params.json" : mode == 1 ? "config.json" : "model.safetensors.index.json");
  write_file(file, data + 1, size - 1);
  try {
    if (mode == 2) {
      parse_safetensors_index(file);
    } else {
      const ModelConfig c = mode == 0 ? parse_params_json(file) : parse_config_json(file);
      if (c.samples_per_position() <= 0) std::abort();  // the audio each decoder step consumes
    }
  } catch (const Error&) {
    return 0;  // Checkpoint::open refuses the file the same way
  }
  try {
    Checkpoint::open(dir);
  } catch (const Error&) {
    return 0;
  }
  std::abort();  // a directory without tensors opened
}

#include "engine/model_families.h"

#include <array>
#include <fstream>
#include <string>
#include <system_error>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "models/voxtral/checkpoint.h"

namespace voxrt {
namespace {

struct KnownFamily {
  const char* model_type;  // as a Hugging Face config.json names it
  ModelFamily family;
};
constexpr std::array kKnownFamilies = {KnownFamily{kVoxtralModelType, ModelFamily::Voxtral}};

}  // namespace

ModelFamily model_family_of(const std::filesystem::path& dir) {
  const std::filesystem::path config = dir / "config.json";
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(config, ec);
  if (ec || size > kMaxJsonFileBytes) return ModelFamily::Voxtral;  // refused by its reading
  std::ifstream in(config, std::ios::binary);
  const nlohmann::json root = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!root.is_object()) return ModelFamily::Voxtral;
  const auto type = root.find("model_type");
  if (type == root.end() || !type->is_string()) return ModelFamily::Voxtral;
  const std::string named = type->get<std::string>();
  std::string known;
  for (const KnownFamily& f : kKnownFamilies) {
    if (named == f.model_type) return f.family;
    known += (known.empty() ? "" : ", ") + std::string(f.model_type);
  }
  throw Error(config.string() + ": field model_type: \"" + named +
              "\" is a model voxrt does not run (it runs model_type " + known + ")");
}

}  // namespace voxrt

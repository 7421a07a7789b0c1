// Which model family a checkpoint directory holds (src/engine/model_families.h): the official
// Voxtral files in both layouts are Voxtral's; a directory of another model is refused by
// Engine::load, naming the file and the field, rather than read as a Voxtral checkpoint.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/model_families.h"
#include "temp_dir.h"
#include "test_paths.h"
#include "voxrt/error.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

namespace fs = std::filesystem;

TEST(ModelFamilies, TheOfficialLayoutsAreVoxtral) {
  EXPECT_EQ(model_family_of(test_data() / "tiny" / "mistral"), ModelFamily::Voxtral);
  EXPECT_EQ(model_family_of(test_data() / "tiny" / "hf"), ModelFamily::Voxtral);
}

// The tiny Hugging Face checkpoint whole, its config.json saying it is a Whisper model: every
// tensor Voxtral reads is there, so only the family check can tell.
TEST(ModelFamilies, AModelTypeNoFamilyRunsIsRefusedNamingTheFileAndTheField) {
  voxrt::testutil::TempDir dir;
  const fs::path hf = test_data() / "tiny" / "hf";
  for (const fs::directory_entry& e : fs::directory_iterator(hf))
    if (e.path().filename() != "config.json") fs::create_symlink(fs::absolute(e.path()), dir / e.path().filename().string());
  std::ifstream in(hf / "config.json");
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string top = "\"model_type\": \"voxtral_realtime\"";
  const size_t at = config.find(top);
  ASSERT_NE(at, std::string::npos) << config;
  config.replace(at, top.size(), "\"model_type\": \"whisper\"");
  std::ofstream(dir / "config.json") << config;

  try {
    Engine::load(dir.path());
    FAIL() << "a whisper config.json loaded";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find((dir / "config.json").string()), std::string::npos) << what;
    EXPECT_NE(what.find("model_type"), std::string::npos) << what;
    EXPECT_NE(what.find("\"whisper\""), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace voxrt::test

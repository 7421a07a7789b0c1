// The layers of src/ (docs/architecture.md, section 1, "Layer map"): each folder includes its own
// headers and those of the folders the map below allows, nothing else. Every folder shares the
// `src` include root, so linking the layers' targets in the map's direction (CMakeLists.txt) does
// not stop an include that runs up the floors or sideways; this test does, naming the file and the
// include. A new folder under src/ needs a row here (and in the docs' table) before it passes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;

// A folder under src/ (its own files, not its subfolders') and the folders whose headers it may
// include besides its own. "include/voxrt" is the public API.
const std::map<std::string, std::set<std::string>> kLayerMap = {
    {"common", {"include/voxrt"}},
    {"audio", {"common"}},
    {"tokenizer", {"common"}},
    {"safetensors", {"common"}},
    {"quant", {"common"}},
    {"runtime", {"quant", "common"}},
    {"runtime/cpu", {"runtime", "quant", "common"}},
    {"runtime/cuda", {"runtime", "quant", "common"}},
    {"models", {"runtime", "common"}},
    {"models/voxtral", {"models", "quant", "safetensors", "runtime", "audio", "tokenizer", "include/voxrt", "common"}},
    {"scheduler", {"models", "runtime", "include/voxrt", "common"}},
    {"engine", {"scheduler", "models", "models/voxtral", "runtime", "runtime/cuda", "quant", "safetensors", "audio", "tokenizer", "include/voxrt", "common"}},
    {"bench", {"engine", "scheduler", "models", "models/voxtral", "runtime", "quant", "safetensors", "include/voxrt", "common"}},
    {"bench/kernels", {"quant", "common"}},
    {"bench/kernels/cuda", {"bench/kernels", "runtime", "runtime/cuda", "common"}},
    {"hub", {"common"}},
    {"formats", {"include/voxrt", "common"}},
    {"server", {"formats", "audio", "include/voxrt", "common"}},
    {"server/web", {"server"}},
    {"cli", {"bench", "server", "formats", "hub", "audio", "include/voxrt", "common"}},
};

bool is_source(const fs::path& p) {
  static const std::set<std::string> kinds = {".h", ".hpp", ".cpp", ".cu", ".cuh", ".in"};
  return kinds.count(p.extension().string()) > 0;
}

// The folder an include names, as the map spells it: a header under src/ (the include root) or
// include/, or beside the including file (a relative include: its own folder). Empty for a
// system or third-party header.
std::string included_folder(const fs::path& root, const std::string& folder, const std::string& header) {
  std::error_code ec;
  if (fs::is_regular_file(root / "src" / header, ec)) return fs::path(header).parent_path().generic_string();
  if (fs::is_regular_file(root / "include" / header, ec)) return "include/" + fs::path(header).parent_path().generic_string();
  if (fs::is_regular_file(root / "src" / folder / header, ec)) return folder;
  return {};
}

// Every include under root/src/ that the map does not allow, as "src/FILE includes HEADER (FOLDER
// may include ...)"; a folder missing from the map is one entry too.
std::vector<std::string> layer_violations(const fs::path& root) {
  const std::regex include_line(R"re(^\s*#\s*include\s*[<"]([^>"]+)[>"])re");
  std::vector<std::string> found;
  std::set<std::string> unmapped;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(root / "src")) {
    if (!e.is_regular_file() || !is_source(e.path())) continue;
    const std::string file = e.path().lexically_relative(root / "src").generic_string();
    const std::string folder = fs::path(file).parent_path().generic_string();
    const auto row = kLayerMap.find(folder);
    if (row == kLayerMap.end()) {
      if (unmapped.insert(folder).second) found.push_back("src/" + folder + "/ is not in the layer map");
      continue;
    }
    std::ifstream in(e.path());
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
      if (!std::regex_search(line, m, include_line)) continue;
      const std::string header = m[1].str();
      const std::string to = included_folder(root, folder, header);
      if (to.empty() || to == folder || row->second.count(to)) continue;
      std::string allowed;
      for (const std::string& f : row->second) allowed += (allowed.empty() ? "" : ", ") + f;
      found.push_back("src/" + file + " includes " + header + " (" + folder + "/ may include " + allowed + ")");
    }
  }
  return found;
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(Layers, EveryIncludeUnderSrcIsOneTheLayerMapAllows) {
  const fs::path root = voxrt::test::test_data().parent_path().parent_path();
  ASSERT_TRUE(fs::is_directory(root / "src" / "engine")) << root;
  std::string report;
  for (const std::string& v : layer_violations(root)) report += "\n  " + v;
  EXPECT_TRUE(report.empty()) << "includes across the layers (docs/architecture.md, section 1):" << report;
}

// The check itself, on a tree of its own: an include up the floors, one sideways, and an unmapped
// folder are reported; the same includes where the map allows them are not.
TEST(Layers, TheCheckNamesTheFileAndTheIncludeThatCrossALayer) {
  voxrt::testutil::TempDir tree;
  write_file(tree / "include/voxrt/voxrt.h", "");
  write_file(tree / "src/engine/scheduler.h", "#include \"models/voxtral/model.h\"\n");
  write_file(tree / "src/models/voxtral/model.h", "#include \"runtime/backend.h\"\n#include <vector>\n");
  write_file(tree / "src/runtime/backend.h", "#include \"common/error.h\"\n");
  write_file(tree / "src/common/error.h", "#include \"voxrt/voxrt.h\"\n");
  write_file(tree / "src/formats/output.cpp", "#include \"formats/output.h\"\n#include \"voxrt/voxrt.h\"\n");
  write_file(tree / "src/formats/output.h", "");
  EXPECT_TRUE(layer_violations(tree.path()).empty());

  write_file(tree / "src/common/bad.cpp", "#include \"engine/scheduler.h\"\n");
  write_file(tree / "src/formats/sideways.cpp", "  #  include <models/voxtral/model.h>\n");
  write_file(tree / "src/plugins/x.cpp", "");
  const std::vector<std::string> v = layer_violations(tree.path());
  ASSERT_EQ(v.size(), 3u);
  const auto reported = [&](const std::string& text) {
    for (const std::string& s : v)
      if (s.find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(reported("src/common/bad.cpp includes engine/scheduler.h (common/ may include include/voxrt)"));
  EXPECT_TRUE(reported("src/formats/sideways.cpp includes models/voxtral/model.h"));
  EXPECT_TRUE(reported("src/plugins/ is not in the layer map"));
}

}  // namespace

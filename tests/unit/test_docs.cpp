// The documentation keeps up with the code where a reader would otherwise be misled: every
// VOXRT_CUDA_* variable the CUDA backend reads is explained in docs/cuda.md, README's "Using it"
// stays about using voxrt (the measurement switches live in docs/cuda.md), and every source file
// docs/architecture.md's map and walk name exists (files move as the layers are reshaped).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "test_paths.h"

namespace {

std::string read_source_file(const std::string& relative) {
  const auto path = voxrt::test::test_data().parent_path().parent_path() / relative;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Docs, EveryCudaSwitchTheBackendReadsIsExplainedInDocsCuda) {
  const std::string options = read_source_file("src/runtime/cuda/cuda_options.cpp");
  const std::string docs = read_source_file("docs/cuda.md");
  const std::regex read_by_code(R"re(env\("(VOXRT_CUDA_[A-Z_]+)"\))re");
  std::set<std::string> switches;
  for (std::sregex_iterator it(options.begin(), options.end(), read_by_code), end; it != end; ++it)
    switches.insert((*it)[1].str());
  ASSERT_GE(switches.size(), 10u) << "the switches are no longer read as env(\"VOXRT_CUDA_...\")";
  for (const std::string& name : switches)
    EXPECT_NE(docs.find("| `" + name), std::string::npos) << name << " has no row in docs/cuda.md's table";
}

TEST(Docs, ReadmeUsingItLeavesTheMeasurementSwitchesToDocsCuda) {
  const std::string readme = read_source_file("README.md");
  const size_t begin = readme.find("\n## Using it\n");
  const size_t end = readme.find("\n## ", begin + 1);
  ASSERT_NE(begin, std::string::npos);
  const std::string using_it = readme.substr(begin, end - begin);
  EXPECT_EQ(using_it.find("VOXRT_CUDA_"), std::string::npos) << "README's Using it names a measurement switch";
  EXPECT_NE(using_it.find("docs/cuda.md"), std::string::npos) << "README's Using it does not point to docs/cuda.md";
}

TEST(Docs, EverySourceFileTheArchitecturePageNamesExists) {
  const std::string page = read_source_file("docs/architecture.md");
  const std::filesystem::path root = voxrt::test::test_data().parent_path().parent_path();
  const std::regex file_named(R"re(\b((?:src|include|tests)/[A-Za-z0-9_/.-]+\.(?:cuh|cpp|cu|h)\b))re");
  int named = 0;
  for (std::sregex_iterator it(page.begin(), page.end(), file_named), end; it != end; ++it, ++named)
    EXPECT_TRUE(std::filesystem::exists(root / (*it)[1].str())) << (*it)[1].str() << " is named by docs/architecture.md";
  EXPECT_GE(named, 20) << "docs/architecture.md is meant to name the files of the walk";
}

}  // namespace

#include "cli/list_file.h"

#include "voxrt/error.h"

namespace voxrt::cli {

std::vector<std::string> read_list(std::istream& in, const std::string& what) {
  std::vector<std::string> items;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    items.push_back(line.substr(first));
  }
  if (in.bad()) throw Error(what + ": read failed");
  return items;
}

}  // namespace voxrt::cli

// Lists given one item a line (transcribe's --input-list, --context-bias-file): the lines of a
// stream, trimmed, blank lines and # comments skipped.
#pragma once

#include <istream>
#include <string>
#include <vector>

namespace voxrt::cli {

// The items of `in`, in order: each line without its leading and trailing spaces, tabs and \r; a
// line that is blank or starts with # is none. Throws Error naming `what` when reading fails.
std::vector<std::string> read_list(std::istream& in, const std::string& what);

}  // namespace voxrt::cli

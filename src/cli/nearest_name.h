// "Did you mean": the name a misspelt option or command was probably meant to be.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace voxrt::cli {

// Levenshtein distance: insertions, deletions and substitutions of one byte each.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `typed` by edit distance, if it is near enough to be a slip rather than
// another word: at most a third of the typed length (at least 1, at most 3) edits away. Ties go to
// the first candidate.
std::optional<std::string> nearest_name(std::string_view typed, const std::vector<std::string>& candidates);

}  // namespace voxrt::cli

#include "models/context_bias.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"

namespace voxrt {

BiasTrie::BiasTrie(std::span<const std::vector<int32_t>> sequences, int32_t first_text_id, float strength)
    : nodes_(1), first_text_id_(first_text_id), strength_(strength) {
  check(std::isfinite(strength) && strength > 0, "context bias", "strength must be more than 0");
  for (size_t s = 0; s < sequences.size(); ++s) {
    const std::vector<int32_t>& seq = sequences[s];
    check(!seq.empty(), "context bias", "sequence " + std::to_string(s) + " is empty");
    int node = kRoot;
    for (const int32_t id : seq) {
      check_with(id >= first_text_id, "context bias",
                 [&] { return "sequence " + std::to_string(s) + ": id " + std::to_string(id) + " is not a text token"; });
      if (const int next = child(node, id); next >= 0) {
        node = next;
        continue;
      }
      // Nodes are appended, so a reference into nodes_ is taken only after the push.
      nodes_.emplace_back();
      const int added = static_cast<int>(nodes_.size()) - 1;
      Node& n = nodes_[static_cast<size_t>(node)];
      const auto at = std::lower_bound(n.ids.begin(), n.ids.end(), id) - n.ids.begin();
      n.ids.insert(n.ids.begin() + at, id);
      n.to.insert(n.to.begin() + at, added);
      node = added;
    }
    // Identical sequences end at the same node: counted once. (One that ends where a longer one
    // passes through is a sequence of its own.)
    Node& end = nodes_[static_cast<size_t>(node)];
    if (!end.end) ++sequences_;
    end.end = true;
  }
}

int BiasTrie::child(int node, int32_t id) const {
  const Node& n = nodes_[static_cast<size_t>(node)];
  const auto it = std::lower_bound(n.ids.begin(), n.ids.end(), id);
  return it != n.ids.end() && *it == id ? n.to[static_cast<size_t>(it - n.ids.begin())] : -1;
}

void BiasMatcher::advance(int32_t id) {
  if (id < trie_->first_text_id()) return;
  scratch_.clear();
  const auto extend = [&](int node) {
    const int next = trie_->child(node, id);
    if (next >= 0 && !trie_->next_ids(next).empty()) scratch_.push_back(next);
  };
  extend(BiasTrie::kRoot);
  for (const int node : alive_) extend(node);
  // Distinct already (each node has one parent), sorted so that equal places compare equal.
  std::sort(scratch_.begin(), scratch_.end());
  alive_.swap(scratch_);
}

void BiasMatcher::boosted(std::vector<int32_t>& out) const {
  const std::span<const int32_t> first = trie_->next_ids(BiasTrie::kRoot);
  out.assign(first.begin(), first.end());
  if (alive_.empty()) return;
  for (const int node : alive_) {
    const std::span<const int32_t> next = trie_->next_ids(node);
    out.insert(out.end(), next.begin(), next.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

}  // namespace voxrt

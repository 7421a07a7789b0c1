// Context biasing's token side (include/voxrt/context_bias.h has the user's side): the phrases'
// token sequences as a trie, and a stream's place in it, which says whose logits a decoder row
// raises. Family-neutral: token ids in, token ids out; the engine tokenizes the phrases
// (engine/bias_phrases.h), a family's stream state follows its emitted ids (StreamState).
//
// A row's boosts depend only on the stream's ids up to and including the row's input token, so a
// stream computes them on the host as it puts its rows in a pass: a drafted row follows from the
// guesses fed to the rows before it, and a verified draft is given the boosts one-at-a-time
// decoding gives.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace voxrt {

class BiasTrie {
 public:
  // `sequences`: token ids, each non-empty and of text ids only (first_text_id or more: ids below
  // are the model's control tokens); identical sequences are kept once. `strength`: the logit added
  // to a boosted id, more than 0. Throws voxrt::Error otherwise.
  BiasTrie(std::span<const std::vector<int32_t>> sequences, int32_t first_text_id, float strength);

  static constexpr int kRoot = 0;

  float strength() const { return strength_; }
  int32_t first_text_id() const { return first_text_id_; }
  size_t sequences() const { return sequences_; }  // distinct
  // The node after `id` from `node`, or -1 when no sequence continues that way.
  int child(int node, int32_t id) const;
  // The ids that continue `node`'s prefix (from the root: every sequence's first id), ascending.
  std::span<const int32_t> next_ids(int node) const { return nodes_[static_cast<size_t>(node)].ids; }

 private:
  struct Node {
    std::vector<int32_t> ids;  // ascending
    std::vector<int> to;       // the node after ids[i]
    bool end = false;          // a sequence ends here
  };
  std::vector<Node> nodes_;
  int32_t first_text_id_ = 0;
  float strength_ = 0;
  size_t sequences_ = 0;
};

// A stream's place in a BiasTrie: the prefixes of its sequences that the stream's text ids end
// with. Copyable: a drafted row's place is a copy advanced by the guesses before it.
class BiasMatcher {
 public:
  explicit BiasMatcher(const BiasTrie& trie) : trie_(&trie) {}

  // After the stream emitted `id`. A text id extends every prefix it continues and starts those its
  // sequences begin with; a prefix it does not continue is dropped (its boost withdrawn), as is a
  // complete sequence that nothing continues. A control id ([STREAMING_PAD], [STREAMING_WORD], EOS:
  // below first_text_id) changes nothing: the model emits pads between a word's tokens.
  void advance(int32_t id);
  // The ids whose logits the stream's next output raises, ascending, each once: every sequence's
  // first id, and the next id of every prefix alive.
  void boosted(std::vector<int32_t>& out) const;
  // The nodes of the prefixes alive (the root aside), ascending.
  const std::vector<int>& alive() const { return alive_; }

 private:
  const BiasTrie* trie_;
  std::vector<int> alive_;
  std::vector<int> scratch_;  // advance's, kept so that a step allocates nothing once warm
};

}  // namespace voxrt

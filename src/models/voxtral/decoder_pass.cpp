#include "models/voxtral/decoder_pass.h"

#include <atomic>
#include <vector>

#include "common/error.h"

namespace voxrt {
namespace {

// The argmax, its margin and the logits view of every row of `logits`, after the rows' boosts are
// added to them (when there are any).
std::vector<DecoderOutput> argmax_rows(Backend& be, Mat logits, std::span<const MatEntry> boosts) {
  if (!boosts.empty()) be.add_at(logits, boosts);
  const int k = logits.rows;
  std::vector<int32_t> ids(k);
  std::vector<float> margins(k);
  be.argmax(logits, ids, margins);
  std::vector<DecoderOutput> r(k);
  for (int i = 0; i < k; ++i)
    r[i] = {ids[i], margins[i], Mat{logits.data + static_cast<size_t>(i) * logits.cols, 1, logits.cols}};
  return r;
}

// A pass's rows as VoxtralModel::decode takes them, checked: slots in range, a slot's rows adjacent
// and at consecutive positions, delays in range, one adapter vector per row.
struct SessionRowRefs {
  std::vector<RowRef> refs;
  std::vector<int32_t> inputs;
  std::vector<int> delays, logit_rows;
  std::vector<MatEntry> boosts;  // on the logits' rows (one per row whose output is wanted)
};

SessionRowRefs check_session_rows(const VoxtralModel& model, std::span<const SessionRow> rows, Mat audio,
                                  const KvCache& cache) {
  const int k = static_cast<int>(rows.size());
  check(k >= 1 && audio.rows == k && audio.cols == model.config().decoder.dim, "decoder pass",
        "one adapter vector per row expected");
  SessionRowRefs out;
  out.refs.resize(k);
  out.inputs.resize(k);
  out.delays.resize(k);
  std::vector<bool> seen(static_cast<size_t>(cache.shape().slots), false);
  for (int i = 0; i < k; ++i) {
    const SessionRow& r = rows[i];
    const std::string row = "row " + std::to_string(i) + ": ";
    check(r.slot >= 0 && r.slot < cache.shape().slots, "decoder pass", row + "cache slot out of range");
    if (i > 0 && rows[i - 1].slot == r.slot)
      check(r.pos == rows[i - 1].pos + 1, "decoder pass", row + "a slot's rows must be at consecutive positions");
    else
      check(!seen[r.slot], "decoder pass", row + "slot " + std::to_string(r.slot) + " already has rows that are not adjacent");
    check(r.pos >= 0, "decoder pass", row + "negative position");
    check(r.n_delay >= 0 && r.n_delay <= VoxtralModel::kMaxDelayTokens, "decoder pass", row + "delay out of range");
    seen[r.slot] = true;
    out.refs[i] = {r.slot, r.pos};
    out.inputs[i] = r.input;
    out.delays[i] = r.n_delay;
    if (!r.boosted.empty()) {
      check(r.output, "decoder pass", row + "boosts on a row whose output is not wanted");
      const int vocab = model.config().decoder.vocab_size;
      for (const int32_t id : r.boosted) {
        check_with(id >= 0 && id < vocab, "decoder pass", [&] { return row + "boosted id " + std::to_string(id) + " out of range"; });
        out.boosts.push_back({static_cast<int32_t>(out.logit_rows.size()), id, r.boost});
      }
    }
    if (r.output) out.logit_rows.push_back(i);
  }
  check(!out.logit_rows.empty(), "decoder pass", "no row's output is wanted");
  return out;
}

}  // namespace

std::string unique_recording_key(const std::string& what) {
  static std::atomic<uint64_t> next{0};
  return what + " #" + std::to_string(next++);
}

DecoderOutput SessionDecoder::run(int32_t input, Mat audio, int64_t pos, int n_delay, KvCache& cache) {
  return run_rows(std::span<const int32_t>(&input, 1), audio, pos, n_delay, cache)[0];
}

std::vector<DecoderOutput> SessionDecoder::run_rows(std::span<const int32_t> inputs, Mat audio, int64_t pos,
                                                     int n_delay, KvCache& cache) {
  const int k = static_cast<int>(inputs.size());
  check(k >= 1 && audio.rows == k, "decoder pass", "one adapter vector per input token expected");
  std::vector<SessionRow> rows(k);
  for (int i = 0; i < k; ++i) rows[i] = {0, pos + i, inputs[i], n_delay};
  const Mat in = pass_.audio(k);
  check(audio.cols == in.cols, "decoder pass", "adapter vectors of the decoder's width expected");
  pass_.model().backend().copy(in.data, audio.data, static_cast<size_t>(k) * audio.cols);
  return pass_.run(rows, cache);
}

DecoderPass::DecoderPass(VoxtralModel& model, std::string key) : model_(model), key_(std::move(key)) {}

Mat DecoderPass::audio(int rows) {
  check(rows >= 1, "decoder pass", "at least one row expected");
  if (audio_.rows() < rows) audio_ = Buffer(&model_.backend(), rows, model_.config().decoder.dim);
  return audio_.view(0, rows);
}

std::vector<DecoderOutput> DecoderPass::run(std::span<const SessionRow> rows, KvCache& cache) {
  const int k = static_cast<int>(rows.size());
  const Mat in = audio(k);
  const SessionRowRefs refs = check_session_rows(model_, rows, in, cache);
  Backend& be = model_.backend();
  Mat logits{};
  // One recording per row and output count: a replay's launches have the shapes of its capture.
  const int outputs = static_cast<int>(refs.logit_rows.size());
  be.run_recorded(key_ + " x" + std::to_string(k) + (outputs < k ? " out " + std::to_string(outputs) : ""), [&] {
    logits = model_.decode(refs.inputs, in, refs.refs, refs.delays, cache, refs.logit_rows);
  });
  return argmax_rows(be, logits, refs.boosts);
}

void append_prompt_rows(const Protocol& protocol, const ProtocolIds& ids, int slot, std::vector<SessionRow>& rows) {
  const std::vector<int32_t> tokens = protocol.prompt(ids);
  for (size_t i = 0; i < tokens.size(); ++i)
    rows.push_back({slot, static_cast<int64_t>(i), tokens[i], protocol.n_delay, i + 1 == tokens.size()});
}

DecoderOutput decode_prompt(VoxtralModel& model, const Protocol& protocol, const ProtocolIds& ids, Mat audio,
                                KvCache& cache, int slot) {
  check(audio.rows == protocol.prompt_len(), "prompt", "one adapter vector per prompt position expected");
  std::vector<SessionRow> rows;
  append_prompt_rows(protocol, ids, slot, rows);
  return decode_sessions(model, rows, audio, cache)[0];
}

std::vector<DecoderOutput> decode_sessions(VoxtralModel& model, std::span<const SessionRow> rows, Mat audio,
                                               KvCache& cache) {
  const SessionRowRefs refs = check_session_rows(model, rows, audio, cache);
  return argmax_rows(model.backend(), model.decode(refs.inputs, audio, refs.refs, refs.delays, cache, refs.logit_rows),
                     refs.boosts);
}

}  // namespace voxrt

// The transcription protocol's numbers (docs/model.md §9): delay, left pad, prompt, offline right pad.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace voxrt {

// Valid delays: 80..1200 ms in steps of 80, or 2400 ms. Throws voxrt::Error otherwise.
int delay_tokens_from_ms(int delay_ms);

struct ProtocolIds {
  int32_t bos = 1, eos = 2, streaming_pad = 32, streaming_word = 33;
};

struct Protocol {
  int n_delay = 6;             // delay in 80 ms steps
  int n_left_pad_tokens = 32;  // silent steps before the audio
  int samples_per_position = 1280;

  int prompt_len() const { return 1 + n_left_pad_tokens + n_delay; }
  // Offline right pad after rounding up to a whole step: n_delay + 1 + 10 steps of zeros.
  int right_pad_positions() const { return n_delay + 1 + 10; }
  // Audio positions (adapter vectors) of an offline transcription of `samples` audio samples: the
  // left pad, the audio rounded up to whole steps, the right pad.
  int64_t offline_positions(size_t samples) const {
    return n_left_pad_tokens + static_cast<int64_t>((samples + samples_per_position - 1) / samples_per_position) +
           right_pad_positions();
  }
  // Decoder steps of an offline transcription of `samples` audio samples (if no EOS ends it): one
  // per padded position after the prompt, the last position excepted.
  int64_t offline_outputs(size_t samples) const {
    return offline_positions(samples) - prompt_len();
  }
  // [BOS] + [STREAMING_PAD] x (left pad + delay).
  std::vector<int32_t> prompt(const ProtocolIds& ids) const;
  // Zeros on the left, the audio, zeros up to a whole step, then the right pad.
  std::vector<float> pad_offline(std::span<const float> audio) const;
};

}  // namespace voxrt

// The model's hyper-parameters, as read from params.json (Mistral layout) or config.json
// (Hugging Face layout). Defaults are those of Voxtral-Mini-4B-Realtime-2602 (docs/model.md §1-§5).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace voxrt {

struct EncoderConfig {
  int dim = 1280;          // residual width
  int n_layers = 32;
  int n_heads = 32;
  int n_kv_heads = 32;     // the encoder is MHA
  int head_dim = 64;       // n_heads * head_dim (2048) differs from dim
  int hidden_dim = 5120;   // SwiGLU hidden width
  double rope_theta = 1e6;
  double norm_eps = 1e-5;
  int sliding_window = 750;  // encoder frames (15 s)
  int num_mel_bins = 128;
};

struct DecoderConfig {
  int dim = 3072;
  int n_layers = 26;
  int n_heads = 32;
  int n_kv_heads = 8;
  int head_dim = 128;
  int hidden_dim = 9216;
  double rope_theta = 1e6;
  double norm_eps = 1e-5;
  int vocab_size = 131072;
  int sliding_window = 8192;
  int max_position = 131072;
  int t_cond_dim = 32;     // hidden width of the ada_rms_norm_t_cond MLP
  bool tied_embeddings = true;
};

struct AudioConfig {
  int sampling_rate = 16000;
  int hop_length = 160;
  int window_size = 400;   // n_fft == window length
  double global_log_mel_max = 1.5;
  double frame_rate = 12.5;  // decoder steps per second
};

struct ModelConfig {
  EncoderConfig encoder;
  DecoderConfig decoder;
  AudioConfig audio;
  int downsample_factor = 4;  // encoder frames per adapter vector

  // Mel frames of one decoder position: the conv stem halves the frame rate, the adapter takes
  // downsample_factor encoder frames (8).
  int mel_frames_per_position() const { return 2 * downsample_factor; }
  int samples_per_position() const { return audio.hop_length * mel_frames_per_position(); }  // 1280
};

}  // namespace voxrt

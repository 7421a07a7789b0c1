// `voxrt bench --figures products`: each matrix product of a pass (the model's shapes, random bf16
// weights) timed alone, back to back inside a recording, against its floor (weight bytes over
// the copy rate, FLOPs over the matrix rate, both measured in the same run). With row counts given
// (--product-rows), every product at each count through each product kernel the backend has (the
// CUDA backend: its GEMV, its tiled GEMM, cuBLAS), side by side on the same weights: where the GEMM
// should take over from the GEMV, and how near the library it comes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/voxtral/config.h"
#include "quant/weight_format.h"
#include "runtime/backend.h"

namespace voxrt {

struct ProductTiming {
  double read_bytes_per_s = 0, matmul_flops_per_s = 0;  // the measured ceilings
  std::vector<int> rows;  // empty: each product at its live pass's rows, with the backend's own kernels
  // The model's weight formats (the encoder's with the adapter, the decoder's, the LM head's): a
  // product whose part is quantized is timed in that format too, beside bf16, on the same random
  // values quantized (round to nearest), through the backend's own kernels. An 8w or fp8 group of 0 is
  // one scale an output channel (each product's own K).
  WeightFormat encoder, decoder, head;
};

// One entry per product, weight format and row count: name, format ("bf16", "4w/32", ...), rows,
// weight_bytes, flops, floor_us, and per kernel path ("auto", or "gemv", "gemm", "library"; a
// quantized format: "auto", which is the GEMV): p50_us and TFLOPs.
nlohmann::json time_products(Backend& backend, const ModelConfig& config, const ProductTiming& timing);

// The table for people.
std::string format_products(const nlohmann::json& products);

}  // namespace voxrt

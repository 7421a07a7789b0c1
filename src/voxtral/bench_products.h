// `voxrt bench --figures products`: each matrix product of a live step (the model's shapes, random
// bf16 weights, as many rows as a step has) timed alone, back to back inside a recorded step, in
// microseconds and as a share of the copy rate: where a step's time goes, product by product.
#pragma once

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "runtime/backend.h"

namespace voxrt {

// One entry per product: name, rows, weight bytes, p50 microseconds, GB/s read.
nlohmann::json time_products(Backend& backend, const ModelConfig& config, double read_bytes_per_s);

}  // namespace voxrt

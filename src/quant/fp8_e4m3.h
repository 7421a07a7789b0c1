// One job: fp8 e4m3 on the host, and the arithmetic of the fp8 weight format (W8A8) that every
// backend computes: the one place it is written (quant/weight_format.h states it as the format's
// definition; the CPU backend calls these functions, the GPU kernels mirror them).
//
// e4m3 is OCP FP8 E4M3 in its "fn" variant (NVIDIA's __nv_fp8_e4m3): 1 sign, 4 exponent bits (bias
// 7), 3 mantissa bits; no infinities, 0x7f and 0xff are NaN, 448 the largest finite magnitude;
// exponent field 0 holds the subnormals m/8 * 2^-6.
#pragma once

#include <cstdint>

namespace voxrt {

inline constexpr float kE4m3Max = 448.0f;

// The value of a code (NaN for 0x7f and 0xff; 0x80 is -0).
float e4m3_to_float(uint8_t code);
// The code nearest x, ties to the even code, a finite x beyond +-448 (infinities included) saturated
// to +-448, NaN to 0x7f: what CUDA's cvt.rn.satfinite.e4m3x2.f32 gives.
uint8_t float_to_e4m3(float x);
// n codes' values, through a table (what a product's inner loop wants).
void e4m3_to_floats(const uint8_t* codes, int n, float* out);

// A weight row of an fp8 matrix: its bf16 scale s, the smallest bf16 value not below
// max_k |w[k]| / 448 (the fp32 quotient rounded up to bf16, so that no element clips; 0 for a row
// of zeros), and the codes q[k] = float_to_e4m3(w[k] / s) (fp32 division; 0 when s is 0). Returns s
// as bf16 bits. Element k then stands for e4m3_to_float(q[k]) * s.
uint16_t quantize_weight_row_e4m3(const float* w, int n, uint8_t* q);

// An activation row x (fp32) as a product's fp8 operand, quantized per token: a = max_k |x[k]|;
// for a == 0 every value is 0 and so is the scale; else inv = 448 / a and value k is the e4m3
// value nearest x[k] * inv (fp32 multiply, then float_to_e4m3), written as the float it is.
// Returns the row's scale a / 448 (fp32 division). A product over such rows is
//   y[m, n] = (acc * s_x[m]) * s_w[n],  acc = sum_k x_q[m, k] * w_q[n, k]
// in fp32, the scales applied in that order.
float quantize_activation_row_e4m3(const float* x, int n, float* values);

}  // namespace voxrt

// voxrt_kernel's plain C++ (src/bench/kernels): the CPU reference it checks kernels against, on
// cases small enough to compute by hand; its fp8 caches' scales (their e4m3 codes are
// quant/fp8_e4m3.h's, tested in test_fp8_e4m3.cpp); its random data;
// its comparison and floor; and its command line, whose every error names the flag at fault. The
// driver itself runs on a GPU (the CudaKernelDriver.* tests of the CUDA build).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bench/kernels/accuracy.h"
#include "bench/kernels/kernel_args.h"
#include "bench/kernels/kernel_report.h"
#include "bench/kernels/random_data.h"
#include "bench/kernels/reference_ops.h"
#include "common/bf16.h"

namespace voxrt::bench {
namespace {

TEST(KernelReference, ProductOfATinyCase) {
  const std::vector<float> x = {1, 2, 3, -1, 0, 0.5f};  // [2, 3]
  const std::vector<float> w = {1, 0, -1, 2, 1, 0};     // [2, 3]
  EXPECT_EQ(reference_product(x, 2, 3, w, 2), (std::vector<float>{-2, 4, -1.5f, -2}));
}

TEST(KernelReference, GatedProductIsSiluOfTheGateTimesUp) {
  const std::vector<float> x = {1}, gate = {0, 2, -1}, up = {5, 3, 2};
  const std::vector<float> y = reference_product(x, 1, 1, gate, 3, &up);
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_FLOAT_EQ(y[1], static_cast<float>(2.0 / (1.0 + std::exp(-2.0)) * 3));
  EXPECT_FLOAT_EQ(y[2], static_cast<float>(-1.0 / (1.0 + std::exp(1.0)) * 2));
}

TEST(KernelReference, AttentionOfATinyCaseAcrossTheRingsTurn) {
  // Two slots of a ring of 3 entries, one kv head of 2 dimensions shared by 2 query heads. The row
  // is slot 1 at positions 2 and 3, entries 2 and 0: scores 0 and ln 3 give weights 1/4 and 3/4.
  const AttentionShape s{2, 1, 2, 3, 1.0f};
  std::vector<float> keys(2 * 3 * 2, 9.0f), values(2 * 3 * 2, -9.0f);  // junk outside the row's entries
  auto entry = [](int slot, int e) { return (slot * 3 + e) * 2; };
  keys[entry(1, 2)] = 0, keys[entry(1, 2) + 1] = 0;
  keys[entry(1, 0)] = std::log(3.0f), keys[entry(1, 0) + 1] = 0;
  values[entry(1, 2)] = 4, values[entry(1, 2) + 1] = 0;
  values[entry(1, 0)] = 0, values[entry(1, 0) + 1] = 8;
  const std::vector<float> q = {1, 0, 2, 0};  // head 1: scores 0 and 2 ln 3, weights 1/10 and 9/10
  const std::vector<float> out = reference_attention(q, {{1, 2, 2}}, keys, values, s);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[1], 6.0f);
  EXPECT_FLOAT_EQ(out[2], 0.4f);
  EXPECT_FLOAT_EQ(out[3], 7.2f);
}

TEST(KernelReference, Fp8HeadsAreScaledByTheirLargestMagnitude) {
  const Fp8Heads q = quantize_fp8_heads({0.5f, -1.0f, 0.0f, 0.0f}, 2);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_EQ(q.scales[0], 1.0f / 448.0f);
  EXPECT_EQ(q.scales[1], 1.0f);  // an all-zero head keeps 0
  EXPECT_EQ(q.codes[1], 0xfe);   // -448
  EXPECT_EQ(q.values, (std::vector<float>{0.5f, -1.0f, 0.0f, 0.0f}));
}

TEST(KernelReference, RandomDataIsTheSeedsAndInRange) {
  RandomData a(7), b(7), c(8);
  const std::vector<float> va = a.uniform(1000), vb = b.uniform(1000), vc = c.uniform(1000);
  EXPECT_EQ(va, vb);
  EXPECT_NE(va, vc);
  for (float v : va) EXPECT_TRUE(v >= -1.0f && v < 1.0f) << v;
  for (float v : RandomData(7).uniform_bf16(1000)) EXPECT_EQ(bf16_to_float(float_to_bf16(v)), v);
}

TEST(KernelReference, ComparisonCountsEveryElementBeyondTheTolerance) {
  const Tolerance t{0.0, 0.1, "test"};
  const Accuracy ok = compare({1.0f, 2.05f}, {1.0f, 2.0f}, t);
  EXPECT_TRUE(ok.within());
  EXPECT_NEAR(ok.max_abs, 0.05, 1e-6);
  EXPECT_NEAR(ok.max_rel, 0.025, 1e-6);
  const Accuracy bad = compare({1.5f, NAN, 3.0f}, {1.0f, 2.0f, 3.0f}, t);
  EXPECT_EQ(bad.misses, 2u);
  EXPECT_EQ(bad.worst_index, 1u);  // the NaN
  EXPECT_FALSE(bad.within());
  EXPECT_EQ(product_tolerance({-4.0f, 2.0f}).atol, 4e-5);
  EXPECT_EQ(attention_tolerance({-4.0f, 2.0f}).atol, 8e-6);
  EXPECT_EQ(attention_tolerance({-4.0f, 2.0f}).rtol, 1e-5);
}

KernelArgs parse(const std::string& line) {
  std::vector<std::string> args;
  size_t at = 0;
  while (at < line.size()) {
    const size_t end = line.find(' ', at);
    args.push_back(line.substr(at, end - at));
    at = end == std::string::npos ? line.size() : end + 1;
  }
  return parse_kernel_args(args);
}

std::string refusal(const std::string& line) {
  try {
    parse(line);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(KernelArgsTest, FamiliesTakeTheirShapesAndDefaultKernels) {
  const KernelArgs g = parse("gemv --rows 3072 --cols 3072 --batch 1 --weights bf16 --repeat 100");
  EXPECT_EQ(g.family, Family::Gemv);
  EXPECT_EQ(g.kernel, "mma");
  EXPECT_EQ(g.rows, 3072);
  EXPECT_EQ(g.repeat, 100);
  const KernelArgs m = parse("gemm --m 64 --n 1024 --k 2048 --kernel mma --gated --json out.json --seed=9");
  EXPECT_EQ(m.batch, 64);
  EXPECT_EQ(m.rows, 1024);
  EXPECT_EQ(m.cols, 2048);
  EXPECT_EQ(m.kernel, "mma");
  EXPECT_TRUE(m.gated);
  EXPECT_EQ(m.json, "out.json");
  EXPECT_EQ(m.seed, 9u);
  EXPECT_EQ(parse("gemm").kernel, "wgmma");
  const KernelArgs a = parse("attention --rows 8 --keys 8192 --heads 32 --kv-heads 8 --head-dim 128 --cache fp8");
  EXPECT_EQ(a.query_rows, 8);
  EXPECT_EQ(a.cache, "fp8");
  EXPECT_EQ(a.kernel, "mma");
  EXPECT_EQ(parse("attention --cache fp32").kernel, "simt");  // as the backend: fp32 caches on the CUDA cores
  EXPECT_EQ(parse("gemv").bandwidth, 4.8e12);
  EXPECT_EQ(parse("gemv").peak_flops, 989e12);
  EXPECT_TRUE(parse("--list").list);
  EXPECT_TRUE(parse("gemv --help").help);
}

TEST(KernelArgsTest, EveryRefusalNamesTheFlag) {
  EXPECT_EQ(refusal("gemv --cols 3004"),
            "--cols: 3004 is not a multiple of 8 (the product kernels read rows of W in 8-element vectors; "
            "--kernel cublas takes any)");
  EXPECT_EQ(parse("gemv --cols 3004 --kernel cublas").cols, 3004);
  EXPECT_EQ(refusal("gemm --k 100").rfind("--k: 100 is not a multiple of 8", 0), 0u);
  EXPECT_EQ(refusal("gemv --rows abc"), "--rows: 'abc' is not a whole number");
  EXPECT_EQ(refusal("gemv --batch 0").rfind("--batch: 0 out of range (1 .. ", 0), 0u);
  EXPECT_EQ(refusal("gemv --keys 5").rfind("--keys is an option of attention, not of gemv", 0), 0u);
  EXPECT_EQ(refusal("attention --bogus 1").rfind("unknown option '--bogus' for attention (its options: --kernel", 0), 0u);
  EXPECT_EQ(refusal("gemv --kernel wgmma"), "--kernel: 'wgmma' is not a gemv kernel (mma, simt, cublas)");
  EXPECT_EQ(refusal("attention --heads 30"), "--heads: 30 is not a multiple of --kv-heads 8");
  EXPECT_EQ(refusal("attention --cache fp32 --kernel mma").rfind("--cache fp32: the tensor-core attention", 0), 0u);
  EXPECT_EQ(refusal("attention --cache fp16"), "--cache: 'fp16' is not one of bf16, fp8, fp32");
  EXPECT_EQ(refusal("gemv --weights fp8"), "--weights: 'fp8' is not one of bf16");
  EXPECT_EQ(refusal("gemv --seed"), "--seed needs a value (S)");
  EXPECT_EQ(refusal("gemv --gated=1"), "--gated takes no value");
  EXPECT_EQ(refusal("gemv --bandwidth -1"), "--bandwidth: '-1' is not a positive number (like 4.8e12)");
  EXPECT_EQ(refusal("gemm --input bf16").rfind("--input is an option of gemv", 0), 0u);
  EXPECT_EQ(refusal("conv"), "'conv' is not a kernel family (gemv, gemm, attention; --list)");
  EXPECT_EQ(refusal(""), "no kernel family given (gemv, gemm or attention; --list, --help)");
}

TEST(KernelArgsTest, ListAndUsageNameEveryKernelAndOption) {
  const std::string list = kernel_list(), usage = kernel_usage();
  for (const KernelInfo& k : kernel_infos())
    EXPECT_NE(list.find(std::string(family_name(k.family)) + " --kernel " + k.name), std::string::npos) << k.name;
  for (const char* flag : {"--rows", "--cols", "--batch", "--m", "--n", "--k", "--keys", "--kv-heads", "--head-dim",
                           "--cache", "--layout", "--page-len", "--step-rows", "--seed", "--repeat", "--warmup",
                           "--bandwidth", "--peak-flops", "--hot", "--json", "--gated", "--input", "--weights"})
    EXPECT_NE(usage.find(std::string("  ") + flag + " "), std::string::npos) << flag;
}

TEST(KernelReport, FloorIsTheBytesAtTheBandwidthOrTheFlopsAtThePeak) {
  KernelRun r;
  r.args = parse("gemv --rows 3072 --cols 3072");
  r.cost = product_cost(r.args);
  EXPECT_EQ(r.cost.bytes, 3072.0 * 3072 * 2 + 3072 * 4 + 3072 * 4);  // W, fp32 x, y
  EXPECT_EQ(r.cost.flops, 2.0 * 3072 * 3072);
  EXPECT_DOUBLE_EQ(floor_seconds(r), r.cost.bytes / 4.8e12);
  r.seconds = 2 * floor_seconds(r);
  r.accuracy.max_abs = 1e-6;
  const std::string text = format_report(r);
  EXPECT_NE(text.find("the H200's HBM and dense bf16 rate"), std::string::npos) << text;
  EXPECT_NE(text.find("2.00x the floor"), std::string::npos) << text;
  EXPECT_EQ(report_json(r)["times_floor"].get<double>(), 2.0);
  r.copies = 4;
  r.copy_bytes = 2e6;
  EXPECT_NE(format_report(r).find("4 copies of the data rotated, 2.0 MB each, 8.0 MB in all"), std::string::npos);
  EXPECT_EQ(report_json(r)["within_tolerance"].get<bool>(), true);

  // Gated products read two weights; a GEMM of many rows is bound by its arithmetic.
  const KernelArgs gated = parse("gemm --m 4096 --n 4096 --k 4096 --gated --peak-flops 1e15 --bandwidth 3e12");
  r.args = gated;
  r.cost = product_cost(gated);
  EXPECT_EQ(r.cost.flops, 4.0 * 4096 * 4096 * 4096);
  EXPECT_DOUBLE_EQ(floor_seconds(r), r.cost.flops / 1e15);
  EXPECT_NE(format_report(r).find("(as given)"), std::string::npos);
}

TEST(KernelReport, AttentionReadsEachAttendedEntryOnce) {
  const KernelArgs streams = parse("attention --rows 4 --keys 100 --heads 8 --kv-heads 2 --head-dim 64");
  const double q_and_out = 2.0 * 4 * 8 * 64 * 4;
  EXPECT_EQ(attention_cost(streams).bytes, 2.0 * 4 * 100 * 2 * 64 * 2 + q_and_out);
  EXPECT_EQ(attention_cost(streams).flops, 4.0 * 4 * 8 * 100 * 64);
  // Frames share their slot's keys: 103 entries for 4 rows of 100 keys; fp8 adds a scale a head.
  const KernelArgs frames = parse("attention --rows 4 --keys 100 --heads 8 --kv-heads 2 --head-dim 64 --layout frames --cache fp8");
  EXPECT_EQ(attention_cost(frames).bytes, 2.0 * 103 * (2 * 64 * 1 + 2 * 4) + q_and_out);
}

}  // namespace
}  // namespace voxrt::bench

// Safetensors reader/writer: round trips, dtype conversion, and hostile files that must fail with
// a message naming the file and the field or tensor at fault.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "checkpoint_test_util.h"
#include "common/error.h"
#include "safetensors/safetensors.h"

namespace voxrt {
namespace {

using testutil::expect_error;
using testutil::raw_safetensors;
using testutil::TempDir;
using testutil::write_bytes;

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

std::vector<uint8_t> u16_bytes(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> out(v.size() * 2);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// Independent half -> float reference (ldexp on the decoded fields).
float half_reference(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
  float mag;
  if (exponent == 0) mag = std::ldexp(float(mantissa), -24);
  else if (exponent == 31) mag = mantissa ? std::numeric_limits<float>::quiet_NaN() : INFINITY;
  else mag = std::ldexp(float(1024 + mantissa), exponent - 25);
  return sign ? -mag : mag;
}

TEST(SafetensorsTest, RoundTripAllDtypes) {
  TempDir dir;
  const std::vector<DType> dtypes = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64,
                                     DType::I32, DType::I16, DType::I8,   DType::U8,  DType::BOOL,
                                     DType::F8_E4M3};
  std::vector<TensorToWrite> tensors;
  for (size_t k = 0; k < dtypes.size(); ++k) {
    std::vector<int64_t> shape = {int64_t(k + 1), 3};
    tensors.push_back({std::string("t.") + dtype_name(dtypes[k]), dtypes[k], shape,
                       random_bytes((k + 1) * 3 * dtype_size(dtypes[k]), uint32_t(k))});
  }
  tensors.push_back({"scalar", DType::F32, {}, random_bytes(4, 99)});
  tensors.push_back({"empty", DType::BF16, {0, 5}, {}});
  write_safetensors(dir / "a.safetensors", tensors, {{"format", "pt"}, {"note", "x"}});

  auto file = SafetensorsFile::open(dir / "a.safetensors");
  EXPECT_EQ(file->tensors().size(), tensors.size());
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(file->metadata().at("note"), "x");
  for (const auto& t : tensors) {
    const TensorInfo* info = file->find(t.name);
    ASSERT_NE(info, nullptr) << t.name;
    EXPECT_EQ(info->dtype, t.dtype);
    EXPECT_EQ(info->shape, t.shape);
    EXPECT_EQ(info->nbytes, t.bytes.size());
    EXPECT_EQ(std::vector<uint8_t>(info->data, info->data + info->nbytes), t.bytes) << t.name;
  }
  EXPECT_EQ(file->find("scalar")->numel(), 1);
  EXPECT_EQ(file->find("empty")->numel(), 0);
  EXPECT_EQ(file->find("absent"), nullptr);
}

TEST(SafetensorsTest, HeaderIsPaddedToEightBytes) {
  TempDir dir;
  write_safetensors(dir / "a.safetensors", {{"odd_name_x", DType::U8, {3}, {1, 2, 3}}});
  const auto bytes = testutil::read_bytes(dir / "a.safetensors");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 3);
  EXPECT_EQ(bytes[8 + n - 1] == ' ' || bytes[8 + n - 1] == '}', true);
}

TEST(SafetensorsTest, DtypeNamesAndSizes) {
  EXPECT_STREQ(dtype_name(DType::BF16), "BF16");
  EXPECT_STREQ(dtype_name(DType::BOOL), "BOOL");
  EXPECT_EQ(dtype_size(DType::F64), 8u);
  EXPECT_EQ(dtype_size(DType::F16), 2u);
  EXPECT_EQ(dtype_size(DType::I8), 1u);
  EXPECT_STREQ(dtype_name(DType::F8_E4M3), "F8_E4M3");  // the safetensors spelling (fp8 weights)
  EXPECT_EQ(dtype_size(DType::F8_E4M3), 1u);
}

TEST(SafetensorsTest, Bf16EdgeValues) {
  const std::vector<uint16_t> in = {0x0000, 0x8000, 0x3f80, 0xc000, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x7f7f, 0x0080};
  std::vector<float> out(in.size());
  const auto bytes = u16_bytes(in);
  convert_to_f32(DType::BF16, bytes.data(), out.data(), in.size());
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_FALSE(std::signbit(out[0]));
  EXPECT_TRUE(std::signbit(out[1]) && out[1] == 0.0f);
  EXPECT_EQ(out[2], 1.0f);
  EXPECT_EQ(out[3], -2.0f);
  EXPECT_EQ(out[4], INFINITY);
  EXPECT_EQ(out[5], -INFINITY);
  EXPECT_TRUE(std::isnan(out[6]));
  EXPECT_EQ(out[7], std::ldexp(1.0f, -133));  // smallest bf16 subnormal
  EXPECT_EQ(out[8], std::ldexp(255.0f, 120));  // largest finite bf16, 0x7f7f: 1.1111111b x 2^127
  EXPECT_EQ(out[9], std::numeric_limits<float>::min());
}

TEST(SafetensorsTest, F16AllValuesMatchReference) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  const auto bytes = u16_bytes(all);
  std::vector<float> out(all.size());
  convert_to_f32(DType::F16, bytes.data(), out.data(), all.size());
  for (uint32_t i = 0; i < all.size(); ++i) {
    const float want = half_reference(static_cast<uint16_t>(i));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(out[i])) << std::hex << i;
    } else {
      ASSERT_EQ(out[i], want) << std::hex << i;
      ASSERT_EQ(std::signbit(out[i]), std::signbit(want)) << std::hex << i;
    }
  }
  EXPECT_EQ(out[0x0001], std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(out[0x7bff], 65504.0f);                // largest finite
  EXPECT_EQ(out[0x3c00], 1.0f);
}

TEST(SafetensorsTest, ConvertHandlesUnalignedSourceAndF32) {
  std::vector<uint8_t> buf(1 + 3 * 4);
  const float vals[3] = {1.5f, -0.25f, 3e38f};
  std::memcpy(buf.data() + 1, vals, sizeof vals);
  float out[3];
  convert_to_f32(DType::F32, buf.data() + 1, out, 3);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -0.25f);
  EXPECT_EQ(out[2], 3e38f);

  const std::vector<uint8_t> bf = {0xaa, 0x80, 0x3f};  // bf16 1.0 at an odd address
  float one = 0;
  convert_to_f32(DType::BF16, bf.data() + 1, &one, 1);
  EXPECT_EQ(one, 1.0f);
}

// Found by the fuzz target (tests/fuzz/fuzz_safetensors_header.cpp, UBSan): an empty F32 tensor
// converted into an empty vector passed its null data() to memcpy, which is undefined even for no
// bytes. The asan preset's UBSan run is what sees it.
TEST(SafetensorsTest, ConvertOfNothingTouchesNoPointer) {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    std::vector<float> none;
    convert_to_f32(dtype, nullptr, none.data(), 0);
  }
  expect_error([&] { convert_to_f32(DType::I8, nullptr, nullptr, 0); }, {"I8"});
}

TEST(SafetensorsTest, ConvertRejectsNonFloat) {
  uint8_t src[4] = {};
  float dst;
  expect_error([&] { convert_to_f32(DType::I32, src, &dst, 1); }, {"I32"});
}

TEST(SafetensorsTest, WriterRejectsWrongByteCount) {
  TempDir dir;
  expect_error([&] { write_safetensors(dir / "w.safetensors", {{"bad", DType::F32, {2, 2}, {0, 0, 0}}}); },
               {"w.safetensors", "bad"});
}

// ---- Hostile files: each error must name the file and what is wrong. ----

class SafetensorsMalformedTest : public ::testing::Test {
 protected:
  // Writes raw bytes to bad.safetensors and expects open() to fail naming the file and parts.
  void expect_open_error(const std::vector<uint8_t>& bytes, std::initializer_list<std::string> parts) {
    write_bytes(path(), bytes);
    std::vector<std::string> all = {"bad.safetensors"};
    all.insert(all.end(), parts.begin(), parts.end());
    const std::string message = testutil::error_message([&] { SafetensorsFile::open(path()); });
    for (const auto& p : all) EXPECT_NE(message.find(p), std::string::npos) << "lacks \"" << p << "\": " << message;
  }
  void expect_header_error(const std::string& header, size_t data_bytes, std::initializer_list<std::string> parts) {
    expect_open_error(raw_safetensors(header, std::vector<uint8_t>(data_bytes, 0)), parts);
  }
  std::filesystem::path path() const { return dir_ / "bad.safetensors"; }
  std::vector<uint8_t> valid_file() const {
    TempDir tmp;
    write_safetensors(tmp / "ok.safetensors", {{"w", DType::F32, {4, 4}, std::vector<uint8_t>(64, 1)}});
    return testutil::read_bytes(tmp / "ok.safetensors");
  }
  TempDir dir_;
};

TEST_F(SafetensorsMalformedTest, MissingFile) {
  expect_error([&] { SafetensorsFile::open(dir_ / "nope.safetensors"); }, {"nope.safetensors", "cannot open"});
}

TEST_F(SafetensorsMalformedTest, ShorterThanLengthField) {
  expect_open_error({1, 2, 3, 4, 5}, {"5 bytes", "too short"});
}

TEST_F(SafetensorsMalformedTest, TruncatedInHeader) {
  auto bytes = valid_file();
  bytes.resize(8 + 10);
  expect_open_error(bytes, {"header length", "exceeds file size 18", "truncated"});
}

TEST_F(SafetensorsMalformedTest, TruncatedInData) {
  auto bytes = valid_file();
  bytes.erase(bytes.end() - 10, bytes.end());
  expect_open_error(bytes, {"tensor 'w'", "data_offsets [0, 64]", "truncated"});
}

TEST_F(SafetensorsMalformedTest, HeaderLengthLargerThanFile) {
  expect_open_error(raw_safetensors("{}", {}, 999999), {"header length 999999 exceeds file size 10"});
}

TEST_F(SafetensorsMalformedTest, HeaderLengthHuge) {
  expect_open_error(raw_safetensors("{}", {}, ~uint64_t(0)), {"header length 18446744073709551615"});
}

TEST_F(SafetensorsMalformedTest, HeaderNotJson) {
  expect_header_error("{\"w\": {\"dtype\": \"F32\",", 0, {"not valid JSON"});
}

TEST_F(SafetensorsMalformedTest, HeaderNotObject) {
  expect_header_error("[1, 2, 3]", 0, {"not a JSON object", "array"});
}

TEST_F(SafetensorsMalformedTest, DeeplyNestedHeaderDoesNotCrash) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  expect_header_error(deep, 0, {"header nests deeper than 16 levels"});
}

// Found by review, and reported by the fuzz target (tests/fuzz/fuzz_safetensors_header.cpp, ASan) on
// tests/fuzz/corpus/safetensors/finding-deep-shape.safetensors: a shape nested 10000 deep in a 20 KB
// header overflowed the stack while its error message printed it (nlohmann's dump() recurses once a
// level). Nesting is refused while the header parses.
TEST_F(SafetensorsMalformedTest, DeeplyNestedShapeIsRefusedBeforeItIsPrinted) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  expect_header_error(R"({"w": {"dtype": "F32", "shape": )" + deep + R"(, "data_offsets": [0, 4]}})", 4,
                      {"header nests deeper than 16 levels"});
  expect_header_error(R"({"__metadata__": {"note": )" + deep + "}}", 0, {"header nests deeper than 16 levels"});
  // Nesting up to the limit is still only the usual errors.
  const std::string shallow = std::string(12, '[') + "1" + std::string(12, ']');
  expect_header_error(R"({"w": {"dtype": "F32", "shape": )" + shallow + R"(, "data_offsets": [0, 4]}})", 4,
                      {"tensor 'w'", "not a non-negative integer"});
}

TEST_F(SafetensorsMalformedTest, UnknownDtype) {
  expect_header_error(R"({"w": {"dtype": "Q4_K", "shape": [2], "data_offsets": [0, 2]}})", 2,
                      {"tensor 'w'", "unknown dtype 'Q4_K'"});
}

TEST_F(SafetensorsMalformedTest, DtypeNotString) {
  expect_header_error(R"({"w": {"dtype": 7, "shape": [2], "data_offsets": [0, 2]}})", 2, {"tensor 'w'", "dtype"});
}

TEST_F(SafetensorsMalformedTest, MissingDataOffsets) {
  expect_header_error(R"({"w": {"dtype": "U8", "shape": [2]}})", 2, {"tensor 'w'", "missing field data_offsets"});
}

TEST_F(SafetensorsMalformedTest, EntryNotObject) {
  expect_header_error(R"({"w": [1, 2]})", 0, {"tensor 'w'", "not a JSON object"});
}

TEST_F(SafetensorsMalformedTest, NegativeShape) {
  expect_header_error(R"({"w": {"dtype": "F32", "shape": [-1, 4], "data_offsets": [0, 16]}})", 16,
                      {"tensor 'w'", "shape [-1,4]", "non-negative"});
}

TEST_F(SafetensorsMalformedTest, FractionalShape) {
  expect_header_error(R"({"w": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 10]}})", 10,
                      {"tensor 'w'", "shape"});
}

TEST_F(SafetensorsMalformedTest, HugeShapeOverflow) {
  // 2^62 * 2^62 * 4 bytes wraps 64 bits; a naive product would come out small.
  expect_header_error(
      R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 4611686018427387904], "data_offsets": [0, 0]}})", 0,
      {"tensor 'w'", "overflows"});
}

TEST_F(SafetensorsMalformedTest, OffsetsBeyondData) {
  expect_header_error(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [16, 32]}})", 20,
                      {"tensor 'w'", "data_offsets [16, 32]", "past the end of the data section (20 bytes"});
}

TEST_F(SafetensorsMalformedTest, OffsetsNotAPair) {
  expect_header_error(R"({"w": {"dtype": "U8", "shape": [2], "data_offsets": [0, 1, 2]}})", 2,
                      {"tensor 'w'", "data_offsets [0,1,2]"});
}

TEST_F(SafetensorsMalformedTest, OffsetsBeginAfterEnd) {
  expect_header_error(R"({"w": {"dtype": "U8", "shape": [0], "data_offsets": [4, 2]}})", 8,
                      {"tensor 'w'", "begin > end"});
}

TEST_F(SafetensorsMalformedTest, OffsetsDoNotMatchShape) {
  expect_header_error(
      R"({"layers.0.attention.wq.weight": {"dtype": "BF16", "shape": [4, 8], "data_offsets": [0, 100]}})", 100,
      {"tensor 'layers.0.attention.wq.weight': data_offsets [0, 100] do not match shape [4, 8] x BF16 (64 bytes)"});
}

TEST_F(SafetensorsMalformedTest, OverlappingTensors) {
  expect_header_error(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                          "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})",
                      24, {"'a'", "'b'", "overlap"});
}

TEST_F(SafetensorsMalformedTest, DuplicateTensorName) {
  expect_header_error(R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                          "a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})",
                      2, {"tensor 'a'", "twice"});
}

TEST_F(SafetensorsMalformedTest, MetadataNotStrings) {
  expect_header_error(R"({"__metadata__": {"format": 3}})", 0, {"__metadata__", "format"});
}

// Every truncation and a few thousand random byte flips: each must either open or throw
// voxrt::Error (any other exception fails the test; a crash fails the binary).
TEST_F(SafetensorsMalformedTest, CorruptionNeverCrashes) {
  TempDir tmp;
  write_safetensors(tmp / "ok.safetensors", {{"a", DType::BF16, {3, 5}, random_bytes(30, 1)},
                                             {"b", DType::F32, {2}, random_bytes(8, 2)}},
                    {{"format", "pt"}});
  const auto good = testutil::read_bytes(tmp / "ok.safetensors");
  auto try_open = [&](const std::vector<uint8_t>& bytes) {
    write_bytes(path(), bytes);
    try {
      auto f = SafetensorsFile::open(path());
      size_t handed_out = 0, checksum = 0;
      for (const auto& t : f->tensors()) {
        checksum = std::accumulate(t.data, t.data + t.nbytes, checksum);  // reads every byte handed out
        handed_out += t.nbytes;
      }
      EXPECT_LE(handed_out, bytes.size()) << checksum;
    } catch (const Error&) {
    }
  };
  for (size_t len = 0; len < good.size(); ++len) try_open(std::vector<uint8_t>(good.begin(), good.begin() + len));
  std::mt19937 rng(5);
  for (int trial = 0; trial < 2000; ++trial) {
    auto bytes = good;
    for (int k = 0; k < 1 + trial % 4; ++k) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    try_open(bytes);
  }
}

TEST_F(SafetensorsMalformedTest, ZeroSizeTensorsMayShareOffsets) {
  // Not an error: empty tensors occupy no bytes, so they overlap nothing.
  write_bytes(path(), raw_safetensors(R"({"a": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]},
                                          "b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
                                      std::vector<uint8_t>(8, 0)));
  EXPECT_EQ(SafetensorsFile::open(path())->tensors().size(), 2u);
}

}  // namespace
}  // namespace voxrt

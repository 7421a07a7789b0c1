// VOXRT_CUDA_REPEAT, the CUDA backend's switch for placing a step's time by repeating one kind
// of operation (runtime/cuda/op_repeat.h): host code, run in the CUDA build on any machine.
#include <gtest/gtest.h>

#include "common/error.h"
#ifdef VOXRT_WITH_CUDA
#include "runtime/cuda/op_repeat.h"
#endif

namespace voxrt {
namespace {

TEST(CudaOpRepeat, NamedKindsLaunchTwiceAndUnknownKindsAreErrors) {
#ifndef VOXRT_WITH_CUDA
  GTEST_SKIP() << "built without CUDA (cmake --preset cuda builds it)";
#else
  using cuda::OpKind;
  for (const char* unset : {static_cast<const char*>(nullptr), "", ","}) {
    const cuda::OpRepeat r = cuda::parse_op_repeat(unset);
    for (OpKind k : {OpKind::Attention, OpKind::Norm, OpKind::Rope, OpKind::Product}) EXPECT_EQ(r[k], 1);
  }
  const cuda::OpRepeat r = cuda::parse_op_repeat("norm,product");
  EXPECT_EQ(r[OpKind::Attention], 1);
  EXPECT_EQ(r[OpKind::Norm], 2);
  EXPECT_EQ(r[OpKind::Rope], 1);
  EXPECT_EQ(r[OpKind::Product], 2);
  EXPECT_EQ(cuda::parse_op_repeat("attention")[OpKind::Attention], 2);
  EXPECT_EQ(cuda::parse_op_repeat("rope,")[OpKind::Rope], 2);
  try {
    cuda::parse_op_repeat("norm,attn");
    FAIL() << "an unknown kind must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'attn'"), std::string::npos) << e.what();
  }
#endif
}

}  // namespace
}  // namespace voxrt

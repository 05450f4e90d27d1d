// RunNodeOnHost's contract: dispatch by op name, checks of the buffers
// against the node's types, errors with the node's id, custom kernels refused.
#include "engine/host/host_kernels.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/host/host_test_util.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::host_test {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(HostKernelsTest, CustomCudaKernelsNeedTheCudaBackend) {
  const TestArray x = MakeArray(DType::kFloat32, S({2}), {1, 2});
  for (const char* op : {"elementwise_kernel", "reduction_kernel", "raw_kernel"}) {
    EXPECT_THAT(
        RunNode(MakeNode(op, {x.type()}, x.type(), DType::kFloat32), {x}),
        StatusIs(absl::StatusCode::kFailedPrecondition,
                 AllOf(HasSubstr("custom CUDA kernels need the cuda backend"), HasSubstr(op))));
  }
}

TEST(HostKernelsTest, UnknownOpIsUnimplemented) {
  const TestArray x = MakeArray(DType::kFloat32, S({2}), {1, 2});
  EXPECT_THAT(RunNode(MakeNode("frobnicate", {x.type()}, x.type(), DType::kFloat32), {x}),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("frobnicate")));
}

TEST(HostKernelsTest, MissingOpIsInvalid) {
  ValidatedNode node = MakeNode("abs", {}, {DType::kFloat32, S({})}, DType::kFloat32);
  node.op = nullptr;
  EXPECT_THAT(RunNode(node, {}), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(HostKernelsTest, BuffersMustMatchTheNodeTypes) {
  const TestArray x = MakeArray(DType::kFloat32, S({2}), {1, 2});
  const TestArray y = MakeArray(DType::kFloat64, S({2}), {1, 2});
  // Input dtype differs from input_types.
  EXPECT_THAT(RunNode(MakeNode("abs", {y.type()}, x.type(), DType::kFloat32), {x}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("node 'n' (abs)"), HasSubstr("input 0"))));
  // Wrong number of inputs.
  EXPECT_THAT(RunNode(MakeNode("add", {x.type()}, x.type(), DType::kFloat32), {x}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected 2 inputs")));
  // Output buffer differs from the node's output type.
  std::vector<HostConstView> in = {x.view()};
  TestArray out = Empty(DType::kFloat32, S({3}));
  HostView out_view{out.dtype, out.shape, out.bytes.data()};
  EXPECT_THAT(
      RunNodeOnHost(MakeNode("abs", {x.type()}, x.type(), DType::kFloat32), in, out_view, {}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("output")));
  // Null data for a non-empty input.
  std::vector<HostConstView> null_in = {{DType::kFloat32, S({2}), nullptr}};
  TestArray ok_out = Empty(DType::kFloat32, S({2}));
  HostView ok_view{ok_out.dtype, ok_out.shape, ok_out.bytes.data()};
  EXPECT_THAT(
      RunNodeOnHost(MakeNode("abs", {x.type()}, x.type(), DType::kFloat32), null_in, ok_view, {}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no data")));
  // A shape that does not broadcast to the output is refused.
  const TestArray z = MakeArray(DType::kFloat32, S({2, 2}), {1, 2, 3, 4});
  EXPECT_THAT(RunNode(MakeNode("abs", {z.type()}, x.type(), DType::kFloat32), {z}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(HostKernelsTest, EmptyArraysNeedNoData) {
  std::vector<HostConstView> in = {{DType::kFloat32, S({0, 3}), nullptr}};
  HostView out{DType::kFloat32, S({0, 3}), nullptr};
  EXPECT_THAT(RunNodeOnHost(MakeNode("exp", {{DType::kFloat32, S({0, 3})}},
                                     {DType::kFloat32, S({0, 3})}, DType::kFloat32),
                            in, out, {}),
              IsOk());
}

// Every op of docs/ops.md except the custom kernels has a host kernel (a
// missing one would be UNIMPLEMENTED, whatever else fails).
TEST(HostKernelsTest, EveryOpHasAKernel) {
  const std::vector<std::string> ops = {"neg",
                                        "abs",
                                        "sign",
                                        "square",
                                        "sqrt",
                                        "rsqrt",
                                        "exp",
                                        "log",
                                        "log1p",
                                        "expm1",
                                        "sin",
                                        "cos",
                                        "tanh",
                                        "sigmoid",
                                        "gelu",
                                        "erf",
                                        "floor",
                                        "ceil",
                                        "round",
                                        "relu",
                                        "reciprocal",
                                        "isnan",
                                        "isinf",
                                        "logical_not",
                                        "bitwise_not",
                                        "add",
                                        "sub",
                                        "mul",
                                        "div",
                                        "floordiv",
                                        "mod",
                                        "pow",
                                        "maximum",
                                        "minimum",
                                        "atan2",
                                        "eq",
                                        "ne",
                                        "lt",
                                        "le",
                                        "gt",
                                        "ge",
                                        "logical_and",
                                        "logical_or",
                                        "logical_xor",
                                        "bitwise_and",
                                        "bitwise_or",
                                        "bitwise_xor",
                                        "where",
                                        "clip",
                                        "cast",
                                        "sum",
                                        "prod",
                                        "min",
                                        "max",
                                        "mean",
                                        "var",
                                        "std",
                                        "argmin",
                                        "argmax",
                                        "any",
                                        "all",
                                        "logsumexp",
                                        "softmax",
                                        "log_softmax",
                                        "cumsum",
                                        "cumprod",
                                        "matmul",
                                        "dot",
                                        "reshape",
                                        "transpose",
                                        "broadcast_to",
                                        "expand_dims",
                                        "squeeze",
                                        "slice",
                                        "concatenate",
                                        "stack",
                                        "full",
                                        "arange",
                                        "random_uniform",
                                        "random_normal"};
  for (const std::string& op : ops) {
    const TestArray x = MakeArray(DType::kFloat32, S({1}), {1});
    absl::StatusOr<TestArray> r = RunNode(MakeNode(op, {x.type()}, x.type(), DType::kFloat32), {x});
    EXPECT_THAT(r.status(), ::testing::Not(StatusIs(absl::StatusCode::kUnimplemented))) << op;
  }
}

}  // namespace
}  // namespace gpuflow::host_test

// Custom kernels in CuPy's forms: CuPy's documentation examples and the
// layouts the generator distinguishes compile with NVRTC for sm_90 (no GPU
// needed; this runs in CI), with CuPy's complex<T> for complex arguments.
// Results are checked on the GPU by tests/python/test_custom_kernel_ops.py
// and test_kernels.py.
#include <string>
#include <vector>

#include "engine/cuda/codegen.h"
#include "engine/cuda/device_library.h"
#include "engine/cuda/nvrtc_compiler.h"
#include "engine/ir/validate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::cuda {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

struct Arg {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
};

// Validates a one-node graph over session arrays `args`.
ValidatedGraph Validate(const Node& node, const std::vector<Arg>& args) {
  Graph g;
  g.nodes.push_back(node);
  ArrayTypeLookup lookup = [&](const std::string& name) -> absl::StatusOr<ValueType> {
    for (const Arg& a : args) {
      if (a.name == name) return ValueType{a.dtype, *Shape::Create(a.shape), false};
    }
    return absl::NotFoundError(name);
  };
  absl::StatusOr<ValidatedGraph> v = ValidateGraph(g, lookup, {});
  EXPECT_TRUE(v.ok()) << v.status();
  return *std::move(v);
}

Node Kernel(const std::string& op, std::vector<Input> inputs, AttrMap attrs) {
  return Node{
      .id = std::string(1, 'k'), .op = op, .inputs = std::move(inputs), .attrs = std::move(attrs)};
}

absl::Status Compile(const CustomKernel& k) {
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> m = CompileToCubin(k.source, k.name + ".cu", options);
  if (!m.ok()) return m.status();
  if (m->cubin.empty()) return absl::InternalError("empty cubin");
  return absl::OkStatus();
}

TEST(CodegenCustomTest, SquaredDifferenceVectorisedWhenContiguous) {
  const ValidatedGraph g =
      Validate(Kernel("elementwise_kernel", {Input::Array("x"), Input::Array("y")},
                      {{"in_params", std::string("float32 x, float32 y")},
                       {"out_params", std::string("float32 z")},
                       {"operation", std::string("z = (x - y) * (x - y)")},
                       {"name", std::string("squared_diff")}}),
               {{"x", DType::kFloat32, {1000}}, {"y", DType::kFloat32, {1000}}});
  absl::StatusOr<CustomKernel> k = GenerateCustomKernel(g, 0);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->name, "gf_squared_diff");
  EXPECT_EQ(k->elements_per_thread, 4);
  EXPECT_EQ(k->num_elements, 1000);
  EXPECT_THAT(k->input_slots, ElementsAre(0, 1));
  EXPECT_THAT(k->output_slots, ElementsAre(2));
  EXPECT_THAT(Compile(*k), IsOk());
}

TEST(CodegenCustomTest, GenericSquaredDifferenceBroadcastsThroughStrides) {
  // CuPy's type-generic form, with y broadcast along the rows.
  const ValidatedGraph g =
      Validate(Kernel("elementwise_kernel", {Input::Array("x"), Input::Array("y")},
                      {{"in_params", std::string("T x, T y")},
                       {"out_params", std::string("T z")},
                       {"operation", std::string("z = (x - y) * (x - y)")},
                       {"name", std::string("squared_diff_generic")}}),
               {{"x", DType::kInt16, {5, 7}}, {"y", DType::kInt16, {7}}});
  absl::StatusOr<CustomKernel> k = GenerateCustomKernel(g, 0);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->elements_per_thread, 1);
  EXPECT_THAT(k->source, HasSubstr("typedef short T;"));
  EXPECT_THAT(Compile(*k), IsOk());
}

TEST(CodegenCustomTest, SoftplusWithFloat64ThresholdScalarPassesItByValue) {
  const ValidatedGraph g =
      Validate(Kernel("elementwise_kernel", {Input::Array("x"), Input::FromScalar(Scalar::Int(20))},
                      {{"in_params", std::string("T x, float64 threshold")},
                       {"out_params", std::string("T y")},
                       {"operation", std::string("y = (x > threshold) ? x : log1p(exp(x))")},
                       {"name", std::string("softplus")}}),
               {{"x", DType::kFloat32, {1 << 20}}});
  absl::StatusOr<CustomKernel> k = GenerateCustomKernel(g, 0);
  ASSERT_TRUE(k.ok()) << k.status();
  ASSERT_EQ(k->input_slots.size(), 2u);
  EXPECT_EQ(k->input_slots[1], -1);  // the literal travels in its word
  EXPECT_EQ(k->words[1], 20u);
  // ... which the backend rewrites for each graph of the plan.
  EXPECT_THAT(k->literal_words, ElementsAre(std::make_pair(1, 1)));
  EXPECT_THAT(k->source, HasSubstr("const double threshold = gf::cv<double>(gf::word<i64>"));
  EXPECT_THAT(Compile(*k), IsOk());
}

TEST(CodegenCustomTest, RawArgumentIndexingAndLoopHooksCompile) {
  // CuPy's add_reverse example, with both outputs' initial values given.
  const ValidatedGraph g2 = Validate(
      Kernel("elementwise_kernel",
             {Input::Array("x"), Input::Array("y"), Input::Array("o"), Input::Array("f")},
             {{"in_params", std::string("T x, raw T y")},
              {"out_params", std::string("T z, bool flag")},
              {"operation", std::string("z = z + x + y[_ind.size() - i - 1]; flag = z > 0")},
              {"loop_prep", std::string("const long long last = y.size() - 1; (void)last")},
              {"after_loop", std::string("(void)0")},
              {"preamble", std::string("__device__ int unused_helper() { return 1; }")},
              {"name", std::string("add_reverse")},
              {"output", int64_t{1}}}),
      {{"x", DType::kFloat64, {6}},
       {"y", DType::kFloat64, {6}},
       {"o", DType::kFloat64, {6}},
       {"f", DType::kBool, {6}}});
  absl::StatusOr<CustomKernel> k = GenerateCustomKernel(g2, 0);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->output_slots.size(), 2u);
  EXPECT_THAT(k->source, HasSubstr("_gf_raw<const double, 1> y("));
  EXPECT_THAT(Compile(*k), IsOk());
}

TEST(CodegenCustomTest, RawOutputsAreIndexedByTheKernel) {
  // CuPy's raw output: `raw T y` among out_params, written at y[idx]; its
  // array (any shape) is given and copied into the output first; a second,
  // non-raw output keeps the loop shape and is vectorised.
  const ValidatedGraph g = Validate(
      Kernel("elementwise_kernel",
             {Input::Array("x"), Input::Array("idx"), Input::Array("y"), Input::Array("z")},
             {{"in_params", std::string("T x, int64 idx")},
              {"out_params", std::string("raw T y, T z")},
              {"operation", std::string("y[idx] = x; z = x * 2")},
              {"name", std::string("scatter_raw")}}),
      {{"x", DType::kFloat32, {64}},
       {"idx", DType::kInt64, {64}},
       {"y", DType::kFloat32, {5, 30}},
       {"z", DType::kFloat32, {64}}});
  EXPECT_EQ(g.nodes[0].type.output.shape, *Shape::Create({5, 30}));  // output 0: y
  absl::StatusOr<CustomKernel> k = GenerateCustomKernel(g, 0);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_THAT(k->output_elements, ElementsAre(150, 64));
  EXPECT_THAT(k->raw_output_inputs, ElementsAre(2, -1));
  EXPECT_EQ(k->num_elements, 64);
  EXPECT_EQ(k->elements_per_thread, 2);  // 16 bytes of int64 idx
  EXPECT_THAT(k->source, HasSubstr("_gf_raw<float, 2> y("));
  EXPECT_THAT(Compile(*k), IsOk());
  // With only raw outputs, the loop size comes from the inputs or `size`.
  const ValidatedGraph g2 = Validate(Kernel("elementwise_kernel", {Input::Array("y")},
                                            {{"in_params", std::string("")},
                                             {"out_params", std::string("raw float64 y")},
                                             {"operation", std::string("y[i] = i")},
                                             {"size", int64_t{7}}}),
                                     {{"y", DType::kFloat64, {3, 3}}});
  absl::StatusOr<CustomKernel> k2 = GenerateCustomKernel(g2, 0);
  ASSERT_TRUE(k2.ok()) << k2.status();
  EXPECT_EQ(k2->num_elements, 7);
  EXPECT_THAT(Compile(*k2), IsOk());
}

TEST(CodegenCustomTest, RawOutputsNeedTheirArraysAndALoopSize) {
  Graph g;
  g.nodes.push_back(Kernel("elementwise_kernel", {Input::Array("x")},
                           {{"in_params", std::string("T x")},
                            {"out_params", std::string("raw T y")},
                            {"operation", std::string("y[i] = x")}}));
  ArrayTypeLookup lookup = [](const std::string&) -> absl::StatusOr<ValueType> {
    return ValueType{DType::kFloat32, *Shape::Create({4}), false};
  };
  EXPECT_THAT(ValidateGraph(g, lookup, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("raw output parameter 'y' needs its array")));
  g.nodes[0] = Kernel("elementwise_kernel", {Input::Array("y")},
                      {{"in_params", std::string("")},
                       {"out_params", std::string("raw T y")},
                       {"operation", std::string("y[i] = 0")}});
  EXPECT_THAT(ValidateGraph(g, lookup, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("loop size is undecided")));
  g.nodes[0] = Kernel("reduction_kernel", {Input::Array("x")},
                      {{"in_params", std::string("T x")},
                       {"out_params", std::string("raw T y")},
                       {"map_expr", std::string("x")},
                       {"reduce_expr", std::string("a + b")},
                       {"post_map_expr", std::string("y = a")},
                       {"identity", std::string("0")}});
  EXPECT_THAT(ValidateGraph(g, lookup, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not supported in reduction kernels")));
}

TEST(CodegenCustomTest, L2NormReductionCompilesForEveryLayout) {
  // CuPy's l2norm example over the last axis and over everything (element r
  // of output o at o * R + r), and over the first axis (index arithmetic).
  struct Case {
    std::vector<int64_t> axes;
    int64_t outputs;
    bool contiguous;
  };
  for (const Case& c : {Case{{1}, 300, true}, Case{{}, 1, true}, Case{{0}, 40, false}}) {
    AttrMap attrs = {{"in_params", std::string("T x")},
                     {"out_params", std::string("T y")},
                     {"map_expr", std::string("x * x")},
                     {"reduce_expr", std::string("a + b")},
                     {"post_map_expr", std::string("y = sqrt(a)")},
                     {"identity", std::string("0")},
                     {"name", std::string("l2norm")}};
    if (!c.axes.empty()) attrs["axes"] = c.axes;
    const ValidatedGraph g = Validate(Kernel("reduction_kernel", {Input::Array("x")}, attrs),
                                      {{"x", DType::kFloat32, {300, 40}}});
    absl::StatusOr<CustomKernel> k = GenerateCustomKernel(g, 0);
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_EQ(k->num_elements, c.outputs);
    EXPECT_EQ(k->reduced, 12000 / c.outputs);
    EXPECT_EQ(k->accumulator_bytes, 4);
    EXPECT_EQ(k->source.find("_gf_base0 = _gf_o * _gf_R;") != std::string::npos, c.contiguous);
    // The whole-array case differs from the last-axis one only in its words.
    if (!c.axes.empty()) {
      EXPECT_THAT(Compile(*k), IsOk());
    }
  }
}

// CuPy's complex<T> API as kernels written for CuPy use it: every function
// of <cupy/complex.cuh>, operators with real scalars and the other
// precision, compound assignment, thrust::complex. Each line names one
// overload, so a missing one fails to compile.
constexpr char kComplexApiOperation[] = R"(
  complex<double> w = z;            // complex64 -> complex128
  complex<float> back = w;          // and back (thrust's implicit conversion)
  w = w + real(z) + imag(z) + abs(z) + arg(z) + norm(z) + conj(z);
  w += z.real() + z.imag() + w.real();
  w = w * 2 + 2.0 * w - 1 + (1.5f - w) / 3 + 2 / w + w / 2.0 + w / 2;
  w -= 1; w *= 2.0; w /= 3; w += z; w *= z; w -= back; w /= complex<double>(1, 1);
  w = w + exp(w) + log(w) + log10(w) + log2(w) + log1p(w) + expm1(w) + sqrt(w);
  w = w + pow(w, w) + pow(w, 2) + pow(2.0, w) + pow(z, w) + pow(z, 0.5f) + pow(z, z);
  w = w + sin(w) + cos(w) + tan(w) + sinh(w) + cosh(w) + tanh(w);
  w = w + asin(w) + acos(w) + atan(w) + asinh(w) + acosh(w) + atanh(w);
  w = w + polar(2.0, 0.5) + polar(1.0f) + proj(w) + rint(w) + min(w, -w) + max(w, -w);
  const thrust::complex<float> t = thrust::exp(z) * thrust::polar(1.0f, 2.0f);
  w = w + t + thrust::abs(t) + z * t;
  w.real(w.real() + 1); w.imag(0.5);
  const bool odd = isnan(w) || isinf(w) || !isfinite(w) || w == 0 || 1.0 != w || w == z;
  y = odd ? complex<double>(0) : w + s + x;
  n = abs(exp(z) - exp(complex<double>(z))) + sqrt(x) + exp(x);
)";

TEST(CodegenCustomTest, ComplexParametersCompileWithCupysComplexApi) {
  // A complex64 array, a weak complex scalar (complex128: 16 bytes, read
  // through its pointer), a real placeholder and complex128 outputs.
  const ValidatedGraph g = Validate(
      Kernel("elementwise_kernel",
             {Input::Array("z"), Input::FromScalar(Scalar::Complex(1, -2)), Input::Array("x")},
             {{"in_params", std::string("C z, complex128 s, F x")},
              {"out_params", std::string("complex128 y, F n")},
              {"operation", std::string(kComplexApiOperation)},
              {"name", std::string("complex_api")}}),
      {{"z", DType::kComplex64, {1000}}, {"x", DType::kFloat32, {1000}}});
  absl::StatusOr<CustomKernel> k = GenerateCustomKernel(g, 0);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_THAT(k->source, HasSubstr("typedef complex<float> C;"));
  EXPECT_THAT(k->source,
              HasSubstr("const complex<double> s = gf::cv<complex<double>>(_gf_in1[0]);"));
  EXPECT_THAT(k->source, HasSubstr("using gf::complex;"));
  // The scalar's pointer is written by the backend; nothing travels by value.
  EXPECT_THAT(k->input_slots, ElementsAre(0, 1, 2));
  EXPECT_THAT(k->literal_words, IsEmpty());
  EXPECT_EQ(k->elements_per_thread, 1);  // complex128 outputs: one per 16 bytes
  EXPECT_THAT(Compile(*k), IsOk());
}

TEST(CodegenCustomTest, Complex64ScalarTravelsByValueAndArraysVectorise) {
  Scalar c = Scalar::Complex(0.5, 2);
  c.dtype = DType::kComplex64;
  const ValidatedGraph g =
      Validate(Kernel("elementwise_kernel", {Input::Array("z"), Input::FromScalar(c)},
                      {{"in_params", std::string("T z, T c")},
                       {"out_params", std::string("T y")},
                       {"operation", std::string("y = z * c + conj(z)")},
                       {"name", std::string("complex_axpy")}}),
               {{"z", DType::kComplex64, {1001}}});
  absl::StatusOr<CustomKernel> k = GenerateCustomKernel(g, 0);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->input_slots[1], -1);
  EXPECT_THAT(k->literal_words, ElementsAre(std::make_pair(1, 1)));
  EXPECT_THAT(k->source, HasSubstr("gf::word<gf::complex<float>>(p.w[1])"));
  EXPECT_EQ(k->elements_per_thread, 2);  // two complex64 per 16-byte vector
  EXPECT_THAT(Compile(*k), IsOk());
}

TEST(CodegenCustomTest, ZeroDimArraysAreReadOnceAndKeepVectorisation) {
  const ValidatedGraph g =
      Validate(Kernel("elementwise_kernel", {Input::Array("x"), Input::Array("s")},
                      {{"in_params", std::string("T x, T s")},
                       {"out_params", std::string("T y")},
                       {"operation", std::string("y = x * s")},
                       {"name", std::string("scale_by_0d")}}),
               {{"x", DType::kFloat32, {1000}}, {"s", DType::kFloat32, {}}});
  absl::StatusOr<CustomKernel> k = GenerateCustomKernel(g, 0);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->elements_per_thread, 4);
  EXPECT_THAT(k->source, HasSubstr("const float s = gf::cv<float>(_gf_in1[0]);"));
  // Real kernels do not pay for parsing the complex libraries.
  EXPECT_THAT(k->source, Not(HasSubstr("using gf::complex;")));
  EXPECT_THAT(Compile(*k), IsOk());
}

TEST(CodegenCustomTest, ComplexReductionsCompileWithComplexAndRealAccumulators) {
  struct Case {
    const char* map_expr;
    const char* post_map_expr;
    const char* out;
    const char* reduce_type;
    bool with_scalar;  // a complex128 literal `s` (read through its pointer)
    int accumulator_bytes;
  };
  for (const Case& c : {Case{"x * conj(x) + s", "y = a", "T y", "complex128", true, 16},
                        Case{"norm(x)", "y = sqrt(a)", "float64 y", "float64", false, 8},
                        Case{"x", "y = a / 2.0", "T y", "T", false, 8}}) {
    SCOPED_TRACE(c.map_expr);
    for (const std::vector<int64_t>& axes : {std::vector<int64_t>{1}, std::vector<int64_t>{0}}) {
      std::vector<Input> inputs = {Input::Array("x")};
      std::string in_params = "T x";
      if (c.with_scalar) {
        inputs.push_back(Input::FromScalar(Scalar::Complex(0, 1)));
        in_params += ", complex128 s";
      }
      const ValidatedGraph g = Validate(Kernel("reduction_kernel", inputs,
                                               {{"in_params", in_params},
                                                {"out_params", std::string(c.out)},
                                                {"map_expr", std::string(c.map_expr)},
                                                {"reduce_expr", std::string("a + b")},
                                                {"post_map_expr", std::string(c.post_map_expr)},
                                                {"identity", std::string("0")},
                                                {"reduce_type", std::string(c.reduce_type)},
                                                {"axes", axes},
                                                {"name", std::string("complex_sum")}}),
                                        {{"x", DType::kComplex64, {30, 40}}});
      absl::StatusOr<CustomKernel> k = GenerateCustomKernel(g, 0);
      ASSERT_TRUE(k.ok()) << k.status();
      EXPECT_EQ(k->accumulator_bytes, c.accumulator_bytes);
      EXPECT_THAT(Compile(*k), IsOk());
    }
  }
}

TEST(CodegenCustomTest, RawKernelsIncludingCupyComplexGetItWithTheirLineNumbers) {
  const std::string code = R"(#include <cupy/complex.cuh>
extern "C" __global__ void rotate(const complex<float>* x, complex<double> w, complex<float>* y,
                                  int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = complex<float>(exp(w) * x[i] + thrust::conj(x[i]));
}
)";
  const std::string source = RawKernelSource(code);
  EXPECT_THAT(source, HasSubstr("#line 2\nextern \"C\" __global__ void rotate("));
  CompileOptions options;
  options.arch = 90;
  EXPECT_THAT(CompileToCubin(source, "rotate.cu", options).status(), IsOk());
  // An error is reported at the code's own line.
  const std::string broken =
      "#include \"cupy/complex.cuh\"\n\n"
      "extern \"C\" __global__ void k(complex<float>* y) {\n"
      "  y[0] = undefined_thing;\n}\n";
  EXPECT_THAT(CompileToCubin(RawKernelSource(broken), "broken.cu", options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("broken.cu(4): error")));
  // Code without the include is compiled as given.
  EXPECT_EQ(RawKernelSource("extern \"C\" __global__ void f() {}\n"),
            "extern \"C\" __global__ void f() {}\n");
}

TEST(CodegenCustomTest, UserCompileErrorsAreInvalidArgumentWithTheLog) {
  const ValidatedGraph g = Validate(Kernel("elementwise_kernel", {Input::Array("x")},
                                           {{"in_params", std::string("T x")},
                                            {"out_params", std::string("T y")},
                                            {"operation", std::string("y = undefined_function(x)")},
                                            {"name", std::string("broken")}}),
                                    {{"x", DType::kFloat32, {8}}});
  absl::StatusOr<CustomKernel> k = GenerateCustomKernel(g, 0);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_THAT(Compile(*k),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("undefined_function")));
}

}  // namespace
}  // namespace gpuflow::cuda

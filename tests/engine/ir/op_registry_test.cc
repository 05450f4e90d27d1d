#include "engine/ir/op_registry.h"

#include <cstdint>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "engine/ir/promotion.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/ir/dtype_codes.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow {

void PrintTo(const InferredNode& n, std::ostream* os) {
  *os << "{output " << DTypeName(n.output.dtype) << n.output.shape.ToString() << ", compute "
      << DTypeName(n.compute_dtype) << "}";
}

namespace {

// NumPy's answers; see numpy_reference_tables.py for how they are made.
#include "tests/engine/ir/numpy_reference_tables.inc"

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::NumpyDTypes;
using ::gpuflow::testing::ParseRow;
using ::gpuflow::testing::ParseTable;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;
using ::testing::VariantWith;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

ValueType T(DType dtype, std::initializer_list<int64_t> dims = {}) {
  return {.dtype = dtype, .shape = *Shape::Create(dims), .weak = false};
}
Shape S(std::initializer_list<int64_t> dims) { return *Shape::Create(dims); }
Shape S(absl::Span<const int64_t> dims) { return *Shape::Create(dims); }

const OpDef& Op(absl::string_view name) {
  const OpDef* op = OpRegistry::Default().Find(name);
  EXPECT_NE(op, nullptr) << name;
  static const OpDef kMissing;
  return op != nullptr ? *op : kMissing;
}

absl::StatusOr<InferredNode> InferAttrs(absl::string_view op, std::vector<ValueType> inputs,
                                        AttrMap& attrs);

absl::StatusOr<InferredNode> Infer(absl::string_view op, std::vector<ValueType> inputs,
                                   AttrMap attrs = {}) {
  return InferAttrs(op, std::move(inputs), attrs);
}

// Infers and returns the canonical attributes too.
absl::StatusOr<InferredNode> InferAttrs(absl::string_view op, std::vector<ValueType> inputs,
                                        AttrMap& attrs) {
  const OpDef& def = Op(op);
  if (def.infer == nullptr) return absl::NotFoundError(absl::StrCat("no op ", op));
  return def.infer(inputs, attrs);
}

MATCHER_P3(Produces, dtype, shape, compute,
           absl::StrCat("produces ", DTypeName(dtype), shape.ToString(), " computed in ",
                        DTypeName(compute))) {
  return !arg.output.weak && arg.output.dtype == dtype && arg.output.shape == shape &&
         arg.compute_dtype == compute;
}

// dtype and compute dtype; shape unchecked.
MATCHER_P2(HasDTypes, dtype, compute,
           absl::StrCat("has dtype ", DTypeName(dtype), " computed in ", DTypeName(compute))) {
  return arg.output.dtype == dtype && arg.compute_dtype == compute;
}

MATCHER_P(HasShape, shape, absl::StrCat("has shape ", shape.ToString())) {
  return arg.output.shape == shape;
}

MATCHER_P(HasDType, dtype, absl::StrCat("has dtype ", DTypeName(dtype))) {
  return arg.output.dtype == dtype;
}

std::vector<int64_t> Dims(absl::string_view csv) {
  std::vector<int64_t> dims;
  for (absl::string_view d : absl::StrSplit(csv, ',', absl::SkipEmpty())) {
    dims.push_back(std::stoll(std::string(d)));
  }
  return dims;
}

// ---- the registry itself --------------------------------------------------------

// Every op named in the first column of a table in docs/ops.md.
std::set<std::string> OpsInDocs() {
  std::ifstream in(std::string(GPUFLOW_SOURCE_DIR) + "/docs/ops.md");
  EXPECT_TRUE(in.good()) << "cannot read docs/ops.md";
  std::set<std::string> ops;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::string first_cell = line.substr(1, line.find('|', 1) - 1);
    std::vector<std::string> parts = absl::StrSplit(first_cell, '`');
    for (size_t i = 1; i < parts.size(); i += 2) ops.insert(parts[i]);
  }
  return ops;
}

TEST(OpRegistryTest, ListsExactlyTheOpsOfTheDocs) {
  const std::set<std::string> documented = OpsInDocs();
  std::set<std::string> registered;
  for (const OpDef& op : OpRegistry::Default().ops()) registered.insert(op.name);
  EXPECT_EQ(registered, documented);
  EXPECT_EQ(registered.size(), 104u);
}

TEST(OpRegistryTest, OpsAreSortedAndFindable) {
  const std::vector<OpDef>& ops = OpRegistry::Default().ops();
  for (size_t i = 1; i < ops.size(); ++i) EXPECT_LT(ops[i - 1].name, ops[i].name);
  for (const OpDef& op : ops) EXPECT_EQ(OpRegistry::Default().Find(op.name), &op);
  EXPECT_EQ(OpRegistry::Default().Find("no_such_op"), nullptr);
  EXPECT_EQ(OpRegistry::Default().Find(""), nullptr);
  EXPECT_EQ(OpRegistry::Default().Find("ad"), nullptr);
  EXPECT_EQ(OpRegistry::Default().Find("zzz"), nullptr);
}

TEST(OpRegistryTest, EveryOpIsDocumentedAndInferable) {
  for (const OpDef& op : OpRegistry::Default().ops()) {
    EXPECT_FALSE(op.doc.empty()) << op.name;
    EXPECT_TRUE(op.infer != nullptr) << op.name;
    EXPECT_GE(op.min_inputs, 0) << op.name;
    EXPECT_TRUE(op.max_inputs == -1 || op.max_inputs >= op.min_inputs) << op.name;
    for (const AttrDef& a : op.attrs) EXPECT_FALSE(a.doc.empty()) << op.name << "." << a.name;
  }
}

TEST(OpRegistryTest, ConstructorSortsByName) {
  std::vector<OpDef> ops(3);
  ops[0].name = "c";
  ops[1].name = "a";
  ops[2].name = "b";
  OpRegistry registry(std::move(ops));
  ASSERT_EQ(registry.ops().size(), 3u);
  EXPECT_EQ(registry.ops()[0].name, "a");
  EXPECT_EQ(registry.Find("b"), &registry.ops()[1]);
  EXPECT_EQ(registry.Find("d"), nullptr);
}

TEST(OpRegistryTest, FamiliesAndArities) {
  struct Expected {
    const char* op;
    OpFamily family;
    int min_inputs;
    int max_inputs;
  };
  for (const Expected& e : std::vector<Expected>{{"neg", OpFamily::kElementwise, 1, 1},
                                                 {"add", OpFamily::kElementwise, 2, 2},
                                                 {"where", OpFamily::kElementwise, 3, 3},
                                                 {"clip", OpFamily::kElementwise, 3, 3},
                                                 {"cast", OpFamily::kElementwise, 1, 1},
                                                 {"sum", OpFamily::kReduction, 1, 1},
                                                 {"argmax", OpFamily::kReduction, 1, 1},
                                                 {"softmax", OpFamily::kReduction, 1, 1},
                                                 {"log_softmax", OpFamily::kReduction, 1, 1},
                                                 {"cumsum", OpFamily::kScan, 1, 1},
                                                 {"cumprod", OpFamily::kScan, 1, 1},
                                                 {"matmul", OpFamily::kLinalg, 2, 2},
                                                 {"dot", OpFamily::kLinalg, 2, 2},
                                                 {"reshape", OpFamily::kShape, 1, 1},
                                                 {"slice", OpFamily::kShape, 1, 1},
                                                 {"concatenate", OpFamily::kShape, 1, -1},
                                                 {"stack", OpFamily::kShape, 1, -1},
                                                 {"take", OpFamily::kShape, 2, 2},
                                                 {"take_along_axis", OpFamily::kShape, 2, 2},
                                                 {"full", OpFamily::kCreation, 1, 1},
                                                 {"arange", OpFamily::kCreation, 0, 0},
                                                 {"random_uniform", OpFamily::kCreation, 0, 0},
                                                 {"random_normal", OpFamily::kCreation, 0, 0},
                                                 {"elementwise_kernel", OpFamily::kCustom, 0, -1},
                                                 {"reduction_kernel", OpFamily::kCustom, 1, -1},
                                                 {"raw_kernel", OpFamily::kCustom, 1, -1},
                                                 {"sort", OpFamily::kSort, 1, 1},
                                                 {"argsort", OpFamily::kSort, 1, 1},
                                                 {"searchsorted", OpFamily::kSort, 2, 2}}) {
    const OpDef& op = Op(e.op);
    EXPECT_EQ(op.family, e.family) << e.op;
    EXPECT_EQ(op.min_inputs, e.min_inputs) << e.op;
    EXPECT_EQ(op.max_inputs, e.max_inputs) << e.op;
  }
}

std::vector<std::pair<std::string, AttrType>> AttrsOf(absl::string_view op) {
  std::vector<std::pair<std::string, AttrType>> out;
  for (const AttrDef& a : Op(op).attrs) out.emplace_back(a.name, a.type);
  return out;
}
std::set<std::string> RequiredAttrsOf(absl::string_view op) {
  std::set<std::string> out;
  for (const AttrDef& a : Op(op).attrs) {
    if (a.required) out.insert(a.name);
  }
  return out;
}

TEST(OpRegistryTest, AttributesMatchTheDocs) {
  using P = std::pair<std::string, AttrType>;
  EXPECT_THAT(AttrsOf("add"), IsEmpty());
  EXPECT_THAT(AttrsOf("cast"), ElementsAre(P{"dtype", AttrType::kDType}));
  EXPECT_THAT(AttrsOf("sum"),
              UnorderedElementsAre(P{"axes", AttrType::kInts}, P{"keepdims", AttrType::kBool},
                                   P{"dtype", AttrType::kDType}));
  EXPECT_THAT(AttrsOf("max"),
              UnorderedElementsAre(P{"axes", AttrType::kInts}, P{"keepdims", AttrType::kBool}));
  EXPECT_THAT(AttrsOf("var"),
              UnorderedElementsAre(P{"axes", AttrType::kInts}, P{"keepdims", AttrType::kBool},
                                   P{"ddof", AttrType::kFloat}));
  EXPECT_THAT(AttrsOf("argmin"),
              UnorderedElementsAre(P{"axis", AttrType::kInt}, P{"keepdims", AttrType::kBool}));
  EXPECT_THAT(AttrsOf("softmax"), ElementsAre(P{"axis", AttrType::kInt}));
  EXPECT_THAT(AttrsOf("cumsum"),
              UnorderedElementsAre(P{"axis", AttrType::kInt}, P{"dtype", AttrType::kDType}));
  EXPECT_THAT(AttrsOf("slice"),
              UnorderedElementsAre(P{"starts", AttrType::kInts}, P{"stops", AttrType::kInts},
                                   P{"steps", AttrType::kInts}, P{"axes", AttrType::kInts}));
  EXPECT_THAT(AttrsOf("arange"),
              UnorderedElementsAre(P{"start", AttrType::kFloat}, P{"stop", AttrType::kFloat},
                                   P{"step", AttrType::kFloat}, P{"dtype", AttrType::kDType}));
  EXPECT_THAT(AttrsOf("random_normal"),
              UnorderedElementsAre(P{"shape", AttrType::kInts}, P{"seed", AttrType::kInt},
                                   P{"mean", AttrType::kFloat}, P{"std", AttrType::kFloat},
                                   P{"dtype", AttrType::kDType}));
  EXPECT_THAT(AttrsOf("raw_kernel"),
              UnorderedElementsAre(P{"code", AttrType::kString}, P{"name", AttrType::kString},
                                   P{"grid", AttrType::kInts}, P{"block", AttrType::kInts},
                                   P{"shared_mem", AttrType::kInt}, P{"output", AttrType::kInt},
                                   P{"options", AttrType::kStrings}, P{"writes", AttrType::kInts}));
  EXPECT_THAT(
      AttrsOf("reduction_kernel"),
      UnorderedElementsAre(P{"in_params", AttrType::kString}, P{"out_params", AttrType::kString},
                           P{"map_expr", AttrType::kString}, P{"reduce_expr", AttrType::kString},
                           P{"post_map_expr", AttrType::kString}, P{"identity", AttrType::kString},
                           P{"reduce_type", AttrType::kString}, P{"name", AttrType::kString},
                           P{"preamble", AttrType::kString}, P{"axes", AttrType::kInts},
                           P{"keepdims", AttrType::kBool}));
  EXPECT_THAT(
      AttrsOf("elementwise_kernel"),
      UnorderedElementsAre(P{"in_params", AttrType::kString}, P{"out_params", AttrType::kString},
                           P{"operation", AttrType::kString}, P{"name", AttrType::kString},
                           P{"preamble", AttrType::kString}, P{"loop_prep", AttrType::kString},
                           P{"after_loop", AttrType::kString}, P{"size", AttrType::kInt},
                           P{"output", AttrType::kInt}));

  EXPECT_THAT(RequiredAttrsOf("cast"), ElementsAre("dtype"));
  EXPECT_THAT(RequiredAttrsOf("sum"), IsEmpty());
  EXPECT_THAT(RequiredAttrsOf("reshape"), ElementsAre("shape"));
  EXPECT_THAT(RequiredAttrsOf("broadcast_to"), ElementsAre("shape"));
  EXPECT_THAT(RequiredAttrsOf("expand_dims"), ElementsAre("axes"));
  EXPECT_THAT(RequiredAttrsOf("squeeze"), IsEmpty());
  EXPECT_THAT(RequiredAttrsOf("slice"), ElementsAre("starts", "stops"));
  EXPECT_THAT(RequiredAttrsOf("full"), ElementsAre("shape"));
  EXPECT_THAT(RequiredAttrsOf("arange"), ElementsAre("stop"));
  EXPECT_THAT(RequiredAttrsOf("random_uniform"), ElementsAre("seed", "shape"));
  EXPECT_THAT(RequiredAttrsOf("raw_kernel"),
              ElementsAre("block", "code", "grid", "name", "output"));
}

TEST(OpFamilyNameTest, NamesEveryFamily) {
  EXPECT_EQ(OpFamilyName(OpFamily::kElementwise), "elementwise");
  EXPECT_EQ(OpFamilyName(OpFamily::kReduction), "reduction");
  EXPECT_EQ(OpFamilyName(OpFamily::kScan), "scan");
  EXPECT_EQ(OpFamilyName(OpFamily::kLinalg), "linalg");
  EXPECT_EQ(OpFamilyName(OpFamily::kShape), "shape");
  EXPECT_EQ(OpFamilyName(OpFamily::kCreation), "creation");
  EXPECT_EQ(OpFamilyName(OpFamily::kCustom), "custom");
  EXPECT_EQ(OpFamilyName(OpFamily::kSort), "sort");
}

TEST(AttrTypeNameTest, NamesEveryType) {
  EXPECT_EQ(AttrTypeName(AttrType::kInt), "int");
  EXPECT_EQ(AttrTypeName(AttrType::kFloat), "float");
  EXPECT_EQ(AttrTypeName(AttrType::kBool), "bool");
  EXPECT_EQ(AttrTypeName(AttrType::kString), "string");
  EXPECT_EQ(AttrTypeName(AttrType::kDType), "dtype");
  EXPECT_EQ(AttrTypeName(AttrType::kInts), "ints");
  EXPECT_EQ(AttrTypeName(AttrType::kFloats), "floats");
  EXPECT_EQ(AttrTypeName(AttrType::kStrings), "strings");
  EXPECT_EQ(TypeOf(AttrValue(std::vector<std::string>{})), AttrType::kStrings);
  EXPECT_EQ(TypeOf(AttrValue(2.0)), AttrType::kFloat);
}

// ---- infer checks arity and attributes itself ----------------------------------------

TEST(InferTest, ChecksArity) {
  EXPECT_THAT(Infer("add", {T(DType::kInt8)}),
              StatusIs(absl::StatusCode::kInvalidArgument, "takes 2 inputs, got 1"));
  EXPECT_THAT(Infer("neg", {T(DType::kInt8), T(DType::kInt8)}),
              StatusIs(absl::StatusCode::kInvalidArgument, "takes 1 input, got 2"));
  EXPECT_THAT(Infer("concatenate", {}),
              StatusIs(absl::StatusCode::kInvalidArgument, "takes at least 1 input, got 0"));
  EXPECT_THAT(Infer("arange", {T(DType::kInt8)}, {{"stop", int64_t{3}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "takes 0 inputs, got 1"));
}

TEST(InferTest, ChecksAttributeNamesTypesAndPresence) {
  EXPECT_THAT(
      Infer("add", {T(DType::kInt8), T(DType::kInt8)}, {{"axis", int64_t{0}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "unknown attribute 'axis' (it takes none)"));
  EXPECT_THAT(Infer("sum", {T(DType::kInt8, {2})}, {{"axis", int64_t{0}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unknown attribute 'axis' (known: axes, keepdims, dtype)"));
  EXPECT_THAT(
      Infer("sum", {T(DType::kInt8, {2})}, {{"axes", int64_t{0}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "attribute 'axes' must be ints, got int"));
  EXPECT_THAT(
      Infer("var", {T(DType::kInt8, {2})}, {{"ddof", true}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "attribute 'ddof' must be float, got bool"));
  EXPECT_THAT(
      Infer("cast", {T(DType::kInt8)}, {{"dtype", std::string("float32")}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "attribute 'dtype' must be dtype, got string"));
  EXPECT_THAT(Infer("cast", {T(DType::kInt8)}),
              StatusIs(absl::StatusCode::kInvalidArgument, "missing required attribute 'dtype'"));
}

TEST(InferTest, AcceptsIntForFloatAndStoresADouble) {
  AttrMap attrs = {{"ddof", int64_t{1}}};
  ASSERT_THAT(InferAttrs("var", {T(DType::kFloat32, {5})}, attrs), IsOk());
  EXPECT_THAT(attrs.at("ddof"), VariantWith<double>(1.0));
  attrs = {{"shape", std::vector<int64_t>{2}},
           {"seed", int64_t{1}},
           {"low", int64_t{-2}},
           {"high", int64_t{3}}};
  ASSERT_THAT(InferAttrs("random_uniform", {}, attrs), IsOk());
  EXPECT_THAT(attrs.at("low"), VariantWith<double>(-2.0));
  EXPECT_THAT(attrs.at("high"), VariantWith<double>(3.0));
}

TEST(InferTest, LeavesAttributesUntouchedOnError) {
  AttrMap attrs = {{"axes", std::vector<int64_t>{0, 5}}, {"keepdims", true}};
  const AttrMap before = attrs;
  EXPECT_THAT(InferAttrs("sum", {T(DType::kInt8, {2, 3})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(attrs, before);
}

// ---- elementwise dtype rules against NumPy ------------------------------------------

bool IsLogical(absl::string_view op) {
  return op == "logical_and" || op == "logical_or" || op == "logical_xor" || op == "logical_not";
}

TEST(ElementwiseTest, UnaryDTypesMatchNumpy) {
  const std::vector<DType>& dtypes = NumpyDTypes();
  for (const auto& [op, row_text] : kNumpyUnary) {
    const auto row = ParseRow(row_text);
    ASSERT_EQ(row.size(), dtypes.size()) << op;
    for (size_t i = 0; i < dtypes.size(); ++i) {
      SCOPED_TRACE(absl::StrCat(op, "(", DTypeName(dtypes[i]), ")"));
      absl::StatusOr<InferredNode> r = Infer(op, {T(dtypes[i], {3})});
      if (row[i].error) {
        EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument));
        continue;
      }
      // gpuflow computes logical ops in bool; NumPy in the input dtype.
      const DType compute = IsLogical(op) ? DType::kBool : row[i].compute;
      EXPECT_THAT(r, IsOkAndHolds(Produces(row[i].output, S({3}), compute)));
    }
  }
}

TEST(ElementwiseTest, OpsOutsideNumpyFollowTheSqrtRule) {
  for (const char* op : {"rsqrt", "sigmoid", "gelu", "erf"}) {
    for (const DTypeInfo& info : AllDTypes()) {
      if (IsComplex(info.dtype)) continue;  // complex_ops_test
      const DType expected = FloatResultDType(info.dtype);
      EXPECT_THAT(Infer(op, {T(info.dtype, {2, 3})}),
                  IsOkAndHolds(Produces(expected, S({2, 3}), expected)))
          << op << "(" << info.name << ")";
    }
  }
  EXPECT_THAT(Infer("sqrt", {T(DType::kBFloat16)}),
              IsOkAndHolds(Produces(DType::kBFloat16, S({}), DType::kBFloat16)));
}

TEST(ElementwiseTest, RoundingAndReluKeepTheDTypeAndRejectBool) {
  // docs/ops.md: ints keep their dtype and value (NumPy 1.x returned floats).
  for (const char* op : {"floor", "ceil", "round", "relu"}) {
    for (const DTypeInfo& info : AllDTypes()) {
      if (IsComplex(info.dtype)) continue;  // complex_ops_test
      absl::StatusOr<InferredNode> r = Infer(op, {T(info.dtype, {4})});
      if (info.dtype == DType::kBool) {
        EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument,
                                absl::StrCat(op, " is not supported for bool")));
      } else {
        EXPECT_THAT(r, IsOkAndHolds(Produces(info.dtype, S({4}), info.dtype))) << op;
      }
    }
  }
}

TEST(ElementwiseTest, UnaryErrorsExplainThemselves) {
  EXPECT_THAT(Infer("neg", {T(DType::kBool)}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "neg is not supported for bool; use logical_not"));
  EXPECT_THAT(Infer("sign", {T(DType::kBool)}),
              StatusIs(absl::StatusCode::kInvalidArgument, "sign is not supported for bool"));
  EXPECT_THAT(Infer("bitwise_not", {T(DType::kFloat16)}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bitwise_not requires an integer or bool input, got float16"));
  EXPECT_THAT(Infer("bitwise_not", {WeakFloatType()}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bitwise_not requires an integer or bool input, got Python float"));
}

TEST(ElementwiseTest, UnaryOfAPythonScalarUsesItsDefaultDType) {
  EXPECT_THAT(Infer("neg", {WeakIntType()}),
              IsOkAndHolds(Produces(DType::kInt64, S({}), DType::kInt64)));
  EXPECT_THAT(Infer("sqrt", {WeakIntType()}),
              IsOkAndHolds(Produces(DType::kFloat64, S({}), DType::kFloat64)));
  EXPECT_THAT(Infer("abs", {WeakBoolType()}),
              IsOkAndHolds(Produces(DType::kBool, S({}), DType::kBool)));
}

TEST(ElementwiseTest, BinaryDTypesMatchNumpy) {
  const std::vector<DType>& dtypes = NumpyDTypes();
  const ValueType weak[] = {WeakIntType(), WeakFloatType(), WeakBoolType()};
  for (const auto& [op, table_text] : kNumpyBinary) {
    const auto table = ParseTable(table_text);
    ASSERT_EQ(table.size(), dtypes.size() + 3) << op;
    for (size_t i = 0; i < table.size(); ++i) {
      for (size_t j = 0; j < dtypes.size(); ++j) {
        // Rows past the 12th: the second input is a weak scalar, the first
        // input is dtypes[j].
        const bool weak_row = i >= dtypes.size();
        const ValueType a = weak_row ? T(dtypes[j], {2, 1}) : T(dtypes[i], {2, 1});
        const ValueType b = weak_row ? weak[i - dtypes.size()] : T(dtypes[j], {3});
        SCOPED_TRACE(absl::StrCat(op, "(", DTypeName(a.dtype), ", ", weak_row ? "weak " : "",
                                  DTypeName(b.dtype), ")"));
        absl::StatusOr<InferredNode> r = Infer(op, {a, b});
        const auto& expected = table[i][j];
        if (expected.error) {
          EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument));
          continue;
        }
        const DType compute = IsLogical(op) ? DType::kBool : expected.compute;
        const Shape shape = weak_row ? S({2, 1}) : S({2, 3});
        EXPECT_THAT(r, IsOkAndHolds(Produces(expected.output, shape, compute)));
        // The weak scalar may come first, too.
        if (weak_row) {
          EXPECT_THAT(Infer(op, {b, a}), IsOkAndHolds(HasDTypes(expected.output, compute)));
        }
      }
    }
  }
}

TEST(ElementwiseTest, HeaderExamples) {
  // op_registry.h and InferredNode's comment.
  EXPECT_THAT(Infer("add", {T(DType::kInt8, {4}), WeakIntType()}),
              IsOkAndHolds(Produces(DType::kInt8, S({4}), DType::kInt8)));
  EXPECT_THAT(Infer("add", {T(DType::kInt8), T(DType::kInt8)}),
              IsOkAndHolds(HasDTypes(DType::kInt8, DType::kInt8)));
  EXPECT_THAT(Infer("div", {T(DType::kInt32), T(DType::kInt32)}),
              IsOkAndHolds(HasDTypes(DType::kFloat64, DType::kFloat64)));
  EXPECT_THAT(Infer("eq", {T(DType::kInt8), T(DType::kFloat32)}),
              IsOkAndHolds(HasDTypes(DType::kBool, DType::kFloat32)));
  EXPECT_THAT(Infer("add", {T(DType::kFloat16), T(DType::kFloat16)}),
              IsOkAndHolds(HasDTypes(DType::kFloat16, DType::kFloat16)));
}

TEST(ElementwiseTest, Bfloat16FollowsDocs) {
  const ValueType bf = T(DType::kBFloat16, {2});
  EXPECT_THAT(Infer("add", {bf, T(DType::kInt8)}),
              IsOkAndHolds(HasDTypes(DType::kBFloat16, DType::kBFloat16)));
  EXPECT_THAT(Infer("mul", {bf, T(DType::kUInt16)}),
              IsOkAndHolds(HasDTypes(DType::kFloat32, DType::kFloat32)));
  EXPECT_THAT(Infer("add", {bf, T(DType::kFloat16)}),
              IsOkAndHolds(HasDTypes(DType::kFloat32, DType::kFloat32)));
  EXPECT_THAT(Infer("div", {bf, T(DType::kInt32)}),
              IsOkAndHolds(HasDTypes(DType::kFloat64, DType::kFloat64)));
  EXPECT_THAT(Infer("div", {bf, WeakIntType()}),
              IsOkAndHolds(HasDTypes(DType::kBFloat16, DType::kBFloat16)));
  EXPECT_THAT(Infer("lt", {bf, T(DType::kFloat16)}),
              IsOkAndHolds(HasDTypes(DType::kBool, DType::kFloat32)));
  EXPECT_THAT(Infer("atan2", {bf, T(DType::kBool)}),
              IsOkAndHolds(HasDTypes(DType::kBFloat16, DType::kBFloat16)));
  EXPECT_THAT(Infer("floordiv", {bf, bf}),
              IsOkAndHolds(HasDTypes(DType::kBFloat16, DType::kBFloat16)));
  EXPECT_THAT(Infer("bitwise_and", {bf, T(DType::kInt8)}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ElementwiseTest, BinaryErrorsExplainThemselves) {
  EXPECT_THAT(Infer("sub", {T(DType::kBool), WeakBoolType()}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "sub is not supported for bool; use logical_xor or bitwise_xor"));
  EXPECT_THAT(Infer("bitwise_or", {T(DType::kInt64), T(DType::kUInt64)}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bitwise_or requires integer or bool inputs, got int64 and uint64 (which "
                       "promote to float64)"));
  EXPECT_THAT(Infer("bitwise_xor", {T(DType::kInt8), WeakFloatType()}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bitwise_xor requires integer or bool inputs, got int8 and Python float"));
  EXPECT_THAT(Infer("add", {T(DType::kInt8, {3}), T(DType::kInt8, {4})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "shapes (3,) and (4,) cannot be broadcast together"));
}

TEST(ElementwiseTest, BinaryShapesBroadcast) {
  EXPECT_THAT(Infer("add", {T(DType::kFloat32, {8, 1, 6, 1}), T(DType::kFloat32, {7, 1, 5})}),
              IsOkAndHolds(HasShape(S({8, 7, 6, 5}))));
  EXPECT_THAT(Infer("mul", {WeakFloatType(), T(DType::kFloat32, {0, 3})}),
              IsOkAndHolds(Produces(DType::kFloat32, S({0, 3}), DType::kFloat32)));
  EXPECT_THAT(Infer("maximum", {WeakIntType(), WeakFloatType()}),
              IsOkAndHolds(Produces(DType::kFloat64, S({}), DType::kFloat64)));
}

TEST(ElementwiseTest, WherePromotesTheTwoBranches) {
  // numpy.where(cond, int8_array, 1) is int8 under NumPy 2: the condition
  // does not take part.
  EXPECT_THAT(Infer("where", {T(DType::kFloat64, {3, 1}), T(DType::kInt8, {4}), WeakIntType()}),
              IsOkAndHolds(Produces(DType::kInt8, S({3, 4}), DType::kInt8)));
  EXPECT_THAT(Infer("where", {T(DType::kBool), T(DType::kInt8), T(DType::kUInt8)}),
              IsOkAndHolds(HasDTypes(DType::kInt16, DType::kInt16)));
  EXPECT_THAT(Infer("where", {T(DType::kBool), WeakIntType(), WeakFloatType()}),
              IsOkAndHolds(HasDTypes(DType::kFloat64, DType::kFloat64)));
  EXPECT_THAT(Infer("where", {T(DType::kBool, {2}), T(DType::kInt8, {3}), T(DType::kInt8)}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "shapes (2,), (3,) and () cannot be broadcast together"));
}

TEST(ElementwiseTest, ClipPromotesAllThree) {
  EXPECT_THAT(Infer("clip", {T(DType::kInt8, {5}), WeakIntType(), WeakIntType()}),
              IsOkAndHolds(Produces(DType::kInt8, S({5}), DType::kInt8)));
  EXPECT_THAT(Infer("clip", {T(DType::kInt8, {5}), WeakIntType(), WeakFloatType()}),
              IsOkAndHolds(HasDTypes(DType::kFloat64, DType::kFloat64)));
  // np.clip(float16, int8, uint8) is float16 (result_type of all three).
  EXPECT_THAT(Infer("clip", {T(DType::kFloat16), T(DType::kInt8), T(DType::kUInt8)}),
              IsOkAndHolds(HasDTypes(DType::kFloat16, DType::kFloat16)));
  EXPECT_THAT(
      Infer("clip", {T(DType::kFloat32, {2, 1}), T(DType::kFloat32, {3}), T(DType::kFloat32)}),
      IsOkAndHolds(HasShape(S({2, 3}))));
}

TEST(ElementwiseTest, CastGivesTheAttributeDType) {
  for (const DTypeInfo& info : AllDTypes()) {
    AttrMap attrs = {{"dtype", info.dtype}};
    EXPECT_THAT(InferAttrs("cast", {T(DType::kFloat64, {2, 2})}, attrs),
                IsOkAndHolds(Produces(info.dtype, S({2, 2}), info.dtype)));
    EXPECT_THAT(attrs, ElementsAre(Pair("dtype", VariantWith<DType>(info.dtype))));
  }
}

// numpy.gcd / numpy.lcm have loops for the ints only.
TEST(ElementwiseTest, GcdAndLcmTakeIntsOnly) {
  for (const char* op : {"gcd", "lcm"}) {
    EXPECT_THAT(Infer(op, {T(DType::kInt8, {3}), T(DType::kUInt8, {3})}),
                IsOkAndHolds(Produces(DType::kInt16, S({3}), DType::kInt16)))
        << op;
    EXPECT_THAT(Infer(op, {T(DType::kUInt32), WeakIntType()}),
                IsOkAndHolds(HasDTypes(DType::kUInt32, DType::kUInt32)))
        << op;
    EXPECT_THAT(Infer(op, {T(DType::kBool), T(DType::kBool)}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat(op, " requires integer inputs, got bool and bool")));
    EXPECT_THAT(Infer(op, {T(DType::kInt64), T(DType::kUInt64)}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat(op,
                                      " requires integer inputs, got int64 and uint64 (which "
                                      "promote to float64)")));
    EXPECT_THAT(Infer(op, {T(DType::kInt32), WeakFloatType()}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat(op, " requires integer inputs, got int32 and Python float")));
  }
}

// bitcast keeps the bytes: equal item sizes only, never bool; the compute
// dtype is the input's (its bytes are what the kernels copy).
TEST(ElementwiseTest, BitcastKeepsTheItemSize) {
  int pairs = 0;
  for (const DTypeInfo& from : AllDTypes()) {
    for (const DTypeInfo& to : AllDTypes()) {
      AttrMap attrs = {{"dtype", to.dtype}};
      absl::StatusOr<InferredNode> r = InferAttrs("bitcast", {T(from.dtype, {2, 3})}, attrs);
      if (from.itemsize == to.itemsize && from.dtype != DType::kBool && to.dtype != DType::kBool) {
        EXPECT_THAT(r, IsOkAndHolds(Produces(to.dtype, S({2, 3}), from.dtype)))
            << from.name << " -> " << to.name;
        ++pairs;
      } else {
        EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument))
            << from.name << " -> " << to.name;
      }
    }
  }
  // 1 byte: int8, uint8; 2: int16, uint16, float16, bfloat16; 4: int32,
  // uint32, float32; 8: int64, uint64, float64, complex64; 16: complex128.
  EXPECT_EQ(pairs, 2 * 2 + 4 * 4 + 3 * 3 + 4 * 4 + 1);
  AttrMap attrs = {{"dtype", DType::kInt16}};
  EXPECT_THAT(InferAttrs("bitcast", {T(DType::kFloat32)}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bitcast from float32 (4 bytes) to int16 (2 bytes): the sizes differ"));
  attrs = {{"dtype", DType::kBool}};
  EXPECT_THAT(InferAttrs("bitcast", {T(DType::kUInt8)}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bitcast does not take bool (from uint8 to bool)")));
}

// ---- reductions ---------------------------------------------------------------------

TEST(ReductionTest, OutputDTypesMatchNumpy) {
  const std::vector<DType>& dtypes = NumpyDTypes();
  for (const auto& [op, row_text] : kNumpyReductions) {
    const auto row = ParseRow(row_text);
    for (size_t i = 0; i < dtypes.size(); ++i) {
      EXPECT_THAT(Infer(op, {T(dtypes[i], {2, 3})}), IsOkAndHolds(HasDType(row[i].output)))
          << op << "(" << DTypeName(dtypes[i]) << ")";
    }
  }
}

TEST(ReductionTest, ComputeDTypesAreTheAccumulators) {
  EXPECT_THAT(Infer("sum", {T(DType::kInt8, {3})}),
              IsOkAndHolds(HasDTypes(DType::kInt64, DType::kInt64)));
  EXPECT_THAT(Infer("prod", {T(DType::kUInt16, {3})}),
              IsOkAndHolds(HasDTypes(DType::kUInt64, DType::kUInt64)));
  EXPECT_THAT(Infer("sum", {T(DType::kFloat32, {3})}),
              IsOkAndHolds(HasDTypes(DType::kFloat32, DType::kFloat32)));
  EXPECT_THAT(Infer("sum", {T(DType::kBFloat16, {3})}),
              IsOkAndHolds(HasDTypes(DType::kBFloat16, DType::kBFloat16)));
  EXPECT_THAT(Infer("mean", {T(DType::kInt32, {3})}),
              IsOkAndHolds(HasDTypes(DType::kFloat64, DType::kFloat64)));
  EXPECT_THAT(Infer("mean", {T(DType::kFloat16, {3})}),
              IsOkAndHolds(HasDTypes(DType::kFloat16, DType::kFloat32)));
  EXPECT_THAT(Infer("std", {T(DType::kBFloat16, {3})}),
              IsOkAndHolds(HasDTypes(DType::kBFloat16, DType::kFloat32)));
  EXPECT_THAT(Infer("var", {T(DType::kBool, {3})}),
              IsOkAndHolds(HasDTypes(DType::kFloat64, DType::kFloat64)));
  EXPECT_THAT(Infer("max", {T(DType::kUInt8, {3})}),
              IsOkAndHolds(HasDTypes(DType::kUInt8, DType::kUInt8)));
  EXPECT_THAT(Infer("any", {T(DType::kFloat32, {3})}),
              IsOkAndHolds(HasDTypes(DType::kBool, DType::kBool)));
  EXPECT_THAT(Infer("argmax", {T(DType::kFloat16, {3})}),
              IsOkAndHolds(HasDTypes(DType::kInt64, DType::kFloat16)));
  EXPECT_THAT(Infer("cumsum", {T(DType::kBool, {3})}),
              IsOkAndHolds(HasDTypes(DType::kInt64, DType::kInt64)));
  for (const char* op : {"logsumexp", "softmax", "log_softmax"}) {
    for (const DTypeInfo& info : AllDTypes()) {
      if (IsComplex(info.dtype)) continue;  // complex_ops_test
      const DType f = FloatResultDType(info.dtype);
      EXPECT_THAT(Infer(op, {T(info.dtype, {3})}), IsOkAndHolds(HasDTypes(f, f)))
          << op << "(" << info.name << ")";
    }
  }
}

TEST(ReductionTest, DTypeAttributeOverridesAndIsRemoved) {
  for (const char* op : {"sum", "prod", "mean", "cumsum", "cumprod"}) {
    AttrMap attrs = {{"dtype", DType::kFloat32}};
    EXPECT_THAT(InferAttrs(op, {T(DType::kInt8, {4})}, attrs),
                IsOkAndHolds(HasDTypes(DType::kFloat32, DType::kFloat32)))
        << op;
    EXPECT_FALSE(attrs.contains("dtype")) << op;
  }
  AttrMap attrs = {{"dtype", DType::kInt32}};
  EXPECT_THAT(InferAttrs("mean", {T(DType::kFloat64, {4})}, attrs),
              IsOkAndHolds(HasDTypes(DType::kInt32, DType::kInt32)));
}

TEST(ReductionTest, AxesAreNormalisedAndShapesFollowNumpy) {
  const ValueType x = T(DType::kFloat32, {2, 3, 4});
  AttrMap attrs = {{"axes", std::vector<int64_t>{-1, 0}}};
  EXPECT_THAT(InferAttrs("sum", {x}, attrs), IsOkAndHolds(HasShape(S({3}))));
  EXPECT_THAT(attrs, UnorderedElementsAre(
                         Pair("axes", VariantWith<std::vector<int64_t>>(ElementsAre(0, 2))),
                         Pair("keepdims", VariantWith<bool>(false))));

  attrs = {{"axes", std::vector<int64_t>{1}}, {"keepdims", true}};
  EXPECT_THAT(InferAttrs("max", {x}, attrs), IsOkAndHolds(HasShape(S({2, 1, 4}))));

  attrs = {};
  EXPECT_THAT(InferAttrs("mean", {x}, attrs), IsOkAndHolds(HasShape(S({}))));
  EXPECT_THAT(attrs.at("axes"), VariantWith<std::vector<int64_t>>(ElementsAre(0, 1, 2)));

  attrs = {{"keepdims", true}};
  EXPECT_THAT(InferAttrs("all", {x}, attrs), IsOkAndHolds(HasShape(S({1, 1, 1}))));

  // No axes: nothing is reduced, sum only converts the dtype.
  attrs = {{"axes", std::vector<int64_t>{}}};
  EXPECT_THAT(InferAttrs("sum", {T(DType::kInt8, {2, 3})}, attrs),
              IsOkAndHolds(Produces(DType::kInt64, S({2, 3}), DType::kInt64)));

  // 0-d input: the only reduction is over no axes.
  attrs = {};
  EXPECT_THAT(InferAttrs("sum", {WeakIntType()}, attrs),
              IsOkAndHolds(Produces(DType::kInt64, S({}), DType::kInt64)));
  EXPECT_THAT(attrs.at("axes"), VariantWith<std::vector<int64_t>>(IsEmpty()));
}

TEST(ReductionTest, VarianceCanonicalisesDdof) {
  AttrMap attrs;
  ASSERT_THAT(InferAttrs("std", {T(DType::kFloat64, {3})}, attrs), IsOk());
  EXPECT_THAT(attrs.at("ddof"), VariantWith<double>(0.0));
  attrs = {{"ddof", 1.5}};
  ASSERT_THAT(InferAttrs("var", {T(DType::kFloat64, {3})}, attrs), IsOk());
  EXPECT_THAT(attrs.at("ddof"), VariantWith<double>(1.5));
  attrs = {{"ddof", std::numeric_limits<double>::infinity()}};
  EXPECT_THAT(InferAttrs("var", {T(DType::kFloat64, {3})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, "ddof must be finite, got inf"));
}

TEST(ReductionTest, BadAxesAreErrors) {
  const ValueType x = T(DType::kFloat32, {2, 3});
  EXPECT_THAT(Infer("sum", {x}, {{"axes", std::vector<int64_t>{2}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "axis 2 is out of bounds for array of dimension 2"));
  EXPECT_THAT(Infer("sum", {x}, {{"axes", std::vector<int64_t>{-3}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "axis -3 is out of bounds for array of dimension 2"));
  EXPECT_THAT(Infer("mean", {x}, {{"axes", std::vector<int64_t>{1, -1}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "'axes' names axis 1 more than once"));
  EXPECT_THAT(Infer("argmax", {x}, {{"axis", int64_t{2}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "axis 2 is out of bounds for array of dimension 2"));
  EXPECT_THAT(Infer("softmax", {T(DType::kFloat32)}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "axis -1 is out of bounds for array of dimension 0"));
  EXPECT_THAT(Infer("cumsum", {x}, {{"axis", int64_t{-3}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "axis -3 is out of bounds for array of dimension 2"));
}

TEST(ReductionTest, EmptyMinMaxAndArgReductionsAreErrors) {
  // As NumPy: reducing over a zero-length axis has no answer, even when the
  // result would be empty; reducing other axes of an empty array is fine.
  const ValueType x = T(DType::kFloat32, {0, 3});
  EXPECT_THAT(Infer("max", {x}, {{"axes", std::vector<int64_t>{0}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "zero-size array to reduction operation max which has no identity"));
  EXPECT_THAT(Infer("min", {T(DType::kInt8, {0, 0})}, {{"axes", std::vector<int64_t>{0}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "zero-size array to reduction operation min which has no identity"));
  EXPECT_THAT(Infer("max", {x}, {{"axes", std::vector<int64_t>{1}}}),
              IsOkAndHolds(HasShape(S({0}))));
  EXPECT_THAT(
      Infer("argmax", {x}, {{"axis", int64_t{0}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "attempt to get argmax of an empty sequence"));
  EXPECT_THAT(Infer("argmin", {x}), StatusIs(absl::StatusCode::kInvalidArgument,
                                             "attempt to get argmin of an empty sequence"));
  EXPECT_THAT(Infer("argmin", {x}, {{"axis", int64_t{1}}}), IsOkAndHolds(HasShape(S({0}))));
  // sum, mean and logsumexp of nothing are defined.
  EXPECT_THAT(Infer("sum", {x}), IsOk());
  EXPECT_THAT(Infer("logsumexp", {x}), IsOk());
}

TEST(ReductionTest, ArgReductionCanonicalAttributes) {
  const ValueType x = T(DType::kFloat32, {2, 3, 4});
  AttrMap attrs = {{"axis", int64_t{-2}}};
  EXPECT_THAT(InferAttrs("argmax", {x}, attrs),
              IsOkAndHolds(Produces(DType::kInt64, S({2, 4}), DType::kFloat32)));
  EXPECT_THAT(attrs, UnorderedElementsAre(Pair("axis", VariantWith<int64_t>(1)),
                                          Pair("keepdims", VariantWith<bool>(false))));
  attrs = {{"keepdims", true}};
  EXPECT_THAT(InferAttrs("argmin", {x}, attrs), IsOkAndHolds(HasShape(S({1, 1, 1}))));
  EXPECT_THAT(attrs, ElementsAre(Pair("keepdims", VariantWith<bool>(true))));
  attrs = {};
  EXPECT_THAT(InferAttrs("argmin", {x}, attrs), IsOkAndHolds(HasShape(S({}))));
  attrs = {{"axis", int64_t{2}}, {"keepdims", true}};
  EXPECT_THAT(InferAttrs("argmin", {x}, attrs), IsOkAndHolds(HasShape(S({2, 3, 1}))));
}

TEST(ReductionTest, SoftmaxKeepsTheShapeWithACanonicalAxis) {
  AttrMap attrs;
  EXPECT_THAT(InferAttrs("log_softmax", {T(DType::kInt16, {2, 5})}, attrs),
              IsOkAndHolds(Produces(DType::kFloat32, S({2, 5}), DType::kFloat32)));
  EXPECT_THAT(attrs, ElementsAre(Pair("axis", VariantWith<int64_t>(1))));
  attrs = {{"axis", int64_t{0}}};
  ASSERT_THAT(InferAttrs("softmax", {T(DType::kFloat32, {2, 5})}, attrs), IsOk());
  EXPECT_THAT(attrs, ElementsAre(Pair("axis", VariantWith<int64_t>(0))));
}

TEST(ScanTest, FlattensWithoutAnAxis) {
  AttrMap attrs;
  EXPECT_THAT(InferAttrs("cumsum", {T(DType::kInt32, {2, 3})}, attrs),
              IsOkAndHolds(Produces(DType::kInt64, S({6}), DType::kInt64)));
  EXPECT_THAT(attrs, IsEmpty());
  EXPECT_THAT(Infer("cumprod", {T(DType::kFloat32)}),
              IsOkAndHolds(Produces(DType::kFloat32, S({1}), DType::kFloat32)));
  attrs = {{"axis", int64_t{-1}}, {"dtype", DType::kFloat64}};
  EXPECT_THAT(InferAttrs("cumprod", {T(DType::kUInt8, {2, 3})}, attrs),
              IsOkAndHolds(Produces(DType::kFloat64, S({2, 3}), DType::kFloat64)));
  EXPECT_THAT(attrs, ElementsAre(Pair("axis", VariantWith<int64_t>(1))));
}

// ---- linear algebra ---------------------------------------------------------------

TEST(LinalgTest, MatmulShapesMatchNumpy) {
  for (const auto& c : kNumpyMatmul) {
    const std::vector<int64_t> a = Dims(c[0]), b = Dims(c[1]);
    ValueType ta{.dtype = DType::kFloat32, .shape = S(a), .weak = false};
    ValueType tb{.dtype = DType::kFloat32, .shape = S(b), .weak = false};
    absl::StatusOr<InferredNode> r = Infer("matmul", {ta, tb});
    if (std::string(c[2]) == "error") {
      EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument)) << c[0] << " @ " << c[1];
    } else {
      EXPECT_THAT(r, IsOkAndHolds(Produces(DType::kFloat32, S(Dims(c[2])), DType::kFloat32)))
          << c[0] << " @ " << c[1];
    }
  }
}

TEST(LinalgTest, MatmulErrorsAndDTypes) {
  EXPECT_THAT(Infer("matmul", {T(DType::kFloat32), T(DType::kFloat32, {3})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "matmul: input operand 0 does not have enough dimensions (0-d; use mul "
                       "for scalars)"));
  EXPECT_THAT(Infer("matmul", {T(DType::kFloat32, {2, 3}), T(DType::kFloat32, {4, 5})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "matmul: shapes (2, 3) and (4, 5) are not aligned: 3 (dim 1 of operand 0) "
                       "!= 4 (dim 0 of operand 1)"));
  EXPECT_THAT(Infer("matmul", {T(DType::kFloat32, {4, 2, 3}), T(DType::kFloat32, {5, 3, 4})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "matmul: batch dimensions of (4, 2, 3) and (5, 3, 4) cannot be broadcast "
                       "together"));
  EXPECT_THAT(Infer("matmul", {T(DType::kBool, {2, 2}), T(DType::kBool, {2, 2})}),
              IsOkAndHolds(HasDTypes(DType::kBool, DType::kBool)));
  EXPECT_THAT(Infer("matmul", {T(DType::kInt8, {2, 2}), T(DType::kUInt8, {2, 2})}),
              IsOkAndHolds(HasDTypes(DType::kInt16, DType::kInt16)));
  EXPECT_THAT(Infer("matmul", {T(DType::kBFloat16, {2, 2}), T(DType::kFloat16, {2, 2})}),
              IsOkAndHolds(HasDTypes(DType::kFloat32, DType::kFloat32)));
}

TEST(LinalgTest, DotShapesMatchNumpy) {
  for (const auto& c : kNumpyDot) {
    ValueType ta{.dtype = DType::kFloat64, .shape = S(Dims(c[0])), .weak = false};
    ValueType tb{.dtype = DType::kFloat64, .shape = S(Dims(c[1])), .weak = false};
    absl::StatusOr<InferredNode> r = Infer("dot", {ta, tb});
    if (std::string(c[2]) == "error") {
      EXPECT_THAT(r, StatusIs(absl::StatusCode::kInvalidArgument)) << c[0] << " . " << c[1];
    } else {
      EXPECT_THAT(r, IsOkAndHolds(Produces(DType::kFloat64, S(Dims(c[2])), DType::kFloat64)))
          << c[0] << " . " << c[1];
    }
  }
}

TEST(LinalgTest, DotErrorsAndScalars) {
  EXPECT_THAT(Infer("dot", {T(DType::kFloat32, {2, 3}), T(DType::kFloat32, {2, 3})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "shapes (2, 3) and (2, 3) not aligned: 3 (dim 1) != 2 (dim 0)"));
  EXPECT_THAT(Infer("dot", {T(DType::kFloat32, {2, 2, 2}), T(DType::kFloat32, {2})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "dot supports operands of rank <= 2, operand 0 has rank 3 (use matmul)"));
  // numpy.dot(int8_array, 2) is int64: dot turns the Python int into an array.
  EXPECT_THAT(Infer("dot", {T(DType::kInt8, {3}), WeakIntType()}),
              IsOkAndHolds(Produces(DType::kInt64, S({3}), DType::kInt64)));
}

// ---- shape ops ---------------------------------------------------------------------

TEST(ShapeOpTest, ReshapeResolvesMinusOne) {
  AttrMap attrs = {{"shape", std::vector<int64_t>{-1, 4}}};
  EXPECT_THAT(InferAttrs("reshape", {T(DType::kInt16, {2, 3, 4})}, attrs),
              IsOkAndHolds(Produces(DType::kInt16, S({6, 4}), DType::kInt16)));
  EXPECT_THAT(attrs.at("shape"), VariantWith<std::vector<int64_t>>(ElementsAre(6, 4)));
  attrs = {{"shape", std::vector<int64_t>{}}};
  EXPECT_THAT(InferAttrs("reshape", {T(DType::kInt16, {1, 1})}, attrs),
              IsOkAndHolds(HasShape(S({}))));
  attrs = {{"shape", std::vector<int64_t>{0, -1}}};
  EXPECT_THAT(InferAttrs("reshape", {T(DType::kInt16, {0, 3})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "cannot reshape array of size 0 into shape (0, -1)"));
  EXPECT_THAT(Infer("reshape", {T(DType::kInt16, {0, 3})}, {{"shape", std::vector<int64_t>{3, 0}}}),
              IsOkAndHolds(HasShape(S({3, 0}))));
  EXPECT_THAT(Infer("reshape", {T(DType::kInt16, {7})}, {{"shape", std::vector<int64_t>{-1}}}),
              IsOkAndHolds(HasShape(S({7}))));
}

TEST(ShapeOpTest, ReshapeErrors) {
  const ValueType x = T(DType::kFloat32, {2, 3});
  EXPECT_THAT(Infer("reshape", {x}, {{"shape", std::vector<int64_t>{4}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "cannot reshape array of size 6 into shape (4,)"));
  EXPECT_THAT(Infer("reshape", {x}, {{"shape", std::vector<int64_t>{4, -1}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "cannot reshape array of size 6 into shape (4, -1)"));
  EXPECT_THAT(
      Infer("reshape", {x}, {{"shape", std::vector<int64_t>{-1, -1}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "can only specify one unknown dimension (-1)"));
  EXPECT_THAT(
      Infer("reshape", {x}, {{"shape", std::vector<int64_t>{-2, -3}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "negative dimension -2 in shape (-2, -3)"));
  const int64_t big = int64_t{1} << 40;
  EXPECT_THAT(Infer("reshape", {x}, {{"shape", std::vector<int64_t>{big, big, -1}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot reshape")));
}

TEST(ShapeOpTest, TransposePermutes) {
  AttrMap attrs;
  EXPECT_THAT(InferAttrs("transpose", {T(DType::kInt8, {2, 3, 4})}, attrs),
              IsOkAndHolds(Produces(DType::kInt8, S({4, 3, 2}), DType::kInt8)));
  EXPECT_THAT(attrs.at("axes"), VariantWith<std::vector<int64_t>>(ElementsAre(2, 1, 0)));
  attrs = {{"axes", std::vector<int64_t>{1, -1, 0}}};
  EXPECT_THAT(InferAttrs("transpose", {T(DType::kInt8, {2, 3, 4})}, attrs),
              IsOkAndHolds(HasShape(S({3, 4, 2}))));
  EXPECT_THAT(attrs.at("axes"), VariantWith<std::vector<int64_t>>(ElementsAre(1, 2, 0)));
  EXPECT_THAT(
      Infer("transpose", {T(DType::kInt8, {2, 3})}, {{"axes", std::vector<int64_t>{0}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "axes (0,) don't match an array of rank 2"));
  EXPECT_THAT(
      Infer("transpose", {T(DType::kInt8, {2, 3})}, {{"axes", std::vector<int64_t>{1, -1}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "repeated axis 1 in transpose axes (1, -1)"));
  EXPECT_THAT(Infer("transpose", {T(DType::kInt8)}), IsOkAndHolds(HasShape(S({}))));
}

TEST(ShapeOpTest, BroadcastTo) {
  AttrMap attrs = {{"shape", std::vector<int64_t>{2, 3}}};
  EXPECT_THAT(InferAttrs("broadcast_to", {T(DType::kUInt32, {3})}, attrs),
              IsOkAndHolds(Produces(DType::kUInt32, S({2, 3}), DType::kUInt32)));
  EXPECT_THAT(attrs.at("shape"), VariantWith<std::vector<int64_t>>(ElementsAre(2, 3)));
  EXPECT_THAT(Infer("broadcast_to", {T(DType::kUInt32, {3})}, {{"shape", std::vector<int64_t>{4}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "cannot broadcast shape (3,) to (4,)"));
  EXPECT_THAT(
      Infer("broadcast_to", {T(DType::kUInt32, {3})}, {{"shape", std::vector<int64_t>{-1, 3}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "negative dimension -1 in shape (-1, 3)"));
}

TEST(ShapeOpTest, ExpandDimsInsertsInTheResultsRank) {
  AttrMap attrs = {{"axes", std::vector<int64_t>{-1, 0}}};
  EXPECT_THAT(InferAttrs("expand_dims", {T(DType::kFloat32, {2, 3})}, attrs),
              IsOkAndHolds(HasShape(S({1, 2, 3, 1}))));
  EXPECT_THAT(attrs.at("axes"), VariantWith<std::vector<int64_t>>(ElementsAre(0, 3)));
  EXPECT_THAT(Infer("expand_dims", {T(DType::kFloat32, {2})}, {{"axes", std::vector<int64_t>{1}}}),
              IsOkAndHolds(HasShape(S({2, 1}))));
  EXPECT_THAT(Infer("expand_dims", {T(DType::kFloat32, {2})}, {{"axes", std::vector<int64_t>{2}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "axis 2 is out of bounds for array of dimension 2"));
  EXPECT_THAT(
      Infer("expand_dims", {T(DType::kFloat32, {2})}, {{"axes", std::vector<int64_t>{0, 0}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "'axes' names axis 0 more than once"));
}

TEST(ShapeOpTest, Squeeze) {
  AttrMap attrs;
  EXPECT_THAT(InferAttrs("squeeze", {T(DType::kFloat32, {1, 3, 1})}, attrs),
              IsOkAndHolds(HasShape(S({3}))));
  EXPECT_THAT(attrs.at("axes"), VariantWith<std::vector<int64_t>>(ElementsAre(0, 2)));
  attrs = {{"axes", std::vector<int64_t>{-1}}};
  EXPECT_THAT(InferAttrs("squeeze", {T(DType::kFloat32, {1, 3, 1})}, attrs),
              IsOkAndHolds(HasShape(S({1, 3}))));
  EXPECT_THAT(attrs.at("axes"), VariantWith<std::vector<int64_t>>(ElementsAre(2)));
  EXPECT_THAT(Infer("squeeze", {T(DType::kFloat32, {1, 3})}, {{"axes", std::vector<int64_t>{1}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "cannot squeeze axis 1 of size 3 (only axes of size 1)"));
}

TEST(ShapeOpTest, SliceMatchesPythonSlicing) {
  for (const auto& c : kPythonSlices) {
    const int64_t len = c[0];
    AttrMap attrs = {{"starts", std::vector<int64_t>{c[1]}},
                     {"stops", std::vector<int64_t>{c[2]}},
                     {"steps", std::vector<int64_t>{c[3]}}};
    ValueType x{.dtype = DType::kInt8, .shape = S({len, 2}), .weak = false};
    SCOPED_TRACE(absl::StrCat("len ", len, " [", c[1], ":", c[2], ":", c[3], "]"));
    EXPECT_THAT(InferAttrs("slice", {x}, attrs),
                IsOkAndHolds(Produces(DType::kInt8, S({c[5], 2}), DType::kInt8)));
    EXPECT_THAT(attrs, UnorderedElementsAre(
                           Pair("starts", VariantWith<std::vector<int64_t>>(ElementsAre(c[4], 0))),
                           Pair("steps", VariantWith<std::vector<int64_t>>(ElementsAre(c[3], 1)))));
  }
}

TEST(ShapeOpTest, SliceWithAxesAndDefaultSteps) {
  // x[:, ::-1][..., 1:3] on (4, 5, 6) via axes.
  AttrMap attrs = {{"starts", std::vector<int64_t>{kInt64Max, 1}},
                   {"stops", std::vector<int64_t>{kInt64Min, 3}},
                   {"steps", std::vector<int64_t>{-1, 1}},
                   {"axes", std::vector<int64_t>{1, -1}}};
  EXPECT_THAT(InferAttrs("slice", {T(DType::kFloat32, {4, 5, 6})}, attrs),
              IsOkAndHolds(HasShape(S({4, 5, 2}))));
  EXPECT_THAT(attrs, UnorderedElementsAre(
                         Pair("starts", VariantWith<std::vector<int64_t>>(ElementsAre(0, 4, 1))),
                         Pair("steps", VariantWith<std::vector<int64_t>>(ElementsAre(1, -1, 1)))));
  attrs = {{"starts", std::vector<int64_t>{1}}, {"stops", std::vector<int64_t>{-1}}};
  EXPECT_THAT(InferAttrs("slice", {T(DType::kFloat32, {4, 5})}, attrs),
              IsOkAndHolds(HasShape(S({2, 5}))));
  EXPECT_THAT(attrs.at("steps"), VariantWith<std::vector<int64_t>>(ElementsAre(1, 1)));
}

TEST(ShapeOpTest, SliceErrors) {
  const ValueType x = T(DType::kFloat32, {4, 5});
  EXPECT_THAT(Infer("slice", {x},
                    {{"starts", std::vector<int64_t>{0}},
                     {"stops", std::vector<int64_t>{3}},
                     {"steps", std::vector<int64_t>{0}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "slice step cannot be zero"));
  EXPECT_THAT(
      Infer("slice", {x}, {{"starts", std::vector<int64_t>{0}}, {"stops", std::vector<int64_t>{}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "'starts', 'stops' and 'steps' must have the same length, got 1, 0 and 1"));
  EXPECT_THAT(
      Infer("slice", {x},
            {{"starts", std::vector<int64_t>{0, 0, 0}}, {"stops", std::vector<int64_t>{1, 1, 1}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "too many indices: 3 slices for an array of dimension 2"));
  EXPECT_THAT(Infer("slice", {x},
                    {{"starts", std::vector<int64_t>{0}},
                     {"stops", std::vector<int64_t>{1}},
                     {"axes", std::vector<int64_t>{2}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "axis 2 is out of bounds for array of dimension 2"));
  EXPECT_THAT(Infer("slice", {x},
                    {{"starts", std::vector<int64_t>{0, 0}},
                     {"stops", std::vector<int64_t>{1, 1}},
                     {"axes", std::vector<int64_t>{1, -1}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "'axes' names axis 1 more than once"));
  EXPECT_THAT(Infer("slice", {x},
                    {{"starts", std::vector<int64_t>{0}},
                     {"stops", std::vector<int64_t>{1}},
                     {"axes", std::vector<int64_t>{0, 1}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "'axes' must have one entry per start (1), got 2"));
}

TEST(ShapeOpTest, ConcatenateJoinsAlongAnAxis) {
  AttrMap attrs = {{"axis", int64_t{-1}}};
  EXPECT_THAT(
      InferAttrs("concatenate",
                 {T(DType::kInt8, {2, 3}), T(DType::kUInt8, {2, 1}), T(DType::kInt8, {2, 0})},
                 attrs),
      IsOkAndHolds(Produces(DType::kInt16, S({2, 4}), DType::kInt16)));
  EXPECT_THAT(attrs, ElementsAre(Pair("axis", VariantWith<int64_t>(1))));
  attrs = {};
  EXPECT_THAT(InferAttrs("concatenate", {T(DType::kFloat32, {5})}, attrs),
              IsOkAndHolds(HasShape(S({5}))));
  EXPECT_THAT(attrs, ElementsAre(Pair("axis", VariantWith<int64_t>(0))));
}

TEST(ShapeOpTest, ConcatenateErrors) {
  EXPECT_THAT(Infer("concatenate", {T(DType::kInt8, {2}), WeakIntType()}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "zero-dimensional arrays cannot be concatenated (input 1)"));
  EXPECT_THAT(Infer("concatenate", {T(DType::kInt8, {2, 3}), T(DType::kInt8, {3})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "all the input arrays must have the same number of dimensions, but input 0 "
                       "has 2 and input 1 has 1"));
  EXPECT_THAT(Infer("concatenate", {T(DType::kInt8, {2, 3}), T(DType::kInt8, {2, 4})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "all the input array dimensions except for the concatenation axis must "
                       "match exactly, but along dimension 1, input 0 has size 3 and input 1 has "
                       "size 4"));
  EXPECT_THAT(Infer("concatenate", {T(DType::kInt8, {2})}, {{"axis", int64_t{1}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "axis 1 is out of bounds for array of dimension 1"));
}

TEST(ShapeOpTest, StackAddsAnAxis) {
  AttrMap attrs = {{"axis", int64_t{-1}}};
  EXPECT_THAT(InferAttrs("stack", {T(DType::kFloat16, {2, 3}), T(DType::kFloat32, {2, 3})}, attrs),
              IsOkAndHolds(Produces(DType::kFloat32, S({2, 3, 2}), DType::kFloat32)));
  EXPECT_THAT(attrs, ElementsAre(Pair("axis", VariantWith<int64_t>(2))));
  // numpy.stack([np.int8(1), 2]) is int64: stack turns Python ints into arrays.
  EXPECT_THAT(Infer("stack", {T(DType::kInt8), WeakIntType()}),
              IsOkAndHolds(Produces(DType::kInt64, S({2}), DType::kInt64)));
  EXPECT_THAT(Infer("stack", {T(DType::kInt8, {2}), T(DType::kInt8, {3})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "all input arrays must have the same shape, but input 0 has shape (2,) "
                       "and input 1 has shape (3,)"));
  EXPECT_THAT(Infer("stack", {T(DType::kInt8, {2})}, {{"axis", int64_t{2}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "axis 2 is out of bounds for array of dimension 2"));
}

TEST(ShapeOpTest, ShapeOpsKeepTheInputDType) {
  EXPECT_THAT(Infer("reshape", {WeakFloatType()}, {{"shape", std::vector<int64_t>{1}}}),
              IsOkAndHolds(Produces(DType::kFloat64, S({1}), DType::kFloat64)));
  EXPECT_THAT(Infer("transpose", {T(DType::kBFloat16, {2})}),
              IsOkAndHolds(HasDTypes(DType::kBFloat16, DType::kBFloat16)));
}

// ---- creation ----------------------------------------------------------------------

TEST(CreationTest, FullTakesTheValuesDTypeUnlessGiven) {
  AttrMap attrs = {{"shape", std::vector<int64_t>{2, 3}}};
  EXPECT_THAT(InferAttrs("full", {WeakIntType()}, attrs),
              IsOkAndHolds(Produces(DType::kInt64, S({2, 3}), DType::kInt64)));
  EXPECT_THAT(attrs, UnorderedElementsAre(
                         Pair("shape", VariantWith<std::vector<int64_t>>(ElementsAre(2, 3))),
                         Pair("dtype", VariantWith<DType>(DType::kInt64))));
  EXPECT_THAT(Infer("full", {WeakFloatType()}, {{"shape", std::vector<int64_t>{}}}),
              IsOkAndHolds(Produces(DType::kFloat64, S({}), DType::kFloat64)));
  EXPECT_THAT(Infer("full", {T(DType::kFloat16)}, {{"shape", std::vector<int64_t>{4}}}),
              IsOkAndHolds(HasDType(DType::kFloat16)));
  EXPECT_THAT(Infer("full", {WeakIntType()},
                    {{"shape", std::vector<int64_t>{4}}, {"dtype", DType::kUInt8}}),
              IsOkAndHolds(Produces(DType::kUInt8, S({4}), DType::kUInt8)));
  EXPECT_THAT(
      Infer("full", {T(DType::kFloat16, {2})}, {{"shape", std::vector<int64_t>{4}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "the fill value must be 0-d, got shape (2,)"));
  EXPECT_THAT(Infer("full", {WeakIntType()}, {{"shape", std::vector<int64_t>{-4}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "negative dimension -4 in shape (-4,)"));
}

TEST(CreationTest, ArangeLengthsMatchNumpy) {
  for (const ArangeCase& c : kNumpyArange) {
    AttrMap attrs;
    if (c.ints) {
      attrs = {{"start", static_cast<int64_t>(c.start)},
               {"stop", static_cast<int64_t>(c.stop)},
               {"step", static_cast<int64_t>(c.step)}};
    } else {
      attrs = {{"start", c.start}, {"stop", c.stop}, {"step", c.step}};
    }
    const DType dtype = c.ints ? DType::kInt64 : DType::kFloat64;
    SCOPED_TRACE(absl::StrCat("arange(", c.start, ", ", c.stop, ", ", c.step, ")"));
    EXPECT_THAT(InferAttrs("arange", {}, attrs),
                IsOkAndHolds(Produces(dtype, S({c.length}), dtype)));
    EXPECT_THAT(attrs, UnorderedElementsAre(Pair("start", VariantWith<double>(c.start)),
                                            Pair("stop", VariantWith<double>(c.stop)),
                                            Pair("step", VariantWith<double>(c.step)),
                                            Pair("dtype", VariantWith<DType>(dtype))));
  }
}

TEST(CreationTest, ArangeDefaultsAndDTypes) {
  // np.arange(5) is int64, np.arange(5.0) and np.arange(0, 5, 1.0) float64.
  AttrMap attrs = {{"stop", int64_t{5}}};
  EXPECT_THAT(InferAttrs("arange", {}, attrs),
              IsOkAndHolds(Produces(DType::kInt64, S({5}), DType::kInt64)));
  EXPECT_THAT(attrs.at("start"), VariantWith<double>(0.0));
  EXPECT_THAT(attrs.at("step"), VariantWith<double>(1.0));
  EXPECT_THAT(Infer("arange", {}, {{"stop", 5.0}}), IsOkAndHolds(HasDType(DType::kFloat64)));
  EXPECT_THAT(Infer("arange", {}, {{"stop", int64_t{5}}, {"step", 1.0}}),
              IsOkAndHolds(HasDType(DType::kFloat64)));
  EXPECT_THAT(Infer("arange", {}, {{"stop", 2.5}, {"dtype", DType::kInt16}}),
              IsOkAndHolds(Produces(DType::kInt16, S({3}), DType::kInt16)));
  // Exact lengths where doubles would round.
  EXPECT_THAT(Infer("arange", {}, {{"start", kInt64Min}, {"stop", kInt64Max}, {"step", kInt64Max}}),
              IsOkAndHolds(HasShape(S({3}))));
  EXPECT_THAT(
      Infer("arange", {}, {{"start", int64_t{0}}, {"stop", int64_t{2}}, {"dtype", DType::kBool}}),
      IsOkAndHolds(Produces(DType::kBool, S({2}), DType::kBool)));
}

TEST(CreationTest, ArangeErrors) {
  EXPECT_THAT(Infer("arange", {}, {{"stop", int64_t{5}}, {"step", int64_t{0}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "arange step must not be zero"));
  EXPECT_THAT(Infer("arange", {}, {{"stop", 5.0}, {"step", 0.0}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "arange step must not be zero"));
  EXPECT_THAT(Infer("arange", {}, {{"stop", std::numeric_limits<double>::quiet_NaN()}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("arange start, stop and step must be finite")));
  EXPECT_THAT(
      Infer("arange", {}, {{"stop", 1e300}, {"step", 1e-300}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("arange has too many elements")));
  EXPECT_THAT(
      Infer("arange", {}, {{"start", kInt64Min}, {"stop", kInt64Max}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("arange has too many elements")));
  // NumPy 2: np.arange(-5, 0, 1, dtype="u1") -> "Python integer -5 out of
  // bounds for uint8".
  EXPECT_THAT(
      Infer("arange", {}, {{"start", int64_t{-5}}, {"stop", int64_t{0}}, {"dtype", DType::kUInt8}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "Python integer -5 out of bounds for uint8"));
  EXPECT_THAT(
      Infer("arange", {},
            {{"start", int64_t{127}}, {"stop", int64_t{130}}, {"dtype", DType::kInt8}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "Python integer 128 out of bounds for int8"));
  EXPECT_THAT(Infer("arange", {}, {{"stop", int64_t{3}}, {"dtype", DType::kBool}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "arange of bool is limited to 2 elements (as in NumPy), got 3"));
}

TEST(CreationTest, RandomCanonicalAttributes) {
  AttrMap attrs = {{"shape", std::vector<int64_t>{3, 2}}, {"seed", int64_t{42}}};
  EXPECT_THAT(InferAttrs("random_uniform", {}, attrs),
              IsOkAndHolds(Produces(DType::kFloat32, S({3, 2}), DType::kFloat32)));
  EXPECT_THAT(attrs,
              UnorderedElementsAre(
                  Pair("shape", VariantWith<std::vector<int64_t>>(ElementsAre(3, 2))),
                  Pair("seed", VariantWith<int64_t>(42)), Pair("low", VariantWith<double>(0.0)),
                  Pair("high", VariantWith<double>(1.0)),
                  Pair("dtype", VariantWith<DType>(DType::kFloat32))));
  attrs = {{"shape", std::vector<int64_t>{4}},
           {"seed", int64_t{-1}},
           {"dtype", DType::kBFloat16},
           {"std", 2.5}};
  EXPECT_THAT(InferAttrs("random_normal", {}, attrs),
              IsOkAndHolds(Produces(DType::kBFloat16, S({4}), DType::kBFloat16)));
  EXPECT_THAT(attrs,
              UnorderedElementsAre(Pair("shape", VariantWith<std::vector<int64_t>>(ElementsAre(4))),
                                   Pair("seed", VariantWith<int64_t>(-1)),
                                   Pair("mean", VariantWith<double>(0.0)),
                                   Pair("std", VariantWith<double>(2.5)),
                                   Pair("dtype", VariantWith<DType>(DType::kBFloat16))));
}

TEST(CreationTest, RandomErrors) {
  const AttrMap base = {{"shape", std::vector<int64_t>{4}}, {"seed", int64_t{1}}};
  AttrMap attrs = base;
  attrs["dtype"] = DType::kInt32;
  EXPECT_THAT(InferAttrs("random_uniform", {}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "random_uniform requires a float dtype, got int32"));
  attrs = base;
  attrs["std"] = -1.0;
  EXPECT_THAT(InferAttrs("random_normal", {}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, "std must be >= 0, got -1"));
  attrs = base;
  attrs["low"] = -1.7e308;
  attrs["high"] = 1.7e308;
  EXPECT_THAT(InferAttrs("random_uniform", {}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("high - low is not finite")));
  attrs = base;
  attrs["mean"] = std::numeric_limits<double>::infinity();
  EXPECT_THAT(InferAttrs("random_normal", {}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "'mean' and 'std' must be finite, got inf and 1"));
  attrs = base;
  attrs["shape"] = std::vector<int64_t>{2, -2};
  EXPECT_THAT(
      InferAttrs("random_normal", {}, attrs),
      StatusIs(absl::StatusCode::kInvalidArgument, "negative dimension -2 in shape (2, -2)"));
}

// ---- custom kernels ----------------------------------------------------------------

TEST(CustomKernelTest, ElementwiseKernelOutputFromParams) {
  AttrMap attrs = {{"in_params", std::string("T x, T y")},
                   {"out_params", std::string("T z")},
                   {"operation", std::string("z = x + y")}};
  EXPECT_THAT(InferAttrs("elementwise_kernel",
                         {T(DType::kFloat32, {3, 1}), T(DType::kFloat32, {4})}, attrs),
              IsOkAndHolds(Produces(DType::kFloat32, S({3, 4}), DType::kFloat32)));
  EXPECT_THAT(attrs.at("name"), VariantWith<std::string>("kernel"));
  EXPECT_THAT(attrs.at("preamble"), VariantWith<std::string>(""));
  EXPECT_THAT(attrs.at("output"), VariantWith<int64_t>(0));
  EXPECT_THAT(Infer("elementwise_kernel", {T(DType::kInt8, {2}), T(DType::kFloat64, {5})},
                    {{"in_params", std::string("int8 x, raw T y")},
                     {"out_params", std::string("float16 z")},
                     {"operation", std::string("z = x")}}),
              IsOkAndHolds(Produces(DType::kFloat16, S({2}), DType::kFloat16)));
}

TEST(CustomKernelTest, ElementwiseKernelSecondOutputAndGivenOutputs) {
  AttrMap attrs = {{"in_params", std::string("T x")},
                   {"out_params", std::string("T y, int32 n")},
                   {"operation", std::string("y = x; n = 1")},
                   {"output", int64_t{1}}};
  EXPECT_THAT(InferAttrs("elementwise_kernel", {T(DType::kFloat64, {3})}, attrs),
              IsOkAndHolds(Produces(DType::kInt32, S({3}), DType::kInt32)));
  // An unbound output placeholder is bound by the given output array.
  EXPECT_THAT(Infer("elementwise_kernel", {T(DType::kFloat32, {3}), T(DType::kFloat64, {3})},
                    {{"in_params", std::string("T x")},
                     {"out_params", std::string("U y")},
                     {"operation", std::string("y = x")}}),
              IsOkAndHolds(Produces(DType::kFloat64, S({3}), DType::kFloat64)));
}

TEST(CustomKernelTest, ElementwiseKernelPythonScalarsBindAfterArrays) {
  // 'T x, float64 threshold' (CuPy's softplus): the scalar is converted.
  EXPECT_THAT(Infer("elementwise_kernel", {T(DType::kFloat32, {4}), WeakIntType()},
                    {{"in_params", std::string("T x, float64 threshold")},
                     {"out_params", std::string("T y")},
                     {"operation", std::string("y = x")}}),
              IsOkAndHolds(Produces(DType::kFloat32, S({4}), DType::kFloat32)));
  // A placeholder only a Python float binds is float64.
  EXPECT_THAT(Infer("elementwise_kernel", {T(DType::kInt8, {4}), WeakFloatType()},
                    {{"in_params", std::string("T x, U s")},
                     {"out_params", std::string("U y")},
                     {"operation", std::string("y = x * s")}}),
              IsOkAndHolds(Produces(DType::kFloat64, S({4}), DType::kFloat64)));
  // An array binds T before the scalar would.
  EXPECT_THAT(Infer("elementwise_kernel", {WeakFloatType(), T(DType::kInt16, {4})},
                    {{"in_params", std::string("T s, T x")},
                     {"out_params", std::string("T y")},
                     {"operation", std::string("y = x * s")}}),
              IsOkAndHolds(Produces(DType::kInt16, S({4}), DType::kInt16)));
}

TEST(CustomKernelTest, ElementwiseKernelSizeGivesTheLoopShape) {
  AttrMap attrs = {{"in_params", std::string("raw T x")},
                   {"out_params", std::string("T y")},
                   {"operation", std::string("y = x[_ind.size() - i - 1]")},
                   {"size", int64_t{7}}};
  EXPECT_THAT(InferAttrs("elementwise_kernel", {T(DType::kUInt8, {7})}, attrs),
              IsOkAndHolds(Produces(DType::kUInt8, S({7}), DType::kUInt8)));
  attrs.erase("size");
  EXPECT_THAT(InferAttrs("elementwise_kernel", {T(DType::kUInt8, {7})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("loop size is undecided")));
  attrs = {{"in_params", std::string("T x")},
           {"out_params", std::string("T y")},
           {"operation", std::string("y = x")},
           {"size", int64_t{3}}};
  EXPECT_THAT(InferAttrs("elementwise_kernel", {T(DType::kUInt8, {7})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'size' is given but the arguments have shape (7,)")));
}

TEST(CustomKernelTest, ElementwiseKernelRejectsBadSignatures) {
  const AttrMap base = {{"in_params", std::string("T x")},
                        {"out_params", std::string("T z")},
                        {"operation", std::string("z = x")}};
  AttrMap attrs = base;
  attrs["out_params"] = std::string("U z");
  EXPECT_THAT(InferAttrs("elementwise_kernel", {T(DType::kInt8, {2})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the type 'U' of 'z' is not bound by any argument; pass the output array "
                       "or declare a dtype"));
  attrs = base;
  EXPECT_THAT(InferAttrs("elementwise_kernel",
                         {T(DType::kInt8, {2}), T(DType::kInt8, {2}), T(DType::kInt8, {2})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("in_params declares 1 inputs and out_params 1 outputs, but the "
                                 "node has 3 inputs")));
  attrs = base;
  attrs["in_params"] = std::string("T x, T y");
  EXPECT_THAT(
      InferAttrs("elementwise_kernel", {T(DType::kInt8, {2}), T(DType::kInt16, {2})}, attrs),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "type T is bound to both int8 and int16 (by 'y')"));
  attrs = base;
  attrs["in_params"] = std::string("x");
  EXPECT_THAT(InferAttrs("elementwise_kernel", {T(DType::kInt8, {2})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "cannot parse 'x' in in_params (expected '[raw] TYPE NAME')"));
  attrs = base;
  attrs["in_params"] = std::string("float x");
  EXPECT_THAT(InferAttrs("elementwise_kernel", {T(DType::kInt8, {2})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is a C type name")));
  // A placeholder named complex would hide the kernels' complex<T>.
  attrs["in_params"] = std::string("complex x");
  EXPECT_THAT(InferAttrs("elementwise_kernel", {T(DType::kComplex64, {2})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'complex' in in_params")));
  attrs = base;
  attrs["in_params"] = std::string("T i");
  EXPECT_THAT(InferAttrs("elementwise_kernel", {T(DType::kInt8, {2})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is reserved")));
  attrs = base;
  attrs["out_params"] = std::string("T x");
  EXPECT_THAT(InferAttrs("elementwise_kernel", {T(DType::kInt8, {2})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, "parameter 'x' is declared twice"));
  attrs = base;
  attrs["in_params"] = std::string("raw float32 x");
  attrs["size"] = int64_t{2};
  EXPECT_THAT(InferAttrs("elementwise_kernel", {T(DType::kFloat64, {2})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "raw parameter 'x' is declared float32 but the array is float64"));
  attrs = base;
  attrs["output"] = int64_t{1};
  EXPECT_THAT(InferAttrs("elementwise_kernel", {T(DType::kInt8, {2})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, "'output' must be in [0, 1), got 1"));
  attrs = base;
  EXPECT_THAT(InferAttrs("elementwise_kernel", {T(DType::kInt8, {2}), T(DType::kInt8, {3})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "output 'z' has shape (3,) but the arguments broadcast to (2,)"));
}

TEST(CustomKernelTest, ReductionKernelReducesAxes) {
  AttrMap attrs = {{"in_params", std::string("T x")},       {"out_params", std::string("T y")},
                   {"map_expr", std::string("x * x")},      {"reduce_expr", std::string("a + b")},
                   {"post_map_expr", std::string("y = a")}, {"identity", std::string("0")},
                   {"axes", std::vector<int64_t>{-1}}};
  EXPECT_THAT(InferAttrs("reduction_kernel", {T(DType::kFloat64, {2, 3})}, attrs),
              IsOkAndHolds(Produces(DType::kFloat64, S({2}), DType::kFloat64)));
  EXPECT_THAT(attrs.at("axes"), VariantWith<std::vector<int64_t>>(ElementsAre(1)));
  EXPECT_THAT(attrs.at("keepdims"), VariantWith<bool>(false));
  EXPECT_THAT(attrs.at("name"), VariantWith<std::string>("reduce_kernel"));
  // reduce_type sets the accumulator (the compute dtype).
  attrs["reduce_type"] = std::string("float32");
  attrs.erase("axes");
  EXPECT_THAT(InferAttrs("reduction_kernel", {T(DType::kFloat16, {2, 3})}, attrs),
              IsOkAndHolds(Produces(DType::kFloat16, S({}), DType::kFloat32)));
  attrs["reduce_type"] = std::string("V");
  EXPECT_THAT(InferAttrs("reduction_kernel", {T(DType::kFloat16, {2, 3})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reduce_type 'V'")));
  attrs.erase("reduce_type");
  attrs["out_params"] = std::string("T y, T z");
  EXPECT_THAT(InferAttrs("reduction_kernel", {T(DType::kFloat16, {2, 3})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "a reduction kernel has exactly one output, got 2"));
}

TEST(CustomKernelTest, RawKernelWritesAreArrayArgumentsWithTheOutput) {
  AttrMap attrs = {{"code", std::string("extern \"C\" __global__ void k(float* y) {}")},
                   {"name", std::string("k")},
                   {"grid", std::vector<int64_t>{1}},
                   {"block", std::vector<int64_t>{32}},
                   {"output", int64_t{1}},
                   {"writes", std::vector<int64_t>{2, 0, 2}}};
  const std::vector<ValueType> three = {T(DType::kFloat32, {4}), T(DType::kFloat32, {4}),
                                        T(DType::kInt32, {4})};
  ASSERT_THAT(InferAttrs("raw_kernel", three, attrs), IsOk());
  // Sorted, once each, and the output among them.
  EXPECT_THAT(attrs.at("writes"), VariantWith<std::vector<int64_t>>(ElementsAre(0, 1, 2)));
  attrs["writes"] = std::vector<int64_t>{5};
  EXPECT_THAT(
      InferAttrs("raw_kernel", three, attrs),
      StatusIs(absl::StatusCode::kInvalidArgument, "'writes' must index the 3 arguments, got 5"));
  attrs["writes"] = std::vector<int64_t>{2};
  EXPECT_THAT(InferAttrs("raw_kernel", {three[0], three[1], WeakIntType()}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "argument 2 in 'writes' must be an array, got a Python scalar"));
}

TEST(CustomKernelTest, RawKernelOutputIsAnArgument) {
  AttrMap attrs = {{"code", std::string("extern \"C\" __global__ void k(float* y) {}")},
                   {"name", std::string("k")},
                   {"grid", std::vector<int64_t>{4}},
                   {"block", std::vector<int64_t>{128, 2}},
                   {"output", int64_t{1}}};
  EXPECT_THAT(InferAttrs("raw_kernel", {T(DType::kInt8, {9}), T(DType::kFloat32, {16, 32})}, attrs),
              IsOkAndHolds(Produces(DType::kFloat32, S({16, 32}), DType::kFloat32)));
  EXPECT_THAT(attrs.at("shared_mem"), VariantWith<int64_t>(0));
  attrs["output"] = int64_t{0};
  EXPECT_THAT(InferAttrs("raw_kernel", {WeakIntType()}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "argument 0 ('output') must be an array, got a Python scalar"));
  attrs["output"] = int64_t{3};
  EXPECT_THAT(InferAttrs("raw_kernel", {T(DType::kInt8, {9})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "'output' must index one of the 1 arguments, got 3"));
  attrs["output"] = int64_t{0};
  attrs["block"] = std::vector<int64_t>{64, 32};
  EXPECT_THAT(InferAttrs("raw_kernel", {T(DType::kInt8, {9})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "'block' (64, 32) has 2048 threads; a block has at most 1024"));
  attrs["block"] = std::vector<int64_t>{1};
  attrs["grid"] = std::vector<int64_t>{1, 1, 1, 1};
  EXPECT_THAT(
      InferAttrs("raw_kernel", {T(DType::kInt8, {9})}, attrs),
      StatusIs(absl::StatusCode::kInvalidArgument, "'grid' must have 1 to 3 entries, got 4"));
  attrs["grid"] = std::vector<int64_t>{0};
  EXPECT_THAT(InferAttrs("raw_kernel", {T(DType::kInt8, {9})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "'grid' entries must be in [1, 2^31), got (0,)"));
}

// ---- hostile sizes ---------------------------------------------------------------------

constexpr int64_t kHuge = std::numeric_limits<int64_t>::max();

TEST(InferTest, ReductionOverEmptyAxisOfHugeShapeIsInvalidNotACrash) {
  // Regression: ReducedShape dereferenced a failed Shape::Create.
  const ValueType empty = T(DType::kFloat32, {0, kHuge});
  for (const char* op : {"sum", "prod", "mean", "var", "std", "any", "all", "logsumexp"}) {
    EXPECT_THAT(Infer(op, {empty}, {{"axes", std::vector<int64_t>{0}}}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than 2^62")))
        << op;
  }
  EXPECT_THAT(Infer("mean", {T(DType::kFloat32, {0, 3, int64_t{1} << 62})},
                    {{"keepdims", true}, {"axes", std::vector<int64_t>{0}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than 2^62")));
  EXPECT_THAT(Infer("sum", {empty}, {{"axes", std::vector<int64_t>{1}}}), IsOk());
}

TEST(InferTest, OverflowingShapesAreInvalidInEveryFamily) {
  const auto overflow = StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2^62"));
  const ValueType tall = T(DType::kFloat32, {int64_t{1} << 62, 1});
  const ValueType wide = T(DType::kFloat32, {1, 4});
  EXPECT_THAT(Infer("mul", {tall, wide}), overflow);
  EXPECT_THAT(Infer("matmul", {T(DType::kFloat32, {int64_t{1} << 40, 0}),
                               T(DType::kFloat32, {0, int64_t{1} << 40})}),
              overflow);
  EXPECT_THAT(Infer("matmul", {T(DType::kFloat32, {int64_t{1} << 40, 1, 1, 0}),
                               T(DType::kFloat32, {1, int64_t{1} << 40, 0, 1})}),
              overflow);
  EXPECT_THAT(Infer("concatenate", {T(DType::kFloat32, {0, kHuge}), T(DType::kFloat32, {0, 1})},
                    {{"axis", int64_t{1}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("too long")));
  EXPECT_THAT(
      Infer("stack", {T(DType::kInt8, {int64_t{1} << 62}), T(DType::kInt8, {int64_t{1} << 62})}),
      overflow);
  EXPECT_THAT(Infer("full", {T(DType::kFloat32)}, {{"shape", std::vector<int64_t>{kHuge, 2}}}),
              overflow);
}

TEST(InferTest, RankIsCappedAt64) {
  const auto over = StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("maximum of 64"));
  EXPECT_THAT(Infer("reshape", {T(DType::kFloat32)}, {{"shape", std::vector<int64_t>(65, 1)}}),
              over);
  EXPECT_THAT(Infer("expand_dims", {T(DType::kFloat32)}, {{"axes", std::vector<int64_t>(65, 0)}}),
              over);
  EXPECT_THAT(Infer("full", {T(DType::kFloat32)}, {{"shape", std::vector<int64_t>(65, 1)}}), over);
  EXPECT_THAT(Infer("reshape", {T(DType::kFloat32)}, {{"shape", std::vector<int64_t>(64, 1)}}),
              IsOk());
}

}  // namespace
}  // namespace gpuflow

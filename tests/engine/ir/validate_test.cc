#include "engine/ir/validate.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/ir/promotion.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow {
namespace {

// NumPy's answers; see numpy_reference_tables.py for how they are made.
#include "tests/engine/ir/numpy_reference_tables.inc"

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;
using ::testing::VariantWith;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr auto kExhausted = absl::StatusCode::kResourceExhausted;

ValueType T(DType dtype, std::initializer_list<int64_t> dims = {}) {
  return {.dtype = dtype, .shape = *Shape::Create(dims), .weak = false};
}

// Session arrays: x float32 (3,), y float32 (4,), i8 int8 (3,), u8 uint8 (3,),
// i16 int16 (3,), i64 int64 (3,), u64 uint64 (3,), f16 float16 (3,),
// b bool (3,), m float32 (2, 3).
class ValidateTest : public ::testing::Test {
 protected:
  ValidateTest() {
    arrays_ = {{"x", T(DType::kFloat32, {3})},  {"y", T(DType::kFloat32, {4})},
               {"i8", T(DType::kInt8, {3})},    {"u8", T(DType::kUInt8, {3})},
               {"i16", T(DType::kInt16, {3})},  {"i64", T(DType::kInt64, {3})},
               {"u64", T(DType::kUInt64, {3})}, {"f16", T(DType::kFloat16, {3})},
               {"b", T(DType::kBool, {3})},     {"m", T(DType::kFloat32, {2, 3})}};
    lookup_ = [this](const std::string& name) -> absl::StatusOr<ValueType> {
      ++lookups_;
      auto it = arrays_.find(name);
      if (it == arrays_.end()) {
        return absl::NotFoundError(absl::StrCat("no array '", name, "' in the session"));
      }
      return it->second;
    };
  }

  absl::StatusOr<ValidatedGraph> Validate(std::vector<Node> nodes, ValidationLimits limits = {}) {
    Graph graph;
    graph.nodes = std::move(nodes);
    return ValidateGraph(graph, lookup_, limits);
  }

  // The status of validating a graph of one node.
  absl::Status ValidateOne(Node node, ValidationLimits limits = {}) {
    return Validate({std::move(node)}, limits).status();
  }

  std::map<std::string, ValueType> arrays_;
  ArrayTypeLookup lookup_;
  int lookups_ = 0;
};

Node N(std::string id, std::string op, std::vector<Input> inputs, AttrMap attrs = {}) {
  Node node;
  node.id = std::move(id);
  node.op = std::move(op);
  node.inputs = std::move(inputs);
  node.attrs = std::move(attrs);
  return node;
}

Input A(std::string name) { return Input::Array(std::move(name)); }
Input R(std::string id) { return Input::Node(std::move(id)); }
Input I(int64_t v) { return Input::FromScalar(Scalar::Int(v)); }
Input F(double v) { return Input::FromScalar(Scalar::Float(v)); }
Input StrongScalar(Scalar s, DType dtype) {
  s.dtype = dtype;
  return Input::FromScalar(s);
}
Input Lit(DType dtype, std::initializer_list<int64_t> dims, std::string bytes) {
  LiteralArray literal;
  literal.dtype = dtype;
  literal.shape = *Shape::Create(dims);
  literal.bytes = std::move(bytes);
  return Input::FromLiteral(std::move(literal));
}
template <typename V>
std::string Bytes(std::initializer_list<V> values) {
  std::string out(values.size() * sizeof(V), '\0');
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

uint64_t LiteralBits(const LiteralArray& literal) {
  uint64_t bits = 0;
  std::memcpy(&bits, literal.bytes.data(), std::min(literal.bytes.size(), sizeof(bits)));
  return bits;
}

// ---- successful validation -----------------------------------------------------------

TEST_F(ValidateTest, ResolvesArraysLiteralsAndNodes) {
  auto v = Validate({
      N("s", "add", {A("x"), F(1.5)}),
      N("t", "mul", {R("s"), A("m")}),
      N("u", "sub", {R("t"), A("x")}),
  });
  ASSERT_THAT(v, IsOk());
  EXPECT_THAT(v->arrays, ElementsAre("x", "m"));  // first use order, no repeats
  EXPECT_THAT(v->array_types, SizeIs(2));
  EXPECT_EQ(v->array_types[1].shape, *Shape::Create({2, 3}));
  EXPECT_EQ(lookups_, 2);
  ASSERT_THAT(v->literals, SizeIs(1));
  ASSERT_THAT(v->nodes, SizeIs(3));

  const ValidatedNode& s = v->nodes[0];
  EXPECT_EQ(s.id, "s");
  EXPECT_EQ(s.op, OpRegistry::Default().Find("add"));
  EXPECT_THAT(s.inputs, ElementsAre(ValueRef{.kind = ValueRef::Kind::kArray, .index = 0},
                                    ValueRef{.kind = ValueRef::Kind::kLiteral, .index = 0}));
  ASSERT_THAT(s.input_types, SizeIs(2));
  EXPECT_TRUE(s.input_types[1].weak);
  EXPECT_EQ(s.type.output.dtype, DType::kFloat32);  // weak float keeps float32
  EXPECT_EQ(s.type.output.shape, *Shape::Create({3}));

  const ValidatedNode& t = v->nodes[1];
  EXPECT_THAT(t.inputs, ElementsAre(ValueRef{.kind = ValueRef::Kind::kNode, .index = 0},
                                    ValueRef{.kind = ValueRef::Kind::kArray, .index = 1}));
  EXPECT_EQ(t.type.output.shape, *Shape::Create({2, 3}));
  EXPECT_THAT(v->nodes[2].inputs,
              ElementsAre(ValueRef{.kind = ValueRef::Kind::kNode, .index = 1},
                          ValueRef{.kind = ValueRef::Kind::kArray, .index = 0}));

  EXPECT_EQ(v->FindNode("t"), 1);
  EXPECT_EQ(v->FindNode("nope"), -1);
  EXPECT_EQ(v->TypeOf(ValueRef{.kind = ValueRef::Kind::kNode, .index = 1}).shape,
            *Shape::Create({2, 3}));
  EXPECT_EQ(v->TypeOf(ValueRef{.kind = ValueRef::Kind::kArray, .index = 1}).dtype, DType::kFloat32);
  EXPECT_TRUE(v->TypeOf(ValueRef{.kind = ValueRef::Kind::kLiteral, .index = 0}).weak);
}

TEST_F(ValidateTest, EmptyGraphIsValid) {
  auto v = Validate({});
  ASSERT_THAT(v, IsOk());
  EXPECT_THAT(v->nodes, IsEmpty());
  EXPECT_THAT(v->arrays, IsEmpty());
}

TEST_F(ValidateTest, StoresCanonicalAttributes) {
  auto v = Validate({
      N("s", "sum", {A("m")}, {{"axes", std::vector<int64_t>{-1}}, {"dtype", DType::kFloat64}}),
      N("r", "var", {A("m")}, {{"ddof", int64_t{1}}}),
      N("a", "arange", {}, {{"stop", int64_t{4}}}),
  });
  ASSERT_THAT(v, IsOk());
  EXPECT_THAT(v->nodes[0].attrs,
              UnorderedElementsAre(Pair("axes", VariantWith<std::vector<int64_t>>(ElementsAre(1))),
                                   Pair("keepdims", VariantWith<bool>(false))));
  EXPECT_EQ(v->nodes[0].type.output.dtype, DType::kFloat64);
  EXPECT_EQ(v->nodes[0].type.compute_dtype, DType::kFloat64);
  // A float attribute given as an int is stored as a double.
  EXPECT_THAT(v->nodes[1].attrs.at("ddof"), VariantWith<double>(1.0));
  // arange still saw the ints: int64 output.
  EXPECT_EQ(v->nodes[2].type.output.dtype, DType::kInt64);
  EXPECT_THAT(v->nodes[2].attrs.at("stop"), VariantWith<double>(4.0));
}

// ---- scalars become 0-d literals ---------------------------------------------------

TEST_F(ValidateTest, WeakScalarsBecomeWeakLiterals) {
  auto v = Validate({
      N("a", "add", {A("x"), I(-7)}),
      N("b", "add", {A("x"), F(0.25)}),
      N("c", "add", {A("x"), Input::FromScalar(Scalar::Bool(true))}),
      N("d", "add", {A("u64"), Input::FromScalar(Scalar::UInt(uint64_t{1} << 63))}),
      N("e", "add", {A("x"), Input::FromScalar(Scalar::UInt(5))}),
  });
  ASSERT_THAT(v, IsOk());
  ASSERT_THAT(v->literals, SizeIs(5));
  const std::pair<DType, uint64_t> expected[] = {
      {DType::kInt64, static_cast<uint64_t>(int64_t{-7})},
      {DType::kFloat64, std::bit_cast<uint64_t>(0.25)},
      {DType::kBool, 1},
      {DType::kUInt64, uint64_t{1} << 63},
      {DType::kInt64, 5},  // a small uint is just an int
  };
  for (size_t i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    const LiteralArray& literal = v->literals[i];
    EXPECT_EQ(literal.dtype, expected[i].first);
    EXPECT_EQ(literal.shape, Shape());
    EXPECT_EQ(literal.bytes.size(), static_cast<size_t>(ItemSize(expected[i].first)));
    EXPECT_EQ(LiteralBits(literal), expected[i].second);
    EXPECT_TRUE(v->literal_types[i].weak);
    EXPECT_EQ(v->literal_types[i].dtype, expected[i].first);
    EXPECT_EQ(v->literal_types[i].shape, Shape());
  }
  EXPECT_EQ(v->nodes[3].type.output.dtype, DType::kUInt64);
}

TEST_F(ValidateTest, StrongScalarsAreConvertedToTheirDType) {
  struct Case {
    Scalar scalar;
    DType dtype;
    uint64_t bits;
  };
  const Case cases[] = {
      {Scalar::Float(2.0), DType::kFloat32, std::bit_cast<uint32_t>(2.0f)},
      {Scalar::Float(0.1), DType::kFloat32, std::bit_cast<uint32_t>(0.1f)},
      {Scalar::Float(1e300), DType::kFloat32,
       std::bit_cast<uint32_t>(std::numeric_limits<float>::infinity())},
      {Scalar::Int(3), DType::kFloat64, std::bit_cast<uint64_t>(3.0)},
      {Scalar::Int(-3), DType::kInt8, 0xfd},
      {Scalar::Int(255), DType::kUInt8, 0xff},
      {Scalar::Int(-2), DType::kInt64, static_cast<uint64_t>(int64_t{-2})},
      {Scalar::UInt(~uint64_t{0}), DType::kUInt64, ~uint64_t{0}},
      {Scalar::Bool(true), DType::kInt16, 1},
      {Scalar::Bool(true), DType::kFloat16, 0x3c00},
      {Scalar::Int(5), DType::kBool, 1},
      {Scalar::Int(0), DType::kBool, 0},
      {Scalar::Float(std::nan("")), DType::kBool, 1},
      {Scalar::Float(-0.0), DType::kBool, 0},
      {Scalar::Float(2.7), DType::kInt8, 2},
      {Scalar::Float(-2.7), DType::kInt32, static_cast<uint32_t>(-2)},
      {Scalar::Float(-0.5), DType::kUInt8, 0},
      {Scalar::Float(1.0), DType::kBFloat16, 0x3f80},
      {Scalar::Float(3.14159265358979), DType::kBFloat16, 0x4049},
      // Ties to even: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7.
      {Scalar::Float(1.00390625), DType::kBFloat16, 0x3f80},
      {Scalar::Float(1.01171875), DType::kBFloat16, 0x3f82},
      // One rounding from the int: 2^62 + 2^54 + 1 is just above halfway, so
      // it rounds up (through a double it would tie and round down).
      {Scalar::Int((int64_t{1} << 62) + (int64_t{1} << 54) + 1), DType::kBFloat16, 0x5e81},
      {Scalar::Int(-1), DType::kBFloat16, 0xbf80},
  };
  for (const Case& c : cases) {
    auto v = Validate({N("n", "add", {A("x"), StrongScalar(c.scalar, c.dtype)})});
    ASSERT_THAT(v, IsOk());
    const LiteralArray& literal = v->literals[0];
    SCOPED_TRACE(DTypeName(c.dtype));
    EXPECT_EQ(literal.dtype, c.dtype);
    EXPECT_EQ(literal.shape, Shape());
    EXPECT_EQ(literal.bytes.size(), static_cast<size_t>(ItemSize(c.dtype)));
    EXPECT_EQ(LiteralBits(literal), c.bits);
    EXPECT_FALSE(v->literal_types[0].weak);
    EXPECT_EQ(v->literal_types[0].dtype, c.dtype);
  }
}

TEST_F(ValidateTest, Float16ScalarsRoundLikeNumpy) {
  for (const auto& [value, bits] : kNumpyFloat16FromDouble) {
    auto v =
        Validate({N("n", "add", {A("f16"), StrongScalar(Scalar::Float(value), DType::kFloat16)})});
    ASSERT_THAT(v, IsOk());
    EXPECT_EQ(LiteralBits(v->literals[0]), bits) << value;
  }
  for (const auto& [value, bits] : kNumpyFloat16FromInt) {
    auto v =
        Validate({N("n", "add", {A("f16"), StrongScalar(Scalar::Int(value), DType::kFloat16)})});
    ASSERT_THAT(v, IsOk());
    EXPECT_EQ(LiteralBits(v->literals[0]), bits) << value;
  }
  auto nan = Validate(
      {N("n", "add", {A("f16"), StrongScalar(Scalar::Float(std::nan("")), DType::kFloat16)})});
  ASSERT_THAT(nan, IsOk());
  EXPECT_EQ(LiteralBits(nan->literals[0]), 0x7e00u);
}

TEST_F(ValidateTest, StrongScalarThatDoesNotFitIsAnError) {
  EXPECT_THAT(
      ValidateOne(N("y", "add", {A("x"), StrongScalar(Scalar::Int(300), DType::kInt8)})),
      StatusIs(kInvalid, "node 'y' (add): input 1: Python integer 300 out of bounds for int8"));
  EXPECT_THAT(
      ValidateOne(N("y", "add", {A("x"), StrongScalar(Scalar::Int(-1), DType::kUInt32)})),
      StatusIs(kInvalid, "node 'y' (add): input 1: Python integer -1 out of bounds for uint32"));
  EXPECT_THAT(
      ValidateOne(
          N("y", "add", {A("x"), StrongScalar(Scalar::UInt(uint64_t{1} << 63), DType::kInt64)})),
      StatusIs(kInvalid,
               "node 'y' (add): input 1: Python integer 9223372036854775808 out of "
               "bounds for int64"));
  EXPECT_THAT(
      ValidateOne(N("y", "add", {A("x"), StrongScalar(Scalar::Float(1000.0), DType::kInt8)})),
      StatusIs(kInvalid, "node 'y' (add): input 1: float 1000 out of bounds for int8"));
  EXPECT_THAT(
      ValidateOne(
          N("y", "add", {A("x"), StrongScalar(Scalar::Float(std::nan("")), DType::kInt32)})),
      StatusIs(kInvalid, "node 'y' (add): input 1: cannot convert float nan to integer int32"));
  EXPECT_THAT(
      ValidateOne(N("y", "add", {A("x"), StrongScalar(Scalar::Float(-1.0), DType::kUInt64)})),
      StatusIs(kInvalid, "node 'y' (add): input 1: float -1 out of bounds for uint64"));
}

// ---- weak ints are checked where they are used ---------------------------------------

TEST_F(ValidateTest, WeakIntOutOfBoundsForTheComputeDTypeIsAnError) {
  // NumPy 2: np.int8 array + 300 -> "Python integer 300 out of bounds for int8".
  EXPECT_THAT(
      ValidateOne(N("y", "add", {A("i8"), I(300)})),
      StatusIs(kInvalid, "node 'y' (add): input 1: Python integer 300 out of bounds for int8"));
  EXPECT_THAT(
      ValidateOne(N("y", "mul", {I(-1), A("u8")})),
      StatusIs(kInvalid, "node 'y' (mul): input 0: Python integer -1 out of bounds for uint8"));
  EXPECT_THAT(
      ValidateOne(N("y", "add", {A("i64"), Input::FromScalar(Scalar::UInt(uint64_t{1} << 63))})),
      StatusIs(kInvalid,
               "node 'y' (add): input 1: Python integer 9223372036854775808 out of "
               "bounds for int64"));
  EXPECT_THAT(
      ValidateOne(N("y", "where", {A("b"), A("i8"), I(300)})),
      StatusIs(kInvalid, "node 'y' (where): input 2: Python integer 300 out of bounds for int8"));
  EXPECT_THAT(
      ValidateOne(N("y", "clip", {A("u8"), I(-1), I(10)})),
      StatusIs(kInvalid, "node 'y' (clip): input 1: Python integer -1 out of bounds for uint8"));
  // full converts its value to the output dtype.
  EXPECT_THAT(
      ValidateOne(
          N("y", "full", {I(300)}, {{"shape", std::vector<int64_t>{2}}, {"dtype", DType::kInt8}})),
      StatusIs(kInvalid, "node 'y' (full): input 0: Python integer 300 out of bounds for int8"));
}

// NumPy 2 compares an out-of-range Python int exactly (uint8_array < -3 is
// all false): the comparison widens its compute dtype instead of failing.
TEST_F(ValidateTest, ComparisonsWithOutOfRangeWeakIntsWiden) {
  absl::StatusOr<ValidatedGraph> v = Validate({N("y", "lt", {A("u8"), I(-3)})});
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(v->nodes[0].type.compute_dtype, DType::kInt64);
  EXPECT_EQ(v->nodes[0].type.output.dtype, DType::kBool);
  v = Validate({N("y", "eq", {A("i8"), I(300)})});
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(v->nodes[0].type.compute_dtype, DType::kInt64);
  // uint64 against a negative value: no integer dtype holds both.
  v = Validate({N("y", "ge", {I(-1), A("u64")})});
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(v->nodes[0].type.compute_dtype, DType::kFloat64);
  // In range: the compute dtype stays the array's.
  v = Validate({N("y", "lt", {A("u8"), I(3)})});
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(v->nodes[0].type.compute_dtype, DType::kUInt8);
}

// Regression (issue 23): int64_array == 2**63 compared in float64, where
// INT64_MAX rounds to 2**63 and compared equal. A value that no integer dtype
// holds together with the array's becomes an infinity of its sign, which
// compares with every value of the array as the value itself does.
TEST_F(ValidateTest, ComparisonsInFloat64TakeOutOfRangeIntsAsInfinities) {
  const Input two63 = Input::FromScalar(Scalar::UInt(uint64_t{1} << 63));
  absl::StatusOr<ValidatedGraph> v = Validate({N("y", "eq", {A("i64"), two63})});
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(v->nodes[0].type.compute_dtype, DType::kFloat64);
  const LiteralArray& literal = v->literals[v->nodes[0].inputs[1].index];
  ASSERT_EQ(literal.dtype, DType::kFloat64);
  double value = 0;
  std::memcpy(&value, literal.bytes.data(), sizeof(value));
  EXPECT_EQ(value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(v->nodes[0].input_types[1].dtype, DType::kFloat64);
  EXPECT_TRUE(v->nodes[0].input_types[1].weak);
  // uint64 against a negative value: -inf.
  v = Validate({N("y", "ge", {I(-1), A("u64")})});
  ASSERT_THAT(v, IsOk());
  std::memcpy(&value, v->literals[v->nodes[0].inputs[0].index].bytes.data(), sizeof(value));
  EXPECT_EQ(value, -std::numeric_limits<double>::infinity());
  // Values that int64 holds keep the int64 comparison and their value.
  v = Validate({N("y", "lt", {A("i8"), I(300)})});
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(v->literals[v->nodes[0].inputs[1].index].dtype, DType::kInt64);
  // Two weak scalars: nothing is out of an array's range; the values stay.
  v = Validate({N("y", "eq", {two63, I(1)})});
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(v->literals[v->nodes[0].inputs[0].index].dtype, DType::kUInt64);
}

TEST_F(ValidateTest, WeakIntThatFitsOrIsNotConvertedIsFine) {
  EXPECT_THAT(ValidateOne(N("y", "add", {A("i16"), I(300)})), IsOk());
  EXPECT_THAT(ValidateOne(N("y", "add", {A("i8"), I(-128)})), IsOk());
  EXPECT_THAT(ValidateOne(N("y", "sub", {A("u8"), I(255)})), IsOk());
  // True division computes in float64.
  EXPECT_THAT(ValidateOne(N("y", "div", {A("i8"), I(300)})), IsOk());
  EXPECT_THAT(ValidateOne(N("y", "add", {A("f16"), I(100000)})), IsOk());  // inf, as NumPy
  EXPECT_THAT(ValidateOne(N("y", "add", {A("u64"), Input::FromScalar(Scalar::UInt(~uint64_t{0}))})),
              IsOk());
  // Logical ops compute in bool; where's condition is only tested != 0.
  EXPECT_THAT(ValidateOne(N("y", "logical_and", {A("u8"), I(-1)})), IsOk());
  EXPECT_THAT(ValidateOne(N("y", "where", {I(300), A("i8"), A("i8")})), IsOk());
  // cast of a Python int is numpy.array(300).astype(int8): no check.
  EXPECT_THAT(ValidateOne(N("y", "cast", {I(300)}, {{"dtype", DType::kInt8}})), IsOk());
  // Reductions take the literal as an int64 array.
  EXPECT_THAT(ValidateOne(N("y", "sum", {I(1)})), IsOk());
  EXPECT_THAT(ValidateOne(N("y", "full", {I(300)}, {{"shape", std::vector<int64_t>{2}}})), IsOk());
}

TEST_F(ValidateTest, IntegerPowerWithANegativeLiteralExponentIsAnError) {
  const char* message =
      "node 'y' (pow): integers to negative integer powers are not allowed (the exponent is a "
      "literal with a negative value)";
  EXPECT_THAT(ValidateOne(N("y", "pow", {A("i8"), I(-1)})), StatusIs(kInvalid, message));
  EXPECT_THAT(
      ValidateOne(N("y", "pow", {A("i64"), Lit(DType::kInt16, {3}, Bytes<int16_t>({2, -3, 1}))})),
      StatusIs(kInvalid, message));
  EXPECT_THAT(ValidateOne(N("y", "pow", {A("u8"), StrongScalar(Scalar::Int(-2), DType::kInt8)})),
              StatusIs(kInvalid, message));
  // Fine: a float result, a non-negative literal, or an exponent known only
  // at run time (which gives 0 there).
  EXPECT_THAT(ValidateOne(N("y", "pow", {A("x"), I(-1)})), IsOk());
  EXPECT_THAT(ValidateOne(N("y", "pow", {A("i8"), F(-1.0)})), IsOk());
  EXPECT_THAT(
      ValidateOne(N("y", "pow", {A("i64"), Lit(DType::kInt16, {3}, Bytes<int16_t>({2, 3, 0}))})),
      IsOk());
  EXPECT_THAT(ValidateOne(N("y", "pow", {A("i8"), A("i8")})), IsOk());
  EXPECT_THAT(ValidateOne(N("y", "pow", {I(-1), A("i8")})), IsOk());
}

// ---- literal arrays ------------------------------------------------------------------

TEST_F(ValidateTest, LiteralArraysKeepTheirBytes) {
  const std::string bytes = Bytes<float>({1.5f, -2.0f, 4.0f});
  auto v = Validate({N("y", "add", {A("x"), Lit(DType::kFloat32, {3}, bytes)})});
  ASSERT_THAT(v, IsOk());
  ASSERT_THAT(v->literals, SizeIs(1));
  EXPECT_EQ(v->literals[0].bytes, bytes);
  EXPECT_EQ(v->literal_types[0].shape, *Shape::Create({3}));
  EXPECT_FALSE(v->literal_types[0].weak);
}

TEST_F(ValidateTest, LiteralByteCountMustMatchDTypeAndShape) {
  EXPECT_THAT(
      ValidateOne(N("c", "add", {A("x"), Lit(DType::kFloat32, {2, 3}, std::string(20, 'a'))})),
      StatusIs(kInvalid,
               "node 'c' (add): input 1: literal of dtype float32 and shape "
               "(2, 3) needs 24 bytes, got 20"));
  EXPECT_THAT(ValidateOne(N("c", "add", {A("x"), Lit(DType::kInt8, {}, "")})),
              StatusIs(kInvalid,
                       "node 'c' (add): input 1: literal of dtype int8 and shape () "
                       "needs 1 bytes, got 0"));
}

TEST_F(ValidateTest, InlineLiteralsOverTheLimitAreResourceExhausted) {
  const ValidationLimits limits{.max_graph_nodes = 100, .max_inline_bytes = 16};
  EXPECT_THAT(
      Validate({N("c", "add", {A("x"), Lit(DType::kFloat32, {3}, std::string(12, '\0'))}),
                N("d", "add", {R("c"), Lit(DType::kFloat32, {3}, std::string(12, '\0'))})},
               limits)
          .status(),
      StatusIs(kExhausted,
               "node 'd' (add): inline literals total 24 bytes, more than the limit of 16"));
  EXPECT_THAT(
      Validate({N("c", "add", {A("y"), Lit(DType::kFloat32, {4}, std::string(16, '\0'))})}, limits),
      IsOk());
}

// ---- graph structure errors ----------------------------------------------------------

TEST_F(ValidateTest, TooManyNodesIsResourceExhausted) {
  std::vector<Node> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(N(absl::StrCat("n", i), "neg", {A("x")}));
  EXPECT_THAT(Validate(nodes, {.max_graph_nodes = 2}).status(),
              StatusIs(kExhausted, "graph has 3 nodes, more than the limit of 2"));
  EXPECT_THAT(Validate(nodes, {.max_graph_nodes = 3}), IsOk());
}

TEST_F(ValidateTest, BadNodeIds) {
  EXPECT_THAT(ValidateOne(N("", "neg", {A("x")})),
              StatusIs(kInvalid, "node '' (neg): node id must have 1 to 128 characters, got 0"));
  EXPECT_THAT(
      ValidateOne(N("a\nb", "neg", {A("x")})),
      StatusIs(kInvalid, "node 'a\\nb' (neg): node id 'a\\nb' may only use [A-Za-z0-9_.:-]"));
  EXPECT_THAT(ValidateOne(N("../../etc/passwd", "neg", {A("x")})),
              StatusIs(kInvalid,
                       "node '../../etc/passwd' (neg): node id '../../etc/passwd' may "
                       "only use [A-Za-z0-9_.:-]"));
  EXPECT_THAT(ValidateOne(N("a b", "neg", {A("x")})),
              StatusIs(kInvalid, HasSubstr("node id 'a b' may only use [A-Za-z0-9_.:-]")));
  EXPECT_THAT(ValidateOne(N(std::string(129, 'n'), "neg", {A("x")})),
              StatusIs(kInvalid, HasSubstr("node id must have 1 to 128 characters, got 129")));
  EXPECT_THAT(ValidateOne(N(std::string(256, 'n'), "neg", {A("x")})),
              StatusIs(kInvalid, HasSubstr("node id must have 1 to 128 characters, got 256")));
  EXPECT_THAT(ValidateOne(N(std::string(128, 'n'), "neg", {A("x")})), IsOk());
  EXPECT_THAT(ValidateOne(N("Az09_.:-", "neg", {A("x")})), IsOk());
}

TEST_F(ValidateTest, BadReferencesToNodesAndArrays) {
  EXPECT_THAT(ValidateOne(N("y", "neg", {R("../../etc/passwd")})),
              StatusIs(kInvalid,
                       "node 'y' (neg): input 0 refers to a bad node id "
                       "'../../etc/passwd' may only use [A-Za-z0-9_.:-]"));
  EXPECT_THAT(ValidateOne(N("y", "neg", {R(std::string(129, 'r'))})),
              StatusIs(kInvalid, HasSubstr("input 0 refers to a bad node id must have 1 to 128 "
                                           "characters, got 129")));
  EXPECT_THAT(ValidateOne(N("y", "neg", {A("../../etc/passwd")})),
              StatusIs(kInvalid,
                       "node 'y' (neg): input 0: array name '../../etc/passwd' may "
                       "only use [A-Za-z0-9_.:-]"));
  EXPECT_THAT(ValidateOne(N("y", "neg", {A("")})),
              StatusIs(kInvalid, HasSubstr("input 0: array name must have 1 to 128 characters")));
  EXPECT_THAT(ValidateOne(N("y", "neg", {A(std::string(129, 'a'))})),
              StatusIs(kInvalid, HasSubstr("array name must have 1 to 128 characters, got 129")));
  EXPECT_EQ(lookups_, 0);  // bad names never reach the session
}

TEST_F(ValidateTest, DuplicateIds) {
  EXPECT_THAT(Validate({N("a", "neg", {A("x")}), N("b", "neg", {A("x")}), N("a", "abs", {A("x")})})
                  .status(),
              StatusIs(kInvalid, "node 'a' (abs): duplicate node id (node #0 has the same id)"));
}

TEST_F(ValidateTest, UnknownOp) {
  EXPECT_THAT(ValidateOne(N("y", "frobnicate", {A("x")})),
              StatusIs(kInvalid, "node 'y' (frobnicate): unknown op 'frobnicate'"));
}

TEST_F(ValidateTest, WrongArity) {
  EXPECT_THAT(ValidateOne(N("y", "add", {A("x")})),
              StatusIs(kInvalid, "node 'y' (add): takes 2 inputs, got 1"));
  EXPECT_THAT(ValidateOne(N("y", "where", {A("x"), A("x")})),
              StatusIs(kInvalid, "node 'y' (where): takes 3 inputs, got 2"));
  EXPECT_THAT(ValidateOne(N("y", "stack", {})),
              StatusIs(kInvalid, "node 'y' (stack): takes at least 1 input, got 0"));
  EXPECT_THAT(ValidateOne(N("y", "arange", {A("x")}, {{"stop", int64_t{3}}})),
              StatusIs(kInvalid, "node 'y' (arange): takes 0 inputs, got 1"));
}

TEST_F(ValidateTest, DanglingForwardAndSelfReferences) {
  EXPECT_THAT(ValidateOne(N("y", "neg", {R("ghost")})),
              StatusIs(kInvalid, "node 'y' (neg): input 0 refers to unknown node 'ghost'"));
  EXPECT_THAT(Validate({N("y", "add", {A("x"), R("z")}), N("z", "neg", {A("x")})}).status(),
              StatusIs(kInvalid,
                       "node 'y' (add): input 1 refers to node 'z', which comes later "
                       "(nodes must be in topological order)"));
  EXPECT_THAT(ValidateOne(N("y", "neg", {R("y")})),
              StatusIs(kInvalid, "node 'y' (neg): input 0 refers to the node itself"));
}

TEST_F(ValidateTest, ArrayLookupFailuresKeepTheirCode) {
  EXPECT_THAT(ValidateOne(N("y", "neg", {A("nope")})),
              StatusIs(absl::StatusCode::kNotFound,
                       "node 'y' (neg): input 0: no array 'nope' in the session"));
  lookup_ = [](const std::string&) -> absl::StatusOr<ValueType> {
    return absl::PermissionDeniedError("session closed");
  };
  EXPECT_THAT(
      ValidateOne(N("y", "neg", {A("x")})),
      StatusIs(absl::StatusCode::kPermissionDenied, "node 'y' (neg): input 0: session closed"));
}

TEST_F(ValidateTest, ArrayTypesAreNeverWeak) {
  arrays_["w"] = WeakIntType();
  auto v = Validate({N("y", "add", {A("i8"), A("w")})});
  ASSERT_THAT(v, IsOk());
  EXPECT_FALSE(v->array_types[1].weak);
  EXPECT_EQ(v->nodes[0].type.output.dtype, DType::kInt64);
}

// ---- attribute errors ------------------------------------------------------------------

TEST_F(ValidateTest, UnknownMistypedAndMissingAttributes) {
  EXPECT_THAT(ValidateOne(N("y", "sum", {A("x")}, {{"axis", int64_t{0}}})),
              StatusIs(kInvalid,
                       "node 'y' (sum): unknown attribute 'axis' (known: axes, "
                       "keepdims, dtype)"));
  EXPECT_THAT(ValidateOne(N("y", "neg", {A("x")}, {{"axis", int64_t{0}}})),
              StatusIs(kInvalid, "node 'y' (neg): unknown attribute 'axis' (it takes none)"));
  EXPECT_THAT(ValidateOne(N("y", "sum", {A("x")}, {{"keepdims", int64_t{1}}})),
              StatusIs(kInvalid, "node 'y' (sum): attribute 'keepdims' must be bool, got int"));
  EXPECT_THAT(ValidateOne(N("y", "reshape", {A("x")}, {{"shape", std::vector<double>{3.0}}})),
              StatusIs(kInvalid, "node 'y' (reshape): attribute 'shape' must be ints, got floats"));
  EXPECT_THAT(ValidateOne(N("y", "arange", {}, {{"stop", std::string("3")}})),
              StatusIs(kInvalid, "node 'y' (arange): attribute 'stop' must be float, got string"));
  EXPECT_THAT(ValidateOne(N("y", "reshape", {A("x")})),
              StatusIs(kInvalid, "node 'y' (reshape): missing required attribute 'shape'"));
  EXPECT_THAT(ValidateOne(N("y", "random_normal", {}, {{"shape", std::vector<int64_t>{2}}})),
              StatusIs(kInvalid, "node 'y' (random_normal): missing required attribute 'seed'"));
}

TEST_F(ValidateTest, BadAxesAndRanges) {
  EXPECT_THAT(
      ValidateOne(N("y", "sum", {A("m")}, {{"axes", std::vector<int64_t>{2}}})),
      StatusIs(kInvalid, "node 'y' (sum): axis 2 is out of bounds for array of dimension 2"));
  EXPECT_THAT(
      ValidateOne(N("y", "reshape", {A("m")}, {{"shape", std::vector<int64_t>{4}}})),
      StatusIs(kInvalid, "node 'y' (reshape): cannot reshape array of size 6 into shape (4,)"));
  EXPECT_THAT(ValidateOne(N("y", "arange", {}, {{"stop", int64_t{3}}, {"step", int64_t{0}}})),
              StatusIs(kInvalid, "node 'y' (arange): arange step must not be zero"));
  EXPECT_THAT(
      ValidateOne(N("y", "random_normal", {},
                    {{"shape", std::vector<int64_t>{2}}, {"seed", int64_t{1}}, {"std", -1.0}})),
      StatusIs(kInvalid, "node 'y' (random_normal): std must be >= 0, got -1"));
  EXPECT_THAT(ValidateOne(N("y", "slice", {A("m")},
                            {{"starts", std::vector<int64_t>{0}},
                             {"stops", std::vector<int64_t>{1}},
                             {"steps", std::vector<int64_t>{0}}})),
              StatusIs(kInvalid, "node 'y' (slice): slice step cannot be zero"));
}

TEST_F(ValidateTest, IncompatibleShapes) {
  // The example of validate.h.
  EXPECT_THAT(
      ValidateOne(N("y", "add", {A("x"), A("y")})),
      StatusIs(kInvalid, "node 'y' (add): shapes (3,) and (4,) cannot be broadcast together"));
  EXPECT_THAT(ValidateOne(N("y", "matmul", {A("m"), A("m")})),
              StatusIs(kInvalid, HasSubstr("node 'y' (matmul): matmul: shapes (2, 3) and (2, 3) "
                                           "are not aligned")));
}

TEST_F(ValidateTest, DTypeErrorsNameTheNode) {
  EXPECT_THAT(ValidateOne(N("y", "neg", {A("b")})),
              StatusIs(kInvalid, "node 'y' (neg): neg is not supported for bool; use logical_not"));
  EXPECT_THAT(ValidateOne(N("y", "bitwise_and", {A("x"), I(1)})),
              StatusIs(kInvalid,
                       "node 'y' (bitwise_and): bitwise_and requires integer or bool "
                       "inputs, got float32 and Python int"));
}

TEST_F(ValidateTest, OutputOverTheByteLimitIsAnError) {
  EXPECT_THAT(ValidateOne(N(
                  "y", "full", {F(0.0)},
                  {{"shape", std::vector<int64_t>{int64_t{1} << 61}}, {"dtype", DType::kFloat32}})),
              StatusIs(kInvalid, HasSubstr("node 'y' (full): output: array of shape "
                                           "(2305843009213693952,) and dtype float32 exceeds "
                                           "2^62 bytes")));
}

TEST_F(ValidateTest, ErrorsEscapeOddIdsAndOps) {
  EXPECT_THAT(ValidateOne(N("y", "ne\tg", {A("x")})),
              StatusIs(kInvalid, "node 'y' (ne\\tg): unknown op 'ne\\tg'"));
}

TEST_F(ValidateTest, FirstErrorWins) {
  // Node 0 is fine; node 1 has two problems: the unknown reference comes first.
  EXPECT_THAT(
      Validate({N("a", "neg", {A("x")}), N("b", "add", {R("nope"), A("y")}, {{"bogus", true}})})
          .status(),
      StatusIs(kInvalid, "node 'b' (add): input 0 refers to unknown node 'nope'"));
}

// ---- hostile sizes: nothing overflows, crashes or echoes without bound ----------------

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t k2To62 = int64_t{1} << 62;

ValueType TDims(DType dtype, const std::vector<int64_t>& dims) {
  return {.dtype = dtype, .shape = *Shape::Create(dims), .weak = false};
}

TEST_F(ValidateTest, ReductionOverEmptyAxisOfHugeShapeIsInvalidNotACrash) {
  // Regression: ReducedShape fetched the value of a failed Shape::Create and
  // aborted the server.
  arrays_["e"] = T(DType::kFloat32, {0, kInt64Max});
  EXPECT_THAT(ValidateOne(N("y", "sum", {A("e")}, {{"axes", std::vector<int64_t>{0}}})),
              StatusIs(kInvalid, HasSubstr("node 'y' (sum): result: shape "
                                           "(9223372036854775807) has more than 2^62 elements")));
  for (const char* op : {"prod", "mean", "var", "std", "any", "all", "logsumexp"}) {
    EXPECT_THAT(ValidateOne(N("y", op, {A("e")}, {{"axes", std::vector<int64_t>{0}}})),
                StatusIs(kInvalid, HasSubstr("more than 2^62 elements")))
        << op;
  }
  // Over the other axis (or every axis) it is an empty or 0-d result.
  EXPECT_THAT(ValidateOne(N("y", "sum", {A("e")}, {{"axes", std::vector<int64_t>{1}}})), IsOk());
  EXPECT_THAT(ValidateOne(N("y", "sum", {A("e")})), IsOk());
}

TEST_F(ValidateTest, MeanKeepdimsOverEmptyAxisOfHugeShapeIsInvalidNotACrash) {
  arrays_["e"] = T(DType::kFloat32, {0, 3, k2To62});
  EXPECT_THAT(ValidateOne(N("y", "mean", {A("e")},
                            {{"keepdims", true}, {"axes", std::vector<int64_t>{0}}})),
              StatusIs(kInvalid, HasSubstr("node 'y' (mean): result: shape (1, 3, "
                                           "4611686018427387904) has more than 2^62 elements")));
}

TEST_F(ValidateTest, ReductionKernelOverEmptyAxisOfHugeShapeIsInvalidNotACrash) {
  arrays_["e"] = T(DType::kFloat32, {0, kInt64Max});
  EXPECT_THAT(ValidateOne(N("y", "reduction_kernel", {A("e")},
                            {{"in_params", std::string("T x")},
                             {"out_params", std::string("T y")},
                             {"map_expr", std::string("x")},
                             {"reduce_expr", std::string("a + b")},
                             {"post_map_expr", std::string("y = a")},
                             {"identity", std::string("0")},
                             {"axes", std::vector<int64_t>{0}}})),
              StatusIs(kInvalid, HasSubstr("more than 2^62 elements")));
}

TEST_F(ValidateTest, SqueezeAndArgReductionOfHugeEmptyShapesAreFine) {
  arrays_["e"] = T(DType::kFloat32, {1, 0, kInt64Max});
  EXPECT_THAT(ValidateOne(N("y", "squeeze", {A("e")}, {{"axes", std::vector<int64_t>{0}}})),
              IsOk());
  EXPECT_THAT(ValidateOne(N("y", "argmax", {A("e")}, {{"axis", int64_t{1}}})),
              StatusIs(kInvalid, HasSubstr("empty sequence")));
  EXPECT_THAT(ValidateOne(N("y", "cumsum", {A("e")})), IsOk());  // (0,)
  EXPECT_THAT(ValidateOne(N("y", "transpose", {A("e")})), IsOk());
}

TEST_F(ValidateTest, ShapesWhoseProductsOverflowAreInvalidForEveryOpFamily) {
  const auto overflow = StatusIs(kInvalid, HasSubstr("2^62"));
  arrays_["tall"] = T(DType::kFloat32, {k2To62, 1});
  arrays_["wide"] = T(DType::kFloat32, {1, 4});
  arrays_["a0"] = T(DType::kFloat32, {int64_t{1} << 40, 0});
  arrays_["b0"] = T(DType::kFloat32, {0, int64_t{1} << 40});
  arrays_["e"] = T(DType::kFloat32, {0, kInt64Max});
  arrays_["big"] = T(DType::kFloat32, {k2To62});
  // Elementwise broadcasting: (2^62, 1) + (1, 4).
  EXPECT_THAT(ValidateOne(N("y", "add", {A("tall"), A("wide")})), overflow);
  EXPECT_THAT(ValidateOne(N("y", "where", {A("tall"), A("wide"), F(0)})), overflow);
  EXPECT_THAT(ValidateOne(N("y", "clip", {A("tall"), A("wide"), F(1)})), overflow);
  // Linear algebra: (2^40, 0) @ (0, 2^40).
  EXPECT_THAT(ValidateOne(N("y", "matmul", {A("a0"), A("b0")})), overflow);
  EXPECT_THAT(ValidateOne(N("y", "dot", {A("a0"), A("b0")})), overflow);
  // Shape ops.
  EXPECT_THAT(ValidateOne(N("y", "concatenate", {A("e"), A("e")}, {{"axis", int64_t{1}}})),
              StatusIs(kInvalid, HasSubstr("concatenated axis is too long")));
  EXPECT_THAT(ValidateOne(N("y", "stack", {A("big"), A("big")})), overflow);
  EXPECT_THAT(ValidateOne(N("y", "reshape", {A("x")},
                            {{"shape", std::vector<int64_t>{kInt64Max, kInt64Max}}})),
              StatusIs(kInvalid, HasSubstr("cannot reshape array of size 3")));
  EXPECT_THAT(ValidateOne(N("y", "reshape", {A("e")}, {{"shape", std::vector<int64_t>{-1, 0}}})),
              StatusIs(kInvalid, HasSubstr("cannot reshape")));
  EXPECT_THAT(ValidateOne(N("y", "broadcast_to", {A("tall")},
                            {{"shape", std::vector<int64_t>{k2To62, 4}}})),
              overflow);
  // Creation.
  const std::vector<int64_t> cube = {int64_t{1} << 31, int64_t{1} << 31, int64_t{1} << 31};
  EXPECT_THAT(ValidateOne(N("y", "full", {F(0)}, {{"shape", cube}})), overflow);
  EXPECT_THAT(ValidateOne(N("y", "random_uniform", {}, {{"shape", cube}, {"seed", int64_t{1}}})),
              overflow);
  EXPECT_THAT(ValidateOne(N("y", "arange", {},
                            {{"start", std::numeric_limits<int64_t>::min()}, {"stop", kInt64Max}})),
              StatusIs(kInvalid, HasSubstr("arange has too many elements")));
  EXPECT_THAT(ValidateOne(N("y", "arange", {}, {{"stop", 1e300}, {"step", 1e-300}})),
              StatusIs(kInvalid, HasSubstr("arange has too many elements")));
  // Byte counts: 2^61 float32 elements are 2^63 bytes.
  EXPECT_THAT(ValidateOne(N(
                  "y", "full", {F(0)},
                  {{"shape", std::vector<int64_t>{int64_t{1} << 61}}, {"dtype", DType::kFloat32}})),
              StatusIs(kInvalid, HasSubstr("exceeds 2^62 bytes")));
  // Custom kernels: a loop 'size' and a raw kernel's block.
  EXPECT_THAT(ValidateOne(N("y", "elementwise_kernel", {},
                            {{"in_params", std::string("")},
                             {"out_params", std::string("float64 z")},
                             {"operation", std::string("z = i")},
                             {"size", kInt64Max}})),
              overflow);
  EXPECT_THAT(ValidateOne(N("y", "raw_kernel", {A("x")},
                            {{"code", std::string("k")},
                             {"name", std::string("k")},
                             {"grid", std::vector<int64_t>{1}},
                             {"block", std::vector<int64_t>{2147483647, 2147483647, 2147483647}},
                             {"output", int64_t{0}}})),
              StatusIs(kInvalid, HasSubstr("a block has at most 1024")));
}

TEST_F(ValidateTest, OutputsOfRankAbove64AreInvalid) {
  const std::vector<int64_t> ones64(64, 1);
  const std::vector<int64_t> ones65(65, 1);
  arrays_["r64"] = TDims(DType::kFloat32, ones64);
  EXPECT_THAT(ValidateOne(N("y", "neg", {A("r64")})), IsOk());
  EXPECT_THAT(ValidateOne(N("y", "reshape", {A("r64")}, {{"shape", ones65}})),
              StatusIs(kInvalid, HasSubstr("node 'y' (reshape): shape has 65 dimensions, more "
                                           "than the maximum of 64")));
  EXPECT_THAT(ValidateOne(N("y", "expand_dims", {A("r64")}, {{"axes", std::vector<int64_t>{0}}})),
              StatusIs(kInvalid, HasSubstr("node 'y' (expand_dims): expand_dims to rank 65 is "
                                           "over the maximum of 64")));
  EXPECT_THAT(
      ValidateOne(N("y", "expand_dims", {A("x")}, {{"axes", std::vector<int64_t>(1000000, 0)}})),
      StatusIs(kInvalid, HasSubstr("over the maximum of 64")));
  EXPECT_THAT(ValidateOne(N("y", "broadcast_to", {A("x")},
                            {{"shape",
                              [] {
                                std::vector<int64_t> d(65, 1);
                                d.back() = 3;
                                return d;
                              }()}})),
              StatusIs(kInvalid, HasSubstr("node 'y' (broadcast_to): rank 65 is over the "
                                           "maximum of 64")));
  EXPECT_THAT(ValidateOne(N("y", "full", {F(0)}, {{"shape", ones65}})),
              StatusIs(kInvalid, HasSubstr("node 'y' (full): rank 65 is over the maximum of 64")));
  EXPECT_THAT(ValidateOne(N("y", "random_normal", {}, {{"shape", ones65}, {"seed", int64_t{0}}})),
              StatusIs(kInvalid, HasSubstr("rank 65 is over the maximum of 64")));
  EXPECT_THAT(ValidateOne(N("y", "stack", {A("r64"), A("r64")})),
              StatusIs(kInvalid, HasSubstr("node 'y' (stack): rank 65 is over the maximum")));
  // No Shape of rank 65 exists, so neither does a literal or array of it.
  EXPECT_THAT(Shape::Create(ones65).status(),
              StatusIs(kInvalid, "rank 65 is over the maximum of 64"));
}

TEST_F(ValidateTest, ErrorsEchoAtMost256BytesOfAClientString) {
  const std::string huge(1 << 20, 'q');
  // A 1 MiB op name was echoed twice, a 1 MiB node id once.
  absl::Status s = ValidateOne(N("y", huge, {A("x")}));
  EXPECT_THAT(s, StatusIs(kInvalid, HasSubstr("unknown op 'qqq")));
  EXPECT_LT(s.message().size(), 700u);
  s = ValidateOne(N(huge, "neg", {A("x")}));
  EXPECT_THAT(s, StatusIs(kInvalid, HasSubstr("(1048576 bytes)")));
  EXPECT_LT(s.message().size(), 400u);
  s = ValidateOne(N("y", "neg", {R(huge)}));
  EXPECT_LT(s.message().size(), 400u);
  s = ValidateOne(N("y", "neg", {A(huge)}));
  EXPECT_LT(s.message().size(), 400u);
  s = ValidateOne(N("y", "neg", {A("x")}, {{huge, true}}));
  EXPECT_THAT(s, StatusIs(kInvalid, HasSubstr("unknown attribute 'qqq")));
  EXPECT_LT(s.message().size(), 400u);
  s = ValidateOne(N("y", "transpose", {A("x")}, {{"axes", std::vector<int64_t>(1 << 20, 0)}}));
  EXPECT_THAT(s, StatusIs(kInvalid, HasSubstr("1048576 entries")));
  EXPECT_LT(s.message().size(), 1000u);
  s = ValidateOne(N("y", "elementwise_kernel", {A("x")},
                    {{"in_params", std::string("T x")},
                     {"out_params", std::string("T z")},
                     {"operation", std::string("z = x")},
                     {"name", huge + "-"}}));
  EXPECT_THAT(s, StatusIs(kInvalid, HasSubstr("(1048577 bytes) is not an identifier")));
  EXPECT_LT(s.message().size(), 700u);
  s = ValidateOne(N("y", "raw_kernel", {A("x")},
                    {{"code", std::string("k")},
                     {"name", huge + "-"},
                     {"grid", std::vector<int64_t>{1}},
                     {"block", std::vector<int64_t>{1}},
                     {"output", int64_t{0}}}));
  EXPECT_THAT(s, StatusIs(kInvalid, HasSubstr("is not a C identifier")));
  EXPECT_LT(s.message().size(), 700u);
}

TEST_F(ValidateTest, CustomKernelWithManyParametersValidatesInLinearTime) {
  // Duplicate names and placeholder bindings were found by linear scans:
  // 200k parameters took minutes.
  constexpr int kParams = 200000;
  std::vector<std::string> params;
  std::vector<Input> inputs;
  for (int i = 0; i < kParams; ++i) {
    params.push_back(absl::StrCat("T", i, " p", i));
    inputs.push_back(A("x"));
  }
  absl::StatusOr<ValidatedGraph> v = Validate({N("y", "elementwise_kernel", inputs,
                                                 {{"in_params", absl::StrJoin(params, ", ")},
                                                  {"out_params", std::string("T0 z")},
                                                  {"operation", std::string("z = p0")}})});
  ASSERT_THAT(v, IsOk());
  EXPECT_THAT(v->nodes[0].type.output.shape, *Shape::Create({3}));
}

TEST_F(ValidateTest, ThreeHundredThousandNodesValidateAndAreFoundInLinearTime) {
  // FindNode was a linear scan: looking up 300k outputs took 17 s. A
  // quadratic step anywhere here would make this test take hours.
  constexpr int kNodes = 300000;
  std::vector<Node> nodes;
  nodes.reserve(kNodes);
  nodes.push_back(N("n0", "neg", {A("x")}));
  for (int i = 1; i < kNodes; ++i) {
    nodes.push_back(N(absl::StrCat("n", i), "neg", {R(absl::StrCat("n", i - 1))}));
  }
  absl::StatusOr<ValidatedGraph> v = Validate(std::move(nodes), {.max_graph_nodes = kNodes});
  ASSERT_THAT(v, IsOk());
  ASSERT_THAT(v->nodes, SizeIs(kNodes));
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_EQ(v->FindNode(absl::StrCat("n", i)), i);
  }
  EXPECT_EQ(v->FindNode("n300000"), -1);
  // Duplicate ids are found through a hash map too.
  std::vector<Node> dups;
  for (int i = 0; i < kNodes; ++i) dups.push_back(N(absl::StrCat("d", i), "neg", {A("x")}));
  dups.push_back(N("d0", "neg", {A("x")}));
  EXPECT_THAT(Validate(std::move(dups), {.max_graph_nodes = kNodes + 1}).status(),
              StatusIs(kInvalid, "node 'd0' (neg): duplicate node id (node #0 has the same id)"));
}

TEST(ValidatedGraphTest, FindNodeScansAGraphBuiltByHand) {
  ValidatedGraph graph;
  for (const char* id : {"a", "b"}) {
    ValidatedNode node;
    node.id = id;
    graph.nodes.push_back(std::move(node));
  }
  EXPECT_EQ(graph.FindNode("b"), 1);
  EXPECT_EQ(graph.FindNode("c"), -1);
}

}  // namespace
}  // namespace gpuflow

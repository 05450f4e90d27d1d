#include "engine/ir/validate.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/ir/echo.h"
#include "engine/ir/half.h"
#include "engine/ir/op_registry_internal.h"
#include "engine/ir/promotion.h"
#include "engine/ir/status_macros_internal.h"

namespace gpuflow {

static_assert(std::endian::native == std::endian::little,
              "literal bytes are little-endian; a big-endian host needs byte swaps here");

int ValidatedGraph::FindNode(absl::string_view id) const {
  if (node_index.size() == nodes.size()) {
    const auto it = node_index.find(id);
    return it == node_index.end() ? -1 : it->second;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

const ValueType& ValidatedGraph::TypeOf(const ValueRef& ref) const {
  switch (ref.kind) {
    case ValueRef::Kind::kArray:
      return array_types[ref.index];
    case ValueRef::Kind::kLiteral:
      return literal_types[ref.index];
    case ValueRef::Kind::kNode:
      break;
  }
  return nodes[ref.index].type.output;
}

namespace {

// ---- scalar literals ---------------------------------------------------------

// The bits of `v` in a float dtype, rounded once to nearest (ties to even).
uint64_t FloatBits(DType dtype, double v) {
  switch (dtype) {
    case DType::kFloat16:
      return Half::FromDouble(v).bits;
    case DType::kBFloat16:
      return BFloat16::FromDouble(v).bits;
    case DType::kFloat32:
      return std::bit_cast<uint32_t>(static_cast<float>(v));
    default:
      return std::bit_cast<uint64_t>(v);
  }
}
uint64_t FloatBits(DType dtype, int64_t v) {
  switch (dtype) {
    case DType::kFloat16:
      return Half::FromInt64(v).bits;
    case DType::kBFloat16:
      return BFloat16::FromInt64(v).bits;
    case DType::kFloat32:
      return std::bit_cast<uint32_t>(static_cast<float>(v));
    default:
      return std::bit_cast<uint64_t>(static_cast<double>(v));
  }
}
uint64_t FloatBits(DType dtype, uint64_t v) {
  switch (dtype) {
    case DType::kFloat16:
      return Half::FromUInt64(v).bits;
    case DType::kBFloat16:
      return BFloat16::FromUInt64(v).bits;
    case DType::kFloat32:
      return std::bit_cast<uint32_t>(static_cast<float>(v));
    default:
      return std::bit_cast<uint64_t>(static_cast<double>(v));
  }
}

// A 0-d complex64 or complex128 literal.
LiteralArray ComplexLiteral(DType dtype, double real, double imag) {
  LiteralArray literal{.dtype = dtype, .shape = Shape(), .bytes = {}};
  literal.bytes.resize(ItemSize(dtype));
  if (dtype == DType::kComplex64) {
    const float parts[2] = {static_cast<float>(real), static_cast<float>(imag)};
    std::memcpy(literal.bytes.data(), parts, sizeof(parts));
  } else {
    const double parts[2] = {real, imag};
    std::memcpy(literal.bytes.data(), parts, sizeof(parts));
  }
  return literal;
}

LiteralArray ZeroDLiteral(DType dtype, uint64_t bits) {
  LiteralArray literal{.dtype = dtype, .shape = Shape(), .bytes = {}};
  literal.bytes.resize(ItemSize(dtype));
  std::memcpy(literal.bytes.data(), &bits, literal.bytes.size());
  return literal;
}

// A float's value converted to an integer dtype: truncated toward zero, which
// must fit.
absl::StatusOr<uint64_t> FloatToIntegerBits(double v, DType dtype) {
  if (!std::isfinite(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot convert float ", v, " to integer ", DTypeName(dtype)));
  }
  const double t = std::trunc(v);
  const int bits = static_cast<int>(ItemSize(dtype)) * 8;
  const bool is_signed = KindOf(dtype) == DTypeKind::kSigned;
  const double lo = is_signed ? -std::ldexp(1.0, bits - 1) : 0.0;
  const double hi = std::ldexp(1.0, is_signed ? bits - 1 : bits);  // exclusive
  if (!(t >= lo && t < hi)) {
    return absl::InvalidArgumentError(
        absl::StrCat("float ", v, " out of bounds for ", DTypeName(dtype)));
  }
  if (is_signed) return static_cast<uint64_t>(static_cast<int64_t>(t));
  return static_cast<uint64_t>(t);
}

}  // namespace

absl::StatusOr<std::pair<LiteralArray, ValueType>> ScalarLiteral(const Scalar& s) {
  if (!s.dtype.has_value()) {
    ValueType type;
    LiteralArray literal;
    switch (s.kind) {
      case Scalar::Kind::kBool:
        type = WeakBoolType();
        literal = ZeroDLiteral(DType::kBool, s.bool_value ? 1 : 0);
        break;
      case Scalar::Kind::kInt:
        type = WeakIntType();
        literal = ZeroDLiteral(DType::kInt64, static_cast<uint64_t>(s.int_value));
        break;
      case Scalar::Kind::kUInt:
        type = std::in_range<int64_t>(s.uint_value) ? WeakIntType() : WeakUIntType();
        literal = ZeroDLiteral(type.dtype, s.uint_value);
        break;
      case Scalar::Kind::kFloat:
        type = WeakFloatType();
        literal = ZeroDLiteral(DType::kFloat64, std::bit_cast<uint64_t>(s.float_value));
        break;
      case Scalar::Kind::kComplex:
        type = WeakComplexType();
        literal = ComplexLiteral(DType::kComplex128, s.float_value, s.imag_value);
        break;
    }
    return std::make_pair(std::move(literal), std::move(type));
  }
  const DType dtype = *s.dtype;
  const ValueType strong{.dtype = dtype, .shape = Shape(), .weak = false};
  if (IsComplex(dtype)) {
    double real = 0;
    switch (s.kind) {
      case Scalar::Kind::kBool:
        real = s.bool_value ? 1 : 0;
        break;
      case Scalar::Kind::kInt:
        real = static_cast<double>(s.int_value);
        break;
      case Scalar::Kind::kUInt:
        real = static_cast<double>(s.uint_value);
        break;
      case Scalar::Kind::kFloat:
      case Scalar::Kind::kComplex:
        real = s.float_value;
        break;
    }
    const double imag = s.kind == Scalar::Kind::kComplex ? s.imag_value : 0.0;
    return std::make_pair(ComplexLiteral(dtype, real, imag), strong);
  }
  if (s.kind == Scalar::Kind::kComplex) {
    // NumPy: numpy.bool_(1j) is True; numpy.float32(1j) is a TypeError.
    if (dtype != DType::kBool) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot convert a complex scalar to ", DTypeName(dtype)));
    }
    return std::make_pair(
        ZeroDLiteral(dtype, (s.float_value != 0 || s.imag_value != 0 || std::isnan(s.float_value) ||
                             std::isnan(s.imag_value))
                                ? 1
                                : 0),
        strong);
  }
  uint64_t bits = 0;
  switch (KindOf(dtype)) {
    case DTypeKind::kBool:
      switch (s.kind) {
        case Scalar::Kind::kBool:
          bits = s.bool_value;
          break;
        case Scalar::Kind::kInt:
          bits = s.int_value != 0;
          break;
        case Scalar::Kind::kUInt:
          bits = s.uint_value != 0;
          break;
        case Scalar::Kind::kFloat:
        case Scalar::Kind::kComplex:
          bits = s.float_value != 0 || std::isnan(s.float_value);
          break;
      }
      break;
    case DTypeKind::kSigned:
    case DTypeKind::kUnsigned:
      switch (s.kind) {
        case Scalar::Kind::kBool:
          bits = s.bool_value;
          break;
        case Scalar::Kind::kInt:
          GPUFLOW_IR_RETURN_IF_ERROR(CheckIntFitsDType(s.int_value, dtype));
          bits = static_cast<uint64_t>(s.int_value);
          break;
        case Scalar::Kind::kUInt:
          GPUFLOW_IR_RETURN_IF_ERROR(CheckIntFitsDType(s.uint_value, dtype));
          bits = s.uint_value;
          break;
        case Scalar::Kind::kFloat:
        case Scalar::Kind::kComplex: {
          GPUFLOW_IR_ASSIGN_OR_RETURN(bits, FloatToIntegerBits(s.float_value, dtype));
          break;
        }
      }
      break;
    case DTypeKind::kFloat:
      switch (s.kind) {
        case Scalar::Kind::kBool:
          bits = FloatBits(dtype, int64_t{s.bool_value ? 1 : 0});
          break;
        case Scalar::Kind::kInt:
          bits = FloatBits(dtype, s.int_value);
          break;
        case Scalar::Kind::kUInt:
          bits = FloatBits(dtype, s.uint_value);
          break;
        case Scalar::Kind::kFloat:
        case Scalar::Kind::kComplex:
          bits = FloatBits(dtype, s.float_value);
          break;
      }
      break;
    case DTypeKind::kComplex:
      break;  // handled above
  }
  return std::make_pair(ZeroDLiteral(dtype, bits), strong);
}

namespace {

// Whether a literal of a signed integer dtype holds a negative value.
bool LiteralHasNegative(const LiteralArray& literal) {
  if (KindOf(literal.dtype) != DTypeKind::kSigned) return false;
  const int64_t itemsize = ItemSize(literal.dtype);
  for (size_t offset = 0; offset + itemsize <= literal.bytes.size(); offset += itemsize) {
    // Little-endian: the sign is the top bit of the last byte.
    if ((static_cast<unsigned char>(literal.bytes[offset + itemsize - 1]) & 0x80) != 0) {
      return true;
    }
  }
  return false;
}

// The value of a weak int literal (int64 or uint64).
absl::Status CheckWeakIntLiteral(const LiteralArray& literal, DType target) {
  uint64_t bits = 0;
  std::memcpy(&bits, literal.bytes.data(), sizeof(bits));
  if (literal.dtype == DType::kUInt64) return CheckIntFitsDType(bits, target);
  return CheckIntFitsDType(static_cast<int64_t>(bits), target);
}

// The dtype a weak scalar input is converted to by the node, where NumPy
// would convert the Python int: elementwise ops convert it to their compute
// dtype (except cast, and where's condition, which only tests != 0); full to
// its output dtype. Other ops take the literal as an array of its own dtype.
std::optional<DType> WeakIntTarget(const ValidatedNode& node, size_t input) {
  const absl::string_view op = node.op->name;
  if (op == "full") return node.type.output.dtype;
  if (node.op->family != OpFamily::kElementwise || op == "cast") return std::nullopt;
  if (op == "where" && input == 0) return std::nullopt;
  return node.type.compute_dtype;
}

// ---- node checks ----------------------------------------------------------------

// The op as the prefix shows it: escaped and bounded as Echo, unquoted.
std::string OpLabel(absl::string_view op) {
  std::string echoed = Echo(op);  // 'op' or 'op...' (N bytes)
  if (echoed.back() == '\'') return echoed.substr(1, echoed.size() - 2);
  const size_t close = echoed.rfind("' (");
  return absl::StrCat(echoed.substr(1, close - 1), echoed.substr(close + 1));
}

std::string Prefix(const Node& node) {
  return absl::StrCat("node ", Echo(node.id), " (", OpLabel(node.op), "): ");
}

absl::Status NodeError(const Node& node, absl::StatusCode code, absl::string_view reason) {
  return absl::Status(code, absl::StrCat(Prefix(node), reason));
}
absl::Status NodeError(const Node& node, absl::string_view reason) {
  return NodeError(node, absl::StatusCode::kInvalidArgument, reason);
}
absl::Status NodeError(const Node& node, const absl::Status& cause) {
  return NodeError(node, cause.code(), cause.message());
}

absl::Status CheckRank(const Shape& shape, absl::string_view what) {
  if (shape.rank() <= kMaxRank) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " has rank ", shape.rank(), ", more than the maximum of ", kMaxRank));
}

class Validator {
 public:
  Validator(const Graph& graph, const ArrayTypeLookup& lookup, const ValidationLimits& limits)
      : graph_(graph), lookup_(lookup), limits_(limits) {}

  absl::StatusOr<ValidatedGraph> Run() {
    if (static_cast<int64_t>(graph_.nodes.size()) > limits_.max_graph_nodes) {
      return absl::ResourceExhaustedError(absl::StrCat("graph has ", graph_.nodes.size(),
                                                       " nodes, more than the limit of ",
                                                       limits_.max_graph_nodes));
    }
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
      all_ids_.emplace(graph_.nodes[i].id, i);  // keeps the first of duplicates
    }
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
      GPUFLOW_IR_RETURN_IF_ERROR(ValidateNode(graph_.nodes[i], i));
    }
    return std::move(out_);
  }

 private:
  absl::Status ValidateNode(const Node& node, size_t position) {
    if (absl::Status s = CheckName(node.id, "node id"); !s.ok()) return NodeError(node, s);
    if (auto it = out_.node_index.find(node.id); it != out_.node_index.end()) {
      return NodeError(node,
                       absl::StrCat("duplicate node id (node #", it->second, " has the same id)"));
    }
    const OpDef* op = OpRegistry::Default().Find(node.op);
    if (op == nullptr) {
      return NodeError(node, absl::StrCat("unknown op ", Echo(node.op)));
    }
    if (absl::Status s = internal::CheckArity(*op, node.inputs.size()); !s.ok()) {
      return NodeError(node, s);
    }

    ValidatedNode v{
        .id = node.id, .op = op, .inputs = {}, .input_types = {}, .attrs = node.attrs, .type = {}};
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      absl::StatusOr<ValueRef> ref = ResolveInput(node.inputs[i], i, position);
      if (!ref.ok()) return NodeError(node, ref.status());
      v.inputs.push_back(*ref);
      v.input_types.push_back(out_.TypeOf(*ref));
    }
    if (inline_bytes_ > limits_.max_inline_bytes) {
      return NodeError(node, absl::StatusCode::kResourceExhausted,
                       absl::StrCat("inline literals total ", inline_bytes_,
                                    " bytes, more than the limit of ", limits_.max_inline_bytes));
    }
    if (absl::Status s = internal::CheckAttrs(*op, v.attrs); !s.ok()) return NodeError(node, s);

    absl::StatusOr<InferredNode> inferred = op->infer(v.input_types, v.attrs);
    if (!inferred.ok()) return NodeError(node, inferred.status());
    v.type = *std::move(inferred);
    WidenComparisonWithOutOfRangeInt(v);
    if (absl::Status s = CheckLiteralValues(v); !s.ok()) return NodeError(node, s);
    if (absl::Status s = CheckRank(v.type.output.shape, "output"); !s.ok()) {
      return NodeError(node, s);
    }
    if (absl::StatusOr<int64_t> bytes = ByteSize(v.type.output.shape, v.type.output.dtype);
        !bytes.ok()) {
      return NodeError(node, absl::StrCat("output: ", bytes.status().message()));
    }

    out_.node_index.emplace(node.id, static_cast<int>(out_.nodes.size()));
    out_.nodes.push_back(std::move(v));
    return absl::OkStatus();
  }

  // Errors name the input: "input 1 refers to unknown node 'z'", "input 0:
  // <the lookup's error>".
  absl::StatusOr<ValueRef> ResolveInput(const Input& input, size_t index, size_t position) {
    if (input.kind == Input::Kind::kNode) return ResolveNodeInput(input.name, index, position);
    absl::StatusOr<ValueRef> ref = ResolveValueInput(input);
    if (!ref.ok()) {
      return absl::Status(ref.status().code(),
                          absl::StrCat("input ", index, ": ", ref.status().message()));
    }
    return ref;
  }

  absl::StatusOr<ValueRef> ResolveNodeInput(const std::string& id, size_t index,
                                            size_t position) const {
    if (auto it = out_.node_index.find(id); it != out_.node_index.end()) {
      return ValueRef{.kind = ValueRef::Kind::kNode, .index = it->second};
    }
    if (absl::Status s = CheckName(id, "node id"); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("input ", index, " refers to a bad ", s.message()));
    }
    const auto later = all_ids_.find(id);
    if (later != all_ids_.end() && later->second == position) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", index, " refers to the node itself"));
    }
    if (later != all_ids_.end() && later->second > position) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", index, " refers to node ", Echo(id),
                       ", which comes later (nodes must be in topological order)"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("input ", index, " refers to unknown node ", Echo(id)));
  }

  absl::StatusOr<ValueRef> ResolveValueInput(const Input& input) {
    switch (input.kind) {
      case Input::Kind::kArray: {
        if (auto it = array_index_.find(input.name); it != array_index_.end()) {
          return ValueRef{.kind = ValueRef::Kind::kArray, .index = it->second};
        }
        GPUFLOW_IR_RETURN_IF_ERROR(CheckName(input.name, "array name"));
        absl::StatusOr<ValueType> type = lookup_(input.name);
        if (!type.ok()) return type.status();
        GPUFLOW_IR_RETURN_IF_ERROR(
            CheckRank(type->shape, absl::StrCat("array ", Echo(input.name))));
        type->weak = false;
        const int index = static_cast<int>(out_.arrays.size());
        out_.arrays.push_back(input.name);
        out_.array_types.push_back(*std::move(type));
        array_index_.emplace(input.name, index);
        return ValueRef{.kind = ValueRef::Kind::kArray, .index = index};
      }
      case Input::Kind::kScalar: {
        GPUFLOW_IR_ASSIGN_OR_RETURN(auto literal, ScalarLiteral(input.scalar));
        return AddLiteral(std::move(literal.first), std::move(literal.second));
      }
      case Input::Kind::kLiteral: {
        const LiteralArray& literal = input.literal;
        GPUFLOW_IR_RETURN_IF_ERROR(CheckRank(literal.shape, "literal"));
        GPUFLOW_IR_ASSIGN_OR_RETURN(const int64_t expected, ByteSize(literal.shape, literal.dtype));
        if (static_cast<int64_t>(literal.bytes.size()) != expected) {
          return absl::InvalidArgumentError(absl::StrCat(
              "literal of dtype ", DTypeName(literal.dtype), " and shape ",
              literal.shape.ToString(), " needs ", expected, " bytes, got ", literal.bytes.size()));
        }
        return AddLiteral(literal,
                          ValueType{.dtype = literal.dtype, .shape = literal.shape, .weak = false});
      }
      case Input::Kind::kNode:
        break;
    }
    return absl::InternalError("unexpected input kind");
  }

  ValueRef AddLiteral(LiteralArray literal, ValueType type) {
    inline_bytes_ += static_cast<int64_t>(literal.bytes.size());
    out_.literals.push_back(std::move(literal));
    out_.literal_types.push_back(std::move(type));
    return {.kind = ValueRef::Kind::kLiteral, .index = static_cast<int>(out_.literals.size() - 1)};
  }

  // NumPy 2 (NEP 50) lets comparisons take a Python int outside the array's
  // range (`uint8_array < -3` is all false) instead of raising. Such a
  // comparison computes in int64 when the value fits it (exact for every
  // integer dtype but uint64), else in float64. In float64 an integer array
  // does not compare exactly with the value (`int64_max == 2**63` would be
  // true), so each out-of-range value is replaced by -inf or +inf, which
  // every value of the array's dtype lies strictly inside, as the value does.
  // With no input but weak scalars nothing is known to be out of range of an
  // array's dtype, and the values stay.
  void WidenComparisonWithOutOfRangeInt(ValidatedNode& v) {
    static constexpr absl::string_view kComparisons[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    if (std::find(std::begin(kComparisons), std::end(kComparisons), v.op->name) ==
            std::end(kComparisons) ||
        !IsInteger(v.type.compute_dtype)) {
      return;
    }
    std::vector<size_t> out_of_range;
    bool fits_int64 = true;
    bool any_strong = false;
    for (size_t i = 0; i < v.inputs.size(); ++i) {
      if (!v.input_types[i].weak) any_strong = true;
      if (v.inputs[i].kind != ValueRef::Kind::kLiteral) continue;
      const LiteralArray& literal = out_.literals[v.inputs[i].index];
      const ValueType& type = out_.literal_types[v.inputs[i].index];
      if (!type.weak || !IsInteger(type.dtype)) continue;
      if (CheckWeakIntLiteral(literal, v.type.compute_dtype).ok()) continue;
      out_of_range.push_back(i);
      fits_int64 = fits_int64 && CheckWeakIntLiteral(literal, DType::kInt64).ok();
    }
    if (out_of_range.empty()) return;
    if (fits_int64 && v.type.compute_dtype != DType::kUInt64) {
      v.type.compute_dtype = DType::kInt64;
      return;
    }
    v.type.compute_dtype = DType::kFloat64;
    if (!any_strong) return;
    for (const size_t i : out_of_range) {
      const int index = v.inputs[i].index;
      LiteralArray& literal = out_.literals[index];
      // A weak int literal is int64 or uint64 (the latter above INT64_MAX).
      const bool negative = literal.dtype == DType::kInt64 && LiteralHasNegative(literal);
      const double bound = negative ? -std::numeric_limits<double>::infinity()
                                    : std::numeric_limits<double>::infinity();
      literal = ZeroDLiteral(DType::kFloat64, std::bit_cast<uint64_t>(bound));
      out_.literal_types[index] = WeakFloatType();
      v.input_types[i] = WeakFloatType();
    }
  }

  // Checks that need the values of literal inputs.
  absl::Status CheckLiteralValues(const ValidatedNode& v) const {
    for (size_t i = 0; i < v.inputs.size(); ++i) {
      if (v.inputs[i].kind != ValueRef::Kind::kLiteral) continue;
      const LiteralArray& literal = out_.literals[v.inputs[i].index];
      const ValueType& type = out_.literal_types[v.inputs[i].index];
      if (type.weak && IsInteger(type.dtype)) {
        if (std::optional<DType> target = WeakIntTarget(v, i); target.has_value()) {
          if (absl::Status s = CheckWeakIntLiteral(literal, *target); !s.ok()) {
            return absl::Status(s.code(), absl::StrCat("input ", i, ": ", s.message()));
          }
        }
      }
      if (v.op->name == "pow" && i == 1 && !IsFloat(v.type.output.dtype) &&
          !IsComplex(v.type.output.dtype) && LiteralHasNegative(literal)) {
        return absl::InvalidArgumentError(
            "integers to negative integer powers are not allowed (the exponent is a literal "
            "with a negative value)");
      }
    }
    return absl::OkStatus();
  }

  const Graph& graph_;
  const ArrayTypeLookup& lookup_;
  const ValidationLimits& limits_;
  ValidatedGraph out_;
  absl::flat_hash_map<std::string, size_t> all_ids_;  // first position of each id
  absl::flat_hash_map<std::string, int> array_index_;
  int64_t inline_bytes_ = 0;
};

}  // namespace

absl::StatusOr<ValidatedGraph> ValidateGraph(const Graph& graph, const ArrayTypeLookup& lookup,
                                             const ValidationLimits& limits) {
  return Validator(graph, lookup, limits).Run();
}

}  // namespace gpuflow

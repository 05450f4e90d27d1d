// Every op of docs/ops.md: its arity, attributes, documentation and type
// inference. Each op's infer is wrapped (MakeOp) so that it checks arity and
// attribute types itself, works on a copy of the attributes (the caller's are
// replaced only on success), and ends with float attributes as doubles.
//
// compute_dtype, where op_registry.h leaves room for a choice:
//  - logical_and/or/xor/not compute in bool (inputs are converted with
//    `x != 0`). NumPy picks a same-dtype loop when both inputs share a dtype,
//    which gives the same results.
//  - isnan/isinf compute in the input dtype (NumPy's loops).
//  - argmin/argmax compare in the input dtype.
//  - mean/var/std of float16 and bfloat16 accumulate in float32 (as NumPy's
//    mean does for float16); integer and bool inputs in float64.
#include "engine/ir/op_registry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/ir/broadcast.h"
#include "engine/ir/custom_kernel.h"
#include "engine/ir/echo.h"
#include "engine/ir/op_registry_internal.h"
#include "engine/ir/promotion.h"
#include "engine/ir/status_macros_internal.h"

namespace gpuflow {

namespace internal {

absl::Status CheckArity(const OpDef& def, size_t num_inputs) {
  const int64_t n = static_cast<int64_t>(num_inputs);
  if (n >= def.min_inputs && (def.max_inputs < 0 || n <= def.max_inputs)) {
    return absl::OkStatus();
  }
  const auto inputs = [](int64_t k) { return k == 1 ? "input" : "inputs"; };
  if (def.max_inputs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("takes at least ", def.min_inputs, " ", inputs(def.min_inputs), ", got ", n));
  }
  if (def.min_inputs == def.max_inputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("takes ", def.min_inputs, " ", inputs(def.min_inputs), ", got ", n));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("takes ", def.min_inputs, " to ", def.max_inputs, " inputs, got ", n));
}

namespace {
bool TypeAccepted(AttrType expected, AttrType got) {
  return expected == got || (expected == AttrType::kFloat && got == AttrType::kInt) ||
         (expected == AttrType::kFloats && got == AttrType::kInts);
}
}  // namespace

absl::Status CheckAttrs(const OpDef& def, const AttrMap& attrs) {
  for (const auto& [name, value] : attrs) {
    const auto it = std::find_if(def.attrs.begin(), def.attrs.end(),
                                 [&n = name](const AttrDef& a) { return a.name == n; });
    if (it == def.attrs.end()) {
      std::vector<std::string> known;
      for (const AttrDef& a : def.attrs) known.push_back(a.name);
      return absl::InvalidArgumentError(
          absl::StrCat("unknown attribute ", Echo(name),
                       known.empty() ? " (it takes none)"
                                     : absl::StrCat(" (known: ", absl::StrJoin(known, ", "), ")")));
    }
    if (!TypeAccepted(it->type, TypeOf(value))) {
      return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' must be ",
                                                     AttrTypeName(it->type), ", got ",
                                                     AttrTypeName(TypeOf(value))));
    }
  }
  for (const AttrDef& a : def.attrs) {
    if (a.required && attrs.find(a.name) == attrs.end()) {
      return absl::InvalidArgumentError(absl::StrCat("missing required attribute '", a.name, "'"));
    }
  }
  return absl::OkStatus();
}

void ConvertIntsToFloats(const OpDef& def, AttrMap& attrs) {
  for (const AttrDef& a : def.attrs) {
    auto it = attrs.find(a.name);
    if (it == attrs.end()) continue;
    if (a.type == AttrType::kFloat) {
      if (const int64_t* v = std::get_if<int64_t>(&it->second)) {
        it->second = static_cast<double>(*v);
      }
    } else if (a.type == AttrType::kFloats) {
      if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) {
        it->second = std::vector<double>(v->begin(), v->end());
      }
    }
  }
}

}  // namespace internal

absl::string_view OpFamilyName(OpFamily family) {
  switch (family) {
    case OpFamily::kElementwise:
      return "elementwise";
    case OpFamily::kReduction:
      return "reduction";
    case OpFamily::kScan:
      return "scan";
    case OpFamily::kLinalg:
      return "linalg";
    case OpFamily::kShape:
      return "shape";
    case OpFamily::kCreation:
      return "creation";
    case OpFamily::kCustom:
      return "custom";
  }
  return "unknown";
}

namespace {

using Inputs = absl::Span<const ValueType>;
using InferFn = std::function<absl::StatusOr<InferredNode>(Inputs, AttrMap&)>;

template <typename... Args>
absl::Status Invalid(const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(args...));
}

InferredNode Inferred(DType dtype, Shape shape, DType compute) {
  return {.output = {.dtype = dtype, .shape = std::move(shape), .weak = false},
          .compute_dtype = compute};
}

// "(4, -1)": a dims list as NumPy prints a shape tuple. A list from a
// request may be long: past kMaxRank entries it is cut ("(1, 2, ..., 1000
// entries)").
std::string FormatDims(absl::Span<const int64_t> dims) {
  if (dims.size() == 1) return absl::StrCat("(", dims[0], ",)");
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return absl::StrCat("(", absl::StrJoin(dims.subspan(0, kMaxRank), ", "), ", ..., ", dims.size(),
                        " entries)");
  }
  return absl::StrCat("(", absl::StrJoin(dims, ", "), ")");
}

// How an input reads in an error message: its dtype, or "Python int" for a
// weak scalar.
std::string Describe(const ValueType& t) {
  if (!t.weak) return std::string(DTypeName(t.dtype));
  switch (KindOf(t.dtype)) {
    case DTypeKind::kBool:
      return "Python bool";
    case DTypeKind::kFloat:
      return "Python float";
    default:
      return "Python int";
  }
}

std::string DescribeAll(Inputs in) {
  std::vector<std::string> parts;
  for (const ValueType& t : in) parts.push_back(Describe(t));
  return absl::StrJoin(parts, " and ");
}

// Non-ufunc ops (reductions, shape ops, matmul, ...) see a Python scalar as
// NumPy's asarray does: a strong array of the literal's own dtype.
std::vector<ValueType> AsStrong(Inputs in) {
  std::vector<ValueType> out(in.begin(), in.end());
  for (ValueType& t : out) t.weak = false;
  return out;
}

// ---- attribute access (types were checked by CheckAttrs) -------------------

template <typename T>
std::optional<T> Get(const AttrMap& attrs, absl::string_view name) {
  const auto it = attrs.find(name);
  if (it == attrs.end()) return std::nullopt;
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  return std::nullopt;
}

// A float attribute, which may hold an int.
std::optional<double> GetFloat(const AttrMap& attrs, absl::string_view name) {
  const auto it = attrs.find(name);
  if (it == attrs.end()) return std::nullopt;
  if (const int64_t* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  if (const double* v = std::get_if<double>(&it->second)) return *v;
  return std::nullopt;
}

// ---- axes -----------------------------------------------------------------

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) {
    return Invalid("axis ", axis, " is out of bounds for array of dimension ", rank);
  }
  return axis < 0 ? axis + rank : axis;
}

// Normalised, sorted axes; an axis may not repeat.
absl::StatusOr<std::vector<int64_t>> NormalizeAxes(absl::Span<const int64_t> axes, int rank,
                                                   absl::string_view attr) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t axis : axes) {
    GPUFLOW_IR_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(axis, rank));
    out.push_back(a);
  }
  std::sort(out.begin(), out.end());
  if (auto dup = std::adjacent_find(out.begin(), out.end()); dup != out.end()) {
    return Invalid("'", attr, "' names axis ", *dup, " more than once");
  }
  return out;
}

std::vector<int64_t> AllAxes(int rank) {
  std::vector<int64_t> axes(rank);
  for (int i = 0; i < rank; ++i) axes[i] = i;
  return axes;
}

// `shape` without the (sorted, normalised) `axes`, or with them set to 1.
// Fails when a zero-length axis of an empty array is reduced away and the
// remaining dimensions multiply past kMaxElements: [0, 2^63 - 1] summed over
// axis 0 would be 2^63 - 1 elements.
absl::StatusOr<Shape> ReducedShape(const Shape& shape, absl::Span<const int64_t> axes,
                                   bool keepdims) {
  std::vector<int64_t> dims;
  for (int i = 0; i < shape.rank(); ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced) {
      dims.push_back(shape.dim(i));
    } else if (keepdims) {
      dims.push_back(1);
    }
  }
  absl::StatusOr<Shape> out = Shape::Create(dims);
  if (!out.ok()) return Invalid("result: ", out.status().message());
  return out;
}

bool ReducesNothing(const Shape& shape, absl::Span<const int64_t> axes) {
  for (int64_t a : axes) {
    if (shape.dim(static_cast<int>(a)) == 0) return true;
  }
  return false;
}

// Reads "axes" (every axis when absent) and "keepdims", and writes both back
// in canonical form.
struct ReductionAxes {
  std::vector<int64_t> axes;
  bool keepdims = false;
};
absl::StatusOr<ReductionAxes> CanonicalReductionAxes(const Shape& shape, AttrMap& attrs) {
  ReductionAxes r;
  if (std::optional<std::vector<int64_t>> axes = Get<std::vector<int64_t>>(attrs, "axes")) {
    GPUFLOW_IR_ASSIGN_OR_RETURN(r.axes, NormalizeAxes(*axes, shape.rank(), "axes"));
  } else {
    r.axes = AllAxes(shape.rank());
  }
  r.keepdims = Get<bool>(attrs, "keepdims").value_or(false);
  attrs["axes"] = r.axes;
  attrs["keepdims"] = r.keepdims;
  return r;
}

// sum/prod/cumsum/cumprod without a dtype: NumPy's platform ints (64-bit).
DType SumDType(DType dtype) {
  switch (KindOf(dtype)) {
    case DTypeKind::kBool:
    case DTypeKind::kSigned:
      return DType::kInt64;
    case DTypeKind::kUnsigned:
      return DType::kUInt64;
    case DTypeKind::kFloat:
      return dtype;
  }
  return dtype;
}

// mean/var/std: output dtype and accumulator dtype.
std::pair<DType, DType> MeanDTypes(DType dtype) {
  if (!IsFloat(dtype)) return {DType::kFloat64, DType::kFloat64};
  if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) return {dtype, DType::kFloat32};
  return {dtype, dtype};
}

// ---- elementwise ------------------------------------------------------------

enum class UnaryRule {
  kSame,         // same dtype
  kSameNoBool,   // same dtype; bool is an error
  kBoolToInt8,   // same dtype, bool -> int8 (NumPy has no bool loop)
  kFloat,        // FloatResultDType
  kPredicate,    // bool, computed in the input dtype
  kLogical,      // bool, computed in bool
  kIntegerOnly,  // same dtype; ints and bool only
};

InferFn UnaryInfer(std::string op, UnaryRule rule, std::string bool_hint = "") {
  return [op = std::move(op), rule, bool_hint = std::move(bool_hint)](
             Inputs in, AttrMap&) -> absl::StatusOr<InferredNode> {
    GPUFLOW_IR_ASSIGN_OR_RETURN(const DType d, PromoteTypes(in));
    const Shape& shape = in[0].shape;
    switch (rule) {
      case UnaryRule::kSame:
        return Inferred(d, shape, d);
      case UnaryRule::kSameNoBool:
        if (d == DType::kBool) return Invalid(op, " is not supported for bool", bool_hint);
        return Inferred(d, shape, d);
      case UnaryRule::kBoolToInt8: {
        const DType out = d == DType::kBool ? DType::kInt8 : d;
        return Inferred(out, shape, out);
      }
      case UnaryRule::kFloat: {
        const DType out = FloatResultDType(d);
        return Inferred(out, shape, out);
      }
      case UnaryRule::kPredicate:
        return Inferred(DType::kBool, shape, d);
      case UnaryRule::kLogical:
        return Inferred(DType::kBool, shape, DType::kBool);
      case UnaryRule::kIntegerOnly:
        if (IsFloat(d))
          return Invalid(op, " requires an integer or bool input, got ", Describe(in[0]));
        return Inferred(d, shape, d);
    }
    return Invalid("unhandled rule");
  };
}

enum class BinaryRule {
  kPromote,      // promoted dtype
  kNoBool,       // promoted; bool is an error (sub)
  kTrueDivide,   // promoted float, or float64 for ints and bool
  kBoolToInt8,   // promoted; bool -> int8 (floordiv, mod, pow)
  kFloat,        // FloatLoopDType (NumPy's float-only loops)
  kCompare,      // bool, computed in the promoted dtype
  kLogical,      // bool, computed in bool
  kIntegerOnly,  // promoted; ints and bool only
};

InferFn BinaryInfer(std::string op, BinaryRule rule, std::string bool_hint = "") {
  return [op = std::move(op), rule, bool_hint = std::move(bool_hint)](
             Inputs in, AttrMap&) -> absl::StatusOr<InferredNode> {
    GPUFLOW_IR_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(in[0].shape, in[1].shape));
    GPUFLOW_IR_ASSIGN_OR_RETURN(const DType p, PromoteTypes(in));
    switch (rule) {
      case BinaryRule::kPromote:
        return Inferred(p, std::move(shape), p);
      case BinaryRule::kNoBool:
        if (p == DType::kBool) return Invalid(op, " is not supported for bool", bool_hint);
        return Inferred(p, std::move(shape), p);
      case BinaryRule::kTrueDivide: {
        const DType out = IsFloat(p) ? p : DType::kFloat64;
        return Inferred(out, std::move(shape), out);
      }
      case BinaryRule::kBoolToInt8: {
        const DType out = p == DType::kBool ? DType::kInt8 : p;
        return Inferred(out, std::move(shape), out);
      }
      case BinaryRule::kFloat: {
        GPUFLOW_IR_ASSIGN_OR_RETURN(const DType out, FloatLoopDType(in));
        return Inferred(out, std::move(shape), out);
      }
      case BinaryRule::kCompare:
        return Inferred(DType::kBool, std::move(shape), p);
      case BinaryRule::kLogical:
        return Inferred(DType::kBool, std::move(shape), DType::kBool);
      case BinaryRule::kIntegerOnly:
        if (IsFloat(p)) {
          return Invalid(op, " requires integer or bool inputs, got ", DescribeAll(in),
                         IsFloat(in[0].dtype) || IsFloat(in[1].dtype)
                             ? ""
                             : absl::StrCat(" (which promote to ", DTypeName(p), ")"));
        }
        return Inferred(p, std::move(shape), p);
    }
    return Invalid("unhandled rule");
  };
}

absl::StatusOr<InferredNode> InferWhere(Inputs in, AttrMap&) {
  const Shape shapes[] = {in[0].shape, in[1].shape, in[2].shape};
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(shapes));
  GPUFLOW_IR_ASSIGN_OR_RETURN(const DType p, PromoteTypes(in.subspan(1)));
  return Inferred(p, std::move(shape), p);
}

absl::StatusOr<InferredNode> InferClip(Inputs in, AttrMap&) {
  const Shape shapes[] = {in[0].shape, in[1].shape, in[2].shape};
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(shapes));
  GPUFLOW_IR_ASSIGN_OR_RETURN(const DType p, PromoteTypes(in));
  return Inferred(p, std::move(shape), p);
}

absl::StatusOr<InferredNode> InferCast(Inputs in, AttrMap& attrs) {
  const DType dtype = *Get<DType>(attrs, "dtype");
  return Inferred(dtype, in[0].shape, dtype);
}

// ---- reductions and scans -----------------------------------------------------

enum class ReductionRule { kSum, kMinMax, kMean, kVariance, kAnyAll, kLogSumExp };

InferFn ReductionInfer(std::string op, ReductionRule rule) {
  return [op = std::move(op), rule](Inputs in, AttrMap& attrs) -> absl::StatusOr<InferredNode> {
    const DType d = in[0].dtype;
    const Shape& shape = in[0].shape;
    GPUFLOW_IR_ASSIGN_OR_RETURN(const ReductionAxes r, CanonicalReductionAxes(shape, attrs));
    GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out_shape, ReducedShape(shape, r.axes, r.keepdims));
    const std::optional<DType> dtype = Get<DType>(attrs, "dtype");
    attrs.erase("dtype");
    switch (rule) {
      case ReductionRule::kSum: {
        const DType out = dtype.value_or(SumDType(d));
        return Inferred(out, std::move(out_shape), out);
      }
      case ReductionRule::kMinMax:
        if (ReducesNothing(shape, r.axes)) {
          return Invalid("zero-size array to reduction operation ", op, " which has no identity");
        }
        return Inferred(d, std::move(out_shape), d);
      case ReductionRule::kMean:
      case ReductionRule::kVariance: {
        if (rule == ReductionRule::kVariance) {
          const double ddof = GetFloat(attrs, "ddof").value_or(0.0);
          if (!std::isfinite(ddof)) return Invalid("ddof must be finite, got ", ddof);
          attrs["ddof"] = ddof;
        }
        if (dtype.has_value()) return Inferred(*dtype, std::move(out_shape), *dtype);
        const auto [out, compute] = MeanDTypes(d);
        return Inferred(out, std::move(out_shape), compute);
      }
      case ReductionRule::kAnyAll:
        return Inferred(DType::kBool, std::move(out_shape), DType::kBool);
      case ReductionRule::kLogSumExp: {
        const DType out = FloatResultDType(d);
        return Inferred(out, std::move(out_shape), out);
      }
    }
    return Invalid("unhandled rule");
  };
}

InferFn ArgReductionInfer(std::string op) {
  return [op = std::move(op)](Inputs in, AttrMap& attrs) -> absl::StatusOr<InferredNode> {
    const Shape& shape = in[0].shape;
    const bool keepdims = Get<bool>(attrs, "keepdims").value_or(false);
    attrs["keepdims"] = keepdims;
    const std::optional<int64_t> axis_attr = Get<int64_t>(attrs, "axis");
    if (!axis_attr.has_value()) {
      if (shape.num_elements() == 0) return Invalid("attempt to get ", op, " of an empty sequence");
      std::vector<int64_t> ones(keepdims ? shape.rank() : 0, 1);
      GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(ones));
      return Inferred(DType::kInt64, std::move(out), in[0].dtype);
    }
    GPUFLOW_IR_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(*axis_attr, shape.rank()));
    attrs["axis"] = axis;
    if (shape.dim(static_cast<int>(axis)) == 0) {
      return Invalid("attempt to get ", op, " of an empty sequence");
    }
    const int64_t axes[] = {axis};
    GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, ReducedShape(shape, axes, keepdims));
    return Inferred(DType::kInt64, std::move(out), in[0].dtype);
  };
}

absl::StatusOr<InferredNode> InferSoftmax(Inputs in, AttrMap& attrs) {
  GPUFLOW_IR_ASSIGN_OR_RETURN(
      const int64_t axis,
      NormalizeAxis(Get<int64_t>(attrs, "axis").value_or(-1), in[0].shape.rank()));
  attrs["axis"] = axis;
  const DType out = FloatResultDType(in[0].dtype);
  return Inferred(out, in[0].shape, out);
}

absl::StatusOr<InferredNode> InferScan(Inputs in, AttrMap& attrs) {
  const Shape& shape = in[0].shape;
  const DType out = Get<DType>(attrs, "dtype").value_or(SumDType(in[0].dtype));
  attrs.erase("dtype");
  const std::optional<int64_t> axis_attr = Get<int64_t>(attrs, "axis");
  if (!axis_attr.has_value()) {
    GPUFLOW_IR_ASSIGN_OR_RETURN(Shape flat, Shape::Create({shape.num_elements()}));
    return Inferred(out, std::move(flat), out);
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(*axis_attr, shape.rank()));
  attrs["axis"] = axis;
  return Inferred(out, shape, out);
}

// ---- linear algebra -----------------------------------------------------------

absl::StatusOr<InferredNode> InferMatmul(Inputs in, AttrMap&) {
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  for (int i = 0; i < 2; ++i) {
    if (in[i].shape.rank() == 0) {
      return Invalid("matmul: input operand ", i,
                     " does not have enough dimensions (0-d; use mul for scalars)");
    }
  }
  // 1-D operands become a row (a) or a column (b) matrix.
  std::vector<int64_t> ad(a.dims().begin(), a.dims().end());
  std::vector<int64_t> bd(b.dims().begin(), b.dims().end());
  if (a.rank() == 1) ad.insert(ad.begin(), 1);
  if (b.rank() == 1) bd.push_back(1);
  const int64_t n = ad[ad.size() - 2], k = ad.back();
  const int64_t k2 = bd[bd.size() - 2], m = bd.back();
  if (k != k2) {
    return Invalid("matmul: shapes ", a.ToString(), " and ", b.ToString(), " are not aligned: ", k,
                   " (dim ", a.rank() - 1, " of operand 0) != ", k2, " (dim ",
                   b.rank() == 1 ? 0 : b.rank() - 2, " of operand 1)");
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(const Shape batch_a,
                              Shape::Create(absl::MakeConstSpan(ad).subspan(0, ad.size() - 2)));
  GPUFLOW_IR_ASSIGN_OR_RETURN(const Shape batch_b,
                              Shape::Create(absl::MakeConstSpan(bd).subspan(0, bd.size() - 2)));
  absl::StatusOr<Shape> batch = BroadcastShapes(batch_a, batch_b);
  if (!batch.ok() && !absl::StrContains(batch.status().message(), "cannot be broadcast")) {
    return Invalid("matmul: batch dimensions: ", batch.status().message());
  }
  if (!batch.ok()) {
    return Invalid("matmul: batch dimensions of ", a.ToString(), " and ", b.ToString(),
                   " cannot be broadcast together");
  }
  std::vector<int64_t> out(batch->dims().begin(), batch->dims().end());
  if (a.rank() > 1) out.push_back(n);
  if (b.rank() > 1) out.push_back(m);
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out_shape, Shape::Create(out));
  const DType dtype = PromoteDTypes(in[0].dtype, in[1].dtype);
  return Inferred(dtype, std::move(out_shape), dtype);
}

absl::StatusOr<InferredNode> InferDot(Inputs in, AttrMap&) {
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  for (int i = 0; i < 2; ++i) {
    if (in[i].shape.rank() > 2) {
      return Invalid("dot supports operands of rank <= 2, operand ", i, " has rank ",
                     in[i].shape.rank(), " (use matmul)");
    }
  }
  // NumPy converts Python scalars to arrays before dot: they count as strong.
  const DType dtype = PromoteDTypes(in[0].dtype, in[1].dtype);
  if (a.rank() == 0 || b.rank() == 0) {
    return Inferred(dtype, a.rank() == 0 ? b : a, dtype);  // multiplication
  }
  const int a_axis = a.rank() - 1;
  const int64_t k = a.dim(a_axis);
  const int64_t k2 = b.dim(0);
  if (k != k2) {
    return Invalid("shapes ", a.ToString(), " and ", b.ToString(), " not aligned: ", k, " (dim ",
                   a_axis, ") != ", k2, " (dim 0)");
  }
  std::vector<int64_t> out;
  if (a.rank() == 2) out.push_back(a.dim(0));
  if (b.rank() == 2) out.push_back(b.dim(1));
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out_shape, Shape::Create(out));
  return Inferred(dtype, std::move(out_shape), dtype);
}

// ---- shape ops ----------------------------------------------------------------

absl::StatusOr<InferredNode> InferReshape(Inputs in, AttrMap& attrs) {
  const Shape& shape = in[0].shape;
  const std::vector<int64_t> requested = *Get<std::vector<int64_t>>(attrs, "shape");
  if (requested.size() > static_cast<size_t>(kMaxRank)) {
    return Invalid("shape has ", requested.size(), " dimensions, more than the maximum of ",
                   kMaxRank);
  }
  std::vector<int64_t> dims = requested;
  const auto cannot = [&] {
    return Invalid("cannot reshape array of size ", shape.num_elements(), " into shape ",
                   FormatDims(requested));
  };
  int unknown = -1;
  int64_t known = 1;  // product of the other dims, saturated above kMaxElements
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (unknown >= 0) return Invalid("can only specify one unknown dimension (-1)");
      unknown = static_cast<int>(i);
    } else if (dims[i] < 0) {
      return Invalid("negative dimension ", dims[i], " in shape ", FormatDims(dims));
    } else if (dims[i] == 0 || known == 0) {
      known = 0;
    } else {
      known = known > kMaxElements / dims[i] ? kMaxElements + 1 : known * dims[i];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || shape.num_elements() % known != 0) return cannot();
    dims[unknown] = shape.num_elements() / known;
  } else if (known != shape.num_elements()) {
    return cannot();
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  attrs["shape"] = dims;
  return Inferred(in[0].dtype, std::move(out), in[0].dtype);
}

absl::StatusOr<InferredNode> InferTranspose(Inputs in, AttrMap& attrs) {
  const Shape& shape = in[0].shape;
  const int rank = shape.rank();
  std::vector<int64_t> perm;
  if (std::optional<std::vector<int64_t>> axes = Get<std::vector<int64_t>>(attrs, "axes")) {
    if (static_cast<int>(axes->size()) != rank) {
      return Invalid("axes ", FormatDims(*axes), " don't match an array of rank ", rank);
    }
    std::vector<bool> seen(rank, false);
    for (int64_t axis : *axes) {
      GPUFLOW_IR_ASSIGN_OR_RETURN(const int64_t a, NormalizeAxis(axis, rank));
      if (seen[a]) return Invalid("repeated axis ", a, " in transpose axes ", FormatDims(*axes));
      seen[a] = true;
      perm.push_back(a);
    }
  } else {
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<int64_t> dims;
  for (int64_t a : perm) dims.push_back(shape.dim(static_cast<int>(a)));
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  attrs["axes"] = perm;
  return Inferred(in[0].dtype, std::move(out), in[0].dtype);
}

absl::StatusOr<InferredNode> InferBroadcastTo(Inputs in, AttrMap& attrs) {
  const std::vector<int64_t> dims = *Get<std::vector<int64_t>>(attrs, "shape");
  for (int64_t d : dims) {
    if (d < 0) return Invalid("negative dimension ", d, " in shape ", FormatDims(dims));
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  GPUFLOW_IR_RETURN_IF_ERROR(CheckBroadcastableTo(in[0].shape, out));
  return Inferred(in[0].dtype, std::move(out), in[0].dtype);
}

absl::StatusOr<InferredNode> InferExpandDims(Inputs in, AttrMap& attrs) {
  const Shape& shape = in[0].shape;
  const std::vector<int64_t> given = *Get<std::vector<int64_t>>(attrs, "axes");
  if (given.size() > static_cast<size_t>(kMaxRank - shape.rank())) {
    return Invalid("expand_dims to rank ", static_cast<int64_t>(shape.rank() + given.size()),
                   " is over the maximum of ", kMaxRank);
  }
  const int out_rank = shape.rank() + static_cast<int>(given.size());
  GPUFLOW_IR_ASSIGN_OR_RETURN(const std::vector<int64_t> axes,
                              NormalizeAxes(given, out_rank, "axes"));
  std::vector<int64_t> dims;
  int next = 0;
  for (int i = 0; i < out_rank; ++i) {
    dims.push_back(std::binary_search(axes.begin(), axes.end(), i) ? 1 : shape.dim(next++));
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  attrs["axes"] = axes;
  return Inferred(in[0].dtype, std::move(out), in[0].dtype);
}

absl::StatusOr<InferredNode> InferSqueeze(Inputs in, AttrMap& attrs) {
  const Shape& shape = in[0].shape;
  std::vector<int64_t> axes;
  if (std::optional<std::vector<int64_t>> given = Get<std::vector<int64_t>>(attrs, "axes")) {
    GPUFLOW_IR_ASSIGN_OR_RETURN(axes, NormalizeAxes(*given, shape.rank(), "axes"));
    for (int64_t a : axes) {
      if (shape.dim(static_cast<int>(a)) != 1) {
        return Invalid("cannot squeeze axis ", a, " of size ", shape.dim(static_cast<int>(a)),
                       " (only axes of size 1)");
      }
    }
  } else {
    for (int i = 0; i < shape.rank(); ++i) {
      if (shape.dim(i) == 1) axes.push_back(i);
    }
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, ReducedShape(shape, axes, /*keepdims=*/false));
  attrs["axes"] = axes;
  return Inferred(in[0].dtype, std::move(out), in[0].dtype);
}

// Python's slice.indices(): the first index taken and the count, for one axis
// of size `len` (step != 0). Bounds are clamped; no arithmetic overflows for
// any int64 start, stop and step.
std::pair<int64_t, int64_t> SliceAxis(int64_t start, int64_t stop, int64_t step, int64_t len) {
  const auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v = v < -len ? lo : v + len;  // v + len cannot overflow: v >= -len
    return std::clamp(v, lo, hi);
  };
  if (step > 0) {
    start = clamp(start, 0, len);
    stop = clamp(stop, 0, len);
    if (start >= stop) return {0, 0};
    const uint64_t span = static_cast<uint64_t>(stop - start);
    return {start, static_cast<int64_t>((span - 1) / static_cast<uint64_t>(step) + 1)};
  }
  start = clamp(start, -1, len - 1);
  stop = clamp(stop, -1, len - 1);
  if (stop >= start) return {0, 0};
  const uint64_t span = static_cast<uint64_t>(start - stop);
  const uint64_t magnitude = 0 - static_cast<uint64_t>(step);  // exact for INT64_MIN too
  return {start, static_cast<int64_t>((span - 1) / magnitude + 1)};
}

absl::StatusOr<InferredNode> InferSlice(Inputs in, AttrMap& attrs) {
  const Shape& shape = in[0].shape;
  const int rank = shape.rank();
  const std::vector<int64_t> starts = *Get<std::vector<int64_t>>(attrs, "starts");
  const std::vector<int64_t> stops = *Get<std::vector<int64_t>>(attrs, "stops");
  const size_t k = starts.size();
  const std::vector<int64_t> steps =
      Get<std::vector<int64_t>>(attrs, "steps").value_or(std::vector<int64_t>(k, 1));
  if (stops.size() != k || steps.size() != k) {
    return Invalid("'starts', 'stops' and 'steps' must have the same length, got ", k, ", ",
                   stops.size(), " and ", steps.size());
  }
  std::vector<int64_t> axes;
  if (std::optional<std::vector<int64_t>> given = Get<std::vector<int64_t>>(attrs, "axes")) {
    if (given->size() != k) {
      return Invalid("'axes' must have one entry per start (", k, "), got ", given->size());
    }
    for (int64_t axis : *given) {
      GPUFLOW_IR_ASSIGN_OR_RETURN(const int64_t a, NormalizeAxis(axis, rank));
      if (std::find(axes.begin(), axes.end(), a) != axes.end()) {
        return Invalid("'axes' names axis ", a, " more than once");
      }
      axes.push_back(a);
    }
  } else {
    if (static_cast<int64_t>(k) > rank) {
      return Invalid("too many indices: ", k, " slices for an array of dimension ", rank);
    }
    axes = AllAxes(static_cast<int>(k));
  }
  std::vector<int64_t> first(rank, 0), step_out(rank, 1),
      dims(shape.dims().begin(), shape.dims().end());
  for (size_t i = 0; i < k; ++i) {
    if (steps[i] == 0) return Invalid("slice step cannot be zero");
    const int a = static_cast<int>(axes[i]);
    const auto [start, count] = SliceAxis(starts[i], stops[i], steps[i], shape.dim(a));
    first[a] = count == 0 ? 0 : start;
    step_out[a] = steps[i];
    dims[a] = count;
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  attrs.erase("stops");
  attrs.erase("axes");
  attrs["starts"] = first;
  attrs["steps"] = step_out;
  return Inferred(in[0].dtype, std::move(out), in[0].dtype);
}

absl::StatusOr<InferredNode> InferConcatenate(Inputs in, AttrMap& attrs) {
  const Shape& first = in[0].shape;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].shape.rank() == 0) {
      return Invalid("zero-dimensional arrays cannot be concatenated (input ", i, ")");
    }
    if (in[i].shape.rank() != first.rank()) {
      return Invalid(
          "all the input arrays must have the same number of dimensions, but input 0 "
          "has ",
          first.rank(), " and input ", i, " has ", in[i].shape.rank());
    }
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(const int64_t axis,
                              NormalizeAxis(Get<int64_t>(attrs, "axis").value_or(0), first.rank()));
  std::vector<int64_t> dims(first.dims().begin(), first.dims().end());
  dims[axis] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    for (int d = 0; d < s.rank(); ++d) {
      if (d != axis && s.dim(d) != first.dim(d)) {
        return Invalid(
            "all the input array dimensions except for the concatenation axis must "
            "match exactly, but along dimension ",
            d, ", input 0 has size ", first.dim(d), " and input ", i, " has size ", s.dim(d));
      }
    }
    // An axis of an empty input may be as long as INT64_MAX: check before
    // adding.
    if (s.dim(static_cast<int>(axis)) > kMaxElements - dims[axis]) {
      return Invalid("concatenated axis is too long (more than 2^62)");
    }
    dims[axis] += s.dim(static_cast<int>(axis));
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  GPUFLOW_IR_ASSIGN_OR_RETURN(const DType dtype, PromoteTypes(AsStrong(in)));
  attrs["axis"] = axis;
  return Inferred(dtype, std::move(out), dtype);
}

absl::StatusOr<InferredNode> InferStack(Inputs in, AttrMap& attrs) {
  const Shape& first = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) {
    if (!(in[i].shape == first)) {
      return Invalid("all input arrays must have the same shape, but input 0 has shape ",
                     first.ToString(), " and input ", i, " has shape ", in[i].shape.ToString());
    }
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(
      const int64_t axis, NormalizeAxis(Get<int64_t>(attrs, "axis").value_or(0), first.rank() + 1));
  std::vector<int64_t> dims(first.dims().begin(), first.dims().end());
  dims.insert(dims.begin() + axis, static_cast<int64_t>(in.size()));
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  GPUFLOW_IR_ASSIGN_OR_RETURN(const DType dtype, PromoteTypes(AsStrong(in)));
  attrs["axis"] = axis;
  return Inferred(dtype, std::move(out), dtype);
}

// ---- creation -------------------------------------------------------------------

absl::StatusOr<Shape> ShapeAttr(const AttrMap& attrs) {
  const std::vector<int64_t> dims = *Get<std::vector<int64_t>>(attrs, "shape");
  for (int64_t d : dims) {
    if (d < 0) return Invalid("negative dimension ", d, " in shape ", FormatDims(dims));
  }
  return Shape::Create(dims);
}

absl::StatusOr<InferredNode> InferFull(Inputs in, AttrMap& attrs) {
  if (in[0].shape.rank() != 0) {
    return Invalid("the fill value must be 0-d, got shape ", in[0].shape.ToString());
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape shape, ShapeAttr(attrs));
  // A Python scalar keeps its literal dtype: int64 (uint64 above INT64_MAX),
  // float64 or bool, as numpy.full does.
  const DType dtype = Get<DType>(attrs, "dtype").value_or(in[0].dtype);
  attrs["dtype"] = dtype;
  return Inferred(dtype, std::move(shape), dtype);
}

absl::StatusOr<InferredNode> InferArange(Inputs, AttrMap& attrs) {
  const auto is_int = [&](absl::string_view name) {
    const auto it = attrs.find(name);
    return it == attrs.end() || std::holds_alternative<int64_t>(it->second);
  };
  const bool all_ints = is_int("start") && is_int("stop") && is_int("step");
  const DType dtype =
      Get<DType>(attrs, "dtype").value_or(all_ints ? DType::kInt64 : DType::kFloat64);
  int64_t length = 0;
  if (all_ints) {
    // Exact, as Python computes len(range(start, stop, step)).
    const __int128 start = Get<int64_t>(attrs, "start").value_or(0);
    const __int128 stop = *Get<int64_t>(attrs, "stop");
    const __int128 step = Get<int64_t>(attrs, "step").value_or(1);
    if (step == 0) return Invalid("arange step must not be zero");
    const __int128 span = step > 0 ? stop - start : start - stop;
    const __int128 magnitude = step > 0 ? step : -step;
    const __int128 n = span <= 0 ? 0 : (span - 1) / magnitude + 1;
    if (n > kMaxElements)
      return Invalid("arange has too many elements (", static_cast<double>(n), ")");
    length = static_cast<int64_t>(n);
    // NumPy 2 converts the first two values (start, start + step) to the
    // dtype as Python integers, and so rejects those out of bounds.
    if (IsInteger(dtype)) {
      GPUFLOW_IR_RETURN_IF_ERROR(CheckIntFitsDType(static_cast<int64_t>(start), dtype));
      if (length > 1) {
        const __int128 second = start + step;  // within int64: the range has two elements
        GPUFLOW_IR_RETURN_IF_ERROR(CheckIntFitsDType(static_cast<int64_t>(second), dtype));
      }
    }
  } else {
    const double start = GetFloat(attrs, "start").value_or(0);
    const double stop = *GetFloat(attrs, "stop");
    const double step = GetFloat(attrs, "step").value_or(1);
    if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step)) {
      return Invalid("arange start, stop and step must be finite, got ", start, ", ", stop, ", ",
                     step);
    }
    if (step == 0) return Invalid("arange step must not be zero");
    const double n = std::ceil((stop - start) / step);
    if (!(n < static_cast<double>(kMaxElements))) {
      return Invalid("arange has too many elements (", n, ")");
    }
    length = n > 0 ? static_cast<int64_t>(n) : 0;
  }
  if (dtype == DType::kBool && length > 2) {
    return Invalid("arange of bool is limited to 2 elements (as in NumPy), got ", length);
  }
  attrs["dtype"] = dtype;
  attrs["start"] = GetFloat(attrs, "start").value_or(0);
  attrs["stop"] = *GetFloat(attrs, "stop");
  attrs["step"] = GetFloat(attrs, "step").value_or(1);
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape shape, Shape::Create({length}));
  return Inferred(dtype, std::move(shape), dtype);
}

// random_uniform and random_normal: "shape", "seed", a float "dtype" and two
// float parameters with defaults.
struct RandomParams {
  const char* first;
  double first_default;
  const char* second;
  double second_default;
};

InferFn RandomInfer(std::string op, RandomParams params) {
  return [op = std::move(op), params](Inputs, AttrMap& attrs) -> absl::StatusOr<InferredNode> {
    GPUFLOW_IR_ASSIGN_OR_RETURN(Shape shape, ShapeAttr(attrs));
    const DType dtype = Get<DType>(attrs, "dtype").value_or(DType::kFloat32);
    if (!IsFloat(dtype)) return Invalid(op, " requires a float dtype, got ", DTypeName(dtype));
    const double a = GetFloat(attrs, params.first).value_or(params.first_default);
    const double b = GetFloat(attrs, params.second).value_or(params.second_default);
    if (!std::isfinite(a) || !std::isfinite(b)) {
      return Invalid("'", params.first, "' and '", params.second, "' must be finite, got ", a,
                     " and ", b);
    }
    if (op == "random_uniform" && !std::isfinite(b - a)) {
      return Invalid("high - low is not finite (", a, " to ", b, ")");
    }
    if (op == "random_normal" && b < 0) return Invalid("std must be >= 0, got ", b);
    attrs["dtype"] = dtype;
    attrs[params.first] = a;
    attrs[params.second] = b;
    return Inferred(dtype, std::move(shape), dtype);
  };
}

// ---- custom kernels -------------------------------------------------------------

absl::StatusOr<InferredNode> InferElementwiseKernel(Inputs in, AttrMap& attrs) {
  GPUFLOW_IR_ASSIGN_OR_RETURN(const KernelSignature sig,
                              ResolveKernelSignature(in, attrs, KernelForm::kElementwise));
  const int64_t output = Get<int64_t>(attrs, "output").value_or(0);
  if (output < 0 || output >= static_cast<int64_t>(sig.out.size())) {
    return Invalid("'output' must be in [0, ", sig.out.size(), "), got ", output);
  }
  attrs["output"] = output;
  for (const char* name : {"preamble", "loop_prep", "after_loop"}) {
    if (!attrs.contains(name)) attrs[name] = std::string();
  }
  if (!attrs.contains("name")) attrs["name"] = std::string("kernel");
  const DType dtype = sig.out_dtypes[output];
  return Inferred(dtype, sig.shape, dtype);
}

absl::StatusOr<InferredNode> InferReductionKernel(Inputs in, AttrMap& attrs) {
  GPUFLOW_IR_ASSIGN_OR_RETURN(const KernelSignature sig,
                              ResolveKernelSignature(in, attrs, KernelForm::kReduction));
  GPUFLOW_IR_ASSIGN_OR_RETURN(const ReductionAxes r, CanonicalReductionAxes(sig.shape, attrs));
  if (!attrs.contains("name")) attrs["name"] = std::string("reduce_kernel");
  if (!attrs.contains("preamble")) attrs["preamble"] = std::string();
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, ReducedShape(sig.shape, r.axes, r.keepdims));
  const DType dtype = sig.out_dtypes[0];
  return Inferred(dtype, std::move(out), sig.reduce_dtype);
}

absl::StatusOr<InferredNode> InferRawKernel(Inputs in, AttrMap& attrs) {
  // The extern "C" function to launch: a C identifier (which also keeps the
  // backend's messages about it short and plain).
  const std::string name = *Get<std::string>(attrs, "name");
  const bool identifier = !name.empty() && name.size() <= 1024 &&
                          !absl::ascii_isdigit(static_cast<unsigned char>(name[0])) &&
                          std::all_of(name.begin(), name.end(), [](char c) {
                            return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
                          });
  if (!identifier) return Invalid("'name' ", Echo(name), " is not a C identifier");
  for (const char* name : {"grid", "block"}) {
    const std::vector<int64_t> dims = *Get<std::vector<int64_t>>(attrs, name);
    if (dims.empty() || dims.size() > 3) {
      return Invalid("'", name, "' must have 1 to 3 entries, got ", dims.size());
    }
    for (int64_t d : dims) {
      if (d < 1 || d > std::numeric_limits<int32_t>::max()) {
        return Invalid("'", name, "' entries must be in [1, 2^31), got ", FormatDims(dims));
      }
    }
  }
  const std::vector<int64_t> block = *Get<std::vector<int64_t>>(attrs, "block");
  // Entries are below 2^31: three of them multiply exactly in 128 bits.
  unsigned __int128 threads = 1;
  for (int64_t d : block) threads *= static_cast<uint64_t>(d);
  if (threads > 1024) {
    return Invalid("'block' ", FormatDims(block), " has ", static_cast<double>(threads),
                   " threads; a block has at most 1024");
  }
  const int64_t shared_mem = Get<int64_t>(attrs, "shared_mem").value_or(0);
  if (shared_mem < 0) return Invalid("'shared_mem' must be >= 0, got ", shared_mem);
  attrs["shared_mem"] = shared_mem;
  if (!attrs.contains("options")) attrs["options"] = std::vector<std::string>();
  const int64_t output = *Get<int64_t>(attrs, "output");
  if (output < 0 || output >= static_cast<int64_t>(in.size())) {
    return Invalid("'output' must index one of the ", in.size(), " arguments, got ", output);
  }
  const ValueType& out = in[output];
  if (out.weak) {
    return Invalid("argument ", output, " ('output') must be an array, got a Python scalar");
  }
  return Inferred(out.dtype, out.shape, out.dtype);
}

// ---- the table --------------------------------------------------------------------

AttrDef Attr(std::string name, AttrType type, bool required, std::string doc) {
  return {.name = std::move(name), .type = type, .required = required, .doc = std::move(doc)};
}

OpDef MakeOp(std::string name, OpFamily family, int min_inputs, int max_inputs,
             std::vector<AttrDef> attrs, std::string doc, InferFn infer) {
  OpDef def{.name = std::move(name),
            .family = family,
            .min_inputs = min_inputs,
            .max_inputs = max_inputs,
            .attrs = std::move(attrs),
            .doc = std::move(doc),
            .infer = nullptr};
  def.infer = [proto = def, infer = std::move(infer)](
                  Inputs inputs, AttrMap& attrs) -> absl::StatusOr<InferredNode> {
    GPUFLOW_IR_RETURN_IF_ERROR(internal::CheckArity(proto, inputs.size()));
    GPUFLOW_IR_RETURN_IF_ERROR(internal::CheckAttrs(proto, attrs));
    AttrMap work = attrs;
    GPUFLOW_IR_ASSIGN_OR_RETURN(InferredNode node, infer(inputs, work));
    internal::ConvertIntsToFloats(proto, work);
    attrs = std::move(work);
    return node;
  };
  return def;
}

std::vector<OpDef> BuildOps() {
  std::vector<OpDef> ops;
  const auto elementwise = [&](std::string name, int arity, std::string doc, InferFn infer) {
    ops.push_back(MakeOp(std::move(name), OpFamily::kElementwise, arity, arity, {}, std::move(doc),
                         std::move(infer)));
  };
  const auto unary = [&](const std::string& name, UnaryRule rule, std::string doc,
                         std::string bool_hint = "") {
    elementwise(name, 1, std::move(doc), UnaryInfer(name, rule, std::move(bool_hint)));
  };
  const auto binary = [&](const std::string& name, BinaryRule rule, std::string doc,
                          std::string bool_hint = "") {
    elementwise(name, 2, std::move(doc), BinaryInfer(name, rule, std::move(bool_hint)));
  };

  // Unary elementwise.
  unary("neg", UnaryRule::kSameNoBool, "-x; same dtype", "; use logical_not");
  unary("abs", UnaryRule::kSame, "|x|; same dtype");
  unary("sign", UnaryRule::kSameNoBool, "-1, 0 or 1 (NaN for NaN); same dtype");
  unary("square", UnaryRule::kBoolToInt8, "x * x; same dtype (bool -> int8)");
  const char* float_rule =
      "; floats keep their dtype, bool/int8/uint8 -> float16, int16/uint16 -> float32, wider "
      "ints -> float64";
  for (const auto& [name, what] :
       std::vector<std::pair<std::string, std::string>>{{"sqrt", "square root"},
                                                        {"rsqrt", "1 / sqrt(x)"},
                                                        {"exp", "e^x"},
                                                        {"log", "natural logarithm"},
                                                        {"log1p", "log(1 + x)"},
                                                        {"expm1", "e^x - 1"},
                                                        {"sin", "sine"},
                                                        {"cos", "cosine"},
                                                        {"tanh", "hyperbolic tangent"},
                                                        {"sigmoid", "1 / (1 + e^-x)"},
                                                        {"gelu", "x * Phi(x) (exact, with erf)"},
                                                        {"erf", "error function"}}) {
    unary(name, UnaryRule::kFloat, what + float_rule);
  }
  unary("floor", UnaryRule::kSameNoBool, "largest integer <= x; same dtype (ints unchanged)");
  unary("ceil", UnaryRule::kSameNoBool, "smallest integer >= x; same dtype (ints unchanged)");
  unary("round", UnaryRule::kSameNoBool, "round half to even; same dtype (ints unchanged)");
  unary("relu", UnaryRule::kSameNoBool, "maximum(x, 0); same dtype");
  unary("reciprocal", UnaryRule::kBoolToInt8,
        "1 / x; same dtype (bool -> int8); for ints truncated, 0 for x == 0");
  unary("isnan", UnaryRule::kPredicate, "x is NaN; bool");
  unary("isinf", UnaryRule::kPredicate, "x is +-inf; bool");
  unary("logical_not", UnaryRule::kLogical, "x == 0; bool");
  unary("bitwise_not", UnaryRule::kIntegerOnly, "~x; ints and bool (logical not)");

  // Binary elementwise.
  binary("add", BinaryRule::kPromote, "x + y; promoted dtype (bool: logical or)");
  binary("sub", BinaryRule::kNoBool, "x - y; promoted dtype", "; use logical_xor or bitwise_xor");
  binary("mul", BinaryRule::kPromote, "x * y; promoted dtype (bool: logical and)");
  binary("div", BinaryRule::kTrueDivide,
         "true division x / y; the promoted float dtype, float64 for ints and bool");
  binary("floordiv", BinaryRule::kBoolToInt8,
         "floor(x / y) as numpy.floor_divide; promoted dtype (bool -> int8); int division by "
         "zero gives 0");
  binary("mod", BinaryRule::kBoolToInt8,
         "x mod y with the sign of y, as numpy.remainder; promoted dtype (bool -> int8); int "
         "division by zero gives 0");
  binary("pow", BinaryRule::kBoolToInt8,
         "x ** y; promoted dtype (bool -> int8); an int to a negative literal int power is an "
         "error");
  binary("maximum", BinaryRule::kPromote, "larger of x and y (NaN propagates); promoted dtype");
  binary("minimum", BinaryRule::kPromote, "smaller of x and y (NaN propagates); promoted dtype");
  binary("atan2", BinaryRule::kFloat,
         "arctangent of x / y; the smallest float dtype both inputs convert to safely");
  for (const auto& [name, what] :
       std::vector<std::pair<std::string, std::string>>{{"eq", "x == y"},
                                                        {"ne", "x != y"},
                                                        {"lt", "x < y"},
                                                        {"le", "x <= y"},
                                                        {"gt", "x > y"},
                                                        {"ge", "x >= y"}}) {
    binary(name, BinaryRule::kCompare, what + "; bool, compared in the promoted dtype");
  }
  binary("logical_and", BinaryRule::kLogical, "x != 0 and y != 0; bool");
  binary("logical_or", BinaryRule::kLogical, "x != 0 or y != 0; bool");
  binary("logical_xor", BinaryRule::kLogical, "(x != 0) != (y != 0); bool");
  binary("bitwise_and", BinaryRule::kIntegerOnly, "x & y; promoted dtype, ints and bool only");
  binary("bitwise_or", BinaryRule::kIntegerOnly, "x | y; promoted dtype, ints and bool only");
  binary("bitwise_xor", BinaryRule::kIntegerOnly, "x ^ y; promoted dtype, ints and bool only");

  elementwise("where", 3, "where(cond, x, y): x where cond != 0, else y; promotion of x and y",
              InferWhere);
  elementwise("clip", 3, "clip(x, lo, hi) as numpy.clip; promotion of all three", InferClip);
  ops.push_back(
      MakeOp("cast", OpFamily::kElementwise, 1, 1,
             {Attr("dtype", AttrType::kDType, true, "the target dtype")},
             "converts to `dtype`; float -> int truncates toward zero, anything -> bool is x != 0",
             InferCast));

  // Reductions.
  const AttrDef axes_attr = Attr("axes", AttrType::kInts, false, "axes to reduce (absent: all)");
  const AttrDef keepdims_attr =
      Attr("keepdims", AttrType::kBool, false, "keep reduced axes with size 1 (default false)");
  const AttrDef dtype_attr = Attr("dtype", AttrType::kDType, false, "accumulator and output dtype");
  const auto reduction = [&](const std::string& name, ReductionRule rule,
                             std::vector<AttrDef> attrs, std::string doc) {
    ops.push_back(MakeOp(name, OpFamily::kReduction, 1, 1, std::move(attrs), std::move(doc),
                         ReductionInfer(name, rule)));
  };
  reduction("sum", ReductionRule::kSum, {axes_attr, keepdims_attr, dtype_attr},
            "sum; bool and signed ints -> int64, unsigned -> uint64, floats keep theirs");
  reduction("prod", ReductionRule::kSum, {axes_attr, keepdims_attr, dtype_attr},
            "product; bool and signed ints -> int64, unsigned -> uint64, floats keep theirs");
  reduction("min", ReductionRule::kMinMax, {axes_attr, keepdims_attr},
            "minimum; same dtype; NaN propagates; an empty reduction is an error");
  reduction("max", ReductionRule::kMinMax, {axes_attr, keepdims_attr},
            "maximum; same dtype; NaN propagates; an empty reduction is an error");
  reduction("mean", ReductionRule::kMean, {axes_attr, keepdims_attr, dtype_attr},
            "arithmetic mean; ints and bool -> float64, floats keep theirs");
  const AttrDef ddof_attr =
      Attr("ddof", AttrType::kFloat, false, "delta degrees of freedom (default 0)");
  reduction("var", ReductionRule::kVariance, {axes_attr, keepdims_attr, ddof_attr},
            "variance; ints and bool -> float64, floats keep theirs");
  reduction("std", ReductionRule::kVariance, {axes_attr, keepdims_attr, ddof_attr},
            "standard deviation; ints and bool -> float64, floats keep theirs");
  reduction("any", ReductionRule::kAnyAll, {axes_attr, keepdims_attr}, "any x != 0; bool");
  reduction("all", ReductionRule::kAnyAll, {axes_attr, keepdims_attr}, "all x != 0; bool");
  reduction("logsumexp", ReductionRule::kLogSumExp, {axes_attr, keepdims_attr},
            std::string("log(sum(exp(x)))") + float_rule);
  const AttrDef arg_axis_attr =
      Attr("axis", AttrType::kInt, false, "axis to reduce (absent: the flattened array)");
  for (const char* name : {"argmin", "argmax"}) {
    ops.push_back(
        MakeOp(name, OpFamily::kReduction, 1, 1, {arg_axis_attr, keepdims_attr},
               absl::StrCat("index of the ", name == std::string("argmin") ? "min" : "max",
                            "imum; int64; first on ties, NaN wins; empty is an error"),
               ArgReductionInfer(name)));
  }
  const AttrDef softmax_axis =
      Attr("axis", AttrType::kInt, false, "axis to normalise over (default -1)");
  ops.push_back(MakeOp("softmax", OpFamily::kReduction, 1, 1, {softmax_axis},
                       std::string("exp(x) / sum(exp(x)) along axis") + float_rule, InferSoftmax));
  ops.push_back(MakeOp("log_softmax", OpFamily::kReduction, 1, 1, {softmax_axis},
                       std::string("x - logsumexp(x) along axis") + float_rule, InferSoftmax));

  // Scans.
  const AttrDef scan_axis =
      Attr("axis", AttrType::kInt, false, "axis to scan (absent: the flattened array, 1-D result)");
  ops.push_back(MakeOp("cumsum", OpFamily::kScan, 1, 1, {scan_axis, dtype_attr},
                       "cumulative sum; dtype as sum", InferScan));
  ops.push_back(MakeOp("cumprod", OpFamily::kScan, 1, 1, {scan_axis, dtype_attr},
                       "cumulative product; dtype as prod", InferScan));

  // Linear algebra.
  ops.push_back(MakeOp("matmul", OpFamily::kLinalg, 2, 2, {},
                       "numpy.matmul: batched matrix product, 1-D operands promoted to matrices; "
                       "promoted dtype",
                       InferMatmul));
  ops.push_back(MakeOp("dot", OpFamily::kLinalg, 2, 2, {},
                       "numpy.dot for operands of rank <= 2 (0-d: multiplication); promoted dtype",
                       InferDot));

  // Shape ops.
  ops.push_back(MakeOp("reshape", OpFamily::kShape, 1, 1,
                       {Attr("shape", AttrType::kInts, true, "new shape; one entry may be -1")},
                       "same elements in a new shape (C order)", InferReshape));
  ops.push_back(
      MakeOp("transpose", OpFamily::kShape, 1, 1,
             {Attr("axes", AttrType::kInts, false, "permutation of the axes (absent: reversed)")},
             "permutes the axes", InferTranspose));
  ops.push_back(MakeOp("broadcast_to", OpFamily::kShape, 1, 1,
                       {Attr("shape", AttrType::kInts, true, "target shape")},
                       "NumPy broadcasting to `shape`", InferBroadcastTo));
  ops.push_back(
      MakeOp("expand_dims", OpFamily::kShape, 1, 1,
             {Attr("axes", AttrType::kInts, true, "positions of the new axes in the result")},
             "inserts axes of size 1, as numpy.expand_dims", InferExpandDims));
  ops.push_back(MakeOp(
      "squeeze", OpFamily::kShape, 1, 1,
      {Attr("axes", AttrType::kInts, false, "axes of size 1 to remove (absent: all of them)")},
      "removes axes of size 1", InferSqueeze));
  ops.push_back(
      MakeOp("slice", OpFamily::kShape, 1, 1,
             {Attr("starts", AttrType::kInts, true, "start per sliced axis (Python semantics)"),
              Attr("stops", AttrType::kInts, true,
                   "stop per sliced axis; INT64_MAX / INT64_MIN for no bound"),
              Attr("steps", AttrType::kInts, false, "step per sliced axis, not 0 (default 1)"),
              Attr("axes", AttrType::kInts, false, "the sliced axes (default 0, 1, ...)")},
             "Python slicing x[start:stop:step] on each named axis, bounds clamped", InferSlice));
  const AttrDef join_axis = Attr("axis", AttrType::kInt, false, "the axis (default 0)");
  ops.push_back(MakeOp("concatenate", OpFamily::kShape, 1, -1, {join_axis},
                       "joins arrays along an existing axis; promoted dtype", InferConcatenate));
  ops.push_back(MakeOp("stack", OpFamily::kShape, 1, -1, {join_axis},
                       "joins arrays of one shape along a new axis; promoted dtype", InferStack));

  // Creation.
  const AttrDef shape_attr = Attr("shape", AttrType::kInts, true, "output shape");
  ops.push_back(
      MakeOp("full", OpFamily::kCreation, 1, 1,
             {shape_attr, Attr("dtype", AttrType::kDType, false,
                               "output dtype (absent: the value's; Python int -> int64, float -> "
                               "float64)")},
             "an array of `shape` filled with the 0-d input", InferFull));
  ops.push_back(MakeOp(
      "arange", OpFamily::kCreation, 0, 0,
      {Attr("start", AttrType::kFloat, false, "first value (default 0)"),
       Attr("stop", AttrType::kFloat, true, "end, exclusive"),
       Attr("step", AttrType::kFloat, false, "spacing, not 0 (default 1)"),
       Attr("dtype", AttrType::kDType, false,
            "output dtype (absent: int64 when start, stop and step are ints, else float64)")},
      "evenly spaced values in [start, stop), as numpy.arange", InferArange));
  const AttrDef seed_attr = Attr("seed", AttrType::kInt, true, "Philox4x32-10 key");
  const AttrDef random_dtype =
      Attr("dtype", AttrType::kDType, false, "a float dtype (default float32)");
  ops.push_back(MakeOp(
      "random_uniform", OpFamily::kCreation, 0, 0,
      {shape_attr, seed_attr, Attr("low", AttrType::kFloat, false, "lower bound (default 0)"),
       Attr("high", AttrType::kFloat, false, "upper bound (default 1)"), random_dtype},
      "uniform random values in [low, high), the same on every backend",
      RandomInfer("random_uniform", {"low", 0.0, "high", 1.0})));
  ops.push_back(MakeOp(
      "random_normal", OpFamily::kCreation, 0, 0,
      {shape_attr, seed_attr, Attr("mean", AttrType::kFloat, false, "mean (default 0)"),
       Attr("std", AttrType::kFloat, false, "standard deviation >= 0 (default 1)"), random_dtype},
      "normal random values (Box-Muller), the same on every backend",
      RandomInfer("random_normal", {"mean", 0.0, "std", 1.0})));

  // Custom kernels (CUDA backend only; docs/custom_kernels.md).
  const AttrDef in_params =
      Attr("in_params", AttrType::kString, true, "CuPy input parameters, e.g. 'T x, raw T y'");
  const AttrDef out_params =
      Attr("out_params", AttrType::kString, true, "CuPy output parameters, e.g. 'T z'");
  const AttrDef preamble =
      Attr("preamble", AttrType::kString, false, "code placed before the kernel");
  ops.push_back(MakeOp(
      "elementwise_kernel", OpFamily::kCustom, 0, -1,
      {in_params, out_params,
       Attr("operation", AttrType::kString, true, "CUDA statement(s) for element i"),
       Attr("name", AttrType::kString, false, "kernel name (default 'kernel')"), preamble,
       Attr("loop_prep", AttrType::kString, false, "code run by each thread before the loop"),
       Attr("after_loop", AttrType::kString, false, "code run by each thread after the loop"),
       Attr("size", AttrType::kInt, false,
            "loop size when no non-raw array argument gives the shape"),
       Attr("output", AttrType::kInt, false, "which out param is the node's value (default 0)")},
      "a cupy.ElementwiseKernel: inputs are the in params, optionally followed by the out "
      "params' initial values (CUDA backend only)",
      InferElementwiseKernel));
  ops.push_back(MakeOp(
      "reduction_kernel", OpFamily::kCustom, 1, -1,
      {in_params, out_params, Attr("map_expr", AttrType::kString, true, "mapping expression"),
       Attr("reduce_expr", AttrType::kString, true, "reduction expression of a and b"),
       Attr("post_map_expr", AttrType::kString, true, "statement of a writing the output"),
       Attr("identity", AttrType::kString, true, "identity value of the reduction"),
       Attr("reduce_type", AttrType::kString, false,
            "dtype or placeholder of a and b (default the output's)"),
       Attr("name", AttrType::kString, false, "kernel name (default 'reduce_kernel')"), preamble,
       axes_attr, keepdims_attr},
      "a cupy.ReductionKernel (CUDA backend only)", InferReductionKernel));
  ops.push_back(MakeOp(
      "raw_kernel", OpFamily::kCustom, 1, -1,
      {Attr("code", AttrType::kString, true, "CUDA source"),
       Attr("name", AttrType::kString, true, "the extern \"C\" __global__ function to launch"),
       Attr("grid", AttrType::kInts, true, "grid size, 1 to 3 entries"),
       Attr("block", AttrType::kInts, true, "block size, 1 to 3 entries"),
       Attr("shared_mem", AttrType::kInt, false, "dynamic shared memory bytes (default 0)"),
       Attr("output", AttrType::kInt, true,
            "the argument whose contents after the launch are the node's value (it is copied "
            "first, so arrays stay immutable)"),
       Attr("options", AttrType::kStrings, false, "extra NVRTC options")},
      "a cupy.RawKernel launch: arrays by pointer, literals by value (CUDA backend only; "
      "gpuflowd --allow_raw_kernels)",
      InferRawKernel));
  return ops;
}

}  // namespace

OpRegistry::OpRegistry(std::vector<OpDef> ops) : ops_(std::move(ops)) {
  std::sort(ops_.begin(), ops_.end(),
            [](const OpDef& a, const OpDef& b) { return a.name < b.name; });
}

const OpRegistry& OpRegistry::Default() {
  static const OpRegistry* const registry = new OpRegistry(BuildOps());
  return *registry;
}

const OpDef* OpRegistry::Find(absl::string_view name) const {
  const auto it =
      std::lower_bound(ops_.begin(), ops_.end(), name,
                       [](const OpDef& op, absl::string_view n) { return op.name < n; });
  if (it == ops_.end() || it->name != name) return nullptr;
  return &*it;
}

}  // namespace gpuflow

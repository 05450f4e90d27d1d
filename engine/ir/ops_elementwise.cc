// The elementwise ops: unary and binary ufuncs, where, clip and cast.
//
// compute_dtype, where op_registry.h leaves room for a choice:
//  - logical_and/or/xor/not compute in bool (inputs are converted with
//    `x != 0`). NumPy picks a same-dtype loop when both inputs share a dtype,
//    which gives the same results.
//  - isnan/isinf compute in the input dtype (NumPy's loops).
//  - abs, real, imag and angle of a complex input compute in that complex
//    dtype and return its real dtype (complex64 -> float32).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/ir/broadcast.h"
#include "engine/ir/ops_internal.h"
#include "engine/ir/promotion.h"
#include "engine/ir/status_macros_internal.h"

namespace gpuflow::internal {
namespace {

// How an input reads in an error message: its dtype, or "Python int" for a
// weak scalar.
std::string Describe(const ValueType& t) {
  if (!t.weak) return std::string(DTypeName(t.dtype));
  switch (KindOf(t.dtype)) {
    case DTypeKind::kBool:
      return "Python bool";
    case DTypeKind::kFloat:
      return "Python float";
    case DTypeKind::kComplex:
      return "Python complex";
    default:
      return "Python int";
  }
}

std::string DescribeAll(Inputs in) {
  std::vector<std::string> parts;
  for (const ValueType& t : in) parts.push_back(Describe(t));
  return absl::StrJoin(parts, " and ");
}

enum class UnaryRule {
  kSame,         // same dtype
  kSameNoBool,   // same dtype; bool is an error
  kBoolToInt8,   // same dtype, bool -> int8 (NumPy has no bool loop)
  kFloat,        // FloatResultDType
  kPredicate,    // bool, computed in the input dtype
  kLogical,      // bool, computed in bool
  kIntegerOnly,  // same dtype; ints and bool only
  kRealPart,     // the real dtype of a complex input, computed in it; others keep theirs
  kAngle,        // real dtype of complex; for real x as arctan2(0, x)
};

// Whether an op takes complex inputs (NumPy defines a complex loop for it).
enum class Complex : bool { kRefused, kAccepted };

// "floor is not supported for complex64": the error of an op without a
// complex loop (NumPy: "ufunc 'floor' not supported for the input types").
absl::Status ComplexRefused(absl::string_view op, Inputs in) {
  for (const ValueType& t : in) {
    if (IsComplex(t.dtype)) return Invalid(op, " is not supported for ", Describe(t));
  }
  return Invalid(op, " is not supported for complex inputs");
}

InferFn UnaryInfer(std::string op, UnaryRule rule, std::string bool_hint = "",
                   Complex complex = Complex::kAccepted) {
  return [op = std::move(op), rule, bool_hint = std::move(bool_hint), complex](
             Inputs in, AttrMap&) -> absl::StatusOr<InferredNode> {
    GPUFLOW_IR_ASSIGN_OR_RETURN(const DType d, PromoteTypes(in));
    const Shape& shape = in[0].shape;
    if (IsComplex(d) && complex == Complex::kRefused) return ComplexRefused(op, in);
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
        if (IsFloat(d) || IsComplex(d))
          return Invalid(op, " requires an integer or bool input, got ", Describe(in[0]));
        return Inferred(d, shape, d);
      case UnaryRule::kRealPart:
        return Inferred(RealDType(d), shape, d);
      case UnaryRule::kAngle: {
        if (IsComplex(d)) return Inferred(RealDType(d), shape, d);
        // numpy.angle(x) of a real x is arctan2(0, x).
        const ValueType loop[] = {WeakIntType(), in[0]};
        GPUFLOW_IR_ASSIGN_OR_RETURN(const DType out, FloatLoopDType(loop));
        return Inferred(out, shape, out);
      }
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
  kInteger,      // promoted; ints only (gcd, lcm: NumPy has no bool loop)
};

InferFn BinaryInfer(std::string op, BinaryRule rule, std::string bool_hint = "",
                    Complex complex = Complex::kAccepted) {
  return [op = std::move(op), rule, bool_hint = std::move(bool_hint), complex](
             Inputs in, AttrMap&) -> absl::StatusOr<InferredNode> {
    GPUFLOW_IR_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(in[0].shape, in[1].shape));
    GPUFLOW_IR_ASSIGN_OR_RETURN(const DType p, PromoteTypes(in));
    if (IsComplex(p) && complex == Complex::kRefused && rule != BinaryRule::kIntegerOnly) {
      return ComplexRefused(op, in);
    }
    switch (rule) {
      case BinaryRule::kPromote:
        return Inferred(p, std::move(shape), p);
      case BinaryRule::kNoBool:
        if (p == DType::kBool) return Invalid(op, " is not supported for bool", bool_hint);
        return Inferred(p, std::move(shape), p);
      case BinaryRule::kTrueDivide: {
        const DType out = IsFloat(p) || IsComplex(p) ? p : DType::kFloat64;
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
        if (IsFloat(p) || IsComplex(p)) {
          const auto inexact = [](DType t) { return IsFloat(t) || IsComplex(t); };
          return Invalid(op, " requires integer or bool inputs, got ", DescribeAll(in),
                         inexact(in[0].dtype) || inexact(in[1].dtype)
                             ? ""
                             : absl::StrCat(" (which promote to ", DTypeName(p), ")"));
        }
        return Inferred(p, std::move(shape), p);
      case BinaryRule::kInteger:
        if (!IsInteger(p)) {
          return Invalid(op, " requires integer inputs, got ", DescribeAll(in),
                         IsInteger(in[0].dtype) && IsInteger(in[1].dtype)
                             ? absl::StrCat(" (which promote to ", DTypeName(p), ")")
                             : "");
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

// bitcast: the same bytes read as another dtype of the same size (numpy's
// view(dtype) when the size is kept). Bool is refused on either side: a byte
// other than 0 or 1 is not a bool value.
absl::StatusOr<InferredNode> InferBitcast(Inputs in, AttrMap& attrs) {
  const DType to = *Get<DType>(attrs, "dtype");
  const DType from = in[0].dtype;
  if (from == DType::kBool || to == DType::kBool) {
    return Invalid("bitcast does not take bool (from ", DTypeName(from), " to ", DTypeName(to),
                   "); cast converts values");
  }
  if (ItemSize(from) != ItemSize(to)) {
    return Invalid("bitcast from ", DTypeName(from), " (", ItemSize(from), " bytes) to ",
                   DTypeName(to), " (", ItemSize(to), " bytes): the sizes differ");
  }
  return Inferred(to, in[0].shape, from);
}

}  // namespace

void AddElementwiseOps(std::vector<OpDef>& ops) {
  const auto elementwise = [&](std::string name, int arity, std::string doc, InferFn infer) {
    ops.push_back(MakeOp(std::move(name), OpFamily::kElementwise, arity, arity, {}, std::move(doc),
                         std::move(infer)));
  };
  const auto unary = [&](const std::string& name, UnaryRule rule, std::string doc,
                         std::string bool_hint = "", Complex complex = Complex::kAccepted) {
    elementwise(name, 1, std::move(doc), UnaryInfer(name, rule, std::move(bool_hint), complex));
  };
  const auto binary = [&](const std::string& name, BinaryRule rule, std::string doc,
                          std::string bool_hint = "", Complex complex = Complex::kAccepted) {
    elementwise(name, 2, std::move(doc), BinaryInfer(name, rule, std::move(bool_hint), complex));
  };
  constexpr Complex kNoComplex = Complex::kRefused;

  // Unary elementwise.
  unary("neg", UnaryRule::kSameNoBool, "-x; same dtype", "; use logical_not");
  unary("abs", UnaryRule::kRealPart, "|x|; same dtype (complex: its real dtype, hypot(re, im))");
  unary("sign", UnaryRule::kSameNoBool,
        "-1, 0 or 1 (NaN for NaN); same dtype; complex: x / |x| (0 for 0), as NumPy 2");
  unary("square", UnaryRule::kBoolToInt8, "x * x; same dtype (bool -> int8)");
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
                                                        {"asin", "arcsine"},
                                                        {"acos", "arccosine"},
                                                        {"atan", "arctangent"},
                                                        {"asinh", "inverse hyperbolic sine"},
                                                        {"acosh", "inverse hyperbolic cosine"},
                                                        {"atanh", "inverse hyperbolic tangent"}}) {
    unary(name, UnaryRule::kFloat, what + kFloatResultDoc + "; complex keeps its dtype");
  }
  for (const auto& [name, what] :
       std::vector<std::pair<std::string, std::string>>{{"sigmoid", "1 / (1 + e^-x)"},
                                                        {"gelu", "x * Phi(x) (exact, with erf)"},
                                                        {"erf", "error function"}}) {
    unary(name, UnaryRule::kFloat, what + kFloatResultDoc + "; not for complex", "", kNoComplex);
  }
  unary("floor", UnaryRule::kSameNoBool,
        "largest integer <= x; same dtype (ints unchanged); not for complex", "", kNoComplex);
  unary("ceil", UnaryRule::kSameNoBool,
        "smallest integer >= x; same dtype (ints unchanged); not for complex", "", kNoComplex);
  unary("round", UnaryRule::kSameNoBool,
        "round half to even; same dtype (ints unchanged; complex: both parts)");
  unary("relu", UnaryRule::kSameNoBool, "maximum(x, 0); same dtype; not for complex", "",
        kNoComplex);
  unary("reciprocal", UnaryRule::kBoolToInt8,
        "1 / x; same dtype (bool -> int8); for ints truncated, 0 for x == 0");
  unary("isnan", UnaryRule::kPredicate, "x is NaN; bool");
  unary("isinf", UnaryRule::kPredicate, "x is +-inf; bool");
  unary("logical_not", UnaryRule::kLogical, "x == 0; bool");
  unary("bitwise_not", UnaryRule::kIntegerOnly, "~x; ints and bool (logical not)");
  unary("real", UnaryRule::kRealPart,
        "real part; complex -> its real dtype (complex64 -> float32), others unchanged");
  unary("imag", UnaryRule::kRealPart,
        "imaginary part; complex -> its real dtype, others: zeros of their dtype");
  unary("conj", UnaryRule::kSame, "complex conjugate; same dtype (real inputs unchanged)");
  unary("angle", UnaryRule::kAngle,
        "argument arctan2(imag, real) in radians; complex -> its real dtype, real x as "
        "arctan2(0, x)");

  // Binary elementwise.
  binary("add", BinaryRule::kPromote, "x + y; promoted dtype (bool: logical or)");
  binary("sub", BinaryRule::kNoBool, "x - y; promoted dtype", "; use logical_xor or bitwise_xor");
  binary("mul", BinaryRule::kPromote, "x * y; promoted dtype (bool: logical and)");
  binary("div", BinaryRule::kTrueDivide,
         "true division x / y; the promoted float dtype, float64 for ints and bool");
  binary("floordiv", BinaryRule::kBoolToInt8,
         "floor(x / y) as numpy.floor_divide; promoted dtype (bool -> int8); int division by "
         "zero gives 0; not for complex",
         "", kNoComplex);
  binary("mod", BinaryRule::kBoolToInt8,
         "x mod y with the sign of y, as numpy.remainder; promoted dtype (bool -> int8); int "
         "division by zero gives 0; not for complex",
         "", kNoComplex);
  binary("pow", BinaryRule::kBoolToInt8,
         "x ** y; promoted dtype (bool -> int8); an int to a negative literal int power is an "
         "error");
  binary("maximum", BinaryRule::kPromote,
         "larger of x and y (NaN propagates); promoted dtype; complex ordered by real, then "
         "imaginary part");
  binary("minimum", BinaryRule::kPromote,
         "smaller of x and y (NaN propagates); promoted dtype; complex ordered by real, then "
         "imaginary part");
  binary("atan2", BinaryRule::kFloat,
         "arctangent of x / y; the smallest float dtype both inputs convert to safely; not for "
         "complex",
         "", kNoComplex);
  for (const auto& [name, what] :
       std::vector<std::pair<std::string, std::string>>{{"eq", "x == y"},
                                                        {"ne", "x != y"},
                                                        {"lt", "x < y"},
                                                        {"le", "x <= y"},
                                                        {"gt", "x > y"},
                                                        {"ge", "x >= y"}}) {
    binary(name, BinaryRule::kCompare,
           what + "; bool, compared in the promoted dtype (complex: by real, then imaginary part)");
  }
  binary("logical_and", BinaryRule::kLogical, "x != 0 and y != 0; bool");
  binary("logical_or", BinaryRule::kLogical, "x != 0 or y != 0; bool");
  binary("logical_xor", BinaryRule::kLogical, "(x != 0) != (y != 0); bool");
  binary("bitwise_and", BinaryRule::kIntegerOnly, "x & y; promoted dtype, ints and bool only");
  binary("bitwise_or", BinaryRule::kIntegerOnly, "x | y; promoted dtype, ints and bool only");
  binary("bitwise_xor", BinaryRule::kIntegerOnly, "x ^ y; promoted dtype, ints and bool only");
  binary("gcd", BinaryRule::kInteger,
         "greatest common divisor of |x| and |y| (gcd(0, 0) = 0), as numpy.gcd; promoted dtype, "
         "ints only (the result wraps as NumPy's: gcd(int8 -128, 0) = -128)");
  binary("lcm", BinaryRule::kInteger,
         "least common multiple of |x| and |y| (0 when either is 0), as numpy.lcm; promoted "
         "dtype, ints only, wrapping");

  elementwise("where", 3, "where(cond, x, y): x where cond != 0, else y; promotion of x and y",
              InferWhere);
  elementwise("clip", 3, "clip(x, lo, hi) as numpy.clip; promotion of all three", InferClip);
  ops.push_back(
      MakeOp("cast", OpFamily::kElementwise, 1, 1,
             {Attr("dtype", AttrType::kDType, true, "the target dtype")},
             "converts to `dtype`; float -> int truncates toward zero, anything -> bool is x != 0",
             InferCast));
  ops.push_back(MakeOp(
      "bitcast", OpFamily::kElementwise, 1, 1,
      {Attr("dtype", AttrType::kDType, true, "the dtype to read the bytes as")},
      "the same bytes read as `dtype`, which has the input's item size (numpy's view(dtype)); not "
      "for bool",
      InferBitcast));
}

}  // namespace gpuflow::internal

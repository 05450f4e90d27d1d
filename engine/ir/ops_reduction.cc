// The reductions (sum ... logsumexp), the arg-reductions, softmax and
// log_softmax, and the scans (cumsum, cumprod).
//
// compute_dtype, where op_registry.h leaves room for a choice:
//  - argmin/argmax compare in the input dtype.
//  - mean/var/std of float16 and bfloat16 accumulate in float32 (as NumPy's
//    mean does for float16); integer and bool inputs in float64.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/ir/ops_internal.h"
#include "engine/ir/promotion.h"
#include "engine/ir/status_macros_internal.h"

namespace gpuflow::internal {
namespace {

bool ReducesNothing(const Shape& shape, absl::Span<const int64_t> axes) {
  for (int64_t a : axes) {
    if (shape.dim(static_cast<int>(a)) == 0) return true;
  }
  return false;
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
    case DTypeKind::kComplex:
      return dtype;
  }
  return dtype;
}

// mean/var/std: output dtype and accumulator dtype.
std::pair<DType, DType> MeanDTypes(DType dtype) {
  if (IsComplex(dtype)) return {dtype, dtype};
  if (!IsFloat(dtype)) return {DType::kFloat64, DType::kFloat64};
  if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) return {dtype, DType::kFloat32};
  return {dtype, dtype};
}

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
        if (dtype.has_value()) {
          // var/std of complex values are real: the mean of |x - mean|^2.
          const DType out = rule == ReductionRule::kVariance ? RealDType(*dtype) : *dtype;
          return Inferred(out, std::move(out_shape), *dtype);
        }
        const auto [out, compute] = MeanDTypes(d);
        return Inferred(rule == ReductionRule::kVariance ? RealDType(out) : out,
                        std::move(out_shape), compute);
      }
      case ReductionRule::kAnyAll:
        return Inferred(DType::kBool, std::move(out_shape), DType::kBool);
      case ReductionRule::kLogSumExp: {
        if (IsComplex(d)) return Invalid(op, " is not supported for ", DTypeName(d));
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
  if (IsComplex(in[0].dtype)) {
    return Invalid("softmax and log_softmax are not supported for ", DTypeName(in[0].dtype));
  }
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

}  // namespace

void AddReductionOps(std::vector<OpDef>& ops) {
  const AttrDef axes_attr = ReductionAxesAttr();
  const AttrDef keepdims_attr = KeepdimsAttr();
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
            "variance; ints and bool -> float64, floats keep theirs, complex -> its real dtype");
  reduction("std", ReductionRule::kVariance, {axes_attr, keepdims_attr, ddof_attr},
            "standard deviation; ints and bool -> float64, floats keep theirs, complex -> its real "
            "dtype");
  reduction("any", ReductionRule::kAnyAll, {axes_attr, keepdims_attr}, "any x != 0; bool");
  reduction("all", ReductionRule::kAnyAll, {axes_attr, keepdims_attr}, "all x != 0; bool");
  reduction("logsumexp", ReductionRule::kLogSumExp, {axes_attr, keepdims_attr},
            std::string("log(sum(exp(x)))") + kFloatResultDoc);
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
                       std::string("exp(x) / sum(exp(x)) along axis") + kFloatResultDoc,
                       InferSoftmax));
  ops.push_back(MakeOp("log_softmax", OpFamily::kReduction, 1, 1, {softmax_axis},
                       std::string("x - logsumexp(x) along axis") + kFloatResultDoc, InferSoftmax));

  // Scans.
  const AttrDef scan_axis =
      Attr("axis", AttrType::kInt, false, "axis to scan (absent: the flattened array, 1-D result)");
  ops.push_back(MakeOp("cumsum", OpFamily::kScan, 1, 1, {scan_axis, dtype_attr},
                       "cumulative sum; dtype as sum", InferScan));
  ops.push_back(MakeOp("cumprod", OpFamily::kScan, 1, 1, {scan_axis, dtype_attr},
                       "cumulative product; dtype as prod", InferScan));
}

}  // namespace gpuflow::internal

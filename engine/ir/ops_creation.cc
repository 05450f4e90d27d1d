// The creation ops: full, arange, random_uniform and random_normal.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/ir/ops_internal.h"
#include "engine/ir/promotion.h"
#include "engine/ir/status_macros_internal.h"

namespace gpuflow::internal {
namespace {

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
  if (IsComplex(dtype))
    return Invalid("arange of complex dtype ", DTypeName(dtype), " is not supported");
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

}  // namespace

void AddCreationOps(std::vector<OpDef>& ops) {
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
}

}  // namespace gpuflow::internal

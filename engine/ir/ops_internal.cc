#include "engine/ir/ops_internal.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_join.h"
#include "engine/ir/op_registry_internal.h"
#include "engine/ir/status_macros_internal.h"

namespace gpuflow::internal {

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
    GPUFLOW_IR_RETURN_IF_ERROR(CheckArity(proto, inputs.size()));
    GPUFLOW_IR_RETURN_IF_ERROR(CheckAttrs(proto, attrs));
    AttrMap work = attrs;
    GPUFLOW_IR_ASSIGN_OR_RETURN(InferredNode node, infer(inputs, work));
    ConvertIntsToFloats(proto, work);
    attrs = std::move(work);
    return node;
  };
  return def;
}

AttrDef ReductionAxesAttr() {
  return Attr("axes", AttrType::kInts, false, "axes to reduce (absent: all)");
}

AttrDef KeepdimsAttr() {
  return Attr("keepdims", AttrType::kBool, false, "keep reduced axes with size 1 (default false)");
}

InferredNode Inferred(DType dtype, Shape shape, DType compute) {
  return {.output = {.dtype = dtype, .shape = std::move(shape), .weak = false},
          .compute_dtype = compute};
}

std::string FormatDims(absl::Span<const int64_t> dims) {
  if (dims.size() == 1) return absl::StrCat("(", dims[0], ",)");
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return absl::StrCat("(", absl::StrJoin(dims.subspan(0, kMaxRank), ", "), ", ..., ", dims.size(),
                        " entries)");
  }
  return absl::StrCat("(", absl::StrJoin(dims, ", "), ")");
}

std::optional<double> GetFloat(const AttrMap& attrs, absl::string_view name) {
  const auto it = attrs.find(name);
  if (it == attrs.end()) return std::nullopt;
  if (const int64_t* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  if (const double* v = std::get_if<double>(&it->second)) return *v;
  return std::nullopt;
}

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) {
    return Invalid("axis ", axis, " is out of bounds for array of dimension ", rank);
  }
  return axis < 0 ? axis + rank : axis;
}

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

}  // namespace gpuflow::internal

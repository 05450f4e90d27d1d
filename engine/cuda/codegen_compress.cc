// Compress steps: take(a, flatnonzero(mask, size)) with the mask's
// producers, as one stream compaction writing a's elements (see
// codegen_select.h).
#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/codegen_internal.h"
#include "engine/cuda/codegen_select.h"
#include "engine/cuda/device_library.h"

namespace gpuflow::cuda {

absl::StatusOr<std::optional<CompressKernels>> GenerateCompressKernels(const ValidatedGraph& graph,
                                                                       const Step& step) {
  if (step.kind != StepKind::kShape || step.nodes.size() < 2) return std::nullopt;
  const ValidatedNode& take = graph.nodes[step.root];
  if (take.op->name != "take") return std::nullopt;
  if (auto it = take.attrs.find("axis"); it != take.attrs.end()) {
    const int64_t* axis = std::get_if<int64_t>(&it->second);
    if (axis == nullptr || *axis != 0 || take.input_types[0].shape.rank() != 1) {
      return std::nullopt;
    }
  }
  const ValueRef index = take.inputs[1];
  if (index.kind != ValueRef::Kind::kNode) return std::nullopt;
  const ValidatedNode& fnz = graph.nodes[index.index];
  if (fnz.op->name != "flatnonzero") return std::nullopt;
  const Shape& shape = fnz.input_types[0].shape;
  if (IsComplex(take.type.output.dtype) || IsComplex(fnz.input_types[0].dtype)) {
    return std::nullopt;  // the planner does not make these
  }
  if (take.input_types[0].shape.num_elements() != shape.num_elements()) return std::nullopt;
  std::vector<int> prologue;
  for (int n : step.nodes) {
    if (n == step.root || n == index.index) continue;
    if (graph.nodes[n].op->family != OpFamily::kElementwise) return std::nullopt;
    prologue.push_back(n);
  }
  auto in_step = [&](const ValueRef& ref) {
    return ref.kind == ValueRef::Kind::kNode &&
           std::find(step.nodes.begin(), step.nodes.end(), ref.index) != step.nodes.end();
  };
  CompressKernels k;
  k.flatnonzero = index.index;
  k.n = shape.num_elements();
  k.size = take.type.output.shape.num_elements();
  k.tiles = (k.n + kSelectTile - 1) / kSelectTile;
  // The external inputs: the prologue's, the mask's and a.
  // (a is read by flat index: any shape of as many elements.)
  auto add = [&](const ValueRef& ref, const ValueType& type, bool flat = false) {
    if (in_step(ref)) return true;
    for (const StepInput& in : k.inputs) {
      if (in.ref == ref) return true;
    }
    StepInput input{ref, type, false};
    input.by_value = ref.kind == ValueRef::Kind::kLiteral && type.shape.rank() == 0;
    if (!input.by_value && !(type.shape == shape) &&
        !(flat && type.shape.num_elements() == shape.num_elements())) {
      return false;
    }
    k.inputs.push_back(std::move(input));
    return true;
  };
  for (int n : prologue) {
    const ValidatedNode& node = graph.nodes[n];
    if (!(node.type.output.shape == shape)) return std::nullopt;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!add(node.inputs[i], node.input_types[i])) return std::nullopt;
    }
  }
  if (!add(fnz.inputs[0], fnz.input_types[0]) ||
      !add(take.inputs[0], take.input_types[0], /*flat=*/true)) {
    return std::nullopt;
  }
  // Words 0 (out) and 2..6 as CompactionKernels has them; the inputs after.
  int word = 7;
  std::string decl;
  std::vector<std::string> exprs;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    const char* t = StorageTypeName(k.inputs[i].type.dtype);
    if (k.inputs[i].by_value) continue;
    absl::StrAppend(&decl, "  const ", t, "* __restrict__ in", i, " = (const ", t, "*)p.w[", word++,
                    "];\n");
  }
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    const char* t = StorageTypeName(k.inputs[i].type.dtype);
    if (k.inputs[i].by_value) {
      absl::StrAppend(&decl, "  const ", t, " ins", i, " = gf::word<", t, ">(p.w[", word++,
                      "]);\n");
      exprs.push_back(absl::StrCat("ins", i));
    } else {
      exprs.push_back(absl::StrCat("in", i, "[e]"));
    }
  }
  const char* out_t = StorageTypeName(take.type.output.dtype);
  absl::StrAppend(&decl, "  ", out_t, "* __restrict__ out = (", out_t, "*)p.w[0];\n");
  auto expr = [&](const ValueRef& ref) {
    if (in_step(ref)) return absl::StrCat("v", ref.index);
    for (size_t i = 0; i < k.inputs.size(); ++i) {
      if (k.inputs[i].ref == ref) return exprs[i];
    }
    return std::string("/*missing*/");
  };
  const std::string flag = absl::StrCat(internal::EmitElementwiseNodes(graph, prologue, expr),
                                        "      f = gf::cv<bool>(", expr(fnz.inputs[0]), ");\n");
  const std::string name =
      absl::StrCat("gf_compress_", DTypeName(take.type.output.dtype), "_", prologue.size());
  k.names = {name + "_count", name + "_scan", name + "_write"};
  k.source = DeviceSource(
      CompactionKernels(name, decl, flag, absl::StrCat("out[pos] = ", expr(take.inputs[0])), word));
  return k;
}

}  // namespace gpuflow::cuda

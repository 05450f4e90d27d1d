// The op registry: the table of every op of docs/ops.md, built from the
// family files (ops_<family>.cc, each appending its ops through its
// Add...Ops), and the arity and attribute checks every op's infer and
// ValidateGraph share.
#include "engine/ir/op_registry.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/ir/echo.h"
#include "engine/ir/op_registry_internal.h"
#include "engine/ir/ops_internal.h"

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
    case OpFamily::kSort:
      return "sort";
  }
  return "unknown";
}

namespace {

std::vector<OpDef> BuildOps() {
  std::vector<OpDef> ops;
  internal::AddElementwiseOps(ops);
  internal::AddReductionOps(ops);
  internal::AddLinalgOps(ops);
  internal::AddShapeOps(ops);
  internal::AddSelectionOps(ops);
  internal::AddCreationOps(ops);
  internal::AddCustomKernelOps(ops);
  internal::AddSortOps(ops);
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

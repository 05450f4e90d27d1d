#include "engine/plan/plan.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <set>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "engine/ir/dtype.h"

namespace gpuflow {

absl::string_view StepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::kElementwise:
      return "elementwise";
    case StepKind::kReduction:
      return "reduction";
    case StepKind::kScan:
      return "scan";
    case StepKind::kMatmul:
      return "matmul";
    case StepKind::kShape:
      return "copy";
    case StepKind::kCreation:
      return "creation";
    case StepKind::kCustom:
      return "custom";
    case StepKind::kSort:
      return "sort";
    case StepKind::kRows:
      return "rows";
  }
  return "unknown";
}

absl::string_view FusionCutName(FusionCut cut) {
  switch (cut) {
    case FusionCut::kNone:
      return "none";
    case FusionCut::kNotFusible:
      return "consumer not fusible";
    case FusionCut::kMultipleConsumers:
      return "multiple consumers";
    case FusionCut::kGraphOutput:
      return "graph output";
    case FusionCut::kShapeChange:
      return "shape change";
    case FusionCut::kMaxOps:
      return "max fused ops";
  }
  return "unknown";
}

namespace {

StepKind KindOfFamily(OpFamily family) {
  switch (family) {
    case OpFamily::kElementwise:
      return StepKind::kElementwise;
    case OpFamily::kReduction:
      return StepKind::kReduction;
    case OpFamily::kScan:
      return StepKind::kScan;
    case OpFamily::kLinalg:
      return StepKind::kMatmul;
    case OpFamily::kShape:
      return StepKind::kShape;
    case OpFamily::kCreation:
      return StepKind::kCreation;
    case OpFamily::kCustom:
      return StepKind::kCustom;
    case OpFamily::kSort:
      return StepKind::kSort;
  }
  return StepKind::kCustom;
}

class Planner {
 public:
  Planner(const ValidatedGraph& graph, absl::Span<const int> outputs, const PlanOptions& options)
      : graph_(graph), options_(options), n_(static_cast<int>(graph.nodes.size())) {
    consumers_.resize(n_);
    is_output_.assign(n_, false);
    step_of_.assign(n_, -1);
    for (int o : outputs) is_output_[o] = true;
    // Only nodes the outputs depend on run (nodes are in topological order).
    needed_ = is_output_;
    for (int i = n_ - 1; i >= 0; --i) {
      if (!needed_[i]) continue;
      for (int p : NodeInputs(i)) needed_[p] = true;
    }
    for (int i = 0; i < n_; ++i) {
      if (!needed_[i]) continue;
      for (int p : NodeInputs(i)) consumers_[p].insert(i);
    }
  }

  Plan Build(absl::Span<const int> outputs) {
    for (int i = 0; i < n_; ++i) {
      if (!needed_[i]) continue;
      const OpFamily family = graph_.nodes[i].op->family;
      if (family == OpFamily::kElementwise) {
        PlaceElementwise(i);
      } else if (family == OpFamily::kReduction) {
        PlaceReduction(i);
      } else {
        NewStep(KindOfFamily(family), i);
      }
    }
    FuseCompress();
    if (options_.fuse_reductions && options_.max_row_length > 0) FuseRows();
    return Finish(outputs);
  }

 private:
  // Distinct node inputs of node i.
  std::set<int> NodeInputs(int i) const {
    std::set<int> out;
    for (const ValueRef& ref : graph_.nodes[i].inputs) {
      if (ref.kind == ValueRef::Kind::kNode) out.insert(ref.index);
    }
    return out;
  }

  int NewStep(StepKind kind, int node) {
    Step step;
    step.kind = kind;
    step.nodes = {node};
    step.root = node;
    if (kind == StepKind::kReduction) step.reduction = node;
    steps_.push_back(std::move(step));
    alive_.push_back(true);
    const int s = static_cast<int>(steps_.size()) - 1;
    step_of_[node] = s;
    return s;
  }

  // Whether the step producing `p` may be fused into consumer `i`; when not,
  // records why on that step.
  bool CanFuseProducer(int p, int i, bool need_same_shape) {
    const int s = step_of_[p];
    Step& step = steps_[s];
    FusionCut cut = FusionCut::kNone;
    if (step.root != p) {
      cut = FusionCut::kNotFusible;
    } else if (is_output_[p]) {
      cut = FusionCut::kGraphOutput;
    } else if (consumers_[p].size() != 1) {
      cut = FusionCut::kMultipleConsumers;
    } else if (need_same_shape &&
               !(graph_.nodes[p].type.output.shape == graph_.nodes[i].type.output.shape)) {
      cut = FusionCut::kShapeChange;
    } else if (static_cast<int>(step.nodes.size()) >= options_.max_fused_ops) {
      cut = FusionCut::kMaxOps;
    }
    if (cut != FusionCut::kNone) {
      if (step.cut == FusionCut::kNone) step.cut = cut;
      return false;
    }
    return true;
  }

  void MergeInto(int target, int source) {
    Step& from = steps_[source];
    Step& to = steps_[target];
    for (int node : from.nodes) step_of_[node] = target;
    to.nodes.insert(to.nodes.end(), from.nodes.begin(), from.nodes.end());
    if (from.kind == StepKind::kReduction) {
      to.kind = StepKind::kReduction;
      to.reduction = from.reduction;
    }
    from.nodes.clear();
    alive_[source] = false;
  }

  void PlaceElementwise(int i) {
    std::vector<int> fusible;
    int reduction_step = -1;
    for (int p : NodeInputs(i)) {
      const int ps = step_of_[p];
      if (std::find(fusible.begin(), fusible.end(), ps) != fusible.end() || ps == reduction_step) {
        continue;
      }
      const StepKind kind = steps_[ps].kind;
      if (kind == StepKind::kElementwise) {
        if (CanFuseProducer(p, i, /*need_same_shape=*/true)) fusible.push_back(ps);
      } else if (kind == StepKind::kReduction && options_.fuse_reductions && reduction_step < 0) {
        // An epilogue: a consumer of the reduction's result, of its shape.
        if (CanFuseProducer(p, i, /*need_same_shape=*/true)) reduction_step = ps;
      } else if (steps_[ps].cut == FusionCut::kNone) {
        steps_[ps].cut = FusionCut::kNotFusible;
      }
    }
    const int s = NewStep(StepKind::kElementwise, i);
    int total = 1;
    for (int f : fusible) total += static_cast<int>(steps_[f].nodes.size());
    if (reduction_step >= 0) total += static_cast<int>(steps_[reduction_step].nodes.size());
    if (total > options_.max_fused_ops) {
      for (int f : fusible) steps_[f].cut = FusionCut::kMaxOps;
      if (reduction_step >= 0) steps_[reduction_step].cut = FusionCut::kMaxOps;
      return;
    }
    // Node order: the reduction step's prologue and reduction first, then
    // everything of the result's shape (in index order, which respects
    // dependencies).
    std::vector<int> head;
    if (reduction_step >= 0) {
      const Step& r = steps_[reduction_step];
      auto at = std::find(r.nodes.begin(), r.nodes.end(), r.reduction);
      head.assign(r.nodes.begin(), at + 1);
      MergeInto(s, reduction_step);
    }
    for (int f : fusible) MergeInto(s, f);
    Step& step = steps_[s];
    std::vector<int> tail;
    for (int node : step.nodes) {
      if (std::find(head.begin(), head.end(), node) == head.end()) tail.push_back(node);
    }
    std::sort(tail.begin(), tail.end());
    head.insert(head.end(), tail.begin(), tail.end());
    step.nodes = std::move(head);
    step.root = i;
  }

  void PlaceReduction(int i) {
    const int s = NewStep(StepKind::kReduction, i);
    if (!options_.fuse_reductions) return;
    const ValidatedNode& node = graph_.nodes[i];
    if (node.inputs.empty() || node.inputs[0].kind != ValueRef::Kind::kNode) return;
    const int p = node.inputs[0].index;
    if (steps_[step_of_[p]].kind != StepKind::kElementwise) {
      if (steps_[step_of_[p]].cut == FusionCut::kNone) {
        steps_[step_of_[p]].cut = FusionCut::kNotFusible;
      }
      return;
    }
    // A prologue has the reduction input's shape, not the reduction's.
    if (!CanFuseProducer(p, i, /*need_same_shape=*/false)) return;
    MergeInto(s, step_of_[p]);
    Step& step = steps_[s];
    std::sort(step.nodes.begin(), step.nodes.end());
    step.root = i;
  }

  // ---- compress: take(a, flatnonzero(mask, size)) ----

  // Whether a take reads its source as the flattened array: no axis, or
  // axis 0 of a 1-D source.
  static bool FlatTake(const ValidatedNode& take) {
    auto it = take.attrs.find("axis");
    if (it == take.attrs.end()) return true;
    const int64_t* axis = std::get_if<int64_t>(&it->second);
    return axis != nullptr && *axis == 0 && take.input_types[0].shape.rank() == 1;
  }

  // The flattened a indexed by the nonzero positions of a mask of as many
  // elements (x[x > 0]), with the mask's elementwise producers when nothing else
  // reads them and they read only values of that shape or scalars: one
  // step, so that a backend compacts a's elements straight into the result
  // instead of writing and reading back the indices.
  void FuseCompress() {
    for (int t = 0; t < n_; ++t) {
      if (!needed_[t]) continue;
      const ValidatedNode& take = graph_.nodes[t];
      if (take.op->name != "take" || take.inputs.size() != 2 || !FlatTake(take)) continue;
      const ValueRef index = take.inputs[1];
      if (index.kind != ValueRef::Kind::kNode || take.inputs[0] == index) continue;
      const int f = index.index;
      const ValidatedNode& fnz = graph_.nodes[f];
      if (fnz.op->name != "flatnonzero" || is_output_[f] || consumers_[f].size() != 1) continue;
      const Shape& shape = fnz.input_types[0].shape;
      if (take.input_types[0].shape.num_elements() != shape.num_elements() ||
          TouchesComplexDType(take) || TouchesComplexDType(fnz)) {
        continue;
      }
      const int ts = step_of_[t];
      const int fs = step_of_[f];
      if (steps_[ts].nodes.size() != 1 || steps_[fs].nodes.size() != 1) continue;
      std::vector<int> nodes = {f, t};
      const ValueRef mask = fnz.inputs[0];
      if (mask.kind == ValueRef::Kind::kNode) {
        const int ps = step_of_[mask.index];
        Step& producer = steps_[ps];
        bool fits = producer.kind == StepKind::kElementwise && producer.root == mask.index &&
                    !is_output_[mask.index] && consumers_[mask.index].size() == 1 &&
                    static_cast<int>(producer.nodes.size()) + 2 <= options_.max_fused_ops;
        for (int n : producer.nodes) {
          const ValidatedNode& node = graph_.nodes[n];
          fits = fits && node.type.output.shape == shape && !TouchesComplexDType(node);
          for (size_t i = 0; fits && i < node.inputs.size(); ++i) {
            const ValueRef& ref = node.inputs[i];
            if (ref.kind == ValueRef::Kind::kNode && step_of_[ref.index] == ps) continue;
            fits = node.input_types[i].shape == shape ||
                   (ref.kind == ValueRef::Kind::kLiteral && node.input_types[i].shape.rank() == 0);
          }
        }
        if (fits) {
          nodes.insert(nodes.end(), producer.nodes.begin(), producer.nodes.end());
          producer.nodes.clear();
          alive_[ps] = false;
        }
      }
      steps_[fs].nodes.clear();
      alive_[fs] = false;
      std::sort(nodes.begin(), nodes.end());
      for (int n : nodes) step_of_[n] = ts;
      steps_[ts].nodes = std::move(nodes);
    }
  }

  // ---- row programs (PlanOptions::max_row_length) ----

  // The shape S every full node has and how many leading axes of it are
  // kept (-1 until a reduction says).
  struct RowSpace {
    std::vector<int64_t> full;
    int kept = -1;
  };
  enum class RowClass : uint8_t { kNone, kFull, kRowKeep, kRowFlat };

  static RowClass ClassOf(const RowSpace& sp, absl::Span<const int64_t> dims) {
    const std::vector<int64_t>& full = sp.full;
    if (std::equal(dims.begin(), dims.end(), full.begin(), full.end())) return RowClass::kFull;
    if (sp.kept < 0) return RowClass::kNone;
    const size_t k = static_cast<size_t>(sp.kept);
    if (dims.size() == full.size() && std::equal(full.begin(), full.begin() + k, dims.begin()) &&
        std::all_of(dims.begin() + k, dims.end(), [](int64_t d) { return d == 1; })) {
      return RowClass::kRowKeep;
    }
    if (dims.size() == k && std::equal(dims.begin(), dims.end(), full.begin())) {
      return RowClass::kRowFlat;
    }
    return RowClass::kNone;
  }

  bool TouchesComplexDType(const ValidatedNode& node) const {
    if (IsComplex(node.type.output.dtype) || IsComplex(node.type.compute_dtype)) return true;
    return std::any_of(node.input_types.begin(), node.input_types.end(),
                       [](const ValueType& t) { return IsComplex(t.dtype); });
  }

  // The number of kept axes of a reduction a row program takes (its axes a
  // non-empty suffix of its input's), or -1.
  int RowReductionKept(const ValidatedNode& node) const {
    const std::string& op = node.op->name;
    if (!IsRowReductionOp(op)) return -1;
    if (TouchesComplexDType(node)) return -1;
    if ((op == "var" || op == "std") && !IsFloat(node.type.compute_dtype)) return -1;
    auto it = node.attrs.find("axes");
    if (it == node.attrs.end()) return -1;
    const auto* axes = std::get_if<std::vector<int64_t>>(&it->second);
    const int rank = node.input_types[0].shape.rank();
    if (axes == nullptr || axes->empty()) return -1;
    const int k = rank - static_cast<int>(axes->size());
    for (int a = k; a < rank; ++a) {
      if (std::find(axes->begin(), axes->end(), a) == axes->end()) return -1;
    }
    return k;
  }

  // Whether node n fits the row space (fixing its kept axes at the first
  // reduction).
  bool FitsRows(int n, RowSpace& sp) const {
    const ValidatedNode& node = graph_.nodes[n];
    if (TouchesComplexDType(node)) return false;
    if (node.op->family == OpFamily::kElementwise) {
      return ClassOf(sp, node.type.output.shape.dims()) != RowClass::kNone;
    }
    if (node.op->family != OpFamily::kReduction) return false;
    const int k = RowReductionKept(node);
    const absl::Span<const int64_t> in = node.input_types[0].shape.dims();
    if (k < 0 || !std::equal(in.begin(), in.end(), sp.full.begin(), sp.full.end())) return false;
    if (sp.kept >= 0) return sp.kept == k;
    int64_t row = 1;
    int64_t rows = 1;
    for (int d = 0; d < static_cast<int>(in.size()); ++d) (d < k ? rows : row) *= in[d];
    // A row of one element keeps the full and the row shapes apart badly
    // (and gains nothing).
    if (row < 2 || row > options_.max_row_length || rows < 1) return false;
    sp.kept = k;
    return true;
  }

  // Grows row programs from the last step back: a step joins when its value
  // is read only inside the program (so the program's root is the one value
  // leaving it, and merging keeps the steps acyclic) and its nodes fit.
  void FuseRows() {
    std::vector<int> order;
    for (int s = 0; s < static_cast<int>(steps_.size()); ++s) {
      if (alive_[s]) order.push_back(s);
    }
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return steps_[a].root > steps_[b].root; });
    std::vector<bool> in_group(n_, false);
    for (int seed : order) {
      if (!alive_[seed]) continue;
      const Step& first = steps_[seed];
      RowSpace sp;
      if (first.kind == StepKind::kElementwise) {
        const absl::Span<const int64_t> d = graph_.nodes[first.root].type.output.shape.dims();
        sp.full.assign(d.begin(), d.end());
      } else if (first.kind == StepKind::kReduction && first.reduction >= 0) {
        const absl::Span<const int64_t> d =
            graph_.nodes[first.reduction].input_types[0].shape.dims();
        sp.full.assign(d.begin(), d.end());
      } else {
        continue;
      }
      std::vector<int> group = {seed};
      bool fits = true;
      for (int n : first.nodes) fits = fits && FitsRows(n, sp);
      if (!fits) continue;
      for (int n : first.nodes) in_group[n] = true;
      size_t total = first.nodes.size();
      for (bool grew = true; grew;) {
        grew = false;
        for (size_t g = 0; g < group.size(); ++g) {
          const std::vector<int> nodes = steps_[group[g]].nodes;
          for (int n : nodes) {
            for (int p : NodeInputs(n)) {
              if (in_group[p]) continue;
              const int ps = step_of_[p];
              const Step& producer = steps_[ps];
              if (!alive_[ps] || producer.root != p || is_output_[p] ||
                  (producer.kind != StepKind::kElementwise &&
                   producer.kind != StepKind::kReduction) ||
                  total + producer.nodes.size() > static_cast<size_t>(options_.max_fused_ops)) {
                continue;
              }
              if (!std::all_of(consumers_[p].begin(), consumers_[p].end(),
                               [&](int c) { return in_group[c]; })) {
                continue;
              }
              RowSpace trial = sp;
              if (!std::all_of(producer.nodes.begin(), producer.nodes.end(),
                               [&](int m) { return FitsRows(m, trial); })) {
                continue;
              }
              sp = std::move(trial);
              for (int m : producer.nodes) in_group[m] = true;
              total += producer.nodes.size();
              group.push_back(ps);
              grew = true;
            }
          }
        }
      }
      std::vector<int> nodes;
      for (int s : group) nodes.insert(nodes.end(), steps_[s].nodes.begin(), steps_[s].nodes.end());
      for (int n : nodes) in_group[n] = false;
      if (!RowProgramHolds(nodes, sp, group.size())) continue;
      std::sort(nodes.begin(), nodes.end());
      Step& step = steps_[seed];
      for (size_t g = 1; g < group.size(); ++g) {
        steps_[group[g]].nodes.clear();
        alive_[group[g]] = false;
      }
      for (int n : nodes) step_of_[n] = seed;
      step.kind = StepKind::kRows;
      step.reduction = -1;
      step.nodes = std::move(nodes);
    }
  }

  // The rules a whole row program keeps: a reduction, full nodes reading
  // row values only with keepdims, and worth a step of its own.
  bool RowProgramHolds(const std::vector<int>& nodes, const RowSpace& sp, size_t steps) const {
    if (sp.kept < 0) return false;
    bool two_pass = false;
    for (int n : nodes) {
      const ValidatedNode& node = graph_.nodes[n];
      two_pass |= node.op->name == "var" || node.op->name == "std";
      if (ClassOf(sp, node.type.output.shape.dims()) != RowClass::kFull) continue;
      for (int p : NodeInputs(n)) {
        if (std::find(nodes.begin(), nodes.end(), p) == nodes.end()) continue;
        if (ClassOf(sp, graph_.nodes[p].type.output.shape.dims()) == RowClass::kRowFlat) {
          return false;
        }
      }
    }
    return steps >= 2 || two_pass;
  }

  std::string Describe(const Step& step) const {
    auto names = [&](auto begin, auto end) {
      std::vector<std::string> ops;
      for (auto it = begin; it != end; ++it) ops.push_back(graph_.nodes[*it].op->name);
      return absl::StrJoin(ops, ", ");
    };
    if (step.kind == StepKind::kElementwise) {
      if (step.nodes.size() == 1) return graph_.nodes[step.root].op->name;
      return absl::StrCat("fused elementwise [", names(step.nodes.begin(), step.nodes.end()), "]");
    }
    if (step.kind == StepKind::kRows) {
      return absl::StrCat("rows [", names(step.nodes.begin(), step.nodes.end()), "]");
    }
    if (step.kind == StepKind::kShape && step.nodes.size() > 1) {
      return absl::StrCat("compress [", names(step.nodes.begin(), step.nodes.end()), "]");
    }
    if (step.kind == StepKind::kReduction) {
      auto at = std::find(step.nodes.begin(), step.nodes.end(), step.reduction);
      std::string out = graph_.nodes[step.reduction].op->name;
      if (at != step.nodes.begin()) {
        absl::StrAppend(&out, " prologue [", names(step.nodes.begin(), at), "]");
      }
      if (at + 1 != step.nodes.end()) {
        absl::StrAppend(&out, " epilogue [", names(at + 1, step.nodes.end()), "]");
      }
      return out;
    }
    return graph_.nodes[step.root].op->name;
  }

  Plan Finish(absl::Span<const int> outputs) {
    std::vector<Step> live;
    for (size_t s = 0; s < steps_.size(); ++s) {
      if (!alive_[s]) continue;
      // A step whose value is read by another step, with no other reason
      // recorded, ended because its consumer could not join it.
      if (steps_[s].cut == FusionCut::kNone && !consumers_[steps_[s].root].empty()) {
        steps_[s].cut = FusionCut::kNotFusible;
      }
      live.push_back(std::move(steps_[s]));
    }
    // Ordering steps by their root is topological: a step reads only the
    // roots of other steps, and every such root precedes the reader.
    std::sort(live.begin(), live.end(),
              [](const Step& a, const Step& b) { return a.root < b.root; });
    Plan plan;
    plan.output_nodes.assign(outputs.begin(), outputs.end());
    plan.node_step.assign(n_, -1);
    plan.last_use_step.assign(n_, -1);
    for (size_t s = 0; s < live.size(); ++s) {
      live[s].description = Describe(live[s]);
      for (int node : live[s].nodes) plan.node_step[node] = static_cast<int>(s);
    }
    for (size_t s = 0; s < live.size(); ++s) {
      for (int node : live[s].nodes) {
        for (int p : NodeInputs(node)) {
          if (plan.node_step[p] != static_cast<int>(s)) {
            plan.last_use_step[p] = std::max(plan.last_use_step[p], static_cast<int>(s));
          }
        }
      }
    }
    for (int o : outputs) plan.last_use_step[o] = static_cast<int>(live.size());
    plan.steps = std::move(live);
    return plan;
  }

  const ValidatedGraph& graph_;
  const PlanOptions& options_;
  const int n_;
  std::vector<std::set<int>> consumers_;
  std::vector<bool> is_output_;
  std::vector<bool> needed_;  // the outputs depend on it
  std::vector<int> step_of_;
  std::vector<Step> steps_;
  std::vector<bool> alive_;
};

void AppendType(std::string* out, const ValueType& type) {
  absl::StrAppend(out, DTypeName(type.dtype), type.shape.ToString(), type.weak ? "w" : "");
}

struct AttrPrinter {
  std::string* out;
  void operator()(int64_t v) const { absl::StrAppend(out, "i", v); }
  void operator()(double v) const { absl::StrAppend(out, "f", absl::StrCat(v)); }
  void operator()(bool v) const { absl::StrAppend(out, v ? "T" : "F"); }
  void operator()(const std::string& v) const { absl::StrAppend(out, "s", v.size(), ":", v); }
  void operator()(DType v) const { absl::StrAppend(out, "d", DTypeName(v)); }
  void operator()(const std::vector<int64_t>& v) const {
    absl::StrAppend(out, "I[", absl::StrJoin(v, ","), "]");
  }
  void operator()(const std::vector<double>& v) const {
    absl::StrAppend(out, "F[", absl::StrJoin(v, ","), "]");
  }
  void operator()(const std::vector<std::string>& v) const {
    absl::StrAppend(out, "S[");
    for (const std::string& s : v) absl::StrAppend(out, s.size(), ":", s, ",");
    absl::StrAppend(out, "]");
  }
};

}  // namespace

bool IsRowReductionOp(absl::string_view op) {
  static constexpr absl::string_view kOps[] = {"sum", "prod", "min", "max", "mean",
                                               "any", "all",  "var", "std"};
  return std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
}

absl::StatusOr<std::shared_ptr<const Plan>> BuildPlan(const ValidatedGraph& graph,
                                                      absl::Span<const int> output_nodes,
                                                      const PlanOptions& options) {
  for (int o : output_nodes) {
    if (o < 0 || o >= static_cast<int>(graph.nodes.size())) {
      return absl::InvalidArgumentError(absl::StrCat("output node index ", o, " out of range"));
    }
  }
  Planner planner(graph, output_nodes, options);
  static std::atomic<uint64_t> next_id{1};
  Plan plan = planner.Build(output_nodes);
  plan.id = next_id.fetch_add(1, std::memory_order_relaxed);
  return std::make_shared<const Plan>(std::move(plan));
}

std::string PlanSignature(const ValidatedGraph& graph, absl::Span<const int> output_nodes) {
  std::string out;
  out.reserve(64 * (graph.nodes.size() + 1));
  absl::StrAppend(&out, "A", graph.arrays.size(), ":");
  for (const ValueType& t : graph.array_types) {
    AppendType(&out, t);
    out += ';';
  }
  absl::StrAppend(&out, "L", graph.literals.size(), ":");
  for (const ValueType& t : graph.literal_types) {
    AppendType(&out, t);
    out += ';';
  }
  for (const ValidatedNode& node : graph.nodes) {
    absl::StrAppend(&out, "|", node.op->name, "(");
    for (const ValueRef& ref : node.inputs) {
      absl::StrAppend(&out, absl::string_view(&"ALN"[static_cast<int>(ref.kind)], 1), ref.index,
                      ",");
    }
    out += ')';
    for (const auto& [name, value] : node.attrs) {
      absl::StrAppend(&out, name, "=");
      std::visit(AttrPrinter{&out}, value);
      out += ',';
    }
    // What a node computes in and the types it reads follow from literal
    // values too (lt(uint8, -3) compares in int64), and code generation
    // depends on them.
    out += ':';
    for (const ValueType& t : node.input_types) {
      AppendType(&out, t);
      out += ',';
    }
    absl::StrAppend(&out, "c", DTypeName(node.type.compute_dtype), "->");
    AppendType(&out, node.type.output);
  }
  absl::StrAppend(&out, "|O", absl::StrJoin(output_nodes, ","));
  return out;
}

absl::StatusOr<PlanCache::Result> PlanCache::GetOrBuild(const ValidatedGraph& graph,
                                                        absl::Span<const int> output_nodes) {
  std::string key = PlanSignature(graph, output_nodes);
  {
    absl::MutexLock lock(&mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++stats_.hits;
      return Result{it->second->second, true};
    }
  }
  absl::StatusOr<std::shared_ptr<const Plan>> plan = BuildPlan(graph, output_nodes, options_);
  if (!plan.ok()) return plan.status();
  absl::MutexLock lock(&mu_);
  ++stats_.misses;
  if (index_.find(key) == index_.end()) {
    lru_.emplace_front(key, *plan);
    index_.emplace(std::move(key), lru_.begin());
    while (static_cast<int>(lru_.size()) > max_entries_) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
      ++stats_.evictions;
    }
  }
  return Result{*plan, false};
}

PlanCache::Stats PlanCache::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s = stats_;
  s.entries = static_cast<int64_t>(lru_.size());
  return s;
}

}  // namespace gpuflow

// GraphRunner's prepared graphs (PrepareGraph, ReleaseGraph, Execute by
// handle): what a session keeps, and how a request binds arrays and scalar
// values to it. See graph_runner.h and docs/performance.md.
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/ir/echo.h"
#include "server/graph_convert.h"
#include "server/graph_runner.h"
#include "server/proto_convert.h"

namespace gpuflow::server {

std::optional<absl::Duration> GraphRunner::LastRunTime(Session& session, uint64_t handle) const {
  std::shared_ptr<const Prepared> prepared = session.FindPreparedGraph(handle);
  if (prepared == nullptr) return std::nullopt;
  const int64_t ns = prepared->last_run_ns->load();
  if (ns < 0) return std::nullopt;
  return absl::Nanoseconds(ns);
}

absl::StatusOr<std::shared_ptr<const GraphRunner::Prepared>> GraphRunner::Bind(
    Session& session, const v1::ExecuteRequest& request, const CallerPermissions& caller,
    std::vector<Array>* arrays, bool* revalidated) {
  *revalidated = false;
  if (request.graph().nodes_size() > 0) {
    return absl::InvalidArgumentError(
        "an Execute runs either its graph or a prepared_graph, and this one names both");
  }
  std::shared_ptr<const Prepared> prepared = session.FindPreparedGraph(request.prepared_graph());
  if (prepared == nullptr || prepared->ir == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the session holds no prepared graph ", request.prepared_graph(),
        " (never prepared, released, or forgotten for newer ones: a session keeps at most ",
        limits_.max_prepared_graphs, "); prepare it again"));
  }
  const std::vector<std::string>& outputs = prepared->output_ids;
  if (request.outputs_size() != static_cast<int>(outputs.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "prepared graph ", request.prepared_graph(), " has ", outputs.size(), " outputs (",
        Echo(absl::StrJoin(outputs, ", ")), "), the request names ", request.outputs_size()));
  }
  for (int i = 0; i < request.outputs_size(); ++i) {
    if (request.outputs(i).node() == outputs[i]) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "output ", i, " names node ", Echo(request.outputs(i).node()), "; prepared graph ",
        request.prepared_graph(), " has ", Echo(outputs[i]), " there"));
  }

  const ValidatedGraph& graph = prepared->graph;
  if (request.arrays_size() != 0 &&
      request.arrays_size() != static_cast<int>(graph.arrays.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("prepared graph ", request.prepared_graph(), " reads ", graph.arrays.size(),
                     " arrays, the request binds ", request.arrays_size()));
  }
  arrays->clear();
  arrays->reserve(graph.arrays.size());
  for (size_t i = 0; i < graph.arrays.size(); ++i) {
    const std::string& name =
        request.arrays_size() == 0 ? graph.arrays[i] : request.arrays(static_cast<int>(i));
    absl::StatusOr<Array> array = session.GetArray(name);
    if (!array.ok()) {
      return absl::Status(array.status().code(),
                          absl::StrCat("array ", i, " (", Echo(graph.arrays[i]),
                                       " when prepared): ", array.status().message()));
    }
    const ValueType& type = graph.array_types[i];
    if (array->dtype != type.dtype || array->shape != type.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "array ", i, " (", Echo(name), ") is ", DTypeName(array->dtype), " ",
          array->shape.ToString(), "; prepared graph ", request.prepared_graph(), " takes ",
          DTypeName(type.dtype), " ", type.shape.ToString(), " there: prepare it for those types"));
    }
    arrays->push_back(*std::move(array));
  }

  if (request.scalars_size() == 0) return prepared;
  const std::vector<PreparedGraph::ScalarSlot>& slots = prepared->scalars;
  if (request.scalars_size() != static_cast<int>(slots.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("prepared graph ", request.prepared_graph(), " has ", slots.size(),
                     " scalars, the request binds ", request.scalars_size()));
  }
  std::vector<Scalar> scalars;
  scalars.reserve(slots.size());
  std::vector<std::pair<int, LiteralArray>> changed;
  bool changed_integer = false;
  for (int i = 0; i < request.scalars_size(); ++i) {
    absl::StatusOr<Scalar> scalar = ScalarFromProto(request.scalars(i));
    if (!scalar.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("scalar ", i, ": ", scalar.status().message()));
    }
    absl::StatusOr<std::pair<LiteralArray, ValueType>> value = ScalarLiteral(*scalar);
    if (!value.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("scalar ", i, ": ", value.status().message()));
    }
    const PreparedGraph::ScalarSlot& slot = slots[i];
    if (value->second.dtype != slot.type.dtype || value->second.weak != slot.type.weak) {
      auto kind = [](const ValueType& t) {
        return absl::StrCat(t.weak ? "a Python-style (weak) " : "a strong ", DTypeName(t.dtype));
      };
      return absl::InvalidArgumentError(absl::StrCat(
          "scalar ", i, " is ", kind(value->second), "; prepared graph ", request.prepared_graph(),
          " takes ", kind(slot.type), " there: prepare it for that kind"));
    }
    scalars.push_back(*scalar);
    if (value->first.bytes == slot.value.bytes) continue;
    // Only an integer's value can change what validation makes of a node
    // (the dtype a comparison runs in, whether it is in range).
    if (IsInteger(slot.type.dtype)) changed_integer = true;
    changed.emplace_back(slot.literal, std::move(value->first));
  }
  if (changed.empty()) return prepared;
  if (changed_integer) {
    Graph ir = *prepared->ir;
    for (size_t i = 0; i < slots.size(); ++i) {
      ir.nodes[slots[i].node].inputs[slots[i].input].scalar = scalars[i];
    }
    // The arrays are those of the prepared graph, of the same types.
    ArrayTypeLookup lookup = [&graph](const std::string& name) -> absl::StatusOr<ValueType> {
      for (size_t i = 0; i < graph.arrays.size(); ++i) {
        if (graph.arrays[i] == name) return graph.array_types[i];
      }
      return absl::InternalError(absl::StrCat("prepared graph lost array ", Echo(name)));
    };
    absl::StatusOr<Prepared> fresh = PrepareConverted(ir, lookup, outputs, caller);
    if (!fresh.ok()) return fresh.status();
    fresh->last_run_ns = prepared->last_run_ns;
    *revalidated = true;
    return std::make_shared<const Prepared>(*std::move(fresh));
  }
  auto bound = std::make_shared<Prepared>(*prepared);
  for (auto& [literal, value] : changed) bound->graph.literals[literal] = std::move(value);
  return bound;
}

absl::Status GraphRunner::Keep(Session& session, std::shared_ptr<const Prepared> prepared,
                               int64_t graph_bytes, bool compile, v1::PreparedGraphInfo* info) {
  if (compile) {
    // The CPU backend compiles nothing; the CUDA backend compiles (or finds
    // in its kernel cache) every kernel Run would launch.
    absl::StatusOr<PrecompileResult> compiled =
        session.backend().Precompile(prepared->graph, *prepared->plan.plan);
    if (!compiled.ok()) return compiled.status();
    info->set_kernels_compiled(compiled->kernels_compiled);
    info->set_kernels_cached(compiled->kernels_cached);
    info->set_compile_seconds(compiled->compile_seconds);
  }
  // The converted graph, the validated one and the plan: a few times the
  // wire graph.
  const int64_t bytes = 1024 + 8 * graph_bytes;
  const ValidatedGraph& graph = prepared->graph;
  for (size_t i = 0; i < graph.arrays.size(); ++i) {
    info->add_arrays(graph.arrays[i]);
    v1::ArrayInfo* type = info->add_array_types();
    type->set_name(graph.arrays[i]);
    type->set_dtype(DTypeToProto(graph.array_types[i].dtype));
    const Shape& shape = graph.array_types[i].shape;
    type->mutable_shape()->Assign(shape.dims().begin(), shape.dims().end());
    type->set_num_elements(shape.num_elements());
    type->set_num_bytes(shape.num_elements() * ItemSize(graph.array_types[i].dtype));
  }
  info->set_num_scalars(static_cast<int32_t>(prepared->scalars.size()));
  for (const std::string& id : prepared->output_ids) info->add_output_nodes(id);
  absl::StatusOr<uint64_t> handle =
      session.AddPreparedGraph(std::move(prepared), bytes, limits_.max_prepared_graphs);
  if (!handle.ok()) return handle.status();
  info->set_handle(*handle);
  info->set_metadata_bytes(bytes);
  return absl::OkStatus();
}

absl::Status GraphRunner::PrepareGraph(Session& session, const v1::PrepareGraphRequest& request,
                                       v1::PreparedGraphInfo* info, RunControl* control,
                                       const CallerPermissions& caller) {
  if (limits_.max_prepared_graphs <= 0) {
    return absl::FailedPreconditionError(
        "this server keeps no prepared graphs (--max_prepared_graphs=0)");
  }
  ArrayTypeLookup lookup = [&](const std::string& name) -> absl::StatusOr<ValueType> {
    auto it = request.array_types().find(name);
    if (it == request.array_types().end()) {
      absl::StatusOr<Array> array = session.GetArray(name);
      if (!array.ok()) return array.status();
      return ValueType{array->dtype, array->shape, false};
    }
    absl::StatusOr<DType> dtype = DTypeFromProto(it->second.dtype());
    if (!dtype.ok()) return dtype.status();
    absl::StatusOr<Shape> shape = ShapeFromProto(it->second.shape());
    if (!shape.ok()) return shape.status();
    return ValueType{*dtype, *std::move(shape), false};
  };
  std::vector<std::string> output_ids(request.output_nodes().begin(), request.output_nodes().end());
  absl::StatusOr<Prepared> prepared =
      Prepare(request.graph(), lookup, output_ids, caller, /*keep_ir=*/true);
  if (!prepared.ok()) return prepared.status();
  if (control != nullptr) {
    if (absl::Status s = control->CheckContinue(); !s.ok()) return s;
  }
  return Keep(session, std::make_shared<const Prepared>(*std::move(prepared)),
              static_cast<int64_t>(request.graph().ByteSizeLong()), /*compile=*/true, info);
}

absl::Status GraphRunner::ReleaseGraph(Session& session, const v1::ReleaseGraphRequest& request,
                                       v1::ReleaseGraphResponse* response) {
  absl::StatusOr<int64_t> freed = session.ReleasePreparedGraph(request.handle());
  if (!freed.ok()) return freed.status();
  response->set_freed_bytes(*freed);
  return absl::OkStatus();
}

}  // namespace gpuflow::server

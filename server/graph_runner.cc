#include "server/graph_runner.h"

#include <algorithm>
#include <atomic>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "engine/ir/echo.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "server/graph_convert.h"
#include "server/proto_convert.h"
#include "server/shared_memory.h"

namespace gpuflow::server {

namespace {

// Graphs of more protobuf bytes than this skip the request cache.
constexpr int64_t kMaxCachedGraphBytes = int64_t{64} << 10;
// Work under both bounds takes tens of microseconds on a GPU (64 MiB at
// ~4 TB/s is 16 us; 2^31 flops at ~50 TFLOP/s is 43 us).
constexpr int64_t kShortWorkBytes = int64_t{64} << 20;
constexpr double kShortWorkFlops = 2147483648.0;

// Whether the graph's device work is surely short: the bytes its arrays and
// nodes hold and its matmul flops are small, and it runs no custom code
// (whose cost nobody can tell). Such requests go ahead of long ones
// (Session::priority_stream).
bool ShortWork(const ValidatedGraph& graph) {
  double bytes = 0;
  double flops = 0;
  auto add_bytes = [&](const ValueType& type) {
    bytes +=
        static_cast<double>(type.shape.num_elements()) * static_cast<double>(ItemSize(type.dtype));
  };
  for (const ValueType& type : graph.array_types) add_bytes(type);
  for (const ValidatedNode& node : graph.nodes) {
    if (node.op->family == OpFamily::kCustom) return false;
    add_bytes(node.type.output);
    if (node.op->family == OpFamily::kLinalg && !node.input_types.empty()) {
      const Shape& a = node.input_types[0].shape;
      const int64_t k = a.rank() > 0 ? a.dims().back() : 1;
      flops +=
          2.0 * static_cast<double>(node.type.output.shape.num_elements()) * static_cast<double>(k);
    }
  }
  return bytes <= static_cast<double>(kShortWorkBytes) && flops <= kShortWorkFlops;
}

// Roughly what a request-cache entry holds: the key twice, the validated
// graph and its plan a few times the key again.
int64_t EntryBytes(const std::string& key) { return 4 * static_cast<int64_t>(key.size()); }

double SecondsSince(absl::Time start) { return absl::ToDoubleSeconds(absl::Now() - start); }

// Bytes of a protobuf varint holding `v`.
int64_t VarintBytes(uint64_t v) {
  int64_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
// A length-delimited field of `payload` bytes, with its tag.
int64_t FieldBytes(int64_t payload) {
  return 1 + VarintBytes(static_cast<uint64_t>(payload)) + payload;
}
// A packed repeated int64 field (a shape).
int64_t DimsFieldBytes(const Shape& shape) {
  int64_t payload = 0;
  for (int64_t d : shape.dims()) payload += VarintBytes(static_cast<uint64_t>(d));
  return payload == 0 ? 0 : FieldBytes(payload);
}
// What one OutputResult adds to an ExecuteResponse, as protobuf encodes it
// (an upper bound: every scalar field counted as present).
int64_t OutputReplyBytes(const v1::OutputSpec& spec, const ValueType& type, int64_t bytes) {
  const int64_t dims = DimsFieldBytes(type.shape);
  const int64_t elements = type.shape.num_elements();
  const int64_t info = FieldBytes(static_cast<int64_t>(spec.store_as().size())) + 3 + dims + 1 +
                       VarintBytes(static_cast<uint64_t>(elements)) + 1 +
                       VarintBytes(static_cast<uint64_t>(bytes));
  int64_t result = FieldBytes(static_cast<int64_t>(spec.node().size())) + FieldBytes(info);
  if (spec.return_inline()) result += FieldBytes(3 + dims + FieldBytes(bytes));
  return FieldBytes(result);
}

// Array lookup that also keeps what it found, so the run uses exactly the
// arrays validation saw even if the session replaces them meanwhile.
class ArraySnapshot {
 public:
  explicit ArraySnapshot(Session& session) : session_(session) {}
  ArrayTypeLookup Lookup() {
    return [this](const std::string& name) -> absl::StatusOr<ValueType> {
      absl::StatusOr<Array> array = session_.GetArray(name);
      if (!array.ok()) return array.status();
      arrays_[name] = *array;
      return ValueType{array->dtype, array->shape, false};
    };
  }
  std::vector<Array> InOrder(const ValidatedGraph& graph) const {
    std::vector<Array> out;
    out.reserve(graph.arrays.size());
    for (const std::string& name : graph.arrays) out.push_back(arrays_.at(name));
    return out;
  }

 private:
  Session& session_;
  absl::flat_hash_map<std::string, Array> arrays_;
};

void FillTimings(const RunResult& run, v1::Timings* t) {
  t->set_compile_seconds(run.compile_seconds);
  t->set_kernels_compiled(run.kernels_compiled);
  t->set_kernel_cache_hits(run.kernel_cache_hits);
  if (run.gpu_seconds.has_value()) t->set_gpu_seconds(*run.gpu_seconds);
  for (const StepTiming& step : run.steps) {
    v1::StepTiming* s = t->add_steps();
    s->set_index(step.index);
    s->set_kind(std::string(StepKindName(step.kind)));
    s->set_description(step.description);
    s->set_host_seconds(step.host_seconds);
    if (step.gpu_seconds.has_value()) s->set_gpu_seconds(*step.gpu_seconds);
  }
}

}  // namespace

GraphRunner::GraphRunner(Backend& backend, PlanCache& plans, GraphLimits limits)
    : GraphRunner(std::make_unique<DeviceSet>(backend), nullptr, plans, limits) {}

GraphRunner::GraphRunner(const DeviceSet& devices, PlanCache& plans, GraphLimits limits)
    : GraphRunner(nullptr, &devices, plans, limits) {}

GraphRunner::GraphRunner(std::unique_ptr<DeviceSet> own, const DeviceSet* devices, PlanCache& plans,
                         GraphLimits limits)
    : own_devices_(std::move(own)),
      devices_(devices != nullptr ? *devices : *own_devices_),
      plans_(plans),
      limits_(limits) {}

absl::StatusOr<GraphRunner::Prepared> GraphRunner::Prepare(
    const v1::Graph& proto, const ArrayTypeLookup& lookup,
    const std::vector<std::string>& output_ids, const CallerPermissions& caller, bool keep_ir) {
  if (proto.nodes_size() > limits_.max_graph_nodes) {
    return absl::ResourceExhaustedError(absl::StrCat("graph has ", proto.nodes_size(),
                                                     " nodes, more than --max_graph_nodes (",
                                                     limits_.max_graph_nodes, ")"));
  }
  if (proto.nodes_size() == 0) return absl::InvalidArgumentError("graph has no nodes");
  const absl::Time convert_start = absl::Now();
  absl::StatusOr<Graph> graph = GraphFromProto(proto);
  if (!graph.ok()) return graph.status();
  const double convert_seconds = SecondsSince(convert_start);
  absl::StatusOr<Prepared> prepared = PrepareConverted(*graph, lookup, output_ids, caller);
  if (!prepared.ok()) return prepared.status();
  prepared->convert_seconds = convert_seconds;
  if (!keep_ir) return prepared;
  // Validation makes one literal of each scalar and inline literal input,
  // in graph order.
  int literal = 0;
  for (int n = 0; n < static_cast<int>(graph->nodes.size()); ++n) {
    const std::vector<Input>& inputs = graph->nodes[n].inputs;
    for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
      if (inputs[i].kind == Input::Kind::kLiteral) ++literal;
      if (inputs[i].kind != Input::Kind::kScalar) continue;
      absl::StatusOr<std::pair<LiteralArray, ValueType>> value = ScalarLiteral(inputs[i].scalar);
      if (!value.ok()) return value.status();
      prepared->scalars.push_back({.node = n,
                                   .input = i,
                                   .literal = literal++,
                                   .value = std::move(value->first),
                                   .type = std::move(value->second)});
    }
  }
  if (literal != static_cast<int>(prepared->graph.literals.size())) {
    return absl::InternalError(absl::StrCat("the graph has ", literal, " literal inputs but ",
                                            prepared->graph.literals.size(), " literals"));
  }
  prepared->output_ids.reserve(prepared->outputs.size());
  for (int o : prepared->outputs) prepared->output_ids.push_back(prepared->graph.nodes[o].id);
  prepared->ir = std::make_shared<const Graph>(*std::move(graph));
  return prepared;
}

absl::StatusOr<GraphRunner::Prepared> GraphRunner::PrepareConverted(
    const Graph& graph, const ArrayTypeLookup& lookup, const std::vector<std::string>& output_ids,
    const CallerPermissions& caller) {
  Prepared prepared;
  const absl::Time start = absl::Now();
  absl::StatusOr<ValidatedGraph> validated = ValidateGraph(
      graph, lookup,
      {.max_graph_nodes = limits_.max_graph_nodes, .max_inline_bytes = limits_.max_inline_bytes});
  if (!validated.ok()) return validated.status();
  if (!caller.custom_kernels) {
    for (const ValidatedNode& node : validated->nodes) {
      if (node.op->name != "elementwise_kernel" && node.op->name != "reduction_kernel") continue;
      return absl::PermissionDeniedError(absl::StrCat(
          "node ", Echo(node.id), " (", node.op->name, "): custom kernels are not allowed for ",
          caller.who.empty() ? std::string("this caller") : caller.who,
          " (allow_custom_kernels in --auth_tokens_file: their code is compiled as given and can "
          "touch any memory of the process)"));
    }
  }
  if (!limits_.allow_raw_kernels || !caller.raw_kernels) {
    for (const ValidatedNode& node : validated->nodes) {
      if (node.op->name != "raw_kernel") continue;
      if (!limits_.allow_raw_kernels) {
        return absl::PermissionDeniedError(absl::StrCat(
            "node ", Echo(node.id),
            " (raw_kernel): raw kernels are disabled on this server; start gpuflowd with "
            "--allow_raw_kernels to accept them (their code can touch any memory of the "
            "process)"));
      }
      return absl::PermissionDeniedError(
          absl::StrCat("node ", Echo(node.id), " (raw_kernel): raw kernels are not allowed for ",
                       caller.who.empty() ? std::string("this caller") : caller.who,
                       " (allow_raw_kernels in --auth_tokens_file: their code can touch any "
                       "memory of the process)"));
    }
  }
  prepared.graph = *std::move(validated);
  if (output_ids.empty()) {
    std::vector<bool> consumed(prepared.graph.nodes.size(), false);
    for (const ValidatedNode& node : prepared.graph.nodes) {
      for (const ValueRef& ref : node.inputs) {
        if (ref.kind == ValueRef::Kind::kNode) consumed[ref.index] = true;
      }
    }
    for (size_t i = 0; i < consumed.size(); ++i) {
      if (!consumed[i]) prepared.outputs.push_back(static_cast<int>(i));
    }
  } else {
    prepared.outputs.reserve(output_ids.size());
    for (const std::string& id : output_ids) {
      const int index = prepared.graph.FindNode(id);
      if (index < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("output names node ", Echo(id), ", which the graph does not have"));
      }
      prepared.outputs.push_back(index);
    }
  }
  prepared.validate_seconds = SecondsSince(start);
  prepared.short_work = ShortWork(prepared.graph);
  const absl::Time plan_start = absl::Now();
  absl::StatusOr<PlanCache::Result> plan = plans_.GetOrBuild(prepared.graph, prepared.outputs);
  if (!plan.ok()) return plan.status();
  prepared.plan = *std::move(plan);
  prepared.plan_seconds = SecondsSince(plan_start);
  return prepared;
}

absl::Status GraphRunner::Execute(Session& session, const v1::ExecuteRequest& request,
                                  v1::ExecuteResponse* response, RunControl* control,
                                  const CallerPermissions& caller, const RequestKey* given_key,
                                  CallTiming timing) {
  const absl::Time start = absl::Now();
  const absl::Time received = std::min(timing.received, start);
  if (request.outputs_size() == 0) {
    return absl::InvalidArgumentError("Execute needs at least one output");
  }
  std::vector<std::string> output_ids;
  output_ids.reserve(request.outputs_size());
  for (const v1::OutputSpec& spec : request.outputs()) {
    if (spec.store_as().empty() && !spec.return_inline() && !spec.has_shared_memory()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output ", Echo(spec.node()),
          " is neither stored (store_as), returned (return_inline) nor written to shared memory"));
    }
    if (spec.has_shared_memory()) {
      if (!limits_.allow_shared_memory) {
        return absl::PermissionDeniedError(
            "shared-memory transfers are off on this server; start gpuflowd with "
            "--allow_shared_memory to allow them (for clients on its host)");
      }
      if (spec.return_inline()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "output ", Echo(spec.node()), " is both returned inline and written to shared memory"));
      }
    }
    if (!spec.store_as().empty()) {
      if (absl::Status s = ValidateName(spec.store_as(), "store_as name"); !s.ok()) return s;
    }
    output_ids.push_back(spec.node());
  }
  const bool by_handle = request.prepared_graph() != 0;
  if (by_handle && request.prepare()) {
    return absl::InvalidArgumentError(
        "prepare prepares the request's graph; this request names a prepared_graph instead");
  }
  if (!by_handle && (request.arrays_size() > 0 || request.scalars_size() > 0)) {
    return absl::InvalidArgumentError(
        "arrays and scalars bind a prepared_graph, and this request names none");
  }
  if (request.prepare() && limits_.max_prepared_graphs <= 0) {
    return absl::FailedPreconditionError(
        "this server keeps no prepared graphs (--max_prepared_graphs=0)");
  }
  // The request cache serves graphs sent whole, and not those being
  // prepared (which keep more than it does).
  RequestKey own_key;
  const bool cacheable = !by_handle && !request.prepare();
  const RequestKey* key = cacheable ? given_key : nullptr;
  if (cacheable && key == nullptr && limits_.request_cache_entries > 0) {
    own_key = KeyOf(request, caller);
    key = &own_key;
  }
  std::vector<Array> arrays;
  std::shared_ptr<const Prepared> prepared;
  bool revalidated = false;
  if (by_handle) {
    absl::StatusOr<std::shared_ptr<const Prepared>> bound =
        Bind(session, request, caller, &arrays, &revalidated);
    if (!bound.ok()) return bound.status();
    prepared = *std::move(bound);
  } else if (key != nullptr) {
    prepared = FindPrepared(*key, session, &arrays);
  }
  const bool request_hit = !by_handle && prepared != nullptr;
  if (!by_handle && !request_hit) {
    ArraySnapshot snapshot(session);
    absl::StatusOr<Prepared> fresh =
        Prepare(request.graph(), snapshot.Lookup(), output_ids, caller, request.prepare());
    if (!fresh.ok()) return fresh.status();
    arrays = snapshot.InOrder(fresh->graph);
    prepared = std::make_shared<const Prepared>(*std::move(fresh));
  }
  // Whether this request validated and planned (its phases in Timings).
  const bool planned = by_handle ? revalidated : !request_hit;

  // Results are checked against the limits before anything runs: each
  // output's size, the quota for all of them (inline ones live on the device
  // until copied out), and the size of the reply.
  std::vector<MemoryReservation> reservations(request.outputs_size());
  // The shared-memory regions outputs go to (null: none), held for the run.
  std::vector<std::shared_ptr<const SharedMemoryRegion>> regions(request.outputs_size());
  std::vector<bool> inline_counted(prepared->graph.nodes.size(), false);
  // The reply's fixed part: timings, one per step when profiling.
  int64_t reply_bytes = 256;
  if (request.profile()) {
    for (const Step& step : prepared->plan.plan->steps) {
      reply_bytes += 64 + static_cast<int64_t>(step.description.size());
    }
  }
  for (int i = 0; i < request.outputs_size(); ++i) {
    const v1::OutputSpec& spec = request.outputs(i);
    const ValueType& type = prepared->graph.nodes[prepared->outputs[i]].type.output;
    absl::StatusOr<int64_t> bytes = ByteSize(type.shape, type.dtype);
    if (!bytes.ok()) return bytes.status();
    if (spec.return_inline() && *bytes > limits_.max_inline_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output ", Echo(spec.node()), " has ", *bytes, " bytes, over the inline limit of ",
          limits_.max_inline_bytes, "; store it (store_as) and download it instead"));
    }
    if (!spec.store_as().empty() && *bytes > limits_.max_array_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("output ", Echo(spec.node()), " stored as ", Echo(spec.store_as()), " has ",
                       *bytes, " bytes, over --max_array_bytes (", limits_.max_array_bytes, ")"));
    }
    if (spec.has_shared_memory()) {
      absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> region =
          session.FindSharedMemory(spec.shared_memory().region());
      if (!region.ok()) return region.status();
      if (absl::Status s = (*region)->CheckRange(spec.shared_memory().offset(), *bytes); !s.ok()) {
        return absl::Status(s.code(),
                            absl::StrCat("output ", Echo(spec.node()), ": ", s.message()));
      }
      regions[i] = *std::move(region);
    }
    reply_bytes += OutputReplyBytes(spec, type, *bytes);
    if (reply_bytes > limits_.max_reply_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the reply would exceed the server's message limit of ", limits_.max_reply_bytes,
          " bytes (at output ", i, " of ", request.outputs_size(),
          "); return fewer or smaller outputs inline, or store them (store_as) and download them"));
    }
    // An inline output lives on the device until it is copied out; outputs
    // naming one node share its buffer.
    int64_t reserve = 0;
    if (!spec.store_as().empty()) {
      reserve = Session::StoredBytes(spec.store_as(), type.shape, *bytes);
    } else if (!inline_counted[prepared->outputs[i]]) {
      inline_counted[prepared->outputs[i]] = true;
      reserve = *bytes;
    }
    absl::StatusOr<MemoryReservation> reservation = session.Reserve(reserve);
    if (!reservation.ok()) {
      return absl::Status(
          reservation.status().code(),
          spec.store_as().empty()
              ? absl::StrCat("output ", Echo(spec.node()), ": ", reservation.status().message())
              : absl::StrCat("storing output ", Echo(spec.node()), " as ", Echo(spec.store_as()),
                             ": ", reservation.status().message()));
    }
    reservations[i] = *std::move(reservation);
  }

  const absl::Time run_start = absl::Now();
  // One synchronisation for the run and its inline results: the copies are
  // queued behind the kernels, and the run's device time read after.
  RunOptions options{.profile = request.profile(),
                     .allow_tf32 = request.allow_tf32(),
                     .control = control,
                     .defer_sync = true};
  // Short work goes on the priority stream, after what the session queued
  // on its own (uploads); work on the priority stream is done by the time
  // this returns, so nothing there needs waiting for in turn.
  Backend& backend = session.backend();
  Stream& stream = prepared->short_work ? session.priority_stream() : session.stream();
  if (&stream != &session.stream()) {
    if (absl::Status s = backend.OrderAfter(stream, session.stream()); !s.ok()) return s;
  }
  absl::StatusOr<RunResult> run =
      backend.Run(prepared->graph, *prepared->plan.plan, arrays, stream, options);
  if (!run.ok()) return run.status();
  const double run_seconds = SecondsSince(run_start);

  const absl::Time transfer_start = absl::Now();
  for (int i = 0; i < request.outputs_size(); ++i) {
    const v1::OutputSpec& spec = request.outputs(i);
    const Array& array = run->outputs[i];
    v1::OutputResult* result = response->add_outputs();
    result->set_node(spec.node());
    FillArrayInfo(spec.store_as(), array, result->mutable_info());
    if (spec.return_inline()) {
      v1::InlineArray* value = result->mutable_value();
      value->set_dtype(DTypeToProto(array.dtype));
      value->mutable_shape()->Assign(array.shape.dims().begin(), array.shape.dims().end());
      std::string* data = value->mutable_data();
      data->resize(array.num_bytes());
      if (absl::Status s =
              backend.CopyToHost(*array.buffer, 0, array.num_bytes(), data->data(), stream);
          !s.ok()) {
        return s;
      }
    }
  }
  if (absl::Status s = backend.Synchronize(stream); !s.ok()) return s;
  if (run->gpu_seconds_after_sync) run->gpu_seconds = run->gpu_seconds_after_sync();
  if (run->error_after_sync) {
    if (absl::Status s = run->error_after_sync(); !s.ok()) return s;
  }
  for (int i = 0; i < request.outputs_size(); ++i) {
    if (regions[i] == nullptr) continue;
    const Array& array = run->outputs[i];
    if (array.num_bytes() == 0) continue;
    if (absl::Status s =
            regions[i]->CopyFromDevice(backend, *array.buffer, array.num_bytes(),
                                       request.outputs(i).shared_memory().offset(), stream);
        !s.ok()) {
      return s;
    }
  }
  if (control != nullptr) {
    // The last chance to stop: nothing is stored yet.
    if (absl::Status s = control->CheckContinue(); !s.ok()) return s;
  }
  if (request.prepare()) {
    absl::Status kept =
        Keep(session, prepared, static_cast<int64_t>(request.graph().ByteSizeLong()),
             /*compile=*/false, response->mutable_prepared());
    // A session too full to keep it still gets its results, without a handle.
    if (absl::IsResourceExhausted(kept)) {
      response->clear_prepared();
    } else if (!kept.ok()) {
      return kept;
    }
  }
  for (int i = 0; i < request.outputs_size(); ++i) {
    const v1::OutputSpec& spec = request.outputs(i);
    if (spec.store_as().empty()) continue;
    if (absl::Status s =
            session.PutArray(spec.store_as(), run->outputs[i], std::move(reservations[i]));
        !s.ok()) {
      // The caller never learns the handle of a failed request.
      if (request.prepare()) (void)session.ReleasePreparedGraph(response->prepared().handle());
      return s;
    }
  }
  prepared->last_run_ns->store(absl::ToInt64Nanoseconds(absl::Now() - start));
  if (key != nullptr && !request_hit) Remember(*key, prepared);
  v1::Timings* t = response->mutable_timings();
  FillTimings(*run, t);
  t->set_queue_seconds(absl::ToDoubleSeconds(start - received));
  if (planned) {
    t->set_convert_seconds(prepared->convert_seconds);
    t->set_validate_seconds(prepared->validate_seconds);
    t->set_plan_seconds(prepared->plan_seconds);
  }
  t->set_plan_cache_hit(!planned || prepared->plan.hit);
  t->set_request_cache_hit(request_hit);
  t->set_prepared_graph(by_handle);
  t->set_run_seconds(run_seconds);
  t->set_transfer_seconds(SecondsSince(transfer_start));
  t->set_total_seconds(SecondsSince(received));
  return absl::OkStatus();
}

RequestKey GraphRunner::KeyOf(const v1::ExecuteRequest& request,
                              const CallerPermissions& caller) const {
  RequestKey key;
  // Larger graphs are not cached: validating them costs far more than
  // serialising, and they would crowd the small ones out. Nor are requests
  // by handle or preparing one (Execute).
  if (limits_.request_cache_entries <= 0 || request.prepared_graph() != 0 || request.prepare()) {
    return key;
  }
  // Sizes the graph once (and caches the sizes for the serialisation below).
  const size_t graph_bytes = request.graph().ByteSizeLong();
  if (static_cast<int64_t>(graph_bytes) > kMaxCachedGraphBytes) return key;
  // Length-prefixed parts, so that no two requests share a key. The graph is
  // serialised straight into the key: this runs on every repeat, before the
  // cache is even looked at.
  absl::StrAppend(&key.bytes, graph_bytes, ":");
  const size_t graph_start = key.bytes.size();
  key.bytes.resize(graph_start + graph_bytes);
  {
    google::protobuf::io::ArrayOutputStream stream(key.bytes.data() + graph_start,
                                                   static_cast<int>(graph_bytes));
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    request.graph().SerializeWithCachedSizes(&coded);
  }
  absl::StrAppend(&key.bytes, request.outputs_size(), ":");
  for (const v1::OutputSpec& spec : request.outputs()) {
    absl::StrAppend(&key.bytes, spec.node().size(), ":", spec.node());
  }
  key.bytes.push_back(caller.raw_kernels ? 'R' : 'r');
  key.bytes.push_back(caller.custom_kernels ? 'C' : 'c');
  return key;
}

std::shared_ptr<const GraphRunner::Prepared> GraphRunner::FindPrepared(
    const RequestKey& key, Session& session, std::vector<Array>* arrays) const {
  if (key.bytes.empty()) return nullptr;
  std::shared_ptr<const Prepared> prepared;
  {
    absl::MutexLock lock(&cache_mu_);
    auto it = cache_.find(key.bytes);
    if (it == cache_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    prepared = it->second.prepared;
  }
  arrays->clear();
  arrays->reserve(prepared->graph.arrays.size());
  for (size_t i = 0; i < prepared->graph.arrays.size(); ++i) {
    absl::StatusOr<Array> array = session.GetArray(prepared->graph.arrays[i]);
    if (!array.ok()) return nullptr;  // validation says why
    const ValueType& type = prepared->graph.array_types[i];
    if (array->dtype != type.dtype || array->shape != type.shape) return nullptr;
    arrays->push_back(*std::move(array));
  }
  return prepared;
}

void GraphRunner::Remember(const RequestKey& key, std::shared_ptr<const Prepared> prepared) {
  const int64_t size = EntryBytes(key.bytes);
  if (key.bytes.empty() || limits_.request_cache_entries <= 0 ||
      size > limits_.request_cache_bytes) {
    return;
  }
  absl::MutexLock lock(&cache_mu_);
  auto it = cache_.find(key.bytes);
  if (it != cache_.end()) {
    it->second.prepared = std::move(prepared);
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return;
  }
  while (!lru_.empty() && (static_cast<int64_t>(cache_.size()) >= limits_.request_cache_entries ||
                           cache_bytes_ + size > limits_.request_cache_bytes)) {
    cache_bytes_ -= EntryBytes(lru_.back());
    cache_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(key.bytes);
  cache_.emplace(key.bytes, CachedRequest{.prepared = std::move(prepared), .lru = lru_.begin()});
  cache_bytes_ += size;
}

std::optional<absl::Duration> GraphRunner::LastRunTime(const RequestKey& key) const {
  if (key.bytes.empty()) return std::nullopt;
  absl::MutexLock lock(&cache_mu_);
  auto it = cache_.find(key.bytes);
  if (it == cache_.end()) return std::nullopt;
  const int64_t ns = it->second.prepared->last_run_ns->load();
  if (ns < 0) return std::nullopt;
  return absl::Nanoseconds(ns);
}

int GraphRunner::request_cache_size() const {
  absl::MutexLock lock(&cache_mu_);
  return static_cast<int>(cache_.size());
}

absl::Status GraphRunner::Benchmark(Session& session, const v1::BenchmarkRequest& request,
                                    v1::BenchmarkResponse* response, RunControl* control,
                                    const CallerPermissions& caller) {
  const int n_warmup = request.has_n_warmup() ? request.n_warmup() : 10;
  const int n_repeat = request.has_n_repeat() ? request.n_repeat() : 10000;
  if (n_warmup < 0 || n_repeat < 1) {
    return absl::InvalidArgumentError("n_warmup must be >= 0 and n_repeat >= 1");
  }
  if (n_repeat > limits_.max_benchmark_repeats) {
    return absl::InvalidArgumentError(absl::StrCat("n_repeat ", n_repeat, " is over the limit of ",
                                                   limits_.max_benchmark_repeats,
                                                   " timed runs per Benchmark call"));
  }
  absl::Duration max_duration =
      request.has_max_duration() ? DurationFromProto(request.max_duration()) : absl::Seconds(10);
  if (max_duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("max_duration must be positive");
  }
  max_duration = std::min(max_duration, limits_.max_benchmark_duration);

  std::vector<std::string> output_ids(request.output_nodes().begin(), request.output_nodes().end());
  ArraySnapshot snapshot(session);
  absl::StatusOr<Prepared> prepared =
      Prepare(request.graph(), snapshot.Lookup(), output_ids, caller);
  if (!prepared.ok()) return prepared.status();
  // The outputs of one run live on the device until the next starts.
  int64_t output_bytes = 0;
  for (int o : prepared->outputs) {
    const ValueType& type = prepared->graph.nodes[o].type.output;
    absl::StatusOr<int64_t> bytes = ByteSize(type.shape, type.dtype);
    if (!bytes.ok()) return bytes.status();
    output_bytes += *bytes;
  }
  absl::StatusOr<MemoryReservation> outputs_reservation = session.Reserve(output_bytes);
  if (!outputs_reservation.ok()) {
    return absl::Status(
        outputs_reservation.status().code(),
        absl::StrCat("the benchmark's outputs: ", outputs_reservation.status().message()));
  }
  const std::vector<Array> arrays = snapshot.InOrder(prepared->graph);
  const RunOptions options{
      .profile = false, .allow_tf32 = request.allow_tf32(), .control = control};
  auto run_once = [&]() -> absl::StatusOr<RunResult> {
    if (control != nullptr) {
      if (absl::Status s = control->CheckContinue(); !s.ok()) return s;
    }
    absl::StatusOr<RunResult> run = session.backend().Run(prepared->graph, *prepared->plan.plan,
                                                          arrays, session.stream(), options);
    if (!run.ok()) return run.status();
    if (absl::Status s = session.backend().Synchronize(session.stream()); !s.ok()) return s;
    return run;
  };

  response->set_name(request.name().empty() ? "graph" : request.name());
  // Warm-up counts inside max_duration: it stops early when the time is up,
  // and at least one timed run follows.
  const absl::Time deadline = absl::Now() + max_duration;
  bool first = true;
  for (int i = 0; i < n_warmup && (first || absl::Now() < deadline); ++i) {
    absl::StatusOr<RunResult> run = run_once();
    if (!run.ok()) return run.status();
    if (first) FillTimings(*run, response->mutable_first_run());
    first = false;
  }
  for (int i = 0; i < n_repeat && (i == 0 || absl::Now() < deadline); ++i) {
    const absl::Time start = absl::Now();
    absl::StatusOr<RunResult> run = run_once();
    if (!run.ok()) return run.status();
    response->add_cpu_seconds(SecondsSince(start));
    if (run->gpu_seconds.has_value()) response->add_gpu_seconds(*run->gpu_seconds);
    if (first) FillTimings(*run, response->mutable_first_run());
    first = false;
  }
  return absl::OkStatus();
}

absl::Status GraphRunner::Precompile(const v1::PrecompileRequest& request,
                                     v1::PrecompileResponse* response, RunControl* control,
                                     const CallerPermissions& caller) {
  ArrayTypeLookup lookup = [&](const std::string& name) -> absl::StatusOr<ValueType> {
    auto it = request.array_types().find(name);
    if (it == request.array_types().end()) {
      return absl::NotFoundError(absl::StrCat("array_types does not describe array ", Echo(name)));
    }
    absl::StatusOr<DType> dtype = DTypeFromProto(it->second.dtype());
    if (!dtype.ok()) return dtype.status();
    absl::StatusOr<Shape> shape = ShapeFromProto(it->second.shape());
    if (!shape.ok()) return shape.status();
    return ValueType{*dtype, *std::move(shape), false};
  };
  for (int i = 0; i < request.graphs_size(); ++i) {
    if (control != nullptr) {
      if (absl::Status s = control->CheckContinue(); !s.ok()) return s;
    }
    absl::StatusOr<Prepared> prepared = Prepare(request.graphs(i), lookup, {}, caller);
    if (!prepared.ok()) {
      return absl::Status(prepared.status().code(),
                          absl::StrCat("graph ", i, ": ", prepared.status().message()));
    }
    // The CPU backend compiles nothing; the CUDA backend compiles (or finds
    // in its kernel cache) every kernel Run would launch, on each device.
    for (int d = 0; d < devices_.size(); ++d) {
      Backend& backend = devices_.backend(d);
      if (!backend.healthy()) continue;
      absl::StatusOr<PrecompileResult> compiled =
          backend.Precompile(prepared->graph, *prepared->plan.plan);
      if (!compiled.ok()) {
        return absl::Status(
            compiled.status().code(),
            absl::StrCat("graph ", i, ": ",
                         devices_.size() > 1 ? absl::StrCat(devices_.Describe(d), ": ") : "",
                         compiled.status().message()));
      }
      response->set_kernels_compiled(response->kernels_compiled() + compiled->kernels_compiled);
      response->set_kernels_cached(response->kernels_cached() + compiled->kernels_cached);
      response->set_compile_seconds(response->compile_seconds() + compiled->compile_seconds);
    }
  }
  return absl::OkStatus();
}

}  // namespace gpuflow::server

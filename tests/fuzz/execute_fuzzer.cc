// libFuzzer target: a binary gpuflow.v1.ExecuteRequest run end to end by
// GraphRunner::Execute (server/graph_runner.h) on the CPU backend: convert,
// validate, plan, the host kernels on real data, outputs inline or stored.
// graph_fuzzer stops before anything runs; this one runs what validates, so
// a kernel that reads or writes out of bounds for some dtype, shape or size
// (as a converting copy into complex128 past 512 elements once did) is a
// finding under ASan, not a dead server.
//
// Every input gets a fresh session holding the arrays the docs and the
// other fuzzers name (x, y, w, a, b, c, m, one of every dtype, 0-d, empty,
// sizes past the host's 1024-element blocks), filled with ordinary and
// special values (NaN, infinities, -0, extremes). The quota, the run's
// intermediates and the reply are small (1 to 4 MiB), so the work per input
// stays bounded: no step can be large enough to take seconds. After the
// input the session must hold exactly what it held plus the arrays stored
// by the request, and 0 bytes once every array is deleted; anything else is
// a leak and aborts.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/ir/half.h"
#include "engine/plan/plan.h"
#include "google/protobuf/stubs/logging.h"
#include "gpuflow/v1/service.pb.h"
#include "server/graph_runner.h"
#include "server/session_registry.h"

namespace {

using gpuflow::DType;

constexpr int64_t kQuotaBytes = int64_t{4} << 20;
constexpr int64_t kIntermediateBytes = int64_t{1} << 20;
constexpr gpuflow::server::GraphLimits kLimits = {.max_graph_nodes = 1000,
                                                  .max_inline_bytes = int64_t{1} << 20,
                                                  .max_array_bytes = int64_t{1} << 20,
                                                  .max_reply_bytes = int64_t{1} << 20,
                                                  .request_cache_entries = 64,
                                                  .request_cache_bytes = int64_t{1} << 20,
                                                  .max_prepared_graphs = 16};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "execute_fuzzer: %s\n", what.c_str());
  std::abort();
}

struct ArraySpec {
  const char* name;
  DType dtype;
  std::vector<int64_t> dims;
};

// fuzz_graph.cc's names where they are small; its huge arrays are absent
// here (NOT_FOUND), f64 is shorter, and the complex ones are added.
const std::vector<ArraySpec>& Specs() {
  static const auto* const specs = new std::vector<ArraySpec>{
      {"x", DType::kFloat32, {4, 8}},     {"y", DType::kFloat32, {8}},
      {"w", DType::kFloat32, {8, 3}},     {"a", DType::kInt8, {3, 1, 5}},
      {"b", DType::kBool, {5}},           {"c", DType::kInt32, {1, 5}},
      {"m", DType::kFloat64, {7, 7}},     {"i16", DType::kInt16, {2, 3, 4}},
      {"i64", DType::kInt64, {}},         {"u8", DType::kUInt8, {1023}},
      {"u16", DType::kUInt16, {1, 1}},    {"u32", DType::kUInt32, {6}},
      {"u64", DType::kUInt64, {}},        {"f16", DType::kFloat16, {2, 3}},
      {"bf16", DType::kBFloat16, {3, 2}}, {"f64", DType::kFloat64, {2053}},
      {"c64", DType::kComplex64, {600}},  {"c128", DType::kComplex128, {2, 301}},
      {"empty", DType::kFloat32, {0}},    {"empty2", DType::kInt32, {3, 0, 2}},
  };
  return *specs;
}

// Ordinary and special values, cycled through every array.
double FloatValue(int64_t i) {
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  static const double kValues[] = {0.5,
                                   -1.0,
                                   3.0,
                                   0.0,
                                   -0.0,
                                   2.5e-3,
                                   1e30,
                                   -7.25,
                                   kInf,
                                   1.0,
                                   -kInf,
                                   42.0,
                                   65504.,
                                   1e-8,
                                   -3e-39,
                                   0.1,
                                   -2.0,
                                   1e300,
                                   9007199254740993.0,
                                   std::numeric_limits<double>::quiet_NaN()};
  return kValues[(i * 7 + i / 13) % (sizeof(kValues) / sizeof(kValues[0]))];
}

int64_t IntValue(int64_t i) {
  static const int64_t kValues[] = {0,    1,   -1,   7,
                                    -100, 255, 2,    std::numeric_limits<int64_t>::max(),
                                    3,    -8,  64,   std::numeric_limits<int64_t>::min(),
                                    5,    127, -128, 300,
                                    11};
  return kValues[(i * 5 + i / 11) % (sizeof(kValues) / sizeof(kValues[0]))];
}

template <typename T>
void Put(std::vector<std::byte>& bytes, int64_t i, T v) {
  std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
}

std::vector<std::byte> Fill(DType dtype, int64_t n) {
  std::vector<std::byte> bytes(static_cast<size_t>(n * gpuflow::ItemSize(dtype)));
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::kBool:
        Put<uint8_t>(bytes, i, static_cast<uint8_t>(IntValue(i) & 1));
        break;
      case DType::kInt8:
      case DType::kUInt8:
        Put<uint8_t>(bytes, i, static_cast<uint8_t>(IntValue(i)));
        break;
      case DType::kInt16:
      case DType::kUInt16:
        Put<uint16_t>(bytes, i, static_cast<uint16_t>(IntValue(i)));
        break;
      case DType::kInt32:
      case DType::kUInt32:
        Put<uint32_t>(bytes, i, static_cast<uint32_t>(IntValue(i)));
        break;
      case DType::kInt64:
      case DType::kUInt64:
        Put<uint64_t>(bytes, i, static_cast<uint64_t>(IntValue(i)));
        break;
      case DType::kFloat16:
        Put<uint16_t>(bytes, i, gpuflow::Half::FromDouble(FloatValue(i)).bits);
        break;
      case DType::kBFloat16:
        Put<uint16_t>(bytes, i, gpuflow::BFloat16::FromDouble(FloatValue(i)).bits);
        break;
      case DType::kFloat32:
        Put<float>(bytes, i, static_cast<float>(FloatValue(i)));
        break;
      case DType::kFloat64:
        Put<double>(bytes, i, FloatValue(i));
        break;
      case DType::kComplex64:
        Put<float>(bytes, 2 * i, static_cast<float>(FloatValue(i)));
        Put<float>(bytes, 2 * i + 1, static_cast<float>(FloatValue(i + 3)));
        break;
      case DType::kComplex128:
        Put<double>(bytes, 2 * i, FloatValue(i));
        Put<double>(bytes, 2 * i + 1, FloatValue(i + 3));
        break;
    }
  }
  return bytes;
}

// Stops a run between steps after a second, and takes at most
// kIntermediateBytes for its intermediates.
class BoundedControl : public gpuflow::RunControl {
 public:
  absl::Status CheckContinue() override {
    if (absl::Now() > deadline_) return absl::DeadlineExceededError("fuzz deadline");
    return absl::OkStatus();
  }
  absl::Status Acquire(int64_t bytes) override {
    if (bytes < 0 || bytes > kIntermediateBytes - used_) {
      return absl::ResourceExhaustedError("fuzz intermediates");
    }
    used_ += bytes;
    return absl::OkStatus();
  }
  void Release(int64_t bytes) override {
    used_ -= bytes;
    if (used_ < 0) Fail("a run released more intermediate bytes than it acquired");
  }
  int64_t used() const { return used_; }

 private:
  absl::Time deadline_ = absl::Now() + absl::Seconds(1);
  int64_t used_ = 0;
};

struct Env {
  Env()
      : backend(gpuflow::CreateCpuBackend()),
        registry(*backend, {}),
        plans(gpuflow::PlanOptions{}, 64),
        runner(*backend, plans, kLimits) {}
  std::unique_ptr<gpuflow::Backend> backend;
  gpuflow::server::SessionRegistry registry;
  gpuflow::PlanCache plans;
  gpuflow::server::GraphRunner runner;
};

std::shared_ptr<gpuflow::server::Session> NewSession(Env& env) {
  absl::StatusOr<std::shared_ptr<gpuflow::server::Session>> session = env.registry.Create(
      {.label = "fuzz", .memory_limit_bytes = kQuotaBytes, .idle_ttl = absl::Hours(24)});
  if (!session.ok()) Fail(std::string(session.status().ToString()));
  for (const ArraySpec& spec : Specs()) {
    absl::StatusOr<gpuflow::Shape> shape = gpuflow::Shape::Create(spec.dims);
    if (!shape.ok()) Fail(std::string(shape.status().ToString()));
    const std::vector<std::byte> bytes = Fill(spec.dtype, shape->num_elements());
    const int64_t n = static_cast<int64_t>(bytes.size());
    absl::StatusOr<gpuflow::server::MemoryReservation> reservation =
        (*session)->Reserve(gpuflow::server::Session::StoredBytes(spec.name, *shape, n));
    if (!reservation.ok()) Fail(std::string(reservation.status().ToString()));
    absl::StatusOr<std::unique_ptr<gpuflow::DeviceBuffer>> buffer =
        env.backend->Allocate(n, (*session)->stream());
    if (!buffer.ok()) Fail(std::string(buffer.status().ToString()));
    if (n > 0) {
      absl::Status copied =
          env.backend->CopyToDevice(bytes.data(), **buffer, 0, n, (*session)->stream());
      if (!copied.ok()) Fail(std::string(copied.ToString()));
    }
    gpuflow::Array array;
    array.dtype = spec.dtype;
    array.shape = *std::move(shape);
    array.buffer = *std::move(buffer);
    absl::Status put = (*session)->PutArray(spec.name, std::move(array), *std::move(reservation));
    if (!put.ok()) Fail(std::string(put.ToString()));
  }
  absl::Status synced = env.backend->Synchronize((*session)->stream());
  if (!synced.ok()) Fail(std::string(synced.ToString()));
  return *std::move(session);
}

}  // namespace

// Undecodable messages make protobuf log an error each; they are expected here.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Env* const env = new Env();
  gpuflow::v1::ExecuteRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  // Prepared graphs are another session's handles: run the graph itself.
  request.clear_prepared_graph();
  // A request without outputs (graph_fuzzer's seeds have some) returns
  // every node no other node reads, as graph_fuzzer plans it.
  if (request.outputs_size() == 0) {
    absl::flat_hash_set<std::string> read;
    for (const gpuflow::v1::Node& node : request.graph().nodes()) {
      for (const gpuflow::v1::Input& input : node.inputs()) {
        if (input.has_node()) read.insert(input.node());
      }
    }
    for (const gpuflow::v1::Node& node : request.graph().nodes()) {
      if (read.contains(node.id())) continue;
      gpuflow::v1::OutputSpec* output = request.add_outputs();
      output->set_node(node.id());
      output->set_return_inline(true);
    }
  }
  std::shared_ptr<gpuflow::server::Session> session = NewSession(*env);
  request.set_session_id(session->id());
  {
    BoundedControl control;
    gpuflow::v1::ExecuteResponse response;
    const absl::Status status = env->runner.Execute(*session, request, &response, &control);
    // Seed authors: EXECUTE_FUZZER_VERBOSE=1 prints what each input ran to.
    if (std::getenv("EXECUTE_FUZZER_VERBOSE") != nullptr) {
      std::fprintf(stderr, "execute_fuzzer: %s\n", status.ToString().c_str());
    }
    if (control.used() != 0) Fail("a run kept intermediate bytes after it ended");
  }
  for (const gpuflow::server::ArrayEntry& entry : session->ListArrays()) {
    if (!session->DeleteArray(entry.name).ok()) Fail("cannot delete " + entry.name);
  }
  if (session->memory_used_bytes() != 0) {
    Fail("the session still uses " + std::to_string(session->memory_used_bytes()) +
         " bytes with no array left");
  }
  if (!env->registry.Close(session->id()).ok()) Fail("cannot close the session");
  return 0;
}

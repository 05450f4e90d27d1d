// libFuzzer target: bytes -> binary gpuflow.v1.ExecuteRequest -> convert,
// validate, plan (fuzz_graph.h). Undecodable bytes are simply skipped.
#include <cstddef>
#include <cstdint>

#include "engine/plan/plan.h"
#include "google/protobuf/stubs/logging.h"
#include "gpuflow/v1/service.pb.h"
#include "tests/fuzz/fuzz_graph.h"

// Undecodable messages make protobuf log an error each; they are expected here.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Shared across inputs, as the server's is across requests; small, so
  // that eviction is exercised too.
  static auto* const cache = new gpuflow::PlanCache(gpuflow::PlanOptions{}, 64);
  gpuflow::v1::ExecuteRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  (void)gpuflow::fuzz::ValidateAndPlan(request, *cache);
  return 0;
}

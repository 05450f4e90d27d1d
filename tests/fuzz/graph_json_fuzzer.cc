// libFuzzer target: text -> the CLI's JSON graph form (clients/cpp/graph_json.h)
// -> for what parses, the same convert, validate, plan path as graph_fuzzer.
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "clients/cpp/graph_json.h"
#include "engine/plan/plan.h"
#include "tests/fuzz/fuzz_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static auto* const cache = new gpuflow::PlanCache(gpuflow::PlanOptions{}, 64);
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gpuflow::v1::ExecuteRequest> request =
      gpuflow::client::ParseGraphJson(text, "fuzz.json");
  if (!request.ok()) return 0;
  (void)gpuflow::fuzz::ValidateAndPlan(*request, *cache);
  return 0;
}

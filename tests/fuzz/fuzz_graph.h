// The engine path every graph fuzzer ends in: a wire ExecuteRequest is
// converted (server/graph_convert.h), validated against a fixed set of
// session arrays (engine/ir/validate.h) and planned (engine/plan/plan.h),
// as GraphRunner::Prepare does before anything runs. Every stage must answer
// with a status; a crash, an abort or a sanitizer report is a finding.
//
//   PlanCache cache(PlanOptions{}, 64);
//   absl::Status s = fuzz::ValidateAndPlan(request, cache);  // any status is fine
//
// Not thread-safe across calls sharing a cache only in that plans compared
// after a cache hit are assumed not to be evicted meanwhile (libFuzzer runs
// one input at a time).
#ifndef GPUFLOW_TESTS_FUZZ_FUZZ_GRAPH_H_
#define GPUFLOW_TESTS_FUZZ_FUZZ_GRAPH_H_

#include "absl/status/status.h"
#include "engine/ir/validate.h"
#include "engine/plan/plan.h"
#include "gpuflow/v1/service.pb.h"

namespace gpuflow::fuzz {

// The session arrays the fuzzed graphs may read, by name: every dtype,
// 0-d, empty, odd and huge shapes ((0, 2^62), (2^40, 0, 2^40), (2^62,)).
// NOT_FOUND for any other name.
const ArrayTypeLookup& FuzzArrayLookup();

// Converts, validates, picks the output nodes (request.outputs, or every
// sink node when there are none, as Benchmark does) and plans through
// `cache`. A plan served from the cache is compared with one built afresh:
// a difference means two graphs of different structure shared a signature,
// and aborts (a finding like any crash).
absl::Status ValidateAndPlan(const v1::ExecuteRequest& request, PlanCache& cache);

}  // namespace gpuflow::fuzz

#endif  // GPUFLOW_TESTS_FUZZ_FUZZ_GRAPH_H_

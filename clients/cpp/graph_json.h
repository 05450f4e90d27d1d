// The JSON form of a graph run, as `gpuflow run` and `gpuflow bench` read
// it: protobuf's canonical JSON mapping of gpuflow.v1.ExecuteRequest without
// its session_id (docs/graph_json.md). Any language with protobuf JSON
// support can write it; so can a person:
//
//   {"graph": {"nodes": [
//      {"id": "sq", "op": "mul", "inputs": [{"array": "x"}, {"array": "x"}]},
//      {"id": "y", "op": "sqrt", "inputs": [{"node": "sq"}]}]},
//    "outputs": [{"node": "y", "returnInline": true}]}
//
//   absl::StatusOr<v1::ExecuteRequest> request = ReadGraphJsonFile("graph.json");
//   session.Execute(*request);
//
// Errors are INVALID_ARGUMENT and point into the text as compilers do:
//   graph.json:3:42: graph.nodes[0].inputs[1]: unknown field "arrya"
// The JSON must be strict RFC 8259 (no comments, no trailing commas, no
// repeated keys); unknown fields are rejected, and so is a session id (the
// session is chosen by the caller). Beyond the mapping, the file must name at
// least one output, each output must say what to do with its node
// (storeAs and/or returnInline) and name a node of the graph. Everything
// else (ops, attributes, dtypes, shapes) is validated by the server.
//
// Thread-safe: no shared state.
#ifndef GPUFLOW_CLIENTS_CPP_GRAPH_JSON_H_
#define GPUFLOW_CLIENTS_CPP_GRAPH_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "gpuflow/v1/service.pb.h"

namespace gpuflow::client {

// Parses `json`; `source` names it in errors ("graph.json").
absl::StatusOr<v1::ExecuteRequest> ParseGraphJson(absl::string_view json,
                                                  absl::string_view source = "<graph>");

// Reads and parses a file; NOT_FOUND when it does not exist.
absl::StatusOr<v1::ExecuteRequest> ReadGraphJsonFile(const std::string& path);

// The Benchmark form of a run: its graph, its outputs' nodes (computed but
// not kept) and allow_tf32. Warm-up, repeat counts and duration are left for
// the caller (server defaults when unset).
v1::BenchmarkRequest ToBenchmarkRequest(const v1::ExecuteRequest& request);

// `message` in protobuf's canonical JSON mapping, indented by two spaces,
// fields at their default values left out.
std::string ToJson(const google::protobuf::Message& message);

}  // namespace gpuflow::client

#endif  // GPUFLOW_CLIENTS_CPP_GRAPH_JSON_H_

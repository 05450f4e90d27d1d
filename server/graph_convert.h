// Converts the wire form of a graph (gpuflow.v1.Graph) into the engine's
// Graph, and the engine's values back into wire messages. Only structural
// checks happen here (a oneof left unset, a literal's dtype); everything
// else is the engine's validation.
#ifndef GPUFLOW_SERVER_GRAPH_CONVERT_H_
#define GPUFLOW_SERVER_GRAPH_CONVERT_H_

#include "absl/status/statusor.h"
#include "engine/ir/graph.h"
#include "engine/ir/op_registry.h"
#include "gpuflow/v1/graph.pb.h"
#include "gpuflow/v1/service.pb.h"

namespace gpuflow::server {

// INVALID_ARGUMENT naming the node for an input or attribute without a
// value, or a literal with a bad dtype or shape.
absl::StatusOr<Graph> GraphFromProto(const v1::Graph& proto);
// INVALID_ARGUMENT for a scalar without a value or with a bad dtype.
absl::StatusOr<Scalar> ScalarFromProto(const v1::Scalar& proto);

// The registry as listed in ServerInfo.ops.
void FillOpInfos(const OpRegistry& registry, google::protobuf::RepeatedPtrField<v1::OpInfo>* out);

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_GRAPH_CONVERT_H_

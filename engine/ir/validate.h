// Validation: resolves every reference of a Graph, checks names, attributes
// and limits, and infers every node's dtype and shape, before anything runs.
// Every error is INVALID_ARGUMENT (RESOURCE_EXHAUSTED for limits) and names
// the node id, the op and the reason:
//   node 'y' (add): shapes (3,) and (4,) cannot be broadcast together
// Client strings in messages are bounded (echo.h). Node ids and array names
// follow graph.proto (CheckName); every shape, literal and inferred, has rank
// at most kMaxRank, at most kMaxElements elements and bytes. Linear in the
// size of the graph.
//
//   ArrayTypeLookup lookup = [&](const std::string& name) -> absl::StatusOr<ValueType> {...};
//   absl::StatusOr<ValidatedGraph> v = ValidateGraph(graph, lookup, {.max_graph_nodes = 1000});
#ifndef GPUFLOW_ENGINE_IR_VALIDATE_H_
#define GPUFLOW_ENGINE_IR_VALIDATE_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/ir/graph.h"
#include "engine/ir/op_registry.h"

namespace gpuflow {

// Where a node's input comes from.
struct ValueRef {
  enum class Kind : uint8_t { kArray, kLiteral, kNode };
  Kind kind = Kind::kNode;
  // Index into ValidatedGraph::arrays, ::literals or ::nodes.
  int index = 0;
  friend bool operator==(const ValueRef&, const ValueRef&) = default;
};

struct ValidatedNode {
  std::string id;
  const OpDef* op = nullptr;
  std::vector<ValueRef> inputs;
  std::vector<ValueType> input_types;
  AttrMap attrs;  // canonical (see OpDef::infer)
  InferredNode type;
};

struct ValidatedGraph {
  // Session arrays the graph reads, in order of first use, with their types.
  std::vector<std::string> arrays;
  std::vector<ValueType> array_types;
  // Literals (scalars become 0-d literals: bool, int64, uint64 or float64,
  // weak unless the scalar named a dtype, in which case they are converted
  // to it). literal_types[i].weak tells which.
  std::vector<LiteralArray> literals;
  std::vector<ValueType> literal_types;
  std::vector<ValidatedNode> nodes;
  // Node id -> index into `nodes`, filled by ValidateGraph.
  absl::flat_hash_map<std::string, int> node_index;

  // Index of the node with this id, or -1. O(1) through node_index; a graph
  // built by hand (node_index not covering `nodes`) is scanned instead.
  int FindNode(absl::string_view id) const;
  const ValueType& TypeOf(const ValueRef& ref) const;
};

struct ValidationLimits {
  int max_graph_nodes = 10000;
  int64_t max_inline_bytes = int64_t{4} << 20;
};

// Returns the type of a session array by name, or NOT_FOUND.
using ArrayTypeLookup = std::function<absl::StatusOr<ValueType>(const std::string& name)>;

// A scalar as the 0-d literal validation makes of it, and its type: weak
// (bool, int64, uint64 above INT64_MAX, or float64) without a dtype, else
// converted to its dtype as numpy.int8(300) would be (out-of-range integers
// are INVALID_ARGUMENT).
absl::StatusOr<std::pair<LiteralArray, ValueType>> ScalarLiteral(const Scalar& s);

absl::StatusOr<ValidatedGraph> ValidateGraph(const Graph& graph, const ArrayTypeLookup& lookup,
                                             const ValidationLimits& limits);

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_IR_VALIDATE_H_

// Checks shared by OpDef::infer (MakeOp, ops_internal.h) and ValidateGraph
// (validate.cc); defined in op_registry.cc. Not for use outside engine/ir.
#ifndef GPUFLOW_ENGINE_IR_OP_REGISTRY_INTERNAL_H_
#define GPUFLOW_ENGINE_IR_OP_REGISTRY_INTERNAL_H_

#include <cstddef>

#include "absl/status/status.h"
#include "engine/ir/graph.h"
#include "engine/ir/op_registry.h"

namespace gpuflow::internal {

// INVALID_ARGUMENT "takes 2 inputs, got 3" unless `num_inputs` is within
// [def.min_inputs, def.max_inputs].
absl::Status CheckArity(const OpDef& def, size_t num_inputs);

// INVALID_ARGUMENT for an attribute `def` does not declare ("unknown
// attribute 'x'"), one of the wrong type ("attribute 'axes' must be ints, got
// float"; an int is accepted for a float and ints for floats) or a missing
// required one ("missing required attribute 'shape'").
absl::Status CheckAttrs(const OpDef& def, const AttrMap& attrs);

// Converts int values of float (and ints of floats) attributes to double.
void ConvertIntsToFloats(const OpDef& def, AttrMap& attrs);

}  // namespace gpuflow::internal

#endif  // GPUFLOW_ENGINE_IR_OP_REGISTRY_INTERNAL_H_

// Helpers shared by the code generators (codegen.cc, codegen_reduce.cc,
// codegen_matmul.cc).
#ifndef GPUFLOW_ENGINE_CUDA_CODEGEN_INTERNAL_H_
#define GPUFLOW_ENGINE_CUDA_CODEGEN_INTERNAL_H_

#include <functional>
#include <string>
#include <vector>

#include "engine/cuda/codegen.h"

namespace gpuflow::cuda::internal {

// The type a value has in registers (bool is a real bool there).
const char* RegisterTypeName(DType dtype);
// The compute class of a compute dtype: bool, i64, u64, float or double.
const char* ComputeClassName(DType dtype);
// The class a scan or matmul accumulates a compute dtype in (the reference's
// compute classes, every float in double): bool, i64, u64 or double.
const char* WideAccumulatorName(DType compute);
// Drops dimensions of extent 1 and merges neighbours that both stride
// vectors step through as one (contiguous, or broadcast in both); may leave
// no dimension.
void MergeDims(std::vector<int64_t>& dims, std::vector<int64_t>& a, std::vector<int64_t>& b);
// Contiguous strides of `shape` right-aligned to `out`, 0 where broadcast.
std::vector<int64_t> BroadcastStrides(const Shape& shape, const Shape& out);

// Statements computing `nodes` (elementwise, in order) into variables v<id>;
// `expr` gives the expression of an input that is not one of `nodes`.
std::string EmitElementwiseNodes(const ValidatedGraph& graph, const std::vector<int>& nodes,
                                 const std::function<std::string(const ValueRef&)>& expr);

}  // namespace gpuflow::cuda::internal

#endif  // GPUFLOW_ENGINE_CUDA_CODEGEN_INTERNAL_H_

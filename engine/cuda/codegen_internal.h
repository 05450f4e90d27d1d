// Helpers shared by the code generators (codegen.cc, codegen_reduce.cc,
// codegen_softmax.cc, codegen_matmul.cc).
#ifndef GPUFLOW_ENGINE_CUDA_CODEGEN_INTERNAL_H_
#define GPUFLOW_ENGINE_CUDA_CODEGEN_INTERNAL_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "engine/cuda/codegen.h"

namespace gpuflow::cuda::internal {

// The type a value has in registers (bool is a real bool there).
const char* RegisterTypeName(DType dtype);
// The compute class of a compute dtype: bool, i64, u64, float, double or
// gf::complex<double> (complex64 and complex128 alike).
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
// The same against the dims of `out`.
std::vector<int64_t> BroadcastStrides(const Shape& shape, absl::Span<const int64_t> out);

// A double as an exact CUDA expression (its bits).
std::string DoubleLiteral(double v);

bool Contains(const std::vector<int>& v, int x);

// The accumulator of a sum, prod, min, max, mean, any or all (and of the
// sums var/std's passes take) of compute dtype `compute`, as the CPU
// reference accumulates: floats (and every mean, var, std) in double,
// complex values in gf::complex<double>, integers in 64 bits (wrapping),
// any/all in int. `combine` merges `a` and
// `b`.
struct Accumulator {
  std::string type;
  std::string ident;
  std::string combine;
};
Accumulator PlainAccumulator(const std::string& op, DType compute);

// Whether an input travels in its launch word: a 0-d literal of at most 8
// bytes (a complex128 literal is uploaded, as arrays are).
bool PassedByValue(const ValueRef& ref, const ValueType& type);

// A 0-d literal: a scalar read once, in its launch word or (a complex128)
// at element 0 of its uploaded buffer (codegen_reduce.cc).
bool IsScalarInput(const StepInput& in);
// The external inputs of `nodes` (not computed by them, nor `skip`), added
// to `out`. False when one is neither of `shape` nor a 0-d literal.
bool CollectInputs(const ValidatedGraph& graph, const std::vector<int>& nodes, int skip,
                   const Shape& shape, std::vector<StepInput>* out);
// Declarations of the inputs' pointers (<prefix><i>), reading launch words
// from `*word`; fills `exprs` so EmitElementwiseNodes can name them
// (`<prefix><i>[<index>]`).
std::string DeclareInputs(const std::vector<StepInput>& inputs, const std::string& prefix,
                          int* word, std::vector<std::string>* exprs, const std::string& index);
// The same for the scalars passed by value; `exprs` then names every input.
std::string DeclareScalars(const std::vector<StepInput>& inputs, const std::string& prefix,
                           int* word, std::vector<std::string>* exprs);
// An expression function for EmitElementwiseNodes: `special` for node
// `special_node`, else the input's entry of `exprs`.
std::function<std::string(const ValueRef&)> ExprOf(const std::vector<StepInput>& inputs,
                                                   const std::vector<std::string>& exprs,
                                                   int special_node, std::string special);

// Statements computing `nodes` (elementwise, in order) into variables v<id>;
// `expr` gives the expression of an input that is not one of `nodes`.
std::string EmitElementwiseNodes(const ValidatedGraph& graph, const std::vector<int>& nodes,
                                 const std::function<std::string(const ValueRef&)>& expr);

}  // namespace gpuflow::cuda::internal

#endif  // GPUFLOW_ENGINE_CUDA_CODEGEN_INTERNAL_H_

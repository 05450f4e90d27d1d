// The host path, for the steps no device runner takes (today: `dot` with a
// 0-d operand): the step's inputs are staged through host memory, the
// reference kernels (engine/host) compute every node of the step, and the
// result is copied back. Correct and slow; profiles mark it "host:".
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/launch_log.h"
#include "engine/cuda/step_runner.h"
#include "engine/host/host_kernels.h"

namespace gpuflow::cuda {

absl::Status RunOnHost(StepRunContext& ctx) {
  const ValidatedGraph& graph = ctx.graph;
  const Step& step = ctx.step;
  GPUFLOW_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(ctx.stream.get()));
  absl::flat_hash_map<int, std::vector<std::byte>> host_nodes;
  std::vector<std::vector<std::byte>> staged;
  std::vector<HostConstView> inputs;
  for (int n : step.nodes) {
    const ValidatedNode& node = graph.nodes[n];
    launch_log::Note(absl::StrCat("host ", node.op->name));
    inputs.clear();
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueRef& ref = node.inputs[i];
      const ValueType& type = node.input_types[i];
      HostConstView view{type.dtype, type.shape, nullptr};
      if (ref.kind == ValueRef::Kind::kLiteral) {
        view.data = reinterpret_cast<const std::byte*>(graph.literals[ref.index].bytes.data());
      } else if (ref.kind == ValueRef::Kind::kNode && host_nodes.contains(ref.index)) {
        view.data = host_nodes[ref.index].data();
      } else {
        absl::StatusOr<const void*> p = ctx.ptr(ref);
        if (!p.ok()) return p.status();
        const int64_t bytes = type.shape.num_elements() * ItemSize(type.dtype);
        staged.emplace_back(bytes);
        if (bytes > 0) {
          GPUFLOW_CUDA_RETURN_IF_ERROR(
              cudaMemcpy(staged.back().data(), *p, bytes, cudaMemcpyDeviceToHost));
        }
        view.data = staged.back().data();
      }
      inputs.push_back(view);
    }
    const ValueType& out_type = node.type.output;
    std::vector<std::byte>& out = host_nodes[n];
    out.resize(out_type.shape.num_elements() * ItemSize(out_type.dtype));
    const HostView out_view{out_type.dtype, out_type.shape, out.data()};
    // RunNodeOnHost's errors name the node already.
    if (absl::Status st = RunNodeOnHost(node, inputs, out_view, {}); !st.ok()) return st;
  }
  const std::vector<std::byte>& root_host = host_nodes[step.root];
  if (!root_host.empty()) {
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(ctx.out, root_host.data(), root_host.size(),
                                                 cudaMemcpyHostToDevice, ctx.stream.get()));
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(ctx.stream.get()));
  }
  return absl::OkStatus();
}

}  // namespace gpuflow::cuda

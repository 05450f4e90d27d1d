// NVRTC: CUDA C++ source -> cubin for one exact architecture. Works without a
// GPU, so CI proves that every generated kernel compiles for sm_90.
//
//   absl::StatusOr<CompiledModule> m = CompileToCubin(source, {.arch = 90});
//
// Thread-safe (NVRTC programs are independent).
#ifndef GPUFLOW_ENGINE_CUDA_NVRTC_COMPILER_H_
#define GPUFLOW_ENGINE_CUDA_NVRTC_COMPILER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpuflow::cuda {

struct CompileOptions {
  // Compute capability as major*10+minor, e.g. 90 for sm_90.
  int arch = 90;
  // Directory holding cuda_fp16.h, cuda_bf16.h and cub/ (the toolkit's).
  std::string cuda_include_dir = "/usr/local/cuda/include";
  std::vector<std::string> extra_options;
};

struct CompiledModule {
  std::string cubin;
  std::string log;
  double compile_seconds = 0;
};

// INVALID_ARGUMENT carrying NVRTC's log when the source does not compile.
absl::StatusOr<CompiledModule> CompileToCubin(const std::string& source, const std::string& name,
                                              const CompileOptions& options);

// The options CompileToCubin passes to NVRTC (part of the kernel cache key).
std::vector<std::string> NvrtcOptions(const CompileOptions& options);

// "13.0" etc.
std::string NvrtcVersion();

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_NVRTC_COMPILER_H_

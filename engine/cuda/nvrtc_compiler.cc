#include "engine/cuda/nvrtc_compiler.h"

#include <nvrtc.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/cuda/cuda_status.h"

namespace gpuflow::cuda {

namespace {
// Destroys the program on every path out of CompileToCubin.
struct ProgramGuard {
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program != nullptr) nvrtcDestroyProgram(&program);
  }
};
}  // namespace

std::vector<std::string> NvrtcOptions(const CompileOptions& options) {
  std::vector<std::string> out = {
      absl::StrCat("--gpu-architecture=sm_", options.arch),
      "--std=c++17",
      "-default-device",
      // Each op rounds as NumPy's does: IEEE division and square root, no
      // flush to zero, no contraction of a*b+c into one rounding.
      "-prec-div=true",
      "-prec-sqrt=true",
      "-ftz=false",
      "-fmad=false",
      absl::StrCat("-I", options.cuda_include_dir),
      absl::StrCat("-I", options.cuda_include_dir, "/cccl"),
  };
  out.insert(out.end(), options.extra_options.begin(), options.extra_options.end());
  return out;
}

std::string NvrtcVersion() {
  int major = 0;
  int minor = 0;
  nvrtcVersion(&major, &minor);
  return absl::StrCat(major, ".", minor);
}

absl::StatusOr<CompiledModule> CompileToCubin(const std::string& source, const std::string& name,
                                              const CompileOptions& options) {
  const absl::Time start = absl::Now();
  ProgramGuard guard;
  GPUFLOW_NVRTC_RETURN_IF_ERROR(
      nvrtcCreateProgram(&guard.program, source.c_str(), name.c_str(), 0, nullptr, nullptr));
  const std::vector<std::string> opts = NvrtcOptions(options);
  std::vector<const char*> argv;
  argv.reserve(opts.size());
  for (const std::string& o : opts) argv.push_back(o.c_str());
  const nvrtcResult compiled =
      nvrtcCompileProgram(guard.program, static_cast<int>(argv.size()), argv.data());
  CompiledModule module;
  size_t log_size = 0;
  GPUFLOW_NVRTC_RETURN_IF_ERROR(nvrtcGetProgramLogSize(guard.program, &log_size));
  module.log.resize(log_size);
  if (log_size > 0) {
    GPUFLOW_NVRTC_RETURN_IF_ERROR(nvrtcGetProgramLog(guard.program, module.log.data()));
    while (!module.log.empty() && module.log.back() == '\0') module.log.pop_back();
  }
  if (compiled != NVRTC_SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NVRTC could not compile ", name, ": ", nvrtcGetErrorString(compiled), "\n", module.log));
  }
  size_t cubin_size = 0;
  GPUFLOW_NVRTC_RETURN_IF_ERROR(nvrtcGetCUBINSize(guard.program, &cubin_size));
  module.cubin.resize(cubin_size);
  GPUFLOW_NVRTC_RETURN_IF_ERROR(nvrtcGetCUBIN(guard.program, module.cubin.data()));
  module.compile_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  return module;
}

}  // namespace gpuflow::cuda

// A second process for kernel_cache_test: gets one kernel through a
// DiskKernelCache on DIR, as a restarted gpuflowd would, and prints
//   result=compiled|disk_hit warnings=N digest=HEX
// Exit status 0 on success, 1 when the kernel could not be had, 2 on bad
// arguments.
//
//   kernel_cache_helper DIR [--fake] [--barrier=FILE] [--file_size_limit=BYTES]
//
// --fake           "compile" by returning fixed bytes (no NVRTC)
// --barrier=FILE   wait until FILE exists before looking up (to race peers)
// --file_size_limit=BYTES
//                  RLIMIT_FSIZE, so writes fail as on a full disk
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "engine/cuda/kernel_cache.h"
#include "engine/cuda/nvrtc_compiler.h"

namespace {

constexpr char kSource[] =
    "extern \"C\" __global__ void gf_cache_test(float* x) { x[threadIdx.x] *= 2.0f; }\n";

int Run(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string dir = argv[1];
  bool fake = false;
  std::string barrier;
  for (int i = 2; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--fake") {
      fake = true;
    } else if (absl::ConsumePrefix(&arg, "--barrier=")) {
      barrier = std::string(arg);
    } else if (absl::ConsumePrefix(&arg, "--file_size_limit=")) {
      rlim_t bytes = 0;
      if (!absl::SimpleAtoi(arg, &bytes)) return 2;
      const struct rlimit limit = {bytes, bytes};
      if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 2;
      signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead
    } else {
      std::fprintf(stderr, "kernel_cache_helper: unknown argument %s\n", argv[i]);
      return 2;
    }
  }

  gpuflow::cuda::CompileOptions compile;
  compile.arch = 90;
  gpuflow::cuda::KernelKey key;
  key.source = kSource;
  key.name = "gf_cache_test";
  key.options = gpuflow::cuda::NvrtcOptions(compile);
  key.arch = compile.arch;
  key.nvrtc_version = fake ? "fake" : gpuflow::cuda::NvrtcVersion();
  key.header_identity = gpuflow::cuda::CudaHeaderIdentity(compile.cuda_include_dir);

  int warnings = 0;
  gpuflow::cuda::DiskKernelCache cache(
      {.directory = dir, .max_bytes = int64_t{1} << 30, .warn = [&](absl::string_view message) {
         ++warnings;
         std::fprintf(stderr, "kernel_cache_helper: %.*s\n", static_cast<int>(message.size()),
                      message.data());
       }});
  if (!barrier.empty()) {
    while (access(barrier.c_str(), F_OK) != 0) usleep(1000);
  }
  absl::StatusOr<gpuflow::cuda::CachedCubin> cubin =
      cache.GetOrCompile(key, [&]() -> absl::StatusOr<std::string> {
        if (fake) return std::string(4096, 'c');
        absl::StatusOr<gpuflow::cuda::CompiledModule> module =
            gpuflow::cuda::CompileToCubin(key.source, key.name + ".cu", compile);
        if (!module.ok()) return module.status();
        return std::move(module->cubin);
      });
  if (!cubin.ok()) {
    std::fprintf(stderr, "kernel_cache_helper: %s\n", cubin.status().ToString().c_str());
    return 1;
  }
  std::printf("result=%s warnings=%d digest=%s\n", cubin->from_disk ? "disk_hit" : "compiled",
              warnings, gpuflow::cuda::DigestHex(gpuflow::cuda::DigestOf(key)).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }

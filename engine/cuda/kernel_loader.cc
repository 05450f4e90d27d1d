#include "engine/cuda/kernel_loader.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "engine/cuda/launch_log.h"

namespace gpuflow::cuda {

KernelLoader::KernelLoader(DeviceRuntime& device, const CudaBackendOptions& options)
    : device_(device),
      options_(options),
      disk_cache_({.directory = options.kernel_cache_dir,
                   .max_bytes = options.kernel_cache_max_bytes,
                   .warn = nullptr}),
      nvrtc_version_(NvrtcVersion()),
      header_identity_(disk_cache_.enabled() ? CudaHeaderIdentity(options.cuda_include_dir)
                                             : std::string()) {
  if (disk_cache_.enabled() && options_.kernel_cache_preload_bytes > 0) {
    preload_thread_ = std::thread([this] { Preload(); });
  }
}

KernelLoader::~KernelLoader() {
  stopping_ = true;
  if (preload_thread_.joinable()) preload_thread_.join();
  cudaSetDevice(device_.device());
  absl::MutexLock lock(&kernels_mu_);
  for (auto& [key, library] : libraries_) cudaLibraryUnload(library.library);
  for (auto& [key, library] : preloaded_) cudaLibraryUnload(library.library);
}

absl::StatusOr<cudaKernel_t> KernelLoader::GetKernel(
    const std::string& source, const std::string& name, RunResult& result,
    const std::vector<std::string>& extra_options) {
  // A module (options + source) is compiled and loaded once, whichever of
  // its kernels is asked for first; each kernel is then looked up in it.
  const std::string module_key = absl::StrCat(absl::StrJoin(extra_options, " "), "\n", source);
  const std::string key = absl::StrCat(name, "\n", module_key);
  launch_log::Source(name, module_key);
  {
    absl::MutexLock lock(&kernels_mu_);
    if (auto it = kernels_.find(key); it != kernels_.end()) {
      ++result.kernel_cache_hits;
      NoteMemoryHit(it->second);
      return it->second.kernel;
    }
    if (auto it = libraries_.find(module_key); it != libraries_.end()) {
      LoadedKernel loaded = it->second;
      if (absl::Status s =
              device_.Check(cudaLibraryGetKernel(&loaded.kernel, loaded.library, name.c_str()),
                            "cudaLibraryGetKernel");
          !s.ok()) {
        return s;
      }
      ++result.kernel_cache_hits;
      NoteMemoryHit(it->second);
      ++memory_entries_;
      return kernels_.emplace(key, loaded).first->second.kernel;
    }
  }
  CompileOptions compile;
  compile.arch = device_.props().major * 10 + device_.props().minor;
  compile.cuda_include_dir = options_.cuda_include_dir;
  compile.extra_options = extra_options;
  LoadedKernel loaded;
  if (has_preloaded_.load()) {
    // A module the start-up preload brought in from disk.
    const KernelDigest digest = DigestOf(KeyFor(source, compile));
    absl::MutexLock lock(&kernels_mu_);
    if (auto it = preloaded_.find(digest); it != preloaded_.end()) {
      loaded = it->second;
      preloaded_.erase(it);
      libraries_.emplace(module_key, loaded);
      if (absl::Status s =
              device_.Check(cudaLibraryGetKernel(&loaded.kernel, loaded.library, name.c_str()),
                            "cudaLibraryGetKernel");
          !s.ok()) {
        return s;
      }
      ++disk_hits_;
      ++result.kernel_cache_hits;
      ++memory_entries_;
      return kernels_.emplace(key, loaded).first->second.kernel;
    }
  }
  absl::StatusOr<std::string> cubin = CubinFor(source, compile, result, loaded);
  if (!cubin.ok()) return cubin.status();
  if (absl::Status s = device_.Check(cudaLibraryLoadData(&loaded.library, cubin->data(), nullptr,
                                                         nullptr, 0, nullptr, nullptr, 0),
                                     "cudaLibraryLoadData");
      !s.ok()) {
    return s;
  }
  absl::MutexLock lock(&kernels_mu_);
  auto [lib, lib_inserted] = libraries_.emplace(module_key, loaded);
  if (!lib_inserted) cudaLibraryUnload(loaded.library);  // another thread won the race
  loaded = lib->second;
  if (absl::Status s =
          device_.Check(cudaLibraryGetKernel(&loaded.kernel, loaded.library, name.c_str()),
                        "cudaLibraryGetKernel");
      !s.ok()) {
    return s;
  }
  // Loading is lazy by default; asking for the attributes loads the
  // kernel into the context now (Precompile's point), not at first launch.
  cudaFuncAttributes attributes;
  if (cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(loaded.kernel)) !=
      cudaSuccess) {
    cudaGetLastError();
  }
  auto [it, inserted] = kernels_.emplace(key, loaded);
  if (inserted) ++memory_entries_;
  return it->second.kernel;
}

KernelKey KernelLoader::KeyFor(const std::string& source, const CompileOptions& compile) const {
  KernelKey key;
  key.source = source;
  key.name = "gpuflow";
  key.options = NvrtcOptions(compile);
  key.arch = compile.arch;
  key.nvrtc_version = nvrtc_version_;
  key.header_identity = header_identity_;
  return key;
}

void KernelLoader::Preload() {
  cudaSetDevice(device_.device());
  for (const KernelDigest& digest :
       disk_cache_.RecentEntries(options_.kernel_cache_preload_bytes)) {
    if (stopping_) return;
    std::optional<std::string> cubin = disk_cache_.Load(digest);
    if (!cubin) continue;
    LoadedKernel loaded;
    if (cudaLibraryLoadData(&loaded.library, cubin->data(), nullptr, nullptr, 0, nullptr, nullptr,
                            0) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    // Load every kernel of the module now, not at its first launch.
    unsigned int count = 0;
    if (cudaLibraryGetKernelCount(&count, loaded.library) == cudaSuccess && count > 0) {
      std::vector<cudaKernel_t> kernels(count);
      if (cudaLibraryEnumerateKernels(kernels.data(), count, loaded.library) == cudaSuccess) {
        for (cudaKernel_t k : kernels) {
          cudaFuncAttributes attributes;
          cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(k));
        }
      }
    }
    cudaGetLastError();
    loaded.disk_digest = digest;
    loaded.disk_touched = absl::Now();
    absl::MutexLock lock(&kernels_mu_);
    if (!preloaded_.emplace(digest, loaded).second) cudaLibraryUnload(loaded.library);
    has_preloaded_ = true;
  }
}

absl::StatusOr<std::string> KernelLoader::CubinFor(const std::string& source,
                                                   const CompileOptions& compile, RunResult& result,
                                                   LoadedKernel& loaded) {
  // The program name does not change the cubin; one name for all keeps one
  // disk entry per module whichever kernel is asked for first.
  const KernelKey key = KeyFor(source, compile);
  const std::string& name = key.name;
  double compile_seconds = 0;
  absl::StatusOr<CachedCubin> cubin =
      disk_cache_.GetOrCompile(key, [&]() -> absl::StatusOr<std::string> {
        ++misses_;
        absl::StatusOr<CompiledModule> module = CompileToCubin(source, name + ".cu", compile);
        if (!module.ok()) return module.status();
        compile_seconds = module->compile_seconds;
        return std::move(module->cubin);
      });
  if (!cubin.ok()) return cubin.status();
  if (cubin->from_disk) {
    ++disk_hits_;
    ++result.kernel_cache_hits;
  } else {
    ++compiles_;
    compile_nanoseconds_ += static_cast<int64_t>(compile_seconds * 1e9);
    result.compile_seconds += compile_seconds;
    ++result.kernels_compiled;
  }
  if (disk_cache_.enabled()) {
    loaded.disk_digest = DigestOf(key);
    loaded.disk_touched = absl::Now();
  }
  return std::move(cubin->cubin);
}

void KernelLoader::NoteMemoryHit(LoadedKernel& kernel) {
  ++memory_hits_;
  // Often enough for LRU order (eviction is rare and coarse), rarely enough
  // to cost nothing.
  constexpr absl::Duration kTouchInterval = absl::Minutes(10);
  if (!kernel.disk_digest.has_value()) return;
  const absl::Time now = absl::Now();
  if (now - kernel.disk_touched < kTouchInterval) return;
  kernel.disk_touched = now;
  disk_cache_.Touch(*kernel.disk_digest);
}

KernelCacheStats KernelLoader::stats() const {
  const DiskKernelCache::Stats disk = disk_cache_.stats();
  KernelCacheStats stats;
  stats.memory_hits = memory_hits_.load();
  stats.disk_hits = disk_hits_.load();
  stats.misses = misses_.load();
  stats.compiles = compiles_.load();
  stats.compile_seconds = static_cast<double>(compile_nanoseconds_.load()) / 1e9;
  stats.evictions = disk.evictions;
  stats.memory_entries = memory_entries_.load();
  stats.disk_entries = disk.entries;
  stats.disk_bytes = disk.bytes;
  return stats;
}

}  // namespace gpuflow::cuda

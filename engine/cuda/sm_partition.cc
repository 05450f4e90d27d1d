#include "engine/cuda/sm_partition.h"

#include <cuda.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gpuflow::cuda {

// The driver functions, from the runtime's entry points.
struct SmPartition::Driver {
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*get_resource)(CUdevice, CUdevResource*, CUdevResourceType) = nullptr;
  CUresult (*split)(CUdevResource*, unsigned*, const CUdevResource*, CUdevResource*, unsigned,
                    unsigned) = nullptr;
  CUresult (*descriptor)(CUdevResourceDesc*, CUdevResource*, unsigned) = nullptr;
  CUresult (*create)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned) = nullptr;
  CUresult (*destroy)(CUgreenCtx) = nullptr;
  CUresult (*stream_create)(CUstream*, CUgreenCtx, unsigned, int) = nullptr;
};

namespace {

// The function's version of the toolkit built against (CUDA_VERSION):
// cuGreenCtxStreamCreate is newer than 12.4's other green context calls.
template <typename F>
void Find(const char* name, F& fn, const char*& missing) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &p, CUDA_VERSION, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess || p == nullptr) {
    cudaGetLastError();  // a query: not sticky
    if (missing == nullptr) missing = name;
    return;
  }
  fn = reinterpret_cast<F>(p);
}

absl::Status Failed(const char* call, CUresult r) {
  return absl::FailedPreconditionError(
      absl::StrCat("--short_work_reserved_sms: ", call, " failed (CUresult ", r, ")"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SmPartition>> SmPartition::Create(int device, int reserved) {
  auto d = std::make_unique<Driver>();
  const char* missing = nullptr;
  Find("cuDeviceGet", d->device_get, missing);
  Find("cuDeviceGetDevResource", d->get_resource, missing);
  Find("cuDevSmResourceSplitByCount", d->split, missing);
  Find("cuDevResourceGenerateDesc", d->descriptor, missing);
  Find("cuGreenCtxCreate", d->create, missing);
  Find("cuGreenCtxDestroy", d->destroy, missing);
  Find("cuGreenCtxStreamCreate", d->stream_create, missing);
  if (missing != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("--short_work_reserved_sms: the CUDA driver has no ", missing,
                     " (green contexts need CUDA 12.5 or later)"));
  }
  CUdevice dev = 0;
  if (CUresult r = d->device_get(&dev, device); r != CUDA_SUCCESS) return Failed("cuDeviceGet", r);
  CUdevResource all{};
  if (CUresult r = d->get_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM); r != CUDA_SUCCESS) {
    return Failed("cuDeviceGetDevResource", r);
  }
  const int total = static_cast<int>(all.sm.smCount);
  if (reserved <= 0 || reserved >= total) {
    return absl::FailedPreconditionError(
        absl::StrCat("--short_work_reserved_sms=", reserved, ": the device has ", total, " SMs"));
  }
  CUdevResource group{};
  CUdevResource rest{};
  unsigned groups = 1;
  if (CUresult r =
          d->split(&group, &groups, &all, &rest, 0, static_cast<unsigned>(total - reserved));
      r != CUDA_SUCCESS) {
    return Failed("cuDevSmResourceSplitByCount", r);
  }
  // The split rounds the count up to the device's granularity: ask again
  // for that much less, so that the group still leaves `reserved` out.
  if (groups == 1 && static_cast<int>(group.sm.smCount) > total - reserved) {
    const int over = static_cast<int>(group.sm.smCount) - (total - reserved);
    groups = 1;
    if (CUresult r = d->split(&group, &groups, &all, &rest, 0,
                              static_cast<unsigned>(std::max(1, total - reserved - over)));
        r != CUDA_SUCCESS) {
      return Failed("cuDevSmResourceSplitByCount", r);
    }
  }
  if (groups != 1 || group.sm.smCount == 0 ||
      static_cast<int>(group.sm.smCount) > total - reserved) {
    return absl::FailedPreconditionError(absl::StrCat("--short_work_reserved_sms=", reserved,
                                                      ": no partition of the device's ", total,
                                                      " SMs leaves that many out"));
  }
  CUdevResourceDesc desc = nullptr;
  if (CUresult r = d->descriptor(&desc, &group, 1); r != CUDA_SUCCESS) {
    return Failed("cuDevResourceGenerateDesc", r);
  }
  CUgreenCtx context = nullptr;
  if (CUresult r = d->create(&context, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM); r != CUDA_SUCCESS) {
    return Failed("cuGreenCtxCreate", r);
  }
  const int sms = static_cast<int>(group.sm.smCount);
  return std::unique_ptr<SmPartition>(new SmPartition(std::move(d), context, sms, total - sms));
}

SmPartition::SmPartition(std::unique_ptr<Driver> driver, void* context, int sms, int left_out)
    : driver_(std::move(driver)), context_(context), sms_(sms), left_out_(left_out) {}

SmPartition::~SmPartition() {
  if (context_ != nullptr) driver_->destroy(static_cast<CUgreenCtx>(context_));
}

absl::StatusOr<cudaStream_t> SmPartition::CreateStream(int priority) {
  CUstream stream = nullptr;
  if (CUresult r = driver_->stream_create(&stream, static_cast<CUgreenCtx>(context_),
                                          CU_STREAM_NON_BLOCKING, priority);
      r != CUDA_SUCCESS) {
    return Failed("cuGreenCtxStreamCreate", r);
  }
  return reinterpret_cast<cudaStream_t>(stream);
}

}  // namespace gpuflow::cuda

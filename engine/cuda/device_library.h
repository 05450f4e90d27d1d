// The device-side library every generated kernel includes: dtype aliases,
// gpuflow's conversion semantics (gf::cv) and one device function per
// elementwise op (gf::op_<name>), mirroring the CPU reference backend.
#ifndef GPUFLOW_ENGINE_CUDA_DEVICE_LIBRARY_H_
#define GPUFLOW_ENGINE_CUDA_DEVICE_LIBRARY_H_

#include <string>

#include "absl/strings/string_view.h"

namespace gpuflow::cuda {

extern const char kDeviceLibrary[];
// gf::complex<T> and NumPy's complex loops (device_library_complex.cc):
// compiled after kDeviceLibrary, only into kernels that use complex values.
extern const char kDeviceComplexLibrary[];

// The translation unit of a generated kernel: kDeviceLibrary, then
// kDeviceComplexLibrary when `kernel` names gf::complex, then `kernel`.
std::string DeviceSource(absl::string_view kernel);

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_DEVICE_LIBRARY_H_

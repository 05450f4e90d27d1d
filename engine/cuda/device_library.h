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

// CuPy's complex<T> API (<cupy/complex.cuh>'s names: complex<float>,
// thrust::complex, real, abs, exp, pow, ...) on gf::complex, for user code
// (device_library_cupy.cc): compiled after kDeviceComplexLibrary.
extern const char kDeviceCupyComplexLibrary[];

// The translation unit of a generated kernel: kDeviceLibrary, then
// kDeviceComplexLibrary when `kernel` names gf::complex, then `kernel`.
std::string DeviceSource(absl::string_view kernel);

// The translation unit of a custom kernel (generated around user code):
// kDeviceLibrary, then, when `kernel` mentions complex at all, both complex
// libraries (so user code finds CuPy's complex<T>), then `kernel`.
std::string CustomKernelSource(absl::string_view kernel);

// A raw kernel's code as NVRTC compiles it: the first line that includes
// <cupy/complex.cuh> (as CuPy's raw kernels do for complex<T>) becomes the
// device library with both complex libraries, later ones nothing, and a
// #line directive keeps the code's own line numbers in NVRTC's log. Code
// without that include is returned as it is.
std::string RawKernelSource(absl::string_view code);

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_DEVICE_LIBRARY_H_

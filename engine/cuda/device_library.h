// The device-side library every generated kernel includes: dtype aliases,
// gpuflow's conversion semantics (gf::cv) and one device function per
// elementwise op (gf::op_<name>), mirroring the CPU reference backend.
#ifndef GPUFLOW_ENGINE_CUDA_DEVICE_LIBRARY_H_
#define GPUFLOW_ENGINE_CUDA_DEVICE_LIBRARY_H_

namespace gpuflow::cuda {

extern const char kDeviceLibrary[];

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_DEVICE_LIBRARY_H_

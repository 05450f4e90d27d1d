# Host kernels (engine/cpu/host_kernels.h) and the 16-bit float conversions
# they rely on (engine/ir/half.h). Included from tests/CMakeLists.txt.
gpuflow_test(half_test SRCS engine/ir/half_test.cc DEPS gpuflow::ir LABELS unit)
gpuflow_test(host_kernels_test
             SRCS engine/cpu/host_kernels_test.cc engine/cpu/host_elementwise_test.cc
                  engine/cpu/host_reduce_test.cc engine/cpu/host_linalg_test.cc
                  engine/cpu/host_shape_test.cc engine/cpu/host_creation_test.cc
                  engine/cpu/host_graph_test.cc
             DEPS gpuflow::cpu gpuflow::testing LABELS unit)

# Host kernels (engine/host/host_kernels.h) and the 16-bit float conversions
# they rely on (engine/ir/half.h). Included from tests/CMakeLists.txt.
gpuflow_test(half_test SRCS engine/ir/half_test.cc DEPS gpuflow::ir LABELS unit)
gpuflow_test(host_kernels_test
             SRCS engine/host/host_kernels_test.cc engine/host/host_elementwise_test.cc
                  engine/host/host_reduce_test.cc engine/host/host_linalg_test.cc
                  engine/host/host_shape_test.cc engine/host/host_creation_test.cc
                  engine/host/host_graph_test.cc engine/host/host_select_test.cc
                  engine/host/host_complex_test.cc engine/host/host_histogram_test.cc
             DEPS gpuflow::host gpuflow::testing LABELS unit)
gpuflow_test(host_sort_test SRCS engine/host/host_sort_test.cc
             DEPS gpuflow::host gpuflow::testing LABELS unit)

# engine/ir: promotion, broadcasting, the op registry and graph validation.
# Included from tests/CMakeLists.txt; paths are relative to tests/.
gpuflow_test(promotion_test SRCS engine/ir/promotion_test.cc
             DEPS gpuflow::ir gpuflow::testing LABELS unit)
gpuflow_test(broadcast_test SRCS engine/ir/broadcast_test.cc
             DEPS gpuflow::ir gpuflow::testing LABELS unit)
gpuflow_test(echo_test SRCS engine/ir/echo_test.cc DEPS gpuflow::ir LABELS unit)
gpuflow_test(op_registry_test SRCS engine/ir/op_registry_test.cc
             DEPS gpuflow::ir gpuflow::testing absl::strings LABELS unit)
gpuflow_test(validate_test SRCS engine/ir/validate_test.cc
             DEPS gpuflow::ir gpuflow::testing absl::strings LABELS unit)
# op_registry_test reads docs/ops.md to check that the registry lists every op.
target_compile_definitions(op_registry_test PRIVATE GPUFLOW_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
gpuflow_test(gather_test SRCS engine/ir/gather_test.cc DEPS gpuflow::ir gpuflow::testing LABELS unit)
gpuflow_test(select_test SRCS engine/ir/select_test.cc DEPS gpuflow::ir gpuflow::testing LABELS unit)
gpuflow_test(sort_ops_test SRCS engine/ir/sort_ops_test.cc DEPS gpuflow::ir gpuflow::testing LABELS unit)
gpuflow_test(complex_ops_test SRCS engine/ir/complex_ops_test.cc
             DEPS gpuflow::ir gpuflow::testing absl::strings LABELS unit)

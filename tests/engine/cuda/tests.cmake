if(GPUFLOW_WITH_CUDA)
  gpuflow_test(codegen_test SRCS engine/cuda/codegen_test.cc DEPS gpuflow::cuda gpuflow::plan
               gpuflow::ir)
endif()
if(GPUFLOW_WITH_CUDA)
  gpuflow_test(codegen_custom_test SRCS engine/cuda/codegen_custom_test.cc
               DEPS gpuflow::cuda gpuflow::ir gpuflow::testing)
endif()
if(GPUFLOW_WITH_CUDA)
  # A second process for the cache's cross-process tests (NVRTC or --fake).
  add_executable(kernel_cache_helper engine/cuda/kernel_cache_helper.cc)
  target_link_libraries(kernel_cache_helper PRIVATE gpuflow::kernel_cache gpuflow::cuda)
  set_target_properties(kernel_cache_helper PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  gpuflow_target_options(kernel_cache_helper)
  gpuflow_test(kernel_cache_test SRCS engine/cuda/kernel_cache_test.cc
               DEPS gpuflow::kernel_cache gpuflow::testing absl::strings LABELS unit)
  target_compile_definitions(kernel_cache_test
                             PRIVATE GPUFLOW_KERNEL_CACHE_HELPER="$<TARGET_FILE:kernel_cache_helper>")
  add_dependencies(kernel_cache_test kernel_cache_helper)
endif()
if(GPUFLOW_WITH_CUDA)
  # Needs a device (skips without one).
  gpuflow_test(cuda_kernel_cache_test SRCS engine/cuda/cuda_kernel_cache_test.cc
               DEPS gpuflow::cuda gpuflow::plan gpuflow::ir gpuflow::testing LABELS gpu)
endif()
if(GPUFLOW_WITH_CUDA)
  gpuflow_test(codegen_layout_test SRCS engine/cuda/codegen_layout_test.cc
               DEPS gpuflow::cuda gpuflow::plan gpuflow::ir gpuflow::testing)
endif()
if(GPUFLOW_WITH_CUDA)
  gpuflow_test(codegen_scan_test SRCS engine/cuda/codegen_scan_test.cc
               DEPS gpuflow::cuda gpuflow::plan gpuflow::ir)
endif()
if(GPUFLOW_WITH_CUDA)
  gpuflow_test(codegen_matmul_test SRCS engine/cuda/codegen_matmul_test.cc
               DEPS gpuflow::cuda gpuflow::plan gpuflow::ir gpuflow::testing)
endif()
if(GPUFLOW_WITH_CUDA)
  gpuflow_test(codegen_creation_test SRCS engine/cuda/codegen_creation_test.cc
               DEPS gpuflow::cuda gpuflow::plan gpuflow::ir gpuflow::host)
endif()
if(GPUFLOW_WITH_CUDA)
  gpuflow_test(codegen_select_test SRCS engine/cuda/codegen_select_test.cc
               DEPS gpuflow::cuda gpuflow::ir gpuflow::testing)
endif()
if(GPUFLOW_WITH_CUDA)
  # Needs a device (skips without one).
  gpuflow_test(cub_sort_test SRCS engine/cuda/cub_sort_test.cc
               DEPS gpuflow::cuda gpuflow::host gpuflow::ir LABELS gpu)
endif()
if(GPUFLOW_WITH_CUDA)
  gpuflow_test(codegen_rows_test SRCS engine/cuda/codegen_rows_test.cc
               DEPS gpuflow::cuda gpuflow::plan gpuflow::ir)
endif()
if(GPUFLOW_WITH_CUDA)
  gpuflow_test(codegen_compress_test SRCS engine/cuda/codegen_compress_test.cc
               DEPS gpuflow::cuda gpuflow::plan gpuflow::ir)
endif()
if(GPUFLOW_WITH_CUDA)
  gpuflow_test(codegen_complex_test SRCS engine/cuda/codegen_complex_test.cc
               DEPS gpuflow::cuda gpuflow::plan gpuflow::ir)
endif()

if(GPUFLOW_WITH_CUDA)
  gpuflow_test(codegen_test SRCS engine/cuda/codegen_test.cc DEPS gpuflow::cuda gpuflow::plan
               gpuflow::ir)
endif()

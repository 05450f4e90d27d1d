gpuflow_test(plan_test SRCS engine/plan/plan_test.cc DEPS gpuflow::plan)

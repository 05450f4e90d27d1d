gpuflow_test(plan_test SRCS engine/plan/plan_test.cc DEPS gpuflow::plan)
gpuflow_test(row_plan_test SRCS engine/plan/row_plan_test.cc DEPS gpuflow::plan gpuflow::ir)

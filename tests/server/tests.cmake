# Observability: the metrics endpoint (prometheus-cpp) and callback families, the
# server's metrics, request log and health monitor, and the Benchmark loop.
gpuflow_test(metrics_callbacks_test SRCS server/metrics/callbacks_test.cc
             DEPS gpuflow::metrics LABELS unit)
gpuflow_test(metrics_endpoint_test SRCS server/metrics/endpoint_test.cc
             DEPS gpuflow::metrics gpuflow::testing absl::strings absl::time LABELS unit)
gpuflow_test(logging_test SRCS server/logging_test.cc
             DEPS gpuflow::server gpuflow::testing absl::time LABELS unit)
gpuflow_test(server_metrics_test SRCS server/server_metrics_test.cc
             DEPS gpuflow::server gpuflow::cpu gpuflow::testing LABELS unit)
gpuflow_test(rpc_observer_test SRCS server/rpc_observer_test.cc
             DEPS gpuflow::server LABELS unit)
gpuflow_test(health_monitor_test SRCS server/health_monitor_test.cc
             DEPS gpuflow::server gpuflow::cpu gRPC::grpc++ absl::synchronization LABELS unit)
gpuflow_test(graph_runner_test SRCS server/graph_runner_test.cc
             DEPS gpuflow::server gpuflow::cpu gpuflow::testing LABELS unit)
# Hardening: the compute pool's fair share, strict upload streams, request control.
gpuflow_test(compute_pool_test SRCS server/compute_pool_test.cc
             DEPS gpuflow::server absl::synchronization absl::time LABELS unit)
gpuflow_test(upload_stream_test SRCS server/upload_stream_test.cc
             DEPS gpuflow::server gpuflow::cpu gpuflow::testing LABELS unit)
gpuflow_test(request_control_test SRCS server/request_control_test.cc
             DEPS gpuflow::server gpuflow::cpu gpuflow::testing LABELS unit)
# Security: tenants and tokens, TLS files, reflection with auth, the kernel
# cache directory check, start-up warnings.
gpuflow_test(tenants_test SRCS server/tenants_test.cc
             DEPS gpuflow::server gpuflow::testing absl::strings LABELS unit)
gpuflow_test(tls_credentials_test SRCS server/tls_credentials_test.cc
             DEPS gpuflow::server gpuflow::testing absl::strings LABELS unit)
gpuflow_test(reflection_service_test SRCS server/reflection_service_test.cc
             DEPS gpuflow::server gpuflow::proto gRPC::grpc++ absl::strings LABELS unit)
gpuflow_test(private_directory_test SRCS server/private_directory_test.cc
             DEPS gpuflow::server gpuflow::testing LABELS unit)
gpuflow_test(security_warnings_test SRCS server/security_warnings_test.cc
             DEPS gpuflow::server LABELS unit)
gpuflow_test(trace_context_test SRCS server/trace_context_test.cc
             DEPS gpuflow::server LABELS unit)
gpuflow_test(reloadable_file_test SRCS server/reloadable_file_test.cc
             DEPS gpuflow::server gpuflow::testing LABELS unit)
gpuflow_test(memory_budget_test SRCS server/memory_budget_test.cc
             DEPS gpuflow::server gpuflow::testing LABELS unit)
# The request cache of Execute (issue 15).
gpuflow_test(request_cache_test SRCS server/request_cache_test.cc
             DEPS gpuflow::server gpuflow::cpu gpuflow::testing LABELS unit)
# Execute's Timings.total covers the server's whole handling (issue 15).
gpuflow_test(execute_timings_test SRCS server/execute_timings_test.cc
             DEPS gpuflow::server gpuflow::cpu gpuflow::testing gRPC::grpc++ LABELS unit)
# Prepared graphs: PrepareGraph and Execute by handle (issue 15).
gpuflow_test(prepared_graph_test SRCS server/prepared_graph_test.cc
             DEPS gpuflow::server gpuflow::cpu gpuflow::testing LABELS unit)
# Shared-memory regions: keys, claims, bounds and the staged copies (issue 16).
gpuflow_test(shared_memory_test SRCS server/shared_memory_test.cc
             DEPS gpuflow::server gpuflow::cpu gpuflow::testing LABELS unit)

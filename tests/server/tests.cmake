# Observability: the metrics registry, its text format and HTTP endpoint, the
# server's metrics, request log and health monitor, and the Benchmark loop.
gpuflow_test(metrics_registry_test SRCS server/metrics/registry_test.cc
             DEPS gpuflow::metrics LABELS unit)
gpuflow_test(metrics_text_format_test SRCS server/metrics/text_format_test.cc
             DEPS gpuflow::metrics LABELS unit)
gpuflow_test(metrics_http_exposer_test SRCS server/metrics/http_exposer_test.cc
             DEPS gpuflow::metrics gpuflow::testing absl::strings LABELS unit)
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

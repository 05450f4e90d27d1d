# Tests of clients/cpp (included from tests/CMakeLists.txt).
gpuflow_test(client_array_test SRCS clients/cpp/array_test.cc
             DEPS gpuflow::client gpuflow::testing LABELS unit)
gpuflow_test(npy_test SRCS clients/cpp/npy_test.cc
             DEPS gpuflow::client gpuflow::testing absl::strings LABELS unit)
gpuflow_test(graph_json_test SRCS clients/cpp/graph_json_test.cc
             DEPS gpuflow::client gpuflow::testing LABELS unit)
gpuflow_test(cli_format_test SRCS clients/cpp/cli/format_test.cc
             DEPS gpuflow::cli gpuflow::testing LABELS unit)

# Against the real gpuflowd, started as a child process (tests/testing/server_process.h).
gpuflow_test(client_test SRCS clients/cpp/client_test.cc
             DEPS gpuflow::client gpuflow::testing absl::strings absl::time LABELS integration)
target_compile_definitions(client_test PRIVATE GPUFLOW_SERVER_BIN="$<TARGET_FILE:gpuflowd>")
add_dependencies(client_test gpuflowd)
gpuflow_test(cli_test SRCS clients/cpp/cli/cli_test.cc
             DEPS gpuflow::cli gpuflow::client gpuflow::testing absl::strings absl::time
             LABELS integration)
target_compile_definitions(cli_test PRIVATE GPUFLOW_SERVER_BIN="$<TARGET_FILE:gpuflowd>")
add_dependencies(cli_test gpuflowd)
# The client and the CLI against a gpuflowd with TLS, mutual TLS and tokens.
gpuflow_test(client_security_test SRCS clients/cpp/client_security_test.cc
             DEPS gpuflow::cli gpuflow::client gpuflow::testing absl::strings absl::time
             LABELS integration)
target_compile_definitions(client_security_test PRIVATE GPUFLOW_SERVER_BIN="$<TARGET_FILE:gpuflowd>")
add_dependencies(client_security_test gpuflowd)
gpuflow_test(client_pool_test SRCS clients/cpp/pool_test.cc
             DEPS gpuflow::client gpuflow::testing absl::strings absl::time LABELS integration)
target_compile_definitions(client_pool_test PRIVATE GPUFLOW_SERVER_BIN="$<TARGET_FILE:gpuflowd>")
add_dependencies(client_pool_test gpuflowd)

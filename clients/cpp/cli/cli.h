// The `gpuflow` command line (docs/cli.md) as a function, so that tests can
// run every command in-process:
//
//   std::ostringstream out, err;
//   int code = RunCli({"upload", "x.npy", "--name=x"},
//                     {.target = "localhost:50051", .session = id}, out, err);
//
// Commands: info; session create|close|info; upload; download; ls; rm; run;
// bench; help. Each takes --target, --session, --token and --tls-* (defaults
// from the environment given), and --help.
//
// Thread-compatible: concurrent calls share nothing but the streams given.
#ifndef GPUFLOW_CLIENTS_CPP_CLI_CLI_H_
#define GPUFLOW_CLIENTS_CPP_CLI_CLI_H_

#include <ostream>
#include <string>
#include <vector>

namespace gpuflow::client::cli {

// Exit codes: success; a failed call, file or graph (stderr says
// "gpuflow COMMAND: CODE: message" with the gRPC code's name); a command
// line that does not parse.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// Defaults taken from the environment (GPUFLOW_TARGET, GPUFLOW_SESSION,
// GPUFLOW_TOKEN, GPUFLOW_TLS_CA, GPUFLOW_TLS_CERT, GPUFLOW_TLS_KEY); the
// command line wins.
struct CliEnvironment {
  // Empty: localhost:50051.
  std::string target{};
  // Empty: none (upload, download, ls and rm then fail; run and bench use a
  // temporary session).
  std::string session{};
  // The bearer token of a server with tenants; empty: none.
  std::string token{};
  // PEM files: the CA to trust (TLS), and this client's certificate and key
  // (mutual TLS). Empty: plaintext, unless --tls.
  std::string tls_ca{};
  std::string tls_cert{};
  std::string tls_key{};
};

// Runs one command; `args` excludes the program name. Results go to `out`,
// errors and usage to `err`. Returns the exit code.
int RunCli(const std::vector<std::string>& args, const CliEnvironment& environment,
           std::ostream& out, std::ostream& err);

}  // namespace gpuflow::client::cli

#endif  // GPUFLOW_CLIENTS_CPP_CLI_CLI_H_

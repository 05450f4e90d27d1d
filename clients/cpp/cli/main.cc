// gpuflow: the command-line client of gpuflowd. See docs/cli.md, or
// `gpuflow --help`.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "clients/cpp/cli/cli.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  gpuflow::client::cli::CliEnvironment environment;
  if (const char* target = std::getenv("GPUFLOW_TARGET")) environment.target = target;
  if (const char* session = std::getenv("GPUFLOW_SESSION")) environment.session = session;
  if (const char* token = std::getenv("GPUFLOW_TOKEN")) environment.token = token;
  if (const char* ca = std::getenv("GPUFLOW_TLS_CA")) environment.tls_ca = ca;
  if (const char* cert = std::getenv("GPUFLOW_TLS_CERT")) environment.tls_cert = cert;
  if (const char* key = std::getenv("GPUFLOW_TLS_KEY")) environment.tls_key = key;
  return gpuflow::client::cli::RunCli(args, environment, std::cout, std::cerr);
}

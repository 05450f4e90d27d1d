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
  return gpuflow::client::cli::RunCli(args, environment, std::cout, std::cerr);
}

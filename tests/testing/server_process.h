// A gpuflowd child process for tests that drive the real server over gRPC:
//
//   ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
//                        ServerProcess::Start(GPUFLOW_SERVER_BIN, {"--backend=cpu"}));
//   auto client = client::Client::Connect(server->address());
//
// The server listens on 127.0.0.1 on a free port (--port=0 --port_file),
// without a metrics endpoint (--metrics_port=0); the destructor kills it (SIGKILL) if it still
// runs. An IP address on both sides keeps DNS (c-ares, which leaks a few bytes that LeakSanitizer
// reports) out of the tests.
#ifndef GPUFLOW_TESTS_TESTING_SERVER_PROCESS_H_
#define GPUFLOW_TESTS_TESTING_SERVER_PROCESS_H_

#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

extern char** environ;

namespace gpuflow::testing {

class ServerProcess {
 public:
  // Starts `binary` with --address=127.0.0.1 --port=0 --port_file=... and
  // `args`, in this process's environment minus any GPUFLOW_* variables, and
  // waits until it writes its port. An error when it exits first (naming the
  // exit status) or does not start within 30 s.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::string& binary, const std::vector<std::string>& args) {
    auto server = std::unique_ptr<ServerProcess>(new ServerProcess());
    std::string dir_template = ::testing::TempDir() + "gpuflowd.XXXXXX";
    if (mkdtemp(dir_template.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
    }
    server->dir_ = dir_template;
    const std::string port_file = server->dir_ + "/port";

    // No metrics endpoint: its fixed default port would collide between
    // servers (a later --metrics_port in `args` wins).
    std::vector<std::string> argv_strings = {binary, "--address=127.0.0.1", "--port=0",
                                             "--port_file=" + port_file, "--metrics_port=0"};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      if (!absl::StartsWith(*e, "GPUFLOW_")) env_strings.emplace_back(*e);
    }
    std::vector<char*> argv = CStrings(argv_strings);
    std::vector<char*> envp = CStrings(env_strings);

    // The child must not inherit a blocked or ignored SIGTERM/SIGINT.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    const int error = posix_spawn(&server->pid_, argv[0], nullptr, &attr, argv.data(), envp.data());
    posix_spawnattr_destroy(&attr);
    if (error != 0) {
      server->pid_ = -1;
      return absl::InternalError(absl::StrCat("posix_spawn ", binary, ": ", std::strerror(error)));
    }

    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      std::ifstream file(port_file);
      std::string line;
      if (file && std::getline(file, line) && absl::SimpleAtoi(line, &server->port_) &&
          server->port_ > 0) {
        return server;
      }
      int status = 0;
      if (waitpid(server->pid_, &status, WNOHANG) == server->pid_) {
        server->pid_ = -1;
        return absl::FailedPreconditionError(
            absl::StrCat(binary, " exited with wait status ", status, " before serving"));
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return absl::DeadlineExceededError(
        absl::StrCat(binary, " did not write its port file within 30 s"));
  }

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }

  int port() const { return port_; }
  // "ipv4:127.0.0.1:PORT": a gRPC target that needs no name resolution.
  std::string address() const { return absl::StrCat("ipv4:127.0.0.1:", port_); }

 private:
  ServerProcess() = default;

  static std::vector<char*> CStrings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (std::string& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  }

  pid_t pid_ = -1;
  std::string dir_;
  int port_ = 0;
};

}  // namespace gpuflow::testing

#endif  // GPUFLOW_TESTS_TESTING_SERVER_PROCESS_H_

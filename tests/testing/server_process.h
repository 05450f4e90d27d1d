// A gpuflowd child process for tests that drive the real server over gRPC:
//
//   ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
//                        ServerProcess::Start(GPUFLOW_SERVER_BIN, {"--backend=cpu"}));
//   auto client = client::Client::Connect(server->address());
//
// The server listens on 127.0.0.1 on a free port (--port=0 --port_file),
// without a metrics endpoint (--metrics_port=0); the destructor kills it (SIGKILL) if it still
// runs. SignalAndWait tests shutdown. An IP address on both sides keeps DNS (c-ares, which leaks a
// few bytes that LeakSanitizer reports) out of the tests.
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
  // `args`, adding `env` ("NAME=value") to this process's environment minus
  // any GPUFLOW_* variables, and waits until it writes its port. An error
  // when it exits first (naming the exit status) or does not start within
  // 30 s.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::string& binary, const std::vector<std::string>& args,
      const std::vector<std::string>& env = {}) {
    auto server = std::unique_ptr<ServerProcess>(new ServerProcess());
    std::string dir_template = ::testing::TempDir() + "gpuflowd_test.XXXXXX";
    if (mkdtemp(dir_template.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
    }
    server->dir_ = dir_template;
    server->port_file_ = server->dir_ + "/port";

    // An IP address on both sides keeps DNS (c-ares, which leaks a few bytes
    // that LeakSanitizer reports) out of the test. Servers run in parallel, so
    // none takes the default metrics port (`args` may give one).
    std::vector<std::string> argv_strings = {binary, "--address=127.0.0.1", "--port=0",
                                             "--port_file=" + server->port_file_,
                                             "--metrics_port=0"};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<std::string> env_strings = env;
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
      std::ifstream file(server->port_file_);
      std::string line;
      if (file && std::getline(file, line) && absl::SimpleAtoi(line, &server->port_) &&
          server->port_ > 0) {
        return server;
      }
      absl::StatusOr<int> exit_status = server->WaitForExit(absl::ZeroDuration());
      if (exit_status.ok()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "gpuflowd exited with ", DescribeWaitStatus(*exit_status), " before serving"));
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return absl::DeadlineExceededError("gpuflowd did not write its port file within 30 s");
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

  // Sends `signal_number`, then waits up to `timeout` for the process to
  // exit; returns its wait status.
  absl::StatusOr<int> SignalAndWait(int signal_number, absl::Duration timeout) {
    if (pid_ <= 0) return absl::FailedPreconditionError("gpuflowd is not running");
    if (kill(pid_, signal_number) != 0) {
      return absl::InternalError(absl::StrCat("kill: ", std::strerror(errno)));
    }
    return WaitForExit(timeout);
  }

  static std::string DescribeWaitStatus(int status) {
    if (WIFEXITED(status)) return absl::StrCat("status ", WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return absl::StrCat("signal ", strsignal(WTERMSIG(status)));
    return absl::StrCat("wait status ", status);
  }

 private:
  ServerProcess() = default;

  static std::vector<char*> CStrings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (std::string& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  }

  // The wait status once the process has exited (and is reaped);
  // DEADLINE_EXCEEDED while it still runs after `timeout`.
  absl::StatusOr<int> WaitForExit(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (true) {
      int status = 0;
      const pid_t done = waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        pid_ = -1;
        return status;
      }
      if (done < 0) return absl::InternalError(absl::StrCat("waitpid: ", std::strerror(errno)));
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat("gpuflowd still running after ", absl::FormatDuration(timeout)));
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
  }

  pid_t pid_ = -1;
  std::string dir_;
  std::string port_file_;
  int port_ = 0;
};

}  // namespace gpuflow::testing

#endif  // GPUFLOW_TESTS_TESTING_SERVER_PROCESS_H_

// gpuflowd --precompile=FILE as a child process: a good file is compiled
// (and logged) before the server serves; a bad one stops the start with a
// message naming the file. (CPU backend: nothing compiles, but the file is
// read, validated and planned exactly as on the GPU.)
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#ifndef GPUFLOW_SERVER_BIN
#error "GPUFLOW_SERVER_BIN must name the gpuflowd binary"
#endif
#ifndef GPUFLOW_SOURCE_DIR
#error "GPUFLOW_SOURCE_DIR must name the source tree"
#endif

extern char** environ;

namespace gpuflow {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

class PrecompileStartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = ::testing::TempDir() + "precompile_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr) << std::strerror(errno);
    dir_ = dir;
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }

  // Starts gpuflowd (CPU backend) with `args`, its stderr to log().
  void Start(const std::vector<std::string>& args) {
    // No metrics listener: its fixed port would collide with parallel tests.
    std::vector<std::string> strings = {GPUFLOW_SERVER_BIN,    "--backend=cpu",
                                        "--address=127.0.0.1", "--port=0",
                                        "--metrics_port=0",    "--port_file=" + dir_ + "/port"};
    strings.insert(strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      if (!absl::StartsWith(*e, "GPUFLOW_")) env_strings.emplace_back(*e);
    }
    std::vector<char*> envp;
    for (std::string& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, (dir_ + "/log").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int error = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(error, 0) << std::strerror(error);
  }

  // The exit status once it exits (within 30 s), or nothing when it is
  // serving (wrote its port file) instead.
  std::optional<int> WaitForExitOrServing() {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::filesystem::exists(dir_ + "/port")) return std::nullopt;
      absl::SleepFor(absl::Milliseconds(20));
    }
    ADD_FAILURE() << "gpuflowd neither served nor exited within 30 s";
    return std::nullopt;
  }

  std::string log() const { return ReadFile(dir_ + "/log"); }

  std::string dir_;
  pid_t pid_ = -1;
};

TEST_F(PrecompileStartTest, CompilesTheFileBeforeServing) {
  Start({std::string("--precompile=") + GPUFLOW_SOURCE_DIR + "/docs/precompile.example.json"});
  EXPECT_EQ(WaitForExitOrServing(), std::nullopt) << log();
  EXPECT_THAT(log(), AllOf(HasSubstr("precompile: graph 0 (1 nodes)"),
                           HasSubstr("precompiled 2 graph(s) from")));
}

TEST_F(PrecompileStartTest, BadJsonStopsTheStartNamingTheFile) {
  const std::string file = dir_ + "/warm.json";
  std::ofstream(file) << "{\"graphs\": [";
  Start({"--precompile=" + file});
  EXPECT_EQ(WaitForExitOrServing(), 2);
  EXPECT_THAT(log(),
              AllOf(HasSubstr("error: --precompile"), HasSubstr(file), HasSubstr("protobuf JSON")));
}

TEST_F(PrecompileStartTest, GraphThatDoesNotValidateStopsTheStart) {
  const std::string file = dir_ + "/warm.json";
  std::ofstream(file) << R"({"graphs": [{"nodes": [{"id": "n", "op": "nope",
                                                     "inputs": [{"array": "x"}]}]}],
                            "arrayTypes": {"x": {"dtype": "DTYPE_FLOAT32", "shape": [3]}}})";
  Start({"--precompile=" + file});
  EXPECT_EQ(WaitForExitOrServing(), 2);
  EXPECT_THAT(log(), AllOf(HasSubstr(file), HasSubstr("graph 0"), HasSubstr("nope")));
}

TEST_F(PrecompileStartTest, MissingFileStopsTheStart) {
  Start({"--precompile=" + dir_ + "/absent.json"});
  EXPECT_EQ(WaitForExitOrServing(), 2);
  EXPECT_THAT(log(), HasSubstr(dir_ + "/absent.json"));
}

}  // namespace
}  // namespace gpuflow

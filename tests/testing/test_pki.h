// CAs and certificates for TLS tests, made by the openssl command in a
// temporary directory (EC P-256 keys: fast).
//
//   absl::StatusOr<std::unique_ptr<TestPki>> pki = TestPki::Create("my_test");
//   if (!pki.ok()) GTEST_SKIP() << pki.status();        // no openssl command
//   (*pki)->MakeCa("ca");
//   (*pki)->Issue("ca", "server", /*server=*/true);     // server.crt, server.key
//   std::string path = (*pki)->Path("server.crt");
//
// Server certificates name localhost and 127.0.0.1. The directory is removed
// with the object.
#ifndef GPUFLOW_TESTS_TESTING_TEST_PKI_H_
#define GPUFLOW_TESTS_TESTING_TEST_PKI_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace gpuflow::testing {

class TestPki {
 public:
  // FAILED_PRECONDITION when there is no openssl command.
  static absl::StatusOr<std::unique_ptr<TestPki>> Create(const std::string& name) {
    if (std::system("openssl version > /dev/null 2>&1") != 0) {
      return absl::FailedPreconditionError("needs the openssl command (scripts/install_deps.sh)");
    }
    auto pki = std::unique_ptr<TestPki>(new TestPki());
    pki->dir_ = std::filesystem::path(::testing::TempDir()) /
                absl::StrCat(name, "_", getpid(), "_",
                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(pki->dir_);
    return pki;
  }
  ~TestPki() { std::filesystem::remove_all(dir_); }
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  std::string Path(const std::string& file) const { return (dir_ / file).string(); }

  // NAME.crt, NAME.key: a self-signed CA.
  void MakeCa(const std::string& name) {
    Run(
        absl::StrCat("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
                     "-days 2 -subj /CN=",
                     name, " -keyout ", Path(name + ".key"), " -out ", Path(name + ".crt")));
  }
  // NAME.crt, NAME.key signed by the CA `ca`.
  void Issue(const std::string& ca, const std::string& name, bool server = true) {
    std::ofstream(Path(name + ".ext"))
        << (server ? "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
                   : "extendedKeyUsage=clientAuth\n");
    Run(absl::StrCat(
        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=", name,
        " -keyout ", Path(name + ".key"), " -out ", Path(name + ".csr")));
    Run(absl::StrCat("openssl x509 -req -in ", Path(name + ".csr"), " -CA ", Path(ca + ".crt"),
                     " -CAkey ", Path(ca + ".key"), " -CAcreateserial -days 2 -extfile ",
                     Path(name + ".ext"), " -out ", Path(name + ".crt")));
  }
  // Runs a shell command; a failure fails the test.
  void Run(const std::string& command) {
    EXPECT_EQ(std::system((command + " > /dev/null 2>&1").c_str()), 0) << command;
  }
  std::string Read(const std::string& file) const {
    std::ifstream in(Path(file));
    std::stringstream contents;
    contents << in.rdbuf();
    return contents.str();
  }
  // Replaces `to` with `from`'s contents at once (written aside, renamed).
  void Copy(const std::string& from, const std::string& to) {
    const std::string tmp = Path(to + ".tmp");
    std::ofstream(tmp) << Read(from);
    std::filesystem::rename(tmp, Path(to));
  }

 private:
  TestPki() = default;
  std::filesystem::path dir_;
};

}  // namespace gpuflow::testing

#endif  // GPUFLOW_TESTS_TESTING_TEST_PKI_H_

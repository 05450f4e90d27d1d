#include "server/tls_credentials.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

// Certificates made by the openssl command in a temporary directory.
class TlsCredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("openssl version > /dev/null 2>&1") != 0) {
      GTEST_SKIP() << "needs the openssl command (scripts/install_deps.sh)";
    }
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("tls_credentials_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    MakeCa("ca");
    Issue("ca", "server");
    Issue("ca", "other");
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  void Run(const std::string& command) {
    ASSERT_EQ(std::system((command + " > /dev/null 2>&1").c_str()), 0) << command;
  }
  void MakeCa(const std::string& name) {
    Run(
        absl::StrCat("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
                     "-days 2 -subj /CN=",
                     name, " -keyout ", Path(name + ".key"), " -out ", Path(name + ".crt")));
  }
  void Issue(const std::string& ca, const std::string& name) {
    Run(absl::StrCat(
        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=", name,
        " -keyout ", Path(name + ".key"), " -out ", Path(name + ".csr")));
    Run(absl::StrCat("openssl x509 -req -in ", Path(name + ".csr"), " -CA ", Path(ca + ".crt"),
                     " -CAkey ", Path(ca + ".key"), " -CAcreateserial -days 2 -out ",
                     Path(name + ".crt")));
  }
  std::string Read(const std::string& name) const {
    std::ifstream file(Path(name));
    std::stringstream contents;
    contents << file.rdbuf();
    return contents.str();
  }
  void Copy(const std::string& from, const std::string& to) {
    const std::string tmp = Path(to + ".tmp");
    std::ofstream(tmp) << Read(from);
    std::filesystem::rename(tmp, Path(to));
  }

  std::filesystem::path dir_;
};

TEST_F(TlsCredentialsTest, ChecksTheFilesAndDescribesTheCertificate) {
  absl::StatusOr<TlsMaterial> material = ReadTlsFiles({.cert_file = Path("server.crt"),
                                                       .key_file = Path("server.key"),
                                                       .client_ca_file = Path("ca.crt")});
  ASSERT_THAT(material, IsOk());
  EXPECT_THAT(material->description, HasSubstr("CN=server, expires "));
  EXPECT_THAT(material->description, HasSubstr("; client CA: 1 certificate(s)"));
  EXPECT_FALSE(material->expired);
}

TEST_F(TlsCredentialsTest, RefusalsNameTheFlagAndFileAndNeverQuoteTheKey) {
  const std::string key = Read("server.key");
  struct Case {
    TlsFiles files;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{Path("server.crt"), Path("other.key"), ""},
       "--tls_key_file=" + Path("other.key") + " does not match the certificate of " +
           "--tls_cert_file=" + Path("server.crt")},
      {{Path("server.key"), Path("server.key"), ""},
       "--tls_cert_file=" + Path("server.key") + ": not a PEM certificate chain"},
      {{Path("server.crt"), Path("server.crt"), ""}, "not a PEM private key"},
      {{Path("server.crt"), Path("missing.key"), ""},
       "--tls_key_file=" + Path("missing.key") + ": cannot read it: No such file"},
      {{Path("server.crt"), Path("server.key"), Path("server.key")},
       "--tls_client_ca_file=" + Path("server.key") + ": not a PEM bundle of CA certificates"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<TlsMaterial> material = ReadTlsFiles(c.files);
    EXPECT_THAT(material.status(), StatusIs(Not(absl::StatusCode::kOk), HasSubstr(c.message)))
        << c.message;
    EXPECT_THAT(material.status().message(), Not(HasSubstr(key.substr(30, 40))));
  }
}

TEST_F(TlsCredentialsTest, EncryptedKeyIsRefusedWithoutPrompting) {
  Run(absl::StrCat("openssl pkey -in ", Path("server.key"), " -aes256 -passout pass:secret -out ",
                   Path("encrypted.key")));
  EXPECT_THAT(
      ReadTlsFiles({.cert_file = Path("server.crt"), .key_file = Path("encrypted.key")}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the private key is encrypted")));
}

TEST_F(TlsCredentialsTest, TruncatedChainIsRefused) {
  const std::string chain = Read("server.crt");
  EXPECT_THAT(CheckTlsMaterial(Read("server.key"), chain.substr(0, chain.size() / 2), "").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a PEM certificate")));
  // A second certificate that does not parse spoils the bundle too.
  EXPECT_THAT(
      CheckTlsMaterial(Read("server.key"), chain + chain.substr(0, chain.size() / 2), "").status(),
      StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(TlsCredentialsTest, ReloadStagesValidRotationsAndKeepsTheLastGoodOnes) {
  Copy("server.crt", "tls.crt");
  Copy("server.key", "tls.key");
  absl::StatusOr<std::unique_ptr<TlsCredentials>> tls =
      TlsCredentials::Create({.cert_file = Path("tls.crt"), .key_file = Path("tls.key")});
  ASSERT_THAT(tls, IsOk());
  ASSERT_NE((*tls)->server_credentials(), nullptr);
  EXPECT_FALSE((*tls)->mutual());
  EXPECT_THAT((*tls)->description(), HasSubstr("CN=server"));
  EXPECT_FALSE((*tls)->ReloadIfChanged().changed);

  // A valid rotation is in force at the first look.
  Copy("other.crt", "tls.crt");
  Copy("other.key", "tls.key");
  TlsCredentials::Reload reload = (*tls)->ReloadIfChanged();
  EXPECT_TRUE(reload.changed);
  EXPECT_THAT(reload.status, IsOk());
  EXPECT_THAT(reload.description, HasSubstr("CN=other"));
  EXPECT_THAT((*tls)->description(), HasSubstr("CN=other"));
  EXPECT_FALSE((*tls)->ReloadIfChanged().changed);

  // Half a rotation: not reported at the first look (the other file may
  // be on its way), reported at the second, once.
  Copy("server.key", "tls.key");
  EXPECT_FALSE((*tls)->ReloadIfChanged().changed);
  reload = (*tls)->ReloadIfChanged();
  EXPECT_TRUE(reload.changed);
  EXPECT_THAT(reload.status, StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr("does not match the certificate")));
  EXPECT_FALSE((*tls)->ReloadIfChanged().changed);
  EXPECT_THAT((*tls)->description(), HasSubstr("CN=other"));  // still in use
  // The rest of the rotation arrives.
  Copy("server.crt", "tls.crt");
  reload = (*tls)->ReloadIfChanged();
  EXPECT_TRUE(reload.changed);
  EXPECT_THAT(reload.status, IsOk());
  EXPECT_THAT((*tls)->description(), HasSubstr("CN=server"));
}

TEST_F(TlsCredentialsTest, CreateRefusesBadFilesAndMissingHalves) {
  EXPECT_THAT(TlsCredentials::Create({.cert_file = Path("server.crt")}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("go together")));
  EXPECT_THAT(
      TlsCredentials::Create({.cert_file = Path("server.crt"), .key_file = Path("other.key")})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not match")));
  absl::StatusOr<std::unique_ptr<TlsCredentials>> mutual =
      TlsCredentials::Create({.cert_file = Path("server.crt"),
                              .key_file = Path("server.key"),
                              .client_ca_file = Path("ca.crt")});
  ASSERT_THAT(mutual, IsOk());
  EXPECT_TRUE((*mutual)->mutual());
}

}  // namespace
}  // namespace gpuflow::server

#include "server/tls_credentials.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_pki.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::gpuflow::testing::TestPki;
using ::testing::HasSubstr;
using ::testing::Not;

class TlsCredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TestPki>> pki = TestPki::Create("tls_credentials_test");
    if (!pki.ok()) GTEST_SKIP() << pki.status();
    pki_ = *std::move(pki);
    pki_->MakeCa("ca");
    pki_->Issue("ca", "server");
    pki_->Issue("ca", "other");
  }

  std::string Path(const std::string& name) const { return pki_->Path(name); }
  std::string Read(const std::string& name) const { return pki_->Read(name); }
  void Run(const std::string& command) { pki_->Run(command); }
  void Copy(const std::string& from, const std::string& to) { pki_->Copy(from, to); }

  std::unique_ptr<TestPki> pki_;
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

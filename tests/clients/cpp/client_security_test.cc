// The C++ client and the CLI against a gpuflowd with TLS, mutual TLS and
// tenant tokens (a child process, CPU backend; certificates made by openssl
// at test time).
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/cpp/cli/cli.h"
#include "clients/cpp/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_pki.h"

#ifndef GPUFLOW_SERVER_BIN
#error "GPUFLOW_SERVER_BIN must name the gpuflowd binary"
#endif

namespace gpuflow::client {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::ServerProcess;
using ::gpuflow::testing::StatusIs;
using ::gpuflow::testing::TestPki;
using ::testing::HasSubstr;

constexpr char kToken[] = "secret-token-of-team-a";
// printf %s secret-token-of-team-a | sha256sum
constexpr char kTokenSha256[] = "a3e41241a501acfa19699ef88878816fa2892ac9a5f7456c7d0325c7043ad252";

class ClientSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TestPki>> pki = TestPki::Create("client_security_test");
    if (!pki.ok()) GTEST_SKIP() << pki.status();
    pki_ = *std::move(pki);
    pki_->MakeCa("ca");
    pki_->Issue("ca", "server");
    pki_->MakeCa("client-ca");
    pki_->Issue("client-ca", "client", /*server=*/false);
    pki_->MakeCa("foreign-ca");
    pki_->Issue("foreign-ca", "intruder", /*server=*/false);
    std::ofstream(pki_->Path("tokens.json"))
        << R"({"tenants": [{"name": "team-a", "token_sha256": ")" << kTokenSha256 << R"("}]})";
  }

  // gpuflowd with TLS (mutual when `mutual`) and the tokens file.
  void Start(bool mutual) {
    std::vector<std::string> args = {"--backend=cpu", "--tls_cert_file=" + pki_->Path("server.crt"),
                                     "--tls_key_file=" + pki_->Path("server.key"),
                                     "--auth_tokens_file=" + pki_->Path("tokens.json")};
    if (mutual) args.push_back("--tls_client_ca_file=" + pki_->Path("client-ca.crt"));
    absl::StatusOr<std::unique_ptr<ServerProcess>> server =
        ServerProcess::Start(GPUFLOW_SERVER_BIN, args);
    ASSERT_THAT(server, IsOk());
    server_ = *std::move(server);
  }

  ClientOptions Options(const std::string& token, const std::string& ca, const std::string& cert,
                        const std::string& key) {
    ClientOptions options;
    options.connect_timeout = absl::Seconds(3);
    options.token = token;
    absl::StatusOr<TlsOptions> tls = TlsOptions::FromFiles(ca, cert, key);
    EXPECT_THAT(tls, IsOk());
    if (tls.ok()) options.tls = *tls;
    return options;
  }

  // The tenant GetServerInfo names, or the error.
  absl::StatusOr<std::string> TenantOf(const ClientOptions& options) {
    absl::StatusOr<Client> client = Client::Connect(server_->address(), options);
    if (!client.ok()) return client.status();
    absl::StatusOr<v1::ServerInfo> info = client->Info();
    if (!info.ok()) return info.status();
    return info->tenant();
  }

  struct CliResult {
    int code = -1;
    std::string out;
    std::string err;
  };
  CliResult RunCli(const std::vector<std::string>& args, cli::CliEnvironment environment = {}) {
    environment.target = server_->address();
    std::ostringstream out, err;
    CliResult result;
    result.code = cli::RunCli(args, environment, out, err);
    result.out = out.str();
    result.err = err.str();
    return result;
  }

  std::unique_ptr<TestPki> pki_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(ClientSecurityTest, TlsAndTokenConnect) {
  Start(/*mutual=*/false);
  EXPECT_THAT(TenantOf(Options(kToken, pki_->Path("ca.crt"), "", "")), IsOkAndHolds("team-a"));
  // No token, or a wrong one.
  EXPECT_THAT(TenantOf(Options("", pki_->Path("ca.crt"), "", "")),
              StatusIs(absl::StatusCode::kUnauthenticated));
  EXPECT_THAT(TenantOf(Options("wrong", pki_->Path("ca.crt"), "", "")),
              StatusIs(absl::StatusCode::kUnauthenticated));
  // A CA that did not sign the server's certificate: the handshake fails,
  // and the error says so.
  EXPECT_THAT(TenantOf(Options(kToken, pki_->Path("foreign-ca.crt"), "", "")),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no gpuflow server answered")));
  // Plaintext against TLS.
  ClientOptions plaintext;
  plaintext.connect_timeout = absl::Seconds(2);
  plaintext.token = kToken;
  EXPECT_THAT(TenantOf(plaintext), StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(ClientSecurityTest, StubCallsCarryTheTokenThroughNewContext) {
  Start(/*mutual=*/false);
  absl::StatusOr<Client> client =
      Client::Connect(server_->address(), Options(kToken, pki_->Path("ca.crt"), "", ""));
  ASSERT_THAT(client, IsOk());
  absl::StatusOr<Session> session = client->CreateSession({.label = "secure"});
  ASSERT_THAT(session, IsOk());
  ASSERT_THAT(session->Upload("x", *Array::FromValues<float>({3}, {1, 2, 3})), IsOk());
  absl::StatusOr<Array> x = session->Download("x");
  ASSERT_THAT(x, IsOk());
  EXPECT_EQ(x->data.size(), 12u);
  v1::PrecompileRequest request;
  v1::PrecompileResponse response;
  std::unique_ptr<grpc::ClientContext> context = client->NewContext();
  // An empty request is refused for what it is, not for a missing token.
  const grpc::Status status = client->stub().Precompile(context.get(), request, &response);
  EXPECT_NE(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  grpc::ClientContext bare;
  EXPECT_EQ(client->stub().Precompile(&bare, request, &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(session->Close(), IsOk());
}

TEST_F(ClientSecurityTest, MutualTlsNeedsAClientCertificateOfItsCa) {
  Start(/*mutual=*/true);
  EXPECT_THAT(TenantOf(Options(kToken, pki_->Path("ca.crt"), pki_->Path("client.crt"),
                               pki_->Path("client.key"))),
              IsOkAndHolds("team-a"));
  EXPECT_THAT(TenantOf(Options(kToken, pki_->Path("ca.crt"), "", "")),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(TenantOf(Options(kToken, pki_->Path("ca.crt"), pki_->Path("intruder.crt"),
                               pki_->Path("intruder.key"))),
              StatusIs(absl::StatusCode::kUnavailable));
  // A chain without its key is the caller's mistake.
  ClientOptions half = Options(kToken, pki_->Path("ca.crt"), pki_->Path("client.crt"), "");
  EXPECT_THAT(Client::Connect(server_->address(), half).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("go together")));
}

TEST_F(ClientSecurityTest, TlsOptionsFromFilesNamesAMissingFile) {
  EXPECT_THAT(TlsOptions::FromFiles(pki_->Path("missing.crt"), "", "").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.crt")));
}

TEST_F(ClientSecurityTest, CliTakesTokenAndTlsFromFlagsOrTheEnvironment) {
  Start(/*mutual=*/true);
  const std::vector<std::string> tls = {"--tls_ca=" + pki_->Path("ca.crt"),
                                        "--tls_cert=" + pki_->Path("client.crt"),
                                        "--tls_key=" + pki_->Path("client.key")};
  std::vector<std::string> args = tls;
  args.insert(args.end(), {"--token", kToken, "info"});
  CliResult r = RunCli(args);
  EXPECT_EQ(r.code, cli::kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("tenant:    team-a\n"));
  // The same through the environment, with the dashed spellings on the
  // command line too.
  r = RunCli({"info"}, {.token = kToken,
                        .tls_ca = pki_->Path("ca.crt"),
                        .tls_cert = pki_->Path("client.crt"),
                        .tls_key = pki_->Path("client.key")});
  EXPECT_EQ(r.code, cli::kExitOk) << r.err;
  r = RunCli({"--tls-ca", pki_->Path("ca.crt"), "--tls-cert", pki_->Path("client.crt"), "--tls-key",
              pki_->Path("client.key"), "session", "create"},
             {.token = kToken});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  // No token: UNAUTHENTICATED, exit 1.
  args = tls;
  args.push_back("info");
  r = RunCli(args);
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_THAT(r.err, HasSubstr("gpuflow info: UNAUTHENTICATED: this server requires a bearer "
                               "token"));
  // Half a client certificate.
  r = RunCli({"--tls-ca=" + pki_->Path("ca.crt"), "--tls-cert=" + pki_->Path("client.crt"),
              "--token", kToken, "info"});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_THAT(r.err, HasSubstr("--tls-cert and --tls-key go together"));
  // Plaintext against TLS.
  r = RunCli({"--token", kToken, "--connect-timeout=1s", "info"});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_THAT(r.err, HasSubstr("UNAVAILABLE"));
}

}  // namespace
}  // namespace gpuflow::client

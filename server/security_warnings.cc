#include "server/security_warnings.h"

#include <arpa/inet.h>

#include <algorithm>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace gpuflow::server {

bool IsLoopbackAddress(absl::string_view address) {
  std::string host = absl::AsciiStrToLower(absl::StripAsciiWhitespace(address));
  if (host == "localhost" || absl::EndsWith(host, ".localhost")) return true;
  absl::string_view bare = host;
  if (absl::ConsumePrefix(&bare, "[")) absl::ConsumeSuffix(&bare, "]");
  const std::string text(bare);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    static const in6_addr kLoopback = IN6ADDR_LOOPBACK_INIT;
    return std::equal(std::begin(v6.s6_addr), std::end(v6.s6_addr), std::begin(kLoopback.s6_addr));
  }
  return false;  // a host name or any other address: assume it is reachable
}

std::vector<std::string> SecurityWarnings(const ListenSecurity& listen) {
  std::vector<std::string> warnings;
  if (IsLoopbackAddress(listen.address)) return warnings;
  const std::string where = absl::StrCat("listening on ", listen.address);
  if (!listen.tls) {
    warnings.push_back(absl::StrCat(
        where, " without TLS (--tls_cert_file, --tls_key_file): session ids",
        listen.tokens ? ", bearer tokens" : "", " and array data cross the network in clear"));
  }
  if (!listen.tokens && !listen.mutual_tls) {
    warnings.push_back(absl::StrCat(
        where,
        " without authentication (--auth_tokens_file or --tls_client_ca_file): anyone who can "
        "reach the port can open sessions, compile kernels and use the whole GPU",
        listen.raw_kernels ? ", and run their own code in the server (--allow_raw_kernels)" : ""));
  }
  for (std::string& warning : warnings) warning += " (see docs/security.md)";
  return warnings;
}

}  // namespace gpuflow::server

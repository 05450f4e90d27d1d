// What gpuflowd warns about at start: a gRPC port reachable beyond this
// machine without TLS, or without any way to tell callers apart (no tokens,
// no client certificates). Anyone who reaches such a port can read and
// write every session whose id they learn, compile kernels, and fill the
// GPU; with --allow_raw_kernels, run code in the server.
//
//   for (const std::string& w : SecurityWarnings({.address = "0.0.0.0"})) log.Warning(w);
#ifndef GPUFLOW_SERVER_SECURITY_WARNINGS_H_
#define GPUFLOW_SERVER_SECURITY_WARNINGS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace gpuflow::server {

// Whether `address` (--address: a host name or IP, IPv6 maybe in brackets)
// names the loopback interface only: localhost, 127.0.0.0/8, ::1.
bool IsLoopbackAddress(absl::string_view address);

struct ListenSecurity {
  std::string address{};
  bool tls = false;
  // Client certificates are required (--tls_client_ca_file).
  bool mutual_tls = false;
  // Bearer tokens are required (--auth_tokens_file).
  bool tokens = false;
  bool raw_kernels = false;
};

// One line per risk, empty when there is none (always on loopback).
std::vector<std::string> SecurityWarnings(const ListenSecurity& listen);

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_SECURITY_WARNINGS_H_

// TLS and mutual TLS for the gRPC port, with certificates reloaded when
// their files change (cert-manager rotating a Kubernetes Secret) and no
// connection dropped.
//
//   absl::StatusOr<std::unique_ptr<TlsCredentials>> tls =
//       TlsCredentials::Create({.cert_file = "tls.crt", .key_file = "tls.key",
//                               .client_ca_file = "ca.crt"});   // "" : no client certificates
//   builder.AddListeningPort(address, (*tls)->server_credentials());
//   TlsCredentials::Reload r = (*tls)->ReloadIfChanged();      // every second
//
// Why not hand the paths to gRPC's FileWatcherCertificateProvider directly:
// it passes whatever it reads to the TLS stack, so a file half written, a
// key and certificate that do not match (one file replaced before the
// other) or a file that is not PEM at all would fail every new handshake
// until someone fixed it. Here the files are checked first (OpenSSL: the
// chain parses, the key is unencrypted and matches the leaf, the CA bundle
// parses) and only a valid set is staged for gRPC's watcher, in memory
// (memfd; the key never lands anywhere else on disk): a bad rotation keeps
// the last good certificates in use and says why.
//
// The staged key and chain are one file swapped whole (dup3 onto a fixed
// descriptor), so gRPC never reads a new key with an old chain; gRPC looks
// at it every second, so a valid rotation is in use for new connections
// within a second of ReloadIfChanged. Connections already open keep the
// session they negotiated.
//
// Thread-safe. Linux only (memfd, /proc/self/fd).
#ifndef GPUFLOW_SERVER_TLS_CREDENTIALS_H_
#define GPUFLOW_SERVER_TLS_CREDENTIALS_H_

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/reloadable_file.h"

namespace gpuflow::server {

struct TlsFiles {
  // PEM: the server's certificate chain (leaf first) and its private key.
  std::string cert_file{};
  std::string key_file{};
  // PEM CA bundle; set: clients must present a certificate it verifies
  // (mutual TLS). Empty: no client certificate is asked for.
  std::string client_ca_file{};
};

// The checked contents of a TlsFiles.
struct TlsMaterial {
  std::string key_pem;
  std::string chain_pem;
  std::string client_ca_pem;
  // The leaf's subject and expiry, and the CA bundle's size, for the log:
  // "CN=gpuflow.example, expires 2026-01-01 00:00:00 UTC; client CA: 1 certificate(s)".
  std::string description;
  // The leaf has expired (clients will refuse it).
  bool expired = false;
};

// Reads and checks the files: INVALID_ARGUMENT (or the read error) naming
// the flag, the file and the fault. Never quotes key material.
absl::StatusOr<TlsMaterial> ReadTlsFiles(const TlsFiles& files);
// Checks PEM contents as ReadTlsFiles does; `client_ca_pem` may be empty.
absl::StatusOr<TlsMaterial> CheckTlsMaterial(std::string key_pem, std::string chain_pem,
                                             std::string client_ca_pem);

class TlsCredentials {
 public:
  // Reads and checks the files and stages them. Call after grpc is
  // initialised (a grpc::ServerBuilder exists).
  static absl::StatusOr<std::unique_ptr<TlsCredentials>> Create(TlsFiles files);
  ~TlsCredentials();
  TlsCredentials(const TlsCredentials&) = delete;
  TlsCredentials& operator=(const TlsCredentials&) = delete;

  // For AddListeningPort; they follow every staged reload.
  std::shared_ptr<grpc::ServerCredentials> server_credentials() const { return credentials_; }
  bool mutual() const { return !files_.client_ca_file.empty(); }
  // What is staged now (TlsMaterial::description), and whether its leaf
  // has expired.
  std::string description() const;
  bool expired() const;

  struct Reload {
    // Something to report (false: nothing else is set).
    bool changed = false;
    // OK: the new files are staged. Otherwise why they are not; the last
    // good ones stay in use.
    absl::Status status;
    // Of the staged files, when status is OK.
    std::string description;
    bool expired = false;
  };
  // Reads the files again; stages them when they changed and are valid.
  // Files that are not valid together change nothing; they are reported once
  // they have stayed the same for two calls in a row (a rotation caught
  // between its files is not reported).
  Reload ReloadIfChanged();

 private:
  TlsCredentials(TlsFiles files, int identity_fd, int ca_fd, std::string in_force);
  // Writes `contents` to a new memfd and puts it in place of `fd`.
  static absl::Status Stage(int fd, absl::string_view contents);

  const TlsFiles files_;
  // Descriptors whose /proc/self/fd paths gRPC's watcher reads (-1: none).
  const int identity_fd_;
  const int ca_fd_;
  std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> provider_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;

  mutable absl::Mutex mu_;
  // The raw files in force, and which bad sets to report.
  ReloadTracker tracker_ ABSL_GUARDED_BY(mu_);
  std::string description_ ABSL_GUARDED_BY(mu_);
  bool expired_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_TLS_CREDENTIALS_H_

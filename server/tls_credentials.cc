#include "server/tls_credentials.h"

#include <fcntl.h>
#include <grpc/grpc.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/reloadable_file.h"

namespace gpuflow::server {

namespace {

// How often gRPC's watcher looks at the staged files (its minimum).
constexpr unsigned int kStagedRefreshSeconds = 1;

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* x509) const { X509_free(x509); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

BioPtr MemoryBio(absl::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Every certificate of a PEM bundle, or an empty list when there is none or
// one does not parse.
std::vector<X509Ptr> ParseCertificates(absl::string_view pem) {
  std::vector<X509Ptr> certificates;
  BioPtr bio = MemoryBio(pem);
  if (bio == nullptr) return certificates;
  while (X509* certificate = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certificates.emplace_back(certificate);
  }
  // The loop ends at the end of the input (no further PEM block), or at a
  // block that does not parse, which spoils the whole file.
  const unsigned long error = ERR_peek_last_error();
  const bool at_end =
      ERR_GET_LIB(error) == ERR_LIB_PEM && ERR_GET_REASON(error) == PEM_R_NO_START_LINE;
  ERR_clear_error();
  if (!at_end) certificates.clear();
  return certificates;
}

// Never prompts: an encrypted key fails to load.
int NoPassword(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) { return -1; }

PkeyPtr ParsePrivateKey(absl::string_view pem) {
  BioPtr bio = MemoryBio(pem);
  if (bio == nullptr) return nullptr;
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassword, nullptr));
  ERR_clear_error();
  return key;
}

std::string Subject(X509* certificate) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr) return "?";
  X509_NAME_print_ex(bio.get(), X509_get_subject_name(certificate), 0, XN_FLAG_RFC2253);
  BIO_puts(bio.get(), ", expires ");
  ASN1_TIME_print(bio.get(), X509_get0_notAfter(certificate));
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return size > 0 ? std::string(data, static_cast<size_t>(size)) : std::string("?");
}

// The flag and path, for messages about one file.
std::string Named(absl::string_view flag, const std::string& path) {
  return path.empty() ? absl::StrCat("--", flag) : absl::StrCat("--", flag, "=", path);
}

absl::StatusOr<TlsMaterial> Check(std::string key_pem, std::string chain_pem,
                                  std::string client_ca_pem, const TlsFiles& files) {
  std::vector<X509Ptr> chain = ParseCertificates(chain_pem);
  if (chain.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Named("tls_cert_file", files.cert_file),
                     ": not a PEM certificate chain (-----BEGIN CERTIFICATE-----, the "
                     "server's certificate first)"));
  }
  PkeyPtr key = ParsePrivateKey(key_pem);
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(Named("tls_key_file", files.key_file),
                     absl::StrContains(key_pem, "ENCRYPTED")
                         ? ": the private key is encrypted; give it unencrypted (openssl pkey "
                           "-in KEY -out KEY.plain), readable by gpuflowd only"
                         : ": not a PEM private key (-----BEGIN PRIVATE KEY-----)"));
  }
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat(Named("tls_key_file", files.key_file), " does not match the certificate of ",
                     Named("tls_cert_file", files.cert_file),
                     " (a rotation may have replaced one file and not yet the other)"));
  }
  TlsMaterial material;
  material.description = Subject(chain.front().get());
  material.expired = X509_cmp_current_time(X509_get0_notAfter(chain.front().get())) < 0;
  if (!client_ca_pem.empty() || !files.client_ca_file.empty()) {
    const std::vector<X509Ptr> cas = ParseCertificates(client_ca_pem);
    if (cas.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Named("tls_client_ca_file", files.client_ca_file),
                       ": not a PEM bundle of CA certificates (-----BEGIN CERTIFICATE-----)"));
    }
    absl::StrAppend(&material.description, "; client CA: ", cas.size(), " certificate(s)");
  }
  material.key_pem = std::move(key_pem);
  material.chain_pem = std::move(chain_pem);
  material.client_ca_pem = std::move(client_ca_pem);
  return material;
}

// A new memfd holding `contents`.
absl::StatusOr<int> NewMemoryFile(absl::string_view contents) {
  const int fd = memfd_create("gpuflow-tls", MFD_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("memfd_create: ", std::strerror(errno)));
  }
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      close(fd);
      return absl::InternalError(absl::StrCat("writing a memfd: ", std::strerror(error)));
    }
    written += static_cast<size_t>(n);
  }
  return fd;
}

std::string FdPath(int fd) { return fd < 0 ? std::string() : absl::StrCat("/proc/self/fd/", fd); }

// The key, then the chain: PEM readers skip blocks of other kinds, so gRPC
// finds each in the one file.
std::string IdentityFile(const TlsMaterial& material) {
  std::string out = material.key_pem;
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += material.chain_pem;
  return out;
}

// What the files hold, to tell a change (raw, valid or not).
std::string Fingerprint(absl::string_view key, absl::string_view chain, absl::string_view ca) {
  return absl::StrCat(key.size(), ":", key, chain.size(), ":", chain, ca.size(), ":", ca);
}

}  // namespace

absl::StatusOr<TlsMaterial> CheckTlsMaterial(std::string key_pem, std::string chain_pem,
                                             std::string client_ca_pem) {
  return Check(std::move(key_pem), std::move(chain_pem), std::move(client_ca_pem), TlsFiles{});
}

absl::StatusOr<TlsMaterial> ReadTlsFiles(const TlsFiles& files) {
  absl::StatusOr<std::string> chain = ReadSmallFile("tls_cert_file", files.cert_file);
  if (!chain.ok()) return chain.status();
  absl::StatusOr<std::string> key = ReadSmallFile("tls_key_file", files.key_file);
  if (!key.ok()) return key.status();
  std::string ca;
  if (!files.client_ca_file.empty()) {
    absl::StatusOr<std::string> read = ReadSmallFile("tls_client_ca_file", files.client_ca_file);
    if (!read.ok()) return read.status();
    ca = *std::move(read);
  }
  return Check(*std::move(key), *std::move(chain), std::move(ca), files);
}

TlsCredentials::TlsCredentials(TlsFiles files, int identity_fd, int ca_fd, std::string in_force)
    : files_(std::move(files)),
      identity_fd_(identity_fd),
      ca_fd_(ca_fd),
      tracker_(std::move(in_force)) {}

TlsCredentials::~TlsCredentials() {
  credentials_.reset();
  provider_.reset();
  if (identity_fd_ >= 0) close(identity_fd_);
  if (ca_fd_ >= 0) close(ca_fd_);
  grpc_shutdown();
}

absl::StatusOr<std::unique_ptr<TlsCredentials>> TlsCredentials::Create(TlsFiles files) {
  if (files.cert_file.empty() || files.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert_file and --tls_key_file go together");
  }
  absl::StatusOr<TlsMaterial> material = ReadTlsFiles(files);
  if (!material.ok()) return material.status();
  absl::StatusOr<int> identity_fd = NewMemoryFile(IdentityFile(*material));
  if (!identity_fd.ok()) return identity_fd.status();
  int ca_fd = -1;
  if (!files.client_ca_file.empty()) {
    absl::StatusOr<int> fd = NewMemoryFile(material->client_ca_pem);
    if (!fd.ok()) {
      close(*identity_fd);
      return fd.status();
    }
    ca_fd = *fd;
  }
  // The certificate provider is gRPC core: it needs the library initialised
  // (undone by the destructor).
  grpc_init();
  auto tls = std::unique_ptr<TlsCredentials>(new TlsCredentials(
      files, *identity_fd, ca_fd,
      Fingerprint(material->key_pem, material->chain_pem, material->client_ca_pem)));
  tls->provider_ = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      FdPath(tls->identity_fd_), FdPath(tls->identity_fd_), FdPath(tls->ca_fd_),
      kStagedRefreshSeconds);
  grpc::experimental::TlsServerCredentialsOptions options(tls->provider_);
  options.watch_identity_key_cert_pairs();
  if (tls->ca_fd_ >= 0) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  tls->credentials_ = grpc::experimental::TlsServerCredentials(options);
  absl::MutexLock lock(&tls->mu_);
  tls->description_ = material->description;
  tls->expired_ = material->expired;
  return tls;
}

std::string TlsCredentials::description() const {
  absl::MutexLock lock(&mu_);
  return description_;
}

bool TlsCredentials::expired() const {
  absl::MutexLock lock(&mu_);
  return expired_;
}

absl::Status TlsCredentials::Stage(int fd, absl::string_view contents) {
  absl::StatusOr<int> staged = NewMemoryFile(contents);
  if (!staged.ok()) return staged.status();
  // Atomic: gRPC opens either the old file or the new one, each whole.
  const int result = dup3(*staged, fd, O_CLOEXEC);
  const int error = errno;
  close(*staged);
  if (result < 0) return absl::InternalError(absl::StrCat("dup3: ", std::strerror(error)));
  return absl::OkStatus();
}

TlsCredentials::Reload TlsCredentials::ReloadIfChanged() {
  Reload reload;
  absl::StatusOr<std::string> chain = ReadSmallFile("tls_cert_file", files_.cert_file);
  absl::StatusOr<std::string> key = ReadSmallFile("tls_key_file", files_.key_file);
  absl::StatusOr<std::string> ca = std::string();
  if (!files_.client_ca_file.empty())
    ca = ReadSmallFile("tls_client_ca_file", files_.client_ca_file);
  absl::Status status = !chain.ok() ? chain.status() : !key.ok() ? key.status() : ca.status();
  // What the files hold now (raw, valid or not), or why they cannot be read.
  const std::string seen =
      status.ok() ? Fingerprint(*key, *chain, *ca) : UnreadableFingerprint(status);
  absl::MutexLock lock(&mu_);
  if (tracker_.InForce(seen)) return reload;
  absl::StatusOr<TlsMaterial> material = absl::UnknownError("not read");
  if (status.ok()) {
    material = Check(*std::move(key), *std::move(chain), *std::move(ca), files_);
    status = material.status();
  }
  if (material.ok() && ca_fd_ >= 0) status = Stage(ca_fd_, material->client_ca_pem);
  if (material.ok() && status.ok()) status = Stage(identity_fd_, IdentityFile(*material));
  if (material.ok() && status.ok()) {
    tracker_.Applied(seen);
    description_ = material->description;
    expired_ = material->expired;
    reload.changed = true;
    reload.description = material->description;
    reload.expired = material->expired;
  } else if (tracker_.ShouldReport(seen)) {
    reload.changed = true;
    reload.status = status;
  }
  return reload;
}

}  // namespace gpuflow::server

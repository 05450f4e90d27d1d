// libFuzzer target: the UploadArray stream's state machine
// (server/upload_stream.h) on the CPU backend with a real SessionRegistry.
//
// Input framing (make_seeds.cc writes seeds in it):
//   byte 0: flags; bit 0 puts the live session's id into every header (else
//           the fuzzed id is used as is), bit 1 ends with Abort() instead of
//           Finish(), bit 2 destroys the stream without either;
//   then messages, each a 4-byte little-endian length and that many bytes
//   (the last one takes what is left when the length runs past the end).
// Each message goes through ParseUploadMessage and OnMessage, stopping at
// the first error as the server does. After every input the session must be
// back to nothing: no array (a published one is deleted first) and 0 bytes
// used; anything else is a leak and aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/cpu/cpu_backend.h"
#include "google/protobuf/stubs/logging.h"
#include "gpuflow/v1/service.pb.h"
#include "server/session_registry.h"
#include "server/upload_stream.h"

namespace {

constexpr uint8_t kValidSession = 1;
constexpr uint8_t kAbort = 2;
constexpr uint8_t kDrop = 4;

// Small, so that the quota and the limits are reached quickly.
constexpr int64_t kQuotaBytes = int64_t{1} << 20;
constexpr gpuflow::server::UploadLimits kLimits = {.max_array_bytes = int64_t{1} << 20,
                                                   .max_chunk_bytes = int64_t{64} << 10};

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "upload_stream_fuzzer: %s\n", what.c_str());
  std::abort();
}

struct Env {
  Env() : backend(gpuflow::CreateCpuBackend()), registry(*backend, {}) {
    absl::StatusOr<std::shared_ptr<gpuflow::server::Session>> s = registry.Create(
        {.label = "fuzz", .memory_limit_bytes = kQuotaBytes, .idle_ttl = absl::Hours(24)});
    if (!s.ok()) Fail(std::string(s.status().ToString()));
    session = *std::move(s);
  }
  std::unique_ptr<gpuflow::Backend> backend;
  gpuflow::server::SessionRegistry registry;
  std::shared_ptr<gpuflow::server::Session> session;
};

}  // namespace

// Undecodable messages make protobuf log an error each; they are expected here.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Env* const env = new Env();
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  absl::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);

  bool failed = false;
  {
    gpuflow::server::UploadStream stream(env->registry, kLimits);
    while (!rest.empty() && !failed) {
      uint32_t n = 0;
      for (size_t i = 0; i < 4 && i < rest.size(); ++i) {
        n |= static_cast<uint32_t>(static_cast<uint8_t>(rest[i])) << (8 * i);
      }
      rest.remove_prefix(rest.size() < 4 ? rest.size() : 4);
      const absl::string_view message = rest.substr(0, n);
      rest.remove_prefix(message.size());

      gpuflow::v1::UploadArrayRequest request;
      if (!gpuflow::server::ParseUploadMessage(message, &request).ok()) {
        failed = true;
        break;
      }
      if ((flags & kValidSession) != 0 && request.has_header()) {
        request.mutable_header()->set_session_id(env->session->id());
      }
      failed = !stream.OnMessage(request).ok();
    }

    if ((flags & kDrop) != 0) {
      // The stream's destructor must clean up (a cancelled RPC).
    } else if (failed || (flags & kAbort) != 0) {
      stream.Abort();
    } else {
      gpuflow::v1::ArrayInfo info;
      if (stream.Finish(&info).ok()) {
        absl::StatusOr<gpuflow::Array> array = env->session->GetArray(info.name());
        if (!array.ok()) Fail("Finish succeeded but the array is not in the session");
        if (array->num_bytes() != info.num_bytes()) Fail("published size differs from info");
        if (!env->session->DeleteArray(info.name()).ok()) Fail("cannot delete the array");
      }
    }
  }

  if (env->session->num_arrays() != 0) {
    Fail("an array was left in the session");
  }
  if (const int64_t used = env->session->memory_used_bytes(); used != 0) {
    Fail("the session still holds " + std::to_string(used) + " bytes");
  }
  return 0;
}

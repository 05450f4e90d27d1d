// SharedMemoryRegion (issue 16): only "gpuflow..." names are opened, one
// session holds a key at a time, every range is checked, and copies go
// through pread/pwrite on the CPU backend, so an object its owner shrinks
// fails the copy instead of the process.
#include "server/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cpu/cpu_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

// A shared-memory object of `bytes` bytes, unlinked at the end.
class Object {
 public:
  explicit Object(int64_t bytes) : key_(absl::StrCat("gpuflow_unit_", getpid(), "_", counter_++)) {
    const int fd = shm_open(absl::StrCat("/", key_).c_str(), O_CREAT | O_RDWR | O_EXCL, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, bytes), 0);
    fd_ = fd;
  }
  ~Object() {
    close(fd_);
    shm_unlink(absl::StrCat("/", key_).c_str());
  }
  const std::string& key() const { return key_; }
  void Write(int64_t offset, const std::string& bytes) const {
    EXPECT_EQ(pwrite(fd_, bytes.data(), bytes.size(), offset), static_cast<ssize_t>(bytes.size()));
  }
  std::string Read(int64_t offset, int64_t n) const {
    std::string out(n, '\0');
    EXPECT_EQ(pread(fd_, out.data(), n, offset), n);
    return out;
  }
  void Truncate(int64_t bytes) const { EXPECT_EQ(ftruncate(fd_, bytes), 0); }

 private:
  static inline int counter_ = 0;
  std::string key_;
  int fd_ = -1;
};

class SharedMemoryTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = CreateCpuBackend();
  std::unique_ptr<Stream> stream_ = *backend_->CreateStream();
};

TEST_F(SharedMemoryTest, OnlyGpuflowNamesAreOpened) {
  EXPECT_THAT(CheckSharedMemoryKey("gpuflow_ab.c-9"), IsOk());
  for (const char* key : {"", "gpuflow", "../gpuflow_x", "/gpuflow_x", "gpuflow/x", "shm_x",
                          "gpuflow x", "gpuflow_\n"}) {
    EXPECT_THAT(CheckSharedMemoryKey(key), StatusIs(absl::StatusCode::kInvalidArgument)) << key;
  }
  EXPECT_THAT(CheckSharedMemoryKey(std::string("gpuflow") + std::string(201, 'a')),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(SharedMemoryRegion::Open("gpuflow_no_such_object_here", 16, "s", *backend_),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("same host")));
}

TEST_F(SharedMemoryTest, CopiesBothWaysAndChecksEveryRange) {
  Object object(4096);
  object.Write(100, "hello world");
  absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> region =
      SharedMemoryRegion::Open(object.key(), 4096, "s", *backend_);
  ASSERT_THAT(region, IsOk());
  EXPECT_FALSE((*region)->direct());  // the CPU backend stages
  std::unique_ptr<DeviceBuffer> buffer = *backend_->Allocate(11, *stream_);
  ASSERT_THAT((*region)->CopyToDevice(*backend_, 100, 11, *buffer, *stream_), IsOk());
  ASSERT_THAT((*region)->CopyFromDevice(*backend_, *buffer, 11, 2000, *stream_), IsOk());
  EXPECT_EQ(object.Read(2000, 11), "hello world");

  EXPECT_THAT((*region)->CheckRange(0, 4096), IsOk());
  EXPECT_THAT((*region)->CheckRange(4096, 0), IsOk());
  for (auto [offset, n] : std::vector<std::pair<int64_t, int64_t>>{
           {4090, 11}, {-1, 1}, {0, 4097}, {4097, 0}, {1, -1}, {INT64_MAX, 1}, {1, INT64_MAX}}) {
    EXPECT_THAT((*region)->CheckRange(offset, n), StatusIs(absl::StatusCode::kInvalidArgument))
        << offset << " " << n;
  }
  EXPECT_THAT((*region)->CopyToDevice(*backend_, 4090, 11, *buffer, *stream_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("outside the region")));
  EXPECT_THAT(SharedMemoryRegion::Open(object.key(), 4097, "s", *backend_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fewer than byte_size")));
}

TEST_F(SharedMemoryTest, OneSessionHoldsAKeyAtATime) {
  Object object(64);
  absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> mine =
      SharedMemoryRegion::Open(object.key(), 64, "session-a", *backend_);
  ASSERT_THAT(mine, IsOk());
  EXPECT_THAT(SharedMemoryRegion::Open(object.key(), 64, "session-b", *backend_),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("another session")));
  // The same session may register it twice; the key is free once both go.
  absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> again =
      SharedMemoryRegion::Open(object.key(), 32, "session-a", *backend_);
  ASSERT_THAT(again, IsOk());
  mine->reset();
  EXPECT_THAT(SharedMemoryRegion::Open(object.key(), 64, "session-b", *backend_).status(),
              StatusIs(absl::StatusCode::kPermissionDenied));
  again->reset();
  EXPECT_THAT(SharedMemoryRegion::Open(object.key(), 64, "session-b", *backend_), IsOk());
}

TEST_F(SharedMemoryTest, AShrunkObjectFailsTheCopy) {
  Object object(1 << 16);
  absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> region =
      SharedMemoryRegion::Open(object.key(), 1 << 16, "s", *backend_);
  ASSERT_THAT(region, IsOk());
  object.Truncate(10);
  std::unique_ptr<DeviceBuffer> buffer = *backend_->Allocate(1 << 16, *stream_);
  EXPECT_THAT((*region)->CopyToDevice(*backend_, 0, 1 << 16, *buffer, *stream_),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("shorter than")));
  // Even bytes the object still has: a direct copy would read pages the
  // truncation orphaned.
  EXPECT_THAT((*region)->CopyToDevice(*backend_, 0, 4, *buffer, *stream_),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("10 of 65536 bytes")));
  EXPECT_THAT((*region)->CopyFromDevice(*backend_, *buffer, 4, 0, *stream_),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("register it again")));
  // Grown back, the region works again (registering anew is what the
  // documentation asks, for the direct path).
  object.Truncate(1 << 16);
  EXPECT_THAT((*region)->CopyFromDevice(*backend_, *buffer, 100, 0, *stream_), IsOk());
}

TEST_F(SharedMemoryTest, CudaIpcHandlesAreCheckedAndNeedADevice) {
  const std::string handle(kCudaIpcHandleBytes, '\x07');
  EXPECT_THAT(SharedMemoryRegion::OpenCudaIpc("short", 16, "a", *backend_).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("64 bytes")));
  EXPECT_THAT(SharedMemoryRegion::OpenCudaIpc(handle, 0, "a", *backend_).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte_size")));
  // The CPU backend has no device memory; the failed open gives its claim
  // back, so another session is told the same, not PERMISSION_DENIED.
  EXPECT_THAT(SharedMemoryRegion::OpenCudaIpc(handle, 16, "a", *backend_).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no device memory")));
  EXPECT_THAT(SharedMemoryRegion::OpenCudaIpc(handle, 16, "b", *backend_).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no device memory")));
}

}  // namespace
}  // namespace gpuflow::server

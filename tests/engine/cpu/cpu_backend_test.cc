#include "engine/cpu/cpu_backend.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<unsigned char> RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> bytes(n);
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(rng());
  return bytes;
}

class CpuBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = CreateCpuBackend();
    ASSERT_NE(backend_, nullptr);
    ASSERT_OK_AND_ASSIGN(stream_, backend_->CreateStream());
  }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Stream> stream_;
};

TEST_F(CpuBackendTest, DescribesItself) {
  EXPECT_EQ(backend_->name(), "cpu");
  EXPECT_THAT(backend_->device_description(), HasSubstr("CPU"));
  EXPECT_TRUE(backend_->healthy());
}

TEST_F(CpuBackendTest, AllocatesZeroBytes) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DeviceBuffer> buffer, backend_->Allocate(0, *stream_));
  EXPECT_EQ(buffer->size(), 0);
  // Zero-byte copies in and out of an empty buffer are no-ops, not errors.
  EXPECT_THAT(backend_->CopyToDevice(nullptr, *buffer, 0, 0, *stream_), IsOk());
  EXPECT_THAT(backend_->CopyToHost(*buffer, 0, 0, nullptr, *stream_), IsOk());
  EXPECT_THAT(backend_->Synchronize(*stream_), IsOk());
}

TEST_F(CpuBackendTest, RoundTripsOddSizesBitExact) {
  for (int64_t size : {int64_t{1}, int64_t{7}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{1023},
                       (int64_t{1} << 20) + 3}) {
    SCOPED_TRACE(size);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<DeviceBuffer> buffer, backend_->Allocate(size, *stream_));
    ASSERT_EQ(buffer->size(), size);
    const std::vector<unsigned char> in = RandomBytes(size, /*seed=*/size);
    ASSERT_THAT(backend_->CopyToDevice(in.data(), *buffer, 0, size, *stream_), IsOk());
    std::vector<unsigned char> out(size);
    ASSERT_THAT(backend_->CopyToHost(*buffer, 0, size, out.data(), *stream_), IsOk());
    ASSERT_THAT(backend_->Synchronize(*stream_), IsOk());
    EXPECT_EQ(in, out);
  }
}

TEST_F(CpuBackendTest, CopiesAtOffsets) {
  constexpr int64_t kSize = 1023;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DeviceBuffer> buffer, backend_->Allocate(kSize, *stream_));
  const std::vector<unsigned char> in = RandomBytes(kSize, /*seed=*/42);
  // Fill the buffer in three uneven pieces, the way chunked uploads do.
  ASSERT_THAT(backend_->CopyToDevice(in.data(), *buffer, 0, 100, *stream_), IsOk());
  ASSERT_THAT(backend_->CopyToDevice(in.data() + 100, *buffer, 100, 900, *stream_), IsOk());
  ASSERT_THAT(backend_->CopyToDevice(in.data() + 1000, *buffer, 1000, 23, *stream_), IsOk());
  std::vector<unsigned char> middle(17);
  ASSERT_THAT(backend_->CopyToHost(*buffer, 500, 17, middle.data(), *stream_), IsOk());
  std::vector<unsigned char> tail(1);
  ASSERT_THAT(backend_->CopyToHost(*buffer, kSize - 1, 1, tail.data(), *stream_), IsOk());
  ASSERT_THAT(backend_->Synchronize(*stream_), IsOk());
  EXPECT_THAT(middle, ElementsAreArray(in.begin() + 500, in.begin() + 517));
  EXPECT_EQ(tail[0], in[kSize - 1]);
}

TEST_F(CpuBackendTest, OutOfRangeCopiesFailAndLeaveTheBufferAlone) {
  constexpr int64_t kSize = 16;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DeviceBuffer> buffer, backend_->Allocate(kSize, *stream_));
  const std::vector<unsigned char> zeros(kSize, 0);
  ASSERT_THAT(backend_->CopyToDevice(zeros.data(), *buffer, 0, kSize, *stream_), IsOk());

  const std::vector<unsigned char> src(64, 0xAB);
  std::vector<unsigned char> dst(64, 0);
  EXPECT_THAT(backend_->CopyToDevice(src.data(), *buffer, 0, kSize + 1, *stream_),
              StatusIs(absl::StatusCode::kOutOfRange,
                       HasSubstr("copy of 17 bytes at offset 0 outside a buffer of 16 bytes")));
  EXPECT_THAT(backend_->CopyToDevice(src.data(), *buffer, 10, 7, *stream_),
              StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(backend_->CopyToDevice(src.data(), *buffer, -1, 1, *stream_),
              StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(backend_->CopyToHost(*buffer, 17, 0, dst.data(), *stream_),
              StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(backend_->CopyToHost(*buffer, 8, 9, dst.data(), *stream_),
              StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(backend_->CopyToHost(*buffer, 0, -1, dst.data(), *stream_),
              StatusIs(absl::StatusCode::kOutOfRange));

  std::vector<unsigned char> out(kSize, 1);
  ASSERT_THAT(backend_->CopyToHost(*buffer, 0, kSize, out.data(), *stream_), IsOk());
  ASSERT_THAT(backend_->Synchronize(*stream_), IsOk());
  EXPECT_EQ(out, zeros);
  EXPECT_THAT(dst, ::testing::Each(0));
}

TEST_F(CpuBackendTest, NegativeAllocationIsInvalid) {
  EXPECT_THAT(backend_->Allocate(-1, *stream_), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(CpuBackendTest, ImpossibleAllocationIsResourceExhaustedNotACrash) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer aborts on impossible allocations by default";
#endif
  EXPECT_THAT(backend_->Allocate(kMaxElements, *stream_),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("4611686018427387904")));
}

// Regression test: rounding a size near INT64_MAX up to the alignment
// overflowed int64 (undefined behaviour, caught by UBSan).
TEST_F(CpuBackendTest, AllocationNearInt64MaxIsResourceExhausted) {
  for (int64_t bytes : {std::numeric_limits<int64_t>::max(),
                        std::numeric_limits<int64_t>::max() - 62, kMaxElements + 1}) {
    EXPECT_THAT(backend_->Allocate(bytes, *stream_),
                StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr(absl::StrCat(bytes))))
        << bytes;
  }
}

TEST(CpuBufferTest, IsSixtyFourByteAligned) {
  for (int64_t size : {1, 7, 64, 100, 1023}) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<CpuBuffer> buffer, CpuBuffer::Create(size));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % 64, 0u) << size;
    EXPECT_EQ(buffer->size(), size);
  }
}

TEST(CheckCopyRangeTest, AcceptsRangesInsideTheBuffer) {
  EXPECT_THAT(CheckCopyRange(16, 0, 16), IsOk());
  EXPECT_THAT(CheckCopyRange(16, 16, 0), IsOk());
  EXPECT_THAT(CheckCopyRange(16, 5, 11), IsOk());
  EXPECT_THAT(CheckCopyRange(0, 0, 0), IsOk());
}

TEST(CheckCopyRangeTest, RejectsRangesThatWouldOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_THAT(CheckCopyRange(16, kMax, 1), StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(CheckCopyRange(16, 1, kMax), StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(CheckCopyRange(kMax, kMax, 1), StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(CheckCopyRange(kMax, 1, kMax), StatusIs(absl::StatusCode::kOutOfRange));
}

}  // namespace
}  // namespace gpuflow

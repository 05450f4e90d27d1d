#include "server/upload_stream.h"

#include <memory>
#include <string>

#include "engine/cpu/cpu_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

class UploadStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<Session>> session =
        registry_.Create({.label = "up", .memory_limit_bytes = 4096});
    ASSERT_THAT(session, IsOk());
    session_ = *std::move(session);
  }

  v1::UploadArrayRequest Header(const std::string& name, int64_t bytes) const {
    v1::UploadArrayRequest request;
    v1::UploadHeader* header = request.mutable_header();
    header->set_session_id(session_->id());
    header->set_name(name);
    header->set_dtype(v1::DTYPE_UINT8);
    header->add_shape(bytes);
    return request;
  }
  static v1::UploadArrayRequest Chunk(const std::string& bytes) {
    v1::UploadArrayRequest request;
    request.set_chunk(bytes);
    return request;
  }
  UploadStream NewStream() {
    return UploadStream(registry_, {.max_array_bytes = 2048, .max_chunk_bytes = 64});
  }
  // Nothing of a failed upload is left.
  void ExpectNothingLeft() const {
    EXPECT_EQ(session_->num_arrays(), 0);
    EXPECT_EQ(session_->memory_used_bytes(), 0);
    EXPECT_EQ(session_->metadata_bytes(), 0);
  }

  std::unique_ptr<Backend> backend_ = CreateCpuBackend();
  SessionRegistry registry_{*backend_, {}};
  std::shared_ptr<Session> session_;
};

TEST_F(UploadStreamTest, PublishesExactlyTheAnnouncedBytes) {
  UploadStream upload = NewStream();
  ASSERT_THAT(upload.OnMessage(Header("x", 5)), IsOk());
  // The reservation covers the data and the array's metadata from the start.
  EXPECT_EQ(session_->memory_used_bytes(), 5 + MetadataBytes("x", *Shape::Create({5})));
  ASSERT_THAT(upload.OnMessage(Chunk("ab")), IsOk());
  ASSERT_THAT(upload.OnMessage(Chunk("cde")), IsOk());
  v1::ArrayInfo info;
  ASSERT_THAT(upload.Finish(&info), IsOk());
  EXPECT_EQ(info.num_bytes(), 5);
  EXPECT_EQ(session_->num_arrays(), 1);
  EXPECT_EQ(session_->memory_used_bytes(), 5);
}

TEST_F(UploadStreamTest, OutOfOrderAndEmptyMessagesFailTheUpload) {
  {
    UploadStream upload = NewStream();
    EXPECT_THAT(upload.OnMessage(Chunk("a")),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a header")));
  }
  {
    UploadStream upload = NewStream();
    ASSERT_THAT(upload.OnMessage(Header("x", 2)), IsOk());
    EXPECT_THAT(upload.OnMessage(Header("x", 2)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("only the first")));
    // Aborted: nothing held, and nothing more accepted.
    ExpectNothingLeft();
    EXPECT_THAT(upload.OnMessage(Chunk("ab")), StatusIs(absl::StatusCode::kFailedPrecondition));
    v1::ArrayInfo info;
    EXPECT_THAT(upload.Finish(&info), StatusIs(absl::StatusCode::kFailedPrecondition));
  }
  {
    UploadStream upload = NewStream();
    ASSERT_THAT(upload.OnMessage(Header("x", 2)), IsOk());
    EXPECT_THAT(upload.OnMessage(v1::UploadArrayRequest()),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a chunk")));
  }
  ExpectNothingLeft();
}

TEST_F(UploadStreamTest, ShortLongAndOversizedUploadsLeaveNothing) {
  {
    UploadStream upload = NewStream();
    ASSERT_THAT(upload.OnMessage(Header("x", 3)), IsOk());
    ASSERT_THAT(upload.OnMessage(Chunk("ab")), IsOk());
    v1::ArrayInfo info;
    EXPECT_THAT(upload.Finish(&info),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ended after 2")));
  }
  {
    UploadStream upload = NewStream();
    ASSERT_THAT(upload.OnMessage(Header("x", 3)), IsOk());
    EXPECT_THAT(upload.OnMessage(Chunk("abcd")),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than the 3")));
  }
  {
    UploadStream upload = NewStream();
    ASSERT_THAT(upload.OnMessage(Header("x", 100)), IsOk());
    EXPECT_THAT(upload.OnMessage(Chunk(std::string(65, 'a'))),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exceeds the limit")));
  }
  {
    UploadStream upload = NewStream();
    EXPECT_THAT(upload.OnMessage(Header("x", 2049)),
                StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("--max_array_bytes")));
  }
  {
    UploadStream upload = NewStream();
    ASSERT_THAT(upload.OnMessage(Header("x", 10)), IsOk());
  }  // destroyed mid-stream
  ExpectNothingLeft();
}

// Regression: an undecodable message after the data was taken as a clean
// end of stream and the array was published.
TEST_F(UploadStreamTest, UndecodableBytesAreInvalidArgument) {
  v1::UploadArrayRequest request;
  EXPECT_THAT(ParseUploadMessage("\xff\xff\xff", &request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a valid")));
  const std::string good = Chunk("abc").SerializeAsString();
  ASSERT_THAT(ParseUploadMessage(good, &request), IsOk());
  EXPECT_EQ(request.chunk(), "abc");
}

TEST_F(UploadStreamTest, ClosedSessionOrBadHeaderIsRefused) {
  {
    UploadStream upload = NewStream();
    v1::UploadArrayRequest header = Header("x", 2);
    header.mutable_header()->set_session_id(std::string(1 << 20, 'f'));
    absl::Status status = upload.OnMessage(header);
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kNotFound));
    EXPECT_LE(status.message().size(), 512u);
  }
  {
    UploadStream upload = NewStream();
    EXPECT_THAT(upload.OnMessage(Header("../etc", 2)),
                StatusIs(absl::StatusCode::kInvalidArgument));
  }
  ExpectNothingLeft();
}

}  // namespace
}  // namespace gpuflow::server

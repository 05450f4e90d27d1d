// Scenario tests against the real gpuflowd: the binary is started as a child
// process on a free port and driven through the generated v1 stub, exactly as
// a client would.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/wrappers.pb.h"
#include "gpuflow/v1/service.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

#ifndef GPUFLOW_SERVER_BIN
#error "GPUFLOW_SERVER_BIN must name the gpuflowd binary"
#endif

namespace gpuflow {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr int64_t kKiB = int64_t{1} << 10;
constexpr int64_t kMiB = int64_t{1} << 20;

using ::gpuflow::testing::ServerProcess;

// ---------------------------------------------------------------- helpers

MATCHER(GrpcOk, "is an OK grpc::Status") {
  *result_listener << "whose code is " << arg.error_code() << " and message is '"
                   << arg.error_message() << "'";
  return arg.ok();
}

MATCHER_P2(GrpcStatusIs, code, message_matcher,
           absl::StrCat("is a grpc::Status with code ", code)) {
  *result_listener << "whose code is " << arg.error_code() << " and message is '"
                   << arg.error_message() << "'";
  return arg.error_code() == code && ::testing::Matches(message_matcher)(arg.error_message());
}

struct DTypeCase {
  v1::DType dtype;
  int64_t itemsize;
};

// Written out here, not taken from the engine, so the server is checked
// against the contract rather than against itself.
constexpr DTypeCase kDTypes[] = {
    {v1::DTYPE_BOOL, 1},    {v1::DTYPE_INT8, 1},      {v1::DTYPE_INT16, 2},
    {v1::DTYPE_INT32, 4},   {v1::DTYPE_INT64, 8},     {v1::DTYPE_UINT8, 1},
    {v1::DTYPE_UINT16, 2},  {v1::DTYPE_UINT32, 4},    {v1::DTYPE_UINT64, 8},
    {v1::DTYPE_FLOAT16, 2}, {v1::DTYPE_BFLOAT16, 2},  {v1::DTYPE_FLOAT32, 4},
    {v1::DTYPE_FLOAT64, 8}, {v1::DTYPE_COMPLEX64, 8}, {v1::DTYPE_COMPLEX128, 16},
};

std::string RandomBytes(int64_t n, uint64_t seed, bool booleans = false) {
  std::mt19937_64 rng(seed);
  std::string bytes(n, '\0');
  for (char& b : bytes) b = static_cast<char>(booleans ? rng() & 1 : rng());
  return bytes;
}

v1::UploadHeader Header(const std::string& session_id, const std::string& name, v1::DType dtype,
                        std::vector<int64_t> shape) {
  v1::UploadHeader header;
  header.set_session_id(session_id);
  header.set_name(name);
  header.set_dtype(dtype);
  header.mutable_shape()->Assign(shape.begin(), shape.end());
  return header;
}

struct DownloadResult {
  grpc::Status status;
  int headers = 0;
  bool header_first = false;
  v1::ArrayInfo header;
  std::string data;
  std::vector<int64_t> chunk_sizes;
};

// Server arguments of the suite's shared server: small limits so that quota
// and size errors are cheap to reach.
const std::vector<std::string> kSharedServerArgs = {
    "--default_session_memory_limit=64MiB",
    "--max_session_memory_limit=128MiB",
    "--max_array_bytes=32MiB",
    "--session_reap_interval=100ms",
    "--shutdown_grace=1s",
};

// A client of one gpuflowd.
class Client {
 public:
  explicit Client(const std::string& address)
      : channel_(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                           ChannelArguments())),
        stub_(v1::GpuFlow::NewStub(channel_)) {}

  // Like the Python client, accept messages up to 64 MiB: gRPC's default
  // limit (4 MiB) is smaller than a download chunk of --max_chunk_bytes
  // (4 MiB by default) plus its framing.
  static grpc::ChannelArguments ChannelArguments() {
    grpc::ChannelArguments arguments;
    arguments.SetMaxReceiveMessageSize(64 * kMiB);
    arguments.SetMaxSendMessageSize(64 * kMiB);
    return arguments;
  }

  ~Client() {
    // Close what the test left open, so a shared server does not fill up.
    for (const std::string& id : sessions_) {
      grpc::ClientContext context;
      v1::CloseSessionRequest request;
      request.set_session_id(id);
      v1::CloseSessionResponse response;
      stub_->CloseSession(&context, request, &response).IgnoreError();
    }
  }

  bool WaitForConnected() {
    return channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  }
  v1::GpuFlow::Stub& stub() { return *stub_; }
  const std::shared_ptr<grpc::Channel>& channel() { return channel_; }

  grpc::Status CreateSession(const v1::CreateSessionRequest& request, v1::SessionInfo* info) {
    grpc::ClientContext context;
    grpc::Status status = stub_->CreateSession(&context, request, info);
    if (status.ok()) sessions_.push_back(info->session_id());
    return status;
  }

  // A new session's id; "" (and a test failure) when it cannot be created.
  std::string NewSession(int64_t memory_limit_bytes = 0) {
    v1::CreateSessionRequest request;
    request.set_label("server_test");
    request.set_memory_limit_bytes(memory_limit_bytes);
    v1::SessionInfo info;
    grpc::Status status = CreateSession(request, &info);
    EXPECT_THAT(status, GrpcOk());
    return info.session_id();
  }

  // Sends the header, then `data` in chunks of `chunk_bytes`.
  grpc::Status Upload(const v1::UploadHeader& header, const std::string& data,
                      int64_t chunk_bytes = kMiB, v1::ArrayInfo* info = nullptr) {
    grpc::ClientContext context;
    v1::ArrayInfo unused;
    std::unique_ptr<grpc::ClientWriter<v1::UploadArrayRequest>> writer =
        stub_->UploadArray(&context, info != nullptr ? info : &unused);
    v1::UploadArrayRequest request;
    *request.mutable_header() = header;
    bool ok = writer->Write(request);
    for (size_t offset = 0; ok && offset < data.size(); offset += chunk_bytes) {
      request.set_chunk(data.substr(offset, chunk_bytes));
      ok = writer->Write(request);
    }
    writer->WritesDone();
    return writer->Finish();
  }

  DownloadResult Download(const std::string& session_id, const std::string& name,
                          int64_t chunk_bytes = 0) {
    grpc::ClientContext context;
    v1::DownloadArrayRequest request;
    request.set_session_id(session_id);
    request.set_name(name);
    request.set_chunk_bytes(chunk_bytes);
    std::unique_ptr<grpc::ClientReader<v1::DownloadArrayResponse>> reader =
        stub_->DownloadArray(&context, request);
    DownloadResult result;
    v1::DownloadArrayResponse response;
    bool first = true;
    while (reader->Read(&response)) {
      if (response.has_header()) {
        result.header_first = first;
        ++result.headers;
        result.header = response.header();
      } else {
        result.chunk_sizes.push_back(static_cast<int64_t>(response.chunk().size()));
        result.data += response.chunk();
      }
      first = false;
    }
    result.status = reader->Finish();
    return result;
  }

  grpc::Status ListArrays(const std::string& session_id, v1::ListArraysResponse* response) {
    grpc::ClientContext context;
    v1::ListArraysRequest request;
    request.set_session_id(session_id);
    return stub_->ListArrays(&context, request, response);
  }

  grpc::Status GetArrayInfo(const std::string& session_id, const std::string& name,
                            v1::ArrayInfo* info) {
    grpc::ClientContext context;
    v1::GetArrayInfoRequest request;
    request.set_session_id(session_id);
    request.set_name(name);
    return stub_->GetArrayInfo(&context, request, info);
  }

  grpc::Status DeleteArray(const std::string& session_id, const std::string& name,
                           v1::DeleteArrayResponse* response) {
    grpc::ClientContext context;
    v1::DeleteArrayRequest request;
    request.set_session_id(session_id);
    request.set_name(name);
    return stub_->DeleteArray(&context, request, response);
  }

  grpc::Status KeepAlive(const std::string& session_id, v1::SessionInfo* info) {
    grpc::ClientContext context;
    v1::KeepAliveRequest request;
    request.set_session_id(session_id);
    return stub_->KeepAlive(&context, request, info);
  }

  grpc::Status CloseSession(const std::string& session_id, v1::CloseSessionResponse* response) {
    grpc::ClientContext context;
    v1::CloseSessionRequest request;
    request.set_session_id(session_id);
    return stub_->CloseSession(&context, request, response);
  }

  grpc::Status GetServerInfo(v1::ServerInfo* info) {
    grpc::ClientContext context;
    return stub_->GetServerInfo(&context, v1::GetServerInfoRequest(), info);
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::GpuFlow::Stub> stub_;
  std::vector<std::string> sessions_;
};

// ---------------------------------------------------------------- the shared server

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<ServerProcess>> server =
        ServerProcess::Start(GPUFLOW_SERVER_BIN, kSharedServerArgs);
    start_status_ = server.status();
    if (server.ok()) server_ = *std::move(server);
  }

  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    ASSERT_THAT(start_status_, IsOk()) << "gpuflowd did not start";
    client_ = std::make_unique<Client>(server_->address());
    ASSERT_TRUE(client_->WaitForConnected()) << "cannot connect to " << server_->address();
  }

  void TearDown() override { client_.reset(); }

  // Memory in use and array names of a session; fails the test on error.
  void ExpectEmpty(const std::string& session_id) {
    v1::ListArraysResponse list;
    ASSERT_THAT(client_->ListArrays(session_id, &list), GrpcOk());
    EXPECT_THAT(list.arrays(), IsEmpty());
    EXPECT_EQ(list.memory_used_bytes(), 0);
  }

  static inline absl::Status start_status_;
  static inline std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ServerTest, ServerInfoReportsBackendAndLimitsFromFlags) {
  v1::ServerInfo info;
  ASSERT_THAT(client_->GetServerInfo(&info), GrpcOk());
  EXPECT_FALSE(info.version().empty());
  EXPECT_EQ(info.backend(), "cpu");
  EXPECT_TRUE(info.healthy());
  EXPECT_EQ(info.limits().default_session_memory_limit_bytes(), 64 * kMiB);
  EXPECT_EQ(info.limits().max_session_memory_limit_bytes(), 128 * kMiB);
  EXPECT_EQ(info.limits().max_array_bytes(), 32 * kMiB);
  EXPECT_EQ(info.limits().max_chunk_bytes(), 4 * kMiB);
  EXPECT_EQ(info.limits().max_sessions(), 64);
  EXPECT_EQ(info.limits().default_session_idle_ttl().seconds(), 600);
  EXPECT_THAT(info.dtypes(), SizeIs(static_cast<int>(std::size(kDTypes))));
}

TEST_F(ServerTest, CreateSessionDescribesTheSession) {
  v1::CreateSessionRequest request;
  request.set_label("my job");
  request.set_memory_limit_bytes(10 * kMiB);
  request.mutable_idle_ttl()->set_seconds(42);
  v1::SessionInfo info;
  ASSERT_THAT(client_->CreateSession(request, &info), GrpcOk());
  ASSERT_THAT(info.session_id(), SizeIs(32));
  for (char c : info.session_id()) {
    EXPECT_TRUE(absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f')) << info.session_id();
  }
  EXPECT_EQ(info.label(), "my job");
  EXPECT_EQ(info.memory_limit_bytes(), 10 * kMiB);
  EXPECT_EQ(info.memory_used_bytes(), 0);
  EXPECT_EQ(info.num_arrays(), 0);
  EXPECT_EQ(info.idle_ttl().seconds(), 42);

  const std::string defaults = client_->NewSession();
  v1::SessionInfo default_info;
  ASSERT_THAT(client_->KeepAlive(defaults, &default_info), GrpcOk());
  EXPECT_EQ(default_info.memory_limit_bytes(), 64 * kMiB);
  EXPECT_EQ(default_info.idle_ttl().seconds(), 600);
  EXPECT_NE(defaults, info.session_id());
}

TEST_F(ServerTest, CreateSessionRejectsLimitsOverTheMaxima) {
  v1::SessionInfo info;
  v1::CreateSessionRequest too_much_memory;
  too_much_memory.set_memory_limit_bytes(128 * kMiB + 1);
  EXPECT_THAT(client_->CreateSession(too_much_memory, &info),
              GrpcStatusIs(grpc::StatusCode::INVALID_ARGUMENT, HasSubstr("memory limit")));
  v1::CreateSessionRequest too_long;
  too_long.mutable_idle_ttl()->set_seconds(25 * 3600);
  EXPECT_THAT(client_->CreateSession(too_long, &info),
              GrpcStatusIs(grpc::StatusCode::INVALID_ARGUMENT, HasSubstr("TTL")));
  v1::CreateSessionRequest long_label;
  long_label.set_label(std::string(129, 'x'));
  EXPECT_THAT(client_->CreateSession(long_label, &info),
              GrpcStatusIs(grpc::StatusCode::INVALID_ARGUMENT, HasSubstr("label")));
}

TEST_F(ServerTest, EveryDTypeRoundTripsBitExactIncludingZeroDAndEmpty) {
  const std::string session = client_->NewSession();
  const std::vector<std::vector<int64_t>> shapes = {{},  {0},       {3, 0, 2}, {1},
                                                    {7}, {2, 3, 5}, {1023}};
  int case_number = 0;
  for (const DTypeCase& dtype : kDTypes) {
    for (const std::vector<int64_t>& shape : shapes) {
      SCOPED_TRACE(
          absl::StrCat(v1::DType_Name(dtype.dtype), " (", absl::StrJoin(shape, ", "), ")"));
      int64_t elements = 1;
      for (int64_t d : shape) elements *= d;
      const std::string name = absl::StrCat("a", case_number);
      const std::string data = RandomBytes(elements * dtype.itemsize, /*seed=*/case_number++,
                                           /*booleans=*/dtype.dtype == v1::DTYPE_BOOL);
      v1::ArrayInfo uploaded;
      // 1000-byte chunks: the larger arrays arrive in several.
      ASSERT_THAT(client_->Upload(Header(session, name, dtype.dtype, shape), data, 1000, &uploaded),
                  GrpcOk());
      EXPECT_EQ(uploaded.name(), name);
      EXPECT_EQ(uploaded.num_bytes(), static_cast<int64_t>(data.size()));

      DownloadResult result = client_->Download(session, name);
      ASSERT_THAT(result.status, GrpcOk());
      EXPECT_EQ(result.headers, 1);
      EXPECT_TRUE(result.header_first);
      EXPECT_EQ(result.header.name(), name);
      EXPECT_EQ(result.header.dtype(), dtype.dtype);
      EXPECT_THAT(result.header.shape(), ::testing::ElementsAreArray(shape));
      EXPECT_EQ(result.header.num_elements(), elements);
      EXPECT_EQ(result.header.num_bytes(), elements * dtype.itemsize);
      EXPECT_TRUE(result.data == data) << "downloaded bytes differ from the uploaded ones";
      if (data.empty()) {
        EXPECT_THAT(result.chunk_sizes, IsEmpty());
      }
    }
  }
}

TEST_F(ServerTest, LargeArrayTravelsInSeveralChunks) {
  const std::string session = client_->NewSession();
  const int64_t size = 5 * kMiB + 3;
  const std::string data = RandomBytes(size, /*seed=*/7);
  ASSERT_THAT(client_->Upload(Header(session, "big", v1::DTYPE_UINT8, {size}), data, kMiB),
              GrpcOk());

  DownloadResult one_mib = client_->Download(session, "big", kMiB);
  ASSERT_THAT(one_mib.status, GrpcOk());
  EXPECT_THAT(one_mib.chunk_sizes, ElementsAre(kMiB, kMiB, kMiB, kMiB, kMiB, 3));
  EXPECT_TRUE(one_mib.data == data);

  // No chunk size: the server's default, 1 MiB.
  DownloadResult by_default = client_->Download(session, "big", 0);
  ASSERT_THAT(by_default.status, GrpcOk());
  EXPECT_THAT(by_default.chunk_sizes, SizeIs(6));
  EXPECT_TRUE(by_default.data == data);

  // Larger than --max_chunk_bytes (4 MiB): capped.
  DownloadResult capped = client_->Download(session, "big", 64 * kMiB);
  ASSERT_THAT(capped.status, GrpcOk());
  EXPECT_THAT(capped.chunk_sizes, ElementsAre(4 * kMiB, kMiB + 3));
  EXPECT_TRUE(capped.data == data);

  // Odd chunk size.
  DownloadResult odd = client_->Download(session, "big", 1'000'003);
  ASSERT_THAT(odd.status, GrpcOk());
  EXPECT_THAT(odd.chunk_sizes, SizeIs(6));
  EXPECT_TRUE(odd.data == data);

  EXPECT_THAT(client_->Download(session, "big", -1).status,
              GrpcStatusIs(grpc::StatusCode::INVALID_ARGUMENT, HasSubstr("chunk_bytes")));
}

TEST_F(ServerTest, ListGetAndDeleteArrays) {
  const std::string session = client_->NewSession();
  ASSERT_THAT(client_->Upload(Header(session, "b", v1::DTYPE_FLOAT32, {2, 3}), RandomBytes(24, 1)),
              GrpcOk());
  ASSERT_THAT(client_->Upload(Header(session, "a", v1::DTYPE_INT64, {}), RandomBytes(8, 2)),
              GrpcOk());
  ASSERT_THAT(client_->Upload(Header(session, "c", v1::DTYPE_UINT8, {0, 4}), ""), GrpcOk());

  v1::ListArraysResponse list;
  ASSERT_THAT(client_->ListArrays(session, &list), GrpcOk());
  std::vector<std::string> names;
  for (const v1::ArrayInfo& info : list.arrays()) names.push_back(info.name());
  EXPECT_THAT(names, ElementsAre("a", "b", "c"));
  EXPECT_EQ(list.memory_used_bytes(), 32);
  EXPECT_EQ(list.memory_limit_bytes(), 64 * kMiB);

  v1::ArrayInfo info;
  ASSERT_THAT(client_->GetArrayInfo(session, "b", &info), GrpcOk());
  EXPECT_EQ(info.name(), "b");
  EXPECT_EQ(info.dtype(), v1::DTYPE_FLOAT32);
  EXPECT_THAT(info.shape(), ElementsAre(2, 3));
  EXPECT_EQ(info.num_elements(), 6);
  EXPECT_EQ(info.num_bytes(), 24);

  v1::DeleteArrayResponse deleted;
  ASSERT_THAT(client_->DeleteArray(session, "b", &deleted), GrpcOk());
  EXPECT_EQ(deleted.freed_bytes(), 24);
  list.Clear();
  ASSERT_THAT(client_->ListArrays(session, &list), GrpcOk());
  ASSERT_THAT(list.arrays(), SizeIs(2));
  EXPECT_EQ(list.arrays(0).name(), "a");
  EXPECT_EQ(list.arrays(1).name(), "c");
  EXPECT_EQ(list.memory_used_bytes(), 8);

  EXPECT_THAT(client_->GetArrayInfo(session, "b", &info),
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, HasSubstr("'b'")));
  EXPECT_THAT(client_->DeleteArray(session, "b", &deleted),
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, HasSubstr("'b'")));
  EXPECT_THAT(client_->Download(session, "b").status,
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, HasSubstr("'b'")));
}

TEST_F(ServerTest, UnknownSessionIsNotFound) {
  const std::string unknown = "0123456789abcdef0123456789abcdef";
  v1::ListArraysResponse list;
  EXPECT_THAT(client_->ListArrays(unknown, &list),
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, HasSubstr(unknown)));
  v1::ArrayInfo info;
  EXPECT_THAT(client_->GetArrayInfo(unknown, "x", &info),
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, HasSubstr(unknown)));
  v1::DeleteArrayResponse deleted;
  EXPECT_THAT(client_->DeleteArray(unknown, "x", &deleted),
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, HasSubstr(unknown)));
  v1::SessionInfo session_info;
  EXPECT_THAT(client_->KeepAlive(unknown, &session_info),
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, HasSubstr(unknown)));
  v1::CloseSessionResponse closed;
  EXPECT_THAT(client_->CloseSession(unknown, &closed),
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, HasSubstr(unknown)));
  EXPECT_THAT(client_->Upload(Header(unknown, "x", v1::DTYPE_INT8, {1}), "a"),
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, HasSubstr(unknown)));
  EXPECT_THAT(client_->Download(unknown, "x").status,
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, HasSubstr(unknown)));
}

TEST_F(ServerTest, CloseSessionFreesItsArraysAndForgetsIt) {
  const std::string session = client_->NewSession();
  ASSERT_THAT(client_->Upload(Header(session, "x", v1::DTYPE_FLOAT64, {100}), RandomBytes(800, 3)),
              GrpcOk());
  v1::CloseSessionResponse closed;
  ASSERT_THAT(client_->CloseSession(session, &closed), GrpcOk());
  EXPECT_EQ(closed.freed_bytes(), 800);
  v1::ListArraysResponse list;
  EXPECT_THAT(client_->ListArrays(session, &list),
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, HasSubstr(session)));
  EXPECT_THAT(client_->CloseSession(session, &closed),
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, HasSubstr(session)));
}

TEST_F(ServerTest, ShortUploadIsRejectedAndLeavesNothing) {
  const std::string session = client_->NewSession();
  EXPECT_THAT(client_->Upload(Header(session, "x", v1::DTYPE_INT32, {4}), RandomBytes(15, 4)),
              GrpcStatusIs(grpc::StatusCode::INVALID_ARGUMENT,
                           HasSubstr("ended after 15 of the 16 bytes")));
  ExpectEmpty(session);
  // Nothing at all after the header.
  EXPECT_THAT(client_->Upload(Header(session, "x", v1::DTYPE_INT32, {4}), ""),
              GrpcStatusIs(grpc::StatusCode::INVALID_ARGUMENT, HasSubstr("0 of the 16 bytes")));
  ExpectEmpty(session);
}

TEST_F(ServerTest, LongUploadIsRejectedAndLeavesNothing) {
  const std::string session = client_->NewSession();
  // One chunk too large.
  EXPECT_THAT(
      client_->Upload(Header(session, "x", v1::DTYPE_INT32, {4}), RandomBytes(17, 5)),
      GrpcStatusIs(grpc::StatusCode::INVALID_ARGUMENT, HasSubstr("more than the 16 bytes")));
  ExpectEmpty(session);
  // The right bytes, then one more chunk.
  EXPECT_THAT(
      client_->Upload(Header(session, "x", v1::DTYPE_INT32, {4}), RandomBytes(17, 5), 16),
      GrpcStatusIs(grpc::StatusCode::INVALID_ARGUMENT, HasSubstr("more than the 16 bytes")));
  ExpectEmpty(session);
}

TEST_F(ServerTest, FailedUploadKeepsTheArrayItWouldHaveReplaced) {
  const std::string session = client_->NewSession();
  const std::string original = RandomBytes(64, 6);
  ASSERT_THAT(client_->Upload(Header(session, "x", v1::DTYPE_FLOAT32, {16}), original), GrpcOk());
  EXPECT_THAT(client_->Upload(Header(session, "x", v1::DTYPE_FLOAT32, {16}), RandomBytes(63, 7)),
              GrpcStatusIs(grpc::StatusCode::INVALID_ARGUMENT, _));
  DownloadResult result = client_->Download(session, "x");
  ASSERT_THAT(result.status, GrpcOk());
  EXPECT_TRUE(result.data == original);
  v1::ListArraysResponse list;
  ASSERT_THAT(client_->ListArrays(session, &list), GrpcOk());
  EXPECT_EQ(list.memory_used_bytes(), 64);
}

TEST_F(ServerTest, MalformedUploadsAreInvalidArgument) {
  const std::string session = client_->NewSession();
  struct Case {
    const char* what;
    std::vector<v1::UploadArrayRequest> messages;
    const char* message;
  };
  v1::UploadArrayRequest good_header;
  *good_header.mutable_header() = Header(session, "x", v1::DTYPE_INT8, {2});
  v1::UploadArrayRequest chunk;
  chunk.set_chunk("ab");
  auto header = [&](v1::UploadHeader h) {
    v1::UploadArrayRequest request;
    *request.mutable_header() = std::move(h);
    return request;
  };
  v1::UploadArrayRequest too_big_chunk;
  too_big_chunk.set_chunk(std::string(4 * kMiB + 1, 'z'));
  const std::vector<Case> cases = {
      {"empty stream", {}, "ended before its header"},
      {"chunk first", {chunk}, "first upload message must be a header"},
      {"two headers", {good_header, good_header, chunk}, "only the first upload message"},
      {"no dtype",
       {header(Header(session, "x", v1::DTYPE_UNSPECIFIED, {2})), chunk},
       "dtype is not set"},
      {"unknown dtype",
       {header(Header(session, "x", static_cast<v1::DType>(99), {2})), chunk},
       "unknown dtype value 99"},
      {"bad name", {header(Header(session, "a b", v1::DTYPE_INT8, {2})), chunk}, "[A-Za-z0-9_.:-]"},
      {"empty name", {header(Header(session, "", v1::DTYPE_INT8, {2})), chunk}, "array name"},
      {"negative dim", {header(Header(session, "x", v1::DTYPE_INT8, {2, -1})), chunk}, "negative"},
      {"overflowing shape",
       {header(Header(session, "x", v1::DTYPE_INT8, {int64_t{1} << 32, int64_t{1} << 32}))},
       "2^62"},
      {"chunk over max_chunk_bytes",
       {header(Header(session, "x", v1::DTYPE_UINT8, {4 * kMiB + 1})), too_big_chunk},
       "exceeds the limit of 4194304"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    grpc::ClientContext context;
    v1::ArrayInfo info;
    auto writer = client_->stub().UploadArray(&context, &info);
    for (const v1::UploadArrayRequest& message : c.messages) {
      if (!writer->Write(message)) break;
    }
    writer->WritesDone();
    EXPECT_THAT(writer->Finish(),
                GrpcStatusIs(grpc::StatusCode::INVALID_ARGUMENT, HasSubstr(c.message)));
    ExpectEmpty(session);
  }
}

TEST_F(ServerTest, QuotaAndArraySizeLimitsAreResourceExhausted) {
  const std::string session = client_->NewSession(/*memory_limit_bytes=*/kMiB);
  ASSERT_THAT(client_->Upload(Header(session, "x", v1::DTYPE_UINT8, {600 * kKiB}),
                              RandomBytes(600 * kKiB, 8)),
              GrpcOk());
  EXPECT_THAT(client_->Upload(Header(session, "y", v1::DTYPE_UINT8, {600 * kKiB}),
                              RandomBytes(600 * kKiB, 9)),
              GrpcStatusIs(grpc::StatusCode::RESOURCE_EXHAUSTED,
                           HasSubstr("614665 bytes requested, 433911 of 1048576 bytes left "
                                     "(614400 in arrays, transfers and runs, 265 in array "
                                     "metadata)")));
  // Replacing x needs room for old and new at once.
  EXPECT_THAT(client_->Upload(Header(session, "x", v1::DTYPE_UINT8, {600 * kKiB}),
                              RandomBytes(600 * kKiB, 9)),
              GrpcStatusIs(grpc::StatusCode::RESOURCE_EXHAUSTED, HasSubstr("quota")));
  v1::ListArraysResponse list;
  ASSERT_THAT(client_->ListArrays(session, &list), GrpcOk());
  EXPECT_THAT(list.arrays(), SizeIs(1));
  EXPECT_EQ(list.memory_used_bytes(), 600 * kKiB);

  // Over --max_array_bytes (32 MiB) in a session that could hold it.
  const std::string roomy = client_->NewSession(/*memory_limit_bytes=*/128 * kMiB);
  EXPECT_THAT(client_->Upload(Header(roomy, "huge", v1::DTYPE_FLOAT32, {8 * kMiB + 1}), ""),
              GrpcStatusIs(grpc::StatusCode::RESOURCE_EXHAUSTED, HasSubstr("max_array_bytes")));
  ExpectEmpty(roomy);
}

TEST_F(ServerTest, IdleSessionExpires) {
  v1::CreateSessionRequest request;
  request.mutable_idle_ttl()->set_nanos(300'000'000);
  v1::SessionInfo info;
  ASSERT_THAT(client_->CreateSession(request, &info), GrpcOk());
  EXPECT_EQ(info.idle_ttl().nanos(), 300'000'000);
  ASSERT_THAT(client_->Upload(Header(info.session_id(), "x", v1::DTYPE_INT8, {4}), "abcd"),
              GrpcOk());
  absl::SleepFor(absl::Milliseconds(900));
  v1::ListArraysResponse list;
  EXPECT_THAT(client_->ListArrays(info.session_id(), &list),
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, HasSubstr(info.session_id())));
  EXPECT_THAT(client_->Download(info.session_id(), "x").status,
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, _));
}

TEST_F(ServerTest, KeepAliveKeepsASessionAlive) {
  v1::CreateSessionRequest request;
  request.mutable_idle_ttl()->set_seconds(1);
  v1::SessionInfo info;
  ASSERT_THAT(client_->CreateSession(request, &info), GrpcOk());
  ASSERT_THAT(client_->Upload(Header(info.session_id(), "x", v1::DTYPE_INT8, {4}), "abcd"),
              GrpcOk());
  for (int i = 0; i < 10; ++i) {
    absl::SleepFor(absl::Milliseconds(250));
    v1::SessionInfo alive;
    ASSERT_THAT(client_->KeepAlive(info.session_id(), &alive), GrpcOk()) << "after " << i;
    EXPECT_EQ(alive.num_arrays(), 1);
    EXPECT_EQ(alive.memory_used_bytes(), 4);
  }
}

TEST_F(ServerTest, CancelledUploadLeavesNoArrayAndFreesItsMemory) {
  const std::string session = client_->NewSession();
  const int64_t size = 8 * kMiB;
  grpc::ClientContext context;
  v1::ArrayInfo info;
  auto writer = client_->stub().UploadArray(&context, &info);
  v1::UploadArrayRequest request;
  *request.mutable_header() = Header(session, "partial", v1::DTYPE_UINT8, {size});
  ASSERT_TRUE(writer->Write(request));
  request.set_chunk(RandomBytes(kMiB, 10));
  ASSERT_TRUE(writer->Write(request));
  ASSERT_TRUE(writer->Write(request));

  // The upload in progress holds its whole size (and its metadata's) against
  // the quota.
  // (MetadataBytes: 256 + the name's 7 bytes + 8 bytes for the one dim.)
  const int64_t held = size + 256 + 7 + 8;
  v1::ListArraysResponse list;
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  do {
    list.Clear();
    ASSERT_THAT(client_->ListArrays(session, &list), GrpcOk());
  } while (list.memory_used_bytes() != held && absl::Now() < deadline);
  EXPECT_EQ(list.memory_used_bytes(), held);
  EXPECT_THAT(list.arrays(), IsEmpty());

  context.TryCancel();
  EXPECT_THAT(writer->Finish(), GrpcStatusIs(grpc::StatusCode::CANCELLED, _));

  // The server notices the cancellation asynchronously.
  const absl::Time freed_deadline = absl::Now() + absl::Seconds(5);
  do {
    list.Clear();
    ASSERT_THAT(client_->ListArrays(session, &list), GrpcOk());
    if (list.memory_used_bytes() == 0) break;
    absl::SleepFor(absl::Milliseconds(20));
  } while (absl::Now() < freed_deadline);
  EXPECT_EQ(list.memory_used_bytes(), 0);
  EXPECT_THAT(list.arrays(), IsEmpty());
}

TEST_F(ServerTest, UploadOverwritesAnArrayOfTheSameName) {
  const std::string session = client_->NewSession();
  ASSERT_THAT(
      client_->Upload(Header(session, "x", v1::DTYPE_FLOAT32, {256}), RandomBytes(1024, 11)),
      GrpcOk());
  const std::string replacement = RandomBytes(6, 12);
  ASSERT_THAT(client_->Upload(Header(session, "x", v1::DTYPE_INT16, {3}), replacement), GrpcOk());
  v1::ArrayInfo info;
  ASSERT_THAT(client_->GetArrayInfo(session, "x", &info), GrpcOk());
  EXPECT_EQ(info.dtype(), v1::DTYPE_INT16);
  EXPECT_THAT(info.shape(), ElementsAre(3));
  DownloadResult result = client_->Download(session, "x");
  ASSERT_THAT(result.status, GrpcOk());
  EXPECT_TRUE(result.data == replacement);
  v1::ListArraysResponse list;
  ASSERT_THAT(client_->ListArrays(session, &list), GrpcOk());
  EXPECT_THAT(list.arrays(), SizeIs(1));
  EXPECT_EQ(list.memory_used_bytes(), 6);
}

TEST_F(ServerTest, ExecuteRunsAGraphAndStoresOrReturnsOutputs) {
  const std::string session = client_->NewSession();
  v1::UploadHeader header;
  header.set_session_id(session);
  header.set_name("x");
  header.set_dtype(v1::DTYPE_INT32);
  header.add_shape(3);
  const int32_t values[3] = {1, -2, 40};
  ASSERT_THAT(client_->Upload(header, std::string(reinterpret_cast<const char*>(values), 12)),
              GrpcOk());

  v1::ExecuteRequest request;
  request.set_session_id(session);
  v1::Node* node = request.mutable_graph()->add_nodes();
  node->set_id("y");
  node->set_op("mul");
  node->add_inputs()->set_array("x");
  node->add_inputs()->mutable_scalar()->set_int_value(3);
  v1::OutputSpec* out = request.add_outputs();
  out->set_node("y");
  out->set_return_inline(true);
  out->set_store_as("y");
  grpc::ClientContext context;
  v1::ExecuteResponse response;
  ASSERT_THAT(client_->stub().Execute(&context, request, &response), GrpcOk());
  ASSERT_EQ(response.outputs_size(), 1);
  const v1::InlineArray& value = response.outputs(0).value();
  EXPECT_EQ(value.dtype(), v1::DTYPE_INT32);  // a weak scalar keeps int32
  ASSERT_EQ(value.data().size(), 12u);
  int32_t got[3];
  std::memcpy(got, value.data().data(), 12);
  EXPECT_THAT(got, ElementsAre(3, -6, 120));
  EXPECT_EQ(response.outputs(0).info().name(), "y");
  DownloadResult stored = client_->Download(session, "y");
  ASSERT_THAT(stored.status, GrpcOk());
  EXPECT_EQ(stored.data, value.data());
}

TEST_F(ServerTest, ExecuteRejectsBadGraphsWithTheNodeAndOp) {
  const std::string session = client_->NewSession();
  v1::ExecuteRequest request;
  request.set_session_id(session);
  v1::Node* node = request.mutable_graph()->add_nodes();
  node->set_id("bad");
  node->set_op("no_such_op");
  request.add_outputs()->set_node("bad");
  request.mutable_outputs(0)->set_return_inline(true);
  grpc::ClientContext context;
  v1::ExecuteResponse response;
  EXPECT_THAT(
      client_->stub().Execute(&context, request, &response),
      GrpcStatusIs(grpc::StatusCode::INVALID_ARGUMENT, HasSubstr("node 'bad' (no_such_op)")));
  grpc::ClientContext unknown_context;
  request.set_session_id(std::string(32, '0'));
  EXPECT_THAT(client_->stub().Execute(&unknown_context, request, &response),
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, _));
}

// grpc.health.v1 has no C++ stubs in this build. Its messages are
// wire-compatible with wrappers: HealthCheckRequest {string service = 1} is
// a StringValue, HealthCheckResponse {ServingStatus status = 1} an Int32Value.
grpc::Status HealthCheck(const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
                         int* serving_status) {
  grpc::TemplatedGenericStub<google::protobuf::StringValue, google::protobuf::Int32Value> stub(
      channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  google::protobuf::StringValue request;
  request.set_value(service);
  google::protobuf::Int32Value response;
  grpc::Status status;
  absl::Notification done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) {
                   status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();
  *serving_status = response.value();
  return status;
}

TEST_F(ServerTest, HealthCheckServes) {
  constexpr int kServing = 1;  // grpc.health.v1.HealthCheckResponse.SERVING
  for (const char* service : {"", "gpuflow.v1.GpuFlow"}) {
    SCOPED_TRACE(service);
    int serving_status = 0;
    ASSERT_THAT(HealthCheck(client_->channel(), service, &serving_status), GrpcOk());
    EXPECT_EQ(serving_status, kServing);
  }
  int serving_status = 0;
  EXPECT_THAT(HealthCheck(client_->channel(), "no.such.Service", &serving_status),
              GrpcStatusIs(grpc::StatusCode::NOT_FOUND, _));
}

// ---------------------------------------------------------------- servers of their own

TEST(GpuflowdProcessTest, SigtermStopsTheServerWithExitStatusZero) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       ServerProcess::Start(GPUFLOW_SERVER_BIN, {"--shutdown_grace=2s"}));
  {
    Client client(server->address());
    ASSERT_TRUE(client.WaitForConnected());
    const std::string session = client.NewSession();
    ASSERT_THAT(client.Upload(Header(session, "x", v1::DTYPE_INT8, {3}), "abc"), GrpcOk());
  }
  ASSERT_OK_AND_ASSIGN(int status, server->SignalAndWait(SIGTERM, absl::Seconds(15)));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "gpuflowd ended with " << ServerProcess::DescribeWaitStatus(status);
}

TEST(GpuflowdProcessTest, MaxSessionsIsResourceExhausted) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> server,
                       ServerProcess::Start(GPUFLOW_SERVER_BIN, {"--max_sessions=2"}));
  Client client(server->address());
  ASSERT_TRUE(client.WaitForConnected());
  const std::string first = client.NewSession();
  client.NewSession();
  v1::SessionInfo info;
  EXPECT_THAT(client.CreateSession(v1::CreateSessionRequest(), &info),
              GrpcStatusIs(grpc::StatusCode::RESOURCE_EXHAUSTED, HasSubstr("max_sessions")));
  v1::CloseSessionResponse closed;
  ASSERT_THAT(client.CloseSession(first, &closed), GrpcOk());
  EXPECT_THAT(client.CreateSession(v1::CreateSessionRequest(), &info), GrpcOk());
}

TEST(GpuflowdProcessTest, EnvironmentSetsFlagsAndTheCommandLineWins) {
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<ServerProcess> server,
      ServerProcess::Start(GPUFLOW_SERVER_BIN, {"--max_array_bytes=2MiB"},
                           {"GPUFLOW_MAX_SESSIONS=3", "GPUFLOW_MAX_ARRAY_BYTES=1MiB"}));
  Client client(server->address());
  ASSERT_TRUE(client.WaitForConnected());
  v1::ServerInfo info;
  ASSERT_THAT(client.GetServerInfo(&info), GrpcOk());
  EXPECT_EQ(info.limits().max_sessions(), 3);
  EXPECT_EQ(info.limits().max_array_bytes(), 2 * kMiB);
}

TEST(GpuflowdProcessTest, BadEnvironmentValueStopsTheServerWithStatusTwo) {
  EXPECT_THAT(ServerProcess::Start(GPUFLOW_SERVER_BIN, {}, {"GPUFLOW_MAX_ARRAY_BYTES=lots"}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("exited with status 2")));
}

}  // namespace
}  // namespace gpuflow

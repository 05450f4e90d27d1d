// The client against the real gpuflowd (a child process, CPU backend).
#include "clients/cpp/client.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "clients/cpp/array.h"
#include "clients/cpp/graph_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

#ifndef GPUFLOW_SERVER_BIN
#error "GPUFLOW_SERVER_BIN must name the gpuflowd binary"
#endif

namespace gpuflow::client {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::ServerProcess;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// Small chunks, so that every transfer of more than 4 KiB takes several.
constexpr int64_t kChunkBytes = 4096;

Array RandomArray(v1::DType dtype, std::vector<int64_t> shape, uint32_t seed) {
  std::mt19937 rng(seed);
  Array array;
  array.dtype = dtype;
  array.shape = std::move(shape);
  array.data.resize(array.num_elements() * ItemSize(dtype));
  for (char& c : array.data) {
    c = static_cast<char>(dtype == v1::DTYPE_BOOL ? rng() % 2 : rng() % 256);
  }
  return array;
}

class ClientTest : public ::testing::Test {
 protected:
  // A server that does not start fails every test (SetUp), rather than
  // failing SetUpTestSuite, which GoogleTest reports as skipped tests.
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(
        GPUFLOW_SERVER_BIN, {"--backend=cpu", absl::StrCat("--max_chunk_bytes=", kChunkBytes),
                             "--allow_shared_memory"});
    if (server.ok()) {
      server_ = std::move(server).value().release();
    } else {
      start_error_ = new std::string(server.status().ToString());
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete start_error_;
    start_error_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(server_, nullptr) << *start_error_;
    absl::StatusOr<Client> client = Client::Connect(server_->address());
    ASSERT_THAT(client, IsOk());
    client_.emplace(*client);
    absl::StatusOr<Session> session = client_->CreateSession({.label = "client_test"});
    ASSERT_THAT(session, IsOk());
    session_.emplace(*session);
  }
  void TearDown() override {
    if (session_.has_value()) (void)session_->Close();
  }

  static ServerProcess* server_;
  static std::string* start_error_;
  std::optional<Client> client_;
  std::optional<Session> session_;
};

ServerProcess* ClientTest::server_ = nullptr;
std::string* ClientTest::start_error_ = nullptr;

TEST(ClientConnectTest, UnreachableServerIsUnavailableNamingTheTarget) {
  // Port 1 on loopback: nothing listens there.
  EXPECT_THAT(Client::Connect("ipv4:127.0.0.1:1", {.connect_timeout = absl::Milliseconds(200)}),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("ipv4:127.0.0.1:1")));
}

TEST(FromGrpcStatusTest, KeepsEveryCodeAndTheMessage) {
  EXPECT_THAT(FromGrpcStatus(grpc::Status::OK), IsOk());
  for (int code = 1; code <= 16; ++code) {
    const absl::Status status =
        FromGrpcStatus(grpc::Status(static_cast<grpc::StatusCode>(code), "why"));
    EXPECT_EQ(static_cast<int>(status.code()), code);
    EXPECT_EQ(status.message(), "why");
  }
}

TEST_F(ClientTest, InfoReportsBackendAndLimits) {
  ASSERT_OK_AND_ASSIGN(v1::ServerInfo info, client_->Info());
  EXPECT_EQ(info.backend(), "cpu");
  EXPECT_EQ(info.limits().max_chunk_bytes(), kChunkBytes);
  EXPECT_THAT(info.dtypes(), SizeIs(15));
  ASSERT_OK_AND_ASSIGN(v1::Limits limits, client_->Limits());
  EXPECT_EQ(limits.max_chunk_bytes(), kChunkBytes);
}

TEST_F(ClientTest, UploadAndDownloadRoundTripEveryDTypeAndShape) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {1}, {1023}, {3, 5, 7}, {2, 0, 3}};
  uint32_t seed = 1;
  for (v1::DType dtype : AllDTypes()) {
    for (const std::vector<int64_t>& shape : shapes) {
      const Array array = RandomArray(dtype, shape, seed++);
      SCOPED_TRACE(array.TypeString());
      ASSERT_OK_AND_ASSIGN(v1::ArrayInfo info, session_->Upload("a", array));
      EXPECT_EQ(info.name(), "a");
      EXPECT_EQ(info.dtype(), dtype);
      EXPECT_EQ(info.num_bytes(), static_cast<int64_t>(array.data.size()));
      ASSERT_OK_AND_ASSIGN(Array back, session_->Download("a"));
      EXPECT_EQ(back, array);
    }
  }
}

TEST_F(ClientTest, LargeTransfersTakeManyChunks) {
  const Array array = RandomArray(v1::DTYPE_FLOAT64, {100'003}, 5);  // ~195 chunks each way
  ASSERT_THAT(session_->Upload("big", array), IsOk());
  ASSERT_OK_AND_ASSIGN(Array back, session_->Download("big"));
  EXPECT_EQ(back, array);
}

TEST_F(ClientTest, UploadRejectsAnInvalidArrayBeforeSending) {
  Array bad;
  bad.dtype = v1::DTYPE_INT32;
  bad.shape = {3};
  bad.data = "12";
  EXPECT_THAT(session_->Upload("bad", bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot upload 'bad'")));
  EXPECT_THAT(session_->Info("bad"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(ClientTest, ServerErrorsKeepTheirCodeAndMessage) {
  EXPECT_THAT(session_->Download("nothing"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("'nothing'")));
  ASSERT_OK_AND_ASSIGN(Array x, Array::FromValues<float>({2}, {1, 2}));
  EXPECT_THAT(session_->Upload("bad name!", x),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name")));
  const Session unknown = client_->OpenSession("0123456789abcdef0123456789abcdef");
  EXPECT_THAT(unknown.List(), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(ClientTest, QuotaErrorsComeBackFromAStreamingUpload) {
  ASSERT_OK_AND_ASSIGN(Session small,
                       client_->CreateSession({.label = "quota", .memory_limit_bytes = 1024}));
  const Array array = RandomArray(v1::DTYPE_UINT8, {10'000}, 3);
  EXPECT_THAT(small.Upload("x", array), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(small.Close(), IsOk());
}

TEST_F(ClientTest, ListInfoAndDelete) {
  ASSERT_OK_AND_ASSIGN(Array x, Array::FromValues<int32_t>({2, 2}, {1, 2, 3, 4}));
  ASSERT_THAT(session_->Upload("b", x), IsOk());
  ASSERT_THAT(session_->Upload("a", x), IsOk());
  ASSERT_OK_AND_ASSIGN(v1::ListArraysResponse list, session_->List());
  ASSERT_THAT(list.arrays(), SizeIs(2));
  EXPECT_EQ(list.arrays(0).name(), "a");
  EXPECT_EQ(list.memory_used_bytes(), 32);
  ASSERT_OK_AND_ASSIGN(v1::ArrayInfo info, session_->Info("b"));
  EXPECT_THAT(info.shape(), ElementsAre(2, 2));
  EXPECT_THAT(session_->Delete("b"), IsOkAndHolds(16));
  EXPECT_THAT(session_->Info("b"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(ClientTest, PreparedGraphsRunByHandle) {
  ASSERT_OK_AND_ASSIGN(Array x, Array::FromValues<float>({3}, {1, 2, 3}));
  ASSERT_THAT(session_->Upload("x", x), IsOk());
  ASSERT_OK_AND_ASSIGN(v1::ExecuteRequest graph, ParseGraphJson(R"({
    "graph": {"nodes": [
      {"id": "y", "op": "mul", "inputs": [{"array": "x"}, {"scalar": {"floatValue": 2.0}}]}]},
    "outputs": [{"node": "y", "returnInline": true}]})"));
  v1::PrepareGraphRequest prepare;
  *prepare.mutable_graph() = graph.graph();
  prepare.add_output_nodes("y");
  ASSERT_OK_AND_ASSIGN(v1::PreparedGraphInfo info, session_->PrepareGraph(prepare));
  v1::ExecuteRequest by_handle;
  by_handle.set_prepared_graph(info.handle());
  *by_handle.add_outputs() = graph.outputs(0);
  by_handle.add_scalars()->set_float_value(10.0);
  ASSERT_OK_AND_ASSIGN(v1::ExecuteResponse response, session_->Execute(by_handle));
  EXPECT_TRUE(response.timings().prepared_graph());
  ASSERT_OK_AND_ASSIGN(Array y, FromInline(response.outputs(0).value()));
  EXPECT_EQ(y.ValuesAs<float>(), (std::vector<float>{10, 20, 30}));
  ASSERT_OK_AND_ASSIGN(int64_t freed, session_->ReleaseGraph(info.handle()));
  EXPECT_EQ(freed, info.metadata_bytes());
  EXPECT_THAT(session_->Execute(by_handle).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("prepare it again")));
}

TEST_F(ClientTest, SharedMemoryUploadsAndDownloads) {
  ASSERT_OK_AND_ASSIGN(SharedMemory shm, SharedMemory::Create(1 << 16));
  EXPECT_THAT(shm.key(), ::testing::StartsWith("gpuflow_"));
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  std::memcpy(shm.data(), values.data(), values.size() * sizeof(float));
  ASSERT_OK_AND_ASSIGN(v1::SharedMemoryRegion region,
                       session_->RegisterSharedMemory("stage", shm.key(), shm.size()));
  EXPECT_EQ(region.byte_size(), 1 << 16);
  ASSERT_THAT(session_->UploadFromSharedMemory("x", v1::DTYPE_FLOAT32, {1000}, "stage", 0), IsOk());
  ASSERT_OK_AND_ASSIGN(Array x, session_->Download("x"));
  EXPECT_EQ(x.ValuesAs<float>(), values);
  ASSERT_OK_AND_ASSIGN(v1::ArrayInfo info, session_->DownloadToSharedMemory("x", "stage", 8192));
  EXPECT_EQ(info.num_bytes(), 4000);
  EXPECT_EQ(std::memcmp(static_cast<char*>(shm.data()) + 8192, values.data(), 4000), 0);
  EXPECT_THAT(session_->DownloadToSharedMemory("x", "stage", (1 << 16) - 100).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("outside the region")));
  ASSERT_THAT(session_->UnregisterSharedMemory("stage"), IsOk());
  EXPECT_THAT(session_->UnregisterSharedMemory("stage"), StatusIs(absl::StatusCode::kNotFound));
  // Destroying the handle unlinks the object.
  const std::string key = shm.key();
  { SharedMemory gone = std::move(shm); }
  EXPECT_THAT(session_->RegisterSharedMemory("again", key, 16).status(),
              StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(ClientTest, CudaMemoryNeedsTheFlagAndADevice) {
  const std::string handle(64, '\x01');
  // This server runs without --allow_cuda_ipc.
  EXPECT_THAT(session_->RegisterCudaMemory("d", handle, 16).status(),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("--allow_cuda_ipc")));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<ServerProcess> ipc,
      ServerProcess::Start(GPUFLOW_SERVER_BIN, {"--backend=cpu", "--allow_cuda_ipc"}));
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(ipc->address()));
  ASSERT_OK_AND_ASSIGN(Session s, client.CreateSession({}));
  EXPECT_THAT(s.RegisterCudaMemory("d", handle, 16).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no device memory")));
  EXPECT_THAT(s.RegisterCudaMemory("d", "short", 16).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("64 bytes")));
}

TEST(ClientPoolTest, SessionsSpreadOverTheWorkersAndStayOnTheirs) {
  std::vector<std::unique_ptr<ServerProcess>> workers;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> worker,
                         ServerProcess::Start(GPUFLOW_SERVER_BIN, {"--backend=cpu"}));
    workers.push_back(std::move(worker));
  }
  // A dead address in the pool is skipped.
  const std::string target =
      absl::StrCat("127.0.0.1:1,", workers[0]->address(), ",", workers[1]->address());
  ASSERT_OK_AND_ASSIGN(Client pool, Client::Connect(target));
  std::map<std::string, int> per_worker;
  std::vector<Session> sessions;
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK_AND_ASSIGN(Session s, pool.CreateSession({.label = absl::StrCat("pool", i)}));
    ++per_worker[s.endpoint()];
    ASSERT_OK_AND_ASSIGN(Array x, Array::FromValues<float>({2}, {1.0f * i, 2.0f}));
    ASSERT_THAT(s.Upload("x", x), IsOk());
    ASSERT_OK_AND_ASSIGN(Array back, s.Download("x"));
    EXPECT_EQ(back, x);
    sessions.push_back(s);
  }
  EXPECT_EQ(per_worker,
            (std::map<std::string, int>{{workers[0]->address(), 2}, {workers[1]->address(), 2}}));
  for (const auto& worker : workers) {
    ASSERT_OK_AND_ASSIGN(Client direct, Client::Connect(worker->address()));
    ASSERT_OK_AND_ASSIGN(v1::ServerInfo info, direct.Info());
    EXPECT_EQ(info.load().sessions(), 2);
  }
  for (const Session& s : sessions) EXPECT_THAT(s.Close(), IsOk());
  EXPECT_THAT(
      Client::Connect("127.0.0.1:1,127.0.0.1:2", {.connect_timeout = absl::Milliseconds(200)}),
      StatusIs(absl::StatusCode::kUnavailable, HasSubstr("no gpuflow worker")));
}

TEST_F(ClientTest, ExecuteReturnsInlineAndStoredOutputs) {
  ASSERT_OK_AND_ASSIGN(Array x, Array::FromValues<float>({4}, {0, 1, 2, -3}));
  ASSERT_THAT(session_->Upload("x", x), IsOk());
  ASSERT_OK_AND_ASSIGN(v1::ExecuteRequest request, ParseGraphJson(R"({
    "graph": {"nodes": [
      {"id": "sq", "op": "mul", "inputs": [{"array": "x"}, {"array": "x"}]},
      {"id": "p1", "op": "add", "inputs": [{"node": "sq"}, {"scalar": {"intValue": 1}}]},
      {"id": "y", "op": "sqrt", "inputs": [{"node": "p1"}]}]},
    "outputs": [{"node": "y", "returnInline": true}, {"node": "y", "storeAs": "y"}]})"));
  ASSERT_OK_AND_ASSIGN(v1::ExecuteResponse response, session_->Execute(request));
  ASSERT_THAT(response.outputs(), SizeIs(2));
  ASSERT_OK_AND_ASSIGN(Array inline_y, FromInline(response.outputs(0).value()));
  EXPECT_EQ(inline_y.dtype, v1::DTYPE_FLOAT32);
  const std::vector<float> y = inline_y.ValuesAs<float>();
  const float expected[] = {1.0f, std::sqrt(2.0f), std::sqrt(5.0f), std::sqrt(10.0f)};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[i], expected[i]) << i;
  EXPECT_EQ(response.outputs(1).info().name(), "y");
  ASSERT_OK_AND_ASSIGN(Array stored_y, session_->Download("y"));
  EXPECT_EQ(stored_y, inline_y);
  EXPECT_GT(response.timings().total_seconds(), 0);
}

TEST_F(ClientTest, ExecuteErrorsNameTheNode) {
  ASSERT_OK_AND_ASSIGN(v1::ExecuteRequest request, ParseGraphJson(R"({
    "graph": {"nodes": [{"id": "n", "op": "no_such_op"}]},
    "outputs": [{"node": "n", "returnInline": true}]})"));
  EXPECT_THAT(session_->Execute(request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'n'")));
}

// `x * k` for a float32 array x, its result returned inline.
v1::ExecuteRequest ScaleRequest(float k) {
  v1::ExecuteRequest request;
  v1::Node* node = request.mutable_graph()->add_nodes();
  node->set_id("y");
  node->set_op("mul");
  node->add_inputs()->set_array("x");
  node->add_inputs()->mutable_scalar()->set_float_value(k);
  v1::OutputSpec* output = request.add_outputs();
  output->set_node("y");
  output->set_return_inline(true);
  return request;
}

TEST_F(ClientTest, ExecuteAsyncKeepsManyRequestsInFlight) {
  ASSERT_OK_AND_ASSIGN(Array x, Array::FromValues<float>({5}, {1, 2, 3, -4, 0.5f}));
  ASSERT_THAT(session_->Upload("x", x), IsOk());
  std::vector<std::future<absl::StatusOr<v1::ExecuteResponse>>> futures;
  for (int k = 0; k < 16; ++k) futures.push_back(session_->ExecuteAsync(ScaleRequest(k)));
  for (int k = 0; k < 16; ++k) {
    SCOPED_TRACE(k);
    ASSERT_OK_AND_ASSIGN(v1::ExecuteResponse response, futures[k].get());
    ASSERT_THAT(response.outputs(), SizeIs(1));
    ASSERT_OK_AND_ASSIGN(Array y, FromInline(response.outputs(0).value()));
    EXPECT_THAT(y.ValuesAs<float>(),
                ElementsAre(1.0f * k, 2.0f * k, 3.0f * k, -4.0f * k, 0.5f * k));
    // The same as the synchronous call.
    ASSERT_OK_AND_ASSIGN(v1::ExecuteResponse sync, session_->Execute(ScaleRequest(k)));
    EXPECT_EQ(sync.outputs(0).value().SerializeAsString(),
              response.outputs(0).value().SerializeAsString());
  }
}

TEST_F(ClientTest, ExecuteAsyncKeepsTheServerErrorCodeAndMessage) {
  // No array "x" in this session.
  std::future<absl::StatusOr<v1::ExecuteResponse>> future = session_->ExecuteAsync(ScaleRequest(2));
  const absl::StatusOr<v1::ExecuteResponse> sync = session_->Execute(ScaleRequest(2));
  EXPECT_THAT(sync, StatusIs(absl::StatusCode::kNotFound, HasSubstr("'x'")));
  const absl::StatusOr<v1::ExecuteResponse> result = future.get();
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kNotFound, HasSubstr("'x'")));
  EXPECT_EQ(result.status(), sync.status());
}

TEST_F(ClientTest, ExecuteAsyncFromManyThreadsAtOnce) {
  ASSERT_OK_AND_ASSIGN(Array x, Array::FromValues<float>({2}, {3, 4}));
  ASSERT_THAT(session_->Upload("x", x), IsOk());
  absl::Mutex mutex;
  std::vector<float> sums;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::future<absl::StatusOr<v1::ExecuteResponse>>> futures;
      for (int i = 0; i < 8; ++i) {
        futures.push_back(session_->ExecuteAsync(ScaleRequest(t * 8 + i)));
      }
      for (auto& future : futures) {
        absl::StatusOr<v1::ExecuteResponse> result = future.get();
        float sum = -1;
        if (result.ok()) {
          absl::StatusOr<Array> y = FromInline(result->outputs(0).value());
          if (y.ok()) sum = y->ValuesAs<float>()[0] + y->ValuesAs<float>()[1];
        }
        absl::MutexLock lock(&mutex);
        sums.push_back(sum);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<float> expected;
  for (int k = 0; k < 32; ++k) expected.push_back(7.0f * k);
  EXPECT_THAT(sums, ::testing::UnorderedElementsAreArray(expected));
}

TEST_F(ClientTest, ExecuteAsyncOutlivesItsHandles) {
  ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(server_->address()));
  ASSERT_OK_AND_ASSIGN(Session session, client.CreateSession({.label = "handles"}));
  ASSERT_OK_AND_ASSIGN(Array x, Array::FromValues<float>({1}, {5}));
  ASSERT_THAT(session.Upload("x", x), IsOk());
  const std::string id = session.id();
  std::vector<std::future<absl::StatusOr<v1::ExecuteResponse>>> futures;
  {
    const Session moved = std::move(session);
    const Client gone = std::move(client);
    for (int k = 0; k < 8; ++k) futures.push_back(moved.ExecuteAsync(ScaleRequest(k)));
  }  // the last handles go here: they wait for the calls in flight
  for (int k = 0; k < 8; ++k) {
    ASSERT_OK_AND_ASSIGN(v1::ExecuteResponse response, futures[k].get());
    ASSERT_OK_AND_ASSIGN(Array y, FromInline(response.outputs(0).value()));
    EXPECT_THAT(y.ValuesAs<float>(), ElementsAre(5.0f * k));
  }
  EXPECT_THAT(client_->OpenSession(id).Close(), IsOk());
}

TEST_F(ClientTest, BenchmarkReturnsEveryRepeat) {
  ASSERT_OK_AND_ASSIGN(v1::ExecuteRequest execute, ParseGraphJson(R"({
    "graph": {"nodes": [{"id": "r", "op": "arange", "attrs": {"stop": {"floatValue": 100}}},
                        {"id": "s", "op": "sum", "inputs": [{"node": "r"}]}]},
    "outputs": [{"node": "s", "returnInline": true}]})"));
  v1::BenchmarkRequest request = ToBenchmarkRequest(execute);
  request.set_n_warmup(1);
  request.set_n_repeat(5);
  request.set_name("sum");
  ASSERT_OK_AND_ASSIGN(v1::BenchmarkResponse response, session_->Benchmark(request));
  EXPECT_EQ(response.name(), "sum");
  EXPECT_THAT(response.cpu_seconds(), SizeIs(5));
  EXPECT_THAT(response.gpu_seconds(), SizeIs(0));
}

TEST_F(ClientTest, SessionOptionsReachTheServer) {
  ASSERT_OK_AND_ASSIGN(Session s, client_->CreateSession({.label = "opts",
                                                          .memory_limit_bytes = 1 << 20,
                                                          .idle_ttl = absl::Seconds(90)}));
  ASSERT_OK_AND_ASSIGN(v1::SessionInfo info, s.KeepAlive());
  EXPECT_EQ(info.label(), "opts");
  EXPECT_EQ(info.memory_limit_bytes(), 1 << 20);
  EXPECT_EQ(info.idle_ttl().seconds(), 90);
  EXPECT_THAT(s.Close(), IsOk());
  EXPECT_THAT(s.KeepAlive(), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(ClientTest, AnotherClientOpensTheSessionById) {
  ASSERT_OK_AND_ASSIGN(Array x, Array::FromValues<uint8_t>({3}, {7, 8, 9}));
  ASSERT_THAT(session_->Upload("x", x), IsOk());
  ASSERT_OK_AND_ASSIGN(Client other, Client::Connect(server_->address()));
  const Session same = other.OpenSession(session_->id());
  EXPECT_THAT(same.Download("x"), IsOkAndHolds(x));
}

}  // namespace
}  // namespace gpuflow::client

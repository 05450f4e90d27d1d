// Pool targets of the C++ client (clients/cpp/pool_internal.h,
// docs/scale-out.md): lists and dns:/// names, placement on workers that
// come and go, and finding a session's worker. Real gpuflowd workers
// (child processes, CPU backend).
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "clients/cpp/array.h"
#include "clients/cpp/client.h"
#include "clients/cpp/graph_json.h"
#include "clients/cpp/pool_internal.h"
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
using ::testing::Contains;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(PoolTargetTest, ListsAndDnsNamesArePools) {
  EXPECT_TRUE(internal::IsPoolTarget("a:1,b:2"));
  EXPECT_TRUE(internal::IsPoolTarget("dns:///gpuflow.gpuflow.svc:50051"));
  EXPECT_FALSE(internal::IsPoolTarget("localhost:50051"));
  // gRPC's own forms stay one channel.
  EXPECT_FALSE(internal::IsPoolTarget("dns://8.8.8.8/gpuflow:50051"));
  EXPECT_FALSE(internal::IsPoolTarget("ipv4:127.0.0.1:50051"));
}

TEST(PoolTargetTest, ListsAreSortedOnce) {
  EXPECT_THAT(internal::ResolvePoolTarget(" b:1, a:2,,a:2 "),
              IsOkAndHolds(ElementsAre("a:2", "b:1")));
}

TEST(PoolTargetTest, DnsNamesResolveToEveryAddress) {
  EXPECT_THAT(internal::ResolvePoolTarget("dns:///127.0.0.1:5"),
              IsOkAndHolds(ElementsAre("127.0.0.1:5")));
  EXPECT_THAT(internal::ResolvePoolTarget("dns:///[::1]:7"), IsOkAndHolds(ElementsAre("[::1]:7")));
  // localhost: 127.0.0.1, and ::1 where /etc/hosts says so.
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> local,
                       internal::ResolvePoolTarget("dns:///localhost:50051"));
  EXPECT_THAT(local, Contains("127.0.0.1:50051"));
  EXPECT_THAT(local, Each(::testing::AnyOf("127.0.0.1:50051", "[::1]:50051")));
}

TEST(PoolTargetTest, BadDnsTargetsSayWhy) {
  EXPECT_THAT(internal::ResolvePoolTarget("dns:///localhost"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("host:port")));
  EXPECT_THAT(internal::ResolvePoolTarget("dns:///localhost:http"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(internal::ResolvePoolTarget("dns:///no-such-worker.invalid:50051"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("does not resolve")));
  EXPECT_THAT(Client::Connect("dns:///localhost"), StatusIs(absl::StatusCode::kInvalidArgument));
}

class WorkerPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<ServerProcess> worker,
                           ServerProcess::Start(GPUFLOW_SERVER_BIN, {"--backend=cpu"}));
      workers_.push_back(std::move(worker));
    }
  }

  // Uploads and downloads an array in `s`.
  static void RoundTrip(const Session& s, float value) {
    ASSERT_OK_AND_ASSIGN(Array x, Array::FromValues<float>({3}, {value, 2, 3}));
    ASSERT_THAT(s.Upload("x", x), IsOk());
    EXPECT_THAT(s.Download("x"), IsOkAndHolds(x));
  }

  std::string address(int i) const { return workers_[i]->address(); }

  std::vector<std::unique_ptr<ServerProcess>> workers_;
};

TEST_F(WorkerPoolTest, NewSessionsFollowTheAddressesAsTheyChange) {
  // What a headless Service's DNS would answer as pods come and go.
  absl::Mutex mutex;
  std::vector<std::string> answer = {address(0)};
  int resolved = 0;
  ASSERT_OK_AND_ASSIGN(Client pool, internal::WorkerPool::Connect("test-pool", {}, [&] {
                         absl::MutexLock lock(&mutex);
                         ++resolved;
                         return absl::StatusOr<std::vector<std::string>>(answer);
                       }));
  EXPECT_EQ(pool.target(), "test-pool");
  ASSERT_OK_AND_ASSIGN(Session a1, pool.CreateSession());
  ASSERT_OK_AND_ASSIGN(Session a2, pool.CreateSession());
  EXPECT_EQ(a1.endpoint(), address(0));
  EXPECT_EQ(a2.endpoint(), address(0));
  {
    absl::MutexLock lock(&mutex);
    answer = {address(0), address(1)};
  }
  // The new worker holds nothing: the next sessions go there.
  ASSERT_OK_AND_ASSIGN(Session b1, pool.CreateSession());
  ASSERT_OK_AND_ASSIGN(Session b2, pool.CreateSession());
  EXPECT_EQ(b1.endpoint(), address(1));
  EXPECT_EQ(b2.endpoint(), address(1));
  {
    absl::MutexLock lock(&mutex);
    answer = {address(1)};
  }
  ASSERT_OK_AND_ASSIGN(Session b3, pool.CreateSession());
  EXPECT_EQ(b3.endpoint(), address(1));
  // Sessions on a worker no longer in the answer keep their connection.
  for (const Session* s : {&a1, &a2, &b1, &b2, &b3}) RoundTrip(*s, 1.5f);
  {
    absl::MutexLock lock(&mutex);
    EXPECT_EQ(resolved, 6);  // Connect, then every CreateSession
  }
  for (const Session* s : {&a1, &a2, &b1, &b2, &b3}) EXPECT_THAT(s->Close(), IsOk());
}

TEST_F(WorkerPoolTest, AFailedResolutionKeepsTheLastAddresses) {
  absl::Mutex mutex;
  bool fail = false;
  const std::vector<std::string> answer = {address(0), address(1)};
  ASSERT_OK_AND_ASSIGN(
      Client pool, internal::WorkerPool::Connect("test-pool", {}, [&] {
        absl::MutexLock lock(&mutex);
        if (fail) {
          return absl::StatusOr<std::vector<std::string>>(absl::UnavailableError("DNS is down"));
        }
        return absl::StatusOr<std::vector<std::string>>(answer);
      }));
  {
    absl::MutexLock lock(&mutex);
    fail = true;
  }
  ASSERT_OK_AND_ASSIGN(Session s, pool.CreateSession());
  RoundTrip(s, 4);
  EXPECT_THAT(internal::WorkerPool::Connect("never-resolves", {},
                                            [] {
                                              return absl::StatusOr<std::vector<std::string>>(
                                                  absl::UnavailableError("DNS is down"));
                                            }),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("DNS is down")));
}

TEST_F(WorkerPoolTest, LocateSessionFindsTheWorkerThatHoldsIt) {
  const std::string target = absl::StrCat(address(0), ",", address(1));
  ASSERT_OK_AND_ASSIGN(Client pool, Client::Connect(target));
  EXPECT_EQ(pool.target(), target);
  std::map<std::string, std::string> worker_of;  // id -> endpoint
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(Session s, pool.CreateSession());
    RoundTrip(s, static_cast<float>(i));
    worker_of[s.id()] = s.endpoint();
  }
  ASSERT_EQ(worker_of.size(), 2u);
  // Another process, knowing only the pool and the ids.
  ASSERT_OK_AND_ASSIGN(Client other, Client::Connect(target));
  for (const auto& [id, endpoint] : worker_of) {
    ASSERT_OK_AND_ASSIGN(Session found, other.LocateSession(id));
    EXPECT_EQ(found.endpoint(), endpoint);
    EXPECT_THAT(found.Download("x"), IsOk());
    EXPECT_THAT(found.Close(), IsOk());
  }
  EXPECT_THAT(other.LocateSession(std::string(32, '0')),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no worker of")));
  // One server: a handle without a call, as OpenSession.
  ASSERT_OK_AND_ASSIGN(Client direct, Client::Connect(address(0)));
  ASSERT_OK_AND_ASSIGN(Session unchecked, direct.LocateSession(std::string(32, '0')));
  EXPECT_THAT(unchecked.KeepAlive(), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(WorkerPoolTest, DnsTargetsPlaceSessionsOnWhatTheNameResolvesTo) {
  // localhost resolves to 127.0.0.1 (and perhaps ::1, where nothing listens:
  // that address is passed over).
  const std::string target = absl::StrCat("dns:///localhost:", workers_[0]->port());
  ASSERT_OK_AND_ASSIGN(Client pool, Client::Connect(target));
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(Session s, pool.CreateSession());
    EXPECT_EQ(s.endpoint(), absl::StrCat("127.0.0.1:", workers_[0]->port()));
    RoundTrip(s, 7);
    ASSERT_OK_AND_ASSIGN(Session found, pool.LocateSession(s.id()));
    EXPECT_EQ(found.endpoint(), s.endpoint());
  }
  ASSERT_OK_AND_ASSIGN(Client direct, Client::Connect(address(0)));
  ASSERT_OK_AND_ASSIGN(v1::ServerInfo info, direct.Info());
  EXPECT_EQ(info.load().sessions(), 3);
  EXPECT_THAT(Client::Connect("dns:///localhost:1", {.connect_timeout = absl::Milliseconds(200)}),
              StatusIs(absl::StatusCode::kUnavailable, StartsWith("no gpuflow worker of")));
}

// What a gateway of one's own might be: it holds no session and answers
// every session call FAILED_PRECONDITION naming `owner` in the trailing
// metadata (gpuflowd itself never redirects). It counts the calls it gets.
class Redirector final : public v1::GpuFlow::Service {
 public:
  static std::unique_ptr<Redirector> Start(std::string owner) {
    auto redirector = std::unique_ptr<Redirector>(new Redirector(std::move(owner)));
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &redirector->port_);
    builder.RegisterService(redirector.get());
    redirector->server_ = builder.BuildAndStart();
    return redirector;
  }
  ~Redirector() override { server_->Shutdown(); }

  std::string address() const { return absl::StrCat("ipv4:127.0.0.1:", port_); }
  int calls() const { return calls_.load(); }
  void set_owner(std::string owner) {
    absl::MutexLock lock(&mutex_);
    owner_ = std::move(owner);
  }

  grpc::Status GetServerInfo(grpc::ServerContext*, const v1::GetServerInfoRequest*,
                             v1::ServerInfo* info) override {
    info->set_healthy(true);
    info->mutable_limits()->set_max_chunk_bytes(4096);
    return grpc::Status::OK;
  }
  grpc::Status KeepAlive(grpc::ServerContext* context, const v1::KeepAliveRequest*,
                         v1::SessionInfo*) override {
    return Redirect(context);
  }
  grpc::Status ListArrays(grpc::ServerContext* context, const v1::ListArraysRequest*,
                          v1::ListArraysResponse*) override {
    return Redirect(context);
  }
  grpc::Status Execute(grpc::ServerContext* context, const v1::ExecuteRequest*,
                       v1::ExecuteResponse*) override {
    return Redirect(context);
  }
  grpc::Status UploadArray(grpc::ServerContext* context,
                           grpc::ServerReader<v1::UploadArrayRequest>* reader,
                           v1::ArrayInfo*) override {
    v1::UploadArrayRequest header;
    reader->Read(&header);  // a gateway would route on the header's session id
    return Redirect(context);
  }
  grpc::Status DownloadArray(grpc::ServerContext* context, const v1::DownloadArrayRequest*,
                             grpc::ServerWriter<v1::DownloadArrayResponse>*) override {
    return Redirect(context);
  }

 private:
  explicit Redirector(std::string owner) : owner_(std::move(owner)) {}

  grpc::Status Redirect(grpc::ServerContext* context) {
    ++calls_;
    absl::MutexLock lock(&mutex_);
    context->AddTrailingMetadata(internal::kSessionEndpointKey, owner_);
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("the session is held by ", owner_));
  }

  absl::Mutex mutex_;
  std::string owner_ ABSL_GUARDED_BY(mutex_);
  int port_ = 0;
  std::atomic<int> calls_{0};
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(WorkerPoolTest, SessionCallsFollowAnOwnerRedirectOnce) {
  ASSERT_OK_AND_ASSIGN(Client owner_client, Client::Connect(address(0)));
  ASSERT_OK_AND_ASSIGN(Session owned, owner_client.CreateSession());
  RoundTrip(owned, 3);
  std::unique_ptr<Redirector> redirector = Redirector::Start(address(0));
  ASSERT_OK_AND_ASSIGN(Client via, Client::Connect(redirector->address()));

  // Unary calls: sent again to the owner, and the session stays there.
  Session s = via.OpenSession(owned.id());
  EXPECT_EQ(s.endpoint(), redirector->address());
  ASSERT_OK_AND_ASSIGN(v1::ListArraysResponse list, s.List());
  EXPECT_EQ(list.arrays_size(), 1);
  EXPECT_EQ(s.endpoint(), address(0));
  EXPECT_THAT(s.KeepAlive(), IsOk());
  EXPECT_EQ(redirector->calls(), 1);

  // Uploads and downloads, each on a fresh handle.
  ASSERT_OK_AND_ASSIGN(Array y, Array::FromValues<float>({2}, {5, 6}));
  EXPECT_THAT(via.OpenSession(owned.id()).Upload("y", y), IsOk());
  EXPECT_THAT(via.OpenSession(owned.id()).Download("y"), IsOkAndHolds(y));
  EXPECT_EQ(redirector->calls(), 3);
  EXPECT_THAT(owned.Download("y"), IsOkAndHolds(y));

  // ExecuteAsync hands the redirect back as it came.
  v1::ExecuteRequest request;
  Session async = via.OpenSession(owned.id());
  EXPECT_THAT(async.ExecuteAsync(request).get(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("held by")));
  EXPECT_EQ(async.endpoint(), redirector->address());

  // Once: a redirect to a second redirector that redirects again is the answer.
  std::unique_ptr<Redirector> second = Redirector::Start(redirector->address());
  redirector->set_owner(second->address());
  Session looped = via.OpenSession(owned.id());
  EXPECT_THAT(looped.List(), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("held by")));
  EXPECT_EQ(second->calls(), 1);
  EXPECT_EQ(looped.endpoint(), second->address());
  // A redirect to where the call went is not followed either.
  redirector->set_owner(redirector->address());
  EXPECT_THAT(via.OpenSession(owned.id()).KeepAlive(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(owned.Close(), IsOk());
}

}  // namespace
}  // namespace gpuflow::client

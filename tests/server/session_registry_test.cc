#include "server/session_registry.h"

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "engine/cpu/cpu_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/retry_hint.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

SessionOptions WithLabel(std::string label) {
  SessionOptions options;
  options.label = std::move(label);
  return options;
}
SessionOptions WithLimit(int64_t memory_limit_bytes) {
  SessionOptions options;
  options.memory_limit_bytes = memory_limit_bytes;
  return options;
}
SessionOptions WithTtl(absl::Duration idle_ttl) {
  SessionOptions options;
  options.idle_ttl = idle_ttl;
  return options;
}

// A clock that only moves when told to.
class FakeClock {
 public:
  absl::Time Now() const { return now_; }
  void Advance(absl::Duration d) { now_ += d; }

 private:
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
};

class SessionRegistryTest : public ::testing::Test {
 protected:
  static constexpr int64_t kDefaultLimit = 1000;
  static constexpr int64_t kMaxLimit = 10000;
  static constexpr absl::Duration kDefaultTtl = absl::Seconds(10);
  static constexpr absl::Duration kMaxTtl = absl::Minutes(5);

  SessionRegistryTest() : backend_(CreateCpuBackend()) { MakeRegistry(/*max_sessions=*/4); }

  void MakeRegistry(int max_sessions, std::function<int()> tenant_count = {}) {
    SessionRegistryOptions options;
    options.max_sessions = max_sessions;
    options.tenant_count = std::move(tenant_count);
    options.default_memory_limit_bytes = kDefaultLimit;
    options.max_memory_limit_bytes = kMaxLimit;
    options.default_idle_ttl = kDefaultTtl;
    options.max_idle_ttl = kMaxTtl;
    options.clock = [this] { return clock_.Now(); };
    registry_ = std::make_unique<SessionRegistry>(*backend_, std::move(options));
  }

  // A uint8 array of `bytes` elements whose first byte is `fill`.
  Array MakeArray(int64_t bytes, unsigned char fill = 0) {
    Array array;
    array.dtype = DType::kUInt8;
    array.shape = *Shape::Create({bytes});
    std::unique_ptr<Stream> stream = *backend_->CreateStream();
    std::unique_ptr<DeviceBuffer> buffer = *backend_->Allocate(bytes, *stream);
    if (bytes > 0) {
      EXPECT_THAT(backend_->CopyToDevice(&fill, *buffer, 0, 1, *stream), IsOk());
    }
    array.buffer = std::move(buffer);
    return array;
  }

  unsigned char FirstByte(const Array& array) {
    unsigned char byte = 0;
    std::unique_ptr<Stream> stream = *backend_->CreateStream();
    EXPECT_THAT(backend_->CopyToHost(*array.buffer, 0, 1, &byte, *stream), IsOk());
    return byte;
  }

  // Reserves and publishes a uint8 array of `bytes` bytes.
  absl::Status Put(Session& session, const std::string& name, int64_t bytes,
                   unsigned char fill = 0) {
    Array array = MakeArray(bytes, fill);
    absl::StatusOr<MemoryReservation> reservation =
        session.Reserve(Session::StoredBytes(name, array.shape, bytes));
    if (!reservation.ok()) return reservation.status();
    return session.PutArray(name, std::move(array), *std::move(reservation));
  }

  FakeClock clock_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<SessionRegistry> registry_;
};

// ---------------------------------------------------------------- create

TEST_F(SessionRegistryTest, CreateUsesTheDefaults) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create(WithLabel("job")));
  EXPECT_EQ(session->label(), "job");
  EXPECT_EQ(session->memory_limit_bytes(), kDefaultLimit);
  EXPECT_EQ(session->idle_ttl(), kDefaultTtl);
  EXPECT_EQ(session->memory_used_bytes(), 0);
  EXPECT_EQ(session->num_arrays(), 0);
  EXPECT_FALSE(session->closed());
  EXPECT_EQ(registry_->size(), 1);
}

TEST_F(SessionRegistryTest, CreateTakesRequestedLimits) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session,
                       registry_->Create(SessionOptions{"", kMaxLimit, kMaxTtl}));
  EXPECT_EQ(session->memory_limit_bytes(), kMaxLimit);
  EXPECT_EQ(session->idle_ttl(), kMaxTtl);
}

TEST_F(SessionRegistryTest, IdsAre32LowercaseHexDigitsAndUnique) {
  std::set<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
    ids.insert(session->id());
  }
  for (int i = 0; i < 1000; ++i) ids.insert(NewSessionId());
  EXPECT_EQ(ids.size(), 1004u);
  for (const std::string& id : ids) {
    ASSERT_EQ(id.size(), 32u) << id;
    for (char c : id) {
      ASSERT_TRUE(absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f')) << id;
    }
  }
}

TEST_F(SessionRegistryTest, LabelOver128CharactersIsRejected) {
  EXPECT_THAT(registry_->Create(WithLabel(std::string(128, 'x'))), IsOk());
  EXPECT_THAT(registry_->Create(WithLabel(std::string(129, 'x'))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("128")));
}

TEST_F(SessionRegistryTest, QuotaOverTheMaximumOrNegativeIsRejected) {
  EXPECT_THAT(registry_->Create(WithLimit(kMaxLimit + 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("10001")));
  EXPECT_THAT(registry_->Create(WithLimit(-1)), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(registry_->size(), 0);
}

TEST_F(SessionRegistryTest, TtlOverTheMaximumOrNegativeIsRejected) {
  EXPECT_THAT(registry_->Create(WithTtl(kMaxTtl + absl::Seconds(1))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("TTL")));
  EXPECT_THAT(registry_->Create(WithTtl(-absl::Seconds(1))),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(registry_->size(), 0);
}

TEST_F(SessionRegistryTest, MaxSessionsIsResourceExhausted) {
  MakeRegistry(/*max_sessions=*/2);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> first, registry_->Create({}));
  ASSERT_THAT(registry_->Create({}), IsOk());
  EXPECT_THAT(registry_->Create({}),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("max_sessions")));
  // Closing one makes room again.
  ASSERT_THAT(registry_->Close(first->id()), IsOk());
  EXPECT_THAT(registry_->Create({}), IsOk());
}

TEST_F(SessionRegistryTest, ExpiredSessionsDoNotCountAgainstMaxSessions) {
  MakeRegistry(/*max_sessions=*/1);
  ASSERT_THAT(registry_->Create({}), IsOk());
  clock_.Advance(kDefaultTtl + absl::Seconds(1));
  EXPECT_THAT(registry_->Create({}), IsOk());
  EXPECT_EQ(registry_->size(), 1);
  EXPECT_EQ(registry_->expired_total(), 1);
}

// ---------------------------------------------------------------- get, close

TEST_F(SessionRegistryTest, GetFindsLiveSessions) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  EXPECT_THAT(registry_->Get(session->id()), IsOkAndHolds(session));
  EXPECT_THAT(registry_->Get("0123456789abcdef0123456789abcdef"),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(registry_->Get(""), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(SessionRegistryTest, CloseFreesArraysAndReturnsTheirBytes) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  ASSERT_THAT(Put(*session, "a", 100), IsOk());
  ASSERT_THAT(Put(*session, "b", 23), IsOk());
  EXPECT_THAT(registry_->Close(session->id()), IsOkAndHolds(123));
  EXPECT_TRUE(session->closed());
  EXPECT_EQ(session->num_arrays(), 0);
  EXPECT_EQ(session->memory_used_bytes(), 0);
  EXPECT_EQ(registry_->size(), 0);
  EXPECT_THAT(registry_->Get(session->id()), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(registry_->Close(session->id()), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(SessionRegistryTest, ClosedSessionRefusesReserveAndPutArray) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  ASSERT_OK_AND_ASSIGN(MemoryReservation early,
                       session->Reserve(Session::StoredBytes("x", *Shape::Create({10}), 10)));
  ASSERT_THAT(registry_->Close(session->id()), IsOk());

  EXPECT_THAT(session->Reserve(1), StatusIs(absl::StatusCode::kNotFound, HasSubstr("closed")));
  EXPECT_THAT(session->PutArray("x", MakeArray(10), std::move(early)),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("closed")));
  EXPECT_EQ(session->num_arrays(), 0);
  // The refused reservation gave its bytes back.
  EXPECT_EQ(session->memory_used_bytes(), 0);
}

TEST_F(SessionRegistryTest, ArraysHeldByAReaderSurviveClose) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  ASSERT_THAT(Put(*session, "x", 64, /*fill=*/0x5A), IsOk());
  ASSERT_OK_AND_ASSIGN(Array held, session->GetArray("x"));
  ASSERT_THAT(registry_->Close(session->id()), IsOkAndHolds(64));
  EXPECT_THAT(session->GetArray("x"), StatusIs(absl::StatusCode::kNotFound));
  // The reader's copy still owns the buffer, and it is intact.
  EXPECT_EQ(held.buffer.use_count(), 1);
  EXPECT_EQ(held.buffer->size(), 64);
  EXPECT_EQ(FirstByte(held), 0x5A);
}

TEST_F(SessionRegistryTest, CloseAllClosesEverySession) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> a, registry_->Create({}));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> b, registry_->Create({}));
  ASSERT_THAT(Put(*a, "x", 10), IsOk());
  registry_->CloseAll();
  EXPECT_EQ(registry_->size(), 0);
  EXPECT_TRUE(a->closed());
  EXPECT_TRUE(b->closed());
  EXPECT_EQ(a->memory_used_bytes(), 0);
}

// ---------------------------------------------------------------- expiry

TEST_F(SessionRegistryTest, IdleSessionExpiresAndGetReturnsNotFound) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  ASSERT_THAT(Put(*session, "x", 100), IsOk());
  clock_.Advance(kDefaultTtl);
  ASSERT_THAT(registry_->Get(session->id()), IsOk()) << "idle for exactly the TTL is still alive";
  clock_.Advance(kDefaultTtl + absl::Nanoseconds(1));
  EXPECT_THAT(registry_->Get(session->id()),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(session->id())));
  EXPECT_EQ(registry_->expired_total(), 1);
  EXPECT_EQ(registry_->size(), 0);
  // Found expired, it was freed at once.
  EXPECT_TRUE(session->closed());
  EXPECT_EQ(session->num_arrays(), 0);
  EXPECT_EQ(session->memory_used_bytes(), 0);
  // Asking again neither finds it nor counts it twice.
  EXPECT_THAT(registry_->Get(session->id()), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(registry_->expired_total(), 1);
}

TEST_F(SessionRegistryTest, EachSessionExpiresAfterItsOwnTtl) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> short_lived,
                       registry_->Create(WithTtl(absl::Seconds(1))));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> long_lived,
                       registry_->Create(WithTtl(absl::Minutes(1))));
  clock_.Advance(absl::Seconds(30));
  EXPECT_THAT(registry_->Get(short_lived->id()), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(registry_->Get(long_lived->id()), IsOk());
}

TEST_F(SessionRegistryTest, ExpireIdleFreesOnlyExpiredSessions) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> a, registry_->Create({}));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> b, registry_->Create({}));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> c, registry_->Create(WithTtl(kMaxTtl)));
  ASSERT_THAT(Put(*a, "x", 10), IsOk());
  EXPECT_EQ(registry_->ExpireIdle(), 0);
  clock_.Advance(kDefaultTtl + absl::Seconds(1));
  EXPECT_EQ(registry_->ExpireIdle(), 2);
  EXPECT_EQ(registry_->expired_total(), 2);
  EXPECT_EQ(registry_->size(), 1);
  EXPECT_TRUE(a->closed());
  EXPECT_TRUE(b->closed());
  EXPECT_FALSE(c->closed());
  EXPECT_EQ(a->memory_used_bytes(), 0);
  EXPECT_EQ(registry_->ExpireIdle(), 0);
}

TEST_F(SessionRegistryTest, TouchKeepsASessionAlive) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(kDefaultTtl - absl::Seconds(1));
    registry_->Touch(*session);
    EXPECT_EQ(registry_->ExpireIdle(), 0);
  }
  EXPECT_THAT(registry_->Get(session->id()), IsOk());
}

TEST_F(SessionRegistryTest, GetResetsTheIdleTimer) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(kDefaultTtl - absl::Seconds(1));
    ASSERT_THAT(registry_->Get(session->id()), IsOk());
  }
  clock_.Advance(kDefaultTtl + absl::Seconds(1));
  EXPECT_THAT(registry_->Get(session->id()), StatusIs(absl::StatusCode::kNotFound));
}

// ---------------------------------------------------------------- quota

TEST_F(SessionRegistryTest, ReserveBeyondQuotaIsResourceExhaustedWithSizes) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  ASSERT_OK_AND_ASSIGN(MemoryReservation r, session->Reserve(600));
  EXPECT_EQ(r.bytes(), 600);
  EXPECT_EQ(session->memory_used_bytes(), 600);
  EXPECT_THAT(session->Reserve(401),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("401 bytes requested, 400 of 1000 bytes left")));
  EXPECT_EQ(session->memory_used_bytes(), 600);
  EXPECT_THAT(session->Reserve(400), IsOk());  // Exactly fills the quota, then gives it back.
  EXPECT_EQ(session->memory_used_bytes(), 600);
  EXPECT_THAT(session->Reserve(-1), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(SessionRegistryTest, ReservationIsReleasedOnDestruction) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  {
    ASSERT_OK_AND_ASSIGN(MemoryReservation r, session->Reserve(700));
    EXPECT_EQ(session->memory_used_bytes(), 700);
  }
  EXPECT_EQ(session->memory_used_bytes(), 0);
  EXPECT_THAT(session->Reserve(1000), IsOk());
}

TEST_F(SessionRegistryTest, MovedReservationReleasesOnce) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  ASSERT_OK_AND_ASSIGN(MemoryReservation a, session->Reserve(100));
  ASSERT_OK_AND_ASSIGN(MemoryReservation b, session->Reserve(200));
  MemoryReservation c(std::move(a));
  EXPECT_EQ(c.bytes(), 100);
  EXPECT_EQ(session->memory_used_bytes(), 300);
  c = std::move(b);  // Gives c's 100 back, takes over b's 200.
  EXPECT_EQ(c.bytes(), 200);
  EXPECT_EQ(session->memory_used_bytes(), 200);
  c = MemoryReservation();
  EXPECT_EQ(session->memory_used_bytes(), 0);
}

TEST_F(SessionRegistryTest, PutArrayKeepsOnlyTheArraysBytesOfItsReservation) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  ASSERT_OK_AND_ASSIGN(MemoryReservation r, session->Reserve(500));
  ASSERT_THAT(session->PutArray("x", MakeArray(120), std::move(r)), IsOk());
  EXPECT_EQ(session->memory_used_bytes(), 120);
  EXPECT_EQ(session->num_arrays(), 1);
}

TEST_F(SessionRegistryTest, PutArrayRejectsAReservationThatDoesNotCoverTheArray) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> other, registry_->Create({}));
  ASSERT_OK_AND_ASSIGN(MemoryReservation small, session->Reserve(10));
  EXPECT_THAT(session->PutArray("x", MakeArray(11), std::move(small)),
              StatusIs(absl::StatusCode::kInternal));
  ASSERT_OK_AND_ASSIGN(MemoryReservation foreign, other->Reserve(10));
  EXPECT_THAT(session->PutArray("x", MakeArray(10), std::move(foreign)),
              StatusIs(absl::StatusCode::kInternal));
  EXPECT_EQ(session->num_arrays(), 0);
  EXPECT_EQ(session->memory_used_bytes(), 0);
  EXPECT_EQ(other->memory_used_bytes(), 0);
}

TEST_F(SessionRegistryTest, PutArrayOverwriteReturnsTheOldBytesToTheQuota) {
  // Room for 1000 data bytes and two arrays' metadata ("x" and "y", 1-d).
  const int64_t m = MetadataBytes("x", *Shape::Create({1}));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session,
                       registry_->Create({.label = "", .memory_limit_bytes = 1000 + 2 * m}));
  ASSERT_THAT(Put(*session, "x", 400, /*fill=*/1), IsOk());
  ASSERT_OK_AND_ASSIGN(Array old_reader, session->GetArray("x"));
  // Old and new must fit together while the new one is being written.
  EXPECT_THAT(session->Reserve(601 + m), StatusIs(absl::StatusCode::kResourceExhausted));
  ASSERT_THAT(Put(*session, "x", 600, /*fill=*/2), IsOk());
  EXPECT_EQ(session->memory_used_bytes(), 600);
  EXPECT_EQ(session->num_arrays(), 1);
  ASSERT_OK_AND_ASSIGN(Array current, session->GetArray("x"));
  EXPECT_EQ(current.num_bytes(), 600);
  EXPECT_EQ(FirstByte(current), 2);
  // A reader of the replaced array still has it.
  EXPECT_EQ(old_reader.num_bytes(), 400);
  EXPECT_EQ(FirstByte(old_reader), 1);
  // The freed 400 bytes can be used again.
  EXPECT_THAT(Put(*session, "y", 400), IsOk());
  EXPECT_EQ(session->memory_used_bytes(), 1000);
}

TEST_F(SessionRegistryTest, DeleteArrayFreesItsBytes) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session,
                       registry_->Create({.label = "", .memory_limit_bytes = kMaxLimit}));
  ASSERT_THAT(Put(*session, "x", 300), IsOk());
  ASSERT_THAT(Put(*session, "y", 200), IsOk());
  EXPECT_THAT(session->DeleteArray("x"), IsOkAndHolds(300));
  EXPECT_EQ(session->memory_used_bytes(), 200);
  EXPECT_EQ(session->metadata_bytes(), MetadataBytes("y", *Shape::Create({200})));
  EXPECT_EQ(session->num_arrays(), 1);
  EXPECT_THAT(session->GetArray("x"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no array named 'x'")));
  EXPECT_THAT(session->DeleteArray("x"), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(session->GetArray("y"), IsOk());
}

TEST_F(SessionRegistryTest, ListArraysIsSortedByName) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session,
                       registry_->Create({.label = "", .memory_limit_bytes = kMaxLimit}));
  for (const char* name : {"zeta", "alpha", "Beta", "alpha.2", "10", "9"}) {
    ASSERT_THAT(Put(*session, name, 1), IsOk());
  }
  std::vector<std::string> names;
  for (const ArrayEntry& entry : session->ListArrays()) names.push_back(entry.name);
  EXPECT_THAT(names, ElementsAre("10", "9", "Beta", "alpha", "alpha.2", "zeta"));
}

TEST_F(SessionRegistryTest, EmptyArraysTakeOnlyTheirMetadata) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  const int64_t m = MetadataBytes("empty", *Shape::Create({0}));
  ASSERT_OK_AND_ASSIGN(MemoryReservation r, session->Reserve(m));
  ASSERT_THAT(session->PutArray("empty", MakeArray(0), std::move(r)), IsOk());
  EXPECT_EQ(session->memory_used_bytes(), 0);
  EXPECT_EQ(session->metadata_bytes(), m);
  EXPECT_EQ(session->num_arrays(), 1);
}

// Regression: 100 arrays of rank 500,001 took 462 MiB while the quota showed
// 101 bytes. Names and shapes now count.
TEST_F(SessionRegistryTest, MetadataCountsAgainstTheQuota) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  int stored = 0;
  while (Put(*session, absl::StrCat("a", stored), 0).ok()) ++stored;
  // 1000 bytes hold only a few arrays, however small.
  EXPECT_GE(stored, 2);
  EXPECT_LE(stored, 1000 / 256);
  EXPECT_THAT(Put(*session, "one_more", 0),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("in array metadata")));
  EXPECT_LE(session->memory_used_bytes() + session->metadata_bytes(), 1000);
  for (int i = 0; i < stored; ++i) ASSERT_THAT(session->DeleteArray(absl::StrCat("a", i)), IsOk());
  EXPECT_EQ(session->metadata_bytes(), 0);
}

TEST_F(SessionRegistryTest, ASessionHoldsAtMostMaxArrays) {
  SessionRegistryOptions options = registry_->options();
  options.max_arrays_per_session = 3;
  SessionRegistry registry(*backend_, options);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session,
                       registry.Create({.label = "", .memory_limit_bytes = kMaxLimit}));
  for (int i = 0; i < 3; ++i) ASSERT_THAT(Put(*session, absl::StrCat("a", i), 1), IsOk());
  EXPECT_THAT(Put(*session, "a3", 1),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("3 arrays")));
  // Replacing one is fine, and the refused one gave its reservation back.
  EXPECT_THAT(Put(*session, "a0", 2), IsOk());
  EXPECT_EQ(session->memory_used_bytes(), 4);
}

TEST_F(SessionRegistryTest, EverySessionDrawsFromTheServerWideBudget) {
  SessionRegistryOptions options = registry_->options();
  options.max_total_bytes = 1500;
  SessionRegistry registry(*backend_, options);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> a, registry.Create({}));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> b, registry.Create({}));
  ASSERT_OK_AND_ASSIGN(MemoryReservation ra, a->Reserve(900));
  // b's own quota (1000) would hold it, the server's budget does not.
  EXPECT_THAT(b->Reserve(700), StatusIs(absl::StatusCode::kResourceExhausted,
                                        HasSubstr("700 bytes requested, 600 of 1500 bytes left")));
  EXPECT_THAT(b->Charge(600), IsOk());
  EXPECT_EQ(registry.budget().used(), 1500);
  b->Uncharge(600);
  ra = MemoryReservation();
  EXPECT_EQ(registry.budget().used(), 0);
  // Arrays and their metadata come back to the budget when the session closes.
  ASSERT_THAT(Put(*a, "x", 100), IsOk());
  EXPECT_GT(registry.budget().used(), 100);
  ASSERT_THAT(registry.Close(a->id()), IsOk());
  EXPECT_EQ(registry.budget().used(), 0);
}

TEST_F(SessionRegistryTest, CloseRunsTheCloseHooksOnce) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  int ran = 0;
  int removed = 0;
  Session::CloseHook hook = session->OnClose([&] { ++ran; });
  {
    Session::CloseHook gone = session->OnClose([&] { ++removed; });
  }  // unregistered: never runs
  ASSERT_THAT(registry_->Close(session->id()), IsOk());
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(removed, 0);
  // A hook registered after the close runs at once.
  Session::CloseHook late = session->OnClose([&] { ++ran; });
  EXPECT_EQ(ran, 2);
}

// Regression (seen in the CUDA soak): a session whose Execute compiled for
// longer than its idle TTL expired under the running request.
TEST_F(SessionRegistryTest, ARunningRequestKeepsItsSessionFromExpiring) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  {
    Session::RequestScope running = registry_->BeginRequest(session);
    clock_.Advance(kDefaultTtl * 3);
    EXPECT_EQ(registry_->ExpireIdle(), 0);
    EXPECT_THAT(registry_->Get(session->id()), IsOk());
    clock_.Advance(kDefaultTtl * 3);
  }
  // Idle time counts from the end of the request.
  clock_.Advance(kDefaultTtl - absl::Seconds(1));
  EXPECT_EQ(registry_->ExpireIdle(), 0);
  clock_.Advance(absl::Seconds(2));
  EXPECT_EQ(registry_->ExpireIdle(), 1);
}

TEST_F(SessionRegistryTest, ExpiryRunsTheCloseHooks) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  bool cancelled = false;
  Session::CloseHook hook = session->OnClose([&] { cancelled = true; });
  clock_.Advance(kDefaultTtl + absl::Seconds(1));
  EXPECT_EQ(registry_->ExpireIdle(), 1);
  EXPECT_TRUE(cancelled);
}

TEST_F(SessionRegistryTest, ConcurrentReservationsNeverExceedTheQuota) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create({}));
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&session] {
      for (int i = 0; i < 2000; ++i) {
        absl::StatusOr<MemoryReservation> r = session->Reserve(300);
        if (r.ok()) {
          EXPECT_LE(session->memory_used_bytes(), kDefaultLimit);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(session->memory_used_bytes(), 0);
}

// ---- tenants

SessionOptions OfTenant(std::shared_ptr<Tenant> tenant) {
  SessionOptions options;
  options.tenant = std::move(tenant);
  return options;
}

TEST_F(SessionRegistryTest, ASessionIsFoundOnlyByItsOwnTenant) {
  auto a = std::make_shared<Tenant>("a", TenantLimits{});
  auto b = std::make_shared<Tenant>("b", TenantLimits{});
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create(OfTenant(a)));
  EXPECT_EQ(session->owner(), a);
  const std::string unknown(32, '0');
  // B gets exactly what an unknown id gets.
  absl::Status theirs = registry_->Get(session->id(), b.get()).status();
  absl::Status nobodys = registry_->Get(unknown, b.get()).status();
  EXPECT_THAT(theirs, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(
      std::string(theirs.message()).replace(theirs.message().find(session->id()), 32, unknown),
      nobodys.message());
  EXPECT_THAT(registry_->Get(session->id()).status(), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(registry_->Peek(session->id(), b.get()), nullptr);
  EXPECT_THAT(registry_->Close(session->id(), b.get()), StatusIs(absl::StatusCode::kNotFound));
  // Still there, for A.
  EXPECT_FALSE(session->closed());
  EXPECT_THAT(registry_->Get(session->id(), a.get()), IsOkAndHolds(session));
  EXPECT_EQ(registry_->Peek(session->id(), a.get()), session);
  EXPECT_THAT(registry_->Close(session->id(), a.get()), IsOk());
}

TEST_F(SessionRegistryTest, AnotherTenantsLookupDoesNotTouchTheSession) {
  auto a = std::make_shared<Tenant>("a", TenantLimits{});
  auto b = std::make_shared<Tenant>("b", TenantLimits{});
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create(OfTenant(a)));
  // B keeps asking: A's session still expires on time.
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(kDefaultTtl / 2);
    EXPECT_THAT(registry_->Get(session->id(), b.get()).status(),
                StatusIs(absl::StatusCode::kNotFound));
  }
  EXPECT_EQ(registry_->ExpireIdle(), 1);
}

TEST_F(SessionRegistryTest, TenantMaxSessionsLeavesRoomForOthers) {
  MakeRegistry(/*max_sessions=*/4);
  auto a = std::make_shared<Tenant>("a", TenantLimits{.max_sessions = 2});
  auto b = std::make_shared<Tenant>("b", TenantLimits{});
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> a1, registry_->Create(OfTenant(a)));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> a2, registry_->Create(OfTenant(a)));
  absl::StatusOr<std::shared_ptr<Session>> a3 = registry_->Create(OfTenant(a));
  EXPECT_THAT(a3.status(), StatusIs(absl::StatusCode::kResourceExhausted,
                                    HasSubstr("tenant a has 2 open, its max_sessions")));
  EXPECT_EQ(RetryAfter(a3.status()), absl::Seconds(1));
  EXPECT_EQ(registry_->sessions_of(a.get()), 2);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> b1, registry_->Create(OfTenant(b)));
  EXPECT_EQ(registry_->sessions_of(b.get()), 1);
  // Closing and expiring give the tenant its room back.
  EXPECT_THAT(registry_->Close(a1->id(), a.get()), IsOk());
  EXPECT_EQ(registry_->sessions_of(a.get()), 1);
  EXPECT_THAT(registry_->Create(OfTenant(a)), IsOk());
  clock_.Advance(kDefaultTtl + absl::Seconds(1));
  EXPECT_EQ(registry_->ExpireIdle(), 3);
  EXPECT_EQ(registry_->sessions_of(a.get()), 0);
  EXPECT_EQ(registry_->sessions_of(b.get()), 0);
}

// Regression (issue 14): one client opened all 64 sessions and locked
// everyone else out. Without a max_sessions of its own, a tenant still cannot
// take the last free sessions while other tenants hold none.
TEST_F(SessionRegistryTest, TheLastFreeSessionsWaitForTenantsThatHoldNone) {
  int tenants = 3;
  MakeRegistry(/*max_sessions=*/4, [&tenants] { return tenants; });
  auto a = std::make_shared<Tenant>("a", TenantLimits{});
  auto b = std::make_shared<Tenant>("b", TenantLimits{});
  auto c = std::make_shared<Tenant>("c", TenantLimits{});
  ASSERT_THAT(registry_->Create(OfTenant(a)), IsOk());  // 3 free, b and c hold none
  ASSERT_THAT(registry_->Create(OfTenant(a)), IsOk());  // 2 free
  absl::StatusOr<std::shared_ptr<Session>> a3 = registry_->Create(OfTenant(a));
  EXPECT_THAT(a3.status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("keeps its last free sessions for tenants that hold none")));
  EXPECT_EQ(RetryAfter(a3.status()), absl::Seconds(1));
  // A first session is always had while any is free.
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> b1, registry_->Create(OfTenant(b)));
  EXPECT_THAT(registry_->Create(OfTenant(a)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted));  // 1 free, kept for c
  EXPECT_THAT(registry_->Create(OfTenant(b)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted));
  ASSERT_THAT(registry_->Create(OfTenant(c)), IsOk());  // the server is full
  EXPECT_THAT(registry_->Create(OfTenant(c)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("--max_sessions")));
  // With every tenant holding one, the rest go to whoever asks first.
  EXPECT_THAT(registry_->Close(b1->id(), b.get()), IsOk());
  tenants = 2;  // a reload removed c's entry... and c's sessions stay counted until closed
  EXPECT_THAT(registry_->Create(OfTenant(a)), IsOk());
  EXPECT_EQ(registry_->sessions_of(a.get()), 3);
}

TEST_F(SessionRegistryTest, WithoutTenantsNoSessionIsKeptBack) {
  MakeRegistry(/*max_sessions=*/2, [] { return 0; });
  for (int i = 0; i < 2; ++i) ASSERT_THAT(registry_->Create(SessionOptions{}), IsOk());
  auto only = std::make_shared<Tenant>("only", TenantLimits{});
  MakeRegistry(/*max_sessions=*/2, [] { return 1; });
  for (int i = 0; i < 2; ++i) ASSERT_THAT(registry_->Create(OfTenant(only)), IsOk());
}

TEST_F(SessionRegistryTest, TenantLimitLoweredByAReloadAppliesToNewSessions) {
  auto a = std::make_shared<Tenant>("a", TenantLimits{.max_sessions = 3});
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> a1, registry_->Create(OfTenant(a)));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> a2, registry_->Create(OfTenant(a)));
  a->set_limits({.max_sessions = 1});
  EXPECT_THAT(registry_->Create(OfTenant(a)).status(),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_FALSE(a1->closed());  // what it holds stays
}

TEST_F(SessionRegistryTest, TenantMemoryCoversAllItsSessions) {
  auto a = std::make_shared<Tenant>("a", TenantLimits{.max_memory_bytes = 1500});
  auto b = std::make_shared<Tenant>("b", TenantLimits{});
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> a1, registry_->Create(OfTenant(a)));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> a2, registry_->Create(OfTenant(a)));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> b1, registry_->Create(OfTenant(b)));
  ASSERT_OK_AND_ASSIGN(MemoryReservation r1, a1->Reserve(900));
  // a2's own quota (1000) holds 700; the tenant's 1500 does not.
  absl::StatusOr<MemoryReservation> r2 = a2->Reserve(700);
  EXPECT_THAT(r2.status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("tenant a memory exhausted (its max_memory_bytes): 700 bytes "
                                 "requested, 600 of 1500 bytes left")));
  EXPECT_EQ(RetryAfter(r2.status()), absl::Seconds(1));
  EXPECT_THAT(a2->Charge(600), IsOk());
  EXPECT_EQ(a->memory().used(), 1500);
  // B is not held back by A, and its use is its own.
  EXPECT_THAT(b1->Reserve(900), IsOk());
  EXPECT_EQ(b->memory().used(), 0);  // the reservation above is already given back
  a2->Uncharge(600);
  r1 = MemoryReservation();
  EXPECT_EQ(a->memory().used(), 0);
  EXPECT_EQ(registry_->budget().used(), 0);
}

TEST_F(SessionRegistryTest, ARefusalOfTheServersBudgetGivesTheTenantsBytesBack) {
  SessionRegistryOptions options = registry_->options();
  options.max_total_bytes = 500;
  SessionRegistry registry(*backend_, options);
  auto a = std::make_shared<Tenant>("a", TenantLimits{.max_memory_bytes = 800});
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry.Create(OfTenant(a)));
  EXPECT_THAT(session->Reserve(600).status(),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("--max_memory_bytes")));
  EXPECT_EQ(a->memory().used(), 0);
  EXPECT_EQ(registry.budget().used(), 0);
}

TEST_F(SessionRegistryTest, StoredArraysCountAgainstTheTenantUntilDeletedOrClosed) {
  auto a = std::make_shared<Tenant>("a", TenantLimits{.max_memory_bytes = 5000});
  SessionOptions options = OfTenant(a);
  options.memory_limit_bytes = kMaxLimit;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry_->Create(options));
  ASSERT_THAT(Put(*session, "x", 100), IsOk());
  ASSERT_THAT(Put(*session, "y", 200), IsOk());
  const int64_t held = a->memory().used();
  EXPECT_EQ(held, session->memory_used_bytes() + session->metadata_bytes());
  ASSERT_THAT(Put(*session, "x", 50), IsOk());  // replaced
  EXPECT_EQ(a->memory().used(), held - 50);
  ASSERT_THAT(session->DeleteArray("y"), IsOk());
  EXPECT_EQ(a->memory().used(), session->memory_used_bytes() + session->metadata_bytes());
  EXPECT_THAT(registry_->Close(session->id(), a.get()), IsOk());
  EXPECT_EQ(a->memory().used(), 0);
}

TEST_F(SessionRegistryTest, CloseTenantClosesItsSessionsOnly) {
  auto a = std::make_shared<Tenant>("a", TenantLimits{});
  auto b = std::make_shared<Tenant>("b", TenantLimits{});
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> a1, registry_->Create(OfTenant(a)));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> a2, registry_->Create(OfTenant(a)));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> b1, registry_->Create(OfTenant(b)));
  EXPECT_EQ(registry_->CloseTenant(a.get()), 2);
  EXPECT_TRUE(a1->closed() && a2->closed());
  EXPECT_FALSE(b1->closed());
  EXPECT_EQ(registry_->size(), 1);
  EXPECT_EQ(registry_->sessions_of(a.get()), 0);
}

TEST_F(SessionRegistryTest, HiddenTotalsLeaveOutWhatOthersHold) {
  SessionRegistryOptions options = registry_->options();
  options.max_sessions = 1;
  options.max_total_bytes = 500;
  options.hide_totals = true;
  SessionRegistry registry(*backend_, options);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Session> session, registry.Create({}));
  absl::Status sessions = registry.Create({}).status();
  EXPECT_THAT(sessions,
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("--max_sessions")));
  EXPECT_THAT(sessions.message(), Not(HasSubstr("1 are open")));
  absl::Status memory = session->Reserve(600).status();
  EXPECT_THAT(memory,
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("--max_memory_bytes")));
  EXPECT_THAT(memory.message(), Not(HasSubstr("left")));
  EXPECT_EQ(RetryAfter(memory), absl::Seconds(1));
}

}  // namespace
}  // namespace gpuflow::server

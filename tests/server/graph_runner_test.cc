// GraphRunner::Benchmark against a FakeBackend that counts, slows down and
// times its runs, so warm-up and repeat counts and max_duration are checked
// exactly (the Python suite checks the same call end to end).
#include "server/graph_runner.h"

#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/ir/shape.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/proto_convert.h"
#include "server/session_registry.h"
#include "tests/server/fake_backend.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::FakeBackend;
using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::Each;
using ::testing::Gt;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class BenchmarkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<Session>> session = sessions_.Create({.label = "bench"});
    ASSERT_THAT(session, IsOk());
    session_ = *std::move(session);
    absl::StatusOr<MemoryReservation> reservation = session_->Reserve(32);
    ASSERT_THAT(reservation, IsOk());
    Array x;
    x.dtype = DType::kFloat32;
    x.shape = *Shape::Create({8});
    x.buffer = *backend_.Allocate(32, session_->stream());
    ASSERT_THAT(session_->PutArray("x", std::move(x), *std::move(reservation)), IsOk());
    v1::Node* node = request_.mutable_graph()->add_nodes();
    node->set_id("y");
    node->set_op("exp");
    node->add_inputs()->set_array("x");
    request_.set_session_id(session_->id());
  }

  FakeBackend backend_;
  SessionRegistry sessions_{backend_, {}};
  PlanCache plans_{PlanOptions{}};
  GraphRunner runner_{backend_, plans_, GraphLimits{.max_benchmark_duration = absl::Seconds(1)}};
  std::shared_ptr<Session> session_;
  v1::BenchmarkRequest request_;
};

TEST_F(BenchmarkTest, RunsWarmupThenExactlyNRepeat) {
  request_.set_n_warmup(3);
  request_.set_n_repeat(7);
  request_.set_name("exp");
  v1::BenchmarkResponse response;
  ASSERT_THAT(runner_.Benchmark(*session_, request_, &response), IsOk());
  EXPECT_EQ(backend_.runs(), 10);
  EXPECT_EQ(response.name(), "exp");
  EXPECT_THAT(response.cpu_seconds(), SizeIs(7));
  EXPECT_THAT(response.cpu_seconds(), Each(Gt(0)));
  // The first (warm-up) run's timings come back too.
  EXPECT_TRUE(response.has_first_run());
}

TEST_F(BenchmarkTest, NoWarmupTimesEveryRun) {
  request_.set_n_warmup(0);
  request_.set_n_repeat(4);
  v1::BenchmarkResponse response;
  ASSERT_THAT(runner_.Benchmark(*session_, request_, &response), IsOk());
  EXPECT_EQ(backend_.runs(), 4);
  EXPECT_THAT(response.cpu_seconds(), SizeIs(4));
  EXPECT_EQ(response.name(), "graph");
}

TEST_F(BenchmarkTest, GpuTimeIsAbsentNotZeroWithoutADevice) {
  request_.set_n_warmup(1);
  request_.set_n_repeat(5);
  v1::BenchmarkResponse response;
  ASSERT_THAT(runner_.Benchmark(*session_, request_, &response), IsOk());
  EXPECT_THAT(response.gpu_seconds(), IsEmpty());
  EXPECT_FALSE(response.first_run().has_gpu_seconds());
}

TEST_F(BenchmarkTest, GpuTimeOfEveryRepeatWhenTheBackendMeasuresIt) {
  backend_.set_gpu_seconds(0.25);
  request_.set_n_warmup(2);
  request_.set_n_repeat(5);
  v1::BenchmarkResponse response;
  ASSERT_THAT(runner_.Benchmark(*session_, request_, &response), IsOk());
  EXPECT_THAT(response.gpu_seconds(), SizeIs(5));
  EXPECT_THAT(response.gpu_seconds(), Each(0.25));
}

TEST_F(BenchmarkTest, StopsRepeatingAtMaxDuration) {
  backend_.set_run_delay(absl::Milliseconds(20));
  request_.set_n_warmup(2);
  request_.set_n_repeat(1000000);
  *request_.mutable_max_duration() = [] {
    google::protobuf::Duration d;
    d.set_nanos(200'000'000);
    return d;
  }();
  v1::BenchmarkResponse response;
  const absl::Time start = absl::Now();
  ASSERT_THAT(runner_.Benchmark(*session_, request_, &response), IsOk());
  const absl::Duration took = absl::Now() - start;
  // 2 warm-up runs (not counted against max_duration), then repeats of at
  // least 20 ms until 200 ms have passed: at most 10, and the last one may
  // start just before the deadline.
  EXPECT_GE(response.cpu_seconds_size(), 2);
  EXPECT_LE(response.cpu_seconds_size(), 10);
  EXPECT_EQ(backend_.runs(), 2 + response.cpu_seconds_size());
  EXPECT_LT(took, absl::Milliseconds(40 + 200 + 20 + 200));  // slack for a slow machine
}

TEST_F(BenchmarkTest, MaxDurationIsCappedByTheServer) {
  backend_.set_run_delay(absl::Milliseconds(50));
  request_.set_n_warmup(0);
  request_.set_n_repeat(1000000);
  request_.mutable_max_duration()->set_seconds(3600);  // the runner caps it at 1 s
  v1::BenchmarkResponse response;
  ASSERT_THAT(runner_.Benchmark(*session_, request_, &response), IsOk());
  EXPECT_LE(response.cpu_seconds_size(), 21);
}

TEST_F(BenchmarkTest, RejectsBadCounts) {
  v1::BenchmarkResponse response;
  request_.set_n_repeat(0);
  EXPECT_THAT(runner_.Benchmark(*session_, request_, &response),
              StatusIs(absl::StatusCode::kInvalidArgument));
  request_.set_n_repeat(1);
  request_.set_n_warmup(-1);
  EXPECT_THAT(runner_.Benchmark(*session_, request_, &response),
              StatusIs(absl::StatusCode::kInvalidArgument));
  request_.set_n_warmup(0);
  request_.mutable_max_duration()->set_seconds(-1);
  EXPECT_THAT(runner_.Benchmark(*session_, request_, &response),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(backend_.runs(), 0);
}

}  // namespace
}  // namespace gpuflow::server

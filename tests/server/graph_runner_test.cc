// GraphRunner::Benchmark against a FakeBackend that counts, slows down and
// times its runs, so warm-up and repeat counts and max_duration are checked
// exactly (the Python suite checks the same call end to end).
#include "server/graph_runner.h"

#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
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
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class BenchmarkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<Session>> session = sessions_.Create({.label = "bench"});
    ASSERT_THAT(session, IsOk());
    session_ = *std::move(session);
    absl::StatusOr<MemoryReservation> reservation =
        session_->Reserve(Session::StoredBytes("x", *Shape::Create({8}), 32));
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
  request_.set_n_repeat(100000);
  *request_.mutable_max_duration() = [] {
    google::protobuf::Duration d;
    d.set_nanos(200'000'000);
    return d;
  }();
  v1::BenchmarkResponse response;
  const absl::Time start = absl::Now();
  ASSERT_THAT(runner_.Benchmark(*session_, request_, &response), IsOk());
  const absl::Duration took = absl::Now() - start;
  // 2 warm-up runs (inside max_duration), then repeats of at least 20 ms
  // until 200 ms have passed: at most 9, and the last one may start just
  // before the deadline.
  EXPECT_GE(response.cpu_seconds_size(), 2);
  EXPECT_LE(response.cpu_seconds_size(), 9);
  EXPECT_EQ(backend_.runs(), 2 + response.cpu_seconds_size());
  EXPECT_LT(took, absl::Milliseconds(40 + 200 + 20 + 200));  // slack for a slow machine
}

TEST_F(BenchmarkTest, MaxDurationIsCappedByTheServer) {
  backend_.set_run_delay(absl::Milliseconds(50));
  request_.set_n_warmup(0);
  request_.set_n_repeat(100000);
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

// Regression: Benchmark(n_warmup=2^31-1) warmed up for hours, holding a
// compute thread whatever max_duration said.
TEST_F(BenchmarkTest, WarmupCountsInsideMaxDuration) {
  backend_.set_run_delay(absl::Milliseconds(20));
  request_.set_n_warmup(2147483647);
  request_.set_n_repeat(10);
  request_.mutable_max_duration()->set_nanos(200'000'000);
  v1::BenchmarkResponse response;
  const absl::Time start = absl::Now();
  ASSERT_THAT(runner_.Benchmark(*session_, request_, &response), IsOk());
  // Warm-up stops at the deadline; one timed run follows.
  EXPECT_THAT(response.cpu_seconds(), SizeIs(1));
  EXPECT_LE(backend_.runs(), 12);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

// Regression: a huge repeat count ran for the whole duration and then failed
// because the reply was too large to send.
TEST_F(BenchmarkTest, RejectsMoreRepeatsThanTheLimit) {
  request_.set_n_repeat(100001);
  v1::BenchmarkResponse response;
  EXPECT_THAT(runner_.Benchmark(*session_, request_, &response),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("100000")));
  EXPECT_EQ(backend_.runs(), 0);
}

// A control that says stop after `allowed` checks, and charges a budget.
class TestControl final : public RunControl {
 public:
  explicit TestControl(int allowed, int64_t budget = int64_t{1} << 40)
      : allowed_(allowed), budget_(budget) {}
  absl::Status CheckContinue() override {
    ++checks_;
    if (checks_ > allowed_) return absl::CancelledError("test says stop");
    return absl::OkStatus();
  }
  absl::Status Acquire(int64_t bytes) override {
    if (bytes > budget_ - charged_) return absl::ResourceExhaustedError("test budget");
    charged_ += bytes;
    peak_ = std::max(peak_, charged_);
    return absl::OkStatus();
  }
  void Release(int64_t bytes) override { charged_ -= bytes; }
  int checks() const { return checks_; }
  int64_t charged() const { return charged_; }
  int64_t peak() const { return peak_; }

 private:
  const int allowed_;
  const int64_t budget_;
  int checks_ = 0;
  int64_t charged_ = 0;
  int64_t peak_ = 0;
};

TEST_F(BenchmarkTest, StopsBetweenRunsWhenTheControlSaysStop) {
  request_.set_n_warmup(5);
  request_.set_n_repeat(1000);
  TestControl control(/*allowed=*/6);
  v1::BenchmarkResponse response;
  EXPECT_THAT(runner_.Benchmark(*session_, request_, &response, &control),
              StatusIs(absl::StatusCode::kCancelled));
  EXPECT_LT(backend_.runs(), 10);
}

// Execute against the CPU reference (through the fake, which counts runs).
class ExecuteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<Session>> session =
        sessions_.Create({.label = "exec", .memory_limit_bytes = int64_t{1} << 20});
    ASSERT_THAT(session, IsOk());
    session_ = *std::move(session);
    request_.set_session_id(session_->id());
  }

  // y = exp(x) chained `n` times on a full((elements,), 1.0) float32.
  void ChainGraph(int64_t elements, int n) {
    v1::Graph* graph = request_.mutable_graph();
    v1::Node* full = graph->add_nodes();
    full->set_id("n0");
    full->set_op("full");
    full->add_inputs()->mutable_scalar()->set_float_value(1.0);
    (*full->mutable_attrs())["shape"].mutable_ints()->add_values(elements);
    (*full->mutable_attrs())["dtype"].set_dtype_value(v1::DTYPE_FLOAT32);
    for (int i = 1; i <= n; ++i) {
      v1::Node* node = graph->add_nodes();
      node->set_id(absl::StrCat("n", i));
      node->set_op(i % 2 == 0 ? "sum" : "exp");
      node->add_inputs()->set_node(absl::StrCat("n", i - 1));
      if (i % 2 == 0) {
        (*node->mutable_attrs())["keepdims"].set_bool_value(true);
        (*node->mutable_attrs())["axes"].mutable_ints()->add_values(0);
      }
    }
  }

  v1::OutputSpec* Output(const std::string& node) {
    v1::OutputSpec* spec = request_.add_outputs();
    spec->set_node(node);
    return spec;
  }

  FakeBackend backend_;
  SessionRegistry sessions_{backend_, {}};
  PlanCache plans_{PlanOptions{}};
  GraphRunner runner_{backend_, plans_,
                      GraphLimits{.max_array_bytes = 4096, .max_reply_bytes = 64 * 1024}};
  std::shared_ptr<Session> session_;
  v1::ExecuteRequest request_;
};

TEST_F(ExecuteTest, StopsBetweenStepsWhenTheControlSaysStop) {
  ChainGraph(16, 8);
  Output("n8")->set_return_inline(true);
  TestControl control(/*allowed=*/2);
  v1::ExecuteResponse response;
  EXPECT_THAT(runner_.Execute(*session_, request_, &response, &control),
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("test says stop")));
  EXPECT_EQ(control.checks(), 3);
  EXPECT_EQ(session_->memory_used_bytes(), 0);
}

// Regression: a 16 MiB-quota session grew the server by 1 GiB through one
// Execute's intermediates.
TEST_F(ExecuteTest, IntermediatesCountAgainstTheControlsBudget) {
  // full(2^20 float32) = 4 MiB, then exp of it, then a sum to one element.
  ChainGraph(int64_t{1} << 20, 2);
  Output("n2")->set_return_inline(true);
  TestControl small(/*allowed=*/100, /*budget=*/int64_t{6} << 20);
  v1::ExecuteResponse response;
  EXPECT_THAT(runner_.Execute(*session_, request_, &response, &small),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("intermediate")));
  EXPECT_EQ(small.charged(), 0);
  TestControl enough(/*allowed=*/100, /*budget=*/int64_t{8} << 20);
  response.Clear();
  ASSERT_THAT(runner_.Execute(*session_, request_, &response, &enough), IsOk());
  // Both 4 MiB intermediates were live at once (exp reads full), and every
  // byte was given back.
  EXPECT_EQ(enough.peak(), int64_t{8} << 20);
  EXPECT_EQ(enough.charged(), 0);
}

TEST_F(ExecuteTest, StoredOutputsObeyMaxArrayBytes) {
  ChainGraph(2048, 1);  // 8 KiB, over the 4 KiB limit
  Output("n1")->set_store_as("big");
  v1::ExecuteResponse response;
  EXPECT_THAT(runner_.Execute(*session_, request_, &response),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("--max_array_bytes")));
  EXPECT_EQ(backend_.runs(), 0);
  EXPECT_EQ(session_->num_arrays(), 0);
}

// Regression: an Execute whose reply was too large stored its outputs and
// then failed.
TEST_F(ExecuteTest, AReplyOverTheLimitFailsBeforeAnythingRunsOrIsStored) {
  ChainGraph(1000, 1);
  Output("n1")->set_store_as("kept");
  for (int i = 0; i < 20; ++i) Output("n1")->set_return_inline(true);  // 20 x 4000 bytes
  v1::ExecuteResponse response;
  EXPECT_THAT(runner_.Execute(*session_, request_, &response),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("message limit")));
  EXPECT_EQ(backend_.runs(), 0);
  EXPECT_EQ(session_->num_arrays(), 0);
  EXPECT_EQ(session_->memory_used_bytes(), 0);
}

// Isolation (issue 15): short work goes on the session's priority stream,
// after the session's own queued work; long work stays on its stream.
TEST_F(ExecuteTest, ShortWorkRunsOnThePriorityStreamAfterTheSessionsOwnWork) {
  ChainGraph(16, 2);
  Output("n2")->set_return_inline(true);
  v1::ExecuteResponse response;
  ASSERT_THAT(runner_.Execute(*session_, request_, &response), IsOk());
  EXPECT_TRUE(backend_.last_run_on_priority_stream());
  EXPECT_EQ(backend_.priority_orderings(), 1);
}

TEST_F(ExecuteTest, LongWorkStaysOnTheSessionsStream) {
  // 64 MiB of full and 64 MiB of exp: past the 64 MiB of short work.
  ChainGraph(int64_t{1} << 24, 2);
  Output("n2")->set_return_inline(true);
  v1::ExecuteResponse response;
  ASSERT_THAT(runner_.Execute(*session_, request_, &response), IsOk());
  EXPECT_FALSE(backend_.last_run_on_priority_stream());
  EXPECT_EQ(backend_.priority_orderings(), 0);
}

TEST_F(ExecuteTest, StoredOutputsChargeTheirMetadata) {
  ChainGraph(10, 1);
  Output("n1")->set_store_as("y");
  v1::ExecuteResponse response;
  ASSERT_THAT(runner_.Execute(*session_, request_, &response), IsOk());
  EXPECT_EQ(session_->memory_used_bytes(), 40);
  EXPECT_EQ(session_->metadata_bytes(), MetadataBytes("y", *Shape::Create({10})));
}

// Regression: 300k outputs in one request took 17 s (a linear lookup each).
TEST_F(ExecuteTest, ManyOutputsAreFoundInConstantTime) {
  ChainGraph(4, 1);
  for (int i = 0; i < 300000; ++i) Output(i % 2 == 0 ? "n1" : "n0")->set_return_inline(true);
  GraphRunner runner{backend_, plans_, GraphLimits{.max_reply_bytes = int64_t{1} << 30}};
  v1::ExecuteResponse response;
  const absl::Time start = absl::Now();
  ASSERT_THAT(runner.Execute(*session_, request_, &response), IsOk());
  EXPECT_EQ(response.outputs_size(), 300000);
  // Not a timing assertion: quadratic lookups would take minutes here.
  EXPECT_LT(absl::Now() - start, absl::Seconds(60));
}

}  // namespace
}  // namespace gpuflow::server

// The request cache of GraphRunner::Execute (issue 15): a repeated request
// reuses its validated graph and plan, but only while every array it names
// keeps its dtype and shape, only for the same outputs and the same caller
// permissions, and always computes from the arrays' current contents. Run
// on the CPU backend, so every answer is checked.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/ir/shape.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/graph_runner.h"
#include "server/session_registry.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

class RequestCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<Session>> session = sessions_.Create({.label = "cache"});
    ASSERT_THAT(session, IsOk());
    session_ = *std::move(session);
    request_.set_session_id(session_->id());
    // y = x * 2 + 1, returned inline.
    v1::Node* mul = request_.mutable_graph()->add_nodes();
    mul->set_id("m");
    mul->set_op("mul");
    mul->add_inputs()->set_array("x");
    mul->add_inputs()->mutable_scalar()->set_float_value(2.0);
    v1::Node* add = request_.mutable_graph()->add_nodes();
    add->set_id("y");
    add->set_op("add");
    add->add_inputs()->set_node("m");
    add->add_inputs()->mutable_scalar()->set_float_value(1.0);
    v1::OutputSpec* out = request_.add_outputs();
    out->set_node("y");
    out->set_return_inline(true);
  }

  template <typename T>
  void Put(const std::string& name, DType dtype, const std::vector<T>& values) {
    const int64_t bytes = static_cast<int64_t>(values.size() * sizeof(T));
    const Shape shape = *Shape::Create({static_cast<int64_t>(values.size())});
    absl::StatusOr<MemoryReservation> reservation =
        session_->Reserve(Session::StoredBytes(name, shape, bytes));
    ASSERT_THAT(reservation, IsOk());
    absl::StatusOr<std::unique_ptr<DeviceBuffer>> buffer =
        backend_->Allocate(bytes, session_->stream());
    ASSERT_THAT(buffer, IsOk());
    ASSERT_THAT(backend_->CopyToDevice(values.data(), **buffer, 0, bytes, session_->stream()),
                IsOk());
    Array array;
    array.dtype = dtype;
    array.shape = shape;
    array.buffer = *std::move(buffer);
    ASSERT_THAT(session_->PutArray(name, std::move(array), *std::move(reservation)), IsOk());
  }
  void PutFloats(const std::string& name, const std::vector<float>& values) {
    Put(name, DType::kFloat32, values);
  }
  void PutInts(const std::string& name, const std::vector<int32_t>& values) {
    Put(name, DType::kInt32, values);
  }

  static std::vector<float> Floats(const v1::ExecuteResponse& response) {
    const std::string& data = response.outputs(0).value().data();
    std::vector<float> out(data.size() / sizeof(float));
    std::memcpy(out.data(), data.data(), data.size());
    return out;
  }

  absl::StatusOr<v1::ExecuteResponse> Run(const CallerPermissions& caller = {}) {
    v1::ExecuteResponse response;
    absl::Status status = runner_.Execute(*session_, request_, &response, nullptr, caller);
    if (!status.ok()) return status;
    return response;
  }

  std::unique_ptr<Backend> backend_ = CreateCpuBackend();
  SessionRegistry sessions_{*backend_, {}};
  PlanCache plans_{PlanOptions{}};
  GraphRunner runner_{*backend_, plans_, GraphLimits{.request_cache_entries = 4}};
  std::shared_ptr<Session> session_;
  v1::ExecuteRequest request_;
};

TEST_F(RequestCacheTest, ARepeatSkipsConversionValidationAndPlanning) {
  PutFloats("x", {1, 2, 3});
  absl::StatusOr<v1::ExecuteResponse> first = Run();
  ASSERT_THAT(first, IsOk());
  EXPECT_FALSE(first->timings().request_cache_hit());
  EXPECT_GT(first->timings().validate_seconds(), 0);
  absl::StatusOr<v1::ExecuteResponse> second = Run();
  ASSERT_THAT(second, IsOk());
  EXPECT_TRUE(second->timings().request_cache_hit());
  EXPECT_TRUE(second->timings().plan_cache_hit());
  EXPECT_EQ(second->timings().convert_seconds(), 0);
  EXPECT_EQ(second->timings().validate_seconds(), 0);
  EXPECT_EQ(second->timings().plan_seconds(), 0);
  EXPECT_THAT(Floats(*second), ElementsAreArray({3.0f, 5.0f, 7.0f}));
  EXPECT_EQ(runner_.request_cache_size(), 1);
  EXPECT_TRUE(runner_.LastRunTime(runner_.KeyOf(request_, {})).has_value());
}

TEST_F(RequestCacheTest, AHitComputesFromTheArraysCurrentContents) {
  PutFloats("x", {1, 2, 3});
  ASSERT_THAT(Run(), IsOk());
  PutFloats("x", {10, 20, 30});  // same type, new values
  absl::StatusOr<v1::ExecuteResponse> again = Run();
  ASSERT_THAT(again, IsOk());
  EXPECT_TRUE(again->timings().request_cache_hit());
  EXPECT_THAT(Floats(*again), ElementsAreArray({21.0f, 41.0f, 61.0f}));
}

TEST_F(RequestCacheTest, AnArrayOfAnotherShapeOrDtypeIsValidatedAgain) {
  PutFloats("x", {1, 2, 3});
  ASSERT_THAT(Run(), IsOk());
  PutFloats("x", {1, 2, 3, 4});
  absl::StatusOr<v1::ExecuteResponse> longer = Run();
  ASSERT_THAT(longer, IsOk());
  EXPECT_FALSE(longer->timings().request_cache_hit());
  EXPECT_THAT(Floats(*longer), ElementsAreArray({3.0f, 5.0f, 7.0f, 9.0f}));
  EXPECT_EQ(longer->outputs(0).value().shape(0), 4);
  // int32 * 2.0 + 1.0 is float64 under NumPy 2's rules, not float32.
  PutInts("x", {1, 2, 3, 4});
  absl::StatusOr<v1::ExecuteResponse> ints = Run();
  ASSERT_THAT(ints, IsOk());
  EXPECT_FALSE(ints->timings().request_cache_hit());
  EXPECT_EQ(ints->outputs(0).value().dtype(), v1::DTYPE_FLOAT64);
}

TEST_F(RequestCacheTest, AMissingArrayFailsAsWithoutTheCache) {
  PutFloats("x", {1, 2, 3});
  ASSERT_THAT(Run(), IsOk());
  ASSERT_THAT(session_->DeleteArray("x"), IsOk());
  EXPECT_THAT(Run(), StatusIs(absl::StatusCode::kNotFound, HasSubstr("x")));
}

TEST_F(RequestCacheTest, OtherOutputsAreAnotherRequest) {
  PutFloats("x", {1, 2, 3});
  ASSERT_THAT(Run(), IsOk());
  request_.mutable_outputs(0)->set_node("m");
  absl::StatusOr<v1::ExecuteResponse> m = Run();
  ASSERT_THAT(m, IsOk());
  EXPECT_FALSE(m->timings().request_cache_hit());
  EXPECT_THAT(Floats(*m), ElementsAreArray({2.0f, 4.0f, 6.0f}));
}

// Permission checks run at validation, so a request cached for a caller
// that may run custom or raw kernels must be another key for one that may
// not (custom kernels run on the CUDA backend only, so the check is on the
// keys here; tests/python/test_security.py runs it end to end).
TEST_F(RequestCacheTest, CallersWithOtherPermissionsHaveOtherKeys) {
  const CallerPermissions all{};
  const CallerPermissions no_custom{.raw_kernels = true, .custom_kernels = false, .who = "b"};
  const CallerPermissions no_raw{.raw_kernels = false, .custom_kernels = true, .who = "c"};
  const std::string key = runner_.KeyOf(request_, all).bytes;
  EXPECT_FALSE(key.empty());
  EXPECT_EQ(runner_.KeyOf(request_, {.who = "someone else"}).bytes, key);
  EXPECT_NE(runner_.KeyOf(request_, no_custom).bytes, key);
  EXPECT_NE(runner_.KeyOf(request_, no_raw).bytes, key);
  EXPECT_NE(runner_.KeyOf(request_, no_raw).bytes, runner_.KeyOf(request_, no_custom).bytes);
}

TEST_F(RequestCacheTest, LargeGraphsAreNotCached) {
  v1::Node* last = request_.mutable_graph()->mutable_nodes(1);
  for (int i = 0; i < 4000; ++i) {
    v1::Node* node = request_.mutable_graph()->add_nodes();
    node->set_id(absl::StrCat("chain_node_", i));
    node->set_op("add");
    node->add_inputs()->set_node(last->id());
    node->add_inputs()->mutable_scalar()->set_float_value(1.0);
    last = node;
  }
  EXPECT_TRUE(runner_.KeyOf(request_, {}).bytes.empty());
}

TEST_F(RequestCacheTest, HoldsAtMostItsEntries) {
  PutFloats("x", {1, 2, 3});
  for (int i = 0; i < 10; ++i) {
    request_.mutable_graph()
        ->mutable_nodes(1)
        ->mutable_inputs(1)
        ->mutable_scalar()
        ->set_float_value(i);
    absl::StatusOr<v1::ExecuteResponse> r = Run();
    ASSERT_THAT(r, IsOk());
    EXPECT_THAT(Floats(*r), ElementsAreArray({2.0f + i, 4.0f + i, 6.0f + i}));
  }
  EXPECT_EQ(runner_.request_cache_size(), 4);
}

TEST_F(RequestCacheTest, ZeroEntriesTurnsItOff) {
  GraphRunner uncached{*backend_, plans_, GraphLimits{.request_cache_entries = 0}};
  PutFloats("x", {1, 2, 3});
  for (int i = 0; i < 2; ++i) {
    v1::ExecuteResponse response;
    ASSERT_THAT(uncached.Execute(*session_, request_, &response), IsOk());
    EXPECT_FALSE(response.timings().request_cache_hit());
  }
  EXPECT_EQ(uncached.request_cache_size(), 0);
  EXPECT_FALSE(uncached.LastRunTime(uncached.KeyOf(request_, {})).has_value());
}

TEST_F(RequestCacheTest, TheTotalCoversTheWaitBeforeTheRun) {
  PutFloats("x", {1, 2, 3});
  v1::ExecuteResponse response;
  const CallTiming timing{.received = absl::Now() - absl::Milliseconds(30)};
  ASSERT_THAT(runner_.Execute(*session_, request_, &response, nullptr, {}, nullptr, timing),
              IsOk());
  EXPECT_GE(response.timings().queue_seconds(), 0.030);
  EXPECT_GE(response.timings().total_seconds(),
            response.timings().queue_seconds() + response.timings().run_seconds());
}

}  // namespace
}  // namespace gpuflow::server

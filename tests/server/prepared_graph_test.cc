// Prepared graphs (issue 15): PrepareGraph keeps a validated, planned graph
// in its session; Execute by handle binds arrays and scalar values to it.
// Every binding is checked (outputs, array count and types, scalar count and
// kinds), integer scalars that change are validated again, and the session
// accounts for what it keeps. Run on the CPU backend, so every answer is
// checked.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

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
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

class PreparedGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<Session>> session = sessions_.Create({.label = "prepared"});
    ASSERT_THAT(session, IsOk());
    session_ = *std::move(session);
    // y = x * 2.0 + 1, from array "x".
    prepare_.set_session_id(session_->id());
    v1::Node* mul = prepare_.mutable_graph()->add_nodes();
    mul->set_id("m");
    mul->set_op("mul");
    mul->add_inputs()->set_array("x");
    mul->add_inputs()->mutable_scalar()->set_float_value(2.0);
    v1::Node* add = prepare_.mutable_graph()->add_nodes();
    add->set_id("y");
    add->set_op("add");
    add->add_inputs()->set_node("m");
    add->add_inputs()->mutable_scalar()->set_int_value(1);
    prepare_.add_output_nodes("y");
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

  static std::vector<float> Floats(const v1::ExecuteResponse& response) {
    const std::string& data = response.outputs(0).value().data();
    std::vector<float> out(data.size() / sizeof(float));
    std::memcpy(out.data(), data.data(), data.size());
    return out;
  }

  absl::StatusOr<v1::PreparedGraphInfo> Prepare() {
    v1::PreparedGraphInfo info;
    absl::Status status = runner_.PrepareGraph(*session_, prepare_, &info);
    if (!status.ok()) return status;
    return info;
  }

  // An Execute of `handle` returning "y" inline.
  v1::ExecuteRequest ByHandle(uint64_t handle) const {
    v1::ExecuteRequest request;
    request.set_session_id(session_->id());
    request.set_prepared_graph(handle);
    v1::OutputSpec* out = request.add_outputs();
    out->set_node("y");
    out->set_return_inline(true);
    return request;
  }

  absl::StatusOr<v1::ExecuteResponse> Run(const v1::ExecuteRequest& request) {
    v1::ExecuteResponse response;
    absl::Status status = runner_.Execute(*session_, request, &response);
    if (!status.ok()) return status;
    return response;
  }

  std::unique_ptr<Backend> backend_ = CreateCpuBackend();
  SessionRegistry sessions_{*backend_, {}};
  PlanCache plans_{PlanOptions{}};
  GraphRunner runner_{*backend_, plans_, GraphLimits{.max_prepared_graphs = 3}};
  std::shared_ptr<Session> session_;
  v1::PrepareGraphRequest prepare_;
};

TEST_F(PreparedGraphTest, PrepareDescribesWhatExecuteBinds) {
  PutFloats("x", {1, 2, 3});
  absl::StatusOr<v1::PreparedGraphInfo> info = Prepare();
  ASSERT_THAT(info, IsOk());
  EXPECT_NE(info->handle(), 0u);
  EXPECT_THAT(info->arrays(), ElementsAre("x"));
  ASSERT_EQ(info->array_types_size(), 1);
  EXPECT_EQ(info->array_types(0).dtype(), v1::DTYPE_FLOAT32);
  EXPECT_THAT(info->array_types(0).shape(), ElementsAre(3));
  EXPECT_EQ(info->num_scalars(), 2);
  EXPECT_THAT(info->output_nodes(), ElementsAre("y"));
  EXPECT_GT(info->metadata_bytes(), 0);
  EXPECT_EQ(session_->num_prepared_graphs(), 1);
  EXPECT_EQ(session_->metadata_bytes(),
            MetadataBytes("x", *Shape::Create({3})) + info->metadata_bytes());
}

TEST_F(PreparedGraphTest, ExecuteByHandleRunsWithoutValidating) {
  PutFloats("x", {1, 2, 3});
  absl::StatusOr<v1::PreparedGraphInfo> info = Prepare();
  ASSERT_THAT(info, IsOk());
  absl::StatusOr<v1::ExecuteResponse> out = Run(ByHandle(info->handle()));
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(Floats(*out), ElementsAreArray({3.0f, 5.0f, 7.0f}));
  EXPECT_TRUE(out->timings().prepared_graph());
  EXPECT_FALSE(out->timings().request_cache_hit());
  EXPECT_TRUE(out->timings().plan_cache_hit());
  EXPECT_EQ(out->timings().convert_seconds(), 0);
  EXPECT_EQ(out->timings().validate_seconds(), 0);
  EXPECT_EQ(out->timings().plan_seconds(), 0);
  EXPECT_TRUE(runner_.LastRunTime(*session_, info->handle()).has_value());
  // It reads the array's current contents.
  PutFloats("x", {10, 20, 30});
  out = Run(ByHandle(info->handle()));
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(Floats(*out), ElementsAreArray({21.0f, 41.0f, 61.0f}));
}

TEST_F(PreparedGraphTest, ArraysBindByPosition) {
  PutFloats("x", {1, 2, 3});
  PutFloats("other", {0, 0.5, 1});
  PutFloats("short", {1, 2});
  absl::StatusOr<v1::PreparedGraphInfo> info = Prepare();
  ASSERT_THAT(info, IsOk());
  v1::ExecuteRequest request = ByHandle(info->handle());
  request.add_arrays("other");
  absl::StatusOr<v1::ExecuteResponse> out = Run(request);
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(Floats(*out), ElementsAreArray({1.0f, 2.0f, 3.0f}));

  request.set_arrays(0, "short");
  EXPECT_THAT(Run(request).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("takes float32 (3,)")));
  request.set_arrays(0, "missing");
  EXPECT_THAT(Run(request).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("array 0 ('x' when prepared)")));
  request.add_arrays("x");
  EXPECT_THAT(Run(request).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reads 1 arrays")));
}

TEST_F(PreparedGraphTest, ScalarsBindByPositionAndKeepTheirKind) {
  PutFloats("x", {1, 2, 3});
  absl::StatusOr<v1::PreparedGraphInfo> info = Prepare();
  ASSERT_THAT(info, IsOk());
  v1::ExecuteRequest request = ByHandle(info->handle());
  request.add_scalars()->set_float_value(3.0);
  request.add_scalars()->set_int_value(1);
  absl::StatusOr<v1::ExecuteResponse> out = Run(request);
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(Floats(*out), ElementsAreArray({4.0f, 7.0f, 10.0f}));
  EXPECT_EQ(out->timings().validate_seconds(), 0);  // a float changed: no validation

  // An integer that changes is validated again (its value matters there).
  request.mutable_scalars(1)->set_int_value(-5);
  out = Run(request);
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(Floats(*out), ElementsAreArray({-2.0f, 1.0f, 4.0f}));
  EXPECT_GT(out->timings().validate_seconds(), 0);
  EXPECT_TRUE(out->timings().prepared_graph());

  // The handle itself still holds the values it was prepared with.
  out = Run(ByHandle(info->handle()));
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(Floats(*out), ElementsAreArray({3.0f, 5.0f, 7.0f}));

  request.mutable_scalars(0)->set_int_value(3);  // a weak int where a float was
  EXPECT_THAT(Run(request).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("scalar 0 is a Python-style (weak) int64")));
  request.mutable_scalars(0)->set_float_value(3.0);
  request.mutable_scalars(0)->set_dtype(v1::DTYPE_FLOAT32);  // strong where weak was
  EXPECT_THAT(Run(request).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a strong float32")));
  request.mutable_scalars()->RemoveLast();
  EXPECT_THAT(Run(request).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has 2 scalars")));
}

TEST_F(PreparedGraphTest, AChangedIntegerIsCheckedAsValidationWould) {
  // An int8 array plus a Python int: 300 is out of range for int8.
  prepare_.mutable_graph()->clear_nodes();
  v1::Node* add = prepare_.mutable_graph()->add_nodes();
  add->set_id("y");
  add->set_op("add");
  add->add_inputs()->set_array("b");
  add->add_inputs()->mutable_scalar()->set_int_value(1);
  Put<int8_t>("b", DType::kInt8, {1, 2, 3});
  absl::StatusOr<v1::PreparedGraphInfo> info = Prepare();
  ASSERT_THAT(info, IsOk());
  v1::ExecuteRequest request = ByHandle(info->handle());
  request.add_scalars()->set_int_value(300);
  EXPECT_THAT(Run(request).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of bounds for int8")));
}

TEST_F(PreparedGraphTest, OutputsMustBeThePreparedOnes) {
  PutFloats("x", {1, 2, 3});
  absl::StatusOr<v1::PreparedGraphInfo> info = Prepare();
  ASSERT_THAT(info, IsOk());
  v1::ExecuteRequest request = ByHandle(info->handle());
  request.mutable_outputs(0)->set_node("m");
  EXPECT_THAT(Run(request).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has 'y' there")));
  request.mutable_outputs(0)->set_node("y");
  request.add_outputs()->set_node("y");
  request.mutable_outputs(1)->set_store_as("z");
  EXPECT_THAT(Run(request).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has 1 outputs")));
  // How each output leaves is the request's own choice.
  request.mutable_outputs()->RemoveLast();
  request.mutable_outputs(0)->set_return_inline(false);
  request.mutable_outputs(0)->set_store_as("stored");
  ASSERT_THAT(Run(request), IsOk());
  EXPECT_THAT(session_->GetArray("stored"), IsOk());
}

TEST_F(PreparedGraphTest, BadRequestsAreRefused) {
  PutFloats("x", {1, 2, 3});
  absl::StatusOr<v1::PreparedGraphInfo> info = Prepare();
  ASSERT_THAT(info, IsOk());
  v1::ExecuteRequest unknown = ByHandle(info->handle() + 100);
  EXPECT_THAT(Run(unknown).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("prepare it again")));
  v1::ExecuteRequest both = ByHandle(info->handle());
  *both.mutable_graph() = prepare_.graph();
  EXPECT_THAT(Run(both).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("names both")));
  v1::ExecuteRequest stray;
  stray.set_session_id(session_->id());
  *stray.mutable_graph() = prepare_.graph();
  stray.add_outputs()->set_node("y");
  stray.mutable_outputs(0)->set_return_inline(true);
  stray.add_arrays("x");
  EXPECT_THAT(Run(stray).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("names none")));
  // Preparing checks the graph as Execute would.
  prepare_.mutable_graph()->mutable_nodes(0)->set_op("no_such_op");
  EXPECT_THAT(Prepare().status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(session_->num_prepared_graphs(), 1);
}

TEST_F(PreparedGraphTest, ExecuteCanPrepareItsGraph) {
  PutFloats("x", {1, 2, 3});
  v1::ExecuteRequest request;
  request.set_session_id(session_->id());
  *request.mutable_graph() = prepare_.graph();
  v1::OutputSpec* out = request.add_outputs();
  out->set_node("y");
  out->set_return_inline(true);
  request.set_prepare(true);
  absl::StatusOr<v1::ExecuteResponse> first = Run(request);
  ASSERT_THAT(first, IsOk());
  EXPECT_THAT(Floats(*first), ElementsAreArray({3.0f, 5.0f, 7.0f}));
  ASSERT_NE(first->prepared().handle(), 0u);
  EXPECT_THAT(first->prepared().arrays(), ElementsAre("x"));
  EXPECT_EQ(first->prepared().num_scalars(), 2);
  absl::StatusOr<v1::ExecuteResponse> again = Run(ByHandle(first->prepared().handle()));
  ASSERT_THAT(again, IsOk());
  EXPECT_THAT(Floats(*again), ElementsAreArray({3.0f, 5.0f, 7.0f}));
  EXPECT_TRUE(again->timings().prepared_graph());
}

TEST_F(PreparedGraphTest, ASessionKeepsABoundedNumberAndReleasesThem) {
  PutFloats("x", {1, 2, 3});
  const int64_t metadata_before = session_->metadata_bytes();
  std::vector<uint64_t> handles;
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<v1::PreparedGraphInfo> info = Prepare();
    ASSERT_THAT(info, IsOk());
    handles.push_back(info->handle());
  }
  // Three at most: the least recently used (the first) is gone.
  EXPECT_EQ(session_->num_prepared_graphs(), 3);
  EXPECT_THAT(Run(ByHandle(handles[0])).status(), StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_THAT(Run(ByHandle(handles[1])), IsOk());  // now the most recent
  ASSERT_THAT(Prepare(), IsOk());                  // forgets handles[2]
  EXPECT_THAT(Run(ByHandle(handles[2])).status(), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(Run(ByHandle(handles[1])), IsOk());

  v1::ReleaseGraphRequest release;
  release.set_handle(handles[1]);
  v1::ReleaseGraphResponse released;
  ASSERT_THAT(runner_.ReleaseGraph(*session_, release, &released), IsOk());
  EXPECT_GT(released.freed_bytes(), 0);
  EXPECT_THAT(runner_.ReleaseGraph(*session_, release, &released),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(session_->num_prepared_graphs(), 2);
  EXPECT_GT(session_->metadata_bytes(), metadata_before);
  ASSERT_THAT(sessions_.Close(session_->id()), IsOk());
  EXPECT_EQ(session_->num_prepared_graphs(), 0);
  EXPECT_EQ(session_->metadata_bytes(), 0);
}

TEST_F(PreparedGraphTest, WhatASessionKeepsCountsAgainstItsQuota) {
  absl::StatusOr<std::shared_ptr<Session>> small =
      sessions_.Create({.label = "small", .memory_limit_bytes = 2048});
  ASSERT_THAT(small, IsOk());
  session_ = *small;
  prepare_.set_session_id(session_->id());
  (*prepare_.mutable_graph()->mutable_nodes(0)->mutable_inputs(0)).set_array("x");
  v1::ArrayInfo type;
  type.set_dtype(v1::DTYPE_FLOAT32);
  type.add_shape(3);
  (*prepare_.mutable_array_types())["x"] = type;  // not in the session yet
  ASSERT_THAT(Prepare(), IsOk());
  EXPECT_THAT(Prepare().status(), StatusIs(absl::StatusCode::kResourceExhausted,
                                           HasSubstr("keeping a prepared graph")));
  // An Execute asking to prepare still runs, without a handle.
  PutFloats("x", {1, 2, 3});
  v1::ExecuteRequest request;
  request.set_session_id(session_->id());
  *request.mutable_graph() = prepare_.graph();
  request.add_outputs()->set_node("y");
  request.mutable_outputs(0)->set_return_inline(true);
  request.set_prepare(true);
  absl::StatusOr<v1::ExecuteResponse> out = Run(request);
  ASSERT_THAT(out, IsOk());
  EXPECT_THAT(Floats(*out), ElementsAreArray({3.0f, 5.0f, 7.0f}));
  EXPECT_FALSE(out->has_prepared());
}

TEST_F(PreparedGraphTest, AServerWithoutPreparedGraphsSaysSo) {
  GraphRunner none(*backend_, plans_, GraphLimits{.max_prepared_graphs = 0});
  v1::PreparedGraphInfo info;
  EXPECT_THAT(none.PrepareGraph(*session_, prepare_, &info),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--max_prepared_graphs")));
}

}  // namespace
}  // namespace gpuflow::server

#include "server/device_set.h"

#include <memory>
#include <utility>
#include <vector>

#include "engine/cpu/cpu_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/session_registry.h"
#include "tests/server/fake_backend.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::FakeBackend;
using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseDevicesFlagTest, EmptyMeansTheDefaultOneDevice) {
  absl::StatusOr<DeviceList> list = ParseDevicesFlag("", DeviceKind::kCuda, 4);
  ASSERT_THAT(list, IsOk());
  EXPECT_TRUE(list->ids.empty());
}

TEST(ParseDevicesFlagTest, CudaTakesAllOrAListOfOrdinals) {
  EXPECT_THAT(ParseDevicesFlag("all", DeviceKind::kCuda, 3)->ids, ElementsAre(0, 1, 2));
  EXPECT_THAT(ParseDevicesFlag("0,1,3", DeviceKind::kCuda, 4)->ids, ElementsAre(0, 1, 3));
  EXPECT_THAT(ParseDevicesFlag(" 2 ", DeviceKind::kCuda, 4)->ids, ElementsAre(2));
  EXPECT_THAT(ParseDevicesFlag("3, 1", DeviceKind::kCuda, 4)->ids, ElementsAre(3, 1));
}

TEST(ParseDevicesFlagTest, CudaRefusesBadListsDuplicatesAndMissingDevices) {
  EXPECT_THAT(ParseDevicesFlag("0,0", DeviceKind::kCuda, 2),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("device 0 is listed twice")));
  EXPECT_THAT(ParseDevicesFlag("0,4", DeviceKind::kCuda, 4),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("device 4 does not exist (4 CUDA device(s) are visible)")));
  for (const char* bad : {"0,,1", "-1", "x", "0;1", "1,", "all,0"}) {
    EXPECT_THAT(ParseDevicesFlag(bad, DeviceKind::kCuda, 4),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not a device ordinal")))
        << bad;
  }
  EXPECT_THAT(ParseDevicesFlag("all", DeviceKind::kCuda, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no CUDA device")));
}

TEST(ParseDevicesFlagTest, CpuTakesACountOfVirtualDevices) {
  EXPECT_THAT(ParseDevicesFlag("3", DeviceKind::kCpu, 0)->ids, ElementsAre(0, 1, 2));
  EXPECT_THAT(ParseDevicesFlag("all", DeviceKind::kCpu, 0)->ids, ElementsAre(0));
  for (const char* bad : {"0", "-2", "65", "0,1", "two"}) {
    EXPECT_THAT(ParseDevicesFlag(bad, DeviceKind::kCpu, 0),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("count of virtual devices")))
        << bad;
  }
}

// Three fake devices with ids 0, 1, 3, each reachable for its health knob.
class PlacementTest : public ::testing::Test {
 protected:
  PlacementTest() {
    std::vector<std::unique_ptr<Backend>> backends;
    for (int i = 0; i < 3; ++i) {
      auto backend = std::make_unique<FakeBackend>();
      fakes_.push_back(backend.get());
      backends.push_back(std::move(backend));
    }
    devices_ = std::make_unique<DeviceSet>(std::move(backends), std::vector<int>{0, 1, 3});
    registry_ = std::make_unique<SessionRegistry>(*devices_, SessionRegistryOptions{});
  }

  std::shared_ptr<Session> Open(std::optional<int> device = std::nullopt) {
    absl::StatusOr<std::shared_ptr<Session>> session =
        registry_->Create({.label = "", .device = device});
    EXPECT_THAT(session, IsOk());
    return session.ok() ? *session : nullptr;
  }

  // Stores `bytes` bytes in `session`.
  void Fill(Session& session, int64_t bytes) {
    const Shape shape = *Shape::Create({bytes});
    absl::StatusOr<MemoryReservation> reservation =
        session.Reserve(Session::StoredBytes("x", shape, bytes));
    ASSERT_THAT(reservation, IsOk());
    Array array{DType::kUInt8, shape, *session.backend().Allocate(bytes, session.stream())};
    ASSERT_THAT(session.PutArray("x", std::move(array), *std::move(reservation)), IsOk());
  }

  std::vector<FakeBackend*> fakes_;
  std::unique_ptr<DeviceSet> devices_;
  std::unique_ptr<SessionRegistry> registry_;
};

TEST_F(PlacementTest, NewSessionsGoToTheDeviceWithFewestSessions) {
  EXPECT_EQ(Open()->device(), 0);
  EXPECT_EQ(Open()->device(), 1);
  EXPECT_EQ(Open()->device(), 3);
  const std::shared_ptr<Session> fourth = Open();
  EXPECT_EQ(fourth->device(), 0);
  EXPECT_EQ(&fourth->backend(), fakes_[0]);
  EXPECT_THAT(registry_->Close(fourth->id()), IsOk());
  EXPECT_EQ(Open()->device(), 0);
}

TEST_F(PlacementTest, TiesGoToTheDeviceWhoseSessionsHoldFewestBytes) {
  std::shared_ptr<Session> a = Open();
  std::shared_ptr<Session> b = Open();
  std::shared_ptr<Session> c = Open();
  Fill(*a, 4096);
  Fill(*c, 1024);
  // One session each: device 1's holds nothing.
  EXPECT_EQ(Open()->device(), 1);
  const std::vector<SessionRegistry::DeviceLoad> loads = registry_->device_loads();
  EXPECT_EQ(loads[0].sessions, 1);
  EXPECT_EQ(loads[1].sessions, 2);
  EXPECT_GT(loads[0].bytes, loads[2].bytes);
  EXPECT_GE(loads[2].bytes, 1024);
}

TEST_F(PlacementTest, ASessionMayAskForItsDevice) {
  EXPECT_EQ(Open(3)->device(), 3);
  EXPECT_EQ(Open(3)->device(), 3);
  EXPECT_EQ(&Open(3)->backend(), fakes_[2]);
  // The asked-for ones count: the next free choice avoids device 3.
  EXPECT_EQ(Open()->device(), 0);
}

TEST_F(PlacementTest, ADeviceTheServerDoesNotDriveIsInvalidArgument) {
  EXPECT_THAT(registry_->Create({.label = "", .device = 2}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("device 2 does not exist: this server has 3 device(s)")));
  EXPECT_THAT(registry_->Create({.label = "", .device = -1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not exist")));
  EXPECT_EQ(registry_->size(), 0);
}

TEST_F(PlacementTest, AnUnhealthyDeviceGetsNoNewSessions) {
  fakes_[0]->set_healthy(false);
  EXPECT_THAT(registry_->Create({.label = "", .device = 0}),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("device 0 (fake) is unhealthy")));
  EXPECT_EQ(Open()->device(), 1);
  EXPECT_EQ(Open()->device(), 3);
  EXPECT_EQ(Open()->device(), 1);
  fakes_[1]->set_healthy(false);
  fakes_[2]->set_healthy(false);
  EXPECT_THAT(registry_->Create({}),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("every device of this server is unhealthy (3 devices)")));
}

TEST_F(PlacementTest, CheckServingFailsOnlyTheUnhealthyDevice) {
  fakes_[1]->set_healthy(false);
  EXPECT_THAT(CheckServing(*devices_, 0), IsOk());
  EXPECT_THAT(CheckServing(*devices_, 1),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("device 1 (fake) is unhealthy (a sticky device error)")));
  EXPECT_EQ(devices_->healthy_count(), 2);
}

TEST(DeviceSetTest, OneBorrowedBackendIsDeviceZeroWithTheSingleDeviceMessage) {
  FakeBackend backend;
  DeviceSet devices(backend);
  EXPECT_EQ(devices.size(), 1);
  EXPECT_EQ(devices.id(0), 0);
  EXPECT_EQ(devices.IndexOf(0), 0);
  EXPECT_EQ(devices.IndexOf(1), -1);
  backend.set_healthy(false);
  EXPECT_THAT(CheckServing(devices, 0),
              StatusIs(absl::StatusCode::kUnavailable, "the fake backend is unhealthy"));
}

// Virtual CPU devices are independent: a fault injected into one leaves the
// other healthy, and a copy between them is a plain host copy.
TEST(CpuVirtualDeviceTest, InstancesAreIndependentAndCopyByMemcpy) {
  std::unique_ptr<Backend> a = CreateCpuBackend({.virtual_device = 0});
  std::unique_ptr<Backend> b = CreateCpuBackend({.virtual_device = 1});
  EXPECT_EQ(a->device(), 0);
  EXPECT_EQ(b->device(), 1);
  EXPECT_THAT(b->device_description(), HasSubstr("virtual device 1"));
  std::unique_ptr<Stream> sa = *a->CreateStream();
  std::unique_ptr<Stream> sb = *b->CreateStream();
  std::unique_ptr<DeviceBuffer> src = *a->Allocate(64, *sa);
  std::unique_ptr<DeviceBuffer> dst = *b->Allocate(64, *sb);
  std::vector<char> bytes(64);
  for (int i = 0; i < 64; ++i) bytes[i] = static_cast<char>(i * 3);
  ASSERT_THAT(a->CopyToDevice(bytes.data(), *src, 0, 64, *sa), IsOk());
  absl::StatusOr<CopyRoute> route = b->CopyFrom(*a, *src, *sa, *dst, *sb, 64);
  ASSERT_THAT(route, IsOk());
  EXPECT_EQ(*route, CopyRoute::kHost);
  std::vector<char> back(64);
  ASSERT_THAT(b->CopyToHost(*dst, 0, 64, back.data(), *sb), IsOk());
  EXPECT_EQ(back, bytes);
  EXPECT_THAT(b->CopyFrom(*a, *src, *sa, *dst, *sb, 65), StatusIs(absl::StatusCode::kOutOfRange));
}

// Between backends of different kinds (a fake and a CPU one) the bytes go
// through host memory, in pieces: here more than one 4 MiB piece.
TEST(CopyThroughHostTest, StagesEveryPiece) {
  FakeBackend fake;
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  std::unique_ptr<Stream> sf = *fake.CreateStream();
  std::unique_ptr<Stream> sc = *cpu->CreateStream();
  const int64_t n = (int64_t{9} << 20) + 7;
  std::vector<char> bytes(n);
  for (int64_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 7 + i / 4096);
  std::unique_ptr<DeviceBuffer> src = *fake.Allocate(n, *sf);
  std::unique_ptr<DeviceBuffer> dst = *cpu->Allocate(n, *sc);
  ASSERT_THAT(fake.CopyToDevice(bytes.data(), *src, 0, n, *sf), IsOk());
  absl::StatusOr<CopyRoute> route = cpu->CopyFrom(fake, *src, *sf, *dst, *sc, n);
  ASSERT_THAT(route, IsOk());
  EXPECT_EQ(*route, CopyRoute::kStaged);
  std::vector<char> back(n);
  ASSERT_THAT(cpu->CopyToHost(*dst, 0, n, back.data(), *sc), IsOk());
  EXPECT_TRUE(back == bytes);
}

}  // namespace
}  // namespace gpuflow::server

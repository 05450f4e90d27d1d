#include "server/private_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

class PrivateDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::path(::testing::TempDir()) /
            ("private_directory_test_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::string Make(const std::string& name, mode_t mode) {
    const std::filesystem::path dir = root_ / name;
    std::filesystem::create_directory(dir);
    chmod(dir.c_str(), mode);
    return dir.string();
  }

  static mode_t ModeOf(const std::string& path) {
    struct stat info {};
    stat(path.c_str(), &info);
    return info.st_mode & 07777;
  }

  std::filesystem::path root_;
};

TEST_F(PrivateDirectoryTest, MissingDirectoryIsCreatedPrivate) {
  const std::string dir = (root_ / "a" / "b" / "kernels").string();
  ASSERT_THAT(PreparePrivateDirectory(dir), IsOk());
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_EQ(ModeOf(dir) & 077, 0u);
  EXPECT_EQ(ModeOf((root_ / "a").string()) & 077, 0u);
}

TEST_F(PrivateDirectoryTest, OwnDirectoryWritableByOwnerOrOwnGroupIsAccepted) {
  EXPECT_THAT(PreparePrivateDirectory(Make("owner", 0755)), IsOk());
  EXPECT_THAT(PreparePrivateDirectory(Make("private", 0700)), IsOk());
  // Group-writable, the group being the server's own (umask 002 with a
  // group of one's own).
  const std::string group = Make("group", 0775);
  ASSERT_EQ(chown(group.c_str(), static_cast<uid_t>(-1), getegid()), 0);
  EXPECT_THAT(PreparePrivateDirectory(group), IsOk());
}

TEST_F(PrivateDirectoryTest, WorldWritableIsRefusedEvenWithTheStickyBit) {
  for (mode_t mode : {0777, 01777, 0703}) {
    const std::string dir = Make("shared" + std::to_string(mode), mode);
    EXPECT_THAT(PreparePrivateDirectory(dir),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         HasSubstr("kernel cache directory " + dir + " is writable by every user")))
        << mode;
  }
  EXPECT_THAT(PreparePrivateDirectory(Make("why", 0777)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("a file another user planted would run as its code")));
}

TEST_F(PrivateDirectoryTest, ForeignOwnerOrGroupIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "giving a directory away needs root";
  const std::string theirs = Make("theirs", 0755);
  ASSERT_EQ(chown(theirs.c_str(), 54321, static_cast<gid_t>(-1)), 0);
  EXPECT_THAT(PreparePrivateDirectory(theirs),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("belongs to uid 54321")));
  const std::string group = Make("foreign_group", 0775);
  ASSERT_EQ(chown(group.c_str(), static_cast<uid_t>(-1), 54321), 0);
  EXPECT_THAT(PreparePrivateDirectory(group),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("is writable by group 54321 (mode 0775)")));
}

TEST_F(PrivateDirectoryTest, WhatTheCacheReportsItselfIsNotRefusedHere) {
  EXPECT_THAT(PreparePrivateDirectory(""), IsOk());
  // A file where the directory should be: the cache logs it and runs from
  // memory.
  const std::filesystem::path file = root_ / "file";
  std::filesystem::create_directories(root_);
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    std::fclose(f);
  }
  EXPECT_THAT(PreparePrivateDirectory(file.string()), IsOk());
}

}  // namespace
}  // namespace gpuflow::server

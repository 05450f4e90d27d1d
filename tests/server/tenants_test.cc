#include "server/tenants.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/retry_hint.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

std::string Hex(absl::string_view token) {
  std::optional<std::array<uint8_t, 32>> digest = Sha256(token);
  EXPECT_TRUE(digest.has_value());
  if (!digest.has_value()) return "";
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest->data()), digest->size()));
}

std::string Entry(absl::string_view name, absl::string_view token, absl::string_view extra = "") {
  return absl::StrCat(R"({"name": ")", name, R"(", "token_sha256": ")", Hex(token), "\"", extra,
                      "}");
}

std::string File(const std::vector<std::string>& entries) {
  return absl::StrCat(R"({"tenants": [)", absl::StrJoin(entries, ", "), "]}");
}

TEST(Sha256Test, KnownDigest) {
  EXPECT_EQ(Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// ---------------------------------------------------------------- parsing

TEST(ParseTenantsFileTest, ReadsEntriesAndDefaultsTheirLimits) {
  const TenantLimits defaults{.max_concurrent_requests = 7};
  absl::StatusOr<std::vector<TenantEntry>> entries =
      ParseTenantsFile(File({Entry("team-a", "a",
                                   R"(, "max_sessions": 8, "max_memory_bytes": 68719476736,
                     "max_concurrent_requests": 16, "allow_raw_kernels": true,
                     "allow_custom_kernels": true)"),
                             Entry("team.b_2", "b")}),
                       defaults);
  ASSERT_THAT(entries, IsOk());
  ASSERT_THAT(*entries, SizeIs(2));
  const TenantEntry& a = (*entries)[0];
  EXPECT_EQ(a.name, "team-a");
  EXPECT_EQ(a.token_sha256, *Sha256("a"));
  EXPECT_EQ(a.limits.max_sessions, 8);
  EXPECT_EQ(a.limits.max_memory_bytes, int64_t{64} << 30);
  EXPECT_EQ(a.limits.max_concurrent_requests, 16);
  EXPECT_TRUE(a.limits.allow_raw_kernels);
  EXPECT_TRUE(a.limits.allow_custom_kernels);
  const TenantEntry& b = (*entries)[1];
  EXPECT_EQ(b.limits.max_sessions, 0);  // the server's
  EXPECT_EQ(b.limits.max_memory_bytes, 0);
  EXPECT_EQ(b.limits.max_concurrent_requests, 7);
  EXPECT_FALSE(b.limits.allow_raw_kernels);
  EXPECT_FALSE(b.limits.allow_custom_kernels);  // code is trusted code: opt in
}

TEST(ParseTenantsFileTest, UpperCaseHexAndCamelCaseNamesAreAccepted) {
  const std::string upper = absl::AsciiStrToUpper(Hex("a"));
  EXPECT_THAT(
      ParseTenantsFile(
          absl::StrCat(R"({"tenants": [{"name": "a", "tokenSha256": ")", upper, R"("}]})"), {}),
      IsOk());
}

TEST(ParseTenantsFileTest, RefusalsNameTheEntryAndNeverQuoteADigest) {
  const std::string digest = Hex("a");
  struct Case {
    std::string contents;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"{", "not a tokens file"},
      {R"({"tenants": [], "extra": 1})", "not a tokens file"},
      {R"({"tenants": []})", "lists no tenants"},
      {File({Entry("", "a")}), "tenants[0]: name must be 1 to 64 of [A-Za-z0-9_.-]"},
      {File({Entry(std::string(65, 'x'), "a")}), "name must be"},
      {File({Entry("a/b", "a")}), "name must be"},
      {File({Entry("a", "x"), Entry("a", "y")}), "tenants[1] (a): the name is used twice"},
      {File({Entry("a", "x"), Entry("b", "x")}),
       "tenants[1] (b): the same token_sha256 as another tenant"},
      {R"({"tenants": [{"name": "a", "token_sha256": "abc"}]})",
       "tenants[0] (a): token_sha256 must be 64 hex digits"},
      {absl::StrCat(R"({"tenants": [{"name": "a", "token_sha256": ")", std::string(63, 'a'),
                    R"(g"}]})"),
       "token_sha256 must be 64 hex digits"},
      {File({Entry("a", "x", R"(, "max_sessions": 0)")}), "max_sessions must be at least 1"},
      {File({Entry("a", "x", R"(, "max_memory_bytes": -5)")}),
       "max_memory_bytes must be at least 1"},
      {File({Entry("a", "x", R"(, "max_concurrent_requests": 0)")}),
       "max_concurrent_requests must be at least 1"},
      {File({Entry("a", "x", R"(, "max_session": 3)")}), "not a tokens file"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<TenantEntry>> entries = ParseTenantsFile(c.contents, {});
    EXPECT_THAT(entries.status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.contents;
    EXPECT_THAT(entries.status().message(), Not(HasSubstr(digest))) << c.contents;
    EXPECT_THAT(entries.status().message(), Not(HasSubstr(Hex("x")))) << c.contents;
  }
}

// ---------------------------------------------------------------- tenant

TEST(TenantTest, ConcurrentRequestsAreBoundedAndSlotsGiveBack) {
  Tenant tenant("team-a", {.max_concurrent_requests = 2});
  absl::StatusOr<Tenant::RequestSlot> one = tenant.BeginRequest();
  absl::StatusOr<Tenant::RequestSlot> two = tenant.BeginRequest();
  ASSERT_THAT(one, IsOk());
  ASSERT_THAT(two, IsOk());
  absl::StatusOr<Tenant::RequestSlot> three = tenant.BeginRequest();
  EXPECT_THAT(three.status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("tenant team-a has 2 requests in flight, its "
                                 "max_concurrent_requests; retry when one has finished")));
  EXPECT_EQ(RetryAfter(three.status()), absl::Seconds(1));
  EXPECT_EQ(tenant.requests_in_flight(), 2);
  Tenant::RequestSlot moved = *std::move(one);
  moved = Tenant::RequestSlot();
  EXPECT_EQ(tenant.requests_in_flight(), 1);
  EXPECT_THAT(tenant.BeginRequest(), IsOk());  // and given back at once
  EXPECT_EQ(tenant.requests_in_flight(), 1);
}

TEST(TenantTest, AnonymousTenantWithoutALimitTakesEverything) {
  Tenant anonymous("", {});
  std::vector<Tenant::RequestSlot> slots;
  for (int i = 0; i < 1000; ++i) {
    absl::StatusOr<Tenant::RequestSlot> slot = anonymous.BeginRequest();
    ASSERT_THAT(slot, IsOk());
    slots.push_back(*std::move(slot));
  }
  EXPECT_EQ(anonymous.Describe(), "the server");
  Tenant limited("", {.max_concurrent_requests = 1});
  absl::StatusOr<Tenant::RequestSlot> held = limited.BeginRequest();
  EXPECT_THAT(limited.BeginRequest().status(), StatusIs(absl::StatusCode::kResourceExhausted,
                                                        HasSubstr("--max_concurrent_requests")));
}

TEST(TenantTest, NewLimitsApplyInPlace) {
  Tenant tenant("a", {.max_memory_bytes = 100});
  ASSERT_THAT(tenant.memory().Take(80), IsOk());
  tenant.set_limits({.max_memory_bytes = 50});
  EXPECT_EQ(tenant.memory().limit(), 50);
  EXPECT_THAT(tenant.memory().Take(1), StatusIs(absl::StatusCode::kResourceExhausted));
  tenant.memory().Give(80);
  EXPECT_THAT(tenant.memory().Take(50), IsOk());
}

TEST(LockoutWarningsTest, NamesTenantsThatCouldTakeEverything) {
  std::vector<std::shared_ptr<Tenant>> tenants = {
      std::make_shared<Tenant>("greedy", TenantLimits{}),
      std::make_shared<Tenant>("modest", TenantLimits{.max_sessions = 4, .max_memory_bytes = 10}),
      std::make_shared<Tenant>("equal", TenantLimits{.max_sessions = 8, .max_memory_bytes = 99}),
  };
  std::vector<std::string> warnings = LockoutWarnings(tenants, 100);
  EXPECT_THAT(warnings, ElementsAre(HasSubstr("tenant greedy may take all 100 bytes")));
  // Alone, a tenant locks nobody out.
  EXPECT_THAT(LockoutWarnings({tenants[0]}, 100), IsEmpty());
}

// ---------------------------------------------------------------- directory

class TenantDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "tenants_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
  }
  void TearDown() override { std::remove(path_.c_str()); }

  void Write(const std::string& contents) {
    const std::string tmp = path_ + ".tmp";
    std::ofstream(tmp) << contents;
    std::rename(tmp.c_str(), path_.c_str());
  }

  std::unique_ptr<TenantDirectory> Load(const std::string& contents) {
    Write(contents);
    absl::StatusOr<std::unique_ptr<TenantDirectory>> directory =
        TenantDirectory::Load(path_, TenantLimits{});
    EXPECT_THAT(directory, IsOk());
    return directory.ok() ? *std::move(directory) : nullptr;
  }

  static AuthResult Auth(const TenantDirectory& directory, std::vector<std::string> values) {
    std::vector<absl::string_view> views(values.begin(), values.end());
    return directory.Authenticate(views);
  }

  static std::string NameFor(const TenantDirectory& directory, absl::string_view token) {
    AuthResult result = Auth(directory, {absl::StrCat("Bearer ", token)});
    return result.tenant == nullptr ? "<refused>" : result.tenant->name();
  }

  std::string path_;
};

TEST_F(TenantDirectoryTest, AuthenticatesBearerTokensOnly) {
  std::unique_ptr<TenantDirectory> directory =
      Load(File({Entry("team-a", "token-a"), Entry("team-b", "token-b")}));
  ASSERT_NE(directory, nullptr);
  EXPECT_EQ(NameFor(*directory, "token-a"), "team-a");
  EXPECT_EQ(NameFor(*directory, "token-b"), "team-b");
  EXPECT_EQ(Auth(*directory, {"bearer token-a"}).tenant->name(), "team-a");
  EXPECT_EQ(Auth(*directory, {"BEARER   token-b "}).tenant->name(), "team-b");
  const std::vector<std::pair<std::vector<std::string>, AuthFailure>> refused = {
      {{}, AuthFailure::kMissing},
      {{"token-a"}, AuthFailure::kMalformed},
      {{"Basic token-a"}, AuthFailure::kMalformed},
      {{"Bearer"}, AuthFailure::kMalformed},
      {{"Bearer "}, AuthFailure::kMalformed},
      {{"Bearer token-a", "Bearer token-a"}, AuthFailure::kMalformed},
      {{"Bearer token-c"}, AuthFailure::kUnknownToken},
      {{"Bearer token-a "}, AuthFailure::kNone},  // surrounding blanks are not the token's
      {{"Bearer token-"}, AuthFailure::kUnknownToken},
      {{"Bearer token-aa"}, AuthFailure::kUnknownToken},
      {{"Bearer " + Hex("token-a")}, AuthFailure::kUnknownToken},  // the digest is no token
  };
  for (const auto& [values, failure] : refused) {
    AuthResult result = Auth(*directory, values);
    EXPECT_EQ(result.failure, failure) << absl::StrJoin(values, "|");
    EXPECT_EQ(result.tenant == nullptr, failure != AuthFailure::kNone)
        << absl::StrJoin(values, "|");
  }
  EXPECT_THAT(directory->tenants(), SizeIs(2));
}

TEST_F(TenantDirectoryTest, LoadRefusesAMissingOrBadFileNamingIt) {
  absl::StatusOr<std::unique_ptr<TenantDirectory>> missing =
      TenantDirectory::Load(path_ + ".missing", {});
  EXPECT_THAT(missing.status(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                         HasSubstr("--auth_tokens_file=" + path_ +
                                                   ".missing: "
                                                   "cannot read it")));
  Write("[]");
  EXPECT_THAT(TenantDirectory::Load(path_, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--auth_tokens_file=" + path_ + ": not a tokens file")));
}

TEST_F(TenantDirectoryTest, ReloadRotatesTokensAndKeepsTenantsByName) {
  std::unique_ptr<TenantDirectory> directory =
      Load(File({Entry("a", "old-a", R"(, "max_sessions": 2)"), Entry("b", "b"), Entry("c", "c")}));
  ASSERT_NE(directory, nullptr);
  std::shared_ptr<Tenant> a = Auth(*directory, {"Bearer old-a"}).tenant;
  std::shared_ptr<Tenant> b = Auth(*directory, {"Bearer b"}).tenant;
  std::shared_ptr<Tenant> c = Auth(*directory, {"Bearer c"}).tenant;
  ASSERT_THAT(a->memory().Take(10), IsOk());

  EXPECT_FALSE(directory->ReloadIfChanged().changed);  // the same file
  Write(File({Entry("a", "new-a", R"(, "max_sessions": 5)"), Entry("b", "b"), Entry("d", "d")}));
  TenantDirectory::Reload reload = directory->ReloadIfChanged();
  EXPECT_TRUE(reload.changed);
  EXPECT_THAT(reload.status, IsOk());
  EXPECT_THAT(reload.added, ElementsAre("d"));
  EXPECT_THAT(reload.updated, ElementsAre("a"));  // b is unchanged
  ASSERT_THAT(reload.removed, SizeIs(1));
  EXPECT_EQ(reload.removed[0], c);
  // The old token stops at once, the new one names the same tenant, whose
  // usage carried over and whose limits changed in place.
  EXPECT_EQ(NameFor(*directory, "old-a"), "<refused>");
  EXPECT_EQ(Auth(*directory, {"Bearer new-a"}).tenant, a);
  EXPECT_EQ(a->limits().max_sessions, 5);
  EXPECT_EQ(a->memory().used(), 10);
  EXPECT_EQ(Auth(*directory, {"Bearer b"}).tenant, b);
  EXPECT_EQ(NameFor(*directory, "c"), "<refused>");
  EXPECT_EQ(NameFor(*directory, "d"), "d");
  EXPECT_FALSE(directory->ReloadIfChanged().changed);
}

TEST_F(TenantDirectoryTest, BadFileKeepsTheTenantsAndIsReportedOnceSettled) {
  std::unique_ptr<TenantDirectory> directory = Load(File({Entry("a", "token-a")}));
  ASSERT_NE(directory, nullptr);
  Write(R"({"tenants": [{"name": "a", "token_sha256": "abc"}]})");
  // Caught once: maybe halfway through a write. Not reported yet.
  EXPECT_FALSE(directory->ReloadIfChanged().changed);
  TenantDirectory::Reload reload = directory->ReloadIfChanged();
  EXPECT_TRUE(reload.changed);
  EXPECT_THAT(reload.status, StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr("token_sha256 must be 64 hex digits")));
  EXPECT_FALSE(directory->ReloadIfChanged().changed);  // said once
  EXPECT_EQ(NameFor(*directory, "token-a"), "a");
  // Missing for a while (a rotation in progress): the same.
  std::remove(path_.c_str());
  EXPECT_FALSE(directory->ReloadIfChanged().changed);
  reload = directory->ReloadIfChanged();
  EXPECT_THAT(reload.status,
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("cannot read it")));
  EXPECT_EQ(NameFor(*directory, "token-a"), "a");
  // A good file again is in force at the first look.
  Write(File({Entry("a", "token-a2")}));
  reload = directory->ReloadIfChanged();
  EXPECT_TRUE(reload.changed);
  EXPECT_THAT(reload.status, IsOk());
  EXPECT_EQ(NameFor(*directory, "token-a2"), "a");
}

TEST_F(TenantDirectoryTest, BackToTheFileInForceIsNoChange) {
  const std::string good = File({Entry("a", "token-a")});
  std::unique_ptr<TenantDirectory> directory = Load(good);
  ASSERT_NE(directory, nullptr);
  Write("{");
  EXPECT_FALSE(directory->ReloadIfChanged().changed);
  Write(good);
  EXPECT_FALSE(directory->ReloadIfChanged().changed);
  Write("{");
  EXPECT_FALSE(directory->ReloadIfChanged().changed);  // settling again from scratch
  EXPECT_TRUE(directory->ReloadIfChanged().changed);
}

}  // namespace
}  // namespace gpuflow::server

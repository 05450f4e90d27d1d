#include "server/memory_budget.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/retry_hint.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

TEST(MemoryBudgetTest, TakesUpToItsLimit) {
  MemoryBudget budget(100);
  EXPECT_THAT(budget.Take(60), IsOk());
  absl::Status over = budget.Take(41);
  EXPECT_THAT(over, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("40 of 100")));
  EXPECT_TRUE(RetryAfter(over).has_value());
  budget.Give(60);
  EXPECT_THAT(budget.Take(100), IsOk());
  EXPECT_EQ(budget.used(), 100);
}

// Without a reserve, one owner may take everything (a server without
// tenants, or one tenant).
TEST(MemoryBudgetTest, OwnersShareFreelyWithoutAReserve) {
  int a = 0;
  MemoryBudget budget(100);
  EXPECT_THAT(budget.Take(100, &a), IsOk());
  MemoryBudget one(100);
  one.set_tenant_reserve([] { return 1; }, 50);
  EXPECT_THAT(one.Take(100, &a), IsOk());
}

// Regression (issue 14): a tenant without limits could fill the server's
// memory and lock the others out.
TEST(MemoryBudgetTest, EachTenantKeepsItsReserve) {
  int a = 0, b = 0, c = 0;
  int tenants = 3;
  MemoryBudget budget(90, "server memory exhausted (--max_memory_bytes)");
  budget.set_tenant_reserve([&tenants] { return tenants; }, /*reserve=*/1000);  // 90/3 = 30
  // A may take its own 30 and whatever leaves B's and C's 30 each free.
  EXPECT_THAT(budget.Take(30, &a), IsOk());
  absl::Status greedy = budget.Take(1, &a);
  EXPECT_THAT(greedy, StatusIs(absl::StatusCode::kResourceExhausted,
                               HasSubstr("kept for tenants that hold less than their share")));
  EXPECT_TRUE(RetryAfter(greedy).has_value());
  // B and C always find theirs.
  EXPECT_THAT(budget.Take(30, &b), IsOk());
  EXPECT_THAT(budget.Take(10, &c), IsOk());
  // C's unused 20 stays kept from A and B...
  EXPECT_THAT(budget.Take(1, &b), StatusIs(absl::StatusCode::kResourceExhausted));
  // ... but not from C.
  EXPECT_THAT(budget.Take(20, &c), IsOk());
  EXPECT_EQ(budget.used(), 90);
  // Bytes given back go to the owner's account: A under its share again.
  budget.Give(30, &a);
  EXPECT_THAT(budget.Take(30, &a), IsOk());
  // A reserve is at most the default quota: with a small one, the rest is
  // shared freely.
  MemoryBudget small(90);
  small.set_tenant_reserve([&tenants] { return tenants; }, /*reserve=*/10);
  EXPECT_THAT(small.Take(70, &a), IsOk());  // leaves 10 each for B and C
  EXPECT_THAT(small.Take(1, &a), StatusIs(absl::StatusCode::kResourceExhausted));
  tenants = 2;  // a reload removed C
  EXPECT_THAT(small.Take(10, &a), IsOk());
}

}  // namespace
}  // namespace gpuflow::server

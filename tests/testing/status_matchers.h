// GoogleTest matchers for absl::Status and absl::StatusOr<T>.
//
//   EXPECT_THAT(registry.Close(id), IsOk());
//   EXPECT_THAT(ParseDType("float"), StatusIs(absl::StatusCode::kInvalidArgument,
//                                             HasSubstr("'float'")));
//   EXPECT_THAT(ParseByteCount("1KiB"), IsOkAndHolds(1024));
//   ASSERT_OK_AND_ASSIGN(Shape shape, Shape::Create({2, 3}));
//
// IsOk and StatusIs accept either type; on a mismatch every matcher prints
// the status.
#ifndef GPUFLOW_TESTS_TESTING_STATUS_MATCHERS_H_
#define GPUFLOW_TESTS_TESTING_STATUS_MATCHERS_H_

#include <ostream>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpuflow::testing {

namespace internal_status {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

class IsOkMatcher {
 public:
  template <typename StatusType>
  bool MatchAndExplain(const StatusType& value, ::testing::MatchResultListener* listener) const {
    const absl::Status& status = GetStatus(value);
    if (!status.ok()) *listener << "whose status is " << status;
    return status.ok();
  }
  void DescribeTo(std::ostream* os) const { *os << "is OK"; }
  void DescribeNegationTo(std::ostream* os) const { *os << "is not OK"; }
};

class StatusIsMatcher {
 public:
  StatusIsMatcher(::testing::Matcher<absl::StatusCode> code,
                  ::testing::Matcher<const std::string&> message)
      : code_(std::move(code)), message_(std::move(message)) {}

  template <typename StatusType>
  bool MatchAndExplain(const StatusType& value, ::testing::MatchResultListener* listener) const {
    const absl::Status& status = GetStatus(value);
    *listener << "whose status is " << status;
    return code_.Matches(status.code()) && message_.Matches(std::string(status.message()));
  }
  void DescribeTo(std::ostream* os) const {
    *os << "has a status code that ";
    code_.DescribeTo(os);
    *os << " and a message that ";
    message_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "has a status code that ";
    code_.DescribeNegationTo(os);
    *os << " or a message that ";
    message_.DescribeNegationTo(os);
  }

 private:
  ::testing::Matcher<absl::StatusCode> code_;
  ::testing::Matcher<const std::string&> message_;
};

template <typename StatusOrType>
class IsOkAndHoldsMatcherImpl : public ::testing::MatcherInterface<StatusOrType> {
 public:
  using value_type = typename std::remove_cv_t<std::remove_reference_t<StatusOrType>>::value_type;

  template <typename InnerMatcher>
  explicit IsOkAndHoldsMatcherImpl(InnerMatcher&& inner)
      : inner_(::testing::SafeMatcherCast<const value_type&>(std::forward<InnerMatcher>(inner))) {}

  void DescribeTo(std::ostream* os) const override {
    *os << "is OK and has a value that ";
    inner_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const override {
    *os << "is not OK or has a value that ";
    inner_.DescribeNegationTo(os);
  }
  bool MatchAndExplain(StatusOrType actual,
                       ::testing::MatchResultListener* listener) const override {
    if (!actual.ok()) {
      *listener << "whose status is " << actual.status();
      return false;
    }
    ::testing::StringMatchResultListener inner_listener;
    const bool matches = inner_.MatchAndExplain(*actual, &inner_listener);
    *listener << "whose value " << ::testing::PrintToString(*actual)
              << (matches ? " matches" : " doesn't match");
    if (const std::string explanation = inner_listener.str(); !explanation.empty()) {
      *listener << ", " << explanation;
    }
    return matches;
  }

 private:
  const ::testing::Matcher<const value_type&> inner_;
};

template <typename InnerMatcher>
class IsOkAndHoldsMatcher {
 public:
  explicit IsOkAndHoldsMatcher(InnerMatcher inner) : inner_(std::move(inner)) {}

  template <typename StatusOrType>
  operator ::testing::Matcher<StatusOrType>() const {  // NOLINT(google-explicit-constructor)
    return ::testing::Matcher<StatusOrType>(
        new IsOkAndHoldsMatcherImpl<const StatusOrType&>(inner_));
  }

 private:
  const InnerMatcher inner_;
};

}  // namespace internal_status

// Matches an OK absl::Status or an absl::StatusOr<T> holding a value.
inline ::testing::PolymorphicMatcher<internal_status::IsOkMatcher> IsOk() {
  return ::testing::MakePolymorphicMatcher(internal_status::IsOkMatcher());
}

// Matches a status (or a StatusOr's status) whose code matches `code` and
// whose message matches `message` (a string or a matcher such as HasSubstr).
template <typename CodeMatcher, typename MessageMatcher>
::testing::PolymorphicMatcher<internal_status::StatusIsMatcher> StatusIs(CodeMatcher code,
                                                                         MessageMatcher message) {
  return ::testing::MakePolymorphicMatcher(internal_status::StatusIsMatcher(
      ::testing::MatcherCast<absl::StatusCode>(std::move(code)),
      ::testing::MatcherCast<const std::string&>(std::move(message))));
}
template <typename CodeMatcher>
::testing::PolymorphicMatcher<internal_status::StatusIsMatcher> StatusIs(CodeMatcher code) {
  return StatusIs(std::move(code), ::testing::_);
}

// Matches an OK absl::StatusOr<T> whose value matches `value` (a value or a
// matcher).
template <typename InnerMatcher>
internal_status::IsOkAndHoldsMatcher<std::decay_t<InnerMatcher>> IsOkAndHolds(
    InnerMatcher&& value) {
  return internal_status::IsOkAndHoldsMatcher<std::decay_t<InnerMatcher>>(
      std::forward<InnerMatcher>(value));
}

}  // namespace gpuflow::testing

#define GPUFLOW_STATUS_MATCHERS_CONCAT_INNER_(a, b) a##b
#define GPUFLOW_STATUS_MATCHERS_CONCAT_(a, b) GPUFLOW_STATUS_MATCHERS_CONCAT_INNER_(a, b)

// Evaluates `rexpr` (an absl::StatusOr<T>), fails the test with its status
// unless it is OK, and otherwise moves its value into `lhs` (a declaration
// such as `Shape shape` or an existing variable). Only in functions that
// return void, like ASSERT_*.
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr)                                                       \
  ASSERT_OK_AND_ASSIGN_IMPL_(GPUFLOW_STATUS_MATCHERS_CONCAT_(status_or_value_, __LINE__), lhs, \
                             rexpr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, rexpr)                \
  auto statusor = (rexpr);                                              \
  ASSERT_THAT(statusor.status(), ::gpuflow::testing::IsOk()) << #rexpr; \
  lhs = std::move(statusor).value()

#endif  // GPUFLOW_TESTS_TESTING_STATUS_MATCHERS_H_

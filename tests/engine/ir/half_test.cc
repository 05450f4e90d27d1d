#include "engine/ir/half.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace gpuflow {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool IsNaNBits16BF(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0; }

TEST(HalfTest, EveryHalfRoundTripsThroughFloatAndDouble) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const Half h = Half::FromBits(static_cast<uint16_t>(b));
    if (h.IsNaN()) {
      EXPECT_TRUE(std::isnan(h.ToFloat())) << b;
      EXPECT_TRUE(Half::FromFloat(h.ToFloat()).IsNaN()) << b;
      EXPECT_EQ(Half::FromFloat(h.ToFloat()).bits & 0x8000, b & 0x8000) << b;
      continue;
    }
    ASSERT_EQ(Half::FromFloat(h.ToFloat()).bits, b) << "bits " << b << " value " << h.ToFloat();
    ASSERT_EQ(Half::FromDouble(h.ToDouble()).bits, b) << b;
  }
}

TEST(HalfTest, EveryBFloat16RoundTripsThroughFloatAndDouble) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const BFloat16 h = BFloat16::FromBits(static_cast<uint16_t>(b));
    if (h.IsNaN()) {
      EXPECT_TRUE(std::isnan(h.ToFloat())) << b;
      EXPECT_TRUE(BFloat16::FromFloat(h.ToFloat()).IsNaN()) << b;
      continue;
    }
    ASSERT_EQ(BFloat16::FromFloat(h.ToFloat()).bits, b) << b;
    ASSERT_EQ(BFloat16::FromDouble(h.ToDouble()).bits, b) << b;
  }
}

TEST(HalfTest, KnownValues) {
  EXPECT_EQ(Half::FromDouble(0.1).bits, 0x2E66);
  EXPECT_EQ(Half::FromDouble(1.0).bits, 0x3C00);
  EXPECT_EQ(Half::FromDouble(-2.0).bits, 0xC000);
  EXPECT_EQ(Half::FromDouble(-0.0).bits, 0x8000);
  EXPECT_EQ(Half::FromDouble(65504.0).bits, 0x7BFF);
  EXPECT_EQ(Half::FromDouble(65519.99).bits, 0x7BFF);
  EXPECT_EQ(Half::FromDouble(65520.0).bits, 0x7C00);  // tie rounds to even: infinity
  EXPECT_EQ(Half::FromDouble(1e300).bits, 0x7C00);
  EXPECT_EQ(Half::FromDouble(-kInf).bits, 0xFC00);
  EXPECT_EQ(Half::FromDouble(0x1p-24).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(Half::FromDouble(0x1p-25).bits, 0x0000);  // tie to even: zero
  EXPECT_EQ(Half::FromDouble(0x1.000001p-25).bits, 0x0001);
  EXPECT_EQ(Half::FromDouble(0x3p-25).bits, 0x0002);      // tie to even: 2
  EXPECT_EQ(Half::FromDouble(0x1p-14).bits, 0x0400);      // smallest normal
  EXPECT_EQ(Half::FromDouble(0x1.ff8p-15).bits, 0x03FF);  // largest subnormal
  EXPECT_EQ(Half::FromDouble(0x1.ffcp-15).bits, 0x0400);  // tie: up into the normals
  EXPECT_EQ(Half::FromDouble(1e-300).bits, 0x0000);
  EXPECT_EQ(Half::FromDouble(-1e-300).bits, 0x8000);
  EXPECT_EQ(Half::FromDouble(std::numeric_limits<double>::denorm_min()).bits, 0);
  EXPECT_EQ(Half::FromDouble(1.0 + 0x1p-11).bits, 0x3C00);  // tie to even
  EXPECT_EQ(Half::FromDouble(1.0 + 0x3p-11).bits, 0x3C02);  // tie to even
  EXPECT_TRUE(Half::FromDouble(kNaN).IsNaN());
  EXPECT_TRUE(Half::FromDouble(-kNaN).IsNaN());
  EXPECT_EQ(Half::FromDouble(-kNaN).bits & 0x8000, 0x8000);
  EXPECT_EQ(Half::FromBits(0x0001).ToDouble(), 0x1p-24);
  EXPECT_EQ(Half::FromBits(0x7BFF).ToDouble(), 65504.0);
  EXPECT_EQ(Half::FromBits(0x7C00).ToDouble(), kInf);

  EXPECT_EQ(BFloat16::FromDouble(1.0).bits, 0x3F80);
  EXPECT_EQ(BFloat16::FromFloat(std::numeric_limits<float>::max()).bits, 0x7F80);
  EXPECT_EQ(BFloat16::FromDouble(1e39).bits, 0x7F80);
  EXPECT_EQ(BFloat16::FromDouble(0x1p-133).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(BFloat16::FromDouble(0x1p-134).bits, 0x0000);
  EXPECT_EQ(BFloat16::FromDouble(1.0 + 0x1p-8).bits, 0x3F80);
  EXPECT_EQ(BFloat16::FromDouble(1.0 + 0x3p-8).bits, 0x3F82);
  EXPECT_TRUE(BFloat16::FromDouble(kNaN).IsNaN());
  // A NaN keeps its sign and leading payload.
  EXPECT_EQ(BFloat16::FromFloat(std::bit_cast<float>(0xFFC12345u)).bits, 0xFFC1);
}

// Between every two adjacent finite values, the exact midpoint goes to the
// even one and anything off it to the nearer one.
template <typename T>
void CheckMidpoints(uint16_t max_finite) {
  for (uint32_t b = 0; b < max_finite; ++b) {
    const double lo = T::FromBits(static_cast<uint16_t>(b)).ToDouble();
    const double hi = T::FromBits(static_cast<uint16_t>(b + 1)).ToDouble();
    const double mid = (lo + hi) / 2;  // exact in double
    const uint16_t even = (b & 1) == 0 ? b : b + 1;
    ASSERT_EQ(T::FromDouble(mid).bits, even) << b;
    ASSERT_EQ(T::FromDouble(std::nextafter(mid, kInf)).bits, b + 1) << b;
    ASSERT_EQ(T::FromDouble(std::nextafter(mid, -kInf)).bits, b) << b;
    ASSERT_EQ(T::FromDouble(-mid).bits, even | 0x8000) << b;
  }
}

TEST(HalfTest, MidpointsRoundToEven) {
  CheckMidpoints<Half>(0x7BFF);
  CheckMidpoints<BFloat16>(0x7F7F);
}

#if defined(__FLT16_MANT_DIG__)
// The compiler's _Float16 conversions (libgcc's soft-float, correctly
// rounded) are an independent reference.
TEST(HalfTest, MatchesCompilerFloat16FromFloatAndDouble) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 2000000; ++i) {
    // Random bit patterns cover every exponent, subnormals, NaN and inf.
    const float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    const double d = std::bit_cast<double>(rng());
    const _Float16 hf = static_cast<_Float16>(f);
    const _Float16 hd = static_cast<_Float16>(d);
    if (std::isnan(f)) {
      EXPECT_TRUE(Half::FromFloat(f).IsNaN());
    } else {
      ASSERT_EQ(Half::FromFloat(f).bits, std::bit_cast<uint16_t>(hf)) << f;
    }
    if (!std::isnan(d)) {
      ASSERT_EQ(Half::FromDouble(d).bits, std::bit_cast<uint16_t>(hd)) << d;
    }
    // Values near the half range.
    const double near = std::ldexp(static_cast<double>(rng() >> 11) * 0x1p-53, -30 + i % 48);
    ASSERT_EQ(Half::FromDouble(near).bits, std::bit_cast<uint16_t>(static_cast<_Float16>(near)))
        << near;
  }
}

TEST(HalfTest, MatchesCompilerFloat16FromIntegers) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const int64_t v = static_cast<int64_t>(rng()) >> (i % 64);
    ASSERT_EQ(Half::FromInt64(v).bits, std::bit_cast<uint16_t>(static_cast<_Float16>(v))) << v;
    const uint64_t u = rng() >> (i % 64);
    ASSERT_EQ(Half::FromUInt64(u).bits, std::bit_cast<uint16_t>(static_cast<_Float16>(u))) << u;
  }
  for (int64_t v = -70000; v <= 70000; ++v) {
    ASSERT_EQ(Half::FromInt64(v).bits, std::bit_cast<uint16_t>(static_cast<_Float16>(v))) << v;
  }
}
#endif

// bfloat16 from float by the usual bit trick, for finite floats.
uint16_t ReferenceBFloat16(float f) {
  const uint32_t b = std::bit_cast<uint32_t>(f);
  return static_cast<uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

TEST(HalfTest, BFloat16MatchesBitTrickForFloats) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 4000000; ++i) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) {
      EXPECT_TRUE(BFloat16::FromFloat(f).IsNaN());
      continue;
    }
    ASSERT_EQ(BFloat16::FromFloat(f).bits, ReferenceBFloat16(f)) << f;
  }
}

// A 64-bit integer rounds once: not through double, whose rounding could
// land exactly on a bfloat16 midpoint.
TEST(HalfTest, BFloat16FromIntegersRoundsOnce) {
  // 2^60 + 2^52 + 1 is just above the midpoint between 2^60 and the next
  // bfloat16 (2^60 + 2^53); as a double it becomes the midpoint itself.
  const int64_t v = (int64_t{1} << 60) + (int64_t{1} << 52) + 1;
  EXPECT_EQ(BFloat16::FromInt64(v).ToDouble(), std::ldexp(1.0, 60) + std::ldexp(1.0, 53));
  EXPECT_EQ(BFloat16::FromInt64(-v).ToDouble(), -(std::ldexp(1.0, 60) + std::ldexp(1.0, 53)));
  EXPECT_EQ(BFloat16::FromInt64(v - 1).ToDouble(), std::ldexp(1.0, 60));  // tie to even
  EXPECT_EQ(BFloat16::FromInt64(std::numeric_limits<int64_t>::min()).ToDouble(), -0x1p63);
  EXPECT_EQ(BFloat16::FromUInt64(std::numeric_limits<uint64_t>::max()).ToDouble(), 0x1p64);
  EXPECT_EQ(Half::FromUInt64(std::numeric_limits<uint64_t>::max()).bits, 0x7C00);
  if constexpr (std::numeric_limits<long double>::digits < 64) GTEST_SKIP();
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200000; ++i) {
    const int64_t x = static_cast<int64_t>(rng()) >> (i % 60);
    // Reference: the nearer of the bfloat16 neighbours, compared exactly in
    // long double (64-bit mantissa on x86-64; exact for int64).
    const long double lx = static_cast<long double>(x);
    const uint16_t guess = BFloat16::FromDouble(static_cast<double>(x)).bits;
    uint16_t best = guess;
    long double best_err = -1;
    for (int delta = -2; delta <= 2; ++delta) {
      const uint16_t c = static_cast<uint16_t>(guess + delta);
      if (IsNaNBits16BF(c) || (c & 0x7FFF) >= 0x7F80) continue;
      if ((c & 0x8000) != (guess & 0x8000)) continue;
      const long double err =
          std::fabs(static_cast<long double>(BFloat16::FromBits(c).ToFloat()) - lx);
      if (best_err < 0 || err < best_err || (err == best_err && (c & 1) == 0)) {
        best = c;
        best_err = err;
      }
    }
    ASSERT_EQ(BFloat16::FromInt64(x).bits, best) << x;
  }
}

}  // namespace
}  // namespace gpuflow

// The two 16-bit float formats gpuflow stores, as bit containers with exact,
// correctly rounded conversions (no hardware support needed):
//  - Half: IEEE 754 binary16 (1 sign, 5 exponent, 10 mantissa bits), NumPy's
//    float16;
//  - BFloat16: the upper 16 bits of an IEEE binary32 (8 exponent, 7 mantissa
//    bits).
// Every conversion into them rounds once, to nearest with ties to even,
// including from double and from 64-bit integers (no double rounding through
// float); overflow gives infinity, subnormals are kept, a NaN stays a NaN of
// the same sign (quiet, with its leading payload bits). Conversions out of
// them are exact.
//
//   Half h = Half::FromDouble(0.1);   // h.bits == 0x2E66
//   float f = h.ToFloat();            // 0.0999755859375f
//   BFloat16 b = BFloat16::FromFloat(f);
//
// Header-only, constexpr-free, thread-safe.
#ifndef GPUFLOW_ENGINE_IR_HALF_H_
#define GPUFLOW_ENGINE_IR_HALF_H_

#include <bit>
#include <cmath>
#include <cstdint>

namespace gpuflow {

namespace internal_half {

// Rounds `d` to a binary float with kExpBits exponent bits and kMantBits
// explicit mantissa bits (IEEE layout, bias 2^(kExpBits-1) - 1) and returns
// its bits, sign included.
template <int kExpBits, int kMantBits>
uint32_t RoundDoubleToBits(double d) {
  constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  constexpr uint32_t kInfBits = ((uint32_t{1} << kExpBits) - 1) << kMantBits;
  constexpr uint32_t kQuietBit = uint32_t{1} << (kMantBits - 1);
  const uint64_t b = std::bit_cast<uint64_t>(d);
  const uint32_t sign = static_cast<uint32_t>(b >> 63) << (kExpBits + kMantBits);
  const int biased = static_cast<int>((b >> 52) & 0x7FF);
  const uint64_t fraction = b & ((uint64_t{1} << 52) - 1);
  if (biased == 0x7FF) {
    if (fraction == 0) return sign | kInfBits;
    return sign | kInfBits | kQuietBit | static_cast<uint32_t>(fraction >> (52 - kMantBits));
  }
  // Double subnormals (and zero) are far below the smallest subnormal of
  // either target format.
  if (biased == 0) return sign;
  const int e = biased - 1023;
  if (e > kBias) return sign | kInfBits;
  const uint64_t m = fraction | (uint64_t{1} << 52);
  // The exponent of one unit in the last place of the result: that of the
  // value's binade, or of the subnormal range.
  const int ulp_exp = (e < 1 - kBias ? 1 - kBias : e) - kMantBits;
  const int shift = 52 + ulp_exp - e;  // >= 52 - kMantBits
  if (shift > 53) return sign;         // below half the smallest subnormal
  uint64_t q = m >> shift;
  const uint64_t rem = m & ((uint64_t{1} << shift) - 1);
  const uint64_t halfway = uint64_t{1} << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1) != 0)) ++q;
  // q counts ulps and includes the implicit bit for normal values, so adding
  // it to (biased exponent - 1) << kMantBits gives the bits; a carry out of
  // the mantissa moves to the next binade (or to infinity) by itself.
  const uint64_t base = e < 1 - kBias ? 0 : static_cast<uint64_t>(e + kBias - 1) << kMantBits;
  const uint64_t bits = base + q;
  if (bits >= kInfBits) return sign | kInfBits;
  return sign | static_cast<uint32_t>(bits);
}

// |v| rounded to kBits significant bits (ties to even), as an exact double.
template <int kBits>
double RoundMagnitude(uint64_t v) {
  static_assert(kBits <= 53);
  const int width = 64 - std::countl_zero(v);
  if (width <= kBits) return static_cast<double>(v);
  const int drop = width - kBits;
  uint64_t q = v >> drop;
  const uint64_t rem = v & ((uint64_t{1} << drop) - 1);
  const uint64_t halfway = uint64_t{1} << (drop - 1);
  if (rem > halfway || (rem == halfway && (q & 1) != 0)) ++q;
  return std::ldexp(static_cast<double>(q), drop);
}

// An integer rounded once to kBits significant bits, as an exact double (the
// target's exponent range then only decides overflow).
template <int kBits>
double RoundInt(int64_t v) {
  const uint64_t magnitude = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : v;
  const double r = RoundMagnitude<kBits>(magnitude);
  return v < 0 ? -r : r;
}

}  // namespace internal_half

// IEEE binary16.
struct Half {
  uint16_t bits = 0;

  static Half FromBits(uint16_t bits) { return Half{bits}; }
  static Half FromDouble(double v) {
    return Half{static_cast<uint16_t>(internal_half::RoundDoubleToBits<5, 10>(v))};
  }
  static Half FromFloat(float v) { return FromDouble(static_cast<double>(v)); }
  static Half FromInt64(int64_t v) { return FromDouble(internal_half::RoundInt<11>(v)); }
  static Half FromUInt64(uint64_t v) { return FromDouble(internal_half::RoundMagnitude<11>(v)); }

  float ToFloat() const {
    const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    const uint32_t exponent = (bits >> 10) & 0x1Fu;
    const uint32_t mantissa = bits & 0x3FFu;
    if (exponent == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
    if (exponent == 0) {
      const float v = static_cast<float>(mantissa) * 0x1p-24f;  // exact
      return sign != 0 ? -v : v;
    }
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  }
  double ToDouble() const { return static_cast<double>(ToFloat()); }

  bool IsNaN() const { return (bits & 0x7C00u) == 0x7C00u && (bits & 0x3FFu) != 0; }
  friend bool operator==(Half a, Half b) { return a.bits == b.bits; }
};

// bfloat16: the upper half of an IEEE binary32.
struct BFloat16 {
  uint16_t bits = 0;

  static BFloat16 FromBits(uint16_t bits) { return BFloat16{bits}; }
  static BFloat16 FromDouble(double v) {
    return BFloat16{static_cast<uint16_t>(internal_half::RoundDoubleToBits<8, 7>(v))};
  }
  static BFloat16 FromFloat(float v) { return FromDouble(static_cast<double>(v)); }
  static BFloat16 FromInt64(int64_t v) { return FromDouble(internal_half::RoundInt<8>(v)); }
  static BFloat16 FromUInt64(uint64_t v) { return FromDouble(internal_half::RoundMagnitude<8>(v)); }

  float ToFloat() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
  double ToDouble() const { return static_cast<double>(ToFloat()); }

  bool IsNaN() const { return (bits & 0x7F80u) == 0x7F80u && (bits & 0x7Fu) != 0; }
  friend bool operator==(BFloat16 a, BFloat16 b) { return a.bits == b.bits; }
};

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_IR_HALF_H_

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11) and the exact conversions gpuflow's random ops use, so every
// backend draws the same numbers for the same seed. Header-only and free of
// host-only constructs so code generation can emit the same formulas.
#ifndef GPUFLOW_ENGINE_IR_PHILOX_H_
#define GPUFLOW_ENGINE_IR_PHILOX_H_

#include <array>
#include <cmath>
#include <cstdint>

namespace gpuflow::philox {

using Words = std::array<uint32_t, 4>;

inline Words Philox4x32_10(uint64_t counter, uint64_t seed) {
  constexpr uint32_t kM0 = 0xD2511F53u;
  constexpr uint32_t kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u;
  constexpr uint32_t kW1 = 0xBB67AE85u;
  uint32_t c0 = static_cast<uint32_t>(counter);
  uint32_t c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = 0;
  uint32_t c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed);
  uint32_t k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n1 = static_cast<uint32_t>(p1);
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    const uint32_t n3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  return {c0, c1, c2, c3};
}

// Uniform in [0, 1) with 24 random bits (float16, bfloat16, float32 results).
inline float Uniform24(uint32_t w) { return static_cast<float>(w >> 8) * 0x1p-24f; }
// Uniform in [0, 1) with 53 random bits (float64 results).
inline double Uniform53(uint32_t hi, uint32_t lo) {
  const uint64_t bits = ((static_cast<uint64_t>(hi) << 32) | lo) >> 11;
  return static_cast<double>(bits) * 0x1p-53;
}

// Element i of random_uniform(low, high) in double precision; the caller
// rounds to the output dtype. `wide` selects the 53-bit form (float64).
inline double UniformAt(uint64_t i, uint64_t seed, bool wide, double low, double high) {
  const Words w = Philox4x32_10(i, seed);
  const double u = wide ? Uniform53(w[0], w[1]) : static_cast<double>(Uniform24(w[0]));
  return low + (high - low) * u;
}

// Element i of random_normal(mean, std): Box-Muller on two uniforms, the
// first moved into (0, 1] so its log is finite.
inline double NormalAt(uint64_t i, uint64_t seed, bool wide, double mean, double std) {
  const Words w = Philox4x32_10(i, seed);
  double u1 = 0;
  double u2 = 0;
  if (wide) {
    u1 = 1.0 - Uniform53(w[0], w[1]);
    u2 = Uniform53(w[2], w[3]);
  } else {
    u1 = 1.0 - static_cast<double>(Uniform24(w[0]));
    u2 = static_cast<double>(Uniform24(w[1]));
  }
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return mean + std * std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

}  // namespace gpuflow::philox

#endif  // GPUFLOW_ENGINE_IR_PHILOX_H_

// NumPy broadcasting of shapes.
//
//   BroadcastShapes(*Shape::Create({3, 1}), *Shape::Create({4}));  // (3, 4)
//   BroadcastShapes({a, b, c});                 // the shape of where(a, b, c)
//   CheckBroadcastableTo(*Shape::Create({3}), *Shape::Create({2, 3}));  // OK
//
// Pure functions; thread-safe.
#ifndef GPUFLOW_ENGINE_IR_BROADCAST_H_
#define GPUFLOW_ENGINE_IR_BROADCAST_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/ir/shape.h"

namespace gpuflow {

// The shape NumPy broadcasts `shapes` to: dimensions are aligned from the
// right, missing ones count as 1, and each result dimension is the one size
// other than 1 that appears (or 1). No shapes give the 0-d shape.
// INVALID_ARGUMENT "shapes (3,) and (4,) cannot be broadcast together"
// ("shapes (3,), (4,) and (5,) ..." for more).
absl::StatusOr<Shape> BroadcastShapes(absl::Span<const Shape> shapes);
absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// OK when `from` broadcasts to exactly `to` (numpy.broadcast_to): `from` has
// at most to.rank() dimensions and each is 1 or equal to the aligned one of
// `to`. INVALID_ARGUMENT "cannot broadcast shape (3,) to (4,)" otherwise.
absl::Status CheckBroadcastableTo(const Shape& from, const Shape& to);

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_IR_BROADCAST_H_

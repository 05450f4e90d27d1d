#include "engine/ir/broadcast.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpuflow {

namespace {

std::string CannotBroadcast(absl::Span<const Shape> shapes) {
  std::vector<std::string> names;
  names.reserve(shapes.size());
  for (const Shape& s : shapes) names.push_back(s.ToString());
  const std::string last = names.back();
  names.pop_back();
  return absl::StrCat("shapes ", absl::StrJoin(names, ", "), " and ", last,
                      " cannot be broadcast together");
}

}  // namespace

absl::StatusOr<Shape> BroadcastShapes(absl::Span<const Shape> shapes) {
  int rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.rank());
  std::vector<int64_t> dims(rank, 1);
  for (const Shape& s : shapes) {
    const int offset = rank - s.rank();
    for (int i = 0; i < s.rank(); ++i) {
      const int64_t d = s.dim(i);
      int64_t& out = dims[offset + i];
      if (d == out || d == 1) continue;
      if (out != 1) return absl::InvalidArgumentError(CannotBroadcast(shapes));
      out = d;
    }
  }
  return Shape::Create(dims);
}

absl::StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const Shape shapes[] = {a, b};
  return BroadcastShapes(shapes);
}

absl::Status CheckBroadcastableTo(const Shape& from, const Shape& to) {
  bool ok = from.rank() <= to.rank();
  for (int i = 0; ok && i < from.rank(); ++i) {
    const int64_t d = from.dim(i);
    ok = d == 1 || d == to.dim(to.rank() - from.rank() + i);
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("cannot broadcast shape ", from.ToString(), " to ", to.ToString()));
}

}  // namespace gpuflow

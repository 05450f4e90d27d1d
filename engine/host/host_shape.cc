// Shape ops. Each is a strided copy: reshape, expand_dims and squeeze copy in
// order; transpose, broadcast_to and slice read the input through permuted,
// zero or scaled (possibly negative) strides; concatenate and stack write each
// input into its part of the output, converting to the promoted dtype; take
// and take_along_axis read the input at offsets their indices give
// (engine/ir/gather.h).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/host/host_kernels_internal.h"
#include "engine/ir/gather.h"

namespace gpuflow::host_internal {

void CopyStrided(const StridedLoop& loop, DType src_dtype, const std::byte* src, DType dst_dtype,
                 std::byte* dst, const HostKernelOptions& options) {
  // Bool is converted even to itself, so that any nonzero byte becomes 1.
  const bool raw = src_dtype == dst_dtype && src_dtype != DType::kBool;
  const int64_t size = ItemSize(dst_dtype);
  const LoadFn load = GetLoadFn(src_dtype, dst_dtype);
  const StoreFn store = GetStoreFn(ClassOf(dst_dtype), dst_dtype);
  ParallelFor(loop.num_elements(), 1, options, [&](int64_t begin, int64_t end) {
    // Any compute value (a Complex128 is 16 bytes) for kBlock elements.
    alignas(kMaxComputeBytes) std::byte buf[kBlock * kMaxComputeBytes];
    ForEachRun(loop, begin, end, [&](int64_t n, const int64_t* off, const int64_t* step) {
      if (!raw) {
        load(src, off[1], step[1], n, buf);
        store(buf, n, dst, off[0], step[0]);
      } else if (step[0] == 1 && step[1] == 1) {
        std::memcpy(dst + off[0] * size, src + off[1] * size, n * size);
      } else {
        for (int64_t i = 0; i < n; ++i) {
          std::memcpy(dst + (off[0] + i * step[0]) * size, src + (off[1] + i * step[1]) * size,
                      size);
        }
      }
    });
  });
}

namespace {

absl::Status Mismatch(const ValidatedNode& node, const HostConstView& in, const HostView& out) {
  return absl::InvalidArgumentError(absl::StrCat(
      "'", node.op->name, "' cannot turn ", in.shape.ToString(), " into ", out.shape.ToString()));
}

// Copies `in` into `out` in C order (reshape, expand_dims, squeeze).
absl::Status CopyInOrder(const ValidatedNode& node, const HostConstView& in, const HostView& out,
                         const HostKernelOptions& options) {
  if (in.shape.num_elements() != out.shape.num_elements()) return Mismatch(node, in, out);
  StridedLoop loop;
  loop.dims = {out.shape.num_elements()};
  loop.AddOperand({1});
  loop.AddOperand({1});
  CopyStrided(loop, in.dtype, in.data, out.dtype, out.data, options);
  return absl::OkStatus();
}

// Copies `in`, read through `in_strides` (and `in_base`) over the output's
// dimensions, into `out`.
void Gather(const HostConstView& in, std::vector<int64_t> in_strides, int64_t in_base,
            const HostView& out, const HostKernelOptions& options) {
  StridedLoop loop;
  loop.dims.assign(out.shape.dims().begin(), out.shape.dims().end());
  loop.AddOperand(ContiguousStrides(out.shape.dims()));
  loop.AddOperand(std::move(in_strides), in_base);
  loop.Simplify();
  CopyStrided(loop, in.dtype, in.data, out.dtype, out.data, options);
}

absl::Status Transpose(const ValidatedNode& node, const HostConstView& in, const HostView& out,
                       const HostKernelOptions& options) {
  const int rank = in.shape.rank();
  std::vector<int64_t> perm;
  if (HasAttr(node, "axes")) {
    absl::StatusOr<std::vector<int64_t>> axes = GetIntsAttr(node, "axes");
    if (!axes.ok()) return axes.status();
    perm = *std::move(axes);
  } else {
    for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int>(perm.size()) != rank || out.shape.rank() != rank) {
    return Mismatch(node, in, out);
  }
  const std::vector<int64_t> in_strides = ContiguousStrides(in.shape.dims());
  std::vector<int64_t> strides(rank);
  std::vector<bool> seen(rank, false);
  for (int d = 0; d < rank; ++d) {
    const int64_t p = perm[d];
    if (p < 0 || p >= rank || seen[p] || in.shape.dim(p) != out.shape.dim(d)) {
      return Mismatch(node, in, out);
    }
    seen[p] = true;
    strides[d] = in_strides[p];
  }
  Gather(in, std::move(strides), 0, out, options);
  return absl::OkStatus();
}

absl::Status BroadcastTo(const ValidatedNode& node, const HostConstView& in, const HostView& out,
                         const HostKernelOptions& options) {
  const int lead = out.shape.rank() - in.shape.rank();
  if (lead < 0) return Mismatch(node, in, out);
  for (int d = 0; d < in.shape.rank(); ++d) {
    if (in.shape.dim(d) != 1 && in.shape.dim(d) != out.shape.dim(lead + d)) {
      return Mismatch(node, in, out);
    }
  }
  Gather(in, BroadcastStrides(in.shape.dims(), out.shape.dims()), 0, out, options);
  return absl::OkStatus();
}

absl::Status Slice(const ValidatedNode& node, const HostConstView& in, const HostView& out,
                   const HostKernelOptions& options) {
  absl::StatusOr<std::vector<int64_t>> starts = GetIntsAttr(node, "starts");
  if (!starts.ok()) return starts.status();
  absl::StatusOr<std::vector<int64_t>> steps = GetIntsAttr(node, "steps");
  if (!steps.ok()) return steps.status();
  const int rank = in.shape.rank();
  if (static_cast<int>(starts->size()) != rank || static_cast<int>(steps->size()) != rank ||
      out.shape.rank() != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("slice needs one start and step per axis of ", in.shape.ToString()));
  }
  if (out.shape.num_elements() == 0) return absl::OkStatus();
  const std::vector<int64_t> in_strides = ContiguousStrides(in.shape.dims());
  std::vector<int64_t> strides(rank);
  int64_t base = 0;
  for (int d = 0; d < rank; ++d) {
    const int64_t dim = in.shape.dim(d);
    const int64_t count = out.shape.dim(d);
    const int64_t start = (*starts)[d];
    const int64_t step = (*steps)[d];
    // Every index taken, start + i * step for i < count, must be in range.
    bool ok = start >= 0 && start < dim;
    if (ok && count > 1) {
      ok = step != 0 && step >= -dim && step <= dim;
      const int64_t last = start + (count - 1) * step;  // |step| <= dim: no overflow
      ok = ok && count <= dim && last >= 0 && last < dim;
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("slice of axis ", d, " (size ", dim, ") from ",
                                                     start, " by ", step, " for ", count,
                                                     " elements is out of range"));
    }
    base += start * in_strides[d];
    strides[d] = count > 1 ? step * in_strides[d] : 0;
  }
  Gather(in, std::move(strides), base, out, options);
  return absl::OkStatus();
}

// concatenate (stack = false) or stack (stack = true) along `axis`.
absl::Status Join(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                  const HostView& out, bool stack, const HostKernelOptions& options) {
  absl::StatusOr<int64_t> axis_or = GetIntAttr(node, "axis");
  if (!axis_or.ok()) return axis_or.status();
  const int64_t axis = *axis_or;
  if (axis < 0 || axis >= out.shape.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("bad axis ", axis));
  }
  const std::vector<int64_t> out_strides = ContiguousStrides(out.shape.dims());
  int64_t position = 0;  // along the axis
  for (const HostConstView& in : inputs) {
    // The input's dimensions must be the output's, less the stacked axis or
    // with the concatenated one shorter.
    bool ok = in.shape.rank() == out.shape.rank() - (stack ? 1 : 0);
    for (int d = 0, od = 0; ok && d < in.shape.rank(); ++d, ++od) {
      if (stack && od == axis) ++od;
      ok = od == axis || in.shape.dim(d) == out.shape.dim(od);
    }
    const int64_t extent = stack ? 1 : (ok ? in.shape.dim(static_cast<int>(axis)) : 0);
    ok = ok && extent <= out.shape.dim(static_cast<int>(axis)) - position;
    if (!ok) return Mismatch(node, in, out);
    if (out.shape.num_elements() == 0 || in.shape.num_elements() == 0) {
      // Nothing to copy; the offsets of an empty array may not fit int64.
      position += extent;
      continue;
    }
    StridedLoop loop;
    loop.dims.assign(in.shape.dims().begin(), in.shape.dims().end());
    std::vector<int64_t> dst_strides = out_strides;
    if (stack) dst_strides.erase(dst_strides.begin() + axis);
    loop.AddOperand(std::move(dst_strides), position * out_strides[axis]);
    loop.AddOperand(ContiguousStrides(in.shape.dims()));
    loop.Simplify();
    CopyStrided(loop, in.dtype, in.data, out.dtype, out.data, options);
    position += extent;
  }
  if (position != out.shape.dim(static_cast<int>(axis))) {
    return absl::InvalidArgumentError("inputs do not fill the output");
  }
  return absl::OkStatus();
}

// An index element widened to 64 bits: sign-extended for signed dtypes
// (bool is 0 or 1), zero-extended for unsigned ones.
template <typename I>
uint64_t IndexBits(const std::byte* p) {
  if constexpr (std::is_same_v<I, bool>) {
    return LoadElement<bool>(p) ? 1 : 0;
  } else if constexpr (std::is_signed_v<I>) {
    return static_cast<uint64_t>(static_cast<int64_t>(LoadElement<I>(p)));
  } else {
    return static_cast<uint64_t>(LoadElement<I>(p));
  }
}

// The position along the axis an index names, or -1 when it is out of
// bounds.
template <typename I>
int64_t Normalized(uint64_t bits, int64_t size) {
  if constexpr (std::is_signed_v<I>) {
    int64_t v = static_cast<int64_t>(bits);
    if (v < 0) v += size;  // v >= INT64_MIN and size > 0: no overflow
    return v >= 0 && v < size ? v : -1;
  } else {
    return bits < static_cast<uint64_t>(size) ? static_cast<int64_t>(bits) : -1;
  }
}

// take and take_along_axis: every index is checked first, in order, so the
// error names the first bad one as NumPy's does; then a strided walk over
// the output reads each element at its index.
absl::Status RunGather(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                       const HostView& out, const HostKernelOptions& options) {
  if (inputs.size() != 2) return absl::InvalidArgumentError("expected two inputs");
  absl::StatusOr<GatherLayout> layout = GatherLayoutOf(node);
  if (!layout.ok()) return layout.status();
  const GatherLayout& g = *layout;
  const HostConstView& src = inputs[0];
  const HostConstView& idx = inputs[1];
  if (out.shape.num_elements() == 0) return absl::OkStatus();
  const int64_t size = ItemSize(src.dtype);
  const int64_t index_size = ItemSize(idx.dtype);
  return VisitDType(idx.dtype, [&](auto tag) -> absl::Status {
    using I = typename decltype(tag)::type;
    if constexpr (kIsFloatStorage<I> || kIsComplex<I>) {
      return absl::InvalidArgumentError("float indices");
    } else {
      const int64_t n = idx.shape.num_elements();
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t bits = IndexBits<I>(idx.data + i * index_size);
        if (Normalized<I>(bits, g.axis_size) < 0) return GatherIndexStatus(g, idx.dtype, bits);
      }
      StridedLoop loop;
      loop.dims = g.dims;
      loop.AddOperand(ContiguousStrides(out.shape.dims()));
      loop.AddOperand(g.src_strides);
      loop.AddOperand(g.index_strides);
      loop.Simplify();
      const bool is_bool = src.dtype == DType::kBool;
      ParallelFor(loop.num_elements(), 1, options, [&](int64_t begin, int64_t end) {
        ForEachRun(loop, begin, end, [&](int64_t count, const int64_t* off, const int64_t* step) {
          for (int64_t k = 0; k < count; ++k) {
            const int64_t j = Normalized<I>(
                IndexBits<I>(idx.data + (off[2] + k * step[2]) * index_size), g.axis_size);
            const std::byte* from = src.data + (off[1] + k * step[1] + j * g.axis_stride) * size;
            std::byte* to = out.data + (off[0] + k * step[0]) * size;
            if (is_bool) {
              StoreElement<bool>(to, LoadElement<bool>(from));
            } else {
              std::memcpy(to, from, size);
            }
          }
        });
      });
      return absl::OkStatus();
    }
  });
}

}  // namespace

absl::Status RunShapeOp(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                        const HostView& out, const HostKernelOptions& options) {
  const std::string& name = node.op->name;
  if (name == "concatenate") return Join(node, inputs, out, /*stack=*/false, options);
  if (name == "stack") return Join(node, inputs, out, /*stack=*/true, options);
  if (name == "take" || name == "take_along_axis") return RunGather(node, inputs, out, options);
  if (name == "scatter" || name == "flatnonzero" || name == "histogram") {
    return RunSelection(node, inputs, out);
  }
  if (inputs.size() != 1) return absl::InvalidArgumentError("expected one input");
  const HostConstView& in = inputs[0];
  if (name == "reshape" || name == "expand_dims" || name == "squeeze") {
    return CopyInOrder(node, in, out, options);
  }
  if (name == "transpose") return Transpose(node, in, out, options);
  if (name == "broadcast_to") return BroadcastTo(node, in, out, options);
  if (name == "slice") return Slice(node, in, out, options);
  return absl::UnimplementedError(absl::StrCat("no host kernel for shape op '", name, "'"));
}

}  // namespace gpuflow::host_internal

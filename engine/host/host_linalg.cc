// matmul and dot. Both operands are converted to the compute type once;
// products accumulate in it (double for floats, so a float32 matmul is
// rounded once per output element; wrapping for integers; or/and for bool).
#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/host/host_kernels_internal.h"

namespace gpuflow::host_internal {
namespace {

template <typename C>
C MulAdd(C acc, C a, C b) {
  if constexpr (std::is_same_v<C, bool>) {
    return acc || (a && b);
  } else if constexpr (std::is_same_v<C, int64_t>) {
    return WrapAdd(acc, WrapMul(a, b));
  } else if constexpr (std::is_same_v<C, Complex128>) {
    return acc + ComplexMul(a, b);
  } else {
    return acc + a * b;
  }
}

// dot with a 0-d operand: broadcast multiplication.
absl::Status ScalarProduct(const HostConstView& a, const HostConstView& b, const HostView& out,
                           DType compute, const HostKernelOptions& options) {
  StridedLoop loop;
  loop.dims.assign(out.shape.dims().begin(), out.shape.dims().end());
  loop.AddOperand(ContiguousStrides(out.shape.dims()));
  for (const HostConstView* in : {&a, &b}) {
    if (in->shape.rank() > out.shape.rank()) {
      return absl::InvalidArgumentError("dot operand does not broadcast to the output");
    }
    loop.AddOperand(BroadcastStrides(in->shape.dims(), out.shape.dims()));
  }
  loop.Simplify();
  const LoadFn load_a = GetLoadFn(a.dtype, compute);
  const LoadFn load_b = GetLoadFn(b.dtype, compute);
  return VisitClass(ClassOf(compute), [&](auto tag) -> absl::Status {
    using C = typename decltype(tag)::type;
    const StoreFn store = GetStoreFn(ClassOfCompute<C>(), out.dtype);
    ParallelFor(loop.num_elements(), 1, options, [&](int64_t begin, int64_t end) {
      C x[kBlock];
      C y[kBlock];
      ForEachRun(loop, begin, end, [&](int64_t n, const int64_t* off, const int64_t* step) {
        load_a(a.data, off[1], step[1], n, x);
        load_b(b.data, off[2], step[2], n, y);
        for (int64_t i = 0; i < n; ++i) x[i] = MultiplyInCompute(x[i], y[i]);
        store(x, n, out.data, off[0], step[0]);
      });
    });
    return absl::OkStatus();
  });
}

std::vector<int64_t> Prefix(absl::Span<const int64_t> dims, int64_t drop) {
  if (static_cast<int64_t>(dims.size()) <= drop) return {};
  return std::vector<int64_t>(dims.begin(), dims.end() - drop);
}

}  // namespace

absl::Status RunMatmul(const ValidatedNode& node, const HostConstView& a, const HostConstView& b,
                       const HostView& out, const HostKernelOptions& options) {
  const std::string& name = node.op->name;
  const DType compute = node.type.compute_dtype;
  const int a_rank = a.shape.rank();
  const int b_rank = b.shape.rank();
  if (a_rank == 0 || b_rank == 0) {
    if (name != "dot") return absl::InvalidArgumentError("matmul of a 0-d operand");
    return ScalarProduct(a, b, out, compute, options);
  }
  if (name == "dot" && (a_rank > 2 || b_rank > 2)) {
    return absl::InvalidArgumentError("dot of operands of rank > 2 (use matmul)");
  }
  // A 1-D operand is a row (a) or column (b) vector whose added dimension is
  // not in the output.
  const int64_t n = a_rank == 1 ? 1 : a.shape.dim(a_rank - 2);
  const int64_t k = a.shape.dim(a_rank - 1);
  const int64_t k_b = b_rank == 1 ? b.shape.dim(0) : b.shape.dim(b_rank - 2);
  const int64_t m = b_rank == 1 ? 1 : b.shape.dim(b_rank - 1);
  const int out_matrix_dims = (a_rank > 1 ? 1 : 0) + (b_rank > 1 ? 1 : 0);
  const std::vector<int64_t> batch = Prefix(out.shape.dims(), out_matrix_dims);
  const std::vector<int64_t> batch_a = Prefix(a.shape.dims(), 2);
  const std::vector<int64_t> batch_b = Prefix(b.shape.dims(), 2);
  // Saturating: an empty output's other dimensions may multiply past int64.
  int64_t batches = 1;
  for (int64_t d : batch) batches = SaturatingMul(batches, d);
  const int64_t out_size =
      out.shape.num_elements() == 0 ? 0 : SaturatingMul(SaturatingMul(batches, n), m);
  if (k != k_b || batch_a.size() > batch.size() || batch_b.size() > batch.size() ||
      out_size != out.shape.num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat("matmul of ", a.shape.ToString(), " and ",
                                                   b.shape.ToString(), " cannot give ",
                                                   out.shape.ToString()));
  }
  for (size_t d = 0; d < batch.size(); ++d) {
    for (const std::vector<int64_t>* operand : {&batch_a, &batch_b}) {
      const size_t lead = batch.size() - operand->size();
      if (d >= lead && (*operand)[d - lead] != batch[d] && (*operand)[d - lead] != 1) {
        return absl::InvalidArgumentError("matmul batch dimensions do not broadcast");
      }
    }
  }
  if (out.shape.num_elements() == 0) return absl::OkStatus();
  // Batch strides in units of whole matrices.
  const std::vector<int64_t> a_batch_strides = BroadcastStrides(batch_a, batch);
  const std::vector<int64_t> b_batch_strides = BroadcastStrides(batch_b, batch);

  return VisitClass(ClassOf(compute), [&](auto tag) -> absl::Status {
    using C = typename decltype(tag)::type;
    const int64_t a_size = a.shape.num_elements();
    const int64_t b_size = b.shape.num_elements();
    std::unique_ptr<C[]> av = std::make_unique<C[]>(a_size);
    std::unique_ptr<C[]> bv = std::make_unique<C[]>(b_size);
    GetLoadFn(a.dtype, compute)(a.data, 0, 1, a_size, av.get());
    GetLoadFn(b.dtype, compute)(b.data, 0, 1, b_size, bv.get());
    const StoreFn store = GetStoreFn(ClassOfCompute<C>(), out.dtype);
    std::atomic<bool> out_of_memory{false};
    ParallelFor(batches * n, k * m, options, [&](int64_t begin, int64_t end) {
      // No exception may leave a worker thread.
      std::unique_ptr<C[]> acc(new (std::nothrow) C[m]);
      if (acc == nullptr) {
        out_of_memory = true;
        return;
      }
      for (int64_t row = begin; row < end; ++row) {
        int64_t bi = row / n;
        const int64_t i = row % n;
        int64_t a_matrix = 0;
        int64_t b_matrix = 0;
        for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
          a_matrix += (bi % batch[d]) * a_batch_strides[d];
          b_matrix += (bi % batch[d]) * b_batch_strides[d];
          bi /= batch[d];
        }
        const C* a_row = av.get() + a_matrix * n * k + i * k;
        const C* b_mat = bv.get() + b_matrix * k * m;
        for (int64_t j = 0; j < m; ++j) acc[j] = C{0};
        for (int64_t p = 0; p < k; ++p) {
          const C x = a_row[p];
          const C* b_row = b_mat + p * m;
          for (int64_t j = 0; j < m; ++j) acc[j] = MulAdd(acc[j], x, b_row[j]);
        }
        store(acc.get(), m, out.data, row * m, 1);
      }
    });
    if (out_of_memory) return absl::ResourceExhaustedError("out of host memory in matmul");
    return absl::OkStatus();
  });
}

}  // namespace gpuflow::host_internal

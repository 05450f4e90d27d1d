// Strided iteration, the thread split and attribute access shared by the
// host kernels.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/host/host_kernels_internal.h"

namespace gpuflow::host_internal {

int StridedLoop::AddOperand(std::vector<int64_t> operand_strides, int64_t operand_base) {
  strides[num_operands] = std::move(operand_strides);
  base[num_operands] = operand_base;
  return num_operands++;
}

int64_t StridedLoop::num_elements() const {
  // 0 for an empty loop even when other dimensions would overflow.
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) return 0;
  int64_t n = 1;
  for (int64_t d : dims) n = SaturatingMul(n, d);
  return n;
}

void StridedLoop::Simplify() {
  if (num_elements() == 0) return;
  std::vector<int64_t> new_dims;
  std::array<std::vector<int64_t>, kMaxOperands> new_strides;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    // Merge into the previous kept dimension when every operand steps from
    // its last element to the next one of this dimension contiguously.
    bool merge = !new_dims.empty();
    for (int k = 0; k < num_operands && merge; ++k) {
      merge = new_strides[k].back() == SaturatingMul(strides[k][d], dims[d]);
    }
    if (merge) {
      new_dims.back() = SaturatingMul(new_dims.back(), dims[d]);
      for (int k = 0; k < num_operands; ++k) new_strides[k].back() = strides[k][d];
    } else {
      new_dims.push_back(dims[d]);
      for (int k = 0; k < num_operands; ++k) new_strides[k].push_back(strides[k][d]);
    }
  }
  dims = std::move(new_dims);
  for (int k = 0; k < num_operands; ++k) strides[k] = std::move(new_strides[k]);
}

void ForEachRun(
    const StridedLoop& loop, int64_t begin, int64_t end,
    absl::FunctionRef<void(int64_t n, const int64_t* offsets, const int64_t* steps)> fn) {
  const int rank = static_cast<int>(loop.dims.size());
  const int ops = loop.num_operands;
  std::array<int64_t, kMaxOperands> offsets = loop.base;
  std::array<int64_t, kMaxOperands> steps{};
  if (begin >= end) return;
  if (rank == 0) {
    fn(1, offsets.data(), steps.data());
    return;
  }
  for (int k = 0; k < ops; ++k) steps[k] = loop.strides[k][rank - 1];
  // The multi-index of `begin`, and the operands' offsets there.
  std::vector<int64_t> index(rank);
  int64_t rest = begin;
  for (int d = rank - 1; d >= 0; --d) {
    index[d] = rest % loop.dims[d];
    rest /= loop.dims[d];
    for (int k = 0; k < ops; ++k) offsets[k] += index[d] * loop.strides[k][d];
  }
  const int64_t inner = loop.dims[rank - 1];
  int64_t pos = begin;
  while (pos < end) {
    const int64_t n = std::min({inner - index[rank - 1], end - pos, kBlock});
    fn(n, offsets.data(), steps.data());
    pos += n;
    index[rank - 1] += n;
    for (int k = 0; k < ops; ++k) offsets[k] += n * steps[k];
    if (index[rank - 1] < inner) continue;
    // Carry into the outer dimensions.
    for (int k = 0; k < ops; ++k) offsets[k] -= inner * steps[k];
    index[rank - 1] = 0;
    for (int d = rank - 2; d >= 0; --d) {
      ++index[d];
      for (int k = 0; k < ops; ++k) offsets[k] += loop.strides[k][d];
      if (index[d] < loop.dims[d]) break;
      for (int k = 0; k < ops; ++k) offsets[k] -= loop.dims[d] * loop.strides[k][d];
      index[d] = 0;
    }
  }
}

std::vector<int64_t> ContiguousStrides(absl::Span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size());
  int64_t s = 1;
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    s = SaturatingMul(s, dims[d]);
  }
  return strides;
}

std::vector<int64_t> BroadcastStrides(absl::Span<const int64_t> in, absl::Span<const int64_t> out) {
  const std::vector<int64_t> contiguous = ContiguousStrides(in);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    strides[lead + d] = (in[d] == 1 && out[lead + d] != 1) ? 0 : contiguous[d];
  }
  return strides;
}

int64_t HostThreads(const HostKernelOptions& options) {
  static const int64_t machine = std::max<int64_t>(std::thread::hardware_concurrency(), 1);
  return options.threads > 0 ? options.threads : machine;
}

void ParallelFor(int64_t n, int64_t cost_per_item, const HostKernelOptions& options,
                 absl::FunctionRef<void(int64_t begin, int64_t end)> fn) {
  if (n <= 0) return;
  const int64_t threads = HostThreads(options);
  const int64_t min_work = std::max<int64_t>(options.min_elements_per_thread, 1);
  const int64_t cost = std::max<int64_t>(cost_per_item, 1);
  // Items worth one thread's minimum share of work.
  const int64_t items_per_part = std::max<int64_t>(1, (min_work + cost - 1) / cost);
  const int64_t parts = std::min({threads, n, std::max<int64_t>(1, n / items_per_part)});
  if (parts <= 1) {
    fn(0, n);
    return;
  }
  auto part_begin = [&](int64_t p) { return n / parts * p + std::min(p, n % parts); };
  std::vector<std::thread> workers;
  workers.reserve(parts - 1);
  int64_t inline_from = parts;  // parts not handed to a thread run here
  for (int64_t p = 1; p < parts; ++p) {
    try {
      workers.emplace_back([&fn, b = part_begin(p), e = part_begin(p + 1)] { fn(b, e); });
    } catch (const std::exception&) {
      // No thread to be had: do the remaining parts on this one.
      inline_from = p;
      break;
    }
  }
  fn(part_begin(0), part_begin(1));
  if (inline_from < parts) fn(part_begin(inline_from), n);
  for (std::thread& t : workers) t.join();
}

absl::StatusOr<int64_t> GetIntAttr(const ValidatedNode& node, absl::string_view name) {
  auto it = node.attrs.find(name);
  if (it != node.attrs.end()) {
    if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  }
  return absl::InvalidArgumentError(absl::StrCat("missing int attribute '", name, "'"));
}

absl::StatusOr<double> GetFloatAttr(const ValidatedNode& node, absl::string_view name) {
  auto it = node.attrs.find(name);
  if (it != node.attrs.end()) {
    if (const auto* v = std::get_if<double>(&it->second)) return *v;
    if (const auto* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  }
  return absl::InvalidArgumentError(absl::StrCat("missing float attribute '", name, "'"));
}

absl::StatusOr<std::vector<int64_t>> GetIntsAttr(const ValidatedNode& node,
                                                 absl::string_view name) {
  auto it = node.attrs.find(name);
  if (it != node.attrs.end()) {
    if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  }
  return absl::InvalidArgumentError(absl::StrCat("missing ints attribute '", name, "'"));
}

bool HasAttr(const ValidatedNode& node, absl::string_view name) {
  return node.attrs.find(name) != node.attrs.end();
}

}  // namespace gpuflow::host_internal

// matmul and dot as a generated tiled kernel (see codegen.h). The semantics
// are the CPU reference's (engine/host/host_linalg.cc RunMatmul): operands
// converted to the compute dtype and widened to its class, products summed
// in k order (double for floats, so every output is rounded once; 64-bit
// wrapping for integers; or/and for bool), one conversion to the output.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/codegen_internal.h"
#include "engine/cuda/device_library.h"

namespace gpuflow::cuda {

namespace {

constexpr int kTile = 16;
constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
constexpr int64_t kMaxGridYZ = 65535;

// acc += x * y in the accumulator type (host_linalg.cc MulAdd).
std::string MulAdd(DType compute, const std::string& x, const std::string& y) {
  switch (KindOf(compute)) {
    case DTypeKind::kBool:
      return absl::StrCat("acc = acc || (", x, " && ", y, ");");
    case DTypeKind::kSigned:
      return absl::StrCat("acc = gf::wadd(acc, gf::wmul(", x, ", ", y, "));");
    case DTypeKind::kUnsigned:
    case DTypeKind::kFloat:
    case DTypeKind::kComplex:  // gf::complex<double>'s schoolbook product and sum
      break;
  }
  return absl::StrCat("acc = acc + ", x, " * ", y, ";");
}

// An operand element `v` (of storage dtype `dtype`) in the accumulator type:
// converted to the compute dtype, then widened (gf::in, as the elementwise
// kernels load). A bool byte is any nonzero value (the reference's load).
std::string Load(DType dtype, DType compute, const std::string& v) {
  const std::string x = dtype == DType::kBool ? absl::StrCat("(bool)(", v, " != 0)") : v;
  return absl::StrCat("gf::in<", internal::WideAccumulatorName(compute), ", ",
                      internal::RegisterTypeName(compute), ">(", x, ")");
}

std::string MatmulSource(const std::string& name, DType a_dtype, DType b_dtype, DType compute,
                         DType out_dtype, int batch_rank) {
  const char* at = StorageTypeName(a_dtype);
  const char* bt = StorageTypeName(b_dtype);
  const char* ot = StorageTypeName(out_dtype);
  const char* acc = internal::WideAccumulatorName(compute);
  const std::string zero = absl::StrCat("(", acc, ")0");
  const std::string result = out_dtype == DType::kBool ? std::string("(u8)gf::cv<bool>(acc)")
                                                       : absl::StrCat("gf::cv<", ot, ">(acc)");
  std::string src;
  absl::StrAppend(&src, "\nstruct ", name, "_args { unsigned long long w[", 7 + 3 * batch_rank,
                  "]; };\n");
  absl::StrAppend(&src, "extern \"C\" __global__ void __launch_bounds__(", kTile * kTile, ") ",
                  name, "(const ", name, "_args p) {\n");
  absl::StrAppend(&src, "  const ", at, "* __restrict__ a = (const ", at, "*)p.w[0];\n");
  absl::StrAppend(&src, "  const ", bt, "* __restrict__ b = (const ", bt, "*)p.w[1];\n");
  absl::StrAppend(&src, "  ", ot, "* __restrict__ out = (", ot, "*)p.w[2];\n");
  absl::StrAppend(&src, "  const long long n = (long long)p.w[3];\n");
  absl::StrAppend(&src, "  const long long k = (long long)p.w[4];\n");
  absl::StrAppend(&src, "  const long long m = (long long)p.w[5];\n");
  absl::StrAppend(&src, "  const long long batches = (long long)p.w[6];\n");
  absl::StrAppend(&src, "  __shared__ ", acc, " ta[", kTile, "][", kTile, "];\n");
  absl::StrAppend(&src, "  __shared__ ", acc, " tb[", kTile, "][", kTile, "];\n");
  absl::StrAppend(&src, "  const int tx = threadIdx.x;\n  const int ty = threadIdx.y;\n");
  // Every loop bound is uniform over the block, so every thread reaches
  // every __syncthreads.
  absl::StrAppend(&src, "  for (long long z = blockIdx.z; z < batches; z += gridDim.z) {\n");
  absl::StrAppend(&src, "    long long a_off = 0;\n    long long b_off = 0;\n");
  if (batch_rank > 0) absl::StrAppend(&src, "    long long rem = z;\n");
  for (int d = batch_rank - 1; d >= 0; --d) {
    absl::StrAppend(&src, "    {\n      const long long dim = (long long)p.w[", 7 + d, "];\n");
    absl::StrAppend(&src, "      const long long c = rem % dim;\n      rem /= dim;\n");
    absl::StrAppend(&src, "      a_off += c * (long long)p.w[", 7 + batch_rank + d, "];\n");
    absl::StrAppend(&src, "      b_off += c * (long long)p.w[", 7 + 2 * batch_rank + d, "];\n");
    absl::StrAppend(&src, "    }\n");
  }
  absl::StrAppend(&src, "    const ", at, "* __restrict__ am = a + a_off;\n");
  absl::StrAppend(&src, "    const ", bt, "* __restrict__ bm = b + b_off;\n");
  absl::StrAppend(&src, "    ", ot, "* __restrict__ om = out + z * n * m;\n");
  absl::StrAppend(&src, "    for (long long r0 = (long long)blockIdx.y * ", kTile,
                  "; r0 < n; r0 += (long long)gridDim.y * ", kTile, ") {\n");
  absl::StrAppend(&src, "      for (long long c0 = (long long)blockIdx.x * ", kTile,
                  "; c0 < m; c0 += (long long)gridDim.x * ", kTile, ") {\n");
  absl::StrAppend(&src, "        const long long row = r0 + ty;\n");
  absl::StrAppend(&src, "        const long long col = c0 + tx;\n");
  absl::StrAppend(&src, "        ", acc, " acc = ", zero, ";\n");
  absl::StrAppend(&src, "        for (long long k0 = 0; k0 < k; k0 += ", kTile, ") {\n");
  // Tile entries outside the operands are zeros: past k both factors are 0,
  // so they add exact zeros; rows and columns past n and m are not stored.
  absl::StrAppend(&src, "          ta[ty][tx] = row < n && k0 + tx < k ? ",
                  Load(a_dtype, compute, "am[row * k + k0 + tx]"), " : ", zero, ";\n");
  absl::StrAppend(&src, "          tb[ty][tx] = k0 + ty < k && col < m ? ",
                  Load(b_dtype, compute, "bm[(k0 + ty) * m + col]"), " : ", zero, ";\n");
  absl::StrAppend(&src, "          __syncthreads();\n#pragma unroll\n");
  absl::StrAppend(&src, "          for (int q = 0; q < ", kTile, "; ++q) ",
                  MulAdd(compute, "ta[ty][q]", "tb[q][tx]"), "\n");
  absl::StrAppend(&src, "          __syncthreads();\n        }\n");
  absl::StrAppend(&src, "        if (row < n && col < m) om[row * m + col] = ", result, ";\n");
  absl::StrAppend(&src, "      }\n    }\n  }\n}\n");
  return DeviceSource(src);
}

std::vector<int64_t> Prefix(const Shape& shape, int drop) {
  if (shape.rank() <= drop) return {};
  return std::vector<int64_t>(shape.dims().begin(), shape.dims().end() - drop);
}

// dot with a 0-d operand (host_linalg.cc ScalarProduct): a thread per
// output element multiplies the other operand's element by the scalar in
// the compute class (floats: one product of exact operands, rounded once
// when stored, as the reference's double product is).
MatmulKernel ScalarProduct(const ValidatedNode& node, const std::string& name) {
  const DType compute = node.type.compute_dtype;
  const DType out = node.type.output.dtype;
  const char* c = internal::ComputeClassName(compute);
  const char* k = StorageTypeName(compute);
  std::string product = "x * y";
  if (compute == DType::kBool) product = "x && y";
  if (KindOf(compute) == DTypeKind::kSigned) product = "gf::wmul(x, y)";
  const std::string store = out == DType::kBool
                                ? "(u8)gf::cv<bool>(r)"
                                : absl::StrCat("gf::cv<", StorageTypeName(out), ">(r)");
  auto operand = [&](int i) {
    const bool scalar = node.input_types[i].shape.rank() == 0;
    return absl::StrCat("gf::in<", c, ", ", k, ">(", i == 0 ? "a" : "b", scalar ? "[0]" : "[i]",
                        ")");
  };
  const char* at = StorageTypeName(node.input_types[0].dtype);
  const char* bt = StorageTypeName(node.input_types[1].dtype);
  const char* ot = StorageTypeName(out);
  MatmulKernel mk;
  mk.name = name;
  mk.source = DeviceSource(absl::StrCat(
      "\nstruct ", name, "_args { unsigned long long w[4]; };\n",
      "extern \"C\" __global__ void __launch_bounds__(256) ", name, "(const ", name, "_args p) {\n",
      "  const ", at, "* __restrict__ a = (const ", at, "*)p.w[0];\n", "  const ", bt,
      "* __restrict__ b = (const ", bt, "*)p.w[1];\n", "  ", ot, "* __restrict__ out = (", ot,
      "*)p.w[2];\n", "  const long long n = (long long)p.w[3];\n",
      "  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += gridDim.x * 256ll) {\n",
      "    const ", c, " x = ", operand(0), ";\n", "    const ", c, " y = ", operand(1), ";\n",
      "    const ", c, " r = ", product, ";\n", "    out[i] = ", store, ";\n", "  }\n}\n"));
  const int64_t n = node.type.output.shape.num_elements();
  mk.words = {0, 0, 0, static_cast<uint64_t>(n)};
  mk.grid_x = std::clamp<int64_t>((n + 255) / 256, 1, int64_t{1} << 20);
  mk.block_x = 256;
  mk.block_y = 1;
  return mk;
}

}  // namespace

absl::StatusOr<std::optional<MatmulKernel>> GenerateMatmul(const ValidatedGraph& graph,
                                                           const Step& step,
                                                           const std::string& name) {
  if (step.nodes.size() != 1) return std::nullopt;
  const ValidatedNode& node = graph.nodes[step.root];
  const std::string& op = node.op->name;
  if ((op != "matmul" && op != "dot") || node.input_types.size() != 2) return std::nullopt;
  const Shape& as = node.input_types[0].shape;
  const Shape& bs = node.input_types[1].shape;
  const Shape& os = node.type.output.shape;
  const int a_rank = as.rank();
  const int b_rank = bs.rank();
  if (a_rank == 0 || b_rank == 0) {
    if (op != "dot") return absl::InvalidArgumentError("matmul of a 0-d operand");
    return ScalarProduct(node, name);
  }
  if (op == "dot" && (a_rank > 2 || b_rank > 2)) {
    return absl::InvalidArgumentError("dot of operands of rank > 2 (use matmul)");
  }
  // A 1-D a is a row (1, k), a 1-D b a column (k, 1); the added dimension is
  // not in the output.
  const int64_t n = a_rank == 1 ? 1 : as.dim(a_rank - 2);
  const int64_t k = as.dim(a_rank - 1);
  const int64_t k_b = b_rank == 1 ? bs.dim(0) : bs.dim(b_rank - 2);
  const int64_t m = b_rank == 1 ? 1 : bs.dim(b_rank - 1);
  const int out_matrix_dims = (a_rank > 1 ? 1 : 0) + (b_rank > 1 ? 1 : 0);
  std::vector<int64_t> batch = Prefix(os, out_matrix_dims);
  const std::vector<int64_t> batch_a = Prefix(as, 2);
  const std::vector<int64_t> batch_b = Prefix(bs, 2);
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  if (k != k_b || batch_a.size() > batch.size() || batch_b.size() > batch.size() ||
      batches * n * m != os.num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat(op, " of ", as.ToString(), " and ",
                                                   bs.ToString(), " cannot give ", os.ToString()));
  }
  // Batch strides in elements, 0 where an operand is broadcast (or lacks
  // the dimension).
  std::vector<int64_t> a_strides(batch.size(), 0);
  std::vector<int64_t> b_strides(batch.size(), 0);
  const auto strides_of = [&](const std::vector<int64_t>& operand, int64_t matrix,
                              std::vector<int64_t>& strides) -> absl::Status {
    const size_t lead = batch.size() - operand.size();
    int64_t stride = matrix;
    for (size_t d = operand.size(); d-- > 0;) {
      if (operand[d] != batch[lead + d] && operand[d] != 1) {
        return absl::InvalidArgumentError(absl::StrCat(op, " batch dimensions of ", as.ToString(),
                                                       " and ", bs.ToString(),
                                                       " do not broadcast"));
      }
      if (operand[d] != 1) strides[lead + d] = stride;
      stride *= operand[d];
    }
    return absl::OkStatus();
  };
  if (absl::Status s = strides_of(batch_a, n * k, a_strides); !s.ok()) return s;
  if (absl::Status s = strides_of(batch_b, k * m, b_strides); !s.ok()) return s;
  internal::MergeDims(batch, a_strides, b_strides);
  const int batch_rank = static_cast<int>(batch.size());

  MatmulKernel kernel;
  kernel.name = name;
  kernel.source = MatmulSource(name, node.input_types[0].dtype, node.input_types[1].dtype,
                               node.type.compute_dtype, node.type.output.dtype, batch_rank);
  kernel.words = {0, 0, 0};
  for (int64_t v : {n, k, m, batches}) kernel.words.push_back(static_cast<uint64_t>(v));
  for (const std::vector<int64_t>* v : {&batch, &a_strides, &b_strides}) {
    for (int64_t x : *v) kernel.words.push_back(static_cast<uint64_t>(x));
  }
  kernel.block_x = kTile;
  kernel.block_y = kTile;
  kernel.grid_x = std::clamp<int64_t>((m + kTile - 1) / kTile, 1, kMaxGridX);
  kernel.grid_y = std::clamp<int64_t>((n + kTile - 1) / kTile, 1, kMaxGridYZ);
  kernel.grid_z = std::clamp<int64_t>(batches, 1, kMaxGridYZ);
  return kernel;
}

}  // namespace gpuflow::cuda

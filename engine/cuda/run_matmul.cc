// matmul and dot: cuBLAS for one float or complex dtype throughout with
// batches equal or on one side (cublasGemmStridedBatchedEx, row-major as
// column-major transposed; complex64/complex128 as CUDA_C_32F/CUDA_C_64F);
// the generated tiled kernel (codegen_matmul.cc) for the rest (complex
// steps that cuBLAS does not take run on the host, step_dispatch.cc).
#include <cublas_v2.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/launch_log.h"
#include "engine/cuda/step_runner.h"

namespace gpuflow::cuda {

namespace {

// A matmul or dot (operands of rank >= 1) that cuBLAS takes: one float
// dtype throughout and batches equal or on one side only (strided batching).
struct BlasMatmul {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1, batch_a = 1, batch_b = 1;
};

std::optional<BlasMatmul> BlasMatmulFor(const ValidatedNode& node) {
  if (node.op->name != "matmul" && node.op->name != "dot") return std::nullopt;
  const ValueType& ta = node.input_types[0];
  const ValueType& tb = node.input_types[1];
  const DType dtype = node.type.output.dtype;
  if (ta.dtype != dtype || tb.dtype != dtype) return std::nullopt;
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64 && dtype != DType::kFloat16 &&
      dtype != DType::kBFloat16 && dtype != DType::kComplex64 && dtype != DType::kComplex128) {
    return std::nullopt;
  }
  // NumPy matmul: 1-D operands become (1, k) and (k, 1).
  const Shape& sa = ta.shape;
  const Shape& sb = tb.shape;
  if (sa.rank() < 1 || sb.rank() < 1) return std::nullopt;
  BlasMatmul p;
  p.m = sa.rank() == 1 ? 1 : sa.dim(sa.rank() - 2);
  p.k = sa.dim(sa.rank() - 1);
  p.n = sb.rank() == 1 ? 1 : sb.dim(sb.rank() - 1);
  // The batch dimensions (all but the last two), broadcast as NumPy does:
  // aligned at the right, 1 stretching. Strided batching covers a side whose
  // batch is the whole broadcast batch (its matrices one after another) or
  // a single matrix (stride 0); other broadcasts, e.g. (2, 1) against (2,),
  // take the generated kernel.
  auto batch_dims = [](const Shape& s) {
    std::vector<int64_t> dims;
    for (int d = 0; d + 2 < s.rank(); ++d) dims.push_back(s.dim(d));
    return dims;
  };
  std::vector<int64_t> da = batch_dims(sa), db = batch_dims(sb);
  const size_t rank = std::max(da.size(), db.size());
  da.insert(da.begin(), rank - da.size(), 1);
  db.insert(db.begin(), rank - db.size(), 1);
  std::vector<int64_t> dout(rank);
  for (size_t d = 0; d < rank; ++d) dout[d] = da[d] == 1 ? db[d] : da[d];
  auto product = [](const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  };
  p.batch_a = product(da);
  p.batch_b = product(db);
  p.batch = product(dout);
  if (da != dout && p.batch_a != 1) return std::nullopt;
  if (db != dout && p.batch_b != 1) return std::nullopt;
  const int64_t limit = int64_t{1} << 31;
  if (p.m >= limit || p.n >= limit || p.k >= limit || p.batch >= limit) return std::nullopt;
  return p;
}

// Runs the matmul on cuBLAS; false when BlasMatmulFor does not take it.
absl::StatusOr<bool> Blas(const ValidatedNode& node, const void* a, const void* b, void* out,
                          CudaStream& stream, bool allow_tf32) {
  const std::optional<BlasMatmul> plan = BlasMatmulFor(node);
  if (!plan.has_value()) return false;
  const BlasMatmul& p = *plan;
  const int64_t m = p.m;
  const int64_t n = p.n;
  const int64_t k = p.k;
  if (m == 0 || n == 0 || p.batch == 0) return true;
  const DType dtype = node.type.output.dtype;
  cudaDataType_t data_type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  switch (dtype) {
    case DType::kFloat32:
      compute = allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case DType::kFloat64:
      data_type = CUDA_R_64F;
      compute = CUBLAS_COMPUTE_64F;
      break;
    case DType::kFloat16:
      data_type = CUDA_R_16F;
      break;
    case DType::kComplex64:
      data_type = CUDA_C_32F;
      break;
    case DType::kComplex128:
      data_type = CUDA_C_64F;
      compute = CUBLAS_COMPUTE_64F;
      break;
    default:  // bfloat16 (BlasMatmulFor takes no other dtype)
      data_type = CUDA_R_16BF;
      break;
  }
  auto* s = &stream;
  absl::MutexLock lock(&s->handle()->blas_mu);
  if (s->handle()->blas == nullptr) {
    GPUFLOW_CUBLAS_RETURN_IF_ERROR(cublasCreate(&s->handle()->blas));
  }
  cublasHandle_t blas = s->handle()->blas;
  GPUFLOW_CUBLAS_RETURN_IF_ERROR(cublasSetStream(blas, stream.get()));
  // The scale type is the compute type's: float or double, as cuComplex or
  // cuDoubleComplex ({1, 0} and {0, 0}) for complex data.
  const float alpha32[2] = {1.0f, 0.0f};
  const float beta32[2] = {0.0f, 0.0f};
  const double alpha64[2] = {1.0, 0.0};
  const double beta64[2] = {0.0, 0.0};
  const bool wide = compute == CUBLAS_COMPUTE_64F;
  const void* alpha = wide ? static_cast<const void*>(alpha64) : alpha32;
  const void* beta = wide ? static_cast<const void*>(beta64) : beta32;
  launch_log::Note(absl::StrCat("cublas ", DTypeName(dtype), " m=", m, " n=", n, " k=", k,
                                " batch=", p.batch, ",", p.batch_a, ",", p.batch_b,
                                " tf32=", allow_tf32));
  if (k == 0) {
    GPUFLOW_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(out, 0, p.batch * m * n * ItemSize(dtype), stream.get()));
    return true;
  }
  // Row-major C = A B is column-major C^T = B^T A^T.
  GPUFLOW_CUBLAS_RETURN_IF_ERROR(cublasGemmStridedBatchedEx(
      blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
      alpha, b, data_type, static_cast<int>(n), p.batch_b == 1 ? 0 : k * n, a, data_type,
      static_cast<int>(k), p.batch_a == 1 ? 0 : m * k, beta, out, data_type, static_cast<int>(n),
      m * n, static_cast<int>(p.batch), compute, CUBLAS_GEMM_DEFAULT));
  return true;
}

absl::StatusOr<std::shared_ptr<const std::optional<MatmulKernel>>> Generate(
    StepCompileContext& ctx) {
  return ctx.Generated<std::optional<MatmulKernel>>(
      "matmul", [&] { return GenerateMatmul(ctx.graph, ctx.step); });
}

}  // namespace

bool TakesBlas(const ValidatedNode& node) { return BlasMatmulFor(node).has_value(); }

absl::StatusOr<bool> RunBlasMatmul(StepRunContext& ctx) {
  const ValidatedNode& root = ctx.root();
  absl::StatusOr<const void*> a = ctx.ptr(root.inputs[0]);
  if (!a.ok()) return a.status();
  absl::StatusOr<const void*> b = ctx.ptr(root.inputs[1]);
  if (!b.ok()) return b.status();
  return Blas(root, *a, *b, ctx.out, ctx.stream, ctx.allow_tf32);
}

absl::StatusOr<bool> RunGeneratedMatmul(StepRunContext& ctx) {
  absl::StatusOr<std::shared_ptr<const std::optional<MatmulKernel>>> k = Generate(ctx);
  if (!k.ok()) return k.status();
  if (!(*k)->has_value()) return false;
  const MatmulKernel& mk = ***k;
  const ValidatedNode& node = ctx.root();
  if (node.type.output.shape.num_elements() == 0) return true;
  absl::StatusOr<cudaKernel_t> kernel = ctx.Kernel(mk.source, mk.name);
  if (!kernel.ok()) return kernel.status();
  std::vector<uint64_t> words = mk.words;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<const void*> p = ctx.ptr(node.inputs[i]);
    if (!p.ok()) return p.status();
    words[i] = reinterpret_cast<uint64_t>(*p);
  }
  words[2] = reinterpret_cast<uint64_t>(ctx.out);
  const dim3 grid(static_cast<unsigned>(mk.grid_x), static_cast<unsigned>(mk.grid_y),
                  static_cast<unsigned>(mk.grid_z));
  if (absl::Status s =
          ctx.device.Launch(*kernel, grid, dim3(mk.block_x, mk.block_y), words, ctx.stream);
      !s.ok()) {
    return s;
  }
  return true;
}

absl::Status CompileMatmul(StepCompileContext& ctx) {
  const ValidatedNode& root = ctx.root();
  if (TakesBlas(root)) return absl::OkStatus();  // cuBLAS
  absl::StatusOr<std::shared_ptr<const std::optional<MatmulKernel>>> k = Generate(ctx);
  if (!k.ok()) return k.status();
  if (!(*k)->has_value() || root.type.output.shape.num_elements() == 0) {
    return absl::OkStatus();  // the host, or nothing to launch
  }
  return ctx.Kernel((**k)->source, (**k)->name).status();
}

}  // namespace gpuflow::cuda

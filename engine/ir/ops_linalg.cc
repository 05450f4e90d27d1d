// The linear algebra ops: matmul and dot.
#include <cstdint>
#include <vector>

#include "absl/strings/match.h"
#include "engine/ir/broadcast.h"
#include "engine/ir/ops_internal.h"
#include "engine/ir/promotion.h"
#include "engine/ir/status_macros_internal.h"

namespace gpuflow::internal {
namespace {

absl::StatusOr<InferredNode> InferMatmul(Inputs in, AttrMap&) {
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  for (int i = 0; i < 2; ++i) {
    if (in[i].shape.rank() == 0) {
      return Invalid("matmul: input operand ", i,
                     " does not have enough dimensions (0-d; use mul for scalars)");
    }
  }
  // 1-D operands become a row (a) or a column (b) matrix.
  std::vector<int64_t> ad(a.dims().begin(), a.dims().end());
  std::vector<int64_t> bd(b.dims().begin(), b.dims().end());
  if (a.rank() == 1) ad.insert(ad.begin(), 1);
  if (b.rank() == 1) bd.push_back(1);
  const int64_t n = ad[ad.size() - 2], k = ad.back();
  const int64_t k2 = bd[bd.size() - 2], m = bd.back();
  if (k != k2) {
    return Invalid("matmul: shapes ", a.ToString(), " and ", b.ToString(), " are not aligned: ", k,
                   " (dim ", a.rank() - 1, " of operand 0) != ", k2, " (dim ",
                   b.rank() == 1 ? 0 : b.rank() - 2, " of operand 1)");
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(const Shape batch_a,
                              Shape::Create(absl::MakeConstSpan(ad).subspan(0, ad.size() - 2)));
  GPUFLOW_IR_ASSIGN_OR_RETURN(const Shape batch_b,
                              Shape::Create(absl::MakeConstSpan(bd).subspan(0, bd.size() - 2)));
  absl::StatusOr<Shape> batch = BroadcastShapes(batch_a, batch_b);
  if (!batch.ok() && !absl::StrContains(batch.status().message(), "cannot be broadcast")) {
    return Invalid("matmul: batch dimensions: ", batch.status().message());
  }
  if (!batch.ok()) {
    return Invalid("matmul: batch dimensions of ", a.ToString(), " and ", b.ToString(),
                   " cannot be broadcast together");
  }
  std::vector<int64_t> out(batch->dims().begin(), batch->dims().end());
  if (a.rank() > 1) out.push_back(n);
  if (b.rank() > 1) out.push_back(m);
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out_shape, Shape::Create(out));
  const DType dtype = PromoteDTypes(in[0].dtype, in[1].dtype);
  return Inferred(dtype, std::move(out_shape), dtype);
}

absl::StatusOr<InferredNode> InferDot(Inputs in, AttrMap&) {
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  for (int i = 0; i < 2; ++i) {
    if (in[i].shape.rank() > 2) {
      return Invalid("dot supports operands of rank <= 2, operand ", i, " has rank ",
                     in[i].shape.rank(), " (use matmul)");
    }
  }
  // NumPy converts Python scalars to arrays before dot: they count as strong.
  const DType dtype = PromoteDTypes(in[0].dtype, in[1].dtype);
  if (a.rank() == 0 || b.rank() == 0) {
    return Inferred(dtype, a.rank() == 0 ? b : a, dtype);  // multiplication
  }
  const int a_axis = a.rank() - 1;
  const int64_t k = a.dim(a_axis);
  const int64_t k2 = b.dim(0);
  if (k != k2) {
    return Invalid("shapes ", a.ToString(), " and ", b.ToString(), " not aligned: ", k, " (dim ",
                   a_axis, ") != ", k2, " (dim 0)");
  }
  std::vector<int64_t> out;
  if (a.rank() == 2) out.push_back(a.dim(0));
  if (b.rank() == 2) out.push_back(b.dim(1));
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out_shape, Shape::Create(out));
  return Inferred(dtype, std::move(out_shape), dtype);
}

}  // namespace

void AddLinalgOps(std::vector<OpDef>& ops) {
  ops.push_back(MakeOp("matmul", OpFamily::kLinalg, 2, 2, {},
                       "numpy.matmul: batched matrix product, 1-D operands promoted to matrices; "
                       "promoted dtype",
                       InferMatmul));
  ops.push_back(MakeOp("dot", OpFamily::kLinalg, 2, 2, {},
                       "numpy.dot for operands of rank <= 2 (0-d: multiplication); promoted dtype",
                       InferDot));
}

}  // namespace gpuflow::internal

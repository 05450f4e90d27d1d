#include "engine/ir/dtype.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gpuflow {

namespace {
constexpr std::array<DTypeInfo, kNumDTypes> kDTypes = {{
    {DType::kBool, "bool", 1, DTypeKind::kBool},
    {DType::kInt8, "int8", 1, DTypeKind::kSigned},
    {DType::kInt16, "int16", 2, DTypeKind::kSigned},
    {DType::kInt32, "int32", 4, DTypeKind::kSigned},
    {DType::kInt64, "int64", 8, DTypeKind::kSigned},
    {DType::kUInt8, "uint8", 1, DTypeKind::kUnsigned},
    {DType::kUInt16, "uint16", 2, DTypeKind::kUnsigned},
    {DType::kUInt32, "uint32", 4, DTypeKind::kUnsigned},
    {DType::kUInt64, "uint64", 8, DTypeKind::kUnsigned},
    {DType::kFloat16, "float16", 2, DTypeKind::kFloat},
    {DType::kBFloat16, "bfloat16", 2, DTypeKind::kFloat},
    {DType::kFloat32, "float32", 4, DTypeKind::kFloat},
    {DType::kFloat64, "float64", 8, DTypeKind::kFloat},
    {DType::kComplex64, "complex64", 8, DTypeKind::kComplex},
    {DType::kComplex128, "complex128", 16, DTypeKind::kComplex},
}};

constexpr bool TableMatchesEnum() {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (static_cast<int>(kDTypes[i].dtype) != i) return false;
  }
  return true;
}
static_assert(TableMatchesEnum(), "kDTypes must list dtypes in enum order");
}  // namespace

const std::array<DTypeInfo, kNumDTypes>& AllDTypes() { return kDTypes; }

const DTypeInfo& GetDTypeInfo(DType dtype) { return kDTypes[static_cast<int>(dtype)]; }

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", name, "'"));
}

}  // namespace gpuflow

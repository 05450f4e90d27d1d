#include "engine/ir/graph.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/ir/echo.h"

namespace gpuflow {

absl::Status CheckName(absl::string_view name, absl::string_view what) {
  if (name.empty() || name.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must have 1 to ", kMaxNameBytes, " characters, got ", name.size()));
  }
  for (const char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != ':' &&
        c != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " ", Echo(name), " may only use [A-Za-z0-9_.:-]"));
    }
  }
  return absl::OkStatus();
}

absl::string_view AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kBool:
      return "bool";
    case AttrType::kString:
      return "string";
    case AttrType::kDType:
      return "dtype";
    case AttrType::kInts:
      return "ints";
    case AttrType::kFloats:
      return "floats";
    case AttrType::kStrings:
      return "strings";
  }
  return "unknown";
}

}  // namespace gpuflow

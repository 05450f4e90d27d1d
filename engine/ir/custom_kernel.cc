#include "engine/ir/custom_kernel.h"

#include <algorithm>
#include <cstdint>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/ir/broadcast.h"
#include "engine/ir/echo.h"
#include "engine/ir/status_macros_internal.h"

namespace gpuflow {

namespace {

template <typename... Args>
absl::Status Invalid(const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(args...));
}

bool IsIdentifier(absl::string_view s) {
  if (s.empty() || absl::ascii_isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// C and CUDA type names that would be read as placeholders by mistake
// (`complex` is the kernels' complex<T>, which a placeholder would hide).
bool IsCTypeName(absl::string_view s) {
  for (absl::string_view t : {"float", "double", "int", "long", "short", "char", "unsigned",
                              "signed", "half", "size_t", "ptrdiff_t", "void", "auto", "complex"}) {
    if (s == t) return true;
  }
  return false;
}

// Names the generated code uses around the user's code.
bool IsReservedName(absl::string_view s) {
  return s == "i" || s == "_ind" || absl::StartsWith(s, "_gf") || absl::StartsWith(s, "gf");
}

// Placeholders bound so far, in binding order, with a hash index: a
// parameter list from a request may declare many thousands.
class Bindings {
 public:
  std::optional<DType> Lookup(absl::string_view name) const {
    const auto it = index_.find(name);
    if (it == index_.end()) return std::nullopt;
    return bound_[it->second].second;
  }
  void Add(const std::string& name, DType dtype) {
    if (index_.emplace(name, bound_.size()).second) bound_.emplace_back(name, dtype);
  }
  const std::vector<std::pair<std::string, DType>>& bound() const { return bound_; }

 private:
  std::vector<std::pair<std::string, DType>> bound_;
  absl::flat_hash_map<std::string, size_t> index_;
};

absl::Status Bind(Bindings& bound, const KernelParam& p, DType dtype) {
  if (std::optional<DType> existing = bound.Lookup(p.type)) {
    if (*existing != dtype) {
      return Invalid("type ", EchoRaw(p.type), " is bound to both ", DTypeName(*existing), " and ",
                     DTypeName(dtype), " (by ", Echo(p.name), ")");
    }
    return absl::OkStatus();
  }
  bound.Add(p.type, dtype);
  return absl::OkStatus();
}

// The dtype a weak (Python) scalar binds a placeholder to.
DType WeakScalarDType(const ValueType& t) { return t.dtype; }

absl::StatusOr<std::string> StringAttr(const AttrMap& attrs, absl::string_view name) {
  auto it = attrs.find(name);
  if (it == attrs.end()) return std::string();
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  return Invalid("attribute ", Echo(name), " must be a string");
}

}  // namespace

absl::StatusOr<std::vector<KernelParam>> ParseKernelParams(absl::string_view text,
                                                           absl::string_view what) {
  std::vector<KernelParam> params;
  if (absl::StripAsciiWhitespace(text).empty()) return params;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::vector<absl::string_view> words = absl::StrSplit(
        absl::StripAsciiWhitespace(part), absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty());
    KernelParam p;
    if (!words.empty() && words[0] == "raw") {
      p.raw = true;
      words.erase(words.begin());
    }
    if (words.size() != 2) {
      return Invalid("cannot parse ", Echo(absl::StripAsciiWhitespace(part)), " in ", what,
                     " (expected '[raw] TYPE NAME')");
    }
    p.type = std::string(words[0]);
    p.name = std::string(words[1]);
    if (!IsIdentifier(p.type) || !IsIdentifier(p.name)) {
      return Invalid("cannot parse ", Echo(absl::StripAsciiWhitespace(part)), " in ", what,
                     " (TYPE and NAME must be identifiers)");
    }
    if (!ParseDType(p.type).ok() && IsCTypeName(p.type)) {
      return Invalid(Echo(p.type), " in ", what,
                     " is a C type name; use a dtype name such as float32, float64 or int32, or "
                     "a placeholder such as T");
    }
    if (IsReservedName(p.name)) {
      return Invalid("parameter name ", Echo(p.name), " in ", what,
                     " is reserved (i, _ind and names starting with gf or _gf)");
    }
    params.push_back(std::move(p));
  }
  return params;
}

absl::StatusOr<KernelSignature> ResolveKernelSignature(absl::Span<const ValueType> inputs,
                                                       const AttrMap& attrs, KernelForm form) {
  KernelSignature sig;
  GPUFLOW_IR_ASSIGN_OR_RETURN(const std::string in_text, StringAttr(attrs, "in_params"));
  GPUFLOW_IR_ASSIGN_OR_RETURN(const std::string out_text, StringAttr(attrs, "out_params"));
  GPUFLOW_IR_ASSIGN_OR_RETURN(sig.in, ParseKernelParams(in_text, "in_params"));
  GPUFLOW_IR_ASSIGN_OR_RETURN(sig.out, ParseKernelParams(out_text, "out_params"));
  if (sig.out.empty()) return Invalid("out_params declares no output");
  GPUFLOW_IR_ASSIGN_OR_RETURN(const std::string name, StringAttr(attrs, "name"));
  if (attrs.contains("name") && !IsIdentifier(name)) {
    return Invalid("kernel name ", Echo(name), " is not an identifier");
  }
  {
    absl::flat_hash_set<absl::string_view> names;
    for (const auto* list : {&sig.in, &sig.out}) {
      for (const KernelParam& p : *list) {
        if (!names.insert(p.name).second) {
          return Invalid("parameter ", Echo(p.name), " is declared twice");
        }
      }
    }
  }
  const size_t n_in = sig.in.size();
  const size_t n_out = sig.out.size();
  for (const KernelParam& p : sig.out) {
    if (!p.raw) continue;
    if (form == KernelForm::kReduction) {
      return Invalid("raw output parameters (", Echo(p.name),
                     ") are not supported in reduction kernels");
    }
    // CuPy's raw outputs are arrays the kernel indexes: they must be given.
    if (inputs.size() != n_in + n_out) {
      return Invalid("raw output parameter ", Echo(p.name),
                     " needs its array: pass the outputs after the inputs");
    }
  }
  if (form == KernelForm::kReduction) {
    if (n_out != 1) return Invalid("a reduction kernel has exactly one output, got ", n_out);
    for (const KernelParam& p : sig.in) {
      if (p.raw) {
        return Invalid("raw parameters (", Echo(p.name),
                       ") are not supported in reduction kernels");
      }
    }
    if (inputs.size() != n_in) {
      return Invalid("in_params declares ", n_in, " inputs, but the node has ", inputs.size());
    }
  } else if (inputs.size() == n_in + n_out && n_out > 0) {
    sig.outputs_given = true;
  } else if (inputs.size() != n_in) {
    return Invalid("in_params declares ", n_in, " inputs and out_params ", n_out,
                   " outputs, but the node has ", inputs.size(), " inputs (pass ", n_in, ", or ",
                   n_in + n_out, " with the outputs' initial values)");
  }

  // Placeholders: arrays bind first (inputs, then given outputs), then
  // Python scalars.
  Bindings bound;
  auto param_of = [&](size_t i) -> const KernelParam& {
    return i < n_in ? sig.in[i] : sig.out[i - n_in];
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const KernelParam& p = param_of(i);
    const ValueType& t = inputs[i];
    if (p.raw && t.weak) {
      return Invalid("raw parameter ", Echo(p.name), " needs an array, got a Python scalar");
    }
    if (i >= n_in && t.weak) {
      return Invalid("output ", Echo(p.name), " needs an array, got a Python scalar");
    }
    absl::StatusOr<DType> concrete = ParseDType(p.type);
    if (concrete.ok()) {
      if ((p.raw || i >= n_in) && *concrete != t.dtype) {
        return Invalid(p.raw ? "raw parameter " : "output ", Echo(p.name), " is declared ",
                       EchoRaw(p.type), " but the array is ", DTypeName(t.dtype));
      }
      continue;
    }
    if (!t.weak) GPUFLOW_IR_RETURN_IF_ERROR(Bind(bound, p, t.dtype));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const KernelParam& p = param_of(i);
    if (!inputs[i].weak || ParseDType(p.type).ok() || bound.Lookup(p.type)) continue;
    bound.Add(p.type, WeakScalarDType(inputs[i]));
  }
  auto resolve = [&](const KernelParam& p) -> absl::StatusOr<DType> {
    if (absl::StatusOr<DType> d = ParseDType(p.type); d.ok()) return *d;
    if (std::optional<DType> d = bound.Lookup(p.type)) return *d;
    return Invalid("the type ", Echo(p.type), " of ", Echo(p.name),
                   " is not bound by any argument; pass the output array or declare a dtype");
  };
  for (const KernelParam& p : sig.in) {
    GPUFLOW_IR_ASSIGN_OR_RETURN(const DType d, resolve(p));
    sig.in_dtypes.push_back(d);
  }
  for (const KernelParam& p : sig.out) {
    GPUFLOW_IR_ASSIGN_OR_RETURN(const DType d, resolve(p));
    sig.out_dtypes.push_back(d);
  }
  sig.placeholders = bound.bound();

  // The loop shape.
  std::vector<Shape> shapes;
  bool any_non_raw = false;
  for (size_t i = 0; i < n_in; ++i) {
    if (sig.in[i].raw) continue;
    any_non_raw = true;
    shapes.push_back(inputs[i].shape);
  }
  absl::StatusOr<Shape> shape = BroadcastShapes(shapes);
  if (!shape.ok()) return shape.status();
  sig.shape = *std::move(shape);
  auto size_it = attrs.find("size");
  if (size_it != attrs.end()) {
    const int64_t size = std::get<int64_t>(size_it->second);
    if (form == KernelForm::kReduction) return Invalid("'size' is for elementwise kernels");
    if (size < 0) return Invalid("'size' must be >= 0, got ", size);
    if (sig.shape.rank() != 0) {
      return Invalid("'size' is given but the arguments have shape ", sig.shape.ToString(),
                     "; pass 'size' only when no non-raw array gives the loop shape");
    }
    GPUFLOW_IR_ASSIGN_OR_RETURN(sig.shape, Shape::Create({size}));
  } else if (!any_non_raw) {
    // The first non-raw output given, if any, gives the loop shape.
    int first = -1;
    for (size_t o = 0; o < n_out && sig.outputs_given; ++o) {
      if (!sig.out[o].raw) {
        first = static_cast<int>(o);
        break;
      }
    }
    if (first < 0) {
      return Invalid(
          "the loop size is undecided: no non-raw argument gives a shape; pass 'size' or the "
          "output array");
    }
    sig.shape = inputs[n_in + first].shape;
  }
  for (size_t o = 0; o < n_out; ++o) {
    sig.out_shapes.push_back(sig.out[o].raw ? inputs[n_in + o].shape : sig.shape);
  }
  if (sig.outputs_given) {
    for (size_t o = 0; o < n_out; ++o) {
      if (sig.out[o].raw) continue;  // any shape: the kernel indexes it
      const Shape& s = inputs[n_in + o].shape;
      if (!(s == sig.shape)) {
        return Invalid("output ", Echo(sig.out[o].name), " has shape ", s.ToString(),
                       " but the arguments broadcast to ", sig.shape.ToString());
      }
    }
  }

  if (form == KernelForm::kReduction) {
    GPUFLOW_IR_ASSIGN_OR_RETURN(const std::string reduce_type, StringAttr(attrs, "reduce_type"));
    if (reduce_type.empty()) {
      sig.reduce_dtype = sig.out_dtypes[0];
    } else if (absl::StatusOr<DType> d = ParseDType(reduce_type); d.ok()) {
      sig.reduce_dtype = *d;
    } else if (std::optional<DType> b = bound.Lookup(reduce_type)) {
      sig.reduce_dtype = *b;
    } else {
      return Invalid("reduce_type ", Echo(reduce_type),
                     " is neither a dtype name nor a bound type placeholder");
    }
  }
  return sig;
}

const char* KernelCTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return "bool";
    case DType::kInt8:
      return "signed char";
    case DType::kInt16:
      return "short";
    case DType::kInt32:
      return "int";
    case DType::kInt64:
      return "long long";
    case DType::kUInt8:
      return "unsigned char";
    case DType::kUInt16:
      return "unsigned short";
    case DType::kUInt32:
      return "unsigned int";
    case DType::kUInt64:
      return "unsigned long long";
    case DType::kFloat16:
      return "__half";
    case DType::kBFloat16:
      return "__nv_bfloat16";
    case DType::kFloat32:
      return "float";
    case DType::kFloat64:
      return "double";
    case DType::kComplex64:
      return "complex<float>";
    case DType::kComplex128:
      return "complex<double>";
  }
  return "void";
}

}  // namespace gpuflow

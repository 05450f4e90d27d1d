#include "engine/cuda/codegen.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/cuda/codegen_internal.h"
#include "engine/cuda/device_library.h"

namespace gpuflow::cuda {

namespace internal {

// The type a value has in registers (bool is a real bool there).
const char* RegisterTypeName(DType dtype) {
  return dtype == DType::kBool ? "bool" : StorageTypeName(dtype);
}

// The compute class of a compute dtype (see the device library).
const char* ComputeClassName(DType dtype) {
  switch (KindOf(dtype)) {
    case DTypeKind::kBool:
      return "bool";
    case DTypeKind::kSigned:
      return "i64";
    case DTypeKind::kUnsigned:
      return "u64";
    case DTypeKind::kFloat:
      return dtype == DType::kFloat64 ? "double" : "float";
    case DTypeKind::kComplex:
      break;
  }
  return "gf::complex<double>";  // complex64 too, as the reference computes
}

const char* WideAccumulatorName(DType compute) {
  return IsFloat(compute) ? "double" : ComputeClassName(compute);
}

void MergeDims(std::vector<int64_t>& dims, std::vector<int64_t>& a, std::vector<int64_t>& b) {
  std::vector<int64_t> d2, a2, b2;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (!d2.empty() && a2.back() == a[d] * dims[d] && b2.back() == b[d] * dims[d]) {
      d2.back() *= dims[d];
      a2.back() = a[d];
      b2.back() = b[d];
      continue;
    }
    d2.push_back(dims[d]);
    a2.push_back(a[d]);
    b2.push_back(b[d]);
  }
  dims = std::move(d2);
  a = std::move(a2);
  b = std::move(b2);
}

// Contiguous strides of `shape` right-aligned to `out`, 0 where broadcast.
std::vector<int64_t> BroadcastStrides(const Shape& shape, const Shape& out) {
  return BroadcastStrides(shape, out.dims());
}

std::vector<int64_t> BroadcastStrides(const Shape& shape, absl::Span<const int64_t> out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (int d = shape.rank() - 1, o = static_cast<int>(out.size()) - 1; d >= 0 && o >= 0; --d, --o) {
    if (shape.dim(d) != 1) strides[o] = stride;
    stride *= shape.dim(d);
  }
  return strides;
}

std::string DoubleLiteral(double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  return absl::StrCat("__longlong_as_double((long long)0x", absl::Hex(bits, absl::kZeroPad16),
                      "ull)");
}

bool Contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

Accumulator PlainAccumulator(const std::string& op, DType compute) {
  Accumulator a;
  const bool logical = op == "any" || op == "all";
  const bool complex = IsComplex(compute) && !logical;
  if (logical) {
    a.type = "int";
  } else if (complex) {
    a.type = "gf::complex<double>";
  } else if (IsFloat(compute) || op == "mean" || op == "var" || op == "std") {
    a.type = "double";
  } else {
    a.type = KindOf(compute) == DTypeKind::kUnsigned ? "u64" : "i64";
  }
  const bool fp = a.type == "double";
  if (op == "prod") {
    a.ident = "(" + a.type + ")1";
    a.combine = "gf::op_mul<" + a.type + ">(a, b)";
  } else if (op == "min") {
    a.ident = complex ? "gf::c_highest<double>()"
              : fp    ? "__longlong_as_double(0x7ff0000000000000ll)"
                      : (a.type == "u64" ? "~0ull" : "9223372036854775807ll");
    a.combine = "gf::op_minimum<" + a.type + ">(a, b)";
  } else if (op == "max") {
    a.ident = complex ? "gf::c_lowest<double>()"
              : fp    ? "__longlong_as_double((long long)0xfff0000000000000ull)"
                      : (a.type == "u64" ? "0ull" : "(-9223372036854775807ll - 1)");
    a.combine = "gf::op_maximum<" + a.type + ">(a, b)";
  } else if (op == "any") {
    a.ident = "0";
    a.combine = "(a | b)";
  } else if (op == "all") {
    a.ident = "1";
    a.combine = "(a & b)";
  } else {  // sum, mean, var, std
    a.ident = "(" + a.type + ")0";
    a.combine = "gf::op_add<" + a.type + ">(a, b)";
  }
  return a;
}

bool PassedByValue(const ValueRef& ref, const ValueType& type) {
  return ref.kind == ValueRef::Kind::kLiteral && type.shape.rank() == 0 &&
         ItemSize(type.dtype) <= 8;
}

std::string EmitElementwiseNodes(const ValidatedGraph& graph, const std::vector<int>& nodes,
                                 const std::function<std::string(const ValueRef&)>& expr) {
  std::string body;
  for (int n : nodes) {
    const ValidatedNode& node = graph.nodes[n];
    if (node.op->name == "bitcast") {
      // The input's bytes, in its register type, read as the output's.
      const ValueRef& ref = node.inputs[0];
      const bool internal = ref.kind == ValueRef::Kind::kNode &&
                            std::find(nodes.begin(), nodes.end(), ref.index) != nodes.end();
      const char* to = RegisterTypeName(node.type.output.dtype);
      absl::StrAppend(&body, "      const ", to, " v", n, " = gf::bit_as<", to, ", ",
                      RegisterTypeName(node.type.compute_dtype), ">(",
                      internal ? absl::StrCat("v", ref.index) : expr(ref), ");\n");
      continue;
    }
    const char* c = ComputeClassName(node.type.compute_dtype);
    const char* kt = RegisterTypeName(node.type.compute_dtype);
    std::vector<std::string> args;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueRef& ref = node.inputs[i];
      const bool internal = ref.kind == ValueRef::Kind::kNode &&
                            std::find(nodes.begin(), nodes.end(), ref.index) != nodes.end();
      const std::string e = internal ? absl::StrCat("v", ref.index) : expr(ref);
      if (node.op->name == "where" && i == 0) {
        args.push_back(absl::StrCat("gf::cv<bool>(", e, ")"));
      } else {
        args.push_back(absl::StrCat("gf::in<", c, ", ", kt, ">(", e, ")"));
      }
    }
    const char* d = RegisterTypeName(node.type.output.dtype);
    absl::StrAppend(&body, "      const ", d, " v", n, " = gf::cv<", d, ">(gf::op_", node.op->name,
                    "<", c, ">(", absl::StrJoin(args, ", "), "));\n");
  }
  return body;
}

}  // namespace internal

using internal::BroadcastStrides;
using internal::ComputeClassName;
using internal::RegisterTypeName;

uint64_t LiteralWord(const LiteralArray& literal) {
  uint64_t w = 0;
  std::memcpy(&w, literal.bytes.data(), std::min<size_t>(literal.bytes.size(), sizeof(w)));
  return w;
}

const char* StorageTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return "u8";
    case DType::kInt8:
      return "i8";
    case DType::kInt16:
      return "i16";
    case DType::kInt32:
      return "i32";
    case DType::kInt64:
      return "i64";
    case DType::kUInt8:
      return "u8";
    case DType::kUInt16:
      return "u16";
    case DType::kUInt32:
      return "u32";
    case DType::kUInt64:
      return "u64";
    case DType::kFloat16:
      return "f16";
    case DType::kBFloat16:
      return "bf16";
    case DType::kFloat32:
      return "float";
    case DType::kFloat64:
      return "double";
    case DType::kComplex64:
      return "gf::complex<float>";
    case DType::kComplex128:
      return "gf::complex<double>";
  }
  return "u8";
}

absl::StatusOr<ElementwiseKernel> GenerateElementwise(const ValidatedGraph& graph, const Step& step,
                                                      const std::string& name) {
  if (step.kind != StepKind::kElementwise || step.nodes.empty()) {
    return absl::InternalError("GenerateElementwise needs an elementwise step");
  }
  ElementwiseKernel k;
  k.name = name;
  const ValidatedNode& root = graph.nodes[step.root];
  const Shape& out_shape = root.type.output.shape;
  k.num_elements = out_shape.num_elements();

  // External inputs, deduplicated, in first-use order.
  auto in_step = [&](int node) {
    return std::find(step.nodes.begin(), step.nodes.end(), node) != step.nodes.end();
  };
  auto find_input = [&](const ValueRef& ref) {
    for (size_t i = 0; i < k.inputs.size(); ++i) {
      if (k.inputs[i].ref == ref) return static_cast<int>(i);
    }
    return -1;
  };
  for (int n : step.nodes) {
    const ValidatedNode& node = graph.nodes[n];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueRef& ref = node.inputs[i];
      if (ref.kind == ValueRef::Kind::kNode && in_step(ref.index)) continue;
      if (find_input(ref) >= 0) continue;
      StepInput input{ref, node.input_types[i], false};
      input.by_value = internal::PassedByValue(ref, input.type);
      k.inputs.push_back(std::move(input));
    }
  }

  // Strides of the pointer inputs over the output's dims, then collapse:
  // drop size-1 dims and merge neighbours every input walks contiguously.
  std::vector<int> pointer_inputs;
  std::vector<std::vector<int64_t>> strides;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    if (k.inputs[i].by_value) continue;
    pointer_inputs.push_back(static_cast<int>(i));
    strides.push_back(BroadcastStrides(k.inputs[i].type.shape, out_shape));
  }
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> cstrides(strides.size());
  for (int d = 0; d < out_shape.rank(); ++d) {
    if (out_shape.dim(d) == 1) continue;
    bool merge = !dims.empty();
    for (size_t p = 0; merge && p < strides.size(); ++p) {
      merge = cstrides[p].back() == strides[p][d] * out_shape.dim(d);
    }
    if (merge) {
      dims.back() *= out_shape.dim(d);
      for (size_t p = 0; p < strides.size(); ++p) cstrides[p].back() = strides[p][d];
    } else {
      dims.push_back(out_shape.dim(d));
      for (size_t p = 0; p < strides.size(); ++p) cstrides[p].push_back(strides[p][d]);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (auto& s : cstrides) s.push_back(0);
  }
  k.rank = static_cast<int>(dims.size());
  k.dims = dims;
  for (const auto& s : cstrides) k.strides.insert(k.strides.end(), s.begin(), s.end());

  // 32-bit indexing when every index fits.
  int64_t largest = k.num_elements;
  for (int p : pointer_inputs) {
    largest = std::max(largest, k.inputs[p].type.shape.num_elements());
  }
  k.index32 = largest < (int64_t{1} << 31);

  // Vector loads when the output and every pointer input are contiguous (or
  // 0-d, read once).
  int64_t widest = ItemSize(root.type.output.dtype);
  bool contiguous = k.rank == 1;
  std::vector<bool> scalar_pointer(pointer_inputs.size(), false);
  for (size_t p = 0; p < pointer_inputs.size(); ++p) {
    const ValueType& t = k.inputs[pointer_inputs[p]].type;
    if (t.shape.num_elements() == 1) {
      scalar_pointer[p] = true;
      continue;
    }
    contiguous = contiguous && cstrides[p][0] == 1;
    widest = std::max(widest, ItemSize(t.dtype));
  }
  k.elements_per_vector = static_cast<int>(16 / widest);
  k.vectorized = contiguous && k.elements_per_vector > 1 && k.num_elements >= k.elements_per_vector;

  const int num_pointers = static_cast<int>(pointer_inputs.size());
  int num_scalars = 0;
  for (const StepInput& in : k.inputs) num_scalars += in.by_value ? 1 : 0;
  k.num_words = num_pointers + 2 + k.rank + num_pointers * k.rank + num_scalars;

  // ---- source ----
  const char* out_t = StorageTypeName(root.type.output.dtype);
  std::string src;
  absl::StrAppend(&src, "\nstruct ", k.name, "_args { unsigned long long w[", k.num_words,
                  "]; };\n", "extern \"C\" __global__ void __launch_bounds__(256) ", k.name,
                  "(const ", k.name, "_args p) {\n", "  typedef ", k.index32 ? "int" : "long long",
                  " idx;\n");
  // Pointers and scalars.
  int word = 0;
  std::vector<std::string> input_expr(k.inputs.size());
  for (int p = 0; p < num_pointers; ++p) {
    const StepInput& in = k.inputs[pointer_inputs[p]];
    absl::StrAppend(&src, "  const ", StorageTypeName(in.type.dtype), "* __restrict__ in", p,
                    " = (const ", StorageTypeName(in.type.dtype), "*)p.w[", word++, "];\n");
  }
  absl::StrAppend(&src, "  ", out_t, "* __restrict__ out = (", out_t, "*)p.w[", word++, "];\n");
  absl::StrAppend(&src, "  const idx n = (idx)p.w[", word++, "];\n");
  const int dims_word = word;
  word += k.rank;
  const int strides_word = word;
  word += num_pointers * k.rank;
  int scalar = 0;
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    if (!k.inputs[i].by_value) continue;
    const char* t = StorageTypeName(k.inputs[i].type.dtype);
    absl::StrAppend(&src, "  const ", t, " s", scalar, " = gf::word<", t, ">(p.w[", word++,
                    "]);\n");
    input_expr[i] = absl::StrCat("s", scalar++);
  }

  // The per-element body: x<p> are the pointer inputs' values.
  for (int p = 0; p < num_pointers; ++p) input_expr[pointer_inputs[p]] = absl::StrCat("x", p);
  const std::string body = internal::EmitElementwiseNodes(
      graph, step.nodes, [&](const ValueRef& ref) { return input_expr[find_input(ref)]; });
  const std::string result = absl::StrCat("gf::cv<", out_t, ">(v", step.root, ")");

  absl::StrAppend(&src, "  const idx tid = (idx)(blockIdx.x * blockDim.x + threadIdx.x);\n",
                  "  const idx nthreads = (idx)(gridDim.x * blockDim.x);\n");
  if (k.vectorized) {
    const int e = k.elements_per_vector;
    absl::StrAppend(&src, "  const idx nv = n / ", e, ";\n");
    for (int p = 0; p < num_pointers; ++p) {
      if (scalar_pointer[p]) {
        absl::StrAppend(&src, "  const ", StorageTypeName(k.inputs[pointer_inputs[p]].type.dtype),
                        " x", p, " = in", p, "[0];\n");
      }
    }
    absl::StrAppend(&src, "  for (idx j = tid; j < nv; j += nthreads) {\n");
    for (int p = 0; p < num_pointers; ++p) {
      if (scalar_pointer[p]) continue;
      const char* t = StorageTypeName(k.inputs[pointer_inputs[p]].type.dtype);
      absl::StrAppend(&src, "    const gf::vec<", t, ", ", e, "> va", p, " = ((const gf::vec<", t,
                      ", ", e, ">*)in", p, ")[j];\n");
    }
    absl::StrAppend(&src, "    gf::vec<", out_t, ", ", e, "> vo;\n", "#pragma unroll\n",
                    "    for (int e = 0; e < ", e, "; ++e) {\n");
    for (int p = 0; p < num_pointers; ++p) {
      if (scalar_pointer[p]) continue;
      absl::StrAppend(&src, "      const ", StorageTypeName(k.inputs[pointer_inputs[p]].type.dtype),
                      " x", p, " = va", p, ".v[e];\n");
    }
    absl::StrAppend(&src, body, "      vo.v[e] = ", result, ";\n    }\n", "    ((gf::vec<", out_t,
                    ", ", e, ">*)out)[j] = vo;\n  }\n");
    // The tail that does not fill a vector.
    absl::StrAppend(&src, "  for (idx i = nv * ", e, " + tid; i < n; i += nthreads) {\n");
    for (int p = 0; p < num_pointers; ++p) {
      if (scalar_pointer[p]) continue;
      absl::StrAppend(&src, "    const ", StorageTypeName(k.inputs[pointer_inputs[p]].type.dtype),
                      " x", p, " = in", p, "[i];\n");
    }
    absl::StrAppend(&src, "    {\n", body, "      out[i] = ", result, ";\n    }\n  }\n}\n");
  } else {
    absl::StrAppend(&src, "  for (idx i = tid; i < n; i += nthreads) {\n", "    idx rem = i;\n");
    for (int p = 0; p < num_pointers; ++p) absl::StrAppend(&src, "    idx o", p, " = 0;\n");
    for (int d = k.rank - 1; d >= 0; --d) {
      absl::StrAppend(&src, "    {\n      const idx dim = (idx)p.w[", dims_word + d, "];\n",
                      "      const idx c = rem % dim;\n      rem /= dim;\n");
      for (int p = 0; p < num_pointers; ++p) {
        absl::StrAppend(&src, "      o", p, " += c * (idx)p.w[", strides_word + p * k.rank + d,
                        "];\n");
      }
      absl::StrAppend(&src, "    }\n");
    }
    for (int p = 0; p < num_pointers; ++p) {
      absl::StrAppend(&src, "    const ", StorageTypeName(k.inputs[pointer_inputs[p]].type.dtype),
                      " x", p, " = in", p, "[o", p, "];\n");
    }
    absl::StrAppend(&src, "    {\n", body, "      out[i] = ", result, ";\n    }\n  }\n}\n");
  }
  k.kernel_source = src;
  k.source = DeviceSource(src);
  return k;
}

}  // namespace gpuflow::cuda

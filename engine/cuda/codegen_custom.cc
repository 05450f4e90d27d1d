// Custom kernels in CuPy's forms (see codegen.h and docs/custom_kernels.md):
// the user's code is pasted into a generated kernel that loads each non-raw
// argument for element i, runs the operation and stores the outputs.
#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/codegen_internal.h"
#include "engine/cuda/device_library.h"
#include "engine/ir/custom_kernel.h"
#include "engine/ir/echo.h"

namespace gpuflow::cuda {

namespace {

using internal::BroadcastStrides;
using internal::PassedByValue;

// What generated code offers the user's code besides the parameters: `i`
// (the element index), `_ind.size()` (the loop size) and raw arrays with
// `x[k]`, `x[{k0, k1}]`, `x.size()`, `x.shape()`, `x.strides()` (bytes) and
// `x.ndim`, as CuPy's CArray has.
constexpr char kCustomHeader[] = R"CUDA(
struct _gf_indexer {
  long long n;
  __device__ __forceinline__ long long size() const { return n; }
};
template <class T, int N> struct _gf_raw {
  static constexpr int ndim = N;
  T* data_;
  long long size_;
  long long shape_[N > 0 ? N : 1];
  long long strides_[N > 0 ? N : 1];
  __device__ _gf_raw(unsigned long long p, const unsigned long long* dims) {
    data_ = (T*)p;
    size_ = 1;
    for (int d = N - 1; d >= 0; --d) {
      shape_[d] = (long long)dims[d];
      strides_[d] = size_ * (long long)sizeof(T);
      size_ *= shape_[d];
    }
  }
  __device__ __forceinline__ T& operator[](long long k) const { return data_[k]; }
  __device__ __forceinline__ T& operator[](const long long (&idx)[N > 0 ? N : 1]) const {
    long long k = 0;
    for (int d = 0; d < N; ++d) k = k * shape_[d] + idx[d];
    return data_[k];
  }
  __device__ __forceinline__ long long size() const { return size_; }
  __device__ __forceinline__ const long long* shape() const { return shape_; }
  __device__ __forceinline__ const long long* strides() const { return strides_; }
};
)CUDA";

std::string Attr(const ValidatedNode& node, const char* name) {
  auto it = node.attrs.find(name);
  if (it == node.attrs.end()) return "";
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  return "";
}

// Appends `w` to the kernel's words; returns its index.
int PushWord(CustomKernel& k, uint64_t w) {
  k.words.push_back(w);
  return static_cast<int>(k.words.size()) - 1;
}

// Parameter `name` (C type `ctype`) from a 0-d literal of `literal_dtype`
// passed by value in word `word`.
std::string ByValueParam(const char* ctype, const std::string& name, DType literal_dtype,
                         int word) {
  return absl::StrCat("  const ", ctype, " ", name, " = gf::cv<", ctype, ">(gf::word<",
                      StorageTypeName(literal_dtype), ">(p.w[", word, "]));\n");
}

// The pointer `_gf_in<a>` to node input a's elements, from word `word`.
std::string InputPointer(size_t a, DType dtype, int word) {
  const char* storage = StorageTypeName(dtype);
  return absl::StrCat("  const ", storage, "* __restrict__ _gf_in", a, " = (const ", storage,
                      "*)p.w[", word, "];\n");
}

// Parameter `name` (C type `ctype`) from the one element of a 0-d input
// passed by pointer in word `word` (a complex128 literal, a 0-d array),
// read once before the loop.
std::string ZeroDimParam(size_t a, const char* ctype, const std::string& name, DType dtype,
                         int word) {
  return absl::StrCat(InputPointer(a, dtype, word), "  const ", ctype, " ", name, " = gf::cv<",
                      ctype, ">(_gf_in", a, "[0]);\n");
}

// The parts common to both forms (the device library comes with
// CustomKernelSource): placeholder typedefs, the preamble.
std::string Prologue(const KernelSignature& sig, const std::string& preamble) {
  std::string src = kCustomHeader;
  for (const auto& [name, dtype] : sig.placeholders) {
    absl::StrAppend(&src, "typedef ", KernelCTypeName(dtype), " ", name, ";\n");
  }
  absl::StrAppend(&src, preamble, "\n");
  return src;
}

// How a node input reaches the kernel.
struct ArgPlan {
  bool raw = false;
  bool by_value = false;   // a 0-d literal passed in its word
  bool zero_dim = false;   // a 0-d input passed by pointer, read once
  bool broadcast = false;  // a pointer input read through strides
  int word = -1;
  // Read before the loop, not per element.
  bool once() const { return raw || by_value || zero_dim; }
};

absl::StatusOr<CustomKernel> GenerateElementwiseCustom(const ValidatedGraph& graph, int n,
                                                       const KernelSignature& sig) {
  const ValidatedNode& node = graph.nodes[n];
  CustomKernel k;
  k.name = absl::StrCat("gf_", Attr(node, "name"));
  const Shape& loop = sig.shape;
  k.num_elements = loop.num_elements();
  const size_t n_in = sig.in.size();
  const size_t n_out = sig.out.size();

  std::vector<ArgPlan> args(node.inputs.size());
  std::string decls;
  std::string loads;         // per element, inside the loop (scalar path)
  std::vector<int> strided;  // inputs read through strides
  auto push = [&](uint64_t w) { return PushWord(k, w); };
  for (size_t a = 0; a < n_in; ++a) {
    const KernelParam& p = sig.in[a];
    const ValueRef& ref = node.inputs[a];
    const ValueType& type = node.input_types[a];
    const char* ctype = p.raw ? KernelCTypeName(type.dtype) : KernelCTypeName(sig.in_dtypes[a]);
    ArgPlan& plan = args[a];
    plan.raw = p.raw;
    if (p.raw) {
      plan.word = push(0);
      k.input_slots.push_back(plan.word);
      for (int d = 0; d < type.shape.rank(); ++d) push(static_cast<uint64_t>(type.shape.dim(d)));
      absl::StrAppend(&decls, "  const _gf_raw<const ", ctype, ", ", type.shape.rank(), "> ",
                      p.name, "(p.w[", plan.word, "], &p.w[", plan.word + 1, "]);\n");
      continue;
    }
    if (PassedByValue(ref, type)) {
      plan.by_value = true;
      plan.word = push(LiteralWord(graph.literals[ref.index]));
      k.input_slots.push_back(-1);
      k.literal_words.emplace_back(static_cast<int>(a), plan.word);
      absl::StrAppend(&decls, ByValueParam(ctype, p.name, type.dtype, plan.word));
      continue;
    }
    plan.word = push(0);
    k.input_slots.push_back(plan.word);
    if (type.shape.rank() == 0) {
      plan.zero_dim = true;
      absl::StrAppend(&decls, ZeroDimParam(a, ctype, p.name, type.dtype, plan.word));
      continue;
    }
    plan.broadcast = !(type.shape == loop);
    absl::StrAppend(&decls, InputPointer(a, type.dtype, plan.word));
    if (plan.broadcast) strided.push_back(static_cast<int>(a));
  }
  // Given outputs (initial values) are read at i; a raw output's is copied
  // into the output before the launch (the runner), and the kernel indexes
  // the output itself.
  std::vector<int> given_word(n_out, -1);
  if (sig.outputs_given) {
    for (size_t o = 0; o < n_out; ++o) {
      const DType dtype = node.input_types[n_in + o].dtype;
      const char* storage = StorageTypeName(dtype);
      given_word[o] = push(0);
      k.input_slots.push_back(given_word[o]);
      if (sig.out[o].raw) continue;
      absl::StrAppend(&decls, "  const ", storage, "* __restrict__ _gf_given", o, " = (const ",
                      storage, "*)p.w[", given_word[o], "];\n");
    }
  }
  for (size_t o = 0; o < n_out; ++o) {
    const char* storage = StorageTypeName(sig.out_dtypes[o]);
    const int w = push(0);
    k.output_slots.push_back(w);
    k.output_elements.push_back(sig.out_shapes[o].num_elements());
    k.raw_output_inputs.push_back(sig.out[o].raw ? static_cast<int>(n_in + o) : -1);
    if (sig.out[o].raw) {
      const Shape& shape = sig.out_shapes[o];
      for (int d = 0; d < shape.rank(); ++d) push(static_cast<uint64_t>(shape.dim(d)));
      absl::StrAppend(&decls, "  const _gf_raw<", KernelCTypeName(sig.out_dtypes[o]), ", ",
                      shape.rank(), "> ", sig.out[o].name, "(p.w[", w, "], &p.w[", w + 1, "]);\n");
      continue;
    }
    absl::StrAppend(&decls, "  ", storage, "* __restrict__ _gf_out", o, " = (", storage, "*)p.w[",
                    w, "];\n");
  }
  const int n_word = push(static_cast<uint64_t>(k.num_elements));
  absl::StrAppend(&decls, "  const _gf_indexer _ind{(long long)p.w[", n_word, "]};\n");
  // Strided inputs: the loop's dims, then each one's strides.
  int dims_word = -1;
  std::vector<int> strides_word(node.inputs.size(), -1);
  if (!strided.empty()) {
    dims_word = static_cast<int>(k.words.size());
    for (int d = 0; d < loop.rank(); ++d) push(static_cast<uint64_t>(loop.dim(d)));
    for (int a : strided) {
      strides_word[a] = static_cast<int>(k.words.size());
      for (int64_t s : BroadcastStrides(node.input_types[a].shape, loop)) {
        push(static_cast<uint64_t>(s));
      }
    }
  }

  // Vector loads and stores when every pointer operand is read at i.
  int64_t widest = 1;
  for (size_t a = 0; a < n_in; ++a) {
    if (!args[a].once()) widest = std::max<int64_t>(widest, ItemSize(node.input_types[a].dtype));
  }
  for (size_t o = 0; o < n_out; ++o) {
    if (!sig.out[o].raw) widest = std::max<int64_t>(widest, ItemSize(sig.out_dtypes[o]));
  }
  const int e = static_cast<int>(16 / widest);
  const bool vectorize = strided.empty() && e > 1 && k.num_elements >= e;
  k.elements_per_thread = vectorize ? e : 1;

  // The body for element i, given `value(a)` (a non-raw pointer input's
  // stored value), `given(o)` and `store(o, expr)`.
  auto body = [&](const std::function<std::string(size_t)>& value,
                  const std::function<std::string(size_t)>& given,
                  const std::function<std::string(size_t, const std::string&)>& store) {
    std::string b;
    for (size_t a = 0; a < n_in; ++a) {
      if (args[a].once()) continue;
      const char* ctype = KernelCTypeName(sig.in_dtypes[a]);
      absl::StrAppend(&b, "      const ", ctype, " ", sig.in[a].name, " = gf::cv<", ctype, ">(",
                      value(a), ");\n");
    }
    for (size_t o = 0; o < n_out; ++o) {
      if (sig.out[o].raw) continue;
      const char* ctype = KernelCTypeName(sig.out_dtypes[o]);
      if (sig.outputs_given) {
        absl::StrAppend(&b, "      ", ctype, " ", sig.out[o].name, " = gf::cv<", ctype, ">(",
                        given(o), ");\n");
      } else {
        absl::StrAppend(&b, "      ", ctype, " ", sig.out[o].name, ";\n");
      }
    }
    absl::StrAppend(&b, "      {\n", Attr(node, "operation"), "\n;\n      }\n");
    for (size_t o = 0; o < n_out; ++o) {
      if (sig.out[o].raw) continue;
      absl::StrAppend(&b, "      ",
                      store(o, absl::StrCat("gf::cv<", StorageTypeName(sig.out_dtypes[o]), ">(",
                                            sig.out[o].name, ")")),
                      ";\n");
    }
    return b;
  };

  std::string src = Prologue(sig, Attr(node, "preamble"));
  absl::StrAppend(&src, "struct ", k.name, "_args { unsigned long long w[", k.words.size(),
                  "]; };\n", "extern \"C\" __global__ void __launch_bounds__(256) ", k.name,
                  "(const ", k.name, "_args p) {\n", decls, "  {\n", Attr(node, "loop_prep"),
                  "\n;\n  }\n",
                  "  const long long _gf_tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n",
                  "  const long long _gf_nthreads = (long long)gridDim.x * blockDim.x;\n");
  const auto scalar_value = [&](size_t a) {
    if (!args[a].broadcast) return absl::StrCat("_gf_in", a, "[i]");
    return absl::StrCat("_gf_in", a, "[_gf_off", a, "]");
  };
  const auto scalar_given = [](size_t o) { return absl::StrCat("_gf_given", o, "[i]"); };
  const auto scalar_store = [](size_t o, const std::string& v) {
    return absl::StrCat("_gf_out", o, "[i] = ", v);
  };
  std::string start = "_gf_tid";
  if (vectorize) {
    absl::StrAppend(&src, "  const long long _gf_nv = _ind.size() / ", e, ";\n",
                    "  for (long long _gf_j = _gf_tid; _gf_j < _gf_nv; _gf_j += _gf_nthreads) {\n");
    for (size_t a = 0; a < n_in; ++a) {
      if (args[a].once()) continue;
      const char* t = StorageTypeName(node.input_types[a].dtype);
      absl::StrAppend(&src, "    const gf::vec<", t, ", ", e, "> _gf_va", a, " = ((const gf::vec<",
                      t, ", ", e, ">*)_gf_in", a, ")[_gf_j];\n");
    }
    for (size_t o = 0; o < n_out; ++o) {
      if (sig.out[o].raw) continue;
      const char* t = StorageTypeName(sig.out_dtypes[o]);
      absl::StrAppend(&src, "    gf::vec<", t, ", ", e, "> _gf_vo", o, ";\n");
      if (sig.outputs_given) {
        absl::StrAppend(&src, "    const gf::vec<", t, ", ", e, "> _gf_vg", o,
                        " = ((const gf::vec<", t, ", ", e, ">*)_gf_given", o, ")[_gf_j];\n");
      }
    }
    absl::StrAppend(&src, "#pragma unroll\n    for (int _gf_e = 0; _gf_e < ", e,
                    "; ++_gf_e) {\n      const long long i = _gf_j * ", e, " + _gf_e;\n",
                    body([](size_t a) { return absl::StrCat("_gf_va", a, ".v[_gf_e]"); },
                         [](size_t o) { return absl::StrCat("_gf_vg", o, ".v[_gf_e]"); },
                         [](size_t o, const std::string& v) {
                           return absl::StrCat("_gf_vo", o, ".v[_gf_e] = ", v);
                         }),
                    "    }\n");
    for (size_t o = 0; o < n_out; ++o) {
      if (sig.out[o].raw) continue;
      absl::StrAppend(&src, "    ((gf::vec<", StorageTypeName(sig.out_dtypes[o]), ", ", e,
                      ">*)_gf_out", o, ")[_gf_j] = _gf_vo", o, ";\n");
    }
    absl::StrAppend(&src, "  }\n");
    start = absl::StrCat("_gf_nv * ", e, " + _gf_tid");
  }
  absl::StrAppend(&src, "  for (long long _gf_i = ", start,
                  "; _gf_i < _ind.size(); _gf_i += _gf_nthreads) {\n",
                  "    const long long i = _gf_i;\n");
  if (!strided.empty()) {
    absl::StrAppend(&src, "    long long _gf_rem = i;\n");
    for (int a : strided) absl::StrAppend(&src, "    long long _gf_off", a, " = 0;\n");
    for (int d = loop.rank() - 1; d >= 0; --d) {
      absl::StrAppend(&src, "    {\n      const long long _gf_c = _gf_rem % (long long)p.w[",
                      dims_word + d, "];\n      _gf_rem /= (long long)p.w[", dims_word + d, "];\n");
      for (int a : strided) {
        absl::StrAppend(&src, "      _gf_off", a, " += _gf_c * (long long)p.w[",
                        strides_word[a] + d, "];\n");
      }
      absl::StrAppend(&src, "    }\n");
    }
  }
  absl::StrAppend(&src, body(scalar_value, scalar_given, scalar_store), "  }\n  {\n",
                  Attr(node, "after_loop"), "\n;\n  }\n}\n");
  k.source = CustomKernelSource(src);
  return k;
}

int NextPowerOfTwo(int64_t v) {
  int p = 32;
  while (p < 256 && p < v) p *= 2;
  return p;
}

absl::StatusOr<CustomKernel> GenerateReductionCustom(const ValidatedGraph& graph, int n,
                                                     const KernelSignature& sig) {
  const ValidatedNode& node = graph.nodes[n];
  CustomKernel k;
  k.name = absl::StrCat("gf_", Attr(node, "name"));
  const Shape& full = sig.shape;
  std::vector<int64_t> axes;
  if (auto it = node.attrs.find("axes"); it != node.attrs.end()) {
    axes = std::get<std::vector<int64_t>>(it->second);
  } else {
    for (int d = 0; d < full.rank(); ++d) axes.push_back(d);
  }
  std::vector<int> kept_axes;
  std::vector<int> reduced_axes;
  for (int d = 0; d < full.rank(); ++d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) {
      reduced_axes.push_back(d);
    } else {
      kept_axes.push_back(d);
    }
  }
  int64_t outputs = 1;
  int64_t reduced = 1;
  for (int d : kept_axes) outputs *= full.dim(d);
  for (int d : reduced_axes) reduced *= full.dim(d);
  k.num_elements = outputs;
  // Reduced axes trailing and no input broadcast: element r of output o is
  // at o * R + r.
  bool trailing = true;
  for (size_t j = 0; j < reduced_axes.size(); ++j) {
    trailing = trailing && reduced_axes[j] == full.rank() - static_cast<int>(reduced_axes.size()) +
                                                  static_cast<int>(j);
  }

  auto push = [&](uint64_t w) { return PushWord(k, w); };
  std::string decls;
  std::vector<int> pointers;
  bool contiguous = trailing;
  for (size_t a = 0; a < sig.in.size(); ++a) {
    const ValueRef& ref = node.inputs[a];
    const ValueType& type = node.input_types[a];
    const char* ctype = KernelCTypeName(sig.in_dtypes[a]);
    if (PassedByValue(ref, type)) {
      const int w = push(LiteralWord(graph.literals[ref.index]));
      k.input_slots.push_back(-1);
      k.literal_words.emplace_back(static_cast<int>(a), w);
      absl::StrAppend(&decls, ByValueParam(ctype, sig.in[a].name, type.dtype, w));
      continue;
    }
    const int w = push(0);
    k.input_slots.push_back(w);
    if (type.shape.rank() == 0) {
      absl::StrAppend(&decls, ZeroDimParam(a, ctype, sig.in[a].name, type.dtype, w));
      continue;
    }
    absl::StrAppend(&decls, InputPointer(a, type.dtype, w));
    pointers.push_back(static_cast<int>(a));
    contiguous = contiguous && type.shape == full;
  }
  const char* out_storage = StorageTypeName(sig.out_dtypes[0]);
  const int out_word = push(0);
  k.output_slots.push_back(out_word);
  const int scratch_word = push(0);
  const int m_word = push(static_cast<uint64_t>(outputs));
  const int r_word = push(static_cast<uint64_t>(reduced));
  const int splits_word = push(1);
  const int chunk_word = push(static_cast<uint64_t>(reduced));
  // General layout: kept dims, reduced dims, then per pointer input its
  // strides over kept dims and over reduced dims.
  const int kept_word = static_cast<int>(k.words.size());
  for (int d : kept_axes) push(static_cast<uint64_t>(full.dim(d)));
  const int reduced_word = static_cast<int>(k.words.size());
  for (int d : reduced_axes) push(static_cast<uint64_t>(full.dim(d)));
  std::vector<int> strides_word(sig.in.size(), -1);
  for (int a : pointers) {
    strides_word[a] = static_cast<int>(k.words.size());
    const std::vector<int64_t> s = BroadcastStrides(node.input_types[a].shape, full);
    for (int d : kept_axes) push(static_cast<uint64_t>(s[d]));
    for (int d : reduced_axes) push(static_cast<uint64_t>(s[d]));
  }
  k.reduced = reduced;
  k.scratch_slot = scratch_word;
  k.splits_slot = splits_word;
  k.chunk_slot = chunk_word;
  k.accumulator_bytes = static_cast<int>(ItemSize(sig.reduce_dtype));
  k.block = NextPowerOfTwo(reduced);

  const char* out_ctype = KernelCTypeName(sig.out_dtypes[0]);
  const char* acc = KernelCTypeName(sig.reduce_dtype);
  const int kept_rank = static_cast<int>(kept_axes.size());
  const int reduced_rank = static_cast<int>(reduced_axes.size());
  std::string src = Prologue(sig, Attr(node, "preamble"));
  absl::StrAppend(&src, "typedef ", acc, " _type_reduce;\n", "struct ", k.name,
                  "_op {\n  __device__ __forceinline__ _type_reduce operator()(const "
                  "_type_reduce& a, const _type_reduce& b) const {\n    return (",
                  Attr(node, "reduce_expr"), ");\n  }\n};\n");
  absl::StrAppend(&src, "struct ", k.name, "_args { unsigned long long w[", k.words.size(),
                  "]; };\n");
  // The map of element r of output o, into `m`.
  std::string map_one;
  for (int a : pointers) {
    absl::StrAppend(&map_one, "      long long _gf_off", a, " = _gf_base", a, ";\n");
  }
  if (contiguous) {
    for (int a : pointers) absl::StrAppend(&map_one, "      _gf_off", a, " += _gf_r;\n");
  } else if (!pointers.empty()) {
    absl::StrAppend(&map_one, "      long long _gf_rem = _gf_r;\n");
    for (int d = reduced_rank - 1; d >= 0; --d) {
      absl::StrAppend(
          &map_one, "      {\n        const long long _gf_c = _gf_rem % (long long)p.w[",
          reduced_word + d, "];\n        _gf_rem /= (long long)p.w[", reduced_word + d, "];\n");
      for (int a : pointers) {
        absl::StrAppend(&map_one, "        _gf_off", a, " += _gf_c * (long long)p.w[",
                        strides_word[a] + kept_rank + d, "];\n");
      }
      absl::StrAppend(&map_one, "      }\n");
    }
  }
  for (int a : pointers) {
    const char* ctype = KernelCTypeName(sig.in_dtypes[a]);
    absl::StrAppend(&map_one, "      const ", ctype, " ", sig.in[a].name, " = gf::cv<", ctype,
                    ">(_gf_in", a, "[_gf_off", a, "]);\n");
  }
  absl::StrAppend(&map_one, "      const _type_reduce _gf_m = (_type_reduce)(",
                  Attr(node, "map_expr"), ");\n");
  // Base offsets of output o.
  std::string base;
  for (int a : pointers) absl::StrAppend(&base, "    long long _gf_base", a, " = 0;\n");
  if (contiguous) {
    for (int a : pointers) absl::StrAppend(&base, "    _gf_base", a, " = _gf_o * _gf_R;\n");
  } else if (!pointers.empty()) {
    absl::StrAppend(&base, "    long long _gf_orem = _gf_o;\n");
    for (int d = kept_rank - 1; d >= 0; --d) {
      absl::StrAppend(&base, "    {\n      const long long _gf_c = _gf_orem % (long long)p.w[",
                      kept_word + d, "];\n      _gf_orem /= (long long)p.w[", kept_word + d,
                      "];\n");
      for (int a : pointers) {
        absl::StrAppend(&base, "      _gf_base", a, " += _gf_c * (long long)p.w[",
                        strides_word[a] + d, "];\n");
      }
      absl::StrAppend(&base, "    }\n");
    }
  }
  const std::string post =
      absl::StrCat("      const _type_reduce a = _gf_acc;\n      ", out_ctype, " ", sig.out[0].name,
                   ";\n", "      {\n", Attr(node, "post_map_expr"), "\n;\n      }\n",
                   "      _gf_out[_gf_o] = gf::cv<", out_storage, ">(", sig.out[0].name, ");\n");

  // One kernel: a block per output (grid-stride over outputs); with splits
  // > 1 the same kernel writes partial accumulators to scratch and
  // `<name>_combine` reduces them and applies post_map_expr.
  absl::StrAppend(
      &src, "extern \"C\" __global__ void __launch_bounds__(", k.block, ") ", k.name, "(const ",
      k.name, "_args p) {\n", decls, "  ", out_storage, "* __restrict__ _gf_out = (", out_storage,
      "*)p.w[", out_word, "];\n", "  _type_reduce* __restrict__ _gf_scratch = (_type_reduce*)p.w[",
      scratch_word, "];\n", "  const long long _gf_M = (long long)p.w[", m_word, "];\n",
      "  const long long _gf_R = (long long)p.w[", r_word, "];\n",
      "  const long long _gf_splits = (long long)p.w[", splits_word, "];\n",
      "  const long long _gf_chunk = (long long)p.w[", chunk_word, "];\n",
      "  typedef gf::BlockReduce<_type_reduce, ", k.block, "> _gf_block_reduce;\n",
      "  __shared__ typename _gf_block_reduce::TempStorage _gf_temp;\n", "  const ", k.name,
      "_op _gf_op;\n",
      "  for (long long _gf_o = blockIdx.x; _gf_o < _gf_M; _gf_o += gridDim.x) {\n", base,
      "    const long long _gf_begin = (long long)blockIdx.y * _gf_chunk;\n",
      "    const long long _gf_end = _gf_begin + _gf_chunk < _gf_R ? _gf_begin + _gf_chunk : "
      "_gf_R;\n",
      "    _type_reduce _gf_acc = (_type_reduce)(", Attr(node, "identity"), ");\n",
      "    for (long long _gf_r = _gf_begin + threadIdx.x; _gf_r < _gf_end; _gf_r += ", k.block,
      ") {\n", map_one, "      _gf_acc = _gf_op(_gf_acc, _gf_m);\n    }\n",
      "    _gf_acc = _gf_block_reduce(_gf_temp).Reduce(_gf_acc, _gf_op);\n",
      "    if (threadIdx.x == 0) {\n", "      if (_gf_splits > 1) {\n",
      "        _gf_scratch[_gf_o * _gf_splits + blockIdx.y] = _gf_acc;\n      } else {\n", post,
      "      }\n    }\n    __syncthreads();\n  }\n}\n");
  // The combine kernel: a thread per output.
  absl::StrAppend(
      &src, "extern \"C\" __global__ void __launch_bounds__(256) ", k.name, "_combine(const ",
      k.name, "_args p) {\n", "  ", out_storage, "* __restrict__ _gf_out = (", out_storage,
      "*)p.w[", out_word, "];\n",
      "  const _type_reduce* __restrict__ _gf_scratch = (const "
      "_type_reduce*)p.w[",
      scratch_word, "];\n", "  const long long _gf_M = (long long)p.w[", m_word, "];\n",
      "  const long long _gf_splits = (long long)p.w[", splits_word, "];\n", "  const ", k.name,
      "_op _gf_op;\n",
      "  for (long long _gf_o = (long long)blockIdx.x * blockDim.x + threadIdx.x; _gf_o < _gf_M; "
      "_gf_o += (long long)gridDim.x * blockDim.x) {\n",
      "    _type_reduce _gf_acc = (_type_reduce)(", Attr(node, "identity"), ");\n",
      "    for (long long _gf_s = 0; _gf_s < _gf_splits; ++_gf_s) {\n",
      "      _gf_acc = _gf_op(_gf_acc, _gf_scratch[_gf_o * _gf_splits + _gf_s]);\n    }\n",
      "    {\n", post, "    }\n  }\n}\n");
  k.source = CustomKernelSource(src);
  return k;
}

}  // namespace

absl::StatusOr<CustomKernel> GenerateCustomKernel(const ValidatedGraph& graph, int node) {
  const ValidatedNode& n = graph.nodes[node];
  const bool reduction = n.op->name == "reduction_kernel";
  if (!reduction && n.op->name != "elementwise_kernel") {
    return absl::InvalidArgumentError(
        absl::StrCat("node ", Echo(n.id), " (", n.op->name, ") is not a generated custom kernel"));
  }
  absl::StatusOr<KernelSignature> sig = ResolveKernelSignature(
      n.input_types, n.attrs, reduction ? KernelForm::kReduction : KernelForm::kElementwise);
  if (!sig.ok()) return sig.status();
  absl::StatusOr<CustomKernel> k = reduction ? GenerateReductionCustom(graph, node, *sig)
                                             : GenerateElementwiseCustom(graph, node, *sig);
  if (k.ok()) k->output_dtypes = sig->out_dtypes;
  return k;
}

}  // namespace gpuflow::cuda

// The histogram kernels (see codegen_select.h): the host kernel's bins
// (engine/host/host_histogram.cc), step for step, on the device.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/codegen_select.h"
#include "engine/cuda/device_library.h"

namespace gpuflow::cuda {
namespace {

// The register type a float dtype computes in: double for float64, else
// float (narrow floats rounded back after each operation).
const char* FloatReg(DType d) { return d == DType::kFloat64 ? "double" : "float"; }

// A device function rounding a value of FloatReg(d) to d.
std::string RoundFunction(const std::string& name, DType d) {
  const char* r = FloatReg(d);
  std::string body = "  return v;\n";
  if (d == DType::kFloat16 || d == DType::kBFloat16) {
    body = absl::StrCat("  return gf::cv<float>(gf::cv<", StorageTypeName(d), ">(v));\n");
  }
  return absl::StrCat("__device__ __forceinline__ ", r, " ", name, "(", r, " v) {\n", body, "}\n");
}

// The compute class type of a real dtype, as the host kernels' classes.
const char* ClassType(DType d) {
  switch (KindOf(d)) {
    case DTypeKind::kBool:
      return "bool";
    case DTypeKind::kSigned:
      return "long long";
    case DTypeKind::kUnsigned:
      return "unsigned long long";
    default:
      return "double";
  }
}

}  // namespace

absl::StatusOr<std::optional<HistogramKernels>> GenerateHistogramKernels(
    const ValidatedNode& node) {
  if (node.op == nullptr || node.op->name != "histogram") return std::nullopt;
  const bool uniform = AttrOr<bool>(node.attrs, "uniform", false);
  const bool weighted = node.input_types.size() == 3;
  if (weighted && !uniform) return std::nullopt;  // the cumulative path: the host
  if (node.input_types[1].shape.num_elements() > (int64_t{1} << 30)) return std::nullopt;
  const DType a = node.input_types[0].dtype;
  const DType e = node.input_types[1].dtype;
  const DType compute = node.type.compute_dtype;
  const DType out = node.type.output.dtype;
  HistogramKernels k;
  k.weighted = weighted;
  k.n = node.input_types[0].shape.num_elements();
  k.bins = node.input_types[1].shape.num_elements() - 1;
  k.shared = k.bins <= kHistogramSharedBins;
  k.chunks = (k.n + kHistogramChunk - 1) / kHistogramChunk;
  const DType sub = AttrOr<DType>(node.attrs, "sub_dtype", e);
  const DType div = AttrOr<DType>(node.attrs, "div_dtype", e);
  // V: the type values are compared to the edges in.
  const std::string v = uniform ? FloatReg(e) : ClassType(compute);
  const std::string name =
      absl::StrCat("gf_histogram_", DTypeName(a), "_", DTypeName(e), "_", DTypeName(compute),
                   uniform ? absl::StrCat("_u_", DTypeName(sub), "_", DTypeName(div)) : "_s",
                   weighted ? absl::StrCat("_w", DTypeName(out)) : "", k.shared ? "" : "_g");
  std::string text = absl::StrCat("struct ", name, "_args { unsigned long long w[11]; };\n",
                                  "namespace ", name, "_ns {\n", "typedef ", v, " V;\n");
  // The value of element x and of edge i, in V.
  if (uniform) {
    absl::StrAppend(&text, RoundFunction("re", e), RoundFunction("rs", sub),
                    RoundFunction("rd", div), "typedef ", FloatReg(sub), " CS;\n", "typedef ",
                    FloatReg(div), " CD;\n", "__device__ __forceinline__ V value(",
                    StorageTypeName(a), " x) { return gf::cv<V>(gf::cv<", StorageTypeName(e),
                    ">(x)); }\n", "__device__ __forceinline__ V edge(", StorageTypeName(e),
                    " x) { return gf::cv<V>(x); }\n");
  } else {
    absl::StrAppend(&text, "__device__ __forceinline__ V value(", StorageTypeName(a),
                    " x) { return gf::in<V, ", StorageTypeName(compute), ">(x); }\n",
                    "__device__ __forceinline__ V edge(", StorageTypeName(e),
                    " x) { return gf::in<V, ", StorageTypeName(compute), ">(x); }\n");
  }
  // NumPy's sort order: NaN after every number.
  absl::StrAppend(&text, "__device__ __forceinline__ bool lt(V a, V b) { return ",
                  v == "double" ? "a < b || (b != b && a == a)" : "a < b", "; }\n");
  absl::StrAppend(&text, "__device__ __forceinline__ int bin_of(V x, const V* e, int nb, ",
                  "const unsigned long long* w) {\n", "  (void)w;\n");
  if (uniform) {
    // numpy: f = (x - first_edge) / norm_denom * bins, then the corrections.
    absl::StrAppend(
        &text, "  if (!(x >= e[0] && x <= e[nb])) return -1;\n",
        "  const CS first = gf::cv<CS>(gf::cv<", StorageTypeName(sub),
        ">(__longlong_as_double((long long)w[5])));\n", "  const CD denom = gf::cv<CD>(gf::cv<",
        StorageTypeName(div), ">(__longlong_as_double((long long)w[6])));\n",
        "  const CD count = gf::cv<CD>(gf::cv<", StorageTypeName(div), ">((double)nb));\n",
        "  const CS d = rs((CS)x - first);\n", "  const CD q = rd((CD)d / denom);\n",
        "  const CD f = rd(q * count);\n",
        "  int k = f >= (CD)nb ? nb : (f > (CD)0 ? (int)f : 0);\n", "  if (k == nb) --k;\n",
        "  if (x < e[k]) --k;\n", "  if (k != nb - 1 && x >= e[k + 1]) ++k;\n", "  return k;\n");
  } else {
    // The number of edges <= x (upper bound), then the closed last bin.
    absl::StrAppend(&text, "  int lo = 0, hi = nb + 1;\n", "  while (lo < hi) {\n",
                    "    const int mid = (lo + hi) >> 1;\n",
                    "    if (lt(x, e[mid])) hi = mid; else lo = mid + 1;\n", "  }\n",
                    "  if (lo == 0) return -1;\n", "  if (lo <= nb) return lo - 1;\n",
                    "  return nb > 0 && !lt(e[nb], x) ? nb - 1 : -1;\n");
  }
  absl::StrAppend(&text, "}\n}  // namespace\n");
  const std::string head =
      absl::StrCat("(const ", name, "_args p) {\n", "  using namespace ", name, "_ns;\n",
                   "  const ", StorageTypeName(a), "* __restrict__ a = (const ", StorageTypeName(a),
                   "*)p.w[0];\n", "  const ", StorageTypeName(e), "* __restrict__ eg = (const ",
                   StorageTypeName(e), "*)p.w[1];\n", "  const long long n = (long long)p.w[3];\n",
                   "  const int nb = (int)p.w[4];\n");
  // The edges in shared memory (or global, as V, when there are many).
  const std::string edges =
      k.shared ? absl::StrCat("  __shared__ V e[", kHistogramSharedBins + 1, "];\n",
                              "  for (int i = threadIdx.x; i <= nb; i += blockDim.x) e[i] = "
                              "edge(eg[i]);\n")
               : "  V* e = (V*)p.w[9];\n";
  if (!k.shared) {
    // Many bins: the edges converted to V once, into scratch.
    k.names.push_back(name + "_edges");
    absl::StrAppend(&text, "extern \"C\" __global__ void __launch_bounds__(256) ", k.names.back(),
                    head, "  V* e = (V*)p.w[9];\n",
                    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i <= "
                    "nb; i += (long long)gridDim.x * blockDim.x) e[i] = edge(eg[i]);\n}\n");
  }
  if (!weighted) {
    k.names.push_back(name + "_count");
    absl::StrAppend(
        &text, "extern \"C\" __global__ void __launch_bounds__(256) ", k.names.back(), head,
        "  unsigned long long* out = (unsigned long long*)p.w[2];\n", edges,
        k.shared ? absl::StrCat("  __shared__ unsigned int c[", kHistogramSharedBins, "];\n",
                                "  for (int i = threadIdx.x; i < nb; i += blockDim.x) c[i] = 0;\n",
                                "  __syncthreads();\n")
                 : "",
        "  const long long stride = (long long)gridDim.x * blockDim.x;\n",
        "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n",
        // Four loads in flight per thread.
        "  for (; i + 3 * stride < n; i += 4 * stride) {\n", "    V x[4];\n",
        "    for (int j = 0; j < 4; ++j) x[j] = value(a[i + j * stride]);\n",
        "    for (int j = 0; j < 4; ++j) {\n", "      const int k = bin_of(x[j], e, nb, p.w);\n",
        k.shared ? "      if (k >= 0) atomicAdd(&c[k], 1u);\n"
                 : "      if (k >= 0) atomicAdd(&out[k], 1ull);\n",
        "    }\n  }\n", "  for (; i < n; i += stride) {\n",
        "    const int k = bin_of(value(a[i]), e, nb, p.w);\n",
        k.shared ? "    if (k >= 0) atomicAdd(&c[k], 1u);\n"
                 : "    if (k >= 0) atomicAdd(&out[k], 1ull);\n",
        "  }\n",
        k.shared ? "  __syncthreads();\n  for (int i = threadIdx.x; i < nb; i += blockDim.x) {\n"
                   "    if (c[i] != 0u) atomicAdd(&out[i], (unsigned long long)c[i]);\n  }\n"
                 : "",
        "}\n");
  } else {
    const char* w = StorageTypeName(out);
    // A block per numpy block: its float64 sums per bin.
    k.names.push_back(name + "_partial");
    absl::StrAppend(
        &text, "extern \"C\" __global__ void __launch_bounds__(256) ", k.names.back(), head,
        "  const ", w, "* __restrict__ wt = (const ", w, "*)p.w[7];\n",
        "  double* part = (double*)p.w[8] + (long long)blockIdx.x * nb;\n", edges,
        k.shared ? absl::StrCat("  __shared__ double s[", kHistogramSharedBins, "];\n",
                                "  for (int i = threadIdx.x; i < nb; i += blockDim.x) s[i] = 0;\n",
                                "  __syncthreads();\n")
                 : "  double* s = part;\n",
        "  const long long begin = (long long)blockIdx.x * ", kHistogramChunk, ";\n",
        "  const long long end = begin + ", kHistogramChunk, " < n ? begin + ", kHistogramChunk,
        " : n;\n", "  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {\n",
        "    const int k = bin_of(value(a[i]), e, nb, p.w);\n",
        "    if (k >= 0) atomicAdd(&s[k], gf::cv<double>(wt[i]));\n", "  }\n",
        k.shared ? "  __syncthreads();\n"
                   "  for (int i = threadIdx.x; i < nb; i += blockDim.x) part[i] = s[i];\n"
                 : "",
        "}\n");
    // A thread per bin adds the blocks' sums in order, in W (numpy: n +=
    // bincount(...).astype(ntype)).
    std::string add;
    if (out == DType::kBool) {
      add = "    acc = acc || (p != 0.0);\n";
    } else if (out == DType::kUInt64) {
      add = "    acc += gf::sat<unsigned long long>(p);\n";
    } else if (IsInteger(out)) {
      add = "    acc += (unsigned long long)gf::sat<long long>(p);\n";
    } else {
      add = absl::StrCat("    acc = rw(acc + gf::cv<", FloatReg(out), ">(gf::cv<", w, ">(p)));\n");
    }
    const char* acc_type =
        out == DType::kBool ? "bool" : (IsInteger(out) ? "unsigned long long" : FloatReg(out));
    k.names.push_back(name + "_combine");
    absl::StrAppend(
        &text, "namespace ", name, "_ns {\n", IsFloat(out) ? RoundFunction("rw", out) : "", "}\n",
        "extern \"C\" __global__ void __launch_bounds__(256) ", k.names.back(), head, "  ", w,
        "* out = (", w, "*)p.w[2];\n", "  const double* part = (const double*)p.w[8];\n",
        "  const long long chunks = (long long)p.w[10];\n", "  (void)a; (void)eg; (void)n;\n",
        "  for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < nb; b += gridDim.x "
        "* blockDim.x) {\n",
        "    ", acc_type, " acc = 0;\n", "    for (long long c = 0; c < chunks; ++c) {\n",
        "      const double p = part[c * nb + b];\n", "  ", add, "    }\n", "    out[b] = gf::cv<",
        w, ">(acc);\n", "  }\n}\n");
  }
  k.source = DeviceSource(text);
  uint64_t first_bits = 0, denom_bits = 0;
  const double first = AttrOr<double>(node.attrs, "first_edge", 0.0);
  const double denom = AttrOr<double>(node.attrs, "norm_denom", 1.0);
  std::memcpy(&first_bits, &first, 8);
  std::memcpy(&denom_bits, &denom, 8);
  // [a] [edges] [out] [n] [bins] [first_edge] [norm_denom] [weights]
  // [partials] [edges scratch] [blocks]
  k.words = {0,
             0,
             0,
             static_cast<uint64_t>(k.n),
             static_cast<uint64_t>(k.bins),
             first_bits,
             denom_bits,
             0,
             0,
             0,
             static_cast<uint64_t>(k.chunks)};
  return k;
}

}  // namespace gpuflow::cuda

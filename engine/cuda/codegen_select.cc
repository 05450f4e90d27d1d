// The scatter and flatnonzero kernels (see codegen_select.h).
#include "engine/cuda/codegen_select.h"

#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/device_library.h"

namespace gpuflow::cuda {
namespace {

std::string ModeOf(const ValidatedNode& node) {
  const auto it = node.attrs.find("mode");
  const std::string* mode =
      it == node.attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  return mode == nullptr ? "set" : *mode;
}

// `u` (the updates' storage type U) converted to the output's storage type,
// as the layout copies convert.
std::string Converted(DType update, DType out, const std::string& u) {
  const char* t = StorageTypeName(out);
  if (out == DType::kBool) {
    return update == DType::kBool ? absl::StrCat("(u8)(", u, " != 0)")
                                  : absl::StrCat("(u8)gf::cv<bool>(", u, ")");
  }
  if (update == DType::kBool) return absl::StrCat("gf::cv<", t, ">((bool)(", u, " != 0))");
  if (update == out) return u;
  return absl::StrCat("gf::cv<", t, ">(", u, ")");
}

// `a` combined with `b` in T, as the host kernel combines them.
std::string CombineFunction(const std::string& name, DType dtype, const std::string& mode) {
  const char* t = StorageTypeName(dtype);
  std::string body;
  if (dtype == DType::kBool) {
    const bool either = mode == "add" || mode == "max";
    body = absl::StrCat("  return (u8)((a != 0) ", either ? "||" : "&&", " (b != 0));\n");
  } else if (IsFloat(dtype)) {
    std::string r;
    if (mode == "add") r = "x + y";
    if (mode == "mul") r = "x * y";
    if (mode == "min") r = "(x != x || y != y) ? x + y : (y < x ? y : x)";
    if (mode == "max") r = "(x != x || y != y) ? x + y : (x < y ? y : x)";
    body = absl::StrCat("  const double x = gf::cv<double>(a), y = gf::cv<double>(b);\n",
                        "  return gf::cv<", t, ">(", r, ");\n");
  } else {
    const char* c = KindOf(dtype) == DTypeKind::kSigned ? "i64" : "u64";
    std::string r;
    if (mode == "add") r = "(u64)x + (u64)y";
    if (mode == "mul") r = "(u64)x * (u64)y";
    if (mode == "min") r = "y < x ? y : x";
    if (mode == "max") r = "x < y ? y : x";
    body = absl::StrCat("  const ", c, " x = (", c, ")a, y = (", c, ")b;\n", "  return (", t, ")(",
                        c, ")(", r, ");\n");
  }
  return absl::StrCat("__device__ __forceinline__ ", t, " ", name, "_op(", t, " a, ", t, " b) {\n",
                      body, "}\n");
}

// *addr = op(*addr, v) atomically: atomicAdd where the hardware adds the
// type (float, double, 32- and 64-bit integers), else a compare-and-swap on
// the aligned word that holds the element.
std::string AtomicFunction(const std::string& name, DType dtype, const std::string& mode) {
  const char* t = StorageTypeName(dtype);
  const int64_t size = ItemSize(dtype);
  std::string body;
  if (mode == "add" && (dtype == DType::kFloat32 || dtype == DType::kFloat64)) {
    body = absl::StrCat("  atomicAdd(addr, v);\n");
  } else if (mode == "add" && (dtype == DType::kInt32 || dtype == DType::kUInt32)) {
    body = "  atomicAdd((unsigned int*)addr, (unsigned int)v);\n";
  } else if (mode == "add" && size == 8 && !IsFloat(dtype)) {
    body = "  atomicAdd((unsigned long long*)addr, (unsigned long long)v);\n";
  } else if (size == 8) {
    body = absl::StrCat("  unsigned long long* a = (unsigned long long*)addr;\n",
                        "  unsigned long long old = *a, assumed;\n", "  do {\n",
                        "    assumed = old;\n", "    ", t, " cur = *reinterpret_cast<const ", t,
                        "*>(&assumed);\n", "    ", t, " nv = ", name, "_op(cur, v);\n",
                        "    old = atomicCAS(a, assumed, *reinterpret_cast<const unsigned long "
                        "long*>(&nv));\n",
                        "  } while (old != assumed);\n");
  } else {
    const std::string low =
        size == 4 ? "0xffffffffu" : absl::StrCat("((1u << ", size * 8, ") - 1u)");
    body = absl::StrCat(
        "  const unsigned long long at = (unsigned long long)addr;\n",
        "  unsigned int* a = (unsigned int*)(at & ~3ull);\n",
        "  const unsigned int shift = (unsigned int)(at & 3ull) * 8u;\n",
        "  const unsigned int low = ", low, ";\n", "  unsigned int old = *a, assumed;\n",
        "  do {\n", "    assumed = old;\n",
        "    const unsigned int bits = (assumed >> shift) & low;\n", "    ", t,
        " cur = *reinterpret_cast<const ", t, "*>(&bits);\n", "    ", t, " nv = ", name,
        "_op(cur, v);\n", "    unsigned int nb = 0;\n", "    *reinterpret_cast<", t,
        "*>(&nb) = nv;\n",
        "    old = atomicCAS(a, assumed, (assumed & ~(low << shift)) | ((nb & low) << shift));\n",
        "  } while (old != assumed);\n");
  }
  return absl::StrCat("__device__ __forceinline__ void ", name, "_atomic(", t, "* addr, ", t,
                      " v) {\n", body, "}\n");
}

// One scatter kernel: `body` runs for each update k whose index is in
// bounds (j its target, uo its update's offset); `check` stores
// out-of-bounds indices into the error word.
std::string ScatterKernel(const std::string& name, const std::string& kernel, DType out,
                          DType index, DType update, int rank, bool index32, bool check,
                          const std::string& body) {
  const char* t = StorageTypeName(out);
  const char* i = StorageTypeName(index);
  const char* u = StorageTypeName(update);
  const char* idx = index32 ? "int" : "long long";
  std::string bad;
  if (KindOf(index) == DTypeKind::kSigned) {
    bad =
        "    const unsigned long long raw = (unsigned long long)(long long)ind[k];\n"
        "    long long j = (long long)raw;\n"
        "    if (j < 0) j += size;\n"
        "    const bool bad = (unsigned long long)j >= (unsigned long long)size;\n";
  } else {
    bad =
        "    const unsigned long long raw = (unsigned long long)ind[k];\n"
        "    const long long j = (long long)raw;\n"
        "    const bool bad = raw >= (unsigned long long)size;\n";
  }
  std::string text = absl::StrCat(
      "extern \"C\" __global__ void __launch_bounds__(256) ", kernel, "(const ", name,
      "_args p) {\n", "  typedef ", idx, " idx;\n", "  typedef ",
      index32 ? "unsigned int" : "unsigned long long", " W;\n", "  ", t, "* __restrict__ out = (",
      t, "*)p.w[0];\n", "  const ", i, "* __restrict__ ind = (const ", i, "*)p.w[1];\n", "  const ",
      u, "* __restrict__ upd = (const ", u, "*)p.w[2];\n",
      "  volatile unsigned long long* err = (volatile unsigned long long*)p.w[3];\n",
      "  W* win = (W*)p.w[4];\n", "  (void)win;\n", "  (void)err;\n",
      "  const idx count = (idx)p.w[5];\n", "  const long long size = (long long)p.w[6];\n",
      "  for (idx k = (idx)(blockIdx.x * blockDim.x + threadIdx.x); k < count; k += "
      "(idx)(gridDim.x * blockDim.x)) {\n",
      "    idx rem = k;\n    idx uo = 0;\n");
  for (int d = rank - 1; d >= 0; --d) {
    absl::StrAppend(&text, "    {\n      const idx dim = (idx)p.w[", 7 + d, "];\n",
                    "      const idx c = rem % dim;\n      rem /= dim;\n",
                    "      uo += c * (idx)(long long)p.w[", 7 + rank + d, "];\n    }\n");
  }
  absl::StrAppend(&text, bad, "    if (bad) {\n", check ? "      *err = raw;\n" : "",
                  "      continue;\n    }\n", body, "  }\n}\n");
  return text;
}

absl::StatusOr<SelectKernels> Scatter(const ValidatedNode& node) {
  const DType out = node.type.output.dtype;
  const DType index = node.input_types[1].dtype;
  const DType update = node.input_types[2].dtype;
  const Shape& is = node.input_types[1].shape;
  const Shape& us = node.input_types[2].shape;
  const std::string mode = ModeOf(node);
  SelectKernels k;
  k.kind = mode == "set" ? SelectKernels::Kind::kScatterSet : SelectKernels::Kind::kScatterCombine;
  k.count = is.num_elements();
  k.size = node.type.output.shape.num_elements();
  // The updates' strides over the indices' dims (0 where they broadcast),
  // dims of 1 dropped and neighbours merged where the updates run on.
  std::vector<int64_t> dims, strides;
  const int shift = is.rank() - us.rank();
  std::vector<int64_t> full(is.rank(), 0);
  int64_t step = 1;
  for (int d = is.rank() - 1; d >= shift; --d) {
    const int64_t dim = us.dim(d - shift);
    if (dim != 1) full[d] = step;
    step *= dim;
  }
  for (int d = 0; d < is.rank(); ++d) {
    if (is.dim(d) == 1) continue;
    if (!dims.empty() && strides.back() == full[d] * is.dim(d)) {
      dims.back() *= is.dim(d);
      strides.back() = full[d];
      continue;
    }
    dims.push_back(is.dim(d));
    strides.push_back(full[d]);
  }
  if (dims.empty()) {
    dims = {1};
    strides = {0};
  }
  const int rank = static_cast<int>(dims.size());
  // 32-bit offsets with room for the grid stride past the last index.
  const bool index32 = k.count < (int64_t{1} << 30) && k.size < (int64_t{1} << 31) &&
                       us.num_elements() < (int64_t{1} << 31);
  const std::string name =
      absl::StrCat("gf_scatter_", mode, "_", DTypeName(out), "_", DTypeName(index), "_",
                   DTypeName(update), "_r", rank, index32 ? "" : "_i64");
  std::string text =
      absl::StrCat("struct ", name, "_args { unsigned long long w[", 7 + 2 * rank, "]; };\n");
  const std::string value = Converted(update, out, "upd[uo]");
  if (mode == "set") {
    k.names = {name + "_claim", name + "_write"};
    absl::StrAppend(
        &text,
        ScatterKernel(name, k.names[0], out, index, update, rank, index32, true,
                      "    atomicMax(win + j, (W)k + (W)1);\n"),
        ScatterKernel(name, k.names[1], out, index, update, rank, index32, false,
                      absl::StrCat("    if (win[j] == (W)k + (W)1) out[j] = ", value, ";\n")));
  } else {
    k.names = {name + "_combine"};
    absl::StrAppend(&text, CombineFunction(name, out, mode), AtomicFunction(name, out, mode),
                    ScatterKernel(name, k.names[0], out, index, update, rank, index32, true,
                                  absl::StrCat("    ", name, "_atomic(out + j, ", value, ");\n")));
  }
  k.source = DeviceSource(text);
  k.winner_bytes = index32 ? 4 : 8;
  k.words = {0, 0, 0, 0, 0, static_cast<uint64_t>(k.count), static_cast<uint64_t>(k.size)};
  for (int64_t d : dims) k.words.push_back(static_cast<uint64_t>(d));
  for (int64_t s : strides) k.words.push_back(static_cast<uint64_t>(s));
  return k;
}

}  // namespace

std::string CompactionKernels(const std::string& name, const std::string& decl,
                              const std::string& flag, const std::string& write, int words) {
  const std::string head = absl::StrCat(
      "(const ", name, "_args p) {\n", decl,
      "  unsigned long long* counts = (unsigned long long*)p.w[2];\n",
      "  volatile unsigned long long* err = (volatile unsigned long long*)p.w[3];\n",
      "  const long long n = (long long)p.w[4];\n", "  const unsigned long long size = p.w[5];\n",
      "  const unsigned long long tiles = p.w[6];\n",
      "  (void)counts; (void)err; (void)n; (void)size; (void)tiles;\n");
  // `flag` sets bool f for element e (false past n).
  const std::string flag_of =
      absl::StrCat("    bool f = false;\n    if (e < n) {\n", flag, "    }\n");
  return absl::StrCat(
      "struct ", name, "_args { unsigned long long w[", words, "]; };\n",
      // Per-tile counts.
      "extern \"C\" __global__ void __launch_bounds__(256) ", name, "_count", head,
      "  const long long base = (long long)blockIdx.x * ", kSelectTile, ";\n",
      "  unsigned int c = 0;\n", "  for (int r = 0; r < ", kSelectTile / 256, "; ++r) {\n",
      "    const long long e = base + r * 256 + threadIdx.x;\n", flag_of, "    if (f) ++c;\n",
      "  }\n", "  for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);\n",
      "  __shared__ unsigned int warps[8];\n",
      "  if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = c;\n", "  __syncthreads();\n",
      "  if (threadIdx.x == 0) {\n", "    unsigned long long t = 0;\n",
      "    for (int w = 0; w < 8; ++w) t += warps[w];\n", "    counts[blockIdx.x] = t;\n",
      "  }\n}\n",
      // One block: the counts become each tile's first output position.
      "extern \"C\" __global__ void __launch_bounds__(1024) ", name, "_scan", head,
      "  const unsigned long long per = (tiles + 1023) / 1024;\n",
      "  const unsigned long long b0 = threadIdx.x * per;\n",
      "  const unsigned long long b1 = b0 + per < tiles ? b0 + per : tiles;\n",
      "  unsigned long long s = 0;\n",
      "  for (unsigned long long b = b0; b < b1; ++b) s += counts[b];\n",
      "  __shared__ unsigned long long part[1024];\n", "  part[threadIdx.x] = s;\n",
      "  __syncthreads();\n", "  for (int o = 1; o < 1024; o <<= 1) {\n",
      "    const unsigned long long v = threadIdx.x >= o ? part[threadIdx.x - o] : 0ull;\n",
      "    __syncthreads();\n", "    part[threadIdx.x] += v;\n", "    __syncthreads();\n", "  }\n",
      "  unsigned long long run = part[threadIdx.x] - s;\n",
      "  for (unsigned long long b = b0; b < b1; ++b) {\n",
      "    const unsigned long long c = counts[b];\n", "    counts[b] = run;\n", "    run += c;\n",
      "  }\n", "  if (threadIdx.x == 1023 && part[1023] != size) *err = part[1023] + 1ull;\n",
      "}\n",
      // Each tile's selected elements ranked by warp ballots, in C order.
      "extern \"C\" __global__ void __launch_bounds__(256) ", name, "_write", head,
      "  const long long base = (long long)blockIdx.x * ", kSelectTile, ";\n",
      "  unsigned long long offset = counts[blockIdx.x];\n",
      "  __shared__ unsigned int warps[8];\n", "  const unsigned int lane = threadIdx.x & 31;\n",
      "  const unsigned int w = threadIdx.x >> 5;\n", "  for (int r = 0; r < ", kSelectTile / 256,
      "; ++r) {\n", "    const long long e = base + r * 256 + threadIdx.x;\n", flag_of,
      "    const unsigned int m = __ballot_sync(0xffffffffu, f);\n",
      "    if (lane == 0) warps[w] = __popc(m);\n", "    __syncthreads();\n",
      "    unsigned int before = 0, total = 0;\n", "    for (int i = 0; i < 8; ++i) {\n",
      "      const unsigned int c = warps[i];\n", "      if (i < (int)w) before += c;\n",
      "      total += c;\n", "    }\n", "    if (f) {\n",
      "      const unsigned long long pos = offset + before + __popc(m & ((1u << lane) - 1u));\n",
      "      if (pos < size) ", write, ";\n", "    }\n", "    offset += total;\n",
      "    __syncthreads();\n", "  }\n}\n");
}

namespace {

SelectKernels FlatNonzero(const ValidatedNode& node) {
  const DType in = node.input_types[0].dtype;
  SelectKernels k;
  k.kind = SelectKernels::Kind::kFlatNonzero;
  const int64_t n = node.input_types[0].shape.num_elements();
  const int64_t tiles = (n + kSelectTile - 1) / kSelectTile;
  k.count = n;
  k.size = node.type.output.shape.num_elements();
  const std::string name = absl::StrCat("gf_flatnonzero_", DTypeName(in));
  k.names = {name + "_count", name + "_scan", name + "_write"};
  const char* x = StorageTypeName(in);
  const std::string decl = absl::StrCat(
      "  const ", x, "* __restrict__ in = (const ", x, "*)p.w[0];\n",
      "  long long* __restrict__ out = (long long*)p.w[1];\n", "  (void)in; (void)out;\n");
  k.source = DeviceSource(
      CompactionKernels(name, decl, "      f = gf::cv<bool>(in[e]);\n", "out[pos] = e", 7));
  k.words = {0,
             0,
             0,
             0,
             static_cast<uint64_t>(n),
             static_cast<uint64_t>(k.size),
             static_cast<uint64_t>(tiles)};
  return k;
}

}  // namespace

absl::StatusOr<std::optional<SelectKernels>> GenerateSelectKernels(const ValidatedNode& node) {
  if (node.op == nullptr) return std::nullopt;
  // Complex elements have no atomics here: the host path scatters them.
  for (const ValueType& t : node.input_types) {
    if (IsComplex(t.dtype)) return std::nullopt;
  }
  if (node.op->name == "scatter" && node.input_types.size() == 3) {
    absl::StatusOr<SelectKernels> k = Scatter(node);
    if (!k.ok()) return k.status();
    return *std::move(k);
  }
  if (node.op->name == "flatnonzero" && node.input_types.size() == 1) return FlatNonzero(node);
  return std::nullopt;
}

}  // namespace gpuflow::cuda

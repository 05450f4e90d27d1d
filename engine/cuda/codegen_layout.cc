// Shape ops and `full` as strided copies, take and take_along_axis as
// gathers (see codegen.h).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/codegen_internal.h"
#include "engine/cuda/device_library.h"
#include "engine/ir/gather.h"

namespace gpuflow::cuda {

namespace {

std::vector<int64_t> Contiguous(const Shape& shape) {
  std::vector<int64_t> strides(shape.rank(), 1);
  for (int d = shape.rank() - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape.dim(d + 1);
  return strides;
}

const std::vector<int64_t>& Ints(const ValidatedNode& node, const char* name) {
  return std::get<std::vector<int64_t>>(node.attrs.at(name));
}

int64_t Int(const ValidatedNode& node, const char* name) {
  return std::get<int64_t>(node.attrs.at(name));
}

// The copy kernel for one (src dtype, dst dtype, rank) specialisation.
std::string CopySource(const std::string& name, DType src, DType dst, int rank, bool index32) {
  const char* s = StorageTypeName(src);
  const char* t = StorageTypeName(dst);
  std::string value = "v";
  if (dst == DType::kBool) {
    value = src == DType::kBool ? "(u8)(v != 0)" : "(u8)gf::cv<bool>(v)";
  } else if (src == DType::kBool) {
    value = absl::StrCat("gf::cv<", t, ">((bool)(v != 0))");
  } else if (src != dst) {
    value = absl::StrCat("gf::cv<", t, ">(v)");
  }
  const char* idx = index32 ? "int" : "long long";
  std::string src_text = absl::StrCat(
      "struct ", name, "_args { unsigned long long w[", 5 + 3 * rank, "]; };\n",
      "extern \"C\" __global__ void __launch_bounds__(256) ", name, "(const ", name, "_args p) {\n",
      "  typedef ", idx, " idx;\n", "  const ", s, "* __restrict__ in = (const ", s, "*)p.w[0];\n",
      "  ", t, "* __restrict__ out = (", t, "*)p.w[1];\n", "  const idx n = (idx)p.w[2];\n",
      "  const idx src_base = (idx)(long long)p.w[", 3 + 3 * rank, "];\n",
      "  const idx dst_base = (idx)(long long)p.w[", 4 + 3 * rank, "];\n",
      "  for (idx i = (idx)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += (idx)(gridDim.x * "
      "blockDim.x)) {\n",
      "    idx rem = i;\n    idx so = src_base;\n    idx dO = dst_base;\n");
  for (int d = rank - 1; d >= 0; --d) {
    absl::StrAppend(&src_text, "    {\n      const idx dim = (idx)p.w[", 3 + d, "];\n",
                    "      const idx c = rem % dim;\n      rem /= dim;\n",
                    "      so += c * (idx)(long long)p.w[", 3 + rank + d, "];\n",
                    "      dO += c * (idx)(long long)p.w[", 3 + 2 * rank + d, "];\n    }\n");
  }
  absl::StrAppend(&src_text, "    const ", s, " v = in[so];\n    out[dO] = ", value, ";\n  }\n}\n");
  return DeviceSource(src_text);
}

// Merges what the dims allow (internal::MergeDims), so most copies run at
// rank 1 or 2; a copy of one element keeps one dimension.
void Simplify(std::vector<int64_t>& dims, std::vector<int64_t>& src, std::vector<int64_t>& dst) {
  internal::MergeDims(dims, src, dst);
  if (dims.empty()) {
    dims.push_back(1);
    src.push_back(0);
    dst.push_back(0);
  }
}

LayoutCopy MakeCopy(int input, DType src_dtype, DType dst_dtype, std::vector<int64_t> dims,
                    std::vector<int64_t> src_strides, int64_t src_base,
                    std::vector<int64_t> dst_strides, int64_t dst_base, int64_t src_elements,
                    int64_t dst_elements) {
  LayoutCopy c;
  c.input = input;
  c.num_elements = 1;
  for (int64_t d : dims) c.num_elements *= d;
  Simplify(dims, src_strides, dst_strides);
  const int rank = static_cast<int>(dims.size());
  if (src_dtype == dst_dtype && src_dtype != DType::kBool && rank == 1 && src_strides[0] == 1 &&
      dst_strides[0] == 1) {
    c.memcpy = true;
    c.words = {0, 0, static_cast<uint64_t>(c.num_elements), static_cast<uint64_t>(src_base),
               static_cast<uint64_t>(dst_base)};
    return c;
  }
  const bool index32 = std::max(src_elements, dst_elements) < (int64_t{1} << 31);
  c.name = absl::StrCat("gf_copy_", DTypeName(src_dtype), "_", DTypeName(dst_dtype), "_r", rank,
                        index32 ? "" : "_i64");
  c.source = CopySource(c.name, src_dtype, dst_dtype, rank, index32);
  c.words = {0, 0, static_cast<uint64_t>(c.num_elements)};
  for (int64_t d : dims) c.words.push_back(static_cast<uint64_t>(d));
  for (int64_t s : src_strides) c.words.push_back(static_cast<uint64_t>(s));
  for (int64_t s : dst_strides) c.words.push_back(static_cast<uint64_t>(s));
  c.words.push_back(static_cast<uint64_t>(src_base));
  c.words.push_back(static_cast<uint64_t>(dst_base));
  return c;
}

// Drops dims of extent 1 and merges neighbours that the source and the
// indices both walk contiguously (the output always does).
void MergeGatherDims(std::vector<int64_t>& dims, std::vector<int64_t>& src,
                     std::vector<int64_t>& idx) {
  std::vector<int64_t> d2, s2, i2;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (!d2.empty() && s2.back() == src[d] * dims[d] && i2.back() == idx[d] * dims[d]) {
      d2.back() *= dims[d];
      s2.back() = src[d];
      i2.back() = idx[d];
      continue;
    }
    d2.push_back(dims[d]);
    s2.push_back(src[d]);
    i2.push_back(idx[d]);
  }
  if (d2.empty()) {
    d2 = {1};
    s2 = {0};
    i2 = {0};
  }
  dims = std::move(d2);
  src = std::move(s2);
  idx = std::move(i2);
}

// The gather kernel for one (element size or bool, index dtype, rank)
// specialisation: dtypes of one size share it, since it only moves bits.
std::string GatherSource(const std::string& name, DType src, DType index, int rank, bool index32) {
  const bool is_bool = src == DType::kBool;
  const char* s = nullptr;
  switch (ItemSize(src)) {
    case 1:
      s = "u8";
      break;
    case 2:
      s = "u16";
      break;
    case 4:
      s = "u32";
      break;
    default:
      s = "u64";
      break;
  }
  const char* i_type = StorageTypeName(index);
  const char* idx = index32 ? "int" : "long long";
  std::string bad;
  if (index == DType::kBool) {
    bad =
        "    const unsigned long long raw = ind[io] != 0 ? 1ull : 0ull;\n"
        "    const long long j = (long long)raw;\n"
        "    const bool bad = j >= size;\n";
  } else if (KindOf(index) == DTypeKind::kSigned) {
    bad =
        "    const unsigned long long raw = (unsigned long long)(long long)ind[io];\n"
        "    long long j = (long long)raw;\n"
        "    if (j < 0) j += size;\n"
        "    const bool bad = (unsigned long long)j >= (unsigned long long)size;\n";
  } else {
    bad =
        "    const unsigned long long raw = (unsigned long long)ind[io];\n"
        "    const long long j = (long long)raw;\n"
        "    const bool bad = raw >= (unsigned long long)size;\n";
  }
  std::string text = absl::StrCat(
      "struct ", name, "_args { unsigned long long w[", 7 + 3 * rank, "]; };\n",
      "extern \"C\" __global__ void __launch_bounds__(256) ", name, "(const ", name, "_args p) {\n",
      "  typedef ", idx, " idx;\n", "  const ", s, "* __restrict__ src = (const ", s, "*)p.w[0];\n",
      "  ", s, "* __restrict__ out = (", s, "*)p.w[1];\n", "  const ", i_type,
      "* __restrict__ ind = (const ", i_type, "*)p.w[2];\n",
      "  volatile unsigned long long* err = (volatile unsigned long long*)p.w[3];\n",
      "  const idx n = (idx)p.w[4];\n", "  const long long size = (long long)p.w[5];\n",
      "  const idx axis_stride = (idx)(long long)p.w[6];\n",
      "  for (idx i = (idx)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += (idx)(gridDim.x * "
      "blockDim.x)) {\n",
      "    idx rem = i;\n    idx so = 0;\n    idx io = 0;\n");
  for (int d = rank - 1; d >= 0; --d) {
    absl::StrAppend(&text, "    {\n      const idx dim = (idx)p.w[", 7 + d, "];\n",
                    "      const idx c = rem % dim;\n      rem /= dim;\n",
                    "      so += c * (idx)(long long)p.w[", 7 + rank + d, "];\n",
                    "      io += c * (idx)(long long)p.w[", 7 + 2 * rank + d, "];\n    }\n");
  }
  absl::StrAppend(&text, bad,
                  "    if (bad) {\n      *err = raw;\n      out[i] = 0;\n      continue;\n    }\n",
                  "    const ", s, " v = src[so + (idx)j * axis_stride];\n",
                  "    out[i] = ", is_bool ? "(u8)(v != 0)" : "v", ";\n  }\n}\n");
  return DeviceSource(text);
}

absl::StatusOr<LayoutCopy> MakeGather(const ValidatedNode& node) {
  absl::StatusOr<GatherLayout> layout = GatherLayoutOf(node);
  if (!layout.ok()) return layout.status();
  const DType src = node.input_types[0].dtype;
  const DType index = node.input_types[1].dtype;
  LayoutCopy c;
  c.input = 0;
  c.index_input = 1;
  c.num_elements = node.type.output.shape.num_elements();
  std::vector<int64_t> dims = layout->dims;
  std::vector<int64_t> src_strides = layout->src_strides;
  std::vector<int64_t> index_strides = layout->index_strides;
  MergeGatherDims(dims, src_strides, index_strides);
  const int rank = static_cast<int>(dims.size());
  const int64_t largest = std::max({node.input_types[0].shape.num_elements(),
                                    node.input_types[1].shape.num_elements(), c.num_elements});
  const bool index32 = largest < (int64_t{1} << 31);
  const std::string element = src == DType::kBool ? "bool" : absl::StrCat("b", ItemSize(src));
  c.name =
      absl::StrCat("gf_gather_", element, "_", DTypeName(index), "_r", rank, index32 ? "" : "_i64");
  c.source = GatherSource(c.name, src, index, rank, index32);
  c.words = {0,
             0,
             0,
             0,
             static_cast<uint64_t>(c.num_elements),
             static_cast<uint64_t>(layout->axis_size),
             static_cast<uint64_t>(layout->axis_stride)};
  for (int64_t d : dims) c.words.push_back(static_cast<uint64_t>(d));
  for (int64_t v : src_strides) c.words.push_back(static_cast<uint64_t>(v));
  for (int64_t v : index_strides) c.words.push_back(static_cast<uint64_t>(v));
  return c;
}

}  // namespace

absl::StatusOr<std::optional<std::vector<LayoutCopy>>> GenerateLayoutCopies(
    const ValidatedGraph& graph, const Step& step) {
  if (step.nodes.size() != 1) return std::nullopt;
  const ValidatedNode& node = graph.nodes[step.root];
  const std::string& op = node.op->name;
  const ValueType& out = node.type.output;
  const Shape& os = out.shape;
  const std::vector<int64_t> out_dims(os.dims().begin(), os.dims().end());
  const std::vector<int64_t> out_strides = Contiguous(os);
  const int64_t out_n = os.num_elements();
  std::vector<LayoutCopy> copies;
  auto in_type = [&](int i) -> const ValueType& { return node.input_types[i]; };

  if (op == "reshape" || op == "expand_dims" || op == "squeeze") {
    copies.push_back(
        MakeCopy(0, in_type(0).dtype, out.dtype, {out_n}, {1}, 0, {1}, 0, out_n, out_n));
  } else if (op == "full" || op == "broadcast_to") {
    const Shape& is = in_type(0).shape;
    const std::vector<int64_t> in_strides = Contiguous(is);
    std::vector<int64_t> src(os.rank(), 0);
    for (int d = is.rank() - 1, o = os.rank() - 1; d >= 0 && o >= 0; --d, --o) {
      if (is.dim(d) != 1) src[o] = in_strides[d];
    }
    if (op == "full") std::fill(src.begin(), src.end(), 0);
    copies.push_back(MakeCopy(0, in_type(0).dtype, out.dtype, out_dims, src, 0, out_strides, 0,
                              is.num_elements(), out_n));
  } else if (op == "transpose") {
    const std::vector<int64_t>& axes = Ints(node, "axes");
    const std::vector<int64_t> in_strides = Contiguous(in_type(0).shape);
    std::vector<int64_t> src;
    for (int64_t a : axes) src.push_back(in_strides[a]);
    copies.push_back(
        MakeCopy(0, in_type(0).dtype, out.dtype, out_dims, src, 0, out_strides, 0, out_n, out_n));
  } else if (op == "slice") {
    const std::vector<int64_t>& starts = Ints(node, "starts");
    const std::vector<int64_t>& steps = Ints(node, "steps");
    const Shape& is = in_type(0).shape;
    const std::vector<int64_t> in_strides = Contiguous(is);
    std::vector<int64_t> src(is.rank());
    int64_t base = 0;
    for (int d = 0; d < is.rank(); ++d) {
      src[d] = steps[d] * in_strides[d];
      if (os.dim(d) > 0) base += starts[d] * in_strides[d];
    }
    copies.push_back(MakeCopy(0, in_type(0).dtype, out.dtype, out_dims, src, base, out_strides, 0,
                              is.num_elements(), out_n));
  } else if (op == "concatenate" || op == "stack") {
    const bool stack = op == "stack";
    const int64_t axis = Int(node, "axis");
    int64_t offset = 0;
    for (int i = 0; i < static_cast<int>(node.inputs.size()); ++i) {
      const Shape& is = in_type(i).shape;
      std::vector<int64_t> dst = out_strides;
      if (stack) dst.erase(dst.begin() + axis);
      const std::vector<int64_t> dims(is.dims().begin(), is.dims().end());
      copies.push_back(MakeCopy(i, in_type(i).dtype, out.dtype, dims, Contiguous(is), 0, dst,
                                offset * out_strides[axis], is.num_elements(), out_n));
      offset += stack ? 1 : is.dim(static_cast<int>(axis));
    }
  } else if (op == "take" || op == "take_along_axis") {
    // Elements move as words of their size, up to 8 bytes (a complex128
    // gather runs on the host).
    if (ItemSize(in_type(0).dtype) > 8) return std::nullopt;
    absl::StatusOr<LayoutCopy> gather = MakeGather(node);
    if (!gather.ok()) return gather.status();
    copies.push_back(*std::move(gather));
  } else {
    return std::nullopt;
  }
  return copies;
}

}  // namespace gpuflow::cuda

// arange, random_uniform and random_normal as generated kernels (see
// codegen.h). The formulas are the CPU reference's (engine/host/
// host_creation.cc, engine/ir/philox.h) term for term; NVRTC compiles with
// -fmad=false, so no product and sum fuse into one rounding.
#include <bit>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/codegen_internal.h"
#include "engine/cuda/device_library.h"
#include "engine/host/host_kernels.h"

namespace gpuflow::cuda {
namespace {

// Float attributes are doubles after validation (OpDef::infer), defaults
// filled in.
double FloatAttr(const ValidatedNode& node, const char* name) {
  return std::get<double>(node.attrs.at(name));
}

uint64_t DoubleWord(double v) { return std::bit_cast<uint64_t>(v); }

// The loop every creation kernel shares: element i of n, written by
// `body` (which sets `v`, of type `value_type`) into out[i] as `t`.
std::string Kernel(const std::string& name, const char* t, const std::string& value_type,
                   const std::string& prelude, const std::string& body, bool to_bool) {
  return absl::StrCat(
      "struct ", name, "_args { unsigned long long w[6]; };\n",
      "extern \"C\" __global__ void __launch_bounds__(256) ", name, "(const ", name, "_args p) {\n",
      "  ", t, "* __restrict__ out = (", t, "*)p.w[0];\n",
      "  const long long n = (long long)p.w[1];\n", prelude,
      "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n",
      "       i += (long long)gridDim.x * blockDim.x) {\n", "    ", value_type, " v;\n", body,
      "    out[i] = ", to_bool ? "(u8)(v != 0)" : absl::StrCat("gf::cv<", t, ">(v)"), ";\n",
      "  }\n}\n");
}

// numpy.arange's fill (ArangeRange in host_creation.cc): words [out] [n]
// [start] [start + step] (doubles).
CreationKernel Arange(DType dtype) {
  const char* t = StorageTypeName(dtype);
  const char* r = internal::RegisterTypeName(dtype);
  CreationKernel k;
  k.name = absl::StrCat("gf_arange_", DTypeName(dtype));
  std::string prelude = absl::StrCat(
      "  const ", r, " first = gf::cv<", r, ">(__longlong_as_double((long long)p.w[2]));\n",
      "  const ", r, " second = gf::cv<", r, ">(__longlong_as_double((long long)p.w[3]));\n");
  std::string value_type = r;
  std::string body;
  if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
    absl::StrAppend(&prelude, "  const float f = gf::widen(first);\n",
                    "  const float delta = gf::widen(second) - f;\n");
    value_type = "float";
    body = "    v = i == 0 ? f : i == 1 ? gf::widen(second) : f + (float)i * delta;\n";
  } else if (dtype == DType::kFloat32 || dtype == DType::kFloat64) {
    absl::StrAppend(&prelude, "  const ", r, " delta = second - first;\n");
    body = absl::StrCat("    v = i == 0 ? first : i == 1 ? second : first + (", r, ")i * delta;\n");
  } else if (dtype == DType::kBool) {
    absl::StrAppend(&prelude, "  const long long delta = (long long)second - (long long)first;\n");
    value_type = "bool";
    body = "    v = i == 0 ? first : i == 1 ? second : ((long long)first + i * delta) != 0;\n";
  } else {
    // Integers wrap: the low bits of a 64-bit unsigned computation are the
    // reference's arithmetic in the dtype's unsigned type.
    absl::StrAppend(&prelude,
                    "  const unsigned long long delta = (unsigned long long)second - "
                    "(unsigned long long)first;\n");
    body = absl::StrCat("    v = i == 0 ? first : i == 1 ? second : (", r,
                        ")((unsigned long long)first + (unsigned long long)i * delta);\n");
  }
  k.kernel_source = Kernel(k.name, t, value_type, prelude, body, dtype == DType::kBool);
  k.source = DeviceSource(k.kernel_source);
  return k;
}

// random_uniform / random_normal (Random in host_creation.cc): words [out]
// [n] [low or mean] [high or std] [top] [seed].
CreationKernel Random(DType dtype, bool normal) {
  const char* t = StorageTypeName(dtype);
  const bool wide = dtype == DType::kFloat64;
  CreationKernel k;
  k.name = absl::StrCat(normal ? "gf_random_normal_" : "gf_random_uniform_", DTypeName(dtype));
  const std::string prelude =
      "  const double p0 = __longlong_as_double((long long)p.w[2]);\n"
      "  const double p1 = __longlong_as_double((long long)p.w[3]);\n"
      "  const double top = __longlong_as_double((long long)p.w[4]);\n"
      "  const unsigned long long seed = p.w[5];\n";
  std::string body = "    const gf::philox_words w = gf::philox((unsigned long long)i, seed);\n";
  if (normal) {
    absl::StrAppend(
        &body,
        wide ? "    const double u1 = 1.0 - gf::uniform53(w.w[0], w.w[1]);\n"
               "    const double u2 = gf::uniform53(w.w[2], w.w[3]);\n"
             : "    const double u1 = 1.0 - gf::uniform24(w.w[0]);\n"
               "    const double u2 = gf::uniform24(w.w[1]);\n",
        "    v = p0 + p1 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925286766559 * u2);\n");
  } else {
    absl::StrAppend(&body,
                    wide ? "    const double u = gf::uniform53(w.w[0], w.w[1]);\n"
                         : "    const double u = gf::uniform24(w.w[0]);\n",
                    "    v = p0 + (p1 - p0) * u;\n",
                    // Only draws above `top` can round to `high` (rounding is monotonic).
                    "    if (p0 < p1 && v > top && gf::cv<double>(gf::cv<", t,
                    ">(v)) >= p1) v = top;\n");
  }
  k.kernel_source = Kernel(k.name, t, "double", prelude, body, /*to_bool=*/false);
  k.source = DeviceSource(k.kernel_source);
  return k;
}

}  // namespace

std::optional<CreationKernel> GenerateCreation(const ValidatedGraph& graph, const Step& step) {
  if (step.nodes.size() != 1) return std::nullopt;
  const ValidatedNode& node = graph.nodes[step.root];
  const std::string& op = node.op->name;
  const DType dtype = node.type.output.dtype;
  const uint64_t n = static_cast<uint64_t>(node.type.output.shape.num_elements());
  if (op == "arange") {
    CreationKernel k = Arange(dtype);
    const double start = FloatAttr(node, "start");
    const double step_by = FloatAttr(node, "step");
    k.words = {0, n, DoubleWord(start), DoubleWord(start + step_by), 0, 0};
    return k;
  }
  if ((op == "random_uniform" || op == "random_normal") && IsFloat(dtype)) {
    const bool normal = op == "random_normal";
    CreationKernel k = Random(dtype, normal);
    const double p0 = FloatAttr(node, normal ? "mean" : "low");
    const double p1 = FloatAttr(node, normal ? "std" : "high");
    const double top = normal ? p1 : RandomUniformTop(p0, p1, dtype);
    k.words = {0,
               n,
               DoubleWord(p0),
               DoubleWord(p1),
               DoubleWord(top),
               static_cast<uint64_t>(std::get<int64_t>(node.attrs.at("seed")))};
    return k;
  }
  return std::nullopt;
}

}  // namespace gpuflow::cuda

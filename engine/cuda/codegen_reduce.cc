// Reduction kernels (see codegen.h), and the input helpers the softmax and
// row generators share.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/codegen_internal.h"
#include "engine/cuda/device_library.h"

namespace gpuflow::cuda {

namespace internal {

// A 0-d literal: a scalar read once, in its launch word or (a complex128)
// at element 0 of its uploaded buffer.
bool IsScalarInput(const StepInput& in) {
  return in.ref.kind == ValueRef::Kind::kLiteral && in.type.shape.rank() == 0;
}

// The external inputs of `nodes` (not computed by them, nor `skip`). Returns
// false when one is neither of `shape` nor a 0-d literal.
bool CollectInputs(const ValidatedGraph& graph, const std::vector<int>& nodes, int skip,
                   const Shape& shape, std::vector<StepInput>* out) {
  for (int n : nodes) {
    const ValidatedNode& node = graph.nodes[n];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueRef& ref = node.inputs[i];
      if (ref.kind == ValueRef::Kind::kNode && (Contains(nodes, ref.index) || ref.index == skip)) {
        continue;
      }
      if (std::any_of(out->begin(), out->end(), [&](const StepInput& s) { return s.ref == ref; })) {
        continue;
      }
      StepInput input{ref, node.input_types[i], false};
      input.by_value = internal::PassedByValue(ref, input.type);
      if (!IsScalarInput(input) && !(input.type.shape == shape)) return false;
      out->push_back(std::move(input));
    }
  }
  return true;
}

// Declarations of the inputs' pointers (p<first>..) and scalars, reading
// words from `*word`; fills `expr` so that EmitElementwiseNodes can name them
// (pointer inputs as `<prefix><i>[<index>]`).
std::string DeclareInputs(const std::vector<StepInput>& inputs, const std::string& prefix,
                          int* word, std::vector<std::string>* exprs, const std::string& index) {
  std::string out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].by_value) continue;
    const char* t = StorageTypeName(inputs[i].type.dtype);
    absl::StrAppend(&out, "  const ", t, "* __restrict__ ", prefix, i, " = (const ", t, "*)p.w[",
                    (*word)++, "];\n");
    exprs->push_back(absl::StrCat(prefix, i, "[", IsScalarInput(inputs[i]) ? "0" : index, "]"));
  }
  return out;
}

std::string DeclareScalars(const std::vector<StepInput>& inputs, const std::string& prefix,
                           int* word, std::vector<std::string>* exprs) {
  std::string out;
  size_t pointer = 0;
  std::vector<std::string> all;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].by_value) {
      all.push_back((*exprs)[pointer++]);
      continue;
    }
    const char* t = StorageTypeName(inputs[i].type.dtype);
    absl::StrAppend(&out, "  const ", t, " ", prefix, "s", i, " = gf::word<", t, ">(p.w[",
                    (*word)++, "]);\n");
    all.push_back(absl::StrCat(prefix, "s", i));
  }
  *exprs = std::move(all);
  return out;
}

std::function<std::string(const ValueRef&)> ExprOf(const std::vector<StepInput>& inputs,
                                                   const std::vector<std::string>& exprs,
                                                   int special_node, std::string special) {
  return [&inputs, &exprs, special_node, special](const ValueRef& ref) {
    if (ref.kind == ValueRef::Kind::kNode && ref.index == special_node) return special;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].ref == ref) return exprs[i];
    }
    return std::string("/*missing*/");
  };
}

}  // namespace internal

namespace {

using internal::CollectInputs;
using internal::ComputeClassName;
using internal::Contains;
using internal::DeclareInputs;
using internal::DeclareScalars;
using internal::DoubleLiteral;
using internal::ExprOf;
using internal::IsScalarInput;
using internal::RegisterTypeName;

const char* kReducibleOps[] = {"sum", "prod", "min", "max",       "mean",   "any",
                               "all", "var",  "std", "logsumexp", "argmin", "argmax"};

}  // namespace

absl::StatusOr<std::optional<ReductionKernel>> GenerateReduction(const ValidatedGraph& graph,
                                                                 const Step& step,
                                                                 const std::string& name) {
  if (step.kind != StepKind::kReduction || step.reduction < 0) return std::nullopt;
  const ValidatedNode& red = graph.nodes[step.reduction];
  const std::string& op = red.op->name;
  if (std::find(std::begin(kReducibleOps), std::end(kReducibleOps), op) ==
      std::end(kReducibleOps)) {
    return std::nullopt;
  }
  auto at = std::find(step.nodes.begin(), step.nodes.end(), step.reduction);
  const std::vector<int> prologue(step.nodes.begin(), at);
  const std::vector<int> epilogue(at + 1, step.nodes.end());
  const ValueType& in_type = red.input_types[0];
  const Shape& in_shape = in_type.shape;
  const Shape& out_shape = red.type.output.shape;

  ReductionKernel k;
  k.name = name;
  // The reduction's own input, when no prologue computes it, is an input too.
  std::vector<int> prologue_and_red = prologue;
  prologue_and_red.push_back(step.reduction);
  if (!CollectInputs(graph, prologue_and_red, -1, in_shape, &k.prologue_inputs)) {
    return std::nullopt;
  }
  if (!CollectInputs(graph, epilogue, step.reduction, out_shape, &k.epilogue_inputs)) {
    return std::nullopt;
  }
  const ValueRef red_input = red.inputs[0];

  // Kept and reduced dims, adjacent ones of a class merged. argmin/argmax
  // have one "axis", or none for the flattened array.
  const bool is_arg = op == "argmin" || op == "argmax";
  std::vector<int64_t> axes;
  if (!is_arg) {
    axes = std::get<std::vector<int64_t>>(red.attrs.at("axes"));
  } else if (auto it = red.attrs.find("axis"); it != red.attrs.end()) {
    axes.push_back(std::get<int64_t>(it->second));
  } else {
    for (int d = 0; d < in_shape.rank(); ++d) axes.push_back(d);
  }
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
  for (int d = 0; d < in_shape.rank(); ++d) {
    const bool r = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (in_shape.dim(d) == 1) continue;
    if (!dims.empty() && reduced.back() == r) {
      dims.back() *= in_shape.dim(d);
    } else {
      dims.push_back(in_shape.dim(d));
      reduced.push_back(r);
    }
  }
  k.outputs = out_shape.num_elements();
  k.reduced = k.outputs == 0 ? 0 : in_shape.num_elements() / k.outputs;
  // No outputs: nothing to launch (the backend checks). No reduced
  // elements: every output is the identity, finished (a mean's 0 / 0).
  if (k.outputs == 0) return std::nullopt;
  std::vector<int64_t> strides(dims.size());
  int64_t stride = 1;
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= dims[d];
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    (reduced[d] ? k.reduced_dims : k.kept_dims).push_back(dims[d]);
    (reduced[d] ? k.reduced_strides : k.kept_strides).push_back(strides[d]);
  }
  if (k.kept_dims.empty() || k.reduced_dims.empty() ||
      (k.kept_dims.size() == 1 && k.reduced_dims.size() == 1 && !reduced[0])) {
    k.strategy = ReductionKernel::Strategy::kInner;
  } else if (k.kept_dims.size() == 1 && k.reduced_dims.size() == 1 && reduced[0]) {
    k.strategy = ReductionKernel::Strategy::kOuter;
  } else {
    k.strategy = ReductionKernel::Strategy::kGeneral;
  }

  // The accumulator: floats in double (the reference accumulates in double
  // too), integers in 64 bits, any/all in int; var/std, logsumexp and
  // argmin/argmax in the device library's structs. `combine` merges `a` and
  // `b`; `push` (when set) adds element `x`, of type `element`, at index `k`
  // to accumulator `a` (var/std: with `shift`, element 0 of the output).
  const DType compute = red.type.compute_dtype;
  std::string acc;
  std::string ident;
  std::string combine;
  std::string push;
  std::string element;
  std::string finish = "acc";
  const bool logical = op == "any" || op == "all";
  if (op == "var" || op == "std") {
    // Complex values: the mean of |x - mean|^2, both parts' Welford updates
    // in one accumulator (gf::cvar_acc).
    const bool complex = IsComplex(compute);
    if (!IsFloat(compute) && !complex) return std::nullopt;  // the host reports the error
    const std::string v = complex ? "gf::cvar" : "gf::var";
    acc = v + "_acc";
    ident = complex ? "gf::cvar_acc{0.0, 0.0, 0.0, 0.0}" : "gf::var_acc{0.0, 0.0, 0.0}";
    combine = v + "_combine(a, b)";
    // Shifted by the output's first element, so that a mean far from zero
    // costs no precision (Welford's error grows with mean / deviation).
    push = v + "_push(a, x - shift)";
    element = complex ? "gf::complex<double>" : "double";
    const auto ddof = red.attrs.find("ddof");
    finish =
        absl::StrCat(v, "_finish(acc, (double)R, ",
                     DoubleLiteral(ddof == red.attrs.end() ? 0.0 : std::get<double>(ddof->second)),
                     op == "std" ? ", true)" : ", false)");
    k.accumulator_bytes = complex ? 32 : 24;
  } else if (op == "logsumexp") {
    if (!IsFloat(compute)) return std::nullopt;
    acc = "gf::lse_acc";
    ident = "gf::lse_acc{-gf::inf<double>(), 0.0}";
    combine = "gf::lse_combine(a, b)";
    push = "gf::lse_push(a, x)";
    element = "double";
    finish = "gf::lse_finish(acc)";
    k.accumulator_bytes = 16;
  } else if (is_arg) {
    // Compared in the input's dtype (exactly, in its compute class).
    const std::string c = ComputeClassName(compute);
    const std::string max = op == "argmax" ? "true" : "false";
    acc = absl::StrCat("gf::arg_acc<", c, ">");
    ident = absl::StrCat(acc, "{(", c, ")0, -1ll}");
    combine = absl::StrCat("gf::arg_combine<", c, ", ", max, ">(a, b)");
    push = absl::StrCat("gf::arg_push<", c, ", ", max, ">(a, x, k)");
    element = c;
    finish = "acc.i";
    k.accumulator_bytes = IsComplex(compute) ? 32 : 16;  // {value, index}, 16-byte aligned
  } else {
    const internal::Accumulator plain = internal::PlainAccumulator(op, compute);
    acc = plain.type;
    ident = plain.ident;
    combine = plain.combine;
    k.accumulator_bytes = logical ? 4 : (IsComplex(compute) ? 16 : 8);
  }
  if (op == "mean") finish = "acc / (double)R";

  // ---- source ----
  int word = 0;
  std::string src;
  std::string decl;
  std::vector<std::string> pro_exprs;
  std::vector<std::string> epi_exprs;
  decl += DeclareInputs(k.prologue_inputs, "pi", &word, &pro_exprs, "off");
  decl += DeclareInputs(k.epilogue_inputs, "ei", &word, &epi_exprs, "m");
  const char* out_t = StorageTypeName(graph.nodes[step.root].type.output.dtype);
  const int base = word;
  word += 6;
  absl::StrAppend(&decl, "  ", out_t, "* __restrict__ out = (", out_t, "*)p.w[", base, "];\n");
  absl::StrAppend(&decl, "  ", acc, "* __restrict__ scratch = (", acc, "*)p.w[", base + 1, "];\n");
  absl::StrAppend(&decl, "  const long long M = (long long)p.w[", base + 2, "];\n");
  absl::StrAppend(&decl, "  const long long R = (long long)p.w[", base + 3, "];\n");
  absl::StrAppend(&decl, "  const long long splits = (long long)p.w[", base + 4, "];\n");
  absl::StrAppend(&decl, "  const long long chunk = (long long)p.w[", base + 5, "];\n");
  const int kept_word = word;
  word += 2 * static_cast<int>(k.kept_dims.size());
  const int reduced_word = word;
  word += 2 * static_cast<int>(k.reduced_dims.size());
  decl += DeclareScalars(k.prologue_inputs, "pi", &word, &pro_exprs);
  decl += DeclareScalars(k.epilogue_inputs, "ei", &word, &epi_exprs);
  const int num_words = word;

  // Offset of element (m, k) of the input.
  std::string offset;
  switch (k.strategy) {
    case ReductionKernel::Strategy::kInner:
      offset = "m * R + k";
      break;
    case ReductionKernel::Strategy::kOuter:
      offset = "k * M + m";
      break;
    case ReductionKernel::Strategy::kGeneral: {
      std::string o = "0";
      auto decompose = [&](const char* var, int first_word, size_t n) {
        std::string code = absl::StrCat("long long rem_", var, " = ", var, ";");
        for (int d = static_cast<int>(n) - 1; d >= 0; --d) {
          absl::StrAppend(&code, " { const long long dim = (long long)p.w[", first_word + 2 * d,
                          "]; off += (rem_", var, " % dim) * (long long)p.w[",
                          first_word + 2 * d + 1, "]; rem_", var, " /= dim; }");
        }
        return code;
      };
      offset = absl::StrCat("0; ", decompose("m", kept_word, k.kept_dims.size()), " ",
                            decompose("k", reduced_word, k.reduced_dims.size()));
      break;
    }
  }
  // Loads the reduction input at `off` into `r`.
  const std::string pro_body =
      internal::EmitElementwiseNodes(graph, prologue, ExprOf(k.prologue_inputs, pro_exprs, -1, ""));
  // The reduction's input: a prologue node's variable, else read through
  // `expr`.
  auto red_value_of = [&](const std::function<std::string(const ValueRef&)>& expr) {
    if (red_input.kind == ValueRef::Kind::kNode && Contains(prologue, red_input.index)) {
      return absl::StrCat("v", red_input.index);
    }
    return expr(red_input);
  };
  const std::string red_value = red_value_of(ExprOf(k.prologue_inputs, pro_exprs, -1, ""));
  // The reduction's value converted to what the accumulator takes.
  auto convert_of = [&](const std::string& value) {
    return logical ? absl::StrCat("(gf::cv<bool>(", value, ") ? 1 : 0)")
                   : absl::StrCat("gf::in<", push.empty() ? acc : element, ", ",
                                  RegisterTypeName(compute), ">(", value, ")");
  };
  const std::string convert = convert_of(red_value);
  const std::string add =
      push.empty() ? absl::StrCat("const ", acc, " b = ", convert, "; ACC = ", combine, ";")
                   : absl::StrCat("const ", element, " x = ", convert, "; ACC = ", push, ";");
  // Adds element `kvar` into accumulator `accvar`, in a scope of its own.
  auto accumulate_into = [&](const std::string& kvar, const std::string& accvar) {
    return absl::StrCat("      {\n      const long long k = ", kvar,
                        ";\n      long long off = ", offset, ";\n", pro_body, "      { const ", acc,
                        " a = ", accvar, "; ", absl::StrReplaceAll(add, {{"ACC", accvar}}),
                        " }\n      }\n");
  };
  // Four independent accumulators keep four loads in flight per thread.
  std::string init;
  if (op == "var" || op == "std") {
    init = absl::StrCat("    ", element, " shift = (", element, ")0;\n",
                        "    if (R > 0) {\n      const long long k = 0;\n",
                        "      long long off = ", offset, ";\n", pro_body,
                        "      shift = ", convert, ";\n    }\n");
  }
  absl::StrAppend(&init, "    ", acc, " acc0 = ", ident, ", acc1 = ", ident, ", acc2 = ", ident,
                  ", acc3 = ", ident, ";\n");
  const std::string merge = absl::StrCat(
      "    ", acc, " acc;\n    { ", acc, " a = acc0, b = acc1; acc0 = ", combine,
      "; a = acc2; b = acc3; acc2 = ", combine, "; a = acc0; b = acc2; acc = ", combine, "; }\n");
  const std::string outer_loop = absl::StrCat(
      init, "    long long kk = k0;\n    for (; kk + 3 < k1; kk += 4) {\n",
      accumulate_into("kk", "acc0"), accumulate_into("kk + 1", "acc1"),
      accumulate_into("kk + 2", "acc2"), accumulate_into("kk + 3", "acc3"),
      "    }\n    for (; kk < k1; ++kk) {\n", accumulate_into("kk", "acc0"), "    }\n", merge);
  // The inner strategy with 16-byte loads: elements [k0, k1) of output m
  // are at m * R + k; the unaligned head and the tail are read one by one,
  // the aligned middle as vectors, two per thread in flight.
  int vector_width = 0;
  if (k.strategy == ReductionKernel::Strategy::kInner && !is_arg) {
    int64_t widest = 0;
    for (const StepInput& in : k.prologue_inputs) {
      if (!IsScalarInput(in)) widest = std::max<int64_t>(widest, ItemSize(in.type.dtype));
    }
    if (widest > 0 && widest <= 8) vector_width = static_cast<int>(16 / widest);
  }
  k.vector_width = vector_width;
  std::string vector_inner_loop;
  if (vector_width > 1) {
    const int e = vector_width;
    std::vector<std::string> loads(2);
    std::vector<std::vector<std::string>> bodies(2);
    for (int u = 0; u < 2; ++u) {
      for (size_t i = 0; i < k.prologue_inputs.size(); ++i) {
        const StepInput& in = k.prologue_inputs[i];
        if (IsScalarInput(in)) continue;
        const char* t = StorageTypeName(in.type.dtype);
        absl::StrAppend(&loads[u], "      const gf::vec<", t, ", ", e, "> pv", u, "_", i,
                        " = ((const gf::vec<", t, ", ", e, ">*)pi", i, ")[kv", u == 0 ? "" : " + ",
                        u == 0 ? "" : absl::StrCat(k.block), "];\n");
      }
      for (int j = 0; j < e; ++j) {
        std::vector<std::string> exprs = pro_exprs;
        for (size_t i = 0; i < k.prologue_inputs.size(); ++i) {
          if (!IsScalarInput(k.prologue_inputs[i]))
            exprs[i] = absl::StrCat("pv", u, "_", i, ".v[", j, "]");
        }
        const auto expr = ExprOf(k.prologue_inputs, exprs, -1, "");
        const std::string conv = convert_of(red_value_of(expr));
        const std::string accvar = absl::StrCat("acc", (u * e + j) % 4);
        const std::string step_add =
            push.empty()
                ? absl::StrCat("const ", acc, " b = ", conv, "; ", accvar, " = ", combine, ";")
                : absl::StrCat("const ", element, " x = ", conv, "; ", accvar, " = ",
                               absl::StrReplaceAll(push, {{"ACC", accvar}}), ";");
        bodies[u].push_back(
            absl::StrCat("      {\n", internal::EmitElementwiseNodes(graph, prologue, expr),
                         "      { const ", acc, " a = ", accvar, "; ", step_add, " }\n      }\n"));
      }
    }
    const std::string b = absl::StrCat(k.block);
    vector_inner_loop = absl::StrCat(
        init, "    const long long base_ = m * R;\n", "    long long head_ = ((base_ + k0 + ",
        e - 1, ") / ", e, ") * ", e, " - base_;\n", "    if (head_ > k1) head_ = k1;\n",
        "    const long long vend_ = head_ + ((k1 - head_) / ", e, ") * ", e, ";\n",
        "    for (long long kk = k0 + threadIdx.x; kk < head_; kk += ", b, ") {\n",
        accumulate_into("kk", "acc0"), "    }\n", "    const long long nv_ = (base_ + vend_) / ", e,
        ";\n", "    long long kv = (base_ + head_) / ", e, " + threadIdx.x;\n", "    for (; kv + ",
        b, " < nv_; kv += 2 * ", b, ") {\n", loads[0], loads[1], absl::StrJoin(bodies[0], ""),
        absl::StrJoin(bodies[1], ""), "    }\n", "    for (; kv < nv_; kv += ", b, ") {\n",
        loads[0], absl::StrJoin(bodies[0], ""), "    }\n",
        "    for (long long kk = vend_ + threadIdx.x; kk < k1; kk += ", b, ") {\n",
        accumulate_into("kk", "acc0"), "    }\n", merge);
  }
  const std::string inner_loop =
      vector_width > 1
          ? vector_inner_loop
          : absl::StrCat(init, "    long long kk = k0 + threadIdx.x;\n    for (; kk + ",
                         3 * k.block, " < k1; kk += ", 4 * k.block, ") {\n",
                         accumulate_into("kk", "acc0"),
                         accumulate_into(absl::StrCat("kk + ", k.block), "acc1"),
                         accumulate_into(absl::StrCat("kk + ", 2 * k.block), "acc2"),
                         accumulate_into(absl::StrCat("kk + ", 3 * k.block), "acc3"),
                         "    }\n    for (; kk < k1; kk += ", k.block, ") {\n",
                         accumulate_into("kk", "acc0"), "    }\n", merge);
  // Writes output m from `acc`.
  const char* red_t = RegisterTypeName(red.type.output.dtype);
  const std::string epi_body = internal::EmitElementwiseNodes(
      graph, epilogue,
      ExprOf(k.epilogue_inputs, epi_exprs, step.reduction, absl::StrCat("v", step.reduction)));
  const std::string write =
      absl::StrCat("      { const ", red_t, " v", step.reduction, " = gf::cv<", red_t, ">(", finish,
                   ");\n", epi_body, "        out[m] = gf::cv<", out_t, ">(v", step.root, "); }\n");

  const std::string args =
      absl::StrCat("struct ", name, "_args { unsigned long long w[", num_words, "]; };\n");
  const std::string functor =
      absl::StrCat("struct ", name, "_op { __device__ __forceinline__ ", acc, " operator()(const ",
                   acc, "& a, const ", acc, "& b) const { return ", combine, "; } };\n");
  absl::StrAppend(&src, args, functor);
  absl::StrAppend(&src, "extern \"C\" __global__ void __launch_bounds__(", k.block, ") ", name,
                  "(const ", name, "_args p) {\n", decl);
  if (k.strategy == ReductionKernel::Strategy::kOuter) {
    absl::StrAppend(&src, "  const long long k0 = (long long)blockIdx.y * chunk;\n",
                    "  const long long k1 = k0 + chunk < R ? k0 + chunk : R;\n",
                    "  for (long long m = (long long)blockIdx.x * ", k.block,
                    " + threadIdx.x; m < M; m += (long long)gridDim.x * ", k.block, ") {\n",
                    outer_loop, "    if (splits == 1) {\n", write, "    } else {\n",
                    "      scratch[(long long)blockIdx.y * M + m] = acc;\n    }\n  }\n}\n");
  } else {
    absl::StrAppend(&src, "  typedef gf::BlockReduce<", acc, ", ", k.block, "> reduce_t;\n",
                    "  __shared__ typename reduce_t::TempStorage temp;\n",
                    "  const long long k0 = (long long)blockIdx.y * chunk;\n",
                    "  const long long k1 = k0 + chunk < R ? k0 + chunk : R;\n",
                    "  for (long long m = blockIdx.x; m < M; m += gridDim.x) {\n", inner_loop,
                    "    acc = reduce_t(temp).Reduce(acc, ", name, "_op());\n",
                    "    if (threadIdx.x == 0) {\n", "      if (splits == 1) {\n", write,
                    "      } else {\n",
                    "        scratch[(long long)blockIdx.y * M + m] = acc;\n      }\n    }\n",
                    "    __syncthreads();\n  }\n}\n");
  }
  // Combines the splits' accumulators.
  absl::StrAppend(&src, "extern \"C\" __global__ void __launch_bounds__(256) ", name,
                  "_finalize(const ", name, "_args p) {\n", decl,
                  "  for (long long m = (long long)blockIdx.x * 256 + threadIdx.x; m < M; "
                  "m += (long long)gridDim.x * 256) {\n",
                  "    ", acc, " acc = scratch[m];\n",
                  "    for (long long s = 1; s < splits; ++s) { const ", acc, " a = acc; const ",
                  acc, " b = scratch[s * M + m]; acc = ", combine, "; }\n", write, "  }\n}\n");
  // The same with a block per output, for few outputs with many splits (a
  // thread walking a thousand partials one by one costs ~0.1 ms).
  absl::StrAppend(
      &src, "extern \"C\" __global__ void __launch_bounds__(256) ", name, "_finalize_block(const ",
      name, "_args p) {\n", decl, "  typedef gf::BlockReduce<", acc, ", 256> reduce_t;\n",
      "  __shared__ typename reduce_t::TempStorage temp;\n",
      "  for (long long m = blockIdx.x; m < M; m += gridDim.x) {\n", "    ", acc, " acc = ", ident,
      ";\n", "    for (long long s = threadIdx.x; s < splits; s += 256) { const ", acc,
      " a = acc; const ", acc, " b = scratch[s * M + m]; acc = ", combine, "; }\n",
      "    acc = reduce_t(temp).Reduce(acc, ", name, "_op());\n", "    if (threadIdx.x == 0) {\n",
      write, "    }\n", "    __syncthreads();\n  }\n}\n");
  k.kernel_source = src;
  k.source = DeviceSource(src);
  return k;
}

}  // namespace gpuflow::cuda

// Row programs (StepKind::kRows, see codegen.h): a block per row, the row's
// full-shaped inputs held in registers, each reduction a block reduction
// whose result every thread reads back, every node computed once.
#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/codegen_internal.h"
#include "engine/cuda/device_library.h"

namespace gpuflow::cuda {

namespace {

// Threads of a streamed row program's block (RowsLayout::kStream): 4 to 8
// blocks an SM (bench/rows_variants.cc on the H200).
constexpr int kStreamBlock = 256;
// The longest rows (bytes of the widest array a row holds) RowsLayout::kAuto
// streams.
constexpr int64_t kStreamMaxRowBytes = 32768;

using internal::Contains;
using internal::RegisterTypeName;

// How a node's value relates to the rows: of the full shape, or one value
// per row (the reduced shape with or without keepdims).
enum class Form : uint8_t { kFull, kKeep, kFlat };

int64_t Product(const std::vector<int64_t>& v, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= v[i];
  return p;
}

// sum over d of ((index / (product of dims after d)) % dims[d]) * strides[d],
// with the constants folded: `index` itself when the strides are the dims'
// contiguous strides times `scale`.
std::string OffsetExpr(const std::string& index, const std::vector<int64_t>& dims,
                       const std::vector<int64_t>& strides) {
  bool contiguous = !dims.empty();
  int64_t scale = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    const int64_t after = Product(dims, d + 1, dims.size());
    if (dims[d] == 1) continue;
    if (scale == 0 && after > 0) scale = strides[d] / after;
    if (strides[d] != scale * after || scale == 0) contiguous = false;
  }
  if (contiguous && scale != 0) {
    return scale == 1 ? absl::StrCat("(", index, ")") : absl::StrCat("(", index, ") * ", scale);
  }
  std::vector<std::string> terms;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1 || strides[d] == 0) continue;
    const int64_t after = Product(dims, d + 1, dims.size());
    std::string t = after == 1 ? absl::StrCat("(", index, ")")
                               : absl::StrCat("((", index, ") / ", after, "ll)");
    if (d > 0) absl::StrAppend(&t, " % ", dims[d], "ll");
    terms.push_back(absl::StrCat("(", t, ") * ", strides[d], "ll"));
  }
  return terms.empty() ? std::string("0ll") : absl::StrJoin(terms, " + ");
}

// The value `x` of a reduction's input converted for its accumulator.
std::string ElementOf(const ValidatedNode& red, const internal::Accumulator& acc,
                      const std::string& x) {
  if (red.op->name == "any" || red.op->name == "all") {
    return absl::StrCat("(gf::cv<bool>(", x, ") ? 1 : 0)");
  }
  return absl::StrCat("gf::in<", acc.type, ", ", RegisterTypeName(red.type.compute_dtype), ">(", x,
                      ")");
}

}  // namespace

absl::StatusOr<std::optional<RowsKernel>> GenerateRows(const ValidatedGraph& graph,
                                                       const Step& step, const std::string& name,
                                                       int elements_per_thread_16bit,
                                                       RowsLayout layout) {
  if (step.kind != StepKind::kRows || step.nodes.empty()) return std::nullopt;
  // The full shape and kept axes, from the first reduction.
  std::vector<int64_t> full;
  int kept = -1;
  for (int n : step.nodes) {
    const ValidatedNode& node = graph.nodes[n];
    if (node.op->family != OpFamily::kReduction) continue;
    if (!IsRowReductionOp(node.op->name)) return std::nullopt;
    const absl::Span<const int64_t> in = node.input_types[0].shape.dims();
    const auto& axes = std::get<std::vector<int64_t>>(node.attrs.at("axes"));
    const int k = static_cast<int>(in.size() - axes.size());
    if (kept < 0) {
      full.assign(in.begin(), in.end());
      kept = k;
    } else if (kept != k || !std::equal(in.begin(), in.end(), full.begin(), full.end())) {
      return std::nullopt;
    }
  }
  if (kept < 0) return std::nullopt;
  const size_t k = static_cast<size_t>(kept);
  const std::vector<int64_t> row_dims(full.begin(), full.begin() + kept);
  const std::vector<int64_t> col_dims(full.begin() + kept, full.end());
  RowsKernel rk;
  rk.name = name;
  rk.rows = Product(full, 0, k);
  rk.row_length = Product(full, k, full.size());
  if (rk.rows == 0 || rk.row_length == 0) return std::nullopt;
  const std::string L = absl::StrCat(rk.row_length, "ll");

  auto form_of = [&](absl::Span<const int64_t> dims) {
    if (std::equal(dims.begin(), dims.end(), full.begin(), full.end())) return Form::kFull;
    return dims.size() == full.size() ? Form::kKeep : Form::kFlat;
  };
  std::map<int, Form> form;  // of every node of the step
  for (int n : step.nodes) form[n] = form_of(graph.nodes[n].type.output.shape.dims());
  auto internal_node = [&](const ValueRef& ref) {
    return ref.kind == ValueRef::Kind::kNode && Contains(step.nodes, ref.index);
  };
  // A reduction's input is read as a full value, whatever shape it has.
  auto read_form = [&](const ValidatedNode& reader, int reader_index) {
    return reader.op->family == OpFamily::kReduction ? Form::kFull : form[reader_index];
  };

  // ---- external inputs, and how each is read ----
  struct Access {
    int input;  // into rk.inputs
    Form form;
  };
  std::vector<Access> accesses;
  for (int n : step.nodes) {
    const ValidatedNode& node = graph.nodes[n];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueRef& ref = node.inputs[i];
      if (internal_node(ref)) continue;
      int index = -1;
      for (size_t j = 0; j < rk.inputs.size(); ++j) {
        if (rk.inputs[j].ref == ref) index = static_cast<int>(j);
      }
      if (index < 0) {
        StepInput input{ref, node.input_types[i], false};
        input.by_value = ref.kind == ValueRef::Kind::kLiteral && input.type.shape.rank() == 0;
        rk.inputs.push_back(std::move(input));
        index = static_cast<int>(rk.inputs.size()) - 1;
      }
      const Form f = read_form(node, n);
      if (std::none_of(accesses.begin(), accesses.end(),
                       [&](const Access& a) { return a.input == index && a.form == f; })) {
        accesses.push_back({index, f});
      }
    }
  }

  // Inputs of exactly the full shape read as full values live in registers.
  std::vector<bool> cached(rk.inputs.size(), false);
  int widest = 0;
  for (const Access& a : accesses) {
    const StepInput& in = rk.inputs[a.input];
    const absl::Span<const int64_t> d = in.type.shape.dims();
    if (a.form == Form::kFull && !in.by_value &&
        std::equal(d.begin(), d.end(), full.begin(), full.end())) {
      cached[a.input] = true;
      widest = std::max<int>(widest, static_cast<int>(ItemSize(in.type.dtype)));
    }
  }
  const ValidatedNode& root = graph.nodes[step.root];
  const bool root_full = form[step.root] == Form::kFull;
  const DType out_dtype = root.type.output.dtype;
  if (root_full) widest = std::max<int>(widest, static_cast<int>(ItemSize(out_dtype)));
  int vec = widest > 0 ? std::min(8, 16 / widest) : 1;
  if (vec < 2 || rk.row_length % vec != 0) vec = 1;
  rk.vector_width = vec;
  // About 16 elements a thread: 256 threads for rows of 4096.
  const int64_t per_thread = widest == 2 ? std::max(1, elements_per_thread_16bit) : 16;
  const int64_t want = (rk.row_length + per_thread - 1) / per_thread;
  int block = 32;
  while (block < want && block < 1024) block *= 2;
  const int64_t vectors = rk.row_length / vec;
  // Streamed when the registers would take 1024-thread blocks (one row an
  // SM at a time) and the rows other blocks hold while they re-read theirs
  // stay in L2 (rows of up to 32 KiB: 16384 2-byte elements), or when a
  // row does not fit in registers at all. Measured on the H200
  // (bench/rows_variants.cc): a (4096, 16384) bfloat16 layer norm 0.231 ms
  // in registers, 0.184 streamed; float32 0.175 and 0.258 (its 64 KiB rows
  // crowd L2).
  const bool stream = layout == RowsLayout::kStream ||
                      (layout == RowsLayout::kAuto &&
                       ((block == 1024 && rk.row_length * widest <= kStreamMaxRowBytes) ||
                        (vectors + block - 1) / block * vec > 64));
  if (stream) {
    block = kStreamBlock;
    std::fill(cached.begin(), cached.end(), false);
  }
  rk.block = block;
  rk.streamed = stream;
  const int64_t nv = (vectors + block - 1) / block;
  const int64_t ipt = nv * vec;
  if (!stream && ipt > 64) return std::nullopt;  // too long for registers
  // Register arrays are indexed by slot, so the register layout's loops
  // unroll fully; a streamed pass may run long and unrolls a few.
  const char* const unroll = stream ? "#pragma unroll 4\n" : "#pragma unroll\n";

  // ---- declarations ----
  int word = 0;
  std::string decl;
  for (size_t i = 0; i < rk.inputs.size(); ++i) {
    if (rk.inputs[i].by_value) continue;
    const char* t = StorageTypeName(rk.inputs[i].type.dtype);
    absl::StrAppend(&decl, "  const ", t, "* __restrict__ in", i, " = (const ", t, "*)p.w[", word++,
                    "];\n");
  }
  const char* out_t = StorageTypeName(out_dtype);
  absl::StrAppend(&decl, "  ", out_t, "* __restrict__ out = (", out_t, "*)p.w[", word++, "];\n");
  absl::StrAppend(&decl, "  const long long rows = (long long)p.w[", word++, "];\n");
  for (size_t i = 0; i < rk.inputs.size(); ++i) {
    if (!rk.inputs[i].by_value) continue;
    const char* t = StorageTypeName(rk.inputs[i].type.dtype);
    absl::StrAppend(&decl, "  const ", t, " ins", i, " = gf::word<", t, ">(p.w[", word++, "]);\n");
  }
  rk.num_words = word;

  // Per-row offsets of the inputs that are not cached, by form.
  std::string row_offsets;
  auto offset_name = [](int input, Form f) { return absl::StrCat("ro", input, "_", int(f)); };
  auto col_offset = [&](int input) {
    const StepInput& in = rk.inputs[input];
    const std::vector<int64_t> s = internal::BroadcastStrides(in.type.shape, full);
    return OffsetExpr("j", col_dims, std::vector<int64_t>(s.begin() + kept, s.end()));
  };
  for (const Access& a : accesses) {
    const StepInput& in = rk.inputs[a.input];
    if (in.by_value || (a.form == Form::kFull && cached[a.input])) continue;
    std::vector<int64_t> target = a.form == Form::kFlat ? row_dims : full;
    if (a.form == Form::kKeep) std::fill(target.begin() + kept, target.end(), 1);
    const std::vector<int64_t> s = internal::BroadcastStrides(in.type.shape, target);
    absl::StrAppend(&row_offsets, "    const long long ", offset_name(a.input, a.form), " = ",
                    OffsetExpr("r", row_dims, std::vector<int64_t>(s.begin(), s.begin() + kept)),
                    ";\n");
  }
  // Full inputs not held in registers whose elements run along the row
  // with the row's own layout (g and b of a layer norm, broadcast over the
  // rows) are read a vector at a time too, each slot's vector once where a
  // loop uses it (colv<i>), when their row offsets keep vectors aligned.
  std::vector<bool> column_vector(rk.inputs.size(), false);
  if (vec > 1) {
    for (const Access& a : accesses) {
      const StepInput& in = rk.inputs[a.input];
      if (a.form != Form::kFull || in.by_value || cached[a.input]) continue;
      const std::vector<int64_t> st = internal::BroadcastStrides(in.type.shape, full);
      bool aligned = col_offset(a.input) == "(j)" && ItemSize(in.type.dtype) * vec <= 16;
      for (size_t d = 0; d < k; ++d) aligned &= st[d] % vec == 0;
      column_vector[a.input] = aligned;
    }
  }
  // The vector loads of the column vectors that `code` reads, for a slot
  // loop's body (jv is the vector's index in the row).
  auto vector_loads = [&](const std::string& code) {
    std::string loads;
    for (size_t i = 0; i < rk.inputs.size(); ++i) {
      if (!column_vector[i] || code.find(absl::StrCat("colv", i, ".")) == std::string::npos) {
        continue;
      }
      const char* t = StorageTypeName(rk.inputs[i].type.dtype);
      absl::StrAppend(&loads, "        const gf::vec<", t, ", ", vec, "> colv", i,
                      " = *(const gf::vec<", t, ", ", vec, ">*)(in", i, " + ",
                      offset_name(static_cast<int>(i), Form::kFull), " + (long long)jv * ", vec,
                      ");\n");
    }
    return loads;
  };
  // The expression of an external input read in form `f`, in a slot.
  auto external = [&](const ValueRef& ref, Form f) -> std::string {
    for (size_t i = 0; i < rk.inputs.size(); ++i) {
      if (!(rk.inputs[i].ref == ref)) continue;
      if (rk.inputs[i].by_value) return absl::StrCat("ins", i);
      if (f == Form::kFull && cached[i]) return absl::StrCat("c", i, "[s]");
      if (f == Form::kFull && column_vector[i]) return absl::StrCat("colv", i, ".v[q]");
      const std::string base = offset_name(static_cast<int>(i), f);
      if (f != Form::kFull) return absl::StrCat("in", i, "[", base, "]");
      return absl::StrCat("in", i, "[", base, " + ", col_offset(static_cast<int>(i)), "]");
    }
    return std::string("/*missing*/");
  };

  // ---- the row's program ----
  std::vector<int> computed_full;  // full nodes kept in f<n>[ipt]
  std::vector<int> reciprocals;    // bfloat16 divisions with their rd<n> declared
  std::vector<int> computed_row;   // row values w<n>
  std::string body;
  std::string structs;
  std::string shared;
  // A loop over the thread's slots running `body` in each (s: the slot, j:
  // the element's index in the row); with vectors, a vector's elements in
  // an inner loop after its column vectors' loads.
  auto slot = [&](const std::string& body) {
    if (vec == 1) {
      return absl::StrCat(unroll, "    for (int u = 0; u < ", nv, "; ++u) {\n",
                          "      const int jv = threadIdx.x + u * ", block, ";\n",
                          "      const int s = u;\n", "      const long long j = jv;\n",
                          "      (void)s; (void)j;\n", "      if (j < ", L, ") {\n", body,
                          "      }\n    }\n");
    }
    return absl::StrCat(unroll, "    for (int u = 0; u < ", nv, "; ++u) {\n",
                        "      const int jv = threadIdx.x + u * ", block, ";\n", "      if (jv < ",
                        vectors, ") {\n", vector_loads(body), "#pragma unroll\n",
                        "        for (int q = 0; q < ", vec, "; ++q) {\n",
                        "          const int s = u * ", vec, " + q;\n",
                        "          const long long j = (long long)jv * ", vec, " + q;\n",
                        "          (void)s; (void)j;\n", body, "        }\n      }\n    }\n");
  };
  // The value of ref as read by a node of form f, inside a slot where the
  // nodes `now` are being computed.
  auto value_of = [&](const ValueRef& ref, Form f, const std::vector<int>& now) -> std::string {
    if (ref.kind == ValueRef::Kind::kNode && Contains(now, ref.index)) {
      return absl::StrCat("v", ref.index);
    }
    if (internal_node(ref)) {
      if (Contains(computed_full, ref.index)) return absl::StrCat("f", ref.index, "[s]");
      return absl::StrCat("w", ref.index);
    }
    return external(ref, f);
  };
  // The full nodes `target` needs that are not computed yet, in order.
  auto closure = [&](int target) {
    std::vector<int> need;
    std::vector<int> stack = {target};
    while (!stack.empty()) {
      const int n = stack.back();
      stack.pop_back();
      if (Contains(need, n) || Contains(computed_full, n)) continue;
      if (graph.nodes[n].op->family != OpFamily::kElementwise || form[n] != Form::kFull) continue;
      need.push_back(n);
      for (const ValueRef& ref : graph.nodes[n].inputs) {
        if (internal_node(ref)) stack.push_back(ref.index);
      }
    }
    std::sort(need.begin(), need.end());
    return need;
  };
  // Statements computing `nodes` (full) in a slot, keeping in f<n> those
  // that a later part of the program reads (not `now`, the reduction they
  // feed in the same slot).
  auto compute_full = [&](const std::vector<int>& nodes, int now) {
    std::string code;
    std::string stmts = internal::EmitElementwiseNodes(
        graph, nodes, [&](const ValueRef& ref) { return value_of(ref, Form::kFull, nodes); });
    // bfloat16 divisions of full values by a row value (or a scalar): the
    // row's reciprocal once (gf::div_by, exact for bfloat16), when the
    // statement reads as EmitElementwiseNodes writes it.
    for (int n : nodes) {
      const ValidatedNode& node = graph.nodes[n];
      if (node.op->name != "div" || node.type.output.dtype != DType::kBFloat16 ||
          node.type.compute_dtype != DType::kBFloat16) {
        continue;
      }
      const ValueRef& d = node.inputs[1];
      const bool row_value = internal_node(d) && form[d.index] != Form::kFull;
      const bool scalar = !internal_node(d) && [&] {
        for (const StepInput& in : rk.inputs) {
          if (in.ref == d) return in.by_value;
        }
        return false;
      }();
      if (!row_value && !scalar) continue;
      const std::string divisor = value_of(d, Form::kFull, nodes);
      const std::string head =
          absl::StrCat("const bf16 v", n, " = gf::cv<bf16>(gf::op_div<float>(");
      const std::string tail = absl::StrCat(", gf::in<float, bf16>(", divisor, ")));\n");
      const size_t at = stmts.find(head);
      const size_t end = at == std::string::npos ? at : stmts.find('\n', at);
      if (end == std::string::npos ||
          stmts.compare(end + 1 - tail.size(), tail.size(), tail) != 0) {
        continue;
      }
      const std::string rd = absl::StrCat("rd", n);
      stmts.replace(end + 1 - tail.size(), tail.size(), absl::StrCat(", ", rd, "));\n"));
      stmts.replace(at, head.size(),
                    absl::StrCat("const bf16 v", n, " = gf::cv<bf16>(gf::div_by("));
      if (!Contains(reciprocals, n)) {
        reciprocals.push_back(n);
        absl::StrAppend(&code, "    const gf::rcp_div ", rd,
                        " = gf::rcp_div_of(gf::in<float, bf16>(", divisor, "));\n");
      }
    }
    for (int n : nodes) {
      bool later = false;
      for (int m : step.nodes) {
        if (m == now || Contains(nodes, m)) continue;
        for (const ValueRef& ref : graph.nodes[m].inputs) {
          later |= ref.kind == ValueRef::Kind::kNode && ref.index == n;
        }
      }
      if (!later || stream) continue;  // streamed: computed again where read
      absl::StrAppend(&code, "    ", RegisterTypeName(graph.nodes[n].type.output.dtype), " f", n,
                      "[", ipt, "];\n");
      absl::StrAppend(&stmts, "      f", n, "[s] = v", n, ";\n");
    }
    return std::make_pair(code, stmts);
  };
  // Row nodes whose inputs are all ready, emitted once.
  auto emit_ready_rows = [&]() {
    for (int n : step.nodes) {
      const ValidatedNode& node = graph.nodes[n];
      if (node.op->family != OpFamily::kElementwise || form[n] == Form::kFull ||
          Contains(computed_row, n)) {
        continue;
      }
      bool ready = true;
      for (const ValueRef& ref : node.inputs) {
        if (internal_node(ref) && !Contains(computed_row, ref.index)) ready = false;
      }
      if (!ready) continue;
      const char* t = RegisterTypeName(node.type.output.dtype);
      absl::StrAppend(
          &body, "    ", t, " w", n, ";\n    {\n",
          internal::EmitElementwiseNodes(
              graph, {n}, [&](const ValueRef& ref) { return value_of(ref, form[n], {}); }),
          "      w", n, " = v", n, ";\n    }\n");
      computed_row.push_back(n);
    }
  };

  // Loads the cached inputs.
  for (size_t i = 0; i < rk.inputs.size(); ++i) {
    if (!cached[i]) continue;
    const char* t = StorageTypeName(rk.inputs[i].type.dtype);
    absl::StrAppend(&body, "    ", t, " c", i, "[", ipt, "];\n", "#pragma unroll\n",
                    "    for (int u = 0; u < ", nv, "; ++u) {\n",
                    "      const int jv = threadIdx.x + u * ", block, ";\n");
    if (vec > 1) {
      absl::StrAppend(&body, "      if (jv < ", vectors, ") {\n", "        const gf::vec<", t, ", ",
                      vec, "> x = ((const gf::vec<", t, ", ", vec, ">*)in", i, ")[r * ", vectors,
                      "ll + jv];\n", "#pragma unroll\n", "        for (int q = 0; q < ", vec,
                      "; ++q) c", i, "[u * ", vec, " + q] = x.v[q];\n      }\n    }\n");
    } else {
      absl::StrAppend(&body, "      if (jv < ", L, ") c", i, "[u] = in", i, "[r * ", L,
                      " + jv];\n    }\n");
    }
  }
  emit_ready_rows();
  int reductions = 0;
  for (int n : step.nodes) {
    const ValidatedNode& red = graph.nodes[n];
    if (red.op->family != OpFamily::kReduction) continue;
    const std::vector<int> need =
        internal_node(red.inputs[0]) ? closure(red.inputs[0].index) : std::vector<int>{};
    const auto [arrays, stmts] = compute_full(need, n);
    const std::string x = value_of(red.inputs[0], Form::kFull, need);
    const internal::Accumulator acc =
        internal::PlainAccumulator(red.op->name, red.type.compute_dtype);
    const std::string element = ElementOf(red, acc, x);
    const std::string id = absl::StrCat(n);
    const bool var = red.op->name == "var" || red.op->name == "std";
    absl::StrAppend(&structs, "struct ", name, "_op", n, " { __device__ __forceinline__ ", acc.type,
                    " operator()(const ", acc.type, "& a, const ", acc.type, "& b) const { return ",
                    acc.combine, "; } };\n");
    absl::StrAppend(&shared, "  typedef gf::BlockReduce<", acc.type, ", ", block, "> red", n,
                    "_t;\n", "  __shared__ typename red", n, "_t::TempStorage temp", n, ";\n",
                    "  __shared__ ", acc.type, " share", n, "[2];\n");
    auto reduce = [&](const std::string& var_name, int which) {
      return absl::StrCat("    ", var_name, " = red", n, "_t(temp", n, ").Reduce(", var_name, ", ",
                          name, "_op", n, "());\n", "    if (threadIdx.x == 0) share", n, "[",
                          which, "] = ", var_name, ";\n", "    __syncthreads();\n", "    ",
                          var_name, " = share", n, "[", which, "];\n");
    };
    absl::StrAppend(&body, arrays, "    ", acc.type, " a", id, " = ", acc.ident, ";\n");
    if (var && !stream) absl::StrAppend(&body, "    double x", id, "[", ipt, "];\n");
    std::string step_body =
        absl::StrCat(stmts, "      { const ", acc.type, " a = a", id, "; const ", acc.type,
                     " b = ", element, "; a", id, " = ", acc.combine, "; }\n");
    if (var && !stream) absl::StrAppend(&step_body, "      x", id, "[s] = ", element, ";\n");
    absl::StrAppend(&body, slot(step_body), reduce("a" + id, 0));
    const char* red_t = RegisterTypeName(red.type.output.dtype);
    std::string finish;
    if (var) {
      // Two passes over the row in registers: the mean, then the squared
      // deviations from it (NumPy's own two-pass formula).
      const auto ddof = red.attrs.find("ddof");
      const double d = ddof == red.attrs.end() ? 0.0 : std::get<double>(ddof->second);
      absl::StrAppend(
          &body, "    const double mean", id, " = a", id, " / (double)", L, ";\n", "    double m",
          id, " = 0.0;\n",
          slot(stream ? absl::StrCat(stmts, "      { const double e = (double)(", element,
                                     ") - mean", id, "; m", id, " += e * e; }\n")
                      : absl::StrCat("      { const double e = x", id, "[s] - mean", id, "; m", id,
                                     " += e * e; }\n")),
          reduce("m" + id, 1));
      finish = absl::StrCat("gf::var_finish(gf::var_acc{(double)", L, ", mean", id, ", m", id,
                            "}, (double)", L, ", ", internal::DoubleLiteral(d), ", ",
                            red.op->name == "std" ? "true" : "false", ")");
    } else if (red.op->name == "mean") {
      finish = absl::StrCat("a", id, " / (double)", L);
    } else {
      finish = absl::StrCat("a", id);
    }
    absl::StrAppend(&body, "    const ", red_t, " w", id, " = gf::cv<", red_t, ">(", finish,
                    ");\n");
    if (!stream) {
      for (int m : need) computed_full.push_back(m);
    }
    computed_row.push_back(n);
    ++reductions;
    emit_ready_rows();
  }
  if (reductions == 0) return std::nullopt;
  if (root_full) {
    const std::vector<int> need = closure(step.root);
    const auto [arrays, stmts] = compute_full(need, step.root);
    const std::string v = value_of(ValueRef{ValueRef::Kind::kNode, step.root}, Form::kFull, need);
    if (vec > 1) {
      absl::StrAppend(&body, arrays, unroll, "    for (int u = 0; u < ", nv, "; ++u) {\n",
                      "      const int jv = threadIdx.x + u * ", block, ";\n", "      if (jv < ",
                      vectors, ") {\n", vector_loads(stmts), "        gf::vec<", out_t, ", ", vec,
                      "> o;\n", "#pragma unroll\n", "        for (int q = 0; q < ", vec,
                      "; ++q) {\n", "          const int s = u * ", vec, " + q;\n",
                      "          const long long j = (long long)jv * ", vec, " + q;\n",
                      "          (void)s; (void)j;\n", stmts, "          o.v[q] = gf::cv<", out_t,
                      ">(", v, ");\n", "        }\n", "        ((gf::vec<", out_t, ", ", vec,
                      ">*)out)[r * ", vectors, "ll + jv] = o;\n", "      }\n    }\n");
    } else {
      absl::StrAppend(&body, arrays,
                      slot(absl::StrCat(stmts, "          out[r * ", L, " + j] = gf::cv<", out_t,
                                        ">(", v, ");\n")));
    }
  } else {
    absl::StrAppend(&body, "    if (threadIdx.x == 0) out[r] = gf::cv<", out_t, ">(w", step.root,
                    ");\n");
  }

  std::string src =
      absl::StrCat("struct ", name, "_args { unsigned long long w[", rk.num_words, "]; };\n",
                   structs, "extern \"C\" __global__ void __launch_bounds__(", block, ") ", name,
                   "(const ", name, "_args p) {\n", decl, shared,
                   "  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {\n", row_offsets,
                   body, "    __syncthreads();\n  }\n}\n");
  rk.kernel_source = src;
  rk.source = DeviceSource(src);
  return rk;
}

}  // namespace gpuflow::cuda

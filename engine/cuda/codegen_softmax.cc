// Softmax and log_softmax kernels (see codegen.h's SoftmaxKernel): a block
// per row in registers, rows held by several blocks (tiled), long rows in
// parts, and 32 rows per block over another axis.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/codegen_internal.h"
#include "engine/cuda/device_library.h"

namespace gpuflow::cuda {

namespace {

using internal::CollectInputs;
using internal::ComputeClassName;
using internal::Contains;
using internal::DeclareInputs;
using internal::DeclareScalars;
using internal::ExprOf;
using internal::RegisterTypeName;

// The most blocks a tiled softmax row is held by (SoftmaxKernel::tiled),
// and how long one of them waits for the others before computing their
// parts itself.
constexpr int64_t kMaxTiledParts = 128;
constexpr int64_t kTiledWaitNs = 5'000'000;

// Softmax's online statistics (one pass for a row's maximum m and sum s of
// exp(x - m)): adds x to (m, s). -inf adds nothing, NaN makes s NaN, and
// x == m adds exactly 1 (+inf too), so a row's (m, s) says which of NaN,
// +inf and only -inf it holds, as RowFinish needs.
std::string OnlineAdd(const char* c, const std::string& m, const std::string& s,
                      const std::string& x) {
  return absl::StrCat("      if (", x, " > ", m, ") { ", s, " = ", s, " * exp(", m, " - ", x,
                      ") + (", c, ")1; ", m, " = ", x, "; }\n", "      else if (", x,
                      " != -gf::inf<", c, ">()) ", s, " += ", x, " == ", m, " ? (", c, ")1 : exp(",
                      x, " - ", m, ");\n");
}

// A part's sum s (with maximum m) rescaled to the maximum `to`: an empty
// part (s == 0, m == -inf) adds 0 and m == to keeps s, even where both are
// infinite.
std::string Rescaled(const char* c, const std::string& m, const std::string& s,
                     const std::string& to) {
  return absl::StrCat("(", s, " == (", c, ")0 ? (", c, ")0 : ", m, " == ", to, " ? ", s, " : ", s,
                      " * exp(", m, " - ", to, "))");
}

// A row's maximum M and online sum S made into the outputs' shift and
// divisor, as the host kernel's two passes give them: softmax of a row with
// +inf is NaN throughout; log_softmax shifts by 0 when M is not finite (as
// scipy.special), so a row with +inf and no NaN gives x - inf. Declares
// `lsum` (log_softmax) and returns the output expression of `x`.
std::string RowFinish(const char* c, bool log, const std::string& M, const std::string& S,
                      const std::string& x, std::string* code) {
  if (!log) {
    absl::StrAppend(code, "    if (", M, " == gf::inf<", c, ">()) ", S, " = ", M, " - ", M, ";\n");
    return absl::StrCat("exp(", x, " - ", M, ") / ", S);
  }
  absl::StrAppend(code, "    const ", c, " lsum = ", M, " == gf::inf<", c, ">() && ", S, " == ", S,
                  " ? ", M, " : log(", S, ");\n", "    if (!isfinite(", M, ")) ", M, " = (", c,
                  ")0;\n");
  return absl::StrCat(x, " - ", M, " - lsum");
}

// The tiled softmax (SoftmaxKernel::tiled): each block takes the next tile
// (an atomic ticket, so the tiles of a row start in order), one part of
// `rows_per_block` neighbouring rows, and holds it in registers: the part's
// maximum m and sum of exp(x - m) (Rescaled's convention) go to scratch,
// and once all the row's parts are there (a counter per group of rows)
// every block combines them in the same order, so all agree bit for bit,
// then writes its part from registers: one read and one write of the row.
// A block that waits longer than kTiledWaitNs (the row's other blocks
// cannot start: a device shared with other work, fewer SMs than parts)
// computes the missing parts itself from memory, exactly as their own
// blocks would, so it never waits for ever and the answer is the same.
std::string TiledCode(const SoftmaxKernel& k, const std::string& name, int words,
                      const std::string& decl, const char* c, const std::string& compute_t,
                      bool log, const std::string& pro_body, const std::string& x,
                      const std::string& epi_body, const char* sm_t, const char* out_t,
                      const char* in_t, int reduction, int root) {
  const int w = k.rows_per_block;
  // Elements a vector load or store takes (1: scalar accesses).
  const int e = std::max(1, k.vector_width);
  const std::string E = absl::StrCat(e);
  const std::string VPV = absl::StrCat(k.values_per_thread / e);
  const std::string LV = absl::StrCat(k.row_length / e);
  const int along_threads = k.block / w;
  const std::string W = absl::StrCat(w);
  const std::string A = absl::StrCat(along_threads);
  const std::string P = absl::StrCat(k.parts);
  const std::string L = absl::StrCat(k.row_length);
  const std::string S = absl::StrCat(k.stride);
  const std::string VPT = absl::StrCat(k.values_per_thread);
  const std::string chunk = absl::StrCat(int64_t{along_threads} * k.values_per_thread);
  const std::string ninf = absl::StrCat("-gf::inf<", c, ">()");
  // Every thread of the block gets the combination of `var` over the
  // threads of its row (`op` a maximum or a sum), always in the same order.
  auto combine = [&](const std::string& var, bool max) {
    if (w == 1) {
      return absl::StrCat("  ", var, " = reduce_t(temp).",
                          max ? absl::StrCat("Reduce(", var, ", ", name, "_max())")
                              : absl::StrCat("Sum(", var, ")"),
                          ";\n  if (threadIdx.x == 0) shared = ", var, ";\n  __syncthreads();\n  ",
                          var, " = shared;\n  __syncthreads();\n");
    }
    const std::string op = max ? absl::StrCat("gf::op_maximum<", c,
                                              ">(red[threadIdx.x], red[threadIdx.x + h * ", W, "])")
                               : absl::StrCat("red[threadIdx.x] + red[threadIdx.x + h * ", W, "]");
    return absl::StrCat("  red[threadIdx.x] = ", var, ";\n  __syncthreads();\n",
                        "  for (int h = ", along_threads / 2,
                        "; h > 0; h >>= 1) {\n    if (along < h) red[threadIdx.x] = ", op,
                        ";\n    __syncthreads();\n  }\n  ", var,
                        " = red[lane];\n  __syncthreads();\n");
  };
  const std::string value = absl::StrCat("gf::in<", c, ", ", compute_t, ">(", x, ")");
  // The loop over one thread's elements of part `q`, `body` given `off`
  // and `t`, the element's register: `e` neighbours at a time, so the
  // scalar loops (the parts of blocks that did not come) visit a thread's
  // elements in the order its vector loads hold them.
  auto part_loop = [&](const std::string& q, const std::string& body) {
    return absl::StrCat("#pragma unroll\n  for (int i = 0; i < ", VPV, "; ++i) {\n",
                        "#pragma unroll\n  for (int u = 0; u < ", E, "; ++u) {\n",
                        "    const int t = i * ", E, " + u;\n", "    const long long j = ", q,
                        " * ", chunk, " + (i * ", A, " + along) * ", E, " + u;\n",
                        "    if (live && j < ", L, ") {\n      const long long off = base + j * ",
                        S, ";\n", body, "    }\n  }\n  }\n");
  };
  // The same as vector accesses of the row (a block per row: base is
  // row * L), `body` given `t` and the vector's element `u`.
  auto vector_loop = [&](const std::string& head, const std::string& body,
                         const std::string& tail) {
    return absl::StrCat(
        "#pragma unroll\n  for (int i = 0; i < ", VPV, "; ++i) {\n",
        "    const long long jv = part * ", int64_t{along_threads} * k.values_per_thread / e,
        " + i * ", A, " + along;\n", "    if (live && jv < ", LV, ") {\n", head, "#pragma unroll\n",
        "      for (int u = 0; u < ", E, "; ++u) {\n        const int t = i * ", E, " + u;\n", body,
        "      }\n", tail, "    }\n  }\n");
  };
  const std::string slot = absl::StrCat("(g * ", P, " + q) * ", W, " + lane");
  std::string src;
  absl::StrAppend(
      &src, "struct ", name, "_args { unsigned long long w[", words, "]; };\n", "struct ", name,
      "_max { __device__ __forceinline__ ", c, " operator()(const ", c, "& a, const ", c,
      "& b) const { return gf::op_maximum<", c, ">(a, b); } };\n",
      "__device__ __forceinline__ unsigned long long ", name,
      "_now() { unsigned long long t; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t)); "
      "return t; }\n",
      "extern \"C\" __global__ void __launch_bounds__(", k.block, ", ", k.min_blocks_per_sm, ") ",
      name, "(const ", name, "_args p) {\n", decl, "  const long long groups = (rows + ", W,
      " - 1) / ", W, ";\n",
      // Scratch (TiledScratchBytes): the ticket, a count of parts done per
      // group (TiledCounterBytes, zeroed), then each part's maximum and sum.
      "  unsigned* const counters = (unsigned*)scratch;\n", "  ", c, "* const pmax = (", c,
      "*)(scratch + ((1 + groups) * 4 + 15) / 16 * 16);\n", "  ", c,
      "* const psum = pmax + groups * ", P, " * ", W, ";\n",
      w == 1 ? absl::StrCat("  typedef gf::BlockReduce<", c, ", ", k.block,
                            "> reduce_t;\n  __shared__ typename reduce_t::TempStorage temp;\n",
                            "  __shared__ ", c, " shared;\n  __shared__ ", c, " shared_sum;\n")
             : absl::StrCat("  __shared__ ", c, " red[", k.block, "];\n"),
      "  __shared__ unsigned tile_s;\n  __shared__ int late;\n",
      "  if (threadIdx.x == 0) tile_s = atomicAdd(counters, 1u);\n  __syncthreads();\n",
      "  const long long tile = tile_s;\n  const long long g = tile / ", P, ";\n",
      "  const long long part = tile % ", P, ";\n", "  const int lane = threadIdx.x % ", W,
      ";\n  const int along = threadIdx.x / ", W, ";\n", "  const long long row = g * ", W,
      " + lane;\n  const bool live = row < rows;\n", "  const long long base = live ? (row / ", S,
      ") * ", L, " * ", S, " + row % ", S, " : 0;\n", "  ", c, " v[", VPT, "];\n", "  ", c,
      " m = ", ninf, ";\n", "#pragma unroll\n  for (int i = 0; i < ", VPT, "; ++i) v[i] = ", ninf,
      ";\n",
      e > 1 ? vector_loop(
                  absl::StrCat("      const gf::vec<", in_t, ", ", E, "> xv = ((const gf::vec<",
                               in_t, ", ", E, ">*)in0)[row * ", LV, " + jv];\n"),
                  absl::StrCat("        v[t] = gf::in<", c, ", ", compute_t,
                               ">(xv.v[u]);\n        m = gf::op_maximum<", c, ">(m, v[t]);\n"),
                  "")
            : part_loop("part", absl::StrCat(pro_body, "      v[t] = ", value, ";\n",
                                             "      m = gf::op_maximum<", c, ">(m, v[t]);\n")),
      combine("m", true), "  ", c, " s = 0;\n", "#pragma unroll\n  for (int i = 0; i < ", VPT,
      "; ++i) if (v[i] != ", ninf, ") s += v[i] == m ? (", c, ")1 : exp(v[i] - m);\n",
      combine("s", false), "  ", c, " M = m;\n  ", c, " S = s;\n");
  if (k.parts > 1) {
    absl::StrAppend(
        &src, "  {\n  const long long q = part;\n  if (along == 0) { pmax[", slot, "] = m; psum[",
        slot, "] = s; }\n  }\n", "  __threadfence();\n  __syncthreads();\n",
        "  if (threadIdx.x == 0) {\n    atomicAdd(counters + 1 + g, 1u);\n",
        "    const unsigned long long t0 = ", name, "_now();\n    late = 0;\n",
        "    while (*(volatile unsigned*)(counters + 1 + g) < ", P, "u) {\n", "      if (", name,
        "_now() - t0 > ", kTiledWaitNs, "ull) { late = 1; break; }\n",
        "    }\n    __threadfence();\n  }\n  __syncthreads();\n",
        // The other parts' blocks did not come: their parts, from memory.
        "  if (late) {\n  for (long long q = 0; q < ", P,
        "; ++q) {\n    if (q == part) continue;\n", "    ", c, " qm = ", ninf, ";\n",
        part_loop("q", absl::StrCat(pro_body, "      const ", c, " xv = ", value, ";\n",
                                    "      qm = gf::op_maximum<", c, ">(qm, xv);\n")),
        combine("qm", true), "    ", c, " qs = 0;\n",
        part_loop("q", absl::StrCat(pro_body, "      const ", c, " xv = ", value, ";\n",
                                    "      if (xv != ", ninf, ") qs += xv == qm ? (", c,
                                    ")1 : exp(xv - qm);\n")),
        combine("qs", false), "    if (along == 0) { pmax[", slot, "] = qm; psum[", slot,
        "] = qs; }\n  }\n  __threadfence();\n  __syncthreads();\n  }\n",
        // Every block of the row combines the parts in the same order: one
        // warp, a lane per part along the last axis (then a butterfly, so
        // the same tree in every block), or a lane per row of the block.
        w == 1 ? absl::StrCat(
                     "  if (threadIdx.x < 32) {\n", "    ", c, " qM = ", ninf, ";\n",
                     "    for (long long q = threadIdx.x; q < ", P,
                     "; q += 32) qM = gf::op_maximum<", c, ">(qM, ((volatile ", c, "*)pmax)[", slot,
                     "]);\n", "    for (int o = 16; o > 0; o >>= 1) qM = gf::op_maximum<", c,
                     ">(qM, __shfl_xor_sync(0xffffffffu, qM, o));\n", "    ", c, " qS = 0;\n",
                     "    for (long long q = threadIdx.x; q < ", P, "; q += 32) {\n      const ", c,
                     " qm = ((volatile ", c, "*)pmax)[", slot, "];\n      const ", c,
                     " qs = ((volatile ", c, "*)psum)[", slot,
                     "];\n      qS += ", Rescaled(c, "qm", "qs", "qM"), ";\n    }\n",
                     "    for (int o = 16; o > 0; o >>= 1) qS += __shfl_xor_sync(0xffffffffu, qS, "
                     "o);\n",
                     "    if (threadIdx.x == 0) { shared = qM; shared_sum = qS; }\n  }\n",
                     "  __syncthreads();\n  M = shared;\n  S = shared_sum;\n")
               : absl::StrCat("  if (along == 0) {\n", "    ", c, " qM = ", ninf, ";\n",
                              "    for (long long q = 0; q < ", P, "; ++q) qM = gf::op_maximum<", c,
                              ">(qM, ((volatile ", c, "*)pmax)[", slot, "]);\n", "    ", c,
                              " qS = 0;\n", "    for (long long q = 0; q < ", P,
                              "; ++q) {\n      const ", c, " qm = ((volatile ", c, "*)pmax)[", slot,
                              "];\n      const ", c, " qs = ((volatile ", c, "*)psum)[", slot,
                              "];\n      qS += ", Rescaled(c, "qm", "qs", "qM"), ";\n    }\n",
                              "    red[lane] = qM;\n    red[32 + lane] = qS;\n  }\n",
                              "  __syncthreads();\n  M = red[lane];\n  S = red[32 + lane];\n"));
  }
  std::string finish;
  const std::string out_expr = RowFinish(c, log, "M", "S", "v[t]", &finish);
  const std::string outputs =
      e > 1
          ? vector_loop(absl::StrCat("      gf::vec<", out_t, ", ", E, "> ov;\n"),
                        absl::StrCat("        const ", sm_t, " v", reduction, " = gf::cv<", sm_t,
                                     ">(", out_expr, ");\n", epi_body, "        ov.v[u] = gf::cv<",
                                     out_t, ">(v", root, ");\n"),
                        absl::StrCat("      ((gf::vec<", out_t, ", ", E, ">*)out)[row * ", LV,
                                     " + jv] = ov;\n"))
          : part_loop("part", absl::StrCat("      const ", sm_t, " v", reduction, " = gf::cv<",
                                           sm_t, ">(", out_expr, ");\n", epi_body,
                                           "      out[off] = gf::cv<", out_t, ">(v", root, ");\n"));
  absl::StrAppend(&src, finish, outputs, "}\n");
  return src;
}

}  // namespace

int64_t TiledBlocks(const SoftmaxKernel& k) {
  return (k.rows + k.rows_per_block - 1) / k.rows_per_block * k.parts;
}

// The ticket and a count per group of rows, rounded to 16 bytes (TiledCode's
// `pmax` starts there).
int64_t TiledCounterBytes(const SoftmaxKernel& k) {
  const int64_t groups = (k.rows + k.rows_per_block - 1) / k.rows_per_block;
  return ((1 + groups) * 4 + 15) / 16 * 16;
}

// The counters, then each part's maximum and sum for each of its rows.
int64_t TiledScratchBytes(const SoftmaxKernel& k) {
  return TiledCounterBytes(k) + 2 * TiledBlocks(k) * k.rows_per_block * k.accumulator_bytes;
}

absl::StatusOr<std::optional<SoftmaxKernel>> GenerateSoftmax(const ValidatedGraph& graph,
                                                             const Step& step,
                                                             const std::string& name,
                                                             const SoftmaxTiling& tiling) {
  if (step.kind != StepKind::kReduction || step.reduction < 0) return std::nullopt;
  const ValidatedNode& sm = graph.nodes[step.reduction];
  const bool log = sm.op->name == "log_softmax";
  if (sm.op->name != "softmax" && !log) return std::nullopt;
  const Shape& shape = sm.type.output.shape;
  if (shape.rank() == 0 || shape.num_elements() == 0) return std::nullopt;
  const int64_t axis = std::get<int64_t>(sm.attrs.at("axis"));
  SoftmaxKernel k;
  k.name = name;
  k.row_length = shape.dim(static_cast<int>(axis));
  k.rows = shape.num_elements() / k.row_length;
  for (int d = static_cast<int>(axis) + 1; d < shape.rank(); ++d) k.stride *= shape.dim(d);
  k.thread_per_row = k.stride > 1;
  // Another axis: 32 neighbouring rows per block, `lanes` threads along each
  // (a power of two, at most 32, no more than the row has elements).
  int lanes = 1;
  while (lanes < 32 && lanes < k.row_length) lanes *= 2;
  k.block = k.thread_per_row ? 32 * lanes : k.row_length <= 32 * 256 ? 256 : 1024;
  const int64_t vpt = (k.row_length + k.block - 1) / k.block;
  // Rows held in registers (else re-read from memory).
  const bool in_registers = !k.thread_per_row && vpt <= 32;
  // Rows too long for one block's registers but not for those of a few
  // blocks: `parts` blocks each hold a part of the row (of `rows_per_block`
  // neighbouring rows) in registers and exchange their parts' maximum and sum
  // through memory, so the row is read once (see TiledCode).
  const bool wide_compute = ItemSize(sm.type.compute_dtype) >= 8;
  if (tiling.enabled && (k.thread_per_row ? tiling.other_axis : !in_registers)) {
    const int rows_per_block = k.thread_per_row ? 32 : 1;
    const int values =
        std::max(1, (k.thread_per_row ? tiling.values_other_axis : tiling.values_last_axis) /
                        (wide_compute ? 2 : 1));
    const int64_t chunk = int64_t{tiling.block / rows_per_block} * values;
    const int64_t parts = (k.row_length + chunk - 1) / chunk;
    if (parts <= kMaxTiledParts) {
      k.tiled = true;
      k.parts = parts;
      k.rows_per_block = rows_per_block;
      k.values_per_thread = values;
      k.block = tiling.block;
      k.min_blocks_per_sm = tiling.min_blocks_per_sm;
    }
  }
  // Longer rows are cut into parts, each a block (three kernels).
  k.split = !k.tiled && !k.thread_per_row && !in_registers;
  auto at = std::find(step.nodes.begin(), step.nodes.end(), step.reduction);
  const std::vector<int> prologue(step.nodes.begin(), at);
  const std::vector<int> epilogue(at + 1, step.nodes.end());
  std::vector<int> all = prologue;
  all.push_back(step.reduction);
  all.insert(all.end(), epilogue.begin(), epilogue.end());
  // Every external input has the input's shape (the same as the output's).
  if (!CollectInputs(graph, all, -1, shape, &k.inputs)) return std::nullopt;

  int word = 0;
  std::vector<std::string> exprs;
  std::string decl = DeclareInputs(k.inputs, "in", &word, &exprs, "off");
  const char* out_t = StorageTypeName(graph.nodes[step.root].type.output.dtype);
  absl::StrAppend(&decl, "  ", out_t, "* __restrict__ out = (", out_t, "*)p.w[", word, "];\n");
  absl::StrAppend(&decl, "  const long long rows = (long long)p.w[", word + 1, "];\n");
  word += 2;
  const char* c = ComputeClassName(sm.type.compute_dtype);
  if (k.tiled) {
    absl::StrAppend(&decl, "  unsigned char* __restrict__ scratch = (unsigned char*)p.w[", word,
                    "];\n");
    ++word;
    k.accumulator_bytes = static_cast<int>(ItemSize(sm.type.compute_dtype));
  }
  if (k.split) {
    // Each part's maximum, then each part's sum: scratch[part of row] and
    // scratch[rows * parts + part of row].
    absl::StrAppend(&decl, "  const long long parts = (long long)p.w[", word, "];\n", "  ", c,
                    "* __restrict__ scratch = (", c, "*)p.w[", word + 1, "];\n");
    word += 2;
    k.accumulator_bytes = static_cast<int>(ItemSize(sm.type.compute_dtype));
  }
  decl += DeclareScalars(k.inputs, "in", &word, &exprs);
  const ValueRef input = sm.inputs[0];
  const std::string x = input.kind == ValueRef::Kind::kNode && Contains(prologue, input.index)
                            ? absl::StrCat("v", input.index)
                            : ExprOf(k.inputs, exprs, -1, "")(input);
  const std::string pro_body =
      internal::EmitElementwiseNodes(graph, prologue, ExprOf(k.inputs, exprs, -1, ""));
  const char* sm_t = RegisterTypeName(sm.type.output.dtype);
  const std::string epi_body = internal::EmitElementwiseNodes(
      graph, epilogue, ExprOf(k.inputs, exprs, step.reduction, absl::StrCat("v", step.reduction)));
  const std::string l = absl::StrCat(k.row_length);
  // Rows read and written as 16-byte vectors: when the softmax input is the
  // only array the step reads and rows are whole vectors.
  int pointers = 0;
  for (const StepInput& in : k.inputs) pointers += in.by_value ? 0 : 1;
  const DType in_dtype = graph.TypeOf(input).dtype;
  const DType out_dtype = graph.nodes[step.root].type.output.dtype;
  const int e = static_cast<int>(16 / std::max(ItemSize(in_dtype), ItemSize(out_dtype)));
  bool epilogue_reads_input = false;
  for (int n : epilogue) {
    for (const ValueRef& ref : graph.nodes[n].inputs) epilogue_reads_input |= ref == input;
  }
  const bool can_vectorize = prologue.empty() && pointers == 1 && !k.inputs[0].by_value &&
                             k.inputs[0].ref == input && !epilogue_reads_input && e > 1 &&
                             k.row_length % e == 0;
  const bool vectorize = !k.tiled && in_registers && can_vectorize;
  // Both layouts: the same kernel around their own row loops; the row's
  // maximum and sum are reduced over the block and shared with every thread.
  const std::string head = absl::StrCat(
      "struct ", name, "_args { unsigned long long w[", word, "]; };\n", "struct ", name,
      "_max { __device__ __forceinline__ ", c, " operator()(const ", c, "& a, const ", c,
      "& b) const { return gf::op_maximum<", c, ">(a, b); } };\n",
      "extern \"C\" __global__ void __launch_bounds__(", k.block, ") ", name, "(const ", name,
      "_args p) {\n", decl, "  typedef gf::BlockReduce<", c, ", ", k.block, "> reduce_t;\n",
      "  __shared__ typename reduce_t::TempStorage temp;\n", "  __shared__ ", c, " shared;\n");
  const std::string share_max =
      absl::StrCat("    mx = reduce_t(temp).Reduce(mx, ", name, "_max());\n",
                   "    if (threadIdx.x == 0) shared = mx;\n", "    __syncthreads();\n",
                   "    mx = shared;\n", "    ", c, " sum = 0;\n",
                   // log_softmax shifts by 0 when the maximum is not finite
                   // (as the host kernel and scipy.special).
                   log ? "    if (!isfinite(mx)) mx = 0;\n" : "");
  const std::string share_sum = absl::StrCat(
      "    __syncthreads();\n", "    sum = reduce_t(temp).Sum(sum);\n",
      "    if (threadIdx.x == 0) shared = sum;\n", "    __syncthreads();\n", "    sum = shared;\n");
  const std::string tail = "    __syncthreads();\n  }\n}\n";
  const std::string compute_t = RegisterTypeName(sm.type.compute_dtype);
  std::string src;
  if (k.tiled) {
    if (tiling.vectorize && can_vectorize && k.rows_per_block == 1 &&
        k.values_per_thread % e == 0) {
      k.vector_width = e;
    }
    src = TiledCode(k, name, word, decl, c, compute_t, log, pro_body, x, epi_body, sm_t, out_t,
                    StorageTypeName(in_dtype), step.reduction, step.root);
  } else if (vectorize) {
    k.vector_width = e;
    const int64_t vectors = k.row_length / e;
    const int64_t vpt_v = (vectors + k.block - 1) / k.block;
    const char* in_t = StorageTypeName(in_dtype);
    const std::string lv = absl::StrCat(vectors);
    const std::string at = absl::StrCat("v[i * ", e, " + q]");
    src = absl::StrCat(
        head, "  typedef gf::vec<", in_t, ", ", e, "> vin_t;\n", "  typedef gf::vec<", out_t, ", ",
        e, "> vout_t;\n", "  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {\n",
        "    ", c, " v[", vpt_v * e, "];\n", "    ", c, " mx = -gf::inf<", c, ">();\n",
        "#pragma unroll\n", "    for (int i = 0; i < ", vpt_v, "; ++i) {\n",
        "      const int jv = threadIdx.x + i * ", k.block, ";\n", "#pragma unroll\n",
        "      for (int q = 0; q < ", e, "; ++q) ", at, " = -gf::inf<", c, ">();\n",
        "      if (jv < ", lv, ") {\n", "        const vin_t xv = ((const vin_t*)in0)[row * ", lv,
        " + jv];\n", "#pragma unroll\n", "        for (int q = 0; q < ", e, "; ++q) {\n",
        "          ", at, " = gf::in<", c, ", ", compute_t, ">(xv.v[q]);\n",
        "          mx = gf::op_maximum<", c, ">(mx, ", at, ");\n", "        }\n",
        "      }\n    }\n", share_max, "#pragma unroll\n", "    for (int i = 0; i < ", vpt_v,
        "; ++i) {\n", "      if (threadIdx.x + i * ", k.block, " < ", lv, ") {\n",
        "#pragma unroll\n", "        for (int q = 0; q < ", e, "; ++q) ",
        log ? absl::StrCat("sum += exp(", at, " - mx);\n")
            : absl::StrCat("{ ", at, " = exp(", at, " - mx); sum += ", at, "; }\n"),
        "      }\n    }\n", share_sum, "#pragma unroll\n", "    for (int i = 0; i < ", vpt_v,
        "; ++i) {\n", "      const int jv = threadIdx.x + i * ", k.block, ";\n", "      if (jv < ",
        lv, ") {\n", "        vout_t ov;\n", "#pragma unroll\n", "        for (int q = 0; q < ", e,
        "; ++q) {\n", "          const ", sm_t, " v", step.reduction, " = gf::cv<", sm_t, ">(",
        log ? absl::StrCat(at, " - mx - log(sum)") : absl::StrCat(at, " / sum"), ");\n", epi_body,
        "          ov.v[q] = gf::cv<", out_t, ">(v", step.root, ");\n", "        }\n",
        "        ((vout_t*)out)[row * ", lv, " + jv] = ov;\n", "      }\n    }\n", tail);
  } else if (k.split) {
    // Rows too long for registers, cut into `parts` blocks each: `name`_pmax
    // writes each part's maximum, `name`_psum each part's sum of exp(x - M)
    // (M the row's maximum, from the parts'), `name` the outputs. Three reads
    // of the row, as the reference's three passes, with every SM busy.
    const std::string prelude =
        absl::StrCat("struct ", name, "_args { unsigned long long w[", word, "]; };\n", "struct ",
                     name, "_max { __device__ __forceinline__ ", c, " operator()(const ", c,
                     "& a, const ", c, "& b) const { return gf::op_maximum<", c, ">(a, b); } };\n");
    auto open = [&](const std::string& kernel) {
      return absl::StrCat(
          "extern \"C\" __global__ void __launch_bounds__(", k.block, ") ", kernel, "(const ", name,
          "_args p) {\n", decl, "  typedef gf::BlockReduce<", c, ", ", k.block, "> reduce_t;\n",
          "  __shared__ typename reduce_t::TempStorage temp;\n", "  const long long chunk = (", l,
          " + parts - 1) / parts;\n",
          "  for (long long t = blockIdx.x; t < rows * parts; t += gridDim.x) {\n",
          "    const long long row = t / parts;\n", "    const long long base = row * ", l, ";\n",
          "    const long long j0 = (t % parts) * chunk;\n",
          "    const long long j1 = j0 + chunk < ", l, " ? j0 + chunk : ", l, ";\n");
    };
    const std::string j_loop =
        absl::StrCat("    for (long long j = j0 + threadIdx.x; j < j1; j += ", k.block, ") {\n",
                     "      const long long off = base + j;\n");
    const std::string value = absl::StrCat("gf::in<", c, ", ", compute_t, ">(", x, ")");
    const std::string x_of = absl::StrCat(pro_body, "      const ", c, " xv = ", value, ";\n");
    // log_softmax shifts by 0 when the maximum is not finite (as the host
    // kernel and scipy.special).
    const std::string row_max = absl::StrCat(
        "    ", c, " M = -gf::inf<", c, ">();\n",
        "    for (long long q = 0; q < parts; ++q) M = gf::op_maximum<", c,
        ">(M, scratch[row * parts + q]);\n", log ? "    if (!isfinite(M)) M = 0;\n" : "");
    const std::string row_sum =
        absl::StrCat("    ", c, " S = 0;\n",
                     "    for (long long q = 0; q < parts; ++q) S += scratch[rows * parts + row * "
                     "parts + q];\n");
    src = absl::StrCat(prelude, open(name + "_pmax"), "    ", c, " mx = -gf::inf<", c, ">();\n",
                       j_loop, x_of, "      mx = gf::op_maximum<", c, ">(mx, xv);\n    }\n",
                       "    mx = reduce_t(temp).Reduce(mx, ", name, "_max());\n",
                       "    if (threadIdx.x == 0) scratch[t] = mx;\n",
                       "    __syncthreads();\n  }\n}\n", open(name + "_psum"), row_max, "    ", c,
                       " sum = 0;\n", j_loop, x_of, "      sum += exp(xv - M);\n    }\n",
                       "    sum = reduce_t(temp).Sum(sum);\n",
                       "    if (threadIdx.x == 0) scratch[rows * parts + t] = sum;\n",
                       "    __syncthreads();\n  }\n}\n", open(name), row_max, row_sum, j_loop, x_of,
                       "      const ", sm_t, " v", step.reduction, " = gf::cv<", sm_t, ">(",
                       log ? "xv - M - log(S)" : "exp(xv - M) / S", ");\n", epi_body,
                       "      out[off] = gf::cv<", out_t, ">(v", step.root, ");\n    }\n  }\n}\n");
  } else if (k.thread_per_row) {
    // Two passes over the row (the maximum and sum of exp(x - max) online,
    // then the write), each element recomputed from memory: 32 neighbouring
    // rows per block, coalesced, with `lanes` threads along each row
    // combining through shared memory.
    const std::string s_ = absl::StrCat(k.stride);
    const std::string lanes_ = absl::StrCat(lanes);
    const std::string row_loop = absl::StrCat(
        "  __shared__ ", c, " part[", lanes, "][32];\n", "  const int lane = threadIdx.x & 31;\n",
        "  const int along = threadIdx.x >> 5;\n",
        "  for (long long row0 = (long long)blockIdx.x * 32; row0 < rows; "
        "row0 += (long long)gridDim.x * 32) {\n",
        "    const long long row = row0 + lane;\n", "    const bool live = row < rows;\n",
        "    const long long base = live ? (row / ", s_, ") * ", l, " * ", s_, " + row % ", s_,
        " : 0;\n");
    const std::string j_loop =
        absl::StrCat("    if (live) for (long long j = along; j < ", l, "; j += ", lanes_, ") {\n",
                     "      const long long off = base + j * ", s_, ";\n");
    // Combines the `lanes` threads' values of `var` for each row.
    auto combine_lanes = [&](const std::string& var, const std::string& op) {
      return absl::StrCat("    part[along][lane] = ", var, ";\n", "    __syncthreads();\n",
                          "    if (along == 0) {\n", "      for (int t = 1; t < ", lanes_,
                          "; ++t) ", var, " = ", op, ";\n", "      part[0][lane] = ", var, ";\n",
                          "    }\n", "    __syncthreads();\n", "    ", var, " = part[0][lane];\n",
                          "    __syncthreads();\n");
    };
    const std::string value = absl::StrCat("gf::in<", c, ", ", compute_t, ">(", x, ")");
    const std::string x_of = absl::StrCat(pro_body, "      const ", c, " xv = ", value, ";\n");
    std::string finish;
    const std::string out_expr = RowFinish(c, log, "mx", "sum", "xv", &finish);
    src = absl::StrCat(
        head, row_loop, "    ", c, " m = -gf::inf<", c, ">();\n", "    ", c, " s = 0;\n", j_loop,
        x_of, OnlineAdd(c, "m", "s", "xv"), "    }\n", "    ", c, " mx = m;\n",
        combine_lanes("mx", absl::StrCat("gf::op_maximum<", c, ">(mx, part[t][lane])")), "    ", c,
        " sum = ", Rescaled(c, "m", "s", "mx"), ";\n", combine_lanes("sum", "sum + part[t][lane]"),
        finish, j_loop, x_of, "      const ", sm_t, " v", step.reduction, " = gf::cv<", sm_t, ">(",
        out_expr, ");\n", epi_body, "      out[off] = gf::cv<", out_t, ">(v", step.root,
        ");\n    }\n  }\n}\n");
  } else {
    src = absl::StrCat(
        head, "  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {\n", "    ", c,
        " v[", vpt, "];\n", "    ", c, " mx = -gf::inf<", c, ">();\n", "#pragma unroll\n",
        "    for (int i = 0; i < ", vpt, "; ++i) {\n", "      const int j = threadIdx.x + i * ",
        k.block, ";\n", "      v[i] = -gf::inf<", c, ">();\n", "      if (j < ", l, ") {\n",
        "        const long long off = row * ", l, " + j;\n", pro_body, "        v[i] = gf::in<", c,
        ", ", compute_t, ">(", x, ");\n", "        mx = gf::op_maximum<", c, ">(mx, v[i]);\n",
        "      }\n    }\n", share_max, "#pragma unroll\n", "    for (int i = 0; i < ", vpt,
        "; ++i) {\n", "      const int j = threadIdx.x + i * ", k.block, ";\n", "      if (j < ", l,
        log ? ") sum += exp(v[i] - mx);\n" : ") { v[i] = exp(v[i] - mx); sum += v[i]; }\n",
        "    }\n", share_sum, "#pragma unroll\n", "    for (int i = 0; i < ", vpt, "; ++i) {\n",
        "      const int j = threadIdx.x + i * ", k.block, ";\n", "      if (j < ", l, ") {\n",
        "        const long long off = row * ", l, " + j;\n", "        const ", sm_t, " v",
        step.reduction, " = gf::cv<", sm_t, ">(", log ? "v[i] - mx - log(sum)" : "v[i] / sum",
        ");\n", epi_body, "        out[off] = gf::cv<", out_t, ">(v", step.root, ");\n",
        "      }\n    }\n", tail);
  }
  k.kernel_source = src;
  k.source = DeviceSource(src);
  return k;
}

}  // namespace gpuflow::cuda

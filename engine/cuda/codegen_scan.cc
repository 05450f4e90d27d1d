// Scan kernels: cumsum and cumprod (see codegen.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/codegen_internal.h"
#include "engine/cuda/device_library.h"

namespace gpuflow::cuda {

namespace {

using internal::RegisterTypeName;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// float16 and bfloat16 scans: each step rounds to the dtype (NumPy's
// add.accumulate / multiply.accumulate, and ml_dtypes' for bfloat16), which
// is not associative, so every row runs in order from its first element.
// The accumulator is the narrow type itself and each step one correctly
// rounded __hadd_rn / __hmul_rn, the same value as rounding the exact float
// result as the reference does. Contiguous rows longer than kThreadRowMax
// take a block each (kSerialRows): the block stages tiles in shared memory,
// coalesced, thread 0 scans them (its loads run a group ahead of the
// chain), and the block writes them back; other rows a thread each
// (kThreadRows, one part).
// The kernel header both layouts share ($-names: see GenerateSerialScan).
constexpr char kSerialHead[] = R"CUDA(struct $NAME_args { unsigned long long w[8]; };
extern "C" __global__ void __launch_bounds__($B) $NAME(const $NAME_args p) {
  const $IN* __restrict__ in = (const $IN*)p.w[0];
  $OUT* __restrict__ out = ($OUT*)p.w[1];
  const long long R = (long long)p.w[3];
  const long long L = (long long)p.w[4];
)CUDA";

// kSerialRows: a block per contiguous row; thread 0 keeps $G loads from the
// staged tile in flight ahead of its chain of steps.
constexpr char kSerialRowsBody[] = R"CUDA(  __shared__ $ACC tile[$TILE];
  for (long long row = blockIdx.x; row < R; row += gridDim.x) {
    const long long base = row * L;
    $ACC acc = $IDENT;
    for (long long t0 = 0; t0 < L; t0 += $TILE) {
      const int n = L - t0 < $TILE ? (int)(L - t0) : $TILE;
      for (int i = threadIdx.x; i < n; i += $B) tile[i] = gf::in<$ACC, $ACC>(in[base + t0 + i]);
      __syncthreads();
      if (threadIdx.x == 0) {
        $ACC next[$G];
#pragma unroll
        for (int q = 0; q < $G; ++q) next[q] = q < n ? tile[q] : acc;
        for (int i = 0; i < n; i += $G) {
          $ACC v[$G];
#pragma unroll
          for (int q = 0; q < $G; ++q) v[q] = next[q];
#pragma unroll
          for (int q = 0; q < $G; ++q) next[q] = i + $G + q < n ? tile[i + $G + q] : acc;
#pragma unroll
          for (int q = 0; q < $G; ++q) {
            if (i + q < n) {
              acc = $STEP(acc, v[q]);
              tile[i + q] = acc;
            }
          }
        }
      }
      __syncthreads();
      for (int i = threadIdx.x; i < n; i += $B) out[base + t0 + i] = gf::cv<$OUT>(tile[i]);
      __syncthreads();
    }
  }
}
)CUDA";

// kThreadRows in order: a thread per whole row, neighbouring threads on
// neighbouring rows (columns, when the axis is not the last), the next $G
// loads in flight while the chain runs (else each step waits for memory).
constexpr char kSerialThreadRowsBody[] = R"CUDA(  const long long S = (long long)p.w[5];
  for (long long row = (long long)blockIdx.x * $B + threadIdx.x; row < R;
       row += (long long)gridDim.x * $B) {
    const long long base = (row / S) * L * S + row % S;
    $ACC acc = $IDENT;
    $ACC next[$G];
#pragma unroll
    for (int q = 0; q < $G; ++q) next[q] = q < L ? gf::in<$ACC, $ACC>(in[base + q * S]) : acc;
    for (long long j = 0; j < L; j += $G) {
      $ACC v[$G];
#pragma unroll
      for (int q = 0; q < $G; ++q) v[q] = next[q];
#pragma unroll
      for (int q = 0; q < $G; ++q) {
        const long long k = j + $G + q;
        next[q] = k < L ? gf::in<$ACC, $ACC>(in[base + k * S]) : acc;
      }
#pragma unroll
      for (int q = 0; q < $G; ++q) {
        if (j + q < L) {
          acc = $STEP(acc, v[q]);
          out[base + (j + q) * S] = gf::cv<$OUT>(acc);
        }
      }
    }
  }
}
)CUDA";

// float16 and bfloat16 scans: each step rounds to the dtype (NumPy's
// add.accumulate / multiply.accumulate, and ml_dtypes' for bfloat16), which
// is not associative, so every row runs in order from its first element.
// The accumulator is the narrow type itself and each step one correctly
// rounded __hadd_rn / __hmul_rn: the value the reference gets by rounding
// the exact (double) result. Contiguous rows longer than kThreadRowMax take
// a block each (kSerialRows): the block stages tiles in shared memory,
// coalesced, thread 0 scans them and the block writes them back; other rows
// a thread each (kThreadRows, one part).
void GenerateSerialScan(ScanKernel& k, bool prod, DType compute, const std::string& in_t,
                        const std::string& out_t) {
  constexpr int kGroup = 16;
  const std::string acc = internal::RegisterTypeName(compute);
  k.accumulator_bytes = 2;
  const bool rows = k.strategy == ScanKernel::Strategy::kSerialRows;
  const std::string src = absl::StrReplaceAll(
      absl::StrCat(kSerialHead, rows ? kSerialRowsBody : kSerialThreadRowsBody),
      {{"$NAME", k.name},
       {"$IN", in_t},
       {"$OUT", out_t},
       {"$ACC", acc},
       {"$IDENT", absl::StrCat("gf::cv<", acc, ">(", prod ? "1.f" : "0.f", ")")},
       {"$STEP", prod ? "__hmul_rn" : "__hadd_rn"},
       {"$B", absl::StrCat(k.block)},
       {"$TILE", absl::StrCat(k.block * kGroup)},
       {"$G", absl::StrCat(kGroup)}});
  k.kernel_source = src;
  k.source = DeviceSource(src);
}

}  // namespace

absl::StatusOr<std::optional<ScanKernel>> GenerateScan(const ValidatedGraph& graph,
                                                       const Step& step, const std::string& name) {
  if (step.kind != StepKind::kScan || step.root < 0) return std::nullopt;
  const ValidatedNode& node = graph.nodes[step.root];
  const std::string& op = node.op->name;
  if (op != "cumsum" && op != "cumprod") return std::nullopt;
  const ValueType& in_type = node.input_types[0];
  const Shape& shape = in_type.shape;
  const int64_t n = shape.num_elements();
  if (n == 0) return std::nullopt;

  ScanKernel k;
  k.name = name;
  k.reduce_name = name + "_reduce";
  k.carry_name = name + "_carry";
  k.input = StepInput{node.inputs[0], in_type, false};
  if (auto it = node.attrs.find("axis"); it != node.attrs.end()) {
    const int axis = static_cast<int>(std::get<int64_t>(it->second));
    k.length = shape.dim(axis);
    k.stride = 1;
    for (int d = axis + 1; d < shape.rank(); ++d) k.stride *= shape.dim(d);
    k.rows = n / k.length;
  } else {
    k.rows = 1;
    k.length = n;
    k.stride = 1;
  }
  if (k.stride == 1 && k.length > ScanKernel::kThreadRowMax) {
    k.strategy = ScanKernel::Strategy::kBlockRows;
    // Short rows waste fewer threads with fewer items per thread.
    k.items = k.length <= 256 ? 1 : (k.length <= 512 ? 2 : (k.length <= 1024 ? 4 : 8));
  } else {
    k.strategy = ScanKernel::Strategy::kThreadRows;
  }

  const DType compute = node.type.compute_dtype;
  const bool prod = op == "cumprod";
  const std::string in_t = StorageTypeName(in_type.dtype);
  const std::string out_t = StorageTypeName(node.type.output.dtype);
  if (compute == DType::kFloat16 || compute == DType::kBFloat16) {
    k.rounds_each_step = true;
    if (k.strategy == ScanKernel::Strategy::kBlockRows) {
      k.strategy = ScanKernel::Strategy::kSerialRows;
      k.block = 128;
      k.items = 1;
    }
    GenerateSerialScan(k, prod, compute, in_t, out_t);
    return k;
  }
  const std::string acc = internal::WideAccumulatorName(compute);
  k.accumulator_bytes = acc == "bool" ? 1 : (IsComplex(compute) ? 16 : 8);
  const std::string ident = absl::StrCat("(", acc, ")", prod ? "1" : "0");
  // gf::in converts to the compute dtype (rounding or wrapping as the
  // reference does), then to the accumulator.
  const std::string load =
      absl::StrCat("gf::in<", acc, ", ", RegisterTypeName(compute), ">(in[OFF])");
  auto load_at = [&](const std::string& off) { return absl::StrReplaceAll(load, {{"OFF", off}}); };

  const std::string b = absl::StrCat(k.block);
  // Guarded, so that a test can batch both translation units in one program.
  std::string common = absl::StrCat(
      "#ifndef ", name, "_COMMON\n#define ", name, "_COMMON\n", "struct ", name,
      "_args { unsigned long long w[8]; };\n", "struct ", name, "_op { __device__ __forceinline__ ",
      acc, " operator()(const ", acc, "& a, const ", acc,
      "& b) const { return gf::", prod ? "op_mul" : "op_add", "<", acc, ">(a, b); } };\n",
      // The running prefix of a block's tiles (gf::BlockScan calls it from
      // thread 0 with each tile's total; its answer is the tile's prefix).
      "struct ", name, "_prefix {\n  ", acc, " running;\n  __device__ __forceinline__ ", acc,
      " operator()(const ", acc, "& total) {\n    const ", acc, " before = running;\n",
      "    running = ", name, "_op()(running, total);\n    return before;\n  }\n};\n#endif\n");
  const std::string decl = absl::StrCat(
      "  const ", in_t, "* __restrict__ in = (const ", in_t, "*)p.w[0];\n", "  ", out_t,
      "* __restrict__ out = (", out_t, "*)p.w[1];\n", "  ", acc, "* __restrict__ carry = (", acc,
      "*)p.w[2];\n", "  const long long R = (long long)p.w[3];\n",
      "  const long long L = (long long)p.w[4];\n", "  const long long S = (long long)p.w[5];\n",
      "  const long long chunks = (long long)p.w[6];\n",
      "  const long long chunk = (long long)p.w[7];\n");
  auto head = [&](const std::string& kernel) {
    return absl::StrCat("extern \"C\" __global__ void __launch_bounds__(", b, ") ", kernel,
                        "(const ", name, "_args p) {\n", decl);
  };
  // Part `item` (row item % R, part item / R): elements [j0, j1) of the row
  // starting at `base`, `S` apart.
  const std::string part =
      "    const long long row = item % R;\n"
      "    const long long j0 = (item / R) * chunk;\n"
      "    const long long j1 = j0 + chunk < L ? j0 + chunk : L;\n"
      "    const long long base = (row / S) * L * S + row % S;\n";
  const std::string block_parts = absl::StrCat(
      "  for (long long item = blockIdx.x; item < R * chunks; item += gridDim.x) {\n", part);
  const std::string thread_parts = absl::StrCat(
      "  for (long long item = (long long)blockIdx.x * ", b,
      " + threadIdx.x; item < R * chunks; item += (long long)gridDim.x * ", b, ") {\n", part);
  const std::string start =
      absl::StrCat("chunks > 1 ? carry[item] : ", ident);  // the part's prefix

  std::string src;
  std::string split;
  if (k.strategy == ScanKernel::Strategy::kBlockRows) {
    const int tile = k.block * k.items;
    const std::string items = absl::StrCat(k.items);
    absl::StrAppend(&src, common, head(name), "  typedef gf::BlockScan<", acc, ", ", b,
                    "> scan_t;\n");
    if (k.items > 1) {
      absl::StrAppend(&src, "  typedef gf::BlockExchange<", acc, ", ", b, ", ", items,
                      "> exchange_t;\n",
                      "  __shared__ union { typename scan_t::TempStorage scan; typename "
                      "exchange_t::TempStorage exchange; } temp;\n");
    } else {
      absl::StrAppend(&src, "  __shared__ union { typename scan_t::TempStorage scan; } temp;\n");
    }
    absl::StrAppend(&src, block_parts, "    ", name, "_prefix prefix{", start, "};\n",
                    "    for (long long t0 = j0; t0 < j1; t0 += ", tile, ") {\n", "      ", acc,
                    " v[", items, "];\n", "#pragma unroll\n", "      for (int i = 0; i < ", items,
                    "; ++i) {\n", "        const long long j = t0 + threadIdx.x + i * ", b, ";\n",
                    "        v[i] = j < j1 ? ", load_at("base + j"), " : ", ident, ";\n",
                    "      }\n");
    if (k.items > 1) {
      absl::StrAppend(&src, "      exchange_t(temp.exchange).StripedToBlocked(v, v);\n",
                      "      __syncthreads();\n");
    }
    absl::StrAppend(&src, "      scan_t(temp.scan).InclusiveScan(v, v, ", name,
                    "_op(), prefix);\n");
    if (k.items > 1) {
      absl::StrAppend(&src, "      __syncthreads();\n",
                      "      exchange_t(temp.exchange).BlockedToStriped(v, v);\n");
    }
    absl::StrAppend(&src, "#pragma unroll\n", "      for (int i = 0; i < ", items, "; ++i) {\n",
                    "        const long long j = t0 + threadIdx.x + i * ", b, ";\n",
                    "        if (j < j1) out[base + j] = gf::cv<", out_t, ">(v[i]);\n", "      }\n",
                    "      __syncthreads();\n", "    }\n  }\n}\n");
    // Each part's total.
    absl::StrAppend(&split, head(k.reduce_name), "  typedef gf::BlockReduce<", acc, ", ", b,
                    "> reduce_t;\n", "  __shared__ typename reduce_t::TempStorage temp;\n",
                    block_parts, "    ", acc, " acc = ", ident, ";\n", "#pragma unroll 4\n",
                    "    for (long long j = j0 + threadIdx.x; j < j1; j += ", b, ") acc = ", name,
                    "_op()(acc, ", load_at("base + j"), ");\n",
                    "    acc = reduce_t(temp).Reduce(acc, ", name, "_op());\n",
                    "    if (threadIdx.x == 0) carry[item] = acc;\n",
                    "    __syncthreads();\n  }\n}\n");
  } else {
    // One thread per part, in order: with one part the exact order of the
    // reference.
    absl::StrAppend(&src, common, head(name), thread_parts, "    ", acc, " acc = ", start, ";\n",
                    "    for (long long j = j0; j < j1; ++j) {\n", "      acc = ", name,
                    "_op()(acc, ", load_at("base + j * S"), ");\n",
                    "      out[base + j * S] = gf::cv<", out_t, ">(acc);\n", "    }\n  }\n}\n");
    absl::StrAppend(&split, head(k.reduce_name), thread_parts, "    ", acc, " acc = ", ident, ";\n",
                    "    for (long long j = j0; j < j1; ++j) acc = ", name, "_op()(acc, ",
                    load_at("base + j * S"), ");\n", "    carry[item] = acc;\n  }\n}\n");
  }
  // The parts' totals to exclusive prefixes, in place: a block per row.
  absl::StrAppend(&split, head(k.carry_name), "  typedef gf::BlockScan<", acc, ", ", b,
                  "> scan_t;\n", "  __shared__ typename scan_t::TempStorage temp;\n",
                  "  for (long long row = blockIdx.x; row < R; row += gridDim.x) {\n", "    ", name,
                  "_prefix prefix{", ident, "};\n",
                  "    for (long long q0 = 0; q0 < chunks; q0 += ", b, ") {\n",
                  "      const long long q = q0 + threadIdx.x;\n", "      ", acc,
                  " v = q < chunks ? carry[q * R + row] : ", ident, ";\n",
                  "      scan_t(temp).ExclusiveScan(v, v, ", name, "_op(), prefix);\n",
                  "      if (q < chunks) carry[q * R + row] = v;\n", "      __syncthreads();\n",
                  "    }\n  }\n}\n");
  split = absl::StrCat(common, split);
  k.kernel_source = src;
  k.source = DeviceSource(src);
  k.split_kernel_source = split;
  k.split_source = DeviceSource(split);
  return k;
}

ScanLaunch ScanLaunchFor(const ScanKernel& k, int64_t sms) {
  ScanLaunch launch;
  const int64_t rows = k.rows;
  const int64_t length = k.length;
  int64_t parts = 1;
  if (k.strategy == ScanKernel::Strategy::kSerialRows) {
    launch.chunk = length;
    launch.blocks = std::min(rows, int64_t{1} << 30);
  } else if (k.rounds_each_step) {
    // kThreadRows in order: a thread per whole row.
    launch.chunk = length;
    launch.blocks = std::clamp<int64_t>(CeilDiv(rows, k.block), 1, sms * 32);
  } else if (k.strategy == ScanKernel::Strategy::kBlockRows) {
    // Few rows: cut them into parts of whole tiles (at least four) so that
    // about eight blocks per SM run.
    const int64_t tile = int64_t{k.block} * k.items;
    const int64_t tiles = CeilDiv(length, tile);
    if (rows < 2 * sms) parts = std::min(CeilDiv(8 * sms, rows), tiles / 4);
    const int64_t chunk_tiles = CeilDiv(tiles, std::max<int64_t>(parts, 1));
    launch.chunk = chunk_tiles * tile;
    launch.chunks = CeilDiv(tiles, chunk_tiles);
    launch.blocks = std::min(rows * launch.chunks, int64_t{1} << 30);
  } else {
    // A thread per part: enough threads to fill the device, parts of at
    // least 32 elements, and few enough that the carry scan stays short.
    const int64_t threads = sms * 2048;
    if (rows < threads / 2) {
      parts = std::min({CeilDiv(threads, rows), length / 32, int64_t{16384}});
    }
    launch.chunk = CeilDiv(length, std::max<int64_t>(parts, 1));
    launch.chunks = CeilDiv(length, launch.chunk);
    launch.blocks = std::clamp<int64_t>(CeilDiv(rows * launch.chunks, k.block), 1, sms * 32);
  }
  launch.carry_blocks = std::min(rows, int64_t{1} << 30);
  return launch;
}

}  // namespace gpuflow::cuda

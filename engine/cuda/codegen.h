// Code generation: CUDA C++ source for the plan steps the CUDA backend runs
// as generated kernels: fused elementwise groups, reductions, softmax,
// scans, shape copies, matmul/dot and custom kernels.
//
//   absl::StatusOr<ElementwiseKernel> k = GenerateElementwise(graph, step, shapes...);
//   // k->source compiles with NVRTC; launch k->name with k->ArgWords(...).
//
// Kernels are specialised on dtypes, on the (collapsed) broadcast pattern and
// on 32- or 64-bit indexing; contiguous groups use 16-byte vector loads and
// stores. Pure functions of their inputs; thread-safe.
#ifndef GPUFLOW_ENGINE_CUDA_CODEGEN_H_
#define GPUFLOW_ENGINE_CUDA_CODEGEN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/ir/validate.h"
#include "engine/plan/plan.h"

namespace gpuflow::cuda {

// One value a fused step reads from outside itself.
struct StepInput {
  ValueRef ref;
  ValueType type;
  // 0-d literals are passed by value in the kernel's arguments.
  bool by_value = false;
};

// The launch layout of a generated elementwise kernel. Its one kernel
// parameter is an array of 64-bit words:
//   [input pointers (non-by-value inputs, in order)] [output pointer] [n]
//   [dims (rank)] [strides (pointer inputs x rank)] [by-value scalars]
struct ElementwiseKernel {
  std::string name;           // extern "C" name
  std::string source;         // a whole translation unit (includes the device library)
  std::string kernel_source;  // the kernel alone (kDeviceLibrary + it = source)
  std::vector<StepInput> inputs;
  int rank = 1;                  // after collapsing
  std::vector<int64_t> dims;     // collapsed output dims
  std::vector<int64_t> strides;  // per pointer input, per dim (elements; 0 = broadcast)
  int64_t num_elements = 0;
  bool vectorized = false;
  int elements_per_vector = 1;
  bool index32 = true;
  int num_words = 0;
};

// `step` must be an elementwise step of `graph`; `name` is the extern "C"
// kernel name.
absl::StatusOr<ElementwiseKernel> GenerateElementwise(const ValidatedGraph& graph, const Step& step,
                                                      const std::string& name = "gf_elementwise");

// A reduction step (prologue, reduction, epilogue) as generated kernels:
//  - `partial` reduces a range of the reduced elements per output element
//    (grid: x over outputs or output blocks, y over `splits`), writing the
//    final value (splits == 1) or an accumulator per split to a scratch
//    buffer, which `finalize` combines;
//  - strategies: kInner (reduced elements contiguous per output: a block per
//    output with a block reduction, gf::BlockReduce of device_library.cc),
//    kOuter (outputs contiguous: a thread per output, coalesced), kGeneral
//    (index arithmetic, a block per output).
// Kernel words: [prologue pointers] [epilogue pointers] [out] [scratch]
//   [M] [R] [splits] [chunk] [kept dims+strides] [reduced dims+strides] [scalars].
struct ReductionKernel {
  enum class Strategy { kInner, kOuter, kGeneral };
  std::string name;
  std::string source;
  std::string kernel_source;
  Strategy strategy = Strategy::kInner;
  std::vector<StepInput> prologue_inputs;  // pointer or by-value, input-shaped
  std::vector<StepInput> epilogue_inputs;  // output-shaped
  int64_t outputs = 0;                     // M
  int64_t reduced = 0;                     // R
  std::vector<int64_t> kept_dims, kept_strides, reduced_dims, reduced_strides;
  int accumulator_bytes = 8;
  int block = 256;
  // Inner strategy: elements per 16-byte vector load (0: scalar loads).
  int vector_width = 0;
};

// Accumulators: floats in double, integers in 64 bits (wrapping), as the CPU
// reference; var/std by Welford's update and Chan's merge (in double),
// logsumexp by a running maximum and rescaled sum (in double), argmin/argmax
// by (value, index) pairs in the input's dtype (first extremum, a NaN first).
// Empty (no error) when the step is not one this generator handles (the
// backend then runs it on the host): ops other than sum, prod, min, max,
// mean, any, all, var, std, logsumexp, argmin, argmax; var/std of a
// non-float compute dtype; inputs broadcast inside the step; an empty
// reduction.
absl::StatusOr<std::optional<ReductionKernel>> GenerateReduction(
    const ValidatedGraph& graph, const Step& step, const std::string& name = "gf_reduce");

// softmax / log_softmax over any axis; prologue and epilogue nodes of the
// input's shape are fused. Three layouts:
//  - the last axis, rows up to 32 * 1024 elements: a block per row, the row
//    held in registers (16-byte vectors when the input is all it reads);
//  - the last axis, longer rows (`split`): each row cut into parts, a block
//    per part, in three kernels: `name`_pmax (each part's maximum),
//    `name`_psum (each part's sum of exp(x - row maximum)) and `name` (the
//    outputs), through a scratch buffer of 2 * rows * parts accumulators;
//  - another axis (elements `stride` apart): 32 neighbouring rows per block
//    (coalesced), up to 32 threads along each row combining through shared
//    memory, reading it twice (the maximum and sum online, then the write).
// Words: [pointers] [out] [rows] ([parts] [scratch] when split) [scalars].
// Empty when the step does not fit.
struct SoftmaxKernel {
  std::string name;
  std::string source;
  std::string kernel_source;
  std::vector<StepInput> inputs;
  int64_t rows = 0;
  int64_t row_length = 0;
  int block = 256;
  // Elements per 16-byte vector load and store (0: scalar).
  int vector_width = 0;
  // Row elements are this far apart (1: the last axis).
  int64_t stride = 1;
  // Another axis: blocks of `block` threads take 32 rows each (launch
  // ceil(rows / 32) blocks).
  bool thread_per_row = false;
  // Rows held in the registers of `parts` blocks of `block` threads (each
  // block `rows_per_block` neighbouring rows, `values_per_thread` elements of
  // each a thread), which exchange their parts' maximum and sum through a
  // scratch buffer of TiledScratchBytes whose first TiledCounterBytes are
  // zeroed: launch TiledBlocks blocks.
  bool tiled = false;
  int64_t parts = 0;
  int rows_per_block = 0;
  int values_per_thread = 0;
  int min_blocks_per_sm = 0;
  // Long rows in parts (three kernels); accumulator_bytes: a scratch entry.
  bool split = false;
  int accumulator_bytes = 0;
};
// How tiled softmax kernels are shaped (the defaults are the H200's best
// of bench/softmax_variants.cc; other values are for that benchmark).
struct SoftmaxTiling {
  // false: no tiled kernels (the other layouts' instead).
  bool enabled = true;
  // Rows along another axis tiled too. Off: on the H200 no shape beat the
  // two-pass layout over (8192, 8192)'s columns (0.329 ms at best against
  // 0.317; bench/RESULTS.md, session 15).
  bool other_axis = false;
  // The H200's best for (64, 2^20) float32: 512 threads of 16 elements
  // each, in 16-byte vectors, four blocks per SM (32 registers): 0.218 ms;
  // 0.248 with 32 scalar elements at three blocks, 0.289 at two.
  int block = 512;
  // Elements a thread holds, 4-byte compute types (8-byte: half as many),
  // along the last axis and along another.
  int values_last_axis = 16;
  int values_other_axis = 32;
  // Rows read and written as 16-byte vectors where the register layout's
  // are (the softmax input the only array read, rows whole vectors).
  bool vectorize = true;
  // __launch_bounds__'s minimum blocks per SM.
  int min_blocks_per_sm = 4;
};
absl::StatusOr<std::optional<SoftmaxKernel>> GenerateSoftmax(const ValidatedGraph& graph,
                                                             const Step& step,
                                                             const std::string& name = "gf_softmax",
                                                             const SoftmaxTiling& tiling = {});
// A tiled softmax's launch: its blocks (a part of a group of rows_per_block
// rows each), its scratch and the counters at its start that must be zero.
int64_t TiledBlocks(const SoftmaxKernel& k);
int64_t TiledScratchBytes(const SoftmaxKernel& k);
int64_t TiledCounterBytes(const SoftmaxKernel& k);

// A row program (StepKind::kRows; codegen_rows.cc): a block per row (the
// step's full shape seen as `rows` rows of `row_length` elements, the
// reduced trailing axes), grid-striding over rows. Each thread holds up to
// 16 elements of the row (`vector_width` at a time, 16-byte loads when rows
// are whole vectors) of every input of exactly the full shape; each
// reduction is a block reduction (accumulated as codegen_reduce.cc's:
// floats in double, integers in 64 bits) whose result every thread reads
// back; var/std take two passes over the registers (the mean, then the
// squared deviations). Every node is computed once; other inputs are read
// where they are needed, with their broadcast strides folded in as
// constants. Empty when a row does not fit (more than 64 elements a thread).
//
// Streamed (RowsLayout::kStream): nothing is held in registers; each pass
// over the row (one per reduction, then the output) reads its inputs again
// (from L2 after the first) a vector at a time and computes again the full
// nodes it needs, in blocks of 256 threads. Rows of any length fit, and
// several blocks share an SM, so loads overlap the block reductions of
// other rows: where the register layout takes 1024-thread blocks of one row
// an SM and the rows are short enough (32 KiB) for the re-reads to find
// them in L2, it is the faster one (bench/rows_variants.cc). var/std read
// their row twice (the mean, then the squared deviations).
//
// Words: [pointer inputs] [out] [rows] [scalars].
enum class RowsLayout : uint8_t {
  kAuto,       // kStream for 1024-thread register blocks of rows of <= 32 KiB
  kRegisters,  // empty when a row does not fit
  kStream,
};
struct RowsKernel {
  std::string name;
  bool streamed = false;
  std::string source;
  std::string kernel_source;
  std::vector<StepInput> inputs;
  int64_t rows = 0;
  int64_t row_length = 0;
  int block = 256;
  int vector_width = 1;
  int num_words = 0;
};
// `elements_per_thread_16bit`: about how many elements each thread holds
// when the widest array the row holds has 2-byte elements (others 16).
absl::StatusOr<std::optional<RowsKernel>> GenerateRows(const ValidatedGraph& graph,
                                                       const Step& step,
                                                       const std::string& name = "gf_rows",
                                                       int elements_per_thread_16bit = 16,
                                                       RowsLayout layout = RowsLayout::kAuto);

// A scan step (cumsum, cumprod; codegen_scan.cc). The input is seen as
// `rows` rows of `length` elements `stride` apart (row r starts at
// (r / stride) * length * stride + r % stride; the flattened array is one
// row). Accumulators as reductions': floats in double, integers in 64 bits
// (wrapping), bool in bool. Each row may be cut into `chunks` parts
// (ScanLaunchFor): then `reduce_name` writes each part's total to a carry
// buffer (carry[part * rows + row]), `carry_name` (a block per row, a
// block scan) turns those into exclusive prefixes, and `name` scans each part
// from its prefix; with one part, `name` alone runs and the carry buffer is
// unused. Strategies:
//  - kBlockRows (contiguous rows longer than kThreadRowMax): a block per
//    part, tiles of block * items elements, loaded coalesced, arranged by
//    gf::BlockExchange and scanned by gf::BlockScan with a running prefix
//    (device_library.cc; CUB's interfaces without CUB's headers);
//  - kThreadRows (short rows, or strided axes): a thread per part, a
//    sequential scan; neighbouring threads take neighbouring rows, which
//    are neighbouring columns (coalesced) when the axis is not the last;
//  - kSerialRows (float16 and bfloat16 compute, contiguous rows longer than
//    kThreadRowMax): see below.
// float16 and bfloat16 scans (`rounds_each_step`) round every partial
// result to the dtype, as NumPy's add.accumulate does; that is not
// associative, so each row is scanned in order, whole (chunks is always 1,
// no split kernels): kSerialRows gives a contiguous row a block, which
// stages tiles in shared memory while its thread 0 runs the chain;
// kThreadRows a thread. The accumulator is the narrow type. Other dtypes
// keep the parallel strategies above.
// Kernel words (every kernel): [in] [out] [carry] [rows] [length] [stride]
//   [chunks] [chunk (elements per part)].
struct ScanKernel {
  enum class Strategy { kBlockRows, kThreadRows, kSerialRows };
  static constexpr int64_t kThreadRowMax = 64;
  std::string name;         // the scan
  std::string reduce_name;  // name + "_reduce"
  std::string carry_name;   // name + "_carry"
  // `name`'s translation unit (with the device library).
  std::string source;
  // `reduce_name` and `carry_name`'s.
  std::string split_source;
  // The kernels alone (kDeviceLibrary + them = source / split_source).
  std::string kernel_source;
  std::string split_kernel_source;
  Strategy strategy = Strategy::kBlockRows;
  StepInput input;
  int64_t rows = 0;
  int64_t length = 0;
  int64_t stride = 1;
  int accumulator_bytes = 8;
  int block = 256;
  int items = 1;  // per thread and tile (kBlockRows)
  // float16/bfloat16: every step rounds to the dtype; rows run whole, in
  // order (split_source and split_kernel_source are empty).
  bool rounds_each_step = false;
};
// Empty when the step is not a scan or is empty (the host handles it).
absl::StatusOr<std::optional<ScanKernel>> GenerateScan(const ValidatedGraph& graph,
                                                       const Step& step,
                                                       const std::string& name = "gf_scan");

// How a scan is launched on a device with `sms` multiprocessors. Run and
// Precompile both use it, so they agree on which kernels exist.
struct ScanLaunch {
  int64_t chunks = 1;  // parts per row; above 1 the reduce and carry kernels run first
  int64_t chunk = 0;   // elements per part
  int64_t blocks = 1;  // grid of the scan and reduce kernels (1-D)
  int64_t carry_blocks = 1;
};
ScanLaunch ScanLaunchFor(const ScanKernel& k, int64_t sms);

// A custom kernel node (elementwise_kernel, reduction_kernel,
// codegen_custom.cc) as one generated kernel. Its parameter is an array of
// 64-bit words: `words` holds every value known when generating (sizes,
// shapes, strides, literal scalars); the backend writes the device
// addresses into the slots listed in `input_slots` and `output_slots`.
struct CustomKernel {
  std::string name;  // extern "C" name: "gf_" + the user's name
  std::string source;
  std::vector<uint64_t> words;
  // Per node input: the word taking its device address, or -1 when the
  // input is a literal passed by value.
  std::vector<int> input_slots;
  // (node input, word) of each literal passed by value: `words` holds the
  // generating graph's value there; a graph of the same plan with other
  // values writes its own (LiteralWord).
  std::vector<std::pair<int, int>> literal_words;
  // Per out param (elementwise: every out param; reduction: one).
  std::vector<int> output_slots;
  std::vector<DType> output_dtypes;
  // Elementwise, per out param: its number of elements (the loop size, or a
  // raw output's own), and for a raw output (`raw T y`, indexed by the
  // kernel) the node input holding its initial value, which the backend
  // copies into the output before the launch (-1 for the others).
  std::vector<int64_t> output_elements;
  std::vector<int> raw_output_inputs;
  // Elementwise: the loop size; reduction: the number of outputs.
  int64_t num_elements = 0;
  int block = 256;
  // Elementwise: elements per thread-iteration (vector width, 1 when not
  // vectorised).
  int elements_per_thread = 1;
  // Reduction: `name` reduces blocks of `chunk` reduced elements (grid.y
  // over `splits`); with splits > 1 it writes accumulators of
  // `accumulator_bytes` each to scratch[o * splits + split], and
  // `name`_combine (a thread per output) finishes them.
  int64_t reduced = 0;
  int scratch_slot = -1;
  int splits_slot = -1;
  int chunk_slot = -1;
  int accumulator_bytes = 0;
};

// `node` must be an elementwise_kernel or reduction_kernel node of `graph`.
// INVALID_ARGUMENT when its signature does not resolve (validation has
// already checked it, so this is a bug guard).
absl::StatusOr<CustomKernel> GenerateCustomKernel(const ValidatedGraph& graph, int node);

// A shape step (reshape, expand_dims, squeeze, transpose, broadcast_to,
// slice, concatenate, stack) or a `full` as strided copies, and a take or
// take_along_axis as a gather (codegen_layout.cc): element
// i of an iteration shape is read at src_base + sum(c_d * src_stride_d) and
// written at dst_base + sum(c_d * dst_stride_d), converting the dtype when
// the output's differs (concatenate and stack promote). One copy per input
// (concatenate and stack) or one in all. Kernel words:
//   [src] [dst] [n] [dims (rank)] [src strides] [dst strides] [src base]
//   [dst base]   (strides and bases in elements, possibly negative)
struct LayoutCopy {
  int input = 0;  // the node input read
  std::string name;
  std::string source;
  std::vector<uint64_t> words;  // words[0], words[1]: the backend's pointers
  int64_t num_elements = 0;
  // Same dtype, contiguous in and out: a plain memcpy of num_elements
  // (source is empty).
  bool memcpy = false;
  // A gather (take, take_along_axis): the node input holding the indices,
  // -1 for a copy. Its kernel reads output element i (coordinates c over
  // dims) at src[sum(c_d * src_stride_d) + j * axis_stride], j the index at
  // indices[sum(c_d * index_stride_d)], negative ones counted from axis
  // size. An index out of bounds writes 0 for the element and stores the
  // index (sign- or zero-extended to 64 bits, never 0) into the error word
  // (device_errors.h), which the backend reads after the run. Words:
  //   [src] [dst] [indices] [error word] [n] [axis size] [axis stride]
  //   [dims (rank)] [src strides] [index strides]
  int index_input = -1;
};
// Empty when the step is not a single shape op, gather or full.
absl::StatusOr<std::optional<std::vector<LayoutCopy>>> GenerateLayoutCopies(
    const ValidatedGraph& graph, const Step& step);

// arange, random_uniform or random_normal as a generated kernel
// (codegen_creation.cc), drawing exactly what the CPU reference draws: a
// thread per element, grid-stride. Kernel words:
//   [out] [n] [start or low or mean] [start + step or high or std]
//   [uniform's largest draw] [seed]   (doubles as their bits)
struct CreationKernel {
  std::string name;
  std::string source;           // a whole translation unit
  std::string kernel_source;    // the kernel alone (kDeviceLibrary + it = source)
  std::vector<uint64_t> words;  // words[0]: the backend's output pointer
};
// Empty when the step is not one of those ops (or draws a non-float dtype,
// an error the host reports).
std::optional<CreationKernel> GenerateCreation(const ValidatedGraph& graph, const Step& step);

// A matmul or dot step (one node) as a generated tiled kernel
// (codegen_matmul.cc), with the CPU reference's semantics (host_linalg.cc):
// NumPy's matmul rules (a 1-D a is a row (1, k), a 1-D b a column (k, 1),
// the added dimension not in the output; batch dimensions broadcast; dot of
// rank <= 2 only); both operands converted to the compute dtype; products
// summed in k order in double for floats, in 64-bit wrapping arithmetic for
// integers, by or/and for bool; one conversion to the output dtype. Any
// dtypes, mixed ones too. Operands and output are contiguous, row-major.
// Blocks of block_x * block_y threads, each one output element of a tile
// (grid x over column tiles, y over row tiles, z over batches; each loops
// over what the grid does not cover); 64-bit offsets. Its one parameter is
// an array of 64-bit words:
//   [a] [b] [out] [n (rows)] [k] [m (columns)] [batches]
//   [batch dims (R)] [a batch strides (R)] [b batch strides (R)]
// with batch strides in elements (0 where an operand is broadcast) over the
// output's batch dimensions, extent-1 ones dropped and contiguous ones
// merged (R = 0 for a single matrix); out is batches * n * m elements.
struct MatmulKernel {
  std::string name;
  std::string source;           // whole translation unit (kDeviceLibrary + kernel)
  std::vector<uint64_t> words;  // words[0] a, words[1] b, words[2] out: the backend's pointers
  int64_t grid_x = 1, grid_y = 1, grid_z = 1;
  int block_x = 16, block_y = 16;
};
// nullopt when the step is not a single matmul/dot node; dot with a 0-d
// operand is a scalar product (a thread per element, 256-thread blocks on
// grid_x, words [a] [b] [out] [n]); outputs of zero elements need no launch
// (the backend checks the output size), k == 0 gives zeros. INVALID_ARGUMENT
// when the shapes do not make a matmul (validation has checked them: a bug
// guard). `name` is the extern "C" kernel name.
absl::StatusOr<std::optional<MatmulKernel>> GenerateMatmul(const ValidatedGraph& graph,
                                                           const Step& step,
                                                           const std::string& name = "gf_matmul");

// A 0-d literal's bytes as a kernel argument word (zero-extended), the form
// in which every generated kernel takes scalars by value.
uint64_t LiteralWord(const LiteralArray& literal);

// The storage type name used in generated code ("float", "f16", "u8" for bool).
const char* StorageTypeName(DType dtype);

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_CODEGEN_H_

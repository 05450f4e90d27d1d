// Writes the fuzzers' seed corpora under <corpus_dir> (README.md):
//  - graph_fuzzer/: every JSON graph of graph_json_fuzzer/ (the docs' and
//    tests' graphs) in binary form, plus the text-format requests below,
//    which reach the ops and attributes the JSON graphs do not;
//  - upload_stream_fuzzer/: valid and invalid upload streams in the
//    fuzzer's framing (upload_stream_fuzzer.cc);
//  - execute_fuzzer/: requests that run past one host block (1024
//    elements) and through the complex arrays execute_fuzzer.cc holds; the
//    fuzzer also starts from graph_fuzzer/ (the Makefile and ctest pass
//    both).
//
//   build-fuzz/bin/make_seeds tests/fuzz/corpus
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "clients/cpp/graph_json.h"
#include "google/protobuf/text_format.h"
#include "gpuflow/v1/service.pb.h"

namespace {

namespace fs = std::filesystem;

// ExecuteRequests in protobuf text format, one family or corner each.
constexpr const char* kTextRequests[] = {
    // Elementwise chains, weak and strong scalars, broadcasting.
    R"pb(graph {
           nodes {
             id: "a"
             op: "mul"
             inputs { array: "x" }
             inputs { array: "y" }
           }
           nodes {
             id: "b"
             op: "add"
             inputs { node: "a" }
             inputs { scalar { int_value: 1 } }
           }
           nodes {
             id: "c"
             op: "tanh"
             inputs { node: "b" }
           }
         }
         outputs { node: "c" return_inline: true })pb",
    R"pb(graph {
           nodes {
             id: "a"
             op: "sub"
             inputs { array: "a" }
             inputs { scalar { float_value: 2.5 dtype: DTYPE_FLOAT16 } }
           }
           nodes {
             id: "b"
             op: "where"
             inputs { array: "b" }
             inputs { node: "a" }
             inputs { array: "c" }
           }
           nodes {
             id: "c"
             op: "clip"
             inputs { node: "b" }
             inputs { scalar { int_value: -1 } }
             inputs { scalar { uint_value: 18446744073709551615 } }
           }
         }
         outputs { node: "c" store_as: "out" })pb",
    R"pb(graph {
           nodes {
             id: "c"
             op: "cast"
             inputs { array: "f16" }
             attrs {
               key: "dtype"
               value { dtype_value: DTYPE_INT8 }
             }
           }
           nodes {
             id: "d"
             op: "pow"
             inputs { node: "c" }
             inputs { scalar { int_value: -2 } }
           }
         }
         outputs { node: "d" return_inline: true })pb",
    R"pb(graph {
           nodes {
             id: "e"
             op: "eq"
             inputs { array: "u64" }
             inputs { array: "i64" }
           }
           nodes {
             id: "f"
             op: "logical_xor"
             inputs { node: "e" }
             inputs { array: "b" }
           }
           nodes {
             id: "g"
             op: "bitwise_not"
             inputs { array: "u32" }
           }
           nodes {
             id: "h"
             op: "atan2"
             inputs { array: "bf16" }
             inputs { array: "a" }
           }
         })pb",
    // A literal array input.
    R"pb(graph {
           nodes {
             id: "l"
             op: "add"
             inputs { array: "y" }
             inputs { literal { dtype: DTYPE_FLOAT32 shape: 2 data: "\000\000\200?\000\000\000@" } }
           }
         }
         outputs { node: "l" return_inline: true })pb",
    // Reductions, fused prologue and epilogue.
    R"pb(graph {
           nodes {
             id: "s"
             op: "square"
             inputs { array: "x" }
           }
           nodes {
             id: "r"
             op: "sum"
             inputs { node: "s" }
             attrs {
               key: "axes"
               value { ints { values: 1 } }
             }
             attrs {
               key: "keepdims"
               value { bool_value: true }
             }
           }
           nodes {
             id: "q"
             op: "sqrt"
             inputs { node: "r" }
           }
         }
         outputs { node: "q" return_inline: true })pb",
    R"pb(graph {
           nodes {
             id: "v"
             op: "var"
             inputs { array: "m" }
             attrs {
               key: "axes"
               value { ints { values: 0 values: -1 } }
             }
             attrs {
               key: "ddof"
               value { float_value: 1 }
             }
           }
           nodes {
             id: "am"
             op: "argmax"
             inputs { array: "i16" }
             attrs {
               key: "axis"
               value { int_value: -2 }
             }
           }
           nodes {
             id: "mean"
             op: "mean"
             inputs { array: "a" }
             attrs {
               key: "dtype"
               value { dtype_value: DTYPE_FLOAT32 }
             }
           }
         })pb",
    // Reductions over empty and huge arrays.
    R"pb(graph {
           nodes {
             id: "r"
             op: "sum"
             inputs { array: "huge_empty" }
             attrs {
               key: "axes"
               value { ints { values: 1 } }
             }
           }
         }
         outputs { node: "r" return_inline: true })pb",
    R"pb(graph {
           nodes {
             id: "r"
             op: "max"
             inputs { array: "empty2" }
             attrs {
               key: "axes"
               value { ints { values: 0 } }
             }
           }
           nodes {
             id: "p"
             op: "prod"
             inputs { array: "big" }
           }
           nodes {
             id: "l"
             op: "logsumexp"
             inputs { array: "huge" }
           }
         })pb",
    R"pb(graph {
           nodes {
             id: "s"
             op: "softmax"
             inputs { array: "x" }
             attrs {
               key: "axis"
               value { int_value: 0 }
             }
           }
           nodes {
             id: "ls"
             op: "log_softmax"
             inputs { array: "huge_empty3" }
           }
         })pb",
    // Scans.
    R"pb(graph {
           nodes {
             id: "c"
             op: "cumsum"
             inputs { array: "a" }
             attrs {
               key: "axis"
               value { int_value: 2 }
             }
           }
           nodes {
             id: "p"
             op: "cumprod"
             inputs { array: "u8" }
           }
         })pb",
    // Linear algebra.
    R"pb(graph {
           nodes {
             id: "mm"
             op: "matmul"
             inputs { array: "x" }
             inputs { array: "w" }
           }
           nodes {
             id: "d"
             op: "dot"
             inputs { array: "y" }
             inputs { array: "y" }
           }
           nodes {
             id: "mv"
             op: "matmul"
             inputs { array: "x" }
             inputs { array: "y" }
           }
         }
         outputs { node: "mm" return_inline: true }
         allow_tf32: true)pb",
    // Shape ops.
    R"pb(graph {
           nodes {
             id: "r"
             op: "reshape"
             inputs { array: "x" }
             attrs {
               key: "shape"
               value { ints { values: -1 values: 2 } }
             }
           }
           nodes {
             id: "t"
             op: "transpose"
             inputs { node: "r" }
           }
           nodes {
             id: "s"
             op: "slice"
             inputs { node: "t" }
             attrs {
               key: "starts"
               value { ints { values: 9223372036854775807 } }
             }
             attrs {
               key: "stops"
               value { ints { values: -9223372036854775808 } }
             }
             attrs {
               key: "steps"
               value { ints { values: -1 } }
             }
           }
         }
         outputs { node: "s" return_inline: true })pb",
    R"pb(graph {
           nodes {
             id: "b"
             op: "broadcast_to"
             inputs { array: "c" }
             attrs {
               key: "shape"
               value { ints { values: 4 values: 5 } }
             }
           }
           nodes {
             id: "e"
             op: "expand_dims"
             inputs { array: "y" }
             attrs {
               key: "axes"
               value { ints { values: 0 values: -1 } }
             }
           }
           nodes {
             id: "q"
             op: "squeeze"
             inputs { array: "u16" }
           }
           nodes {
             id: "cat"
             op: "concatenate"
             inputs { array: "x" }
             inputs { array: "x" }
             attrs {
               key: "axis"
               value { int_value: 1 }
             }
           }
           nodes {
             id: "st"
             op: "stack"
             inputs { array: "y" }
             inputs { array: "y" }
           }
         })pb",
    // Creation.
    R"pb(graph {
           nodes {
             id: "f"
             op: "full"
             inputs { scalar { int_value: 7 } }
             attrs {
               key: "shape"
               value { ints { values: 3 values: 0 } }
             }
             attrs {
               key: "dtype"
               value { dtype_value: DTYPE_UINT8 }
             }
           }
           nodes {
             id: "ar"
             op: "arange"
             attrs {
               key: "start"
               value { int_value: 5 }
             }
             attrs {
               key: "stop"
               value { float_value: -3 }
             }
             attrs {
               key: "step"
               value { float_value: -0.5 }
             }
           }
           nodes {
             id: "ru"
             op: "random_uniform"
             attrs {
               key: "shape"
               value { ints { values: 2 values: 2 } }
             }
             attrs {
               key: "seed"
               value { int_value: 42 }
             }
           }
           nodes {
             id: "rn"
             op: "random_normal"
             attrs {
               key: "shape"
               value { ints { values: 4611686018427387904 } }
             }
             attrs {
               key: "seed"
               value { int_value: 1 }
             }
             attrs {
               key: "dtype"
               value { dtype_value: DTYPE_BFLOAT16 }
             }
           }
         })pb",
    // Custom kernels (validated everywhere; run only on CUDA).
    R"pb(graph {
           nodes {
             id: "k"
             op: "elementwise_kernel"
             inputs { array: "x" }
             inputs { array: "x" }
             attrs {
               key: "in_params"
               value { string_value: "T x, T y" }
             }
             attrs {
               key: "out_params"
               value { string_value: "T z" }
             }
             attrs {
               key: "operation"
               value { string_value: "z = x * y + 1" }
             }
           }
           nodes {
             id: "rk"
             op: "reduction_kernel"
             inputs { array: "y" }
             attrs {
               key: "in_params"
               value { string_value: "T x" }
             }
             attrs {
               key: "out_params"
               value { string_value: "T y" }
             }
             attrs {
               key: "map_expr"
               value { string_value: "x * x" }
             }
             attrs {
               key: "reduce_expr"
               value { string_value: "a + b" }
             }
             attrs {
               key: "post_map_expr"
               value { string_value: "y = sqrt(a)" }
             }
             attrs {
               key: "identity"
               value { string_value: "0" }
             }
           }
           nodes {
             id: "raw"
             op: "raw_kernel"
             inputs { array: "y" }
             inputs { scalar { int_value: 8 dtype: DTYPE_INT32 } }
             attrs {
               key: "code"
               value { string_value: "extern \"C\" __global__ void k(float* x, int n) {}" }
             }
             attrs {
               key: "name"
               value { string_value: "k" }
             }
             attrs {
               key: "grid"
               value { ints { values: 1 } }
             }
             attrs {
               key: "block"
               value { ints { values: 32 } }
             }
             attrs {
               key: "output"
               value { int_value: 0 }
             }
             attrs {
               key: "options"
               value { strings { values: "--use_fast_math" } }
             }
           }
         })pb",
    // Errors: an unknown op, a dangling node, an unset input, an unknown array.
    R"pb(graph {
           nodes {
             id: "a"
             op: "frobnicate"
             inputs { array: "x" }
           }
         })pb",
    R"pb(graph {
           nodes {
             id: "a"
             op: "neg"
             inputs { node: "missing" }
           }
           nodes {
             id: "a"
             op: "neg"
             inputs {}
           }
         }
         outputs { node: "nope" })pb",
    R"pb(graph {
           nodes {
             id: "a"
             op: "add"
             inputs { array: "nope" }
             inputs { array: "big_i64" }
           }
         })pb",
};

bool WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

// The fuzzer's framing: a flags byte, then each message as a 4-byte
// little-endian length and its bytes.
std::string Frame(uint8_t flags, const std::vector<std::string>& messages) {
  std::string out(1, static_cast<char>(flags));
  for (const std::string& m : messages) {
    const uint32_t n = static_cast<uint32_t>(m.size());
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    out += m;
  }
  return out;
}

// Requests for execute_fuzzer, which runs them: complex values and sizes
// past one host block, through conversions, reductions, sorts and layouts.
constexpr const char* kExecuteTextRequests[] = {
    R"pb(graph {
           nodes {
             id: "z"
             op: "full"
             inputs { scalar { float_value: -1.5 } }
             attrs {
               key: "shape"
               value { ints { values: 2053 } }
             }
             attrs {
               key: "dtype"
               value { dtype_value: DTYPE_COMPLEX128 }
             }
           }
           nodes {
             id: "s"
             op: "add"
             inputs { node: "z" }
             inputs { array: "f64" }
           }
         }
         outputs { node: "s" return_inline: true })pb",
    R"pb(graph {
           nodes {
             id: "k"
             op: "concatenate"
             inputs { array: "f64" }
             inputs { array: "c64" }
             attrs {
               key: "axis"
               value { int_value: 0 }
             }
           }
           nodes {
             id: "r"
             op: "sum"
             inputs { node: "k" }
           }
         }
         outputs { node: "k" store_as: "joined" }
         outputs { node: "r" return_inline: true })pb",
    R"pb(graph {
           nodes {
             id: "t"
             op: "transpose"
             inputs { array: "c128" }
           }
           nodes {
             id: "c"
             op: "cast"
             inputs { node: "t" }
             attrs {
               key: "dtype"
               value { dtype_value: DTYPE_COMPLEX64 }
             }
           }
           nodes {
             id: "p"
             op: "cumsum"
             inputs { node: "c" }
             attrs {
               key: "axis"
               value { int_value: 0 }
             }
           }
         }
         outputs { node: "p" return_inline: true })pb",
    R"pb(graph {
           nodes {
             id: "o"
             op: "sort"
             inputs { array: "f64" }
           }
           nodes {
             id: "ct"
             op: "transpose"
             inputs { array: "c128" }
           }
           nodes {
             id: "m"
             op: "matmul"
             inputs { array: "c128" }
             inputs { node: "ct" }
           }
           nodes {
             id: "u"
             op: "cast"
             inputs { array: "u8" }
             attrs {
               key: "dtype"
               value { dtype_value: DTYPE_COMPLEX128 }
             }
           }
         })pb",
};

std::string Header(const std::string& name, gpuflow::v1::DType dtype,
                   const std::vector<int64_t>& shape) {
  gpuflow::v1::UploadArrayRequest r;
  r.mutable_header()->set_session_id("0123456789abcdef0123456789abcdef");
  r.mutable_header()->set_name(name);
  r.mutable_header()->set_dtype(dtype);
  for (int64_t d : shape) r.mutable_header()->add_shape(d);
  return r.SerializeAsString();
}

std::string Chunk(const std::string& bytes) {
  gpuflow::v1::UploadArrayRequest r;
  r.set_chunk(bytes);
  return r.SerializeAsString();
}

// Flag bits, as upload_stream_fuzzer.cc reads them.
constexpr uint8_t kValidSession = 1;
constexpr uint8_t kAbort = 2;

int WriteUploadSeeds(const fs::path& dir) {
  using gpuflow::v1::DType;
  const std::string f32x4(16, '\x01');
  const std::vector<std::pair<std::string, std::string>> seeds = {
      {"valid_one_chunk",
       Frame(kValidSession, {Header("x", DType::DTYPE_FLOAT32, {4}), Chunk(f32x4)})},
      {"valid_two_chunks",
       Frame(kValidSession, {Header("m", DType::DTYPE_FLOAT64, {2, 1}), Chunk(std::string(5, 'a')),
                             Chunk(std::string(11, 'b'))})},
      {"valid_empty", Frame(kValidSession, {Header("e", DType::DTYPE_INT32, {3, 0})})},
      {"valid_0d",
       Frame(kValidSession, {Header("s", DType::DTYPE_BOOL, {}), Chunk(std::string(1, '\x01'))})},
      {"valid_abort", Frame(kValidSession | kAbort,
                            {Header("x", DType::DTYPE_UINT8, {8}), Chunk(std::string(4, 'z'))})},
      {"short", Frame(kValidSession, {Header("x", DType::DTYPE_FLOAT32, {4}), Chunk("abc")})},
      {"long", Frame(kValidSession, {Header("x", DType::DTYPE_INT8, {2}), Chunk("abc")})},
      {"two_headers", Frame(kValidSession, {Header("x", DType::DTYPE_INT8, {1}),
                                            Header("y", DType::DTYPE_INT8, {1})})},
      {"chunk_first", Frame(kValidSession, {Chunk("abcd")})},
      {"unknown_session", Frame(0, {Header("x", DType::DTYPE_INT8, {1}), Chunk("a")})},
      {"over_quota", Frame(kValidSession, {Header("big", DType::DTYPE_FLOAT32, {1 << 20})})},
      {"huge_shape",
       Frame(kValidSession, {Header("h", DType::DTYPE_FLOAT64, {int64_t{1} << 40, 1 << 30})})},
      {"bad_name", Frame(kValidSession, {Header("bad name/..", DType::DTYPE_INT8, {1})})},
      {"no_dtype", Frame(kValidSession, {Header("x", DType::DTYPE_UNSPECIFIED, {1})})},
      {"negative_dim", Frame(kValidSession, {Header("x", DType::DTYPE_INT8, {-1})})},
      {"undecodable", Frame(kValidSession, {std::string("\x0a\xff\xff\xff", 4)})},
      {"empty_message", Frame(kValidSession, {Header("x", DType::DTYPE_INT8, {1}), ""})},
  };
  for (const auto& [name, bytes] : seeds) {
    if (!WriteFile(dir / name, bytes)) return 1;
  }
  std::printf("make_seeds: %zu upload streams in %s\n", seeds.size(), dir.c_str());
  return 0;
}

int WriteTextRequests(const fs::path& dir, const char* prefix, const char* const* texts, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    gpuflow::v1::ExecuteRequest request;
    if (!google::protobuf::TextFormat::ParseFromString(texts[i], &request)) {
      std::fprintf(stderr, "make_seeds: text request %s%zu does not parse\n", prefix, i);
      return 1;
    }
    if (!WriteFile(dir / absl::StrCat(prefix, i), request.SerializeAsString())) return 1;
  }
  return 0;
}

int WriteGraphSeeds(const fs::path& json_dir, const fs::path& dir) {
  int n = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(json_dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    absl::StatusOr<gpuflow::v1::ExecuteRequest> request =
        gpuflow::client::ParseGraphJson(text, entry.path().filename().string());
    if (!request.ok()) continue;  // the invalid JSON seeds
    if (!WriteFile(dir / absl::StrCat("json_", entry.path().stem().string()),
                   request->SerializeAsString())) {
      return 1;
    }
    ++n;
  }
  if (WriteTextRequests(dir, "text_", kTextRequests, std::size(kTextRequests)) != 0) return 1;
  n += static_cast<int>(std::size(kTextRequests));
  std::printf("make_seeds: %d requests in %s\n", n, dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds <corpus_dir>\n");
    return 2;
  }
  const fs::path corpus(argv[1]);
  fs::create_directories(corpus / "graph_fuzzer");
  fs::create_directories(corpus / "upload_stream_fuzzer");
  fs::create_directories(corpus / "execute_fuzzer");
  if (WriteGraphSeeds(corpus / "graph_json_fuzzer", corpus / "graph_fuzzer") != 0) return 1;
  if (WriteTextRequests(corpus / "execute_fuzzer", "exec_", kExecuteTextRequests,
                        std::size(kExecuteTextRequests)) != 0) {
    return 1;
  }
  std::printf("make_seeds: %zu requests in %s\n", std::size(kExecuteTextRequests),
              (corpus / "execute_fuzzer").c_str());
  return WriteUploadSeeds(corpus / "upload_stream_fuzzer");
}

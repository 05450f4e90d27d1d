// The graph IR as received from a client (before validation): nodes in
// topological order, each an op name, inputs and typed attributes. See
// docs/ops.md for every op. No protobuf here: server/ converts the wire
// message into these types.
//
//   Graph g;
//   g.nodes.push_back({.id = "y", .op = "add",
//                      .inputs = {Input::Array("x"), Input::FromScalar(Scalar::Int(1))}});
//   absl::StatusOr<ValidatedGraph> v = ValidateGraph(g, lookup, limits);  // validate.h
#ifndef GPUFLOW_ENGINE_IR_GRAPH_H_
#define GPUFLOW_ENGINE_IR_GRAPH_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/ir/dtype.h"
#include "engine/ir/shape.h"

namespace gpuflow {

// A Python-style scalar literal. Without `dtype` it is "weak" (NumPy 2):
// `int8_array + 1` stays int8. With `dtype` it is a strong 0-d array of that
// dtype (numpy.float32(2.0)). A complex scalar keeps its real part in
// float_value and its imaginary part in imag_value.
struct Scalar {
  enum class Kind : uint8_t { kBool, kInt, kUInt, kFloat, kComplex };
  Kind kind = Kind::kInt;
  bool bool_value = false;
  int64_t int_value = 0;
  uint64_t uint_value = 0;
  double float_value = 0;
  double imag_value = 0;
  std::optional<DType> dtype;

  static Scalar Bool(bool v) {
    Scalar s;
    s.kind = Kind::kBool;
    s.bool_value = v;
    return s;
  }
  static Scalar Int(int64_t v) {
    Scalar s;
    s.kind = Kind::kInt;
    s.int_value = v;
    return s;
  }
  static Scalar UInt(uint64_t v) {
    Scalar s;
    s.kind = Kind::kUInt;
    s.uint_value = v;
    return s;
  }
  static Scalar Float(double v) {
    Scalar s;
    s.kind = Kind::kFloat;
    s.float_value = v;
    return s;
  }
  static Scalar Complex(double real, double imag) {
    Scalar s;
    s.kind = Kind::kComplex;
    s.float_value = real;
    s.imag_value = imag;
    return s;
  }
};

// A small array carried in the request: dtype, shape and exactly
// num_elements * itemsize bytes, C-contiguous, little-endian.
struct LiteralArray {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::string bytes;
};

struct Input {
  enum class Kind : uint8_t { kNode, kArray, kScalar, kLiteral };
  Kind kind = Kind::kNode;
  // Node id (kNode) or session array name (kArray).
  std::string name;
  Scalar scalar;         // kScalar
  LiteralArray literal;  // kLiteral

  static Input Node(std::string id) { return Make(Kind::kNode, std::move(id)); }
  static Input Array(std::string name) { return Make(Kind::kArray, std::move(name)); }
  static Input FromScalar(Scalar s) {
    Input in = Make(Kind::kScalar, "");
    in.scalar = s;
    return in;
  }
  static Input FromLiteral(LiteralArray l) {
    Input in = Make(Kind::kLiteral, "");
    in.literal = std::move(l);
    return in;
  }

 private:
  static Input Make(Kind kind, std::string name) {
    Input in;
    in.kind = kind;
    in.name = std::move(name);
    return in;
  }
};

// Attribute types; the order matches AttrValue's alternatives.
enum class AttrType : uint8_t { kInt, kFloat, kBool, kString, kDType, kInts, kFloats, kStrings };

using AttrValue = std::variant<int64_t, double, bool, std::string, DType, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>>;
using AttrMap = std::map<std::string, AttrValue, std::less<>>;

// "int", "float", ... as listed in ServerInfo.
absl::string_view AttrTypeName(AttrType type);

// The longest node id or array name (graph.proto: [A-Za-z0-9_.:-], 1 to 128
// characters).
inline constexpr size_t kMaxNameBytes = 128;

// OK when `name` is a valid node id or array name: 1 to kMaxNameBytes
// characters of [A-Za-z0-9_.:-]. INVALID_ARGUMENT otherwise, `what` naming
// it ("node id must have 1 to 128 characters, got 129"; "array name
// '../x' may only use [A-Za-z0-9_.:-]", the name quoted by Echo).
absl::Status CheckName(absl::string_view name, absl::string_view what);
inline AttrType TypeOf(const AttrValue& v) { return static_cast<AttrType>(v.index()); }

// Attribute `name` of `attrs` as T, or `fallback` when it is absent or of
// another type (a double attribute may hold an int, as float attributes do).
template <typename T>
T AttrOr(const AttrMap& attrs, absl::string_view name, T fallback) {
  const auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  if constexpr (std::is_same_v<T, double>) {
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  }
  return fallback;
}

struct Node {
  std::string id;
  std::string op;
  std::vector<Input> inputs;
  AttrMap attrs;
};

struct Graph {
  std::vector<Node> nodes;
};

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_IR_GRAPH_H_

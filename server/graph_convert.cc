#include "server/graph_convert.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/proto_convert.h"

namespace gpuflow::server {

namespace {

absl::Status NodeError(const v1::Node& node, absl::string_view reason) {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node.id(), "' (", node.op(), "): ", reason));
}

absl::StatusOr<AttrValue> AttrFromProto(const v1::AttrValue& proto) {
  switch (proto.value_case()) {
    case v1::AttrValue::kIntValue:
      return AttrValue(proto.int_value());
    case v1::AttrValue::kFloatValue:
      return AttrValue(proto.float_value());
    case v1::AttrValue::kBoolValue:
      return AttrValue(proto.bool_value());
    case v1::AttrValue::kStringValue:
      return AttrValue(proto.string_value());
    case v1::AttrValue::kDtypeValue: {
      absl::StatusOr<DType> dtype = DTypeFromProto(proto.dtype_value());
      if (!dtype.ok()) return dtype.status();
      return AttrValue(*dtype);
    }
    case v1::AttrValue::kInts:
      return AttrValue(
          std::vector<int64_t>(proto.ints().values().begin(), proto.ints().values().end()));
    case v1::AttrValue::kFloats:
      return AttrValue(
          std::vector<double>(proto.floats().values().begin(), proto.floats().values().end()));
    case v1::AttrValue::kStrings:
      return AttrValue(std::vector<std::string>(proto.strings().values().begin(),
                                                proto.strings().values().end()));
    case v1::AttrValue::VALUE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("attribute has no value");
}

}  // namespace

absl::StatusOr<Scalar> ScalarFromProto(const v1::Scalar& proto) {
  Scalar s;
  switch (proto.value_case()) {
    case v1::Scalar::kBoolValue:
      s = Scalar::Bool(proto.bool_value());
      break;
    case v1::Scalar::kIntValue:
      s = Scalar::Int(proto.int_value());
      break;
    case v1::Scalar::kUintValue:
      s = Scalar::UInt(proto.uint_value());
      break;
    case v1::Scalar::kFloatValue:
      s = Scalar::Float(proto.float_value());
      break;
    case v1::Scalar::kComplexValue:
      s = Scalar::Complex(proto.complex_value().real(), proto.complex_value().imag());
      break;
    case v1::Scalar::VALUE_NOT_SET:
      return absl::InvalidArgumentError("scalar has no value");
  }
  if (proto.dtype() != v1::DTYPE_UNSPECIFIED) {
    absl::StatusOr<DType> dtype = DTypeFromProto(proto.dtype());
    if (!dtype.ok()) return dtype.status();
    s.dtype = *dtype;
  }
  return s;
}

absl::StatusOr<Graph> GraphFromProto(const v1::Graph& proto) {
  Graph graph;
  graph.nodes.reserve(proto.nodes_size());
  for (const v1::Node& pn : proto.nodes()) {
    Node node;
    node.id = pn.id();
    node.op = pn.op();
    for (int i = 0; i < pn.inputs_size(); ++i) {
      const v1::Input& in = pn.inputs(i);
      switch (in.source_case()) {
        case v1::Input::kNode:
          node.inputs.push_back(Input::Node(in.node()));
          break;
        case v1::Input::kArray:
          node.inputs.push_back(Input::Array(in.array()));
          break;
        case v1::Input::kScalar: {
          absl::StatusOr<Scalar> s = ScalarFromProto(in.scalar());
          if (!s.ok()) return NodeError(pn, absl::StrCat("input ", i, ": ", s.status().message()));
          node.inputs.push_back(Input::FromScalar(*s));
          break;
        }
        case v1::Input::kLiteral: {
          const v1::InlineArray& lit = in.literal();
          absl::StatusOr<DType> dtype = DTypeFromProto(lit.dtype());
          if (!dtype.ok()) {
            return NodeError(pn, absl::StrCat("input ", i, ": ", dtype.status().message()));
          }
          absl::StatusOr<Shape> shape = ShapeFromProto(lit.shape());
          if (!shape.ok()) {
            return NodeError(pn, absl::StrCat("input ", i, ": ", shape.status().message()));
          }
          node.inputs.push_back(Input::FromLiteral({*dtype, *std::move(shape), lit.data()}));
          break;
        }
        case v1::Input::SOURCE_NOT_SET:
          return NodeError(pn, absl::StrCat("input ", i, " has no source"));
      }
    }
    for (const auto& [name, value] : pn.attrs()) {
      absl::StatusOr<AttrValue> attr = AttrFromProto(value);
      if (!attr.ok()) {
        return NodeError(pn, absl::StrCat("attribute '", name, "': ", attr.status().message()));
      }
      node.attrs.emplace(name, *std::move(attr));
    }
    graph.nodes.push_back(std::move(node));
  }
  return graph;
}

void FillOpInfos(const OpRegistry& registry, google::protobuf::RepeatedPtrField<v1::OpInfo>* out) {
  for (const OpDef& op : registry.ops()) {
    v1::OpInfo* info = out->Add();
    info->set_name(op.name);
    info->set_family(std::string(OpFamilyName(op.family)));
    info->set_min_inputs(op.min_inputs);
    info->set_max_inputs(op.max_inputs);
    info->set_doc(op.doc);
    for (const AttrDef& attr : op.attrs) {
      v1::AttrInfo* a = info->add_attrs();
      a->set_name(attr.name);
      a->set_type(std::string(AttrTypeName(attr.type)));
      a->set_required(attr.required);
      a->set_doc(attr.doc);
    }
  }
}

}  // namespace gpuflow::server

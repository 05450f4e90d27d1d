#include "clients/cpp/graph_json.h"

#include <google/protobuf/util/json_util.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpuflow::client {
namespace {

// ---------------------------------------------------------------- a JSON tree with positions
//
// protobuf's parser reports the field path of an error but not where it is
// in the text, and accepts some non-JSON (trailing commas). This strict
// parser runs first: it reports syntax errors with a line and column, and
// keeps every value's position so that protobuf's field paths can be turned
// into one.

struct Position {
  int line = 1;
  int column = 1;
};

struct JsonValue {
  enum class Kind { kObject, kArray, kString, kNumber, kLiteral };
  Kind kind = Kind::kLiteral;
  Position position;
  std::string text;  // the string's value, or the number's / literal's token
  // Objects: keys in order, with the key's position.
  std::vector<std::pair<std::string, Position>> keys;
  // Objects: the member values (parallel to keys); arrays: the elements.
  std::vector<JsonValue> children;

  const JsonValue* Member(absl::string_view key, Position* key_position = nullptr) const;
};

// "float_value" and "floatValue" name the same field (the mapping accepts
// both spellings).
std::string LowerCamel(absl::string_view name) {
  std::string out;
  bool upper = false;
  for (char c : name) {
    if (c == '_') {
      upper = true;
    } else {
      out.push_back(upper ? absl::ascii_toupper(static_cast<unsigned char>(c)) : c);
      upper = false;
    }
  }
  return out;
}

const JsonValue* JsonValue::Member(absl::string_view key, Position* key_position) const {
  if (kind != Kind::kObject) return nullptr;
  const std::string wanted = LowerCamel(key);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (LowerCamel(keys[i].first) == wanted) {
      if (key_position != nullptr) *key_position = keys[i].second;
      return &children[i];
    }
  }
  return nullptr;
}

class JsonParser {
 public:
  explicit JsonParser(absl::string_view text) : text_(text) {}

  // The whole text as one value, or INVALID_ARGUMENT "LINE:COLUMN: what".
  absl::StatusOr<JsonValue> Parse() {
    JsonValue value;
    if (absl::Status status = ParseValue(value, 0); !status.ok()) return status;
    SkipSpace();
    if (pos_ < text_.size()) return Error("unexpected text after the JSON value");
    return value;
  }

 private:
  // Deeper than any sensible graph file; keeps the recursion bounded.
  static constexpr int kMaxDepth = 128;

  Position Here() const { return position_; }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool AtEnd() const { return pos_ >= text_.size(); }
  void Advance() {
    if (text_[pos_] == '\n') {
      ++position_.line;
      position_.column = 1;
    } else {
      ++position_.column;
    }
    ++pos_;
  }
  void SkipSpace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r')) {
      Advance();
    }
  }
  absl::Status Error(absl::string_view what) const { return ErrorAt(position_, what); }
  static absl::Status ErrorAt(Position at, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(at.line, ":", at.column, ": ", what));
  }
  std::string Found() const {
    if (AtEnd()) return "the end of the text";
    return absl::StrCat("'", text_.substr(pos_, 1), "'");
  }

  absl::Status ParseValue(JsonValue& value, int depth) {
    SkipSpace();
    value.position = Here();
    if (depth > kMaxDepth) return Error("JSON nested too deeply");
    switch (Peek()) {
      case '{':
        return ParseObject(value, depth);
      case '[':
        return ParseArray(value, depth);
      case '"':
        value.kind = JsonValue::Kind::kString;
        return ParseString(value.text);
      default:
        break;
    }
    if (Peek() == '-' || absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
      value.kind = JsonValue::Kind::kNumber;
      return ParseNumber(value.text);
    }
    for (absl::string_view literal : {"true", "false", "null"}) {
      if (absl::StartsWith(text_.substr(pos_), literal)) {
        value.kind = JsonValue::Kind::kLiteral;
        value.text = std::string(literal);
        for (size_t i = 0; i < literal.size(); ++i) Advance();
        return absl::OkStatus();
      }
    }
    return Error(absl::StrCat("expected a JSON value, found ", Found()));
  }

  absl::Status ParseObject(JsonValue& value, int depth) {
    value.kind = JsonValue::Kind::kObject;
    Advance();  // '{'
    SkipSpace();
    if (Peek() == '}') {
      Advance();
      return absl::OkStatus();
    }
    absl::flat_hash_set<std::string> seen;
    while (true) {
      SkipSpace();
      const Position key_position = Here();
      if (Peek() != '"') {
        return Error(absl::StrCat("expected a quoted member name, found ", Found(),
                                  Peek() == '}' ? " (JSON allows no trailing comma)" : ""));
      }
      std::string key;
      if (absl::Status status = ParseString(key); !status.ok()) return status;
      if (!seen.insert(key).second) {
        return ErrorAt(key_position, absl::StrCat("the member \"", key, "\" appears twice"));
      }
      SkipSpace();
      if (Peek() != ':') {
        return Error(absl::StrCat("expected ':' after \"", key, "\", found ", Found()));
      }
      Advance();
      value.keys.emplace_back(std::move(key), key_position);
      value.children.emplace_back();
      if (absl::Status status = ParseValue(value.children.back(), depth + 1); !status.ok()) {
        return status;
      }
      SkipSpace();
      if (Peek() == ',') {
        Advance();
        continue;
      }
      if (Peek() == '}') {
        Advance();
        return absl::OkStatus();
      }
      return Error(absl::StrCat("expected ',' or '}' after a member, found ", Found()));
    }
  }

  absl::Status ParseArray(JsonValue& value, int depth) {
    value.kind = JsonValue::Kind::kArray;
    Advance();  // '['
    SkipSpace();
    if (Peek() == ']') {
      Advance();
      return absl::OkStatus();
    }
    while (true) {
      SkipSpace();
      if (Peek() == ']')
        return Error("expected a value, found ']' (JSON allows no trailing comma)");
      value.children.emplace_back();
      if (absl::Status status = ParseValue(value.children.back(), depth + 1); !status.ok()) {
        return status;
      }
      SkipSpace();
      if (Peek() == ',') {
        Advance();
        continue;
      }
      if (Peek() == ']') {
        Advance();
        return absl::OkStatus();
      }
      return Error(absl::StrCat("expected ',' or ']' in an array, found ", Found()));
    }
  }

  // A string's value (escapes decoded; \u escapes written as UTF-8, which is
  // enough for names: the tree is only used to find positions).
  absl::Status ParseString(std::string& out) {
    Advance();  // opening quote
    while (true) {
      if (AtEnd()) return Error("unterminated string");
      const char c = Peek();
      if (c == '"') {
        Advance();
        return absl::OkStatus();
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        return Error("control character in a string (write it as an escape such as \\n)");
      }
      if (c != '\\') {
        out.push_back(c);
        Advance();
        continue;
      }
      const Position escape_at = Here();
      Advance();
      const char escape = Peek();
      switch (escape) {
        case '"':
        case '\\':
        case '/':
          out.push_back(escape);
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          uint32_t code = 0;
          for (int i = 0; i < 4; ++i) {
            Advance();
            const char h = Peek();
            if (!absl::ascii_isxdigit(static_cast<unsigned char>(h))) {
              return Error("expected four hex digits after \\u");
            }
            code =
                code * 16 + (absl::ascii_isdigit(static_cast<unsigned char>(h))
                                 ? h - '0'
                                 : absl::ascii_tolower(static_cast<unsigned char>(h)) - 'a' + 10);
          }
          if (code < 0x80) {
            out.push_back(static_cast<char>(code));
          } else if (code < 0x800) {
            out.push_back(static_cast<char>(0xc0 | (code >> 6)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
          } else {
            out.push_back(static_cast<char>(0xe0 | (code >> 12)));
            out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
            out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
          }
          break;
        }
        default:
          return ErrorAt(escape_at,
                         absl::StrCat("invalid escape \\", text_.substr(pos_, 1), " in a string"));
      }
      Advance();
    }
  }

  absl::Status ParseNumber(std::string& out) {
    const size_t start = pos_;
    auto digits = [&] {
      size_t n = 0;
      while (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
        Advance();
        ++n;
      }
      return n;
    };
    if (Peek() == '-') Advance();
    if (Peek() == '0') {
      Advance();
      if (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
        return Error("numbers must not have leading zeros");
      }
    } else if (digits() == 0) {
      return Error("expected a digit");
    }
    if (Peek() == '.') {
      Advance();
      if (digits() == 0) return Error("expected a digit after '.'");
    }
    if (Peek() == 'e' || Peek() == 'E') {
      Advance();
      if (Peek() == '+' || Peek() == '-') Advance();
      if (digits() == 0) return Error("expected a digit in the exponent");
    }
    out = std::string(text_.substr(start, pos_ - start));
    return absl::OkStatus();
  }

  absl::string_view text_;
  size_t pos_ = 0;
  Position position_;
};

// ---------------------------------------------------------------- protobuf paths to positions

// One step of a protobuf field path: "nodes[0]" -> {"nodes", {0}}.
struct PathStep {
  std::string field;
  std::vector<int> indices;
};

std::vector<PathStep> SplitPath(absl::string_view path) {
  std::vector<PathStep> steps;
  for (absl::string_view part : absl::StrSplit(path, '.', absl::SkipEmpty())) {
    PathStep step;
    const size_t bracket = part.find('[');
    step.field = std::string(part.substr(0, bracket));
    for (absl::string_view rest = bracket == absl::string_view::npos ? "" : part.substr(bracket);
         absl::ConsumePrefix(&rest, "[");) {
      const size_t close = rest.find(']');
      int index = 0;
      if (close == absl::string_view::npos || !absl::SimpleAtoi(rest.substr(0, close), &index)) {
        break;
      }
      step.indices.push_back(index);
      rest.remove_prefix(close + 1);
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

// The value at `path`, or its deepest ancestor present in the text. A map
// field's "[i].value" is the i-th member's value.
const JsonValue* Find(const JsonValue& root, const std::vector<PathStep>& path) {
  const JsonValue* at = &root;
  bool in_map_entry = false;
  for (const PathStep& step : path) {
    if (in_map_entry && (step.field == "value" || step.field == "key")) {
      in_map_entry = false;
      continue;
    }
    in_map_entry = false;
    const JsonValue* next = at->Member(step.field);
    if (next == nullptr) return at;
    at = next;
    for (int index : step.indices) {
      if (index < 0 || index >= static_cast<int>(at->children.size())) return at;
      in_map_entry = at->kind == JsonValue::Kind::kObject;
      at = &at->children[index];
    }
  }
  return at;
}

// protobuf's paths name map entries by index ("attrs[0].value"); people name
// them by key ("attrs.axes").
std::string ReadablePath(const JsonValue& root, const std::vector<PathStep>& path) {
  std::string out;
  const JsonValue* at = &root;
  bool in_map_entry = false;
  for (const PathStep& step : path) {
    if (in_map_entry && (step.field == "value" || step.field == "key")) {
      in_map_entry = false;
      continue;
    }
    in_map_entry = false;
    if (!out.empty()) out += ".";
    out += step.field;
    const JsonValue* next = at == nullptr ? nullptr : at->Member(step.field);
    at = next;
    for (int index : step.indices) {
      if (at != nullptr && at->kind == JsonValue::Kind::kObject && index >= 0 &&
          index < static_cast<int>(at->keys.size())) {
        absl::StrAppend(&out, ".", at->keys[index].first);
        in_map_entry = true;
      } else {
        absl::StrAppend(&out, "[", index, "]");
      }
      at = at != nullptr && index >= 0 && index < static_cast<int>(at->children.size())
               ? &at->children[index]
               : nullptr;
    }
  }
  return out;
}

std::string DTypeNames() {
  const google::protobuf::EnumDescriptor* descriptor = v1::DType_descriptor();
  std::vector<std::string> names;
  for (int i = 0; i < descriptor->value_count(); ++i) {
    if (descriptor->value(i)->number() != 0) names.push_back(descriptor->value(i)->name());
  }
  return absl::StrJoin(names, ", ");
}

absl::Status ErrorAt(absl::string_view source, Position at, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ":", at.line, ":", at.column, ": ", what));
}

// Turns protobuf's "(graph.nodes[0]) inputz: Cannot find field." into
// "SOURCE:LINE:COLUMN: graph.nodes[0]: unknown field "inputz"".
absl::Status DescribeProtobufError(absl::string_view source, const JsonValue& root,
                                   absl::string_view message) {
  std::string path_text;
  absl::string_view rest = message;
  if (absl::ConsumePrefix(&rest, "(")) {
    const size_t close = rest.find(')');
    if (close != absl::string_view::npos) {
      path_text = std::string(rest.substr(0, close));
      rest.remove_prefix(close + 1);
    }
  }
  rest = absl::StripAsciiWhitespace(absl::StripPrefix(rest, ":"));
  std::vector<PathStep> path = SplitPath(path_text);

  std::string what;
  if (absl::EndsWith(rest, ": Cannot find field.")) {
    const std::string field(rest.substr(0, rest.size() - std::strlen(": Cannot find field.")));
    what = absl::StrCat("unknown field \"", field, "\"");
    const JsonValue* parent = Find(root, path);
    Position position = parent->position;
    parent->Member(field, &position);
    const std::string readable = ReadablePath(root, path);
    return ErrorAt(source, position, readable.empty() ? what : absl::StrCat(readable, ": ", what));
  } else {
    what = absl::StrReplaceAll(rest, {{"for type TYPE_DOUBLE", "(expected a number)"},
                                      {"for type TYPE_FLOAT", "(expected a number)"},
                                      {"for type TYPE_INT64", "(expected an integer)"},
                                      {"for type TYPE_INT32", "(expected an integer)"},
                                      {"for type TYPE_UINT64", "(expected an integer >= 0)"},
                                      {"for type TYPE_BOOL", "(expected true or false)"},
                                      {"for type TYPE_STRING", "(expected a string)"},
                                      {"for type TYPE_BYTES", "(expected base64 bytes)"},
                                      {"type.googleapis.com/", ""}});
    if (absl::StrContains(what, "for type gpuflow.v1.DType")) {
      what = absl::StrCat(absl::StrReplaceAll(what, {{"for type gpuflow.v1.DType", ""}}),
                          "(expected one of ", DTypeNames(), ")");
    }
    // "invalid value oneof field 'source' is already set. Cannot set 'array'
    // for type oneof"
    if (const size_t at = what.find("oneof field '"); at != std::string::npos) {
      std::vector<std::string> quoted = absl::StrSplit(what.substr(at), '\'');
      if (quoted.size() >= 5) {
        what = absl::StrCat("\"", quoted[3], "\" and another field of the oneof \"", quoted[1],
                            "\" are both set (set exactly one)");
      }
    }
  }
  const Position position = Find(root, path)->position;
  const std::string readable = ReadablePath(root, path);
  if (readable.empty()) return ErrorAt(source, position, what);
  return ErrorAt(source, position, absl::StrCat(readable, ": ", what));
}

// The checks the protobuf mapping cannot express.
absl::Status CheckRequest(absl::string_view source, const JsonValue& root,
                          const v1::ExecuteRequest& request) {
  Position position = root.position;
  if (root.Member("session_id", &position) != nullptr) {
    return ErrorAt(source, position,
                   "sessionId: a graph file names no session (use --session, or "
                   "GPUFLOW_SESSION)");
  }
  if (request.graph().nodes().empty()) {
    const JsonValue* graph = root.Member("graph", &position);
    return ErrorAt(source, graph != nullptr ? position : root.position,
                   "graph.nodes: the graph has no nodes");
  }
  absl::flat_hash_set<std::string> ids;
  for (const v1::Node& node : request.graph().nodes()) ids.insert(node.id());
  if (request.outputs().empty()) {
    root.Member("outputs", &position);
    return ErrorAt(source, position,
                   "outputs: no outputs; add e.g. \"outputs\": [{\"node\": \"y\", "
                   "\"returnInline\": true}]");
  }
  for (int i = 0; i < request.outputs_size(); ++i) {
    const v1::OutputSpec& output = request.outputs(i);
    const Position at = Find(root, {{"outputs", {i}}})->position;
    const std::string where = absl::StrCat("outputs[", i, "]");
    if (output.node().empty()) {
      return ErrorAt(source, at, absl::StrCat(where, ".node: missing"));
    }
    if (!ids.contains(output.node())) {
      return ErrorAt(
          source, Find(root, {{"outputs", {i}}, {"node", {}}})->position,
          absl::StrCat(where, ".node: \"", output.node(), "\" is not a node id of the graph"));
    }
    if (output.store_as().empty() && !output.return_inline()) {
      return ErrorAt(source, at,
                     absl::StrCat(where,
                                  ": set \"storeAs\" (keep it in the session), "
                                  "\"returnInline\": true (return it), or both"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::ExecuteRequest> ParseGraphJson(absl::string_view json,
                                                  absl::string_view source) {
  absl::StatusOr<JsonValue> root = JsonParser(json).Parse();
  if (!root.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":", root.status().message()));
  }
  if (root->kind != JsonValue::Kind::kObject) {
    return ErrorAt(source, root->position, "expected a JSON object with \"graph\" and \"outputs\"");
  }
  v1::ExecuteRequest request;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status =
      google::protobuf::util::JsonStringToMessage(std::string(json), &request, options);
  if (!status.ok()) {
    return DescribeProtobufError(source, *root, std::string(status.message()));
  }
  if (absl::Status checked = CheckRequest(source, *root, request); !checked.ok()) return checked;
  return request;
}

absl::StatusOr<v1::ExecuteRequest> ReadGraphJsonFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int error_number = errno;
    return absl::Status(absl::ErrnoToStatusCode(error_number),
                        absl::StrCat("cannot open ", path, ": ", std::strerror(error_number)));
  }
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return ParseGraphJson(text, path);
}

v1::BenchmarkRequest ToBenchmarkRequest(const v1::ExecuteRequest& request) {
  v1::BenchmarkRequest out;
  *out.mutable_graph() = request.graph();
  for (const v1::OutputSpec& output : request.outputs()) out.add_output_nodes(output.node());
  out.set_allow_tf32(request.allow_tf32());
  return out;
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = false;
  // Serialising a valid message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

}  // namespace gpuflow::client

#include "clients/cpp/graph_json.h"

#include <google/protobuf/util/message_differencer.h>

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::client {
namespace {

using ::gpuflow::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kGraph[] = R"json({
  "graph": {"nodes": [
    {"id": "sq", "op": "mul", "inputs": [{"array": "x"}, {"array": "x"}]},
    {"id": "p1", "op": "add", "inputs": [{"node": "sq"}, {"scalar": {"floatValue": 1}}]},
    {"id": "y", "op": "sqrt", "inputs": [{"node": "p1"}]},
    {"id": "s", "op": "sum", "inputs": [{"node": "y"}],
     "attrs": {"axes": {"ints": {"values": [-1]}}, "keepdims": {"boolValue": true}}}
  ]},
  "outputs": [{"node": "y", "returnInline": true}, {"node": "s", "store_as": "total"}],
  "allowTf32": true
})json";

TEST(GraphJsonTest, ParsesTheCanonicalMapping) {
  ASSERT_OK_AND_ASSIGN(v1::ExecuteRequest request, ParseGraphJson(kGraph));
  ASSERT_EQ(request.graph().nodes_size(), 4);
  EXPECT_EQ(request.graph().nodes(0).inputs(1).array(), "x");
  EXPECT_EQ(request.graph().nodes(1).inputs(1).scalar().float_value(), 1.0);
  EXPECT_THAT(request.graph().nodes(3).attrs().at("axes").ints().values(), ElementsAre(-1));
  EXPECT_TRUE(request.graph().nodes(3).attrs().at("keepdims").bool_value());
  ASSERT_EQ(request.outputs_size(), 2);
  EXPECT_TRUE(request.outputs(0).return_inline());
  EXPECT_EQ(request.outputs(1).store_as(), "total");  // the proto field name works too
  EXPECT_TRUE(request.allow_tf32());
  EXPECT_TRUE(request.session_id().empty());
}

TEST(GraphJsonTest, ToBenchmarkRequestKeepsGraphAndOutputNodes) {
  ASSERT_OK_AND_ASSIGN(v1::ExecuteRequest request, ParseGraphJson(kGraph));
  const v1::BenchmarkRequest bench = ToBenchmarkRequest(request);
  EXPECT_EQ(bench.graph().nodes_size(), 4);
  EXPECT_THAT(bench.output_nodes(), ElementsAre("y", "s"));
  EXPECT_TRUE(bench.allow_tf32());
  EXPECT_FALSE(bench.has_n_warmup());
}

TEST(GraphJsonTest, ToJsonParsesBack) {
  ASSERT_OK_AND_ASSIGN(v1::ExecuteRequest request, ParseGraphJson(kGraph));
  const std::string json = ToJson(request);
  EXPECT_THAT(json, HasSubstr("\"returnInline\": true"));
  ASSERT_OK_AND_ASSIGN(v1::ExecuteRequest back, ParseGraphJson(json));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(back, request)) << json;
}

struct ErrorCase {
  std::string name;
  std::string json;
  std::string message;  // the whole "SOURCE:LINE:COLUMN: ..." prefix and text, or a part
};

class GraphJsonErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(GraphJsonErrorTest, SaysWhereAndWhat) {
  EXPECT_THAT(ParseGraphJson(GetParam().json, "g.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().message)));
}

constexpr char kOutputs[] = R"(, "outputs": [{"node": "a", "returnInline": true}]})";

INSTANTIATE_TEST_SUITE_P(
    Cases, GraphJsonErrorTest,
    ::testing::Values(
        ErrorCase{"Empty", "", "g.json:1:1: expected a JSON value, found the end of the text"},
        ErrorCase{"NotAnObject", "[1, 2]", "g.json:1:1: expected a JSON object"},
        ErrorCase{"TrailingCommaInObject", "{\"graph\": {},\n}",
                  "g.json:2:1: expected a quoted member name, found '}' (JSON allows no trailing "
                  "comma)"},
        ErrorCase{"TrailingCommaInArray", "{\"graph\": {\"nodes\": [{},\n  ]}}",
                  "g.json:2:3: expected a value, found ']'"},
        ErrorCase{"MissingColon", "{\"graph\" {}}", "g.json:1:10: expected ':' after \"graph\""},
        ErrorCase{"Comment", "{\"graph\": {} // nodes\n}", "g.json:1:14: expected ',' or '}'"},
        ErrorCase{"UnterminatedString", "{\"graph", "g.json:1:8: unterminated string"},
        ErrorCase{"BadEscape", "{\"gr\\aph\": 1}", "g.json:1:5: invalid escape \\a in a string"},
        ErrorCase{"LeadingZero", "{\"profile\": 01}",
                  "g.json:1:14: numbers must not have leading zeros"},
        ErrorCase{"TextAfter", "{} {}", "g.json:1:4: unexpected text after the JSON value"},
        ErrorCase{"DuplicateKey", "{\"graph\": {},\n \"graph\": {}}",
                  "g.json:2:2: the member \"graph\" appears twice"},
        ErrorCase{"UnknownTopLevelField", "{\"graf\": {}}", "g.json:1:2: unknown field \"graf\""},
        ErrorCase{
            "UnknownNestedField",
            "{\"graph\": {\"nodes\": [\n  {\"id\": \"a\", \"op\": \"add\",\n   \"inputz\": []}]}}",
            "g.json:3:4: graph.nodes[0]: unknown field \"inputz\""},
        ErrorCase{"WrongType", "{\"graph\": {\"nodes\": [{\"id\": \"a\", \"op\": 3}]}}",
                  "g.json:1:40: graph.nodes[0].op: invalid value 3 (expected a string)"},
        ErrorCase{
            "BadDType",
            "{\"graph\": {\"nodes\": [{\"id\": \"a\", \"op\": \"cast\",\n \"attrs\": {\"dtype\": "
            "{\"dtypeValue\": \"float32\"}}}]}}",
            "g.json:2:36: graph.nodes[0].attrs.dtype.dtype_value: invalid value \"float32\" "
            "(expected one of DTYPE_BOOL, DTYPE_INT8"},
        ErrorCase{"BadIntInMap",
                  "{\"graph\": {\"nodes\": [{\"id\": \"a\", \"op\": \"sum\", \"attrs\": {\n"
                  "  \"keepdims\": {\"boolValue\": true},\n  \"axes\": {\"ints\": {\"values\": [1, "
                  "\"q\"]}}}}]}}",
                  "g.json:3:35: graph.nodes[0].attrs.axes.ints.values[1]: invalid value \"q\" "
                  "(expected an integer)"},
        ErrorCase{"OneofTwice",
                  "{\"graph\": {\"nodes\": [{\"id\": \"a\", \"op\": \"neg\", \"inputs\": [\n"
                  "  {\"node\": \"x\", \"array\": \"y\"}]}]}}",
                  "g.json:2:3: graph.nodes[0].inputs[0]: \"array\" and another field of the oneof "
                  "\"source\" are both set"},
        ErrorCase{
            "SessionId",
            std::string("{\"sessionId\": \"abc\", \"graph\": {\"nodes\": [{\"id\": \"a\"}]}") +
                kOutputs,
            "g.json:1:2: sessionId: a graph file names no session"},
        ErrorCase{"NoNodes", std::string("{\"graph\": {\"nodes\": []}") + kOutputs,
                  "g.json:1:2: graph.nodes: the graph has no nodes"},
        ErrorCase{"NoOutputs", "{\"graph\": {\"nodes\": [{\"id\": \"a\", \"op\": \"neg\"}]}}",
                  "g.json:1:1: outputs: no outputs; add e.g."},
        ErrorCase{"OutputOfUnknownNode",
                  "{\"graph\": {\"nodes\": [{\"id\": \"a\"}]},\n \"outputs\": [{\"node\": \"b\", "
                  "\"storeAs\": \"b\"}]}",
                  "g.json:2:23: outputs[0].node: \"b\" is not a node id of the graph"},
        ErrorCase{
            "OutputWithoutNode",
            "{\"graph\": {\"nodes\": [{\"id\": \"a\"}]},\n \"outputs\": [{\"storeAs\": \"b\"}]}",
            "g.json:2:14: outputs[0].node: missing"},
        ErrorCase{"OutputDoingNothing",
                  "{\"graph\": {\"nodes\": [{\"id\": \"a\"}]},\n \"outputs\": [{\"node\": \"a\"}]}",
                  "g.json:2:14: outputs[0]: set \"storeAs\""}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(GraphJsonTest, ReadFileNamesThePath) {
  const std::string missing = ::testing::TempDir() + "graph_json_test_missing.json";
  EXPECT_THAT(ReadGraphJsonFile(missing),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(missing)));
  const std::string path = ::testing::TempDir() + "graph_json_test.json";
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\n  \"graph\": 1}", f);
  std::fclose(f);
  EXPECT_THAT(ReadGraphJsonFile(path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(path + ":2:12: graph")));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gpuflow::client

// Every gpuflow command, run in-process (RunCli) against the real gpuflowd
// (a child process, CPU backend). tests/python/test_cli.py runs the binary
// itself, with NumPy on the other side of the .npy files.
#include "clients/cpp/cli/cli.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "clients/cpp/array.h"
#include "clients/cpp/npy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

#ifndef GPUFLOW_SERVER_BIN
#error "GPUFLOW_SERVER_BIN must name the gpuflowd binary"
#endif

namespace gpuflow::client::cli {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::ServerProcess;
using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

std::ostream& operator<<(std::ostream& os, const Result& r) {
  return os << "exit " << r.code << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
}

class CliTest : public ::testing::Test {
 protected:
  // A server that does not start fails every test (SetUp), rather than
  // failing SetUpTestSuite, which GoogleTest reports as skipped tests.
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<ServerProcess>> server =
        ServerProcess::Start(GPUFLOW_SERVER_BIN, {"--backend=cpu"});
    if (server.ok()) {
      server_ = std::move(server).value().release();
    } else {
      start_error_ = new std::string(server.status().ToString());
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete start_error_;
    start_error_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(server_, nullptr) << *start_error_; }

  // Runs `gpuflow ARGS` with GPUFLOW_TARGET set to the test server.
  Result Run(const std::vector<std::string>& args, const std::string& session = "") {
    std::ostringstream out, err;
    Result result;
    result.code = RunCli(args, {.target = server_->address(), .session = session}, out, err);
    result.out = out.str();
    result.err = err.str();
    return result;
  }

  // A new session's id, from `gpuflow session create`.
  std::string CreateSession() {
    Result r = Run({"session", "create", "--label=cli_test"});
    EXPECT_EQ(r.code, kExitOk) << r;
    return std::string(absl::StripAsciiWhitespace(r.out));
  }

  static std::string Path(const std::string& name) {
    return ::testing::TempDir() + "cli_test_" + name;
  }
  static void WriteText(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  }

  static ServerProcess* server_;
  static std::string* start_error_;
};

ServerProcess* CliTest::server_ = nullptr;
std::string* CliTest::start_error_ = nullptr;

constexpr char kGraph[] = R"({
  "graph": {"nodes": [
    {"id": "sq", "op": "mul", "inputs": [{"array": "x"}, {"array": "x"}]},
    {"id": "p1", "op": "add", "inputs": [{"node": "sq"}, {"scalar": {"intValue": 1}}]},
    {"id": "y", "op": "sqrt", "inputs": [{"node": "p1"}]},
    {"id": "s", "op": "sum", "inputs": [{"node": "y"}]}]},
  "outputs": [{"node": "y", "returnInline": true}, {"node": "s", "storeAs": "total"}]
})";

TEST_F(CliTest, HelpListsEveryCommand) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--help"}, {"help"}, {"-h"}}) {
    Result r = Run(args);
    EXPECT_EQ(r.code, kExitOk) << r;
    for (const char* command : {"info", "session create", "session close", "upload", "download",
                                "ls", "rm", "run", "bench"}) {
      EXPECT_THAT(r.out, HasSubstr(absl::StrCat("  ", command, " "))) << command;
    }
  }
  Result bare = Run({});
  EXPECT_EQ(bare.code, kExitUsage);
  EXPECT_THAT(bare.err, StartsWith("usage: gpuflow"));
}

TEST_F(CliTest, EveryCommandHasHelp) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"info", "--help"},
                                             {"session", "create", "--help"},
                                             {"help", "session", "close"},
                                             {"upload", "-h"},
                                             {"download", "--help"},
                                             {"run", "--help"},
                                             {"bench", "--help"},
                                             {"ls", "--help"},
                                             {"rm", "--help"}}) {
    Result r = Run(args);
    EXPECT_EQ(r.code, kExitOk) << r;
    EXPECT_THAT(r.out, AllOf(StartsWith("usage: gpuflow "), HasSubstr("--target=HOST:PORT"),
                             HasSubstr("--session=ID")));
  }
  EXPECT_THAT(Run({"run", "--help"}).out, HasSubstr("-o, --output=[NAME=]FILE.npy"));
}

TEST_F(CliTest, BadCommandLinesExitWithUsage) {
  Result unknown = Run({"frobnicate"});
  EXPECT_EQ(unknown.code, kExitUsage);
  EXPECT_THAT(unknown.err, HasSubstr("unknown command 'frobnicate'"));
  Result option = Run({"info", "--verbose"});
  EXPECT_EQ(option.code, kExitUsage);
  EXPECT_THAT(option.err, HasSubstr("unknown option --verbose"));
  Result missing = Run({"upload"});
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_THAT(missing.err, HasSubstr("missing arguments"));
  Result extra = Run({"download", "a", "b", "-o", "x.npy"});
  EXPECT_EQ(extra.code, kExitUsage);
  EXPECT_THAT(extra.err, HasSubstr("unexpected argument 'b'"));
  Result no_output = Run({"download", "a"});
  EXPECT_EQ(no_output.code, kExitUsage);
  EXPECT_THAT(no_output.err, HasSubstr("-o FILE.npy is required"));
  Result no_value = Run({"upload", "x.npy", "--name"});
  EXPECT_EQ(no_value.code, kExitUsage);
  EXPECT_THAT(no_value.err, HasSubstr("--name needs a value"));
  Result session = Run({"session", "open"});
  EXPECT_EQ(session.code, kExitUsage);
  EXPECT_THAT(session.err, HasSubstr("session commands: create, close, info"));
}

TEST_F(CliTest, InfoShowsTheServer) {
  Result r = Run({"info"});
  ASSERT_EQ(r.code, kExitOk) << r;
  EXPECT_THAT(r.out, HasSubstr("backend:   cpu\n"));
  EXPECT_THAT(r.out, HasSubstr("bfloat16"));
  EXPECT_THAT(r.out, ContainsRegex("ops \\([0-9]+\\): .*sqrt"));
  Result json = Run({"info", "--json"});
  ASSERT_EQ(json.code, kExitOk) << json;
  EXPECT_THAT(json.out, HasSubstr("\"backend\": \"cpu\""));
}

TEST_F(CliTest, TargetFlagWinsOverTheEnvironmentAndFailuresSayUnavailable) {
  Result r = Run({"--target=ipv4:127.0.0.1:1", "info", "--connect-timeout=100ms"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_THAT(r.err, HasSubstr("gpuflow info: UNAVAILABLE: no gpuflow server answered at "
                               "ipv4:127.0.0.1:1"));
  // --target VALUE before the command, too.
  Result spaced = Run({"--target", "ipv4:127.0.0.1:1", "--connect-timeout", "100ms", "info"});
  EXPECT_EQ(spaced.code, kExitError);
  EXPECT_THAT(spaced.err, HasSubstr("UNAVAILABLE"));
}

TEST_F(CliTest, SessionUploadDownloadListRemoveClose) {
  const std::string id = CreateSession();
  ASSERT_THAT(id, MatchesRegex("[0-9a-f]{32}"));

  ASSERT_OK_AND_ASSIGN(Array x, Array::FromValues<double>({2, 2}, {1.5, -2, 3, 4}));
  ASSERT_THAT(WriteNpyFile(Path("x.npy"), x), IsOk());
  Result up = Run({"upload", Path("x.npy")}, id);  // the name defaults to the file's
  ASSERT_EQ(up.code, kExitOk) << up;
  EXPECT_THAT(up.out, HasSubstr("cli_test_x: float64[2, 2] (32 B)"));
  Result named = Run({"--session", id, "upload", Path("x.npy"), "--name=x"});
  ASSERT_EQ(named.code, kExitOk) << named;

  Result ls = Run({"ls"}, id);
  ASSERT_EQ(ls.code, kExitOk) << ls;
  EXPECT_THAT(ls.out, HasSubstr("x: float64[2, 2] (32 B)\n2 array(s), 64 B used of"));

  Result down = Run({"download", "x", "-o", Path("back.npy")}, id);
  ASSERT_EQ(down.code, kExitOk) << down;
  ASSERT_OK_AND_ASSIGN(Array back, ReadNpyFile(Path("back.npy")));
  EXPECT_EQ(back, x);

  Result rm = Run({"rm", "x", "cli_test_x"}, id);
  ASSERT_EQ(rm.code, kExitOk) << rm;
  EXPECT_THAT(rm.out, HasSubstr("deleted x, freed 32 B\ndeleted cli_test_x"));

  Result info = Run({"session", "info"}, id);
  ASSERT_EQ(info.code, kExitOk) << info;
  EXPECT_THAT(info.out, HasSubstr("label:     cli_test\n"));

  Result close = Run({"session", "close", id});
  ASSERT_EQ(close.code, kExitOk) << close;
  Result after = Run({"ls"}, id);
  EXPECT_EQ(after.code, kExitError);
  EXPECT_THAT(after.err, HasSubstr("gpuflow ls: NOT_FOUND: "));
}

TEST_F(CliTest, CommandsThatNeedASessionSaySo) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"upload", "x.npy"}, {"download", "x", "-o", "x.npy"}, {"ls"}, {"rm", "x"}}) {
    Result r = Run(args);
    EXPECT_EQ(r.code, kExitError) << r;
    EXPECT_THAT(r.err, HasSubstr("FAILED_PRECONDITION: `gpuflow " + args[0] +
                                 "` needs a session: pass --session=ID or set GPUFLOW_SESSION"));
  }
}

TEST_F(CliTest, UploadReportsFileErrors) {
  const std::string id = CreateSession();
  Result missing = Run({"upload", Path("missing.npy")}, id);
  EXPECT_EQ(missing.code, kExitError);
  EXPECT_THAT(missing.err, HasSubstr("NOT_FOUND: cannot open " + Path("missing.npy")));
  WriteText(Path("text.npy"), "not numpy");
  Result garbage = Run({"upload", Path("text.npy")}, id);
  EXPECT_EQ(garbage.code, kExitError);
  EXPECT_THAT(garbage.err, HasSubstr("INVALID_ARGUMENT: " + Path("text.npy") + ": malformed"));
  Run({"session", "close", id});
}

TEST_F(CliTest, UploadDTypeBFloat16ReinterpretsUint16Words) {
  const std::string id = CreateSession();
  ASSERT_OK_AND_ASSIGN(Array words, Array::FromValues<uint16_t>({2}, {0x3f80, 0xc000}));
  ASSERT_THAT(WriteNpyFile(Path("words.npy"), words), IsOk());
  Result up = Run({"upload", Path("words.npy"), "--name=b", "--dtype=bfloat16"}, id);
  ASSERT_EQ(up.code, kExitOk) << up;
  EXPECT_THAT(up.out, HasSubstr("b: bfloat16[2]"));
  Result wrong = Run({"upload", Path("words.npy"), "--dtype=float32"}, id);
  EXPECT_EQ(wrong.code, kExitError);
  EXPECT_THAT(wrong.err, HasSubstr("holds uint16, not float32"));
  ASSERT_EQ(Run({"download", "b", "-o", Path("b.npy")}, id).code, kExitOk);
  ASSERT_OK_AND_ASSIGN(Array back, ReadNpyFile(Path("b.npy")));
  EXPECT_EQ(back.dtype, v1::DTYPE_BFLOAT16);
  EXPECT_EQ(back.data, words.data);
  Run({"session", "close", id});
}

TEST_F(CliTest, RunPrintsInlineResultsAndSavesOutputs) {
  const std::string id = CreateSession();
  ASSERT_OK_AND_ASSIGN(Array x, Array::FromValues<float>({3}, {0, 1, 2}));
  ASSERT_THAT(WriteNpyFile(Path("rx.npy"), x), IsOk());
  ASSERT_EQ(Run({"upload", Path("rx.npy"), "--name=x"}, id).code, kExitOk);
  WriteText(Path("graph.json"), kGraph);

  Result r = Run({"run", Path("graph.json"), "-o", "total=" + Path("total.npy"), "-o",
                  "y=" + Path("y.npy"), "--timings"},
                 id);
  ASSERT_EQ(r.code, kExitOk) << r;
  EXPECT_THAT(r.out, StartsWith("y: float32[3]\n[1.0, 1.4142135, 2.236068]\n"
                                "s: stored as total: float32[] (4 B)\ntotal "));
  ASSERT_OK_AND_ASSIGN(Array y, ReadNpyFile(Path("y.npy")));
  EXPECT_EQ(y.ValuesAs<float>()[0], 1.0f);
  ASSERT_OK_AND_ASSIGN(Array total, ReadNpyFile(Path("total.npy")));
  EXPECT_NEAR(total.ValuesAs<float>()[0], 1 + 1.4142135 + 2.236068, 1e-5);

  Result json = Run({"run", Path("graph.json"), "--json"}, id);
  ASSERT_EQ(json.code, kExitOk) << json;
  EXPECT_THAT(json.out, HasSubstr("\"timings\""));

  Result bad_o = Run({"run", Path("graph.json"), "-o", "nope=" + Path("n.npy")}, id);
  EXPECT_EQ(bad_o.code, kExitError);
  EXPECT_THAT(bad_o.err, HasSubstr("no output is named 'nope' (outputs: y, total)"));
  Result ambiguous = Run({"run", Path("graph.json"), "-o", Path("n.npy")}, id);
  EXPECT_EQ(ambiguous.code, kExitError);
  EXPECT_THAT(ambiguous.err, HasSubstr("-o FILE needs a single output"));
  Run({"session", "close", id});
}

TEST_F(CliTest, RunWithoutSessionUsesATemporaryOne) {
  WriteText(Path("arange.json"), R"({
    "graph": {"nodes": [{"id": "r", "op": "arange", "attrs": {"stop": {"intValue": 4}}}]},
    "outputs": [{"node": "r", "storeAs": "r"}]})");
  Result r = Run({"run", Path("arange.json"), "-o", Path("r.npy")});
  ASSERT_EQ(r.code, kExitOk) << r;
  ASSERT_OK_AND_ASSIGN(Array range, ReadNpyFile(Path("r.npy")));
  EXPECT_EQ(range.ValuesAs<int64_t>(), std::vector<int64_t>({0, 1, 2, 3}));
  Result info = Run({"info"});
  EXPECT_THAT(info.out, HasSubstr("sessions:  0 open")) << "the temporary session was closed";
}

TEST_F(CliTest, RunReportsGraphErrorsWithTheirPlace) {
  WriteText(Path("bad.json"), "{\"graph\": {\"nodes\": [\n  {\"id\": \"a\", \"opp\": \"neg\"}]}}");
  Result json = Run({"run", Path("bad.json")});
  EXPECT_EQ(json.code, kExitError);
  EXPECT_THAT(json.err, HasSubstr("gpuflow run: INVALID_ARGUMENT: " + Path("bad.json") +
                                  ":2:15: graph.nodes[0]: unknown field \"opp\""));
  WriteText(Path("server_bad.json"), R"({
    "graph": {"nodes": [{"id": "a", "op": "neg", "inputs": [{"array": "missing"}]}]},
    "outputs": [{"node": "a", "returnInline": true}]})");
  Result server = Run({"run", Path("server_bad.json")});
  EXPECT_EQ(server.code, kExitError);
  EXPECT_THAT(server.err, HasSubstr("gpuflow run: NOT_FOUND: "));
  EXPECT_THAT(server.err, HasSubstr("'missing'"));
}

TEST_F(CliTest, BenchPrintsLikeCupyx) {
  WriteText(Path("bench.json"), R"({
    "graph": {"nodes": [{"id": "r", "op": "arange", "attrs": {"stop": {"intValue": 1000}}},
                        {"id": "s", "op": "sum", "inputs": [{"node": "r"}]}]},
    "outputs": [{"node": "s", "returnInline": true}]})");
  Result r = Run({"bench", Path("bench.json"), "--warmup=1", "--repeat=3", "--name=arange_sum"});
  ASSERT_EQ(r.code, kExitOk) << r;
  EXPECT_THAT(r.out, MatchesRegex("arange_sum          :    CPU: +[0-9.]+ us   \\+/- +[0-9.]+ "
                                  "\\(min: +[0-9.]+ / max: +[0-9.]+\\) us\n"));
  Result json = Run({"bench", Path("bench.json"), "--repeat=2", "--json"});
  ASSERT_EQ(json.code, kExitOk) << json;
  EXPECT_THAT(json.out, HasSubstr("\"cpuSeconds\""));
  Result bad = Run({"bench", Path("bench.json"), "--repeat=-1"});
  EXPECT_EQ(bad.code, kExitError);
  EXPECT_THAT(bad.err, HasSubstr("--repeat='-1' is not a non-negative integer"));
}

TEST_F(CliTest, SessionCreateTakesQuotaAndTtl) {
  Result r = Run({"session", "create", "--memory-limit=1MiB", "--idle-ttl=90s"});
  ASSERT_EQ(r.code, kExitOk) << r;
  const std::string id(absl::StripAsciiWhitespace(r.out));
  Result info = Run({"session", "info", "--json"}, id);
  ASSERT_EQ(info.code, kExitOk) << info;
  EXPECT_THAT(info.out, HasSubstr("\"memoryLimitBytes\": \"1048576\""));
  EXPECT_THAT(info.out, HasSubstr("\"idleTtl\": \"90s\""));
  Run({"session", "close", id});
  Result bad = Run({"session", "create", "--memory-limit=lots"});
  EXPECT_EQ(bad.code, kExitError);
  EXPECT_THAT(bad.err, HasSubstr("'lots' is not a byte count"));
  EXPECT_THAT(Run({"session", "close"}).err, HasSubstr("which session?"));
}

}  // namespace
}  // namespace gpuflow::client::cli

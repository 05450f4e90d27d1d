#include "clients/cpp/cli/cli.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "clients/cpp/array.h"
#include "clients/cpp/cli/format.h"
#include "clients/cpp/client.h"
#include "clients/cpp/graph_json.h"
#include "clients/cpp/npy.h"
#include "clients/cpp/status_macros_internal.h"

namespace gpuflow::client::cli {
namespace {

// ---------------------------------------------------------------- command-line model

struct Option {
  std::string name;   // "name" for --name
  char short_name;    // 'o' for -o; '\0' for none
  std::string value;  // the value's placeholder ("FILE"); empty for a switch
  bool repeated = false;
  std::string help;
};

struct Args {
  std::vector<std::string> positional;
  absl::flat_hash_map<std::string, std::vector<std::string>> values;

  bool Has(absl::string_view name) const { return values.contains(name); }
  // The last value given, or `fallback`.
  std::string Get(absl::string_view name, std::string fallback = "") const {
    auto it = values.find(name);
    return it == values.end() ? fallback : it->second.back();
  }
  std::vector<std::string> All(absl::string_view name) const {
    auto it = values.find(name);
    return it == values.end() ? std::vector<std::string>() : it->second;
  }
};

// A usage error: the command line itself is wrong (exit 2).
struct UsageError {
  std::string message;
};

class Context;

struct Command {
  std::string name;         // "upload", "session create"
  std::string arguments;    // "FILE.npy [--name=NAME]"
  std::string summary;      // one line, for `gpuflow --help`
  std::string description;  // the rest of `gpuflow COMMAND --help`
  std::vector<Option> options;
  size_t min_positional = 0;
  size_t max_positional = 0;
  std::function<absl::Status(Context&)> run;
};

const std::vector<Option>& GlobalOptions() {
  static const auto* options = new std::vector<Option>{
      {"target", '\0', "HOST:PORT", false,
       "the server, or a pool of workers: H1:P1,H2:P2 or dns:///NAME:PORT (default: "
       "$GPUFLOW_TARGET, else localhost:50051)"},
      {"session", '\0', "ID", false,
       "an open session's id (default: $GPUFLOW_SESSION); see `gpuflow session create`"},
      {"connect-timeout", '\0', "DURATION", false,
       "how long to wait for the server to answer (default 10s)"},
      {"token", '\0', "TOKEN", false,
       "bearer token of a server with tenants (default: $GPUFLOW_TOKEN)"},
      {"tls", '\0', "", false, "use TLS, trusting the system's root certificates"},
      {"tls-ca", '\0', "FILE", false,
       "use TLS, trusting the CA certificates in this PEM file (default: $GPUFLOW_TLS_CA)"},
      {"tls-cert", '\0', "FILE", false,
       "client certificate chain (PEM) for mutual TLS, with --tls-key (default: "
       "$GPUFLOW_TLS_CERT)"},
      {"tls-key", '\0', "FILE", false,
       "private key (PEM) of --tls-cert (default: $GPUFLOW_TLS_KEY)"},
      {"help", 'h', "", false, "show this help"},
  };
  return *options;
}

// Long option names match with '-' and '_' taken as one.
bool SameOptionName(absl::string_view a, absl::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return x == y || ((x == '-' || x == '_') && (y == '-' || y == '_'));
         });
}

// Parses `args` against the command's options and the global ones; sets
// `usage` (and stops) at the first that does not parse.
Args ParseArgs(const std::vector<std::string>& args, const Command& command,
               std::optional<UsageError>& usage) {
  Args parsed;
  auto find = [&](auto matches) -> const Option* {
    for (const std::vector<Option>* list : {&command.options, &GlobalOptions()}) {
      for (const Option& option : *list) {
        if (matches(option)) return &option;
      }
    }
    return nullptr;
  };
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      parsed.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    const Option* option = nullptr;
    std::optional<std::string> value;
    std::string spelled;
    if (absl::StartsWith(arg, "--")) {
      absl::string_view body = absl::string_view(arg).substr(2);
      const size_t equals = body.find('=');
      const std::string name(body.substr(0, equals));
      if (equals != absl::string_view::npos) value = std::string(body.substr(equals + 1));
      // --tls_ca and --tls-ca are the same option.
      option = find([&](const Option& o) { return SameOptionName(o.name, name); });
      spelled = "--" + name;
    } else {
      option =
          find([&](const Option& o) { return o.short_name != '\0' && o.short_name == arg[1]; });
      if (arg.size() > 2) value = arg.substr(2);
      spelled = arg.substr(0, 2);
    }
    if (option == nullptr) {
      usage = UsageError{absl::StrCat("unknown option ", spelled)};
      return parsed;
    }
    if (option->value.empty()) {
      if (value.has_value()) {
        usage = UsageError{absl::StrCat(spelled, " takes no value")};
        return parsed;
      }
      value = "";
    } else if (!value.has_value()) {
      if (i + 1 >= args.size()) {
        usage = UsageError{absl::StrCat(spelled, " needs a value (", option->value, ")")};
        return parsed;
      }
      value = args[++i];
    }
    std::vector<std::string>& values = parsed.values[option->name];
    if (!values.empty() && !option->repeated && option->name != "help") {
      usage = UsageError{absl::StrCat(spelled, " is given twice")};
      return parsed;
    }
    values.push_back(*std::move(value));
  }
  return parsed;
}

std::string OptionsHelp(const std::vector<Option>& options) {
  std::string out;
  for (const Option& option : options) {
    std::string spelled = absl::StrCat("--", option.name);
    if (option.short_name != '\0')
      spelled = absl::StrCat("-", std::string(1, option.short_name), ", ", spelled);
    if (!option.value.empty()) absl::StrAppend(&spelled, "=", option.value);
    absl::StrAppend(&out, "  ", spelled,
                    std::string(spelled.size() < 30 ? 30 - spelled.size() : 2, ' '), option.help,
                    option.repeated ? " (repeatable)" : "", "\n");
  }
  return out;
}

std::string CommandHelp(const Command& command) {
  std::string out =
      absl::StrCat("usage: gpuflow ", command.name, command.arguments.empty() ? "" : " ",
                   command.arguments, "\n\n", command.summary, "\n");
  if (!command.description.empty()) absl::StrAppend(&out, "\n", command.description, "\n");
  if (!command.options.empty()) absl::StrAppend(&out, "\noptions:\n", OptionsHelp(command.options));
  absl::StrAppend(&out, "\ncommon options:\n", OptionsHelp(GlobalOptions()));
  return out;
}

// ---------------------------------------------------------------- helpers for commands

// Parses "4096", "512MiB", "4GiB", "1.5GiB", "64K", "1G" (powers of 1024).
absl::StatusOr<int64_t> ParseBytes(absl::string_view text) {
  static constexpr std::pair<absl::string_view, int> kUnits[] = {
      {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"Ki", 10}, {"Mi", 20}, {"Gi", 30},
      {"Ti", 40},  {"K", 10},   {"M", 20},   {"G", 30},   {"T", 40},  {"B", 0}};
  absl::string_view number = absl::StripAsciiWhitespace(text);
  int shift = 0;
  for (const auto& [suffix, bits] : kUnits) {
    if (absl::ConsumeSuffix(&number, suffix)) {
      shift = bits;
      break;
    }
  }
  double value = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(number), &value) || !(value >= 0) ||
      value * std::ldexp(1.0, shift) >= 9.2e18) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a byte count (e.g. 1048576, 512MiB, 4GiB)"));
  }
  return static_cast<int64_t>(value * std::ldexp(1.0, shift));
}

absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view flag, absl::string_view text) {
  absl::Duration duration;
  if (!absl::ParseDuration(text, &duration) || duration < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "='", text, "' is not a duration (e.g. 30s, 10m, 1h30m)"));
  }
  return duration;
}

absl::StatusOr<int32_t> ParseCount(absl::string_view flag, absl::string_view text) {
  int32_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "='", text, "' is not a non-negative integer"));
  }
  return value;
}

google::protobuf::Duration ToProto(absl::Duration duration) {
  google::protobuf::Duration out;
  const int64_t nanos = absl::ToInt64Nanoseconds(duration);
  out.set_seconds(nanos / 1'000'000'000);
  out.set_nanos(static_cast<int32_t>(nanos % 1'000'000'000));
  return out;
}

std::string Describe(const v1::ArrayInfo& info) {
  Array shape_only;
  shape_only.dtype = info.dtype();
  shape_only.shape.assign(info.shape().begin(), info.shape().end());
  return absl::StrCat(info.name(), ": ", shape_only.TypeString(), " (",
                      FormatBytes(info.num_bytes()), ")");
}

// Everything a command needs: its arguments, the defaults, the output
// streams and (on demand) a connection.
class Context {
 public:
  Context(const Command& command, Args args, const CliEnvironment& environment, std::ostream& out,
          std::ostream& err)
      : command_(command),
        args_(std::move(args)),
        environment_(environment),
        out_(out),
        err_(err) {}

  const Args& args() const { return args_; }
  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }

  std::string target() const {
    return args_.Get(
        "target", environment_.target.empty() ? std::string(kDefaultTarget) : environment_.target);
  }
  std::string session_id() const { return args_.Get("session", environment_.session); }

  absl::StatusOr<Client> Connect() {
    if (client_.has_value()) return *client_;
    ClientOptions options;
    if (args_.Has("connect-timeout")) {
      GPUFLOW_CLIENT_ASSIGN_OR_RETURN(
          options.connect_timeout,
          ParseDurationFlag("connect-timeout", args_.Get("connect-timeout")));
    }
    options.token = args_.Get("token", environment_.token);
    const std::string ca = args_.Get("tls-ca", environment_.tls_ca);
    const std::string cert = args_.Get("tls-cert", environment_.tls_cert);
    const std::string key = args_.Get("tls-key", environment_.tls_key);
    if (cert.empty() != key.empty()) {
      return absl::InvalidArgumentError(
          "--tls-cert and --tls-key go together (or $GPUFLOW_TLS_CERT and $GPUFLOW_TLS_KEY)");
    }
    if (args_.Has("tls") || !ca.empty() || !cert.empty()) {
      GPUFLOW_CLIENT_ASSIGN_OR_RETURN(options.tls, TlsOptions::FromFiles(ca, cert, key));
    }
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Client client, Client::Connect(target(), options));
    client_ = client;
    return client;
  }

  // FAILED_PRECONDITION, saying how to get a session, when no --session was
  // given.
  absl::Status CheckSessionGiven() const {
    if (!session_id().empty()) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("`gpuflow ", command_.name,
                     "` needs a session: pass --session=ID or set GPUFLOW_SESSION (create one "
                     "with `gpuflow session create`)"));
  }

  // The --session session (see CheckSessionGiven), on the worker of a
  // pool that holds it.
  absl::StatusOr<Session> RequireSession() {
    GPUFLOW_CLIENT_RETURN_IF_ERROR(CheckSessionGiven());
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Client client, Connect());
    return client.LocateSession(session_id());
  }

 private:
  const Command& command_;
  Args args_;
  const CliEnvironment& environment_;
  std::ostream& out_;
  std::ostream& err_;
  std::optional<Client> client_;
};

// Runs `work` in the --session session or, without one, in a temporary
// session closed afterwards (whatever `work` returned).
absl::Status WithSession(Context& context, absl::string_view label,
                         const std::function<absl::Status(const Session&)>& work) {
  if (!context.session_id().empty()) {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Session session, context.RequireSession());
    return work(session);
  }
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Client client, context.Connect());
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Session session,
                                  client.CreateSession({.label = std::string(label)}));
  absl::Status status = work(session);
  absl::StatusOr<int64_t> closed = session.Close();
  if (status.ok() && !closed.ok()) return closed.status();
  return status;
}

// ---------------------------------------------------------------- the commands

absl::Status RunInfo(Context& context) {
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Client client, context.Connect());
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::ServerInfo info, client.Info());
  if (context.args().Has("json")) {
    context.out() << ToJson(info) << "\n";
  } else {
    context.out() << "target:    " << context.target() << "\n" << FormatServerInfo(info);
  }
  return absl::OkStatus();
}

absl::Status RunSessionCreate(Context& context) {
  SessionOptions options;
  options.label = context.args().Get("label", "gpuflow-cli");
  if (context.args().Has("memory-limit")) {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(options.memory_limit_bytes,
                                    ParseBytes(context.args().Get("memory-limit")));
  }
  if (context.args().Has("idle-ttl")) {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(options.idle_ttl,
                                    ParseDurationFlag("idle-ttl", context.args().Get("idle-ttl")));
  }
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Client client, context.Connect());
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Session session, client.CreateSession(options));
  context.out() << session.id() << "\n";
  return absl::OkStatus();
}

absl::Status RunSessionClose(Context& context) {
  std::string id =
      context.args().positional.empty() ? context.session_id() : context.args().positional[0];
  if (id.empty()) {
    return absl::FailedPreconditionError(
        "which session? give its id, --session=ID or GPUFLOW_SESSION");
  }
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Client client, context.Connect());
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Session session, client.LocateSession(id));
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(const int64_t freed, session.Close());
  context.out() << "closed " << id << ", freed " << FormatBytes(freed) << "\n";
  return absl::OkStatus();
}

absl::Status RunSessionInfo(Context& context) {
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Session session, context.RequireSession());
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::SessionInfo info, session.KeepAlive());
  if (context.args().Has("json")) {
    context.out() << ToJson(info) << "\n";
    return absl::OkStatus();
  }
  context.out() << "session:   " << info.session_id() << "\n"
                << "worker:    " << session.endpoint() << "\n"
                << "label:     " << info.label() << "\n"
                << "memory:    " << FormatBytes(info.memory_used_bytes()) << " used of "
                << FormatBytes(info.memory_limit_bytes()) << "\n"
                << "arrays:    " << info.num_arrays() << "\n"
                << "idle TTL:  "
                << absl::FormatDuration(absl::Seconds(info.idle_ttl().seconds()) +
                                        absl::Nanoseconds(info.idle_ttl().nanos()))
                << "\n";
  return absl::OkStatus();
}

absl::Status RunUpload(Context& context) {
  const std::string& path = context.args().positional[0];
  std::string name = context.args().Get("name");
  if (name.empty()) {
    // x.npy -> x
    absl::string_view base = path;
    if (const size_t slash = base.rfind('/'); slash != absl::string_view::npos) {
      base.remove_prefix(slash + 1);
    }
    name = std::string(absl::StripSuffix(base, ".npy"));
  }
  GPUFLOW_CLIENT_RETURN_IF_ERROR(context.CheckSessionGiven());
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Array array, ReadNpyFile(path));
  if (context.args().Has("dtype")) {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(const v1::DType dtype,
                                    ParseDTypeName(context.args().Get("dtype")));
    if (dtype == v1::DTYPE_BFLOAT16 && array.dtype == v1::DTYPE_UINT16) {
      array.dtype = dtype;  // raw bfloat16 words, as the Python client sends them
    } else if (dtype != array.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, " holds ", DTypeName(array.dtype), ", not ", DTypeName(dtype),
          ": upload does not convert values (--dtype=bfloat16 only reinterprets uint16 words)"));
    }
  }
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Session session, context.RequireSession());
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::ArrayInfo info, session.Upload(name, array));
  context.out() << Describe(info) << "\n";
  return absl::OkStatus();
}

absl::Status RunDownload(Context& context) {
  const std::string& name = context.args().positional[0];
  const std::string path = context.args().Get("output");
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Session session, context.RequireSession());
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Array array, session.Download(name));
  GPUFLOW_CLIENT_RETURN_IF_ERROR(WriteNpyFile(path, array));
  context.out() << name << ": " << array.TypeString() << " -> " << path << "\n";
  return absl::OkStatus();
}

absl::Status RunList(Context& context) {
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Session session, context.RequireSession());
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::ListArraysResponse list, session.List());
  if (context.args().Has("json")) {
    context.out() << ToJson(list) << "\n";
    return absl::OkStatus();
  }
  for (const v1::ArrayInfo& info : list.arrays()) context.out() << Describe(info) << "\n";
  context.out() << list.arrays_size() << " array(s), " << FormatBytes(list.memory_used_bytes())
                << " used of " << FormatBytes(list.memory_limit_bytes()) << "\n";
  return absl::OkStatus();
}

absl::Status RunRemove(Context& context) {
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Session session, context.RequireSession());
  for (const std::string& name : context.args().positional) {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(const int64_t freed, session.Delete(name));
    context.out() << "deleted " << name << ", freed " << FormatBytes(freed) << "\n";
  }
  return absl::OkStatus();
}

// A -o argument of `run`: which output (empty: the only one) goes to which
// file.
struct SaveSpec {
  std::string output;
  std::string path;
};

// The index of the output that `name` picks: an output's storeAs name, else
// its node id.
absl::StatusOr<int> FindOutput(const v1::ExecuteRequest& request, const std::string& name) {
  if (name.empty()) {
    if (request.outputs_size() == 1) return 0;
    return absl::InvalidArgumentError(
        absl::StrCat("-o FILE needs a single output; this graph has ", request.outputs_size(),
                     ": write -o NAME=FILE (NAME: an output's storeAs or node)"));
  }
  for (int i = 0; i < request.outputs_size(); ++i) {
    if (request.outputs(i).store_as() == name) return i;
  }
  for (int i = 0; i < request.outputs_size(); ++i) {
    if (request.outputs(i).node() == name) return i;
  }
  std::vector<std::string> names;
  for (const v1::OutputSpec& output : request.outputs()) {
    names.push_back(output.store_as().empty() ? output.node() : output.store_as());
  }
  return absl::InvalidArgumentError(absl::StrCat("-o ", name, "=...: no output is named '", name,
                                                 "' (outputs: ", absl::StrJoin(names, ", "), ")"));
}

absl::Status RunRun(Context& context) {
  const std::string& path = context.args().positional[0];
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::ExecuteRequest request, ReadGraphJsonFile(path));
  if (context.args().Has("profile")) request.set_profile(true);
  if (context.args().Has("allow-tf32")) request.set_allow_tf32(true);
  std::vector<std::pair<int, std::string>> saves;
  for (const std::string& spec : context.args().All("output")) {
    const size_t equals = spec.find('=');
    const std::string name = equals == std::string::npos ? "" : spec.substr(0, equals);
    const std::string file = equals == std::string::npos ? spec : spec.substr(equals + 1);
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(const int index, FindOutput(request, name));
    saves.emplace_back(index, file);
  }

  return WithSession(context, "gpuflow run", [&](const Session& session) -> absl::Status {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::ExecuteResponse response, session.Execute(request));
    if (context.args().Has("json")) {
      context.out() << ToJson(response) << "\n";
    } else {
      for (const v1::OutputResult& result : response.outputs()) {
        context.out() << result.node();
        if (result.has_value()) {
          GPUFLOW_CLIENT_ASSIGN_OR_RETURN(Array value, FromInline(result.value()));
          context.out() << ": " << value.TypeString();
          if (!result.info().name().empty()) {
            context.out() << " (stored as " << result.info().name() << ")";
          }
          context.out() << "\n" << FormatArray(value) << "\n";
        } else {
          context.out() << ": stored as " << Describe(result.info()) << "\n";
        }
      }
      if (context.args().Has("timings") || request.profile()) {
        context.out() << FormatTimings(response.timings()) << "\n";
      }
    }
    for (const auto& [index, file] : saves) {
      const v1::OutputResult& result = response.outputs(index);
      Array array;
      if (result.has_value()) {
        GPUFLOW_CLIENT_ASSIGN_OR_RETURN(array, FromInline(result.value()));
      } else {
        GPUFLOW_CLIENT_ASSIGN_OR_RETURN(array, session.Download(result.info().name()));
      }
      GPUFLOW_CLIENT_RETURN_IF_ERROR(WriteNpyFile(file, array));
      context.err() << result.node() << ": " << array.TypeString() << " -> " << file << "\n";
    }
    return absl::OkStatus();
  });
}

absl::Status RunBench(Context& context) {
  const std::string& path = context.args().positional[0];
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::ExecuteRequest execute, ReadGraphJsonFile(path));
  v1::BenchmarkRequest request = ToBenchmarkRequest(execute);
  const Args& args = context.args();
  if (args.Has("allow-tf32")) request.set_allow_tf32(true);
  if (args.Has("warmup")) {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(const int32_t n, ParseCount("warmup", args.Get("warmup")));
    request.set_n_warmup(n);
  }
  if (args.Has("repeat")) {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(const int32_t n, ParseCount("repeat", args.Get("repeat")));
    request.set_n_repeat(n);
  }
  if (args.Has("max-duration")) {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(const absl::Duration d,
                                    ParseDurationFlag("max-duration", args.Get("max-duration")));
    *request.mutable_max_duration() = ToProto(d);
  }
  request.set_name(
      args.Get("name", std::string(absl::StripSuffix(
                           absl::string_view(path).substr(path.rfind('/') + 1), ".json"))));
  return WithSession(context, "gpuflow bench", [&](const Session& session) -> absl::Status {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::BenchmarkResponse response, session.Benchmark(request));
    if (args.Has("json")) {
      context.out() << ToJson(response) << "\n";
    } else {
      context.out() << FormatBenchmark(response) << "\n";
    }
    return absl::OkStatus();
  });
}

const Option kJsonOption = {"json", '\0', "", false,
                            "print the reply message as protobuf JSON instead"};

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      {"info",
       "",
       "Show the server: version, backend, device, limits, dtypes and ops.",
       "",
       {kJsonOption},
       0,
       0,
       RunInfo},
      {"session create",
       "[--label=TEXT] [--memory-limit=BYTES] [--idle-ttl=DURATION]",
       "Open a session and print its id.",
       "The session lives on the server until `gpuflow session close` or until it has been\n"
       "idle for its TTL. Keep the id for the other commands:\n"
       "  export GPUFLOW_SESSION=$(gpuflow session create)",
       {{"label", '\0', "TEXT", false, "shown in the server's logs (default gpuflow-cli)"},
        {"memory-limit", '\0', "BYTES", false,
         "quota for the session's arrays, e.g. 512MiB (default: the server's)"},
        {"idle-ttl", '\0', "DURATION", false,
         "close it after this long unused, e.g. 30m (default: the server's)"}},
       0,
       0,
       RunSessionCreate},
      {"session close",
       "[ID]",
       "Close a session (ID, else --session) and free its arrays.",
       "",
       {},
       0,
       1,
       RunSessionClose},
      {"session info",
       "",
       "Show the --session session: its worker, label, memory, arrays, TTL.",
       "Also resets its idle timer.",
       {kJsonOption},
       0,
       0,
       RunSessionInfo},
      {"upload",
       "FILE.npy [--name=NAME] [--dtype=bfloat16]",
       "Upload a .npy file into the session as NAME (default: the file's name without .npy).",
       "Every gpuflow dtype is read; bfloat16 files use descr '<V2' (as np.save writes\n"
       "ml_dtypes.bfloat16). An array of that name is replaced.",
       {{"name", '\0', "NAME", false, "the array's name in the session"},
        {"dtype", '\0', "bfloat16", false,
         "send a uint16 file's words as bfloat16 (values are never converted)"}},
       1,
       1,
       RunUpload},
      {"download",
       "NAME -o FILE.npy",
       "Download an array of the session into a .npy file.",
       "",
       {{"output", 'o', "FILE.npy", false, "where to write it (required)"}},
       1,
       1,
       RunDownload},
      {"ls", "", "List the session's arrays and its memory use.", "", {kJsonOption}, 0, 0, RunList},
      {"rm",
       "NAME...",
       "Delete arrays from the session.",
       "",
       {},
       1,
       std::numeric_limits<size_t>::max(),
       RunRemove},
      {"run",
       "GRAPH.json [-o [NAME=]FILE.npy]... [--timings] [--profile] [--json]",
       "Run a graph (docs/graph_json.md) and print its inline results.",
       "Outputs with \"returnInline\": true are printed; outputs with \"storeAs\" stay in the\n"
       "session. -o saves an output (inline or stored) to a .npy file; NAME is its storeAs\n"
       "name or node id, and may be left out when there is one output. Without --session\n"
       "the graph runs in a temporary session, closed afterwards.",
       {{"output", 'o', "[NAME=]FILE.npy", true, "save an output to a .npy file"},
        {"timings", '\0', "", false, "print the server's timings"},
        {"profile", '\0', "", false, "ask for per-step timings and print them"},
        {"allow-tf32", '\0', "", false, "allow TF32 tensor cores for float32 matmul"},
        kJsonOption},
       1,
       1,
       RunRun},
      {"bench",
       "GRAPH.json [--warmup=N] [--repeat=N] [--max-duration=DURATION] [--name=LABEL]",
       "Time a graph on the server and print like cupyx.profiler.benchmark.",
       "The outputs of GRAPH.json name the nodes that must run; nothing is stored or returned.\n"
       "Without --session the graph runs in a temporary session, closed afterwards.",
       {{"warmup", '\0', "N", false, "untimed runs first (default 10)"},
        {"repeat", '\0', "N", false, "timed runs at most (default 10000)"},
        {"max-duration", '\0', "DURATION", false, "stop repeating after this long (default 10s)"},
        {"name", '\0', "LABEL", false, "label printed (default: the file's name)"},
        {"allow-tf32", '\0', "", false, "allow TF32 tensor cores for float32 matmul"},
        kJsonOption},
       1,
       1,
       RunBench},
  };
  return *commands;
}

std::string MainHelp() {
  std::string out =
      "usage: gpuflow [--target=HOST:PORT|POOL] [--session=ID] COMMAND [ARGS]\n\n"
      "The command-line client of gpuflowd.\n\ncommands:\n";
  for (const Command& command : Commands()) {
    absl::StrAppend(&out, "  ", command.name,
                    std::string(command.name.size() < 16 ? 16 - command.name.size() : 1, ' '),
                    command.summary, "\n");
  }
  absl::StrAppend(&out, "\ncommon options:\n", OptionsHelp(GlobalOptions()),
                  "\n`gpuflow COMMAND --help` describes a command; docs/cli.md has examples.\n"
                  "Exit status: 0 ok, 1 a failed call or file (the gRPC code and message on "
                  "stderr), 2 a bad command line.\n");
  return out;
}

}  // namespace

int RunCli(const std::vector<std::string>& args, const CliEnvironment& environment,
           std::ostream& out, std::ostream& err) {
  // The command is the first word that is not an option; options before it
  // must be common ones (given as --name=value or --name value).
  std::vector<std::string> rest;
  std::vector<std::string> words;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!absl::StartsWith(arg, "-")) break;
    rest.push_back(arg);
    if (arg.find('=') == std::string::npos && arg != "--help" && arg != "-h" &&
        i + 1 < args.size()) {
      rest.push_back(args[++i]);  // the value of --target HOST, --session ID, ...
    }
  }
  // "upload", "session create", "help", "help session close".
  auto take_word = [&] {
    if (i < args.size() && !absl::StartsWith(args[i], "-")) words.push_back(args[i++]);
  };
  take_word();
  if (!words.empty() && words[0] == "help") take_word();
  if (!words.empty() && words.back() == "session") take_word();
  rest.insert(rest.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());

  if (words.empty()) {
    const bool asked = std::find(rest.begin(), rest.end(), "--help") != rest.end() ||
                       std::find(rest.begin(), rest.end(), "-h") != rest.end();
    (asked ? out : err) << MainHelp();
    return asked ? kExitOk : kExitUsage;
  }
  if (words[0] == "help") {
    if (words.size() == 1) {
      out << MainHelp();
      return kExitOk;
    }
    words.erase(words.begin());
    rest.push_back("--help");
  }
  const std::string name = absl::StrJoin(words, " ");
  const Command* command = nullptr;
  for (const Command& candidate : Commands()) {
    if (candidate.name == name) command = &candidate;
  }
  if (command == nullptr) {
    err << "gpuflow: unknown command '" << name << "'"
        << (words[0] == "session" ? " (session commands: create, close, info)" : "")
        << "\nTry 'gpuflow --help'.\n";
    return kExitUsage;
  }

  std::optional<UsageError> usage;
  Args parsed = ParseArgs(rest, *command, usage);
  if (parsed.Has("help")) {
    out << CommandHelp(*command);
    return kExitOk;
  }
  if (!usage.has_value()) {
    const size_t n = parsed.positional.size();
    if (n < command->min_positional || n > command->max_positional) {
      usage = UsageError{n < command->min_positional
                             ? std::string("missing arguments")
                             : absl::StrCat("unexpected argument '",
                                            parsed.positional[command->max_positional], "'")};
    } else if (command->name == "download" && !parsed.Has("output")) {
      usage = UsageError{"-o FILE.npy is required"};
    }
  }
  if (usage.has_value()) {
    err << "gpuflow " << name << ": " << usage->message << "\nusage: gpuflow " << name << " "
        << command->arguments << "\nTry 'gpuflow " << name << " --help'.\n";
    return kExitUsage;
  }

  Context context(*command, std::move(parsed), environment, out, err);
  const absl::Status status = command->run(context);
  if (!status.ok()) {
    err << "gpuflow " << name << ": " << absl::StatusCodeToString(status.code()) << ": "
        << status.message() << "\n";
    return kExitError;
  }
  return kExitOk;
}

}  // namespace gpuflow::client::cli

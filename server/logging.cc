#include "server/logging.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gpuflow::server {

namespace {

void WriteToStderr(absl::string_view line) {
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

// JSON has no NaN or infinity; they print as null.
std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  return absl::StrFormat("%.9g", value);
}

// Bare when it is a plain word, else a quoted string (Go's %q style).
std::string TextValue(absl::string_view value) {
  bool bare = !value.empty();
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || c == '"' || c == '=' || c == '\\' || u == 0x7f) {
      bare = false;
      break;
    }
  }
  return bare ? std::string(value) : JsonQuote(value);
}

std::string FieldValue(const LogField::Value& value, LogFormat format) {
  struct Visitor {
    LogFormat format;
    std::string operator()(const std::string& s) const {
      return format == LogFormat::kJson ? JsonQuote(s) : TextValue(s);
    }
    std::string operator()(int64_t v) const { return absl::StrCat(v); }
    std::string operator()(double v) const { return JsonNumber(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
  };
  return std::visit(Visitor{format}, value);
}

// `time` as absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, UTC) writes it
// (milliseconds truncated), but with the part up to the second formatted
// once a second per thread: FormatTime took about 2 µs of every request's
// log line (bench/RESULTS.md, session 16).
std::string FormatLineTime(absl::Time time) {
  if (time == absl::InfiniteFuture() || time == absl::InfinitePast()) {
    return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, absl::UTCTimeZone());
  }
  thread_local int64_t cached_second = std::numeric_limits<int64_t>::min();
  thread_local std::string cached_prefix;
  const int64_t millis = absl::ToUnixMillis(time);
  // Floor division, so that times before 1970 keep FormatTime's digits.
  int64_t second = millis / 1000;
  int64_t milli = millis % 1000;
  if (milli < 0) {
    --second;
    milli += 1000;
  }
  if (second != cached_second) {
    cached_prefix =
        absl::FormatTime("%Y-%m-%dT%H:%M:%S", absl::FromUnixSeconds(second), absl::UTCTimeZone());
    cached_second = second;
  }
  std::string out;
  out.reserve(cached_prefix.size() + 5);
  out.append(cached_prefix);
  out.push_back('.');
  out.push_back(static_cast<char>('0' + milli / 100));
  out.push_back(static_cast<char>('0' + milli / 10 % 10));
  out.push_back(static_cast<char>('0' + milli % 10));
  out.push_back('Z');
  return out;
}

}  // namespace

absl::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name) {
  for (LogLevel level : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError}) {
    if (absl::EqualsIgnoreCase(name, LogLevelName(level))) return level;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("log level '", name, "': expected debug, info, warning or error"));
}

absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name) {
  if (absl::EqualsIgnoreCase(name, "text")) return LogFormat::kText;
  if (absl::EqualsIgnoreCase(name, "json")) return LogFormat::kJson;
  return absl::InvalidArgumentError(absl::StrCat("log format '", name, "': expected text or json"));
}

std::string JsonQuote(absl::string_view text) {
  std::string out = "\"";
  out.reserve(text.size() + 2);
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          absl::StrAppendFormat(&out, "\\u%04x", u);
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

Logger::Logger(LoggerOptions options)
    : format_(options.format),
      min_level_(options.min_level),
      sink_(options.sink ? std::move(options.sink) : WriteToStderr),
      clock_(options.clock ? std::move(options.clock) : [] { return absl::Now(); }) {}

std::string Logger::Format(LogLevel level, absl::string_view message,
                           absl::Span<const LogField> fields) const {
  const std::string time = FormatLineTime(clock_());
  const LogFormat format = format_.load();
  std::string line;
  if (format == LogFormat::kJson) {
    absl::StrAppend(&line, "{\"time\":\"", time, "\",\"level\":\"", LogLevelName(level),
                    "\",\"msg\":", JsonQuote(message));
    for (const LogField& field : fields) {
      absl::StrAppend(&line, ",", JsonQuote(field.key), ":", FieldValue(field.value, format));
    }
    line += '}';
    return line;
  }
  absl::StrAppend(&line, time, " gpuflowd: ");
  if (level != LogLevel::kInfo) absl::StrAppend(&line, LogLevelName(level), ": ");
  line.append(message.data(), message.size());
  for (const LogField& field : fields) {
    absl::StrAppend(&line, " ", field.key, "=", FieldValue(field.value, format));
  }
  return line;
}

void Logger::Log(LogLevel level, absl::string_view message, absl::Span<const LogField> fields) {
  if (!enabled(level)) return;
  std::string line = Format(level, message, fields);
  line += '\n';
  absl::MutexLock lock(&write_mu_);
  sink_(line);
}

}  // namespace gpuflow::server

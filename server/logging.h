// gpuflowd's log: one line per event on stderr, as text or as JSON lines.
//
//   Logger log({.format = LogFormat::kJson, .min_level = LogLevel::kDebug});
//   log.Info("rpc", {{"method", "Execute"}, {"code", "OK"}, {"duration_ms", 1.25}});
//
//   text: 2025-01-02T03:04:05.678Z gpuflowd: rpc method=Execute code=OK duration_ms=1.25
//   json: {"time":"2025-01-02T03:04:05.678Z","level":"info","msg":"rpc","method":"Execute",
//          "code":"OK","duration_ms":1.25}
//
// Text lines put "debug: ", "warning: " or "error: " before the message of
// those levels (info has no prefix); string values with spaces, quotes or
// control characters are quoted, with Go-style escapes. JSON strings escape
// quotes, backslashes and control characters.
//
// Thread-safe: lines from different threads never interleave. The format and
// level may change while logging goes on.
#ifndef GPUFLOW_SERVER_LOGGING_H_
#define GPUFLOW_SERVER_LOGGING_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace gpuflow::server {

enum class LogLevel : uint8_t { kDebug, kInfo, kWarning, kError };
enum class LogFormat : uint8_t { kText, kJson };

// "debug", "info", "warning", "error" / "text", "json".
absl::string_view LogLevelName(LogLevel level);
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name);
absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name);

// One key=value of a log line.
struct LogField {
  using Value = std::variant<std::string, int64_t, double, bool>;

  LogField(std::string key, std::string value) : key(std::move(key)), value(std::move(value)) {}
  LogField(std::string key, absl::string_view value)
      : key(std::move(key)), value(std::string(value)) {}
  LogField(std::string key, const char* value) : key(std::move(key)), value(std::string(value)) {}
  LogField(std::string key, int64_t value) : key(std::move(key)), value(value) {}
  LogField(std::string key, int value) : key(std::move(key)), value(int64_t{value}) {}
  LogField(std::string key, double value) : key(std::move(key)), value(value) {}
  LogField(std::string key, bool value) : key(std::move(key)), value(value) {}

  std::string key;
  Value value;
};

struct LoggerOptions {
  LogFormat format = LogFormat::kText;
  LogLevel min_level = LogLevel::kInfo;
  // Where lines go; stderr unless a test captures them.
  std::function<void(absl::string_view line)> sink = nullptr;
  // Injected for tests; absl::Now by default.
  std::function<absl::Time()> clock = nullptr;
};

class Logger {
 public:
  explicit Logger(LoggerOptions options = {});
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  void set_format(LogFormat format) { format_.store(format); }
  void set_min_level(LogLevel level) { min_level_.store(level); }
  // Whether lines of `level` are written (check before building costly fields).
  bool enabled(LogLevel level) const { return level >= min_level_.load(); }

  void Log(LogLevel level, absl::string_view message, absl::Span<const LogField> fields = {});
  void Debug(absl::string_view message, absl::Span<const LogField> fields = {}) {
    Log(LogLevel::kDebug, message, fields);
  }
  void Info(absl::string_view message, absl::Span<const LogField> fields = {}) {
    Log(LogLevel::kInfo, message, fields);
  }
  void Warning(absl::string_view message, absl::Span<const LogField> fields = {}) {
    Log(LogLevel::kWarning, message, fields);
  }
  void Error(absl::string_view message, absl::Span<const LogField> fields = {}) {
    Log(LogLevel::kError, message, fields);
  }

  // The line Log would write (without the newline), whatever the level.
  std::string Format(LogLevel level, absl::string_view message,
                     absl::Span<const LogField> fields) const;

 private:
  std::atomic<LogFormat> format_;
  std::atomic<LogLevel> min_level_;
  const std::function<void(absl::string_view)> sink_;
  const std::function<absl::Time()> clock_;
  absl::Mutex write_mu_;
};

// A JSON string literal with its quotes.
std::string JsonQuote(absl::string_view text);

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_LOGGING_H_

// Early-return helpers for absl::Status / absl::StatusOr inside clients/cpp.
// Internal to the client: other modules have their own.
#ifndef GPUFLOW_CLIENTS_CPP_STATUS_MACROS_INTERNAL_H_
#define GPUFLOW_CLIENTS_CPP_STATUS_MACROS_INTERNAL_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define GPUFLOW_CLIENT_CONCAT_INNER_(a, b) a##b
#define GPUFLOW_CLIENT_CONCAT_(a, b) GPUFLOW_CLIENT_CONCAT_INNER_(a, b)

// Returns the status of `expr` (an absl::Status) from the enclosing function
// unless it is OK.
#define GPUFLOW_CLIENT_RETURN_IF_ERROR(expr)            \
  do {                                                  \
    if (absl::Status _status = (expr); !_status.ok()) { \
      return _status;                                   \
    }                                                   \
  } while (false)

// `lhs = *expr` for an absl::StatusOr `expr`, or returns its status.
#define GPUFLOW_CLIENT_ASSIGN_OR_RETURN(lhs, expr) \
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN_IMPL_(GPUFLOW_CLIENT_CONCAT_(_statusor_, __LINE__), lhs, expr)
#define GPUFLOW_CLIENT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                          \
  if (!statusor.ok()) return std::move(statusor).status();         \
  lhs = *std::move(statusor)

#endif  // GPUFLOW_CLIENTS_CPP_STATUS_MACROS_INTERNAL_H_

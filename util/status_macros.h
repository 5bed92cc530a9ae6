// File: util/status_macros.h
//
// Propagation macros of the shape Abseil ships from LTS 20260526 on (Debian 12 has 20220623, without them).
//
//   KVSIM_RETURN_IF_ERROR(expr);            // returns the status of `expr` if it is not OK
//   KVSIM_ASSIGN_OR_RETURN(lhs, expr);      // `lhs = std::move(value)` or returns the error
//
// Example:
//   absl::StatusOr<Config> Load(const std::string& path) {
//     KVSIM_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
//     KVSIM_RETURN_IF_ERROR(Validate(text));
//     ...
//   }
#ifndef KVSIM_UTIL_STATUS_MACROS_H_
#define KVSIM_UTIL_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KVSIM_STATUS_CONCAT_INNER_(a, b) a##b
#define KVSIM_STATUS_CONCAT_(a, b) KVSIM_STATUS_CONCAT_INNER_(a, b)

#define KVSIM_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::absl::Status kvsim_status_ = (expr);         \
    if (!kvsim_status_.ok()) return kvsim_status_; \
  } while (0)

#define KVSIM_ASSIGN_OR_RETURN(lhs, expr) \
  KVSIM_ASSIGN_OR_RETURN_IMPL_(KVSIM_STATUS_CONCAT_(kvsim_statusor_, __LINE__), lhs, expr)

#define KVSIM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)  \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // KVSIM_UTIL_STATUS_MACROS_H_

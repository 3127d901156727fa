// Two macros for the commonest absl::Status boilerplate.
//
//   RETURN_IF_ERROR(store->PutClaim(claim));
//     returns the status from the enclosing function when it is not OK.
//   ASSIGN_OR_RETURN(std::string path, StagingPath(ns, volume, usage));
//     declares `path` from an absl::StatusOr's value, or returns its status.
//
// The enclosing function must return absl::Status or an absl::StatusOr. The
// left side of ASSIGN_OR_RETURN may be a declaration or an existing variable;
// a type with a comma in it needs an alias first.
#ifndef LUSTRE_CSI_PKG_BASE_STATUS_MACROS_H_
#define LUSTRE_CSI_PKG_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RETURN_IF_ERROR(expr)                               \
  do {                                                      \
    const ::absl::Status lustre_csi_status_macro_ = (expr); \
    if (!lustre_csi_status_macro_.ok()) {                   \
      return lustre_csi_status_macro_;                      \
    }                                                       \
  } while (false)

#define ASSIGN_OR_RETURN(lhs, expr)                                                            \
  LUSTRE_CSI_ASSIGN_OR_RETURN_IMPL_(LUSTRE_CSI_STATUS_MACRO_CONCAT_(lustre_csi_or_, __LINE__), \
                                    lhs, expr)

#define LUSTRE_CSI_STATUS_MACRO_CONCAT_INNER_(a, b) a##b
#define LUSTRE_CSI_STATUS_MACRO_CONCAT_(a, b) LUSTRE_CSI_STATUS_MACRO_CONCAT_INNER_(a, b)
#define LUSTRE_CSI_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                      \
  if (!statusor.ok()) return std::move(statusor).status();     \
  lhs = *std::move(statusor)

#endif  // LUSTRE_CSI_PKG_BASE_STATUS_MACROS_H_

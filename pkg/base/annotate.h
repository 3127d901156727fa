// The one way to add context to a status: the message grows, the code and
// every payload (an errno attached by pkg/volume's ErrnoError among them)
// stay.
#ifndef LUSTRE_CSI_PKG_BASE_ANNOTATE_H_
#define LUSTRE_CSI_PKG_BASE_ANNOTATE_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace lustre_csi::base {

// `status` with "<context>: " put in front of its message. OK stays OK; an
// empty context changes nothing.
absl::Status Annotate(const absl::Status& status, absl::string_view context);

// `status` with its message replaced by `message`; code and payloads kept.
// OK stays OK.
absl::Status WithMessage(const absl::Status& status, absl::string_view message);

}  // namespace lustre_csi::base

#endif  // LUSTRE_CSI_PKG_BASE_ANNOTATE_H_

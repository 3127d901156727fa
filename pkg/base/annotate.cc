#include "pkg/base/annotate.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace lustre_csi::base {

absl::Status WithMessage(const absl::Status& status, absl::string_view message) {
  if (status.ok()) return status;
  absl::Status out(status.code(), message);
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  if (status.ok() || context.empty()) return status;
  return WithMessage(status, absl::StrCat(context, ": ", status.message()));
}

}  // namespace lustre_csi::base

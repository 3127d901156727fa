#include "pkg/csimanager/path_segment.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace lustre_csi::csimanager {
namespace {

bool IsSafe(unsigned char c) { return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

absl::StatusOr<std::string> EscapeSegment(absl::string_view id, absl::string_view what) {
  if (id.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  std::string out;
  out.reserve(id.size());
  // "." and ".." are made of safe bytes but are not names; escape their dots.
  bool dots_only = id == "." || id == "..";
  for (unsigned char c : id) {
    if (IsSafe(c) && !dots_only) {
      out += static_cast<char>(c);
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  if (out.size() > kMaxSegmentLength) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is too long for a path segment (",
                                                   out.size(), " bytes escaped, at most ",
                                                   kMaxSegmentLength, ")"));
  }
  return out;
}

absl::StatusOr<std::string> UnescapeSegment(absl::string_view segment) {
  std::string out;
  for (size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] != '%') {
      out += segment[i];
      continue;
    }
    int hi = i + 1 < segment.size() ? HexValue(segment[i + 1]) : -1;
    int lo = i + 2 < segment.size() ? HexValue(segment[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return absl::InvalidArgumentError(absl::StrCat("malformed escape in \"", segment, "\""));
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

absl::Status ValidatePluginName(absl::string_view name) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid plugin name \"", absl::CHexEscape(name), "\": ", why));
  };
  if (name.empty()) return bad("empty");
  if (name.size() > 63) return bad("longer than 63 characters");
  for (unsigned char c : name) {
    if (!IsSafe(c)) return bad("only letters, digits, '-', '_' and '.' are allowed");
  }
  if (!absl::ascii_isalnum(name.front()) || !absl::ascii_isalnum(name.back())) {
    return bad("must start and end with a letter or digit");
  }
  return absl::OkStatus();
}

}  // namespace lustre_csi::csimanager

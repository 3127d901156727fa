#include "pkg/volume/safe_path.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "pkg/volume/sha256.h"

namespace lustre_csi::volume {
namespace {

// Escaped forms longer than this are shortened: prefix, '~', 64 hex digits.
constexpr size_t kHashedPrefix = kMaxPathSegment - 1 - 64;

bool IsPlainByte(unsigned char c, SegmentAlphabet alphabet) {
  if (alphabet == SegmentAlphabet::kPortable) return IsPortableFilenameByte(c);
  return c > 0x20 && c < 0x7f && c != '/' && c != '%' && c != '\\' && c != '~';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendEscaped(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out.push_back('%');
  out.push_back(kHex[c >> 4]);
  out.push_back(kHex[c & 0xf]);
}

}  // namespace

bool IsPortableFilenameByte(unsigned char c) {
  return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
}

absl::Status ValidatePathSegment(absl::string_view id, size_t max_len) {
  if (id.empty()) return absl::InvalidArgumentError("path segment is empty");
  if (id.size() > max_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("path segment is ", id.size(), " bytes long, more than ", max_len));
  }
  if (id == "." || id == "..") {
    return absl::InvalidArgumentError(absl::StrCat("path segment may not be \"", id, "\""));
  }
  if (id.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("path segment contains a NUL byte");
  }
  if (id.find('/') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("path segment \"", id, "\" contains '/'"));
  }
  return absl::OkStatus();
}

std::string EscapePathSegment(absl::string_view id, SegmentAlphabet alphabet) {
  if (id.empty()) return "%";
  std::string out;
  out.reserve(id.size());
  bool dots_only = id == "." || id == "..";
  for (char ch : id) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (IsPlainByte(c, alphabet) && !(dots_only && c == '.')) {
      out.push_back(ch);
    } else {
      AppendEscaped(out, c);
    }
  }
  if (out.size() <= kMaxPathSegment) return out;
  size_t cut = kHashedPrefix;
  // Never split a %XX escape.
  if (out[cut - 1] == '%') {
    cut -= 1;
  } else if (out[cut - 2] == '%') {
    cut -= 2;
  }
  out.resize(cut);
  absl::StrAppend(&out, "~", Sha256Hex(id));
  return out;
}

absl::StatusOr<std::string> UnescapePathSegment(absl::string_view segment,
                                                SegmentAlphabet alphabet) {
  if (segment == "%") return std::string();
  if (segment.empty()) return absl::InvalidArgumentError("escaped segment is empty");
  if (segment.find('~') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("segment \"", segment, "\" is a shortened (hashed) name"));
  }
  std::string out;
  out.reserve(segment.size());
  for (size_t i = 0; i < segment.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(segment[i]);
    if (c == '%') {
      int hi = i + 2 < segment.size() ? HexValue(segment[i + 1]) : -1;
      int lo = hi >= 0 ? HexValue(segment[i + 2]) : -1;
      if (lo < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("segment \"", segment, "\" has a bad escape at byte ", i));
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (IsPlainByte(c, alphabet)) {
      out.push_back(static_cast<char>(c));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("segment \"", segment, "\" has an unescaped byte at ", i));
    }
  }
  if (EscapePathSegment(out, alphabet) != segment) {
    return absl::InvalidArgumentError(
        absl::StrCat("segment \"", segment, "\" is not in canonical escaped form"));
  }
  return out;
}

std::string CleanPath(absl::string_view path) {
  if (path.empty()) return ".";
  bool absolute = path[0] == '/';
  std::vector<absl::string_view> parts;
  size_t leading_dotdots = 0;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") {
      if (parts.size() > leading_dotdots) {
        parts.pop_back();
      } else if (!absolute) {
        parts.push_back(part);
        ++leading_dotdots;
      }
      continue;
    }
    parts.push_back(part);
  }
  std::string joined = absl::StrJoin(parts, "/");
  if (absolute) return absl::StrCat("/", joined);
  return joined.empty() ? "." : joined;
}

std::string ParentPath(absl::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == absl::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

bool IsPathBeneath(absl::string_view root, absl::string_view path) {
  std::string r = CleanPath(root);
  std::string p = CleanPath(path);
  if (p == r) return true;
  if (r == "/") return !p.empty() && p[0] == '/';
  return p.size() > r.size() && p.compare(0, r.size(), r) == 0 && p[r.size()] == '/';
}

absl::StatusOr<std::string> JoinBeneath(absl::string_view root, absl::string_view relative) {
  if (root.empty()) return absl::InvalidArgumentError("root path is empty");
  if (root.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("root path contains a NUL byte");
  }
  if (relative.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("relative path contains a NUL byte");
  }
  if (!relative.empty() && relative[0] == '/') {
    return absl::InvalidArgumentError(absl::StrCat("relative path \"", relative, "\" is absolute"));
  }
  std::vector<absl::string_view> parts;
  for (absl::string_view part : absl::StrSplit(relative, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") {
      if (parts.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("relative path \"", relative, "\" climbs above its root"));
      }
      parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string base = CleanPath(root);
  if (parts.empty()) return base;
  return absl::StrCat(base == "/" ? "" : base, "/", absl::StrJoin(parts, "/"));
}

}  // namespace lustre_csi::volume

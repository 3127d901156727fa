#include "pkg/volume/safe_path.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/openat2.h"
#include "pkg/volume/sha256.h"

namespace lustre_csi::volume {
namespace {

// Escaped forms longer than this are shortened: prefix, '~', 64 hex digits.
constexpr size_t kHashedPrefix = kMaxPathSegment - 1 - 64;

bool IsPlainByte(unsigned char c) {
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

absl::StatusOr<std::string> ReadFdPath(int fd) {
  std::string link = absl::StrCat("/proc/self/fd/", fd);
  std::string buf(4096, '\0');
  ssize_t n = readlink(link.c_str(), buf.data(), buf.size());
  if (n < 0) return ErrnoError(errno, absl::StrCat("readlink ", link));
  if (static_cast<size_t>(n) >= buf.size()) {
    return ErrnoError(ENAMETOOLONG, absl::StrCat("readlink ", link));
  }
  buf.resize(n);
  return buf;
}

}  // namespace

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

std::string EscapePathSegment(absl::string_view id) {
  if (id.empty()) return "%";
  std::string out;
  out.reserve(id.size());
  bool dots_only = id == "." || id == "..";
  for (char ch : id) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (IsPlainByte(c) && !(dots_only && c == '.')) {
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

absl::StatusOr<std::string> UnescapePathSegment(absl::string_view segment) {
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
    } else if (IsPlainByte(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("segment \"", segment, "\" has an unescaped byte at ", i));
    }
  }
  if (EscapePathSegment(out) != segment) {
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

// Opens `relative` beneath `root` (O_PATH); on success `*root_fd_out` is the
// open root, which the caller closes too.
absl::StatusOr<int> OpenBeneathImpl(const std::string& root, absl::string_view relative,
                                    bool no_xdev, int* root_fd_out);

absl::StatusOr<std::string> ResolveBeneath(const std::string& root, absl::string_view relative) {
  int root_fd = -1;
  absl::StatusOr<int> fd = OpenBeneathImpl(root, relative, false, &root_fd);
  if (!fd.ok()) return fd.status();
  absl::Cleanup close_both = [root_fd, &fd] {
    close(*fd);
    close(root_fd);
  };
  std::string context = absl::StrCat("resolve \"", relative, "\" beneath ", root);
  absl::StatusOr<std::string> root_path = ReadFdPath(root_fd);
  if (!root_path.ok()) return root_path.status();
  absl::StatusOr<std::string> path = ReadFdPath(*fd);
  if (!path.ok()) return path.status();
  if (!IsPathBeneath(*root_path, *path)) {
    return absl::InternalError(
        absl::StrCat(context, ": kernel answered ", *path, ", outside ", *root_path));
  }
  return path;
}

absl::StatusOr<int> OpenPathBeneath(const std::string& root, absl::string_view relative,
                                    bool no_xdev) {
  int root_fd = -1;
  absl::StatusOr<int> fd = OpenBeneathImpl(root, relative, no_xdev, &root_fd);
  if (root_fd >= 0) close(root_fd);
  return fd;
}

absl::StatusOr<int> OpenBeneathImpl(const std::string& root, absl::string_view relative,
                                    bool no_xdev, int* root_fd_out) {
  if (root.empty()) return absl::InvalidArgumentError("root path is empty");
  if (root.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("root path contains a NUL byte");
  }
  if (relative.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("relative path contains a NUL byte");
  }
  if (!relative.empty() && relative[0] == '/') {
    return absl::InvalidArgumentError(absl::StrCat("relative path \"", relative, "\" is absolute"));
  }
  int root_fd = open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return ErrnoError(errno, absl::StrCat("open ", root));
  absl::Cleanup close_root = [root_fd] { close(root_fd); };

  std::string rel = relative.empty() ? std::string(".") : std::string(relative);
  const uint64_t resolve =
      RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (no_xdev ? RESOLVE_NO_XDEV : 0);
  int fd = -1;
  int err = 0;
  // EAGAIN: a rename or mount raced with the walk; the kernel asks us to retry.
  for (int attempt = 0; attempt < 8; ++attempt) {
    fd = OpenAt2(root_fd, rel.c_str(), O_PATH | O_CLOEXEC, 0, resolve);
    err = fd < 0 ? errno : 0;
    if (err != EAGAIN) break;
  }
  std::string context = absl::StrCat("resolve \"", relative, "\" beneath ", root);
  if (fd < 0) {
    switch (err) {
      case EXDEV:
        return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, err,
                                  absl::StrCat(context, ": leaves the root"));
      case ELOOP:
        return ErrnoErrorWithCode(absl::StatusCode::kInvalidArgument, err,
                                  absl::StrCat(context, ": symlink loop or magic link"));
      case ENOSYS:
        return ErrnoErrorWithCode(absl::StatusCode::kUnimplemented, err, context);
      default:
        return ErrnoError(err, context);
    }
  }
  std::move(close_root).Cancel();
  *root_fd_out = root_fd;
  return fd;
}

}  // namespace lustre_csi::volume

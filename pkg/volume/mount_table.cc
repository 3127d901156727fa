#include "pkg/volume/mount_table.h"

#include <cstdint>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pkg/volume/safe_path.h"

namespace lustre_csi::volume {
namespace {

bool IsOctal(char c) { return c >= '0' && c <= '7'; }

absl::Status LineError(size_t line_no, absl::string_view what, absl::string_view line) {
  return absl::InvalidArgumentError(
      absl::StrCat("mountinfo line ", line_no, ": ", what, ": \"", absl::CHexEscape(line), "\""));
}

}  // namespace

std::string UnescapeMountInfoField(absl::string_view field) {
  if (field.find('\\') == absl::string_view::npos) return std::string(field);
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && IsOctal(field[i + 1]) &&
        IsOctal(field[i + 2]) && IsOctal(field[i + 3]) && field[i + 1] <= '3') {
      out.push_back(static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                                      (field[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

absl::StatusOr<std::vector<MountEntry>> ParseMountInfo(absl::string_view text) {
  std::vector<MountEntry> entries;
  size_t line_no = 0;
  std::vector<absl::string_view> fields;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (line.empty()) continue;
    fields = absl::StrSplit(line, ' ');
    size_t sep = 6;
    while (sep < fields.size() && fields[sep] != "-") ++sep;
    if (fields.size() < 10 || sep >= fields.size()) {
      return LineError(line_no, "too few fields or no \"-\" separator", line);
    }
    if (fields.size() - sep - 1 < 3) return LineError(line_no, "too few fields after \"-\"", line);
    MountEntry e;
    if (!absl::SimpleAtoi(fields[0], &e.mount_id) || !absl::SimpleAtoi(fields[1], &e.parent_id)) {
      return LineError(line_no, "bad mount or parent id", line);
    }
    std::pair<absl::string_view, absl::string_view> dev =
        absl::StrSplit(fields[2], absl::MaxSplits(':', 1));
    if (!absl::SimpleAtoi(dev.first, &e.major) || !absl::SimpleAtoi(dev.second, &e.minor)) {
      return LineError(line_no, "bad major:minor", line);
    }
    for (size_t i = 3; i < 6; ++i) {
      if (fields[i].empty()) return LineError(line_no, "empty field", line);
    }
    e.root = UnescapeMountInfoField(fields[3]);
    e.mount_point = UnescapeMountInfoField(fields[4]);
    e.options = UnescapeMountInfoField(fields[5]);
    for (size_t i = 6; i < sep; ++i) {
      if (fields[i].empty()) return LineError(line_no, "empty optional field", line);
      e.optional_fields.push_back(UnescapeMountInfoField(fields[i]));
    }
    if (fields[sep + 1].empty()) return LineError(line_no, "empty file system type", line);
    e.fs_type = UnescapeMountInfoField(fields[sep + 1]);
    e.source = UnescapeMountInfoField(fields[sep + 2]);
    // Super options should not hold a raw space, but keep any that do.
    std::string super(fields[sep + 3]);
    for (size_t i = sep + 4; i < fields.size(); ++i) absl::StrAppend(&super, " ", fields[i]);
    e.super_options = UnescapeMountInfoField(super);
    entries.push_back(std::move(e));
  }
  return entries;
}

std::optional<MountEntry> TopMountAt(const std::vector<MountEntry>& table, absl::string_view path) {
  std::string clean = CleanPath(path);
  std::vector<const MountEntry*> here;
  for (const MountEntry& e : table) {
    if (e.mount_point == clean) here.push_back(&e);
  }
  const MountEntry* top = nullptr;
  for (const MountEntry* candidate : here) {
    bool covered = false;
    for (const MountEntry* other : here) {
      if (other != candidate && other->parent_id == candidate->mount_id) covered = true;
    }
    if (!covered) top = candidate;  // the last uncovered one: the most recent
  }
  if (top == nullptr) return std::nullopt;
  return *top;
}

absl::StatusOr<bool> MountChecker::IsMountPoint(const std::string& path) {
  std::string clean = CleanPath(path);
  absl::StatusOr<FileInfo> info = sys_->Stat(clean);
  if (!info.ok()) return info.status();
  return IsMountPoint(clean, *info);
}

absl::StatusOr<bool> MountChecker::IsMountPoint(const std::string& path, const FileInfo& info) {
  if (IsSymlinkMode(info.mode)) return false;
  if (info.has_mount_root) return info.mount_root;
  std::string clean = CleanPath(path);
  if (clean == "/") return true;
  // "<parent>/." so that a symlink in the parent's place is followed, as it
  // was for `path` itself.
  std::string parent_path = ParentPath(clean);
  absl::StatusOr<FileInfo> parent =
      sys_->Stat(parent_path == "/" ? parent_path : parent_path + "/.");
  if (!parent.ok()) return parent.status();
  if (info.has_mount_id && parent->has_mount_id) return info.mount_id != parent->mount_id;
  if (info.dev != parent->dev) return true;
  // Same device and no mount ids: only the table can tell a bind mount from
  // the same file system apart from a plain directory.
  absl::StatusOr<std::optional<MountEntry>> entry = FindMountAt(clean);
  if (!entry.ok()) return entry.status();
  return entry->has_value();
}

absl::StatusOr<MountChecker::Look> MountChecker::LookAt(const std::string& path,
                                                        std::optional<uint64_t>* parent_id) {
  std::optional<uint64_t> own_parent_id;
  if (parent_id == nullptr) parent_id = &own_parent_id;
  absl::StatusOr<uint64_t> id = sys_->MountIdAt(path, /*follow=*/false);
  if (absl::IsNotFound(id.status())) return Look();
  if (!id.ok()) return id.status();
  if (!parent_id->has_value()) {
    // The parent as the target's walk reached it.
    absl::StatusOr<uint64_t> parent = sys_->MountIdAt(ParentPath(path), /*follow=*/true);
    if (!parent.ok()) return parent.status();
    *parent_id = *parent;
  }
  Look look;
  look.mounted = *id != **parent_id;
  if (look.mounted) {
    look.exists = true;
    return look;
  }
  absl::StatusOr<FileInfo> info = sys_->StatAt(kAtCwd, path);
  if (absl::IsNotFound(info.status())) return Look();  // gone since
  if (!info.ok()) return info.status();
  look.exists = true;
  look.info = *info;
  return look;
}

absl::StatusOr<std::optional<MountEntry>> MountChecker::FindMountAt(const std::string& path) {
  absl::StatusOr<std::vector<MountEntry>> table = List();
  if (!table.ok()) return table.status();
  return TopMountAt(*table, path);
}

absl::StatusOr<std::vector<MountEntry>> MountChecker::List() {
  absl::StatusOr<std::string> text = sys_->ReadMountInfo();
  if (!text.ok()) return text.status();
  return ParseMountInfo(*text);
}

}  // namespace lustre_csi::volume

#include "pkg/driver/lfs.h"

#include <glog/logging.h>

#include <cerrno>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pkg/base/annotate.h"
#include "pkg/driver/host_tool.h"
#include "pkg/volume/errno_status.h"

namespace lustre_csi::driver {
namespace {

absl::Status CheckPath(const std::string& path) {
  if (path.empty() || path[0] != '/' || path.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("lfs path \"", absl::CEscape(path), "\" is not an absolute path"));
  }
  return absl::OkStatus();
}

// lfs exits 1 for most failures and prints the reason (strerror's words):
// the errno is read from the output. Other statuses are errnos where lfs
// returns one (a failed open), except 4, its usage error.
int LfsErrno(const volume::ProcessResult& result) {
  struct Said {
    const char* words;
    int err;
  };
  static constexpr Said kSaid[] = {
      {"Operation not supported", EOPNOTSUPP},
      {"Operation not permitted", EPERM},
      {"Permission denied", EACCES},
      {"No such file or directory", ENOENT},
      {"does not exist", EINVAL},  // setstripe: pool '...' does not exist
      {"Invalid argument", EINVAL},
      {"Numerical result out of range", ERANGE},
      {"Read-only file system", EROFS},
      {"Disk quota exceeded", EDQUOT},
      {"No space left on device", ENOSPC},
      {"Input/output error", EIO},
      {"Connection timed out", ETIMEDOUT},
      {"Transport endpoint is not connected", ENOTCONN},
  };
  for (const Said& said : kSaid) {
    if (absl::StrContains(result.output, said.words)) return said.err;
  }
  if (result.exit_code == 1 || result.exit_code == 4) return 0;
  return result.exit_code;
}

class LfsTool : public LustreTool {
 public:
  LfsTool(volume::MountNamespace* ns, LfsOptions options) : ns_(ns), options_(std::move(options)) {}

  absl::Status SetProject(const std::string& dir, uint32_t id) override {
    if (absl::Status s = CheckPath(dir); !s.ok()) return s;
    return Run({"project", "-p", absl::StrCat(id), "-s", dir});
  }

  absl::Status SetProjectQuota(const std::string& mount, uint32_t id,
                               const QuotaLimits& limits) override {
    if (absl::Status s = CheckPath(mount); !s.ok()) return s;
    absl::Status s =
        Run({"setquota", "-p", absl::StrCat(id), "-B", absl::StrCat(limits.block_kib, "k"), "-I",
             absl::StrCat(limits.inodes), mount});
    int err = volume::ErrnoOf(s).value_or(0);
    if (err == EPERM || err == EACCES) {
      return base::WithMessage(
          s, absl::StrCat(s.message(),
                          " (the servers refused to set the quota: they squash this node's root; "
                          "add the controller nodes' NIDs to the file system's nosquash_nids)"));
    }
    return s;
  }

  absl::Status SetDefaultLayout(const std::string& dir, const StripeLayout& layout) override {
    if (absl::Status s = CheckPath(dir); !s.ok()) return s;
    std::vector<std::string> args = {"setstripe"};
    if (layout.count.has_value()) args.insert(args.end(), {"-c", absl::StrCat(*layout.count)});
    if (layout.size.has_value()) args.insert(args.end(), {"-S", absl::StrCat(*layout.size)});
    if (!layout.pool.empty()) args.insert(args.end(), {"-p", layout.pool});
    args.push_back(dir);
    return Run(args);
  }

 private:
  absl::Status Run(std::vector<std::string> args) {
    std::vector<std::string> argv = {options_.path};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<volume::ProcessResult> result =
        RunHostTool(*ns_, argv, options_.timeout, LfsErrno);
    if (result.ok()) {
      VLOG(1) << DescribeRun(*ns_, argv) << ": done";
      return absl::OkStatus();
    }
    const absl::Status& s = result.status();
    int err = volume::ErrnoOf(s).value_or(0);
    if (err == EOPNOTSUPP) {
      return base::WithMessage(
          s, absl::StrCat(s.message(),
                          " (the file system has no project quotas: enable them on every MDT and "
                          "OST, see docs/deploy.md, or leave sub-dir-quota out of the "
                          "StorageClass)"));
    }
    if (s.code() == absl::StatusCode::kFailedPrecondition && err != EPERM && err != ENODEV) {
      return base::WithMessage(
          s, absl::StrCat(s.message(), " (the Lustre tool ", options_.path,
                          " cannot run there: install the Lustre client tools on the host, or "
                          "name lfs with --lfs)"));
    }
    return s;
  }

  volume::MountNamespace* const ns_;
  const LfsOptions options_;
};

}  // namespace

std::unique_ptr<LustreTool> NewLfsTool(volume::MountNamespace* ns, LfsOptions options) {
  return std::make_unique<LfsTool>(ns, std::move(options));
}

}  // namespace lustre_csi::driver

#include "pkg/driver/parameters.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "pkg/driver/volume_id.h"

namespace lustre_csi::driver {
namespace {

constexpr size_t kMaxSubDirLength = 4096;

struct TemplateVar {
  const char* variable;
  const char* context_key;
};

constexpr TemplateVar kTemplateVars[] = {
    {"pod.metadata.name", kPodName}, {"pod.metadata.namespace", kPodNamespace},
    {"pod.metadata.uid", kPodUid},   {"serviceAccount.metadata.name", kServiceAccountName},
    {"pvc.metadata.name", kPvcName}, {"pvc.metadata.namespace", kPvcNamespace},
    {"pv.metadata.name", kPvName},
};

constexpr const char* kAzureProvisioningKeys[] = {
    "resource-group-name",
    "location",
    "vnet-resource-group",
    "vnet-name",
    "subnet-name",
    "maintenance-day-of-week",
    "maintenance-time-of-day-utc",
    "sku-name",
    "zone",
    "zones",
    "tags",
    "identities",
};

bool IsKubernetesKey(absl::string_view key) {
  return absl::StartsWithIgnoreCase(key, "csi.storage.k8s.io/") ||
         absl::StartsWithIgnoreCase(key, "storage.kubernetes.io/");
}

absl::Status ValidateMgsAddress(absl::string_view mgs) {
  if (mgs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(kParamMgsIpAddress, " must be provided"));
  }
  if (mgs.size() > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(kParamMgsIpAddress, " is too long"));
  }
  for (char c : mgs) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != ':' && c != '@' && c != ',' && c != '-' &&
        c != '_') {
      return absl::InvalidArgumentError(
          absl::StrCat(kParamMgsIpAddress, " '", absl::CHexEscape(mgs),
                       "' has a character other than ", "letters, digits and . : @ , - _"));
    }
  }
  // A failover list ("a:b") of NID lists ("a,b"): every address is
  // non-empty and none could be read as an option by a mount helper.
  for (absl::string_view address : absl::StrSplit(mgs, absl::ByAnyChar(":,"))) {
    if (address.empty() || address[0] == '-' || address[0] == '@') {
      return absl::InvalidArgumentError(absl::StrCat(
          kParamMgsIpAddress, " '", absl::CHexEscape(mgs),
          "' must be addresses or NIDs separated by ':' (failover) or ',' (NIDs of one MGS); '",
          absl::CHexEscape(address), "' is not one"));
    }
  }
  return absl::OkStatus();
}

// Shared by every mount mode, so that what one accepts the others accept: a
// value that starts with '-' could be read as an option where it reaches a
// command line.
absl::Status RefuseOptionLike(absl::string_view key, absl::string_view value) {
  if (!value.empty() && value[0] == '-') {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter ", key, " '", absl::CHexEscape(value), "' cannot start with '-'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> ParseUint(absl::string_view key, absl::string_view value, int base,
                                   uint32_t max) {
  uint32_t out = 0;
  bool ok = base == 8 ? absl::numbers_internal::safe_strtou32_base(value, &out, 8)
                      : absl::SimpleAtoi(value, &out);
  if (!ok || out > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter ", key, " has a bad value '", absl::CHexEscape(value), "'"));
  }
  return out;
}

absl::StatusOr<bool> ParseBoolParam(absl::string_view key, absl::string_view value) {
  if (absl::EqualsIgnoreCase(value, "true")) return true;
  if (absl::EqualsIgnoreCase(value, "false") || value.empty()) return false;
  return absl::InvalidArgumentError(
      absl::StrCat("parameter ", key, " must be true or false, not '", value, "'"));
}

// A size in bytes, with an optional binary suffix (K, M, G; either case).
absl::StatusOr<uint64_t> ParseSize(absl::string_view key, absl::string_view value) {
  absl::string_view digits = value;
  uint64_t unit = 1;
  if (!digits.empty()) {
    switch (absl::ascii_tolower(digits.back())) {
      case 'k':
        unit = uint64_t{1} << 10;
        break;
      case 'm':
        unit = uint64_t{1} << 20;
        break;
      case 'g':
        unit = uint64_t{1} << 30;
        break;
      default:
        break;
    }
    if (unit != 1) digits.remove_suffix(1);
  }
  uint64_t n = 0;
  if (digits.empty() || !absl::ascii_isdigit(digits[0]) || !absl::SimpleAtoi(digits, &n) ||
      n > UINT64_MAX / unit) {
    return absl::InvalidArgumentError(absl::StrCat("parameter ", key, " has a bad size '",
                                                   absl::CHexEscape(value),
                                                   "' (bytes, or a number with K, M or G)"));
  }
  return n * unit;
}

absl::Status ParseLayoutKey(absl::string_view key, absl::string_view k, absl::string_view value,
                            SubDirProvisioning& out) {
  if (k == kParamSubDirStripeCount) {
    int64_t count = 0;
    if (!absl::SimpleAtoi(value, &count) || count < -1 || count > kMaxStripeCount) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter ", key, " '", absl::CHexEscape(value), "' must be -1 (every OST), 0 (the ",
          "file system's default) or a count up to ", kMaxStripeCount));
    }
    out.stripe_count = count;
  } else if (k == kParamSubDirStripeSize) {
    absl::StatusOr<uint64_t> size = ParseSize(key, value);
    if (!size.ok()) return size.status();
    if (*size == 0 || *size % kStripeSizeUnit != 0 || *size > kMaxStripeSize) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter ", key, " '", absl::CHexEscape(value),
                       "' must be a multiple of 64 KiB below 4 GiB (for example 1M)"));
    }
    out.stripe_size = *size;
  } else {  // kParamSubDirStripePool
    bool ok = !value.empty() && value.size() <= kMaxPoolName && value[0] != '-';
    for (char c : value) ok = ok && (absl::ascii_isalnum(c) || c == '_' || c == '-');
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter ", key, " '", absl::CHexEscape(value), "' must be 1 to ",
                       kMaxPoolName, " of [A-Za-z0-9_-], not starting with '-'"));
    }
    out.stripe_pool = std::string(value);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateFsName(absl::string_view fs) {
  bool ok = !fs.empty() && fs.size() <= 8;
  for (char c : fs) ok = ok && (absl::ascii_isalnum(c) || c == '_' || c == '-');
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(kParamFsName, " '", absl::CHexEscape(fs),
                                                   "' must be 1 to 8 of [A-Za-z0-9_-]"));
  }
  return absl::OkStatus();
}

bool IsAzureProvisioningKey(absl::string_view lower_key) {
  for (const char* k : kAzureProvisioningKeys) {
    if (lower_key == k) return true;
  }
  return false;
}

absl::StatusOr<LustreParams> ParseLustreParams(const std::map<std::string, std::string>& params) {
  LustreParams out;
  std::vector<std::string> unknown;
  for (const auto& [key, value] : params) {
    std::string k = absl::AsciiStrToLower(key);
    if (k == kParamMgsIpAddress) {
      out.mgs_address = value;
    } else if (k == kParamFsName) {
      out.fs_name = value;
      out.fs_name_given = true;
    } else if (k == kParamSubDir) {
      absl::string_view sub_dir = TrimSlashes(value);
      if (sub_dir.empty() && !value.empty()) {
        // As the Go driver: "/" is no sub-dir; leave the key out for the root.
        return absl::InvalidArgumentError(absl::StrCat(
            "parameter ", key, " '", absl::CHexEscape(value),
            "' names the file system root; leave ", kParamSubDir, " out to mount the root"));
      }
      out.sub_dir = std::string(sub_dir);
      out.sub_dir_given = true;
    } else if (k == kParamCreatedByDynamicProvisioning) {
      // Written by CreateVolume into the context; carries nothing for us.
    } else if (IsAzureProvisioningKey(k)) {
      out.azure_keys.push_back(k);
    } else if (k == kParamCreateSubDir) {
      absl::StatusOr<bool> b = ParseBoolParam(key, value);
      if (!b.ok()) return b.status();
      out.provisioning.enabled = *b;
    } else if (k == kParamSubDirMode) {
      absl::StatusOr<uint32_t> mode = ParseUint(key, value, 8, 07777);
      if (!mode.ok()) return mode.status();
      out.provisioning.mode = *mode;
    } else if (k == kParamSubDirUid || k == kParamSubDirGid) {
      absl::StatusOr<uint32_t> id = ParseUint(key, value, 10, 0xfffffffe);
      if (!id.ok()) return id.status();
      (k == kParamSubDirUid ? out.provisioning.uid : out.provisioning.gid) = *id;
    } else if (k == kParamSubDirOnDelete) {
      std::string policy = absl::AsciiStrToLower(value);
      if (policy != "delete" && policy != "retain") {
        return absl::InvalidArgumentError(absl::StrCat(
            "parameter ", key, " must be delete or retain, not '", absl::CHexEscape(value), "'"));
      }
      out.provisioning.delete_on_delete = policy == "delete";
    } else if (k == kParamSubDirQuota) {
      absl::StatusOr<bool> b = ParseBoolParam(key, value);
      if (!b.ok()) return b.status();
      out.provisioning.quota = *b;
    } else if (k == kParamSubDirInodeLimit) {
      uint64_t n = 0;
      if (!absl::SimpleAtoi(value, &n) || n == 0 || value[0] == '+') {
        return absl::InvalidArgumentError(absl::StrCat("parameter ", key, " '",
                                                       absl::CHexEscape(value),
                                                       "' must be a number of inodes above 0"));
      }
      out.provisioning.inode_limit = n;
    } else if (k == kParamSubDirStripeCount || k == kParamSubDirStripeSize ||
               k == kParamSubDirStripePool) {
      if (absl::Status s = ParseLayoutKey(key, k, value, out.provisioning); !s.ok()) return s;
    } else if (IsKubernetesKey(key)) {
      out.kubernetes[key] = value;
    } else {
      unknown.push_back(absl::CHexEscape(key));
    }
  }
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown parameter(s): ", absl::StrJoin(unknown, ", "), "; known: ", kParamMgsIpAddress,
        ", ", kParamFsName, ", ", kParamSubDir, ", ", kParamCreateSubDir, ", ", kParamSubDirMode,
        ", ", kParamSubDirUid, ", ", kParamSubDirGid, ", ", kParamSubDirOnDelete, ", ",
        kParamSubDirQuota, ", ", kParamSubDirInodeLimit, ", ", kParamSubDirStripeCount, ", ",
        kParamSubDirStripeSize, ", ", kParamSubDirStripePool));
  }
  const SubDirProvisioning& prov = out.provisioning;
  if (!prov.enabled && (prov.quota || prov.inode_limit != 0 || prov.has_layout())) {
    return absl::InvalidArgumentError(absl::StrCat(
        kParamSubDirQuota, ", ", kParamSubDirInodeLimit, " and the ", "sub-dir-stripe-* keys ",
        "apply to provisioned sub-dirs: they need ", kParamCreateSubDir, ": \"true\""));
  }
  if (prov.inode_limit != 0 && !prov.quota) {
    return absl::InvalidArgumentError(
        absl::StrCat(kParamSubDirInodeLimit, " needs ", kParamSubDirQuota, ": \"true\""));
  }
  if (out.mgs_address.empty() && !out.azure_keys.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kParamMgsIpAddress,
                     " must be provided: this driver mounts existing Lustre file systems "
                     "and does not create Azure Managed Lustre clusters (",
                     absl::StrJoin(out.azure_keys, ", "),
                     " ask for one); create the cluster first and name its MGS"));
  }
  if (absl::Status s = ValidateMgsAddress(out.mgs_address); !s.ok()) return s;
  if (absl::Status s = RefuseOptionLike(kParamFsName, out.fs_name); !s.ok()) return s;
  if (absl::Status s = RefuseOptionLike(kParamSubDir, out.sub_dir); !s.ok()) return s;
  if (out.fs_name.empty()) out.fs_name = kDefaultFsName;
  if (absl::Status s = ValidateFsName(out.fs_name); !s.ok()) return s;
  return out;
}

absl::StatusOr<std::string> FillSubDir(absl::string_view sub_dir,
                                       const std::map<std::string, std::string>& kubernetes) {
  if (sub_dir.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("sub-dir contains a NUL byte");
  }
  std::string filled;
  absl::string_view rest = sub_dir;
  while (!rest.empty()) {
    size_t start = rest.find("${");
    if (start == absl::string_view::npos) {
      filled.append(rest.data(), rest.size());
      break;
    }
    filled.append(rest.data(), start);
    size_t end = rest.find('}', start);
    if (end == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("sub-dir '", absl::CHexEscape(sub_dir), "' has an unterminated ${"));
    }
    absl::string_view var = rest.substr(start + 2, end - start - 2);
    const TemplateVar* found = nullptr;
    for (const TemplateVar& t : kTemplateVars) {
      if (var == t.variable) found = &t;
    }
    if (found == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sub-dir uses unknown variable ${", absl::CHexEscape(var),
          "}; known: ${pod.metadata.name}, ${pod.metadata.namespace}, ${pod.metadata.uid}, "
          "${serviceAccount.metadata.name}, ${pvc.metadata.name}, ${pvc.metadata.namespace}, "
          "${pv.metadata.name}"));
    }
    std::string value;
    for (const auto& [key, v] : kubernetes) {
      if (absl::EqualsIgnoreCase(key, found->context_key)) value = v;
    }
    if (value.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sub-dir uses ${", found->variable, "} but the volume context has no ",
                       found->context_key,
                       " (pod facts need podInfoOnMount: true on the CSIDriver; PVC and PV "
                       "facts need the provisioner's --extra-create-metadata)"));
    }
    if (value == "." || value == ".." || value.find('/') != std::string::npos ||
        value.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("value '", absl::CHexEscape(value), "' of ${",
                                                     found->variable,
                                                     "} cannot be a path segment"));
    }
    filled += value;
    rest.remove_prefix(end + 1);
  }

  if (absl::StartsWith(filled, "/")) {
    return absl::InvalidArgumentError(
        absl::StrCat("sub-dir '", absl::CHexEscape(filled), "' must be relative to the fs root"));
  }
  std::vector<absl::string_view> parts;
  for (absl::string_view part : absl::StrSplit(filled, '/', absl::SkipEmpty())) {
    if (part == "." || part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("sub-dir '", absl::CHexEscape(filled), "' has a '", part, "' component"));
    }
    parts.push_back(part);
  }
  std::string normalised = absl::StrJoin(parts, "/");
  if (normalised.size() > kMaxSubDirLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("sub-dir is ", normalised.size(), " bytes long; at most ", kMaxSubDirLength));
  }
  return normalised;
}

absl::Status CheckSubDirShape(absl::string_view sub_dir) {
  std::map<std::string, std::string> stand_in;
  for (const TemplateVar& t : kTemplateVars) stand_in.emplace(t.context_key, "x");
  return FillSubDir(sub_dir, stand_in).status();
}

absl::StatusOr<LustreParams> VolumeParams(absl::string_view volume_id,
                                          const std::map<std::string, std::string>& context) {
  absl::StatusOr<LustreParams> params = ParseLustreParams(context);
  if (!params.ok()) return params.status();
  absl::StatusOr<VolumeId> id = ParseValidVolumeId(volume_id);
  if (absl::IsNotFound(id.status())) return params;  // an opaque handle: the context alone
  if (!id.ok()) return id.status();
  if (!params->sub_dir_given) params->sub_dir = id->sub_dir;
  if (!params->fs_name_given) params->fs_name = id->fs_name;
  return params;
}

absl::Status ValidateVolumeIdFields(const VolumeId& id) {
  if (absl::Status s = ValidateMgsAddress(id.mgs_address); !s.ok()) return s;
  if (absl::Status s = ValidateFsName(id.fs_name); !s.ok()) return s;
  if (absl::Status s = RefuseOptionLike(kParamFsName, id.fs_name); !s.ok()) return s;
  if (absl::Status s = RefuseOptionLike(kParamSubDir, id.sub_dir); !s.ok()) return s;
  return CheckSubDirShape(id.sub_dir);
}

absl::StatusOr<VolumeId> ParseValidVolumeId(absl::string_view volume_id) {
  absl::StatusOr<VolumeId> id = ParseVolumeId(volume_id);
  if (!id.ok()) {
    return absl::NotFoundError(absl::StrCat(absl::CHexEscape(volume_id),
                                            " is no id of this driver: ", id.status().message()));
  }
  if (absl::Status s = ValidateVolumeIdFields(*id); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("volume id '", absl::CHexEscape(volume_id), "': ", s.message()));
  }
  return id;
}

std::string MountSource(absl::string_view mgs_address, absl::string_view fs_name,
                        absl::string_view sub_dir) {
  std::string source;
  if (absl::StrContains(mgs_address, '@')) {
    source = std::string(mgs_address);
  } else {
    // Bare addresses: each one of a failover (':') or multi-NID (',') list
    // gets the TCP network.
    for (char c : mgs_address) {
      if (c == ':' || c == ',') source += "@tcp";
      source += c;
    }
    source += "@tcp";
  }
  absl::StrAppend(&source, ":/", fs_name);
  if (!sub_dir.empty()) absl::StrAppend(&source, "/", sub_dir);
  return source;
}

}  // namespace lustre_csi::driver

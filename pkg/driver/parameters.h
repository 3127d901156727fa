// StorageClass parameters and volume context of a Lustre volume.
//
// Keys are matched case-insensitively. Unknown keys are INVALID_ARGUMENT
// naming the key, except those in the namespaces Kubernetes reserves for
// itself ("csi.storage.k8s.io/", "storage.kubernetes.io/"), which carry pod,
// PVC and PV facts for sub-dir templates. Pure functions, thread-safe.
#ifndef LUSTRE_CSI_PKG_DRIVER_PARAMETERS_H_
#define LUSTRE_CSI_PKG_DRIVER_PARAMETERS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pkg/driver/volume_id.h"

namespace lustre_csi::driver {

inline constexpr char kParamMgsIpAddress[] = "mgs-ip-address";
inline constexpr char kParamFsName[] = "fs-name";
inline constexpr char kParamSubDir[] = "sub-dir";
inline constexpr char kParamCreatedByDynamicProvisioning[] = "created-by-dynamic-provisioning";
// Sub-dir provisioning: CreateVolume creates the sub-dir, DeleteVolume
// removes ("delete") or keeps ("retain", the default) it.
inline constexpr char kParamCreateSubDir[] = "create-sub-dir";
inline constexpr char kParamSubDirMode[] = "sub-dir-mode";
inline constexpr char kParamSubDirUid[] = "sub-dir-uid";
inline constexpr char kParamSubDirGid[] = "sub-dir-gid";
inline constexpr char kParamSubDirOnDelete[] = "sub-dir-on-delete";
// Capacity and layout of a provisioned sub-dir (need create-sub-dir: "true"):
// a project quota whose hard block limit is the volume's capacity (and an
// inode limit when given), and a default layout for new files.
inline constexpr char kParamSubDirQuota[] = "sub-dir-quota";
inline constexpr char kParamSubDirInodeLimit[] = "sub-dir-inode-limit";
inline constexpr char kParamSubDirStripeCount[] = "sub-dir-stripe-count";
inline constexpr char kParamSubDirStripeSize[] = "sub-dir-stripe-size";
inline constexpr char kParamSubDirStripePool[] = "sub-dir-stripe-pool";

// Lustre's limits on a layout: a stripe size is a multiple of 64 KiB below
// 4 GiB; a stripe count is -1 (every OST), 0 (the file system's default) or
// at most 2000; a pool name is 1 to 15 of [A-Za-z0-9_-].
inline constexpr uint64_t kStripeSizeUnit = 64 * 1024;
inline constexpr uint64_t kMaxStripeSize = (uint64_t{4} << 30) - kStripeSizeUnit;
inline constexpr int64_t kMaxStripeCount = 2000;
inline constexpr size_t kMaxPoolName = 15;

// Context keys Kubernetes fills (with podInfoOnMount and the provisioner's
// --extra-create-metadata).
inline constexpr char kPodName[] = "csi.storage.k8s.io/pod.name";
inline constexpr char kPodNamespace[] = "csi.storage.k8s.io/pod.namespace";
inline constexpr char kPodUid[] = "csi.storage.k8s.io/pod.uid";
inline constexpr char kServiceAccountName[] = "csi.storage.k8s.io/serviceAccount.name";
inline constexpr char kPvcName[] = "csi.storage.k8s.io/pvc/name";
inline constexpr char kPvcNamespace[] = "csi.storage.k8s.io/pvc/namespace";
inline constexpr char kPvName[] = "csi.storage.k8s.io/pv/name";

struct SubDirProvisioning {
  bool enabled = false;
  uint32_t mode = 0775;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  bool delete_on_delete = false;
  // A project quota of the volume's capacity.
  bool quota = false;
  uint64_t inode_limit = 0;  // 0: none
  // Unset fields: the file system's defaults.
  std::optional<int64_t> stripe_count;
  std::optional<uint64_t> stripe_size;
  std::string stripe_pool;

  bool has_layout() const {
    return stripe_count.has_value() || stripe_size.has_value() || !stripe_pool.empty();
  }
};

// The Go driver's keys for creating an Azure Managed Lustre cluster
// (dynamic provisioning), which it also writes into the volume context of
// what it created. Accepted and ignored: this driver mounts existing file
// systems only.
bool IsAzureProvisioningKey(absl::string_view lower_key);

struct LustreParams {
  std::string mgs_address;
  std::string fs_name;         // kDefaultFsName when not given
  bool fs_name_given = false;  // the fs-name key was present
  std::string sub_dir;         // as given without leading and trailing '/'; may hold ${...}
  bool sub_dir_given = false;  // the sub-dir key was present (even if empty)
  // The Kubernetes-reserved keys, with their original spelling.
  std::map<std::string, std::string> kubernetes;
  // The Go driver's Azure provisioning keys that were given (lower case).
  std::vector<std::string> azure_keys;
  SubDirProvisioning provisioning;
};

// Parses `params` as the Go driver reads them: mgs-ip-address is required,
// fs-name defaults to "lustrefs", sub-dir loses its leading and trailing '/'
// (the Go driver's trim; what is left is still checked by FillSubDir), the
// Go driver's Azure provisioning keys are accepted and ignored (an
// mgs-ip-address missing beside them says that clusters are not created
// here). Validates the
// MGS address (an IP or host, or a NID list such as "10.0.0.4@tcp" or
// "a@o2ib:b@o2ib"; no empty element and none starting with '-') and the
// fs-name (1 to 8 of [A-Za-z0-9_-], Lustre's limit, not starting with '-');
// a sub-dir cannot start with '-' either. The sub-dir-quota, inode-limit and
// stripe keys are checked against Lustre's limits and need create-sub-dir.
// The one validation for every mount
// mode: nothing here depends on how the volume will be mounted.
absl::StatusOr<LustreParams> ParseLustreParams(const std::map<std::string, std::string>& params);

// An fs-name: 1 to 8 of [A-Za-z0-9_-], as Lustre allows; INVALID_ARGUMENT
// otherwise.
absl::Status ValidateFsName(absl::string_view fs);

// Each field of an id of this driver's format, validated like the context
// value of the same name (MGS address, fs-name, sub-dir shape, no leading
// '-'); INVALID_ARGUMENT naming the field.
absl::Status ValidateVolumeIdFields(const VolumeId& id);

// `volume_id` as an id of this driver's format whose every field is valid:
// NOT_FOUND "<volume_id> is no id of this driver: ..." when it does not parse
// (an opaque handle), INVALID_ARGUMENT "volume id '<volume_id>': ..." naming
// the field that is not valid.
absl::StatusOr<VolumeId> ParseValidVolumeId(absl::string_view volume_id);

// The parameters of a volume where it is published: `context` is
// authoritative (ParseLustreParams). When `volume_id` parses as an id of this
// driver's format (volume_id.h), each of its fields is validated like the
// context value of the same name (so a traversal in the id's sub-dir is
// INVALID_ARGUMENT even when the context names another), and when the
// context has no sub-dir key, the id's sub-dir is used: a volume is never
// mounted wider than its id names. Likewise the id's fs-name where the
// context has no fs-name key. Any other id is an opaque handle.
absl::StatusOr<LustreParams> VolumeParams(absl::string_view volume_id,
                                          const std::map<std::string, std::string>& context);

// Fills the ${...} variables of `sub_dir` from `kubernetes` (see
// parameters.cc for the table) and normalises the result to a relative path
// "a/b/c" that provably stays inside the file system: no absolute path, no
// "." or ".." component, no NUL, no value that smuggles a '/', at most 4096
// bytes. An empty result means the file system root. Unknown variables and
// variables whose context key is missing are INVALID_ARGUMENT.
absl::StatusOr<std::string> FillSubDir(absl::string_view sub_dir,
                                       const std::map<std::string, std::string>& kubernetes);

// FillSubDir's checks with a stand-in value for every variable: INVALID_ARGUMENT
// for a sub-dir that no pod could fill into a path inside the file system.
absl::Status CheckSubDirShape(absl::string_view sub_dir);

// "<mgs>@tcp:/<fs>[/<sub-dir>]"; an MGS address that already names its LNet
// network ("...@o2ib", a NID list) is used as it is, and each address of a
// bare list ("a:b", "a,b") gets "@tcp".
std::string MountSource(absl::string_view mgs_address, absl::string_view fs_name,
                        absl::string_view sub_dir);

}  // namespace lustre_csi::driver

#endif  // LUSTRE_CSI_PKG_DRIVER_PARAMETERS_H_

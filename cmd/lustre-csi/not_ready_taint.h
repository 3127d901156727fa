// --remove-not-ready-taint for the node roles: in a pod, a background thread
// that removes the taint "<driver name>/agent-not-ready" from this node once
// the node plugin is ready (pkg/kube/taint_remover.h); outside a pod (no
// KUBERNETES_SERVICE_HOST, no service-account token) one log line and
// nothing else. Readiness never depends on it.
#ifndef LUSTRE_CSI_CMD_LUSTRE_CSI_NOT_READY_TAINT_H_
#define LUSTRE_CSI_CMD_LUSTRE_CSI_NOT_READY_TAINT_H_

#include <functional>
#include <memory>
#include <string>

namespace lustre_csi {

class NotReadyTaint {
 public:
  virtual ~NotReadyTaint() = default;  // stops the thread (an API call in flight ends first)
};

// `ready`: whether the node plugin is registered and ready now. Null when
// there is nothing to do (flag off, not in a pod).
std::unique_ptr<NotReadyTaint> StartNotReadyTaintRemoval(bool enabled,
                                                         const std::string& driver_name,
                                                         const std::string& node_name,
                                                         const std::string& service_account_dir,
                                                         std::function<bool()> ready);

}  // namespace lustre_csi

#endif  // LUSTRE_CSI_CMD_LUSTRE_CSI_NOT_READY_TAINT_H_

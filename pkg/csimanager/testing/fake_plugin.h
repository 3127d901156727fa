// FakePlugin: an in-process CSI plugin for tests, served by a real gRPC
// server on unix sockets.
//
// It serves csi.v1 Identity, Node and Controller (capabilities only) and the
// kubelet's pluginregistration.Registration on every socket it is given.
// Tests steer it: readiness, capabilities, node info, injected errors per
// method, and methods that hang until released or cancelled by the caller.
// Stage/publish/unstage/unpublish mark paths in a FakeNode (when
// given one), so volume-manager tests see "mounts" appear and disappear.
// NodePublishVolume of a stage-capable plugin fails with FAILED_PRECONDITION
// unless the staging path is staged (mounted, or recorded when the plugin
// stages without mounting), as a real plugin would.
//
// Thread-safe. Stop() (or destruction) releases hung calls, shuts the server
// down and removes the socket files.
#ifndef LUSTRE_CSI_PKG_CSIMANAGER_TESTING_FAKE_PLUGIN_H_
#define LUSTRE_CSI_PKG_CSIMANAGER_TESTING_FAKE_PLUGIN_H_

#include <grpcpp/server.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "pkg/csimanager/testing/fake_node.h"
#include "proto/csi.grpc.pb.h"
#include "proto/pluginregistration.grpc.pb.h"

namespace lustre_csi::csimanager::fakes {

struct FakePluginConfig {
  std::string name = "fake.csi.test";
  std::string vendor_version = "0.1.0";
  bool controller_service = false;
  bool stage_unstage = false;
  // Whether NodeStageVolume leaves a mount at the staging path; when false it
  // only records the stage (as a plugin that stages a device or state does).
  bool stage_mounts = true;
  // Probe's answer; nullopt leaves `ready` unset (which means ready).
  std::optional<bool> ready = true;
  std::string node_id = "node-1";
  int64_t max_volumes = 0;
  std::map<std::string, std::string> topology;
  // What Registration.GetInfo returns.
  std::string registration_type = "CSIPlugin";
  std::string registration_name;      // empty: `name`
  std::string registration_endpoint;  // may be empty
  std::vector<std::string> supported_versions = {"1.0.0"};
};

class FakePlugin {
 public:
  // Starts serving on each of `sockets`. `mounts` may be null; not owned.
  static std::unique_ptr<FakePlugin> Start(const std::vector<std::string>& sockets,
                                           FakePluginConfig config, FakeNode* mounts = nullptr);
  ~FakePlugin();

  // Stops serving and removes the sockets; the plugin "vanishes". Idempotent.
  void Stop();

  void Update(const std::function<void(FakePluginConfig&)>& change);
  // The next `times` calls of `method` (e.g. "Probe") return `status`.
  void FailNext(const std::string& method, grpc::Status status, int times = 1);
  // While on, calls of `method` block until turned off, Stop(), or the
  // caller cancels / its deadline passes.
  void SetHang(const std::string& method, bool hang);

  // A stage the plugin holds from before (it outlived a manager restart).
  void MarkStaged(const std::string& staging_path);

  int Calls(const std::string& method);
  // Waits (real time, a guard against hung tests) for `n` calls of `method`.
  bool AwaitCalls(const std::string& method, int n, absl::Duration timeout = absl::Seconds(30));
  // Method names in call order, each followed by " <path>" for volume calls.
  std::vector<std::string> Log();
  std::vector<csi::v1::NodeStageVolumeRequest> StageRequests();
  std::vector<csi::v1::NodePublishVolumeRequest> PublishRequests();
  std::vector<pluginregistration::RegistrationStatus> RegistrationStatuses();
  bool AwaitRegistrationStatuses(int n, absl::Duration timeout = absl::Seconds(30));

  // Service plumbing, public for the service classes in the .cc file.
  struct State;

 private:
  FakePlugin() = default;

  std::shared_ptr<State> state_;
  std::vector<std::unique_ptr<grpc::Service>> services_;
  std::unique_ptr<grpc::Server> server_;
  std::vector<std::string> sockets_;
  bool stopped_ = false;
};

}  // namespace lustre_csi::csimanager::fakes

#endif  // LUSTRE_CSI_PKG_CSIMANAGER_TESTING_FAKE_PLUGIN_H_

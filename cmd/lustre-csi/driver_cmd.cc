#include "cmd/lustre-csi/driver_cmd.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "cmd/lustre-csi/common_flags.h"
#include "cmd/lustre-csi/kernel_report.h"
#include "cmd/lustre-csi/not_ready_taint.h"
#include "pkg/base/clock.h"
#include "pkg/driver/controller.h"
#include "pkg/driver/lfs.h"
#include "pkg/driver/lustre_imports.h"
#include "pkg/driver/modes/factory.h"
#include "pkg/driver/node.h"
#include "pkg/driver/project_ids.h"
#include "pkg/driver/readiness.h"
#include "pkg/driver/registration.h"
#include "pkg/driver/services.h"
#include "pkg/server/endpoint.h"
#include "pkg/server/grpc_server.h"
#include "pkg/server/http_server.h"
#include "pkg/server/metrics.h"
#include "pkg/server/signals.h"
#include "pkg/version/version.h"
#include "pkg/volume/linux/isolated_task.h"
#include "pkg/volume/linux/linux_mount_namespace.h"
#include "pkg/volume/linux/linux_syscalls.h"

DEFINE_string(endpoint, "",
              "unix socket to serve on: unix:///abs/path.sock or unix://relative.sock. node and "
              "controller: when not given, CSI_ENDPOINT, then unix:///csi/csi.sock; "
              "plugin-manager: unix:///run/lustre-csi/plugin-manager.sock. On kernels before "
              "5.12 the node stages its bind mounts in <socket dir>/bind-staging");
DEFINE_string(nodeid, "", "this node's id, reported by NodeGetInfo (required for node)");
DEFINE_string(mount_mode, "",
              "how file systems are reached: lustre (mount -t lustre), mock (target directory "
              "only, for conformance suites) or local (bind mount of "
              "<local-root>/<fs>[/<sub-dir>]); node default lustre; the controller reaches "
              "file systems only when set, for sub-dir provisioning (create-sub-dir)");
DEFINE_bool(enable_azurelustre_mock_mount, false, "same as --mount-mode=mock");
DEFINE_string(local_root, "", "root directory standing in for file systems in local mode");
DEFINE_string(working_mount_dir, "/tmp",
              "where the file system root is mounted briefly to create a missing sub-dir; in a "
              "container it must be the same directory on the host (under a Bidirectional "
              "hostPath such as /var/lib/kubelet)");
DEFINE_string(mount_namespace, "/proc/1/ns/mnt",
              "lustre mode: the mount namespace where the Lustre mount helper runs and mounts "
              "and unmounts are made; the default is the host's when the pod has hostPID: true; "
              "'current' for the driver's own namespace (a node running on the host itself)");
DEFINE_string(mount_helper, "/sbin/mount.lustre",
              "lustre mode: the Lustre mount helper, a path in --mount-namespace, run as "
              "<helper> -o <opts> <source> <target>");
DEFINE_string(lfs, "/usr/bin/lfs",
              "the host's Lustre tool, a path in the mount namespace: the controller runs it for "
              "sub-dir-quota (project IDs and quotas), sub-dir-stripe-* and expansion (lustre "
              "mode)");
DEFINE_string(project_id_range, "1000000-1999999",
              "the Lustre project IDs the controller gives volumes with sub-dir-quota, "
              "<first>-<last> within 1-4294967294; claimed on each file system, so controllers "
              "sharing one never hand out an ID twice");
DEFINE_string(lustre_client, "shared",
              "lustre mode: shared (one client mount per file system and set of client-wide "
              "options, under --lustre-client-dir; every publish a bind mount of the volume's "
              "sub-dir) or per-volume (one client mount per published volume)");
DEFINE_string(lustre_client_dir, "",
              "lustre mode, shared clients: where client mounts live; the same directory on the "
              "host and in the container; empty means <working-mount-dir>/clients");
DEFINE_int32(readiness_interval_seconds, 15,
             "lustre and local mode: how often readiness (mount helper, kernel module) is "
             "checked again");
DEFINE_int32(max_concurrent_mounts, 8,
             "Lustre mounts in flight at once; a mount of a file system that has waited on "
             "it for 10 s makes further mounts of that file system answer UNAVAILABLE at once");
DEFINE_int32(call_timeout_seconds, 100,
             "no NodePublishVolume, NodeUnpublishVolume, CreateVolume, DeleteVolume, "
             "ControllerExpandVolume or ValidateVolumeCapabilities call waits longer than this, "
             "whatever the file system does: what has not returned by then goes on in the "
             "background, holding its target or volume, and the call (and every retry of the "
             "same request) answers UNAVAILABLE saying it is still in progress; keep it below "
             "the CO's own call timeout (the kubelet's and Nomad's: 2 minutes). A caller whose "
             "deadline comes sooner gets that answer before its deadline (a tenth of the time "
             "left, at most 1 s). Stats answer within 5 s");
DEFINE_string(lustre_params_root, "/",
              "lustre mode: the root under which the host's Lustre client shows the state of its "
              "connections to the servers (<root>/proc/fs/lustre/{mdc,osc}/*/import, or "
              "<root>/sys/kernel/debug/lustre/... on releases after 2.16, which a container "
              "sees as /proc/1/root); a volume whose file system has a target that is not "
              "connected (DISCONN, EVICTED, ...) is reported abnormal by NodeGetVolumeStats, "
              "and /metrics shows lustre_csi_client_state{fs,target,state}");
DEFINE_int32(mount_timeout_seconds, 90,
             "a mount that takes longer is killed and fails; keep it below the CO's own call "
             "timeout (the kubelet's and Nomad's: 2 minutes), so a publish answers before its "
             "caller gives up. A mount helper killed that still waits for its servers holds its "
             "file system up (publishes of it, and the controller's calls into it, answer "
             "UNAVAILABLE at once) until it has ended");
DEFINE_int64(max_volumes_per_node, 0, "reported by NodeGetInfo; 0 means no limit");
DEFINE_string(topology, "",
              "node topology for NodeGetInfo, as key=value[,key=value] (a comma inside a value: "
              "\\,)");
DEFINE_string(metrics_address, "",
              "host:port for HTTP /metrics, /healthz and /readyz; empty disables");
DEFINE_string(plugin_registration_dir, "",
              "kubelet plugin-registration directory; when set, the node serves the kubelet "
              "registration API there itself (no node-driver-registrar sidecar needed)");
DEFINE_string(kubelet_registration_path, "",
              "the CSI socket path as the kubelet sees it (default: the --endpoint path)");
// The Go Azure Lustre driver's command line, accepted by `monolith` (and by
// a command line without a subcommand) so that its manifests run unchanged.
DEFINE_bool(status_controller_only, false,
            "Go driver flag: only false is accepted (no node status controller here)");
DEFINE_bool(enable_azurelustre_mock_dyn_prov, false, "Go driver flag: accepted and ignored");
DEFINE_bool(remove_not_ready_taint, true,
            "in a pod: once this node plugin is registered and ready, remove the taint "
            "<drivername>/agent-not-ready from its Node (--nodeid), as the Go driver does; "
            "needs get and patch on nodes. Outside a pod it does nothing");
DEFINE_string(kube_service_account_dir, "/var/run/secrets/kubernetes.io/serviceaccount",
              "where the service account's token and ca.crt are, for "
              "--remove-not-ready-taint (the API server is KUBERNETES_SERVICE_HOST and _PORT)");
DEFINE_bool(legacy_stderr_threshold_behavior, true, "klog flag: accepted and ignored");
DEFINE_bool(add_dir_header, false, "klog flag: accepted and ignored");
DEFINE_bool(skip_headers, false, "klog flag: accepted and ignored");
DEFINE_bool(skip_log_headers, false, "klog flag: accepted and ignored");
DEFINE_bool(one_output, false, "klog flag: accepted and ignored");
DEFINE_string(log_file, "", "klog flag: accepted and ignored (logs go to stderr)");
DEFINE_uint64(log_file_max_size, 1800, "klog flag: accepted and ignored");
DEFINE_int32(
    shutdown_grace_seconds, 30,
    "on SIGTERM, how long in-flight calls may take before they are cancelled; with none in "
    "flight the process exits at once");

namespace lustre_csi {
namespace {

using server::HttpServer;
using server::UnixGrpcServer;

const std::vector<std::string> kSharedFlags = {"endpoint", "drivername", "metrics_address",
                                               "shutdown_grace_seconds"};

std::string EndpointFlag() {
  if (!FLAGS_endpoint.empty()) return FLAGS_endpoint;
  const char* env = std::getenv("CSI_ENDPOINT");
  if (env != nullptr && *env != '\0') return env;
  return "unix:///csi/csi.sock";
}

// Everything a role serves, started in order and stopped in reverse.
struct Serving {
  // The CSI socket and, on a node that registers itself, the kubelet's
  // registration socket: one server for both.
  std::unique_ptr<UnixGrpcServer> csi;
  std::string registration_socket;
  std::unique_ptr<HttpServer> http;
  // The node's and the controller's logic, when this process serves them.
  driver::NodeLogic* node = nullptr;
  driver::ControllerLogic* controller = nullptr;
};

int Fail(cli::Streams streams, const std::string& role, const absl::Status& status) {
  streams.err << "lustre-csi " << role << ": " << status.message() << "\n";
  LOG(ERROR) << role << " failed to start: " << status;
  return cli::kExitFailure;
}

// Serves until SIGTERM or SIGINT, then stops accepting calls, lets in-flight
// ones finish within the grace period and removes the sockets. Mounts stay.
int ServeUntilSignal(const std::string& role, Serving& serving) {
  int sig = server::WaitForTerminationSignal();
  LOG(INFO) << role << ": received signal " << sig << ", shutting down";
  absl::Duration grace = absl::Seconds(FLAGS_shutdown_grace_seconds);
  // The kubelet forgets the plugin once its registration socket is gone.
  if (!serving.registration_socket.empty()) {
    serving.csi->CloseSocket(serving.registration_socket);
  }
  serving.csi->SetServing(false);
  // Calls still waiting for a publish, an unpublish or a stats look when the
  // grace period ends stop waiting, so their handlers return and the server
  // can stop; what they waited for may be stuck in a file system for good.
  absl::Notification stopped;
  std::thread stop_waiting([&] {
    if (stopped.WaitForNotificationWithTimeout(grace)) return;
    if (serving.node != nullptr) serving.node->StopWaiting();
    if (serving.controller != nullptr) serving.controller->StopWaiting();
  });
  serving.csi->Shutdown(grace);
  stopped.Notify();
  stop_waiting.join();
  if (serving.http) serving.http->Stop();
  int stuck = (serving.node != nullptr ? serving.node->WorkInFlight() : 0) +
              (serving.controller != nullptr ? serving.controller->CallsInFlight() : 0);
  if (stuck > 0) {
    LOG(WARNING) << role << ": stopped, leaving " << stuck
                 << " publish(es), unpublish(es), stats look(s) or controller call(s) that have "
                    "not returned";
  } else {
    LOG(INFO) << role << ": stopped";
  }
  // Work given up on (a call above, or a step of an unmount bounded below)
  // may still use the process's objects when it returns, which may be
  // never: the process ends without destroying anything, and without
  // waiting for it.
  google::FlushLogFiles(google::GLOG_INFO);
  // Looks and unmounts still waiting in the kernel, in tasks of their own
  // (also unmount steps given up on by calls that have returned), die as
  // soon as the kernel lets them go, running none of their work further.
  // (Last: a task killed in the allocator would leave its lock held.)
  volume::IsolatedTasks()->AbandonAll();
  std::_Exit(cli::kExitOk);
}

absl::StatusOr<std::unique_ptr<HttpServer>> StartHttp(server::MetricsRegistry* metrics,
                                                      std::function<absl::Status()> ready) {
  if (FLAGS_metrics_address.empty()) return std::unique_ptr<HttpServer>();
  return HttpServer::Start(FLAGS_metrics_address, metrics, std::move(ready));
}

// The mode's part of the flags; the system (sys, ns) is filled in when it is
// made.
driver::ModeEnv ModeFlags(bool shared_clients, server::MetricsRegistry* metrics) {
  driver::ModeEnv env;
  env.lustre.mount_helper = FLAGS_mount_helper;
  env.lustre.working_mount_dir = FLAGS_working_mount_dir;
  env.lustre.mount_timeout = absl::Seconds(FLAGS_mount_timeout_seconds);
  env.shared_clients = shared_clients && FLAGS_lustre_client == "shared";
  env.shared.client_dir = FLAGS_lustre_client_dir.empty()
                              ? absl::StrCat(FLAGS_working_mount_dir, "/clients")
                              : FLAGS_lustre_client_dir;
  env.local_root = FLAGS_local_root;
  env.metrics = metrics;
  return env;
}

absl::Status CheckMountMode(const std::string& role, const std::string& mode) {
  const driver::ModeSpec* spec = driver::FindMode(mode);
  if (spec == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("lustre-csi ", role, ": --mount-mode must be ",
                                                   driver::ModeNames(), ", not '", mode, "'"));
  }
  if (absl::Status s = spec->check(ModeFlags(true, nullptr)); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("lustre-csi ", role, ": ", s.message()));
  }
  if (FLAGS_max_concurrent_mounts < 1 || FLAGS_mount_timeout_seconds < 1 ||
      FLAGS_readiness_interval_seconds < 1 || FLAGS_call_timeout_seconds < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("lustre-csi ", role,
                     ": --max-concurrent-mounts, --mount-timeout-seconds, --call-timeout-seconds "
                     "and --readiness-interval-seconds must be at least 1"));
  }
  if (FLAGS_mount_namespace.empty() ||
      (FLAGS_mount_namespace != "current" && FLAGS_mount_namespace[0] != '/')) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lustre-csi ", role, ": --mount-namespace must be an absolute path or 'current'"));
  }
  if (FLAGS_lustre_client != "shared" && FLAGS_lustre_client != "per-volume") {
    return absl::InvalidArgumentError(
        absl::StrCat("lustre-csi ", role, ": --lustre-client must be shared or per-volume, not '",
                     FLAGS_lustre_client, "'"));
  }
  if (!FLAGS_lustre_client_dir.empty() && FLAGS_lustre_client_dir[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("lustre-csi ", role, ": --lustre-client-dir must be an absolute path"));
  }
  if (FLAGS_mount_helper.empty() || FLAGS_mount_helper[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("lustre-csi ", role, ": --mount-helper must be an absolute path"));
  }
  if (FLAGS_lfs.empty() || FLAGS_lfs[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("lustre-csi ", role, ": --lfs must be an absolute path"));
  }
  return absl::OkStatus();
}

// What a role needs to reach file systems: the driver's view of the system,
// where mounts are made, and the mount mode on top.
struct Mounting {
  const driver::ModeSpec* spec = nullptr;
  std::unique_ptr<volume::Syscalls> linux;
  std::unique_ptr<volume::MountNamespace> ns;  // modes with a Lustre client only
  std::unique_ptr<volume::Syscalls> sys;       // unmounts routed to `ns` there
  std::unique_ptr<driver::MountMode> mode;
  // The controller's way into file systems (none in mock mode).
  driver::FileSystemAccess* file_systems = nullptr;
  std::unique_ptr<driver::ReadinessMonitor> readiness;
  std::unique_ptr<driver::LustreTool> lfs;  // modes with a Lustre client only

  volume::Syscalls* view() { return sys ? sys.get() : linux.get(); }
};

// `shared_clients`: whether --lustre-client applies (the node and the
// monolith); the controller alone mounts a client per operation, briefly.
Mounting MakeMounting(const std::string& mode, server::MetricsRegistry* metrics,
                      bool shared_clients, const std::string& socket) {
  Mounting m;
  volume::LinuxSyscallsOptions linux_options;
  // Where binds with flags are staged on kernels before 5.12 (no
  // mount_setattr): beside the CSI socket, the driver's own directory (in a
  // container a volume without propagation, so nothing staged is seen
  // outside).
  linux_options.bind_staging_dir =
      (std::filesystem::absolute(socket).parent_path() / "bind-staging").string();
  // Unmounts, which can sleep in the kernel for as long as a dead server
  // stays away, run in tasks the process can leave behind at exit.
  linux_options.isolation = volume::IsolatedTasks();
  m.linux = volume::NewLinuxSyscalls(linux_options);
  m.spec = driver::FindMode(mode);  // CheckMountMode found it
  driver::ModeEnv env = ModeFlags(shared_clients, metrics);
  if (m.spec->lustre_client) {
    absl::Duration mount_timeout = absl::Seconds(FLAGS_mount_timeout_seconds);
    m.ns = volume::NewLinuxMountNamespace(
        FLAGS_mount_namespace == "current" ? "" : FLAGS_mount_namespace, mount_timeout,
        volume::IsolatedTasks());
    m.sys = volume::UnmountingIn(m.linux.get(), m.ns.get());
    m.lfs = driver::NewLfsTool(m.ns.get(), {FLAGS_lfs, mount_timeout});
    // From a container the binds must go out to the host's namespace.
    absl::StatusOr<bool> own = m.ns->IsOwn();
    env.shared.binds_must_propagate = !own.ok() || !*own;
  }
  env.sys = m.view();
  env.ns = m.ns.get();
  env.isolation = volume::IsolatedTasks();
  driver::ModeInstance made = m.spec->make(env);
  m.mode = std::move(made.mode);
  m.file_systems = made.file_systems;
  driver::MountMode* mounting = m.mode.get();
  m.readiness = std::make_unique<driver::ReadinessMonitor>(
      [mounting] { return mounting->CheckReady(); },
      absl::Seconds(FLAGS_readiness_interval_seconds), metrics);
  m.readiness->Start();
  return m;
}

// Which CSI services one process serves on its socket.
struct Roles {
  const char* name;  // for messages: node, controller, monolith
  bool node = false;
  bool controller = false;
};

int RunDriver(const Roles& roles, const std::vector<std::string>& args, cli::Streams streams) {
  const std::string role = roles.name;
  if (!args.empty()) {
    streams.err << "lustre-csi " << role << ": unexpected argument '" << args[0] << "'\n";
    return cli::kExitUsage;
  }
  if (roles.node && FLAGS_nodeid.empty()) {
    streams.err << "lustre-csi " << role << ": --nodeid is required\n";
    return cli::kExitUsage;
  }
  if (FLAGS_status_controller_only) {
    streams.err << "lustre-csi " << role
                << ": --status-controller-only is not offered (there is no node status "
                   "controller; readiness is reported through Probe and /readyz)\n";
    return cli::kExitUsage;
  }
  // A node always reaches file systems (lustre by default); a controller
  // alone only when --mount-mode is set, for sub-dir provisioning.
  std::string mode = FLAGS_enable_azurelustre_mock_mount ? "mock" : FLAGS_mount_mode;
  if (mode.empty() && roles.node) mode = "lustre";
  if (!mode.empty()) {
    if (absl::Status s = CheckMountMode(role, mode); !s.ok()) {
      streams.err << s.message() << "\n";
      return cli::kExitUsage;
    }
  }
  absl::StatusOr<driver::ProjectIdRange> project_ids =
      driver::ParseProjectIdRange(FLAGS_project_id_range);
  if (!project_ids.ok()) {
    streams.err << "lustre-csi " << role
                << ": --project-id-range: " << project_ids.status().message() << "\n";
    return cli::kExitUsage;
  }
  absl::StatusOr<std::map<std::string, std::string>> topology =
      cli::ParseKeyValues("topology", FLAGS_topology);
  if (!topology.ok()) return Fail(streams, role, topology.status());
  absl::StatusOr<std::string> socket = server::ParseUnixEndpoint(EndpointFlag());
  if (!socket.ok()) return Fail(streams, role, socket.status());

  server::BlockTerminationSignals();
  server::MetricsRegistry metrics;
  ReportKernel(&metrics);
  std::optional<Mounting> mounting;
  if (!mode.empty()) mounting = MakeMounting(mode, &metrics, roles.node, *socket);
  driver::MountMode* mount_mode = mounting.has_value() ? mounting->mode.get() : nullptr;
  driver::ReadinessMonitor* readiness = mounting.has_value() ? mounting->readiness.get() : nullptr;
  auto ready = [readiness] { return readiness ? readiness->Current() : absl::OkStatus(); };
  version::BuildInfo build = version::GetBuildInfo(FLAGS_drivername);
  driver::IdentityService identity(
      {FLAGS_drivername, build.driver_version, roles.controller, ready}, &metrics);
  server::Routes routes;
  identity.AddRoutes(routes);

  std::unique_ptr<driver::LustreImports> client_imports;
  std::unique_ptr<driver::NodeLogic> node_logic;
  std::unique_ptr<driver::NodeService> node;
  if (roles.node) {
    driver::NodeOptions options;
    options.node_id = FLAGS_nodeid;
    options.max_volumes_per_node = FLAGS_max_volumes_per_node;
    options.topology = *topology;
    options.max_concurrent_mounts = FLAGS_max_concurrent_mounts;
    options.mount_slot_timeout = absl::Seconds(FLAGS_mount_timeout_seconds);
    options.retry_wait = absl::Seconds(FLAGS_call_timeout_seconds);
    options.isolation = volume::IsolatedTasks();
    if (mounting->spec->lustre_client) {
      client_imports = std::make_unique<driver::LustreImports>(
          mounting->view(), driver::LustreParamDirs(FLAGS_lustre_params_root), base::RealClock());
      client_imports->Export(&metrics);
      options.client_imports = client_imports.get();
    }
    node_logic =
        std::make_unique<driver::NodeLogic>(options, mounting->view(), mount_mode, readiness);
    node = std::make_unique<driver::NodeService>(node_logic.get(), &metrics);
    node->AddRoutes(routes);
  }
  std::unique_ptr<driver::ControllerLogic> controller_logic;
  std::unique_ptr<driver::ControllerService> controller;
  if (roles.controller) {
    // Mock mode has no file system to provision in: the controller then works
    // as one without --mount-mode (ids only; create-sub-dir is refused).
    driver::FileSystemAccess* file_systems =
        mounting.has_value() ? mounting->file_systems : nullptr;
    // What it does in a file system's root runs in a task of its own, which
    // the process can leave behind where the servers stop answering.
    driver::ControllerOptions options{file_systems != nullptr ? mounting->lfs.get() : nullptr,
                                      *project_ids, volume::IsolatedTasks()};
    options.call_timeout = absl::Seconds(FLAGS_call_timeout_seconds);
    controller_logic = std::make_unique<driver::ControllerLogic>(file_systems, options);
    controller = std::make_unique<driver::ControllerService>(controller_logic.get(), &metrics);
    controller->AddRoutes(routes);
  }

  std::unique_ptr<driver::RegistrationService> registration;  // outlives the server
  Serving serving;
  serving.node = node_logic.get();
  serving.controller = controller_logic.get();
  std::vector<std::string> sockets = {*socket};
  if (roles.node && !FLAGS_plugin_registration_dir.empty()) {
    std::string kubelet_path =
        FLAGS_kubelet_registration_path.empty() ? *socket : FLAGS_kubelet_registration_path;
    registration = std::make_unique<driver::RegistrationService>(FLAGS_drivername, kubelet_path);
    registration->AddRoutes(routes);
    serving.registration_socket = absl::StrCat(FLAGS_plugin_registration_dir, "/",
                                               driver::RegistrationSocketName(FLAGS_drivername));
    sockets.push_back(serving.registration_socket);
  }
  absl::StatusOr<std::unique_ptr<UnixGrpcServer>> csi = UnixGrpcServer::Start(sockets, routes);
  if (!csi.ok()) return Fail(streams, role, csi.status());
  serving.csi = std::move(*csi);

  absl::StatusOr<std::unique_ptr<HttpServer>> http = StartHttp(&metrics, ready);
  if (!http.ok()) return Fail(streams, role, http.status());
  serving.http = std::move(*http);

  // Declared after what it asks, so it stops first.
  std::unique_ptr<NotReadyTaint> taint;
  if (roles.node) {
    driver::RegistrationService* reg = registration.get();
    taint = StartNotReadyTaintRemoval(
        FLAGS_remove_not_ready_taint, FLAGS_drivername, FLAGS_nodeid,
        FLAGS_kube_service_account_dir,
        [ready, reg] { return ready().ok() && (reg == nullptr || reg->registered()); });
  }

  LOG(INFO) << role << (roles.node ? " " + FLAGS_nodeid : "") << " serving " << FLAGS_drivername
            << " " << build.driver_version << " ("
            << (roles.node && roles.controller ? "Identity, Controller and Node"
                : roles.node                   ? "Identity and Node"
                                               : "Identity and Controller")
            << ") in " << (mode.empty() ? "no" : mode) << " mount mode";
  return ServeUntilSignal(role, serving);
}

int RunNode(const std::vector<std::string>& args, cli::Streams streams) {
  return RunDriver({"node", true, false}, args, streams);
}

int RunController(const std::vector<std::string>& args, cli::Streams streams) {
  return RunDriver({"controller", false, true}, args, streams);
}

// The Go driver's flags that the monolith accepts and ignores.
const std::vector<std::string> kIgnoredGoFlags = {"enable_azurelustre_mock_dyn_prov",
                                                  "legacy_stderr_threshold_behavior",
                                                  "add_dir_header",
                                                  "skip_headers",
                                                  "skip_log_headers",
                                                  "one_output",
                                                  "log_file",
                                                  "log_file_max_size"};

int RunMonolith(const std::vector<std::string>& args, cli::Streams streams) {
  for (const std::string& ignored : kIgnoredGoFlags) {
    gflags::CommandLineFlagInfo info;
    if (gflags::GetCommandLineFlagInfo(ignored.c_str(), &info) && !info.is_default) {
      LOG(INFO) << "--" << ignored << "=" << info.current_value
                << " accepted for the Go driver's command line and ignored";
    }
  }
  if (FLAGS_nodeid.empty()) {
    // The Go driver's controller Deployment runs it so: no node to serve. A
    // flag that only a node uses means a node was meant: say --nodeid is
    // missing rather than serve without it.
    for (const char* node_only :
         {"plugin_registration_dir", "kubelet_registration_path", "lustre_client",
          "lustre_client_dir", "topology", "max_volumes_per_node", "max_concurrent_mounts"}) {
      gflags::CommandLineFlagInfo info;
      if (gflags::GetCommandLineFlagInfo(node_only, &info) && !info.is_default) {
        std::string dashed = node_only;
        std::replace(dashed.begin(), dashed.end(), '_', '-');
        streams.err << "lustre-csi monolith: --" << dashed
                    << " is a node's flag and needs --nodeid (without --nodeid the monolith "
                       "serves Identity and Controller only)\n";
        return cli::kExitUsage;
      }
    }
    LOG(INFO) << "monolith without --nodeid: serving Identity and Controller only, as the Go "
                 "driver's controller Deployment runs it";
    return RunDriver({"monolith", false, true}, args, streams);
  }
  return RunDriver({"monolith", true, true}, args, streams);
}

// The node's flags, which the monolith takes too.
std::vector<std::string> NodeFlags() {
  std::vector<std::string> flags = kSharedFlags;
  for (const char* f : {"nodeid",
                        "mount_mode",
                        "enable_azurelustre_mock_mount",
                        "local_root",
                        "mount_namespace",
                        "mount_helper",
                        "working_mount_dir",
                        "lustre_client",
                        "lustre_client_dir",
                        "max_concurrent_mounts",
                        "mount_timeout_seconds",
                        "call_timeout_seconds",
                        "lustre_params_root",
                        "readiness_interval_seconds",
                        "max_volumes_per_node",
                        "topology",
                        "plugin_registration_dir",
                        "kubelet_registration_path",
                        "remove_not_ready_taint",
                        "kube_service_account_dir"}) {
    flags.push_back(f);
  }
  return flags;
}

}  // namespace

cli::Subcommand NodeSubcommand() {
  cli::Subcommand sub;
  sub.name = "node";
  sub.summary = "serve CSI Identity + Node for Lustre on a unix socket";
  sub.usage = "--nodeid=<id> [flags]";
  sub.description =
      "Mounts Lustre file systems into workload target paths (NodePublishVolume), reports\n"
      "usage and health (NodeGetVolumeStats) and applies fsGroup. NodeStageVolume is not\n"
      "offered. SIGTERM or SIGINT stops serving; mounts stay.";
  sub.flags = NodeFlags();
  sub.run = RunNode;
  return sub;
}

cli::Subcommand MonolithSubcommand() {
  cli::Subcommand sub;
  sub.name = "monolith";
  sub.summary = "serve CSI Identity + Controller + Node on one unix socket";
  sub.usage = "[--nodeid=<id>] [flags]";
  sub.description =
      "The node and the controller in one process on one endpoint, as the Go Azure Lustre\n"
      "driver serves them and as Nomad runs a monolith plugin: GetPluginCapabilities says\n"
      "CONTROLLER_SERVICE, so single-endpoint COs and conformance suites can create, publish\n"
      "and delete through one socket. The mount mode (default lustre) serves both. Without\n"
      "--nodeid (the Go driver's controller Deployment) it serves Identity and Controller only.\n"
      "\n"
      "A command line without a subcommand runs this, so the Go driver's invocation\n"
      "(lustre-csi -v=5 --endpoint=... --nodeid=... [--drivername=...]) works unchanged.\n"
      "Of the Go driver's flags, --endpoint, --nodeid, --drivername, --working-mount-dir,\n"
      "--enable-azurelustre-mock-mount, --remove-not-ready-taint, --version and the logging\n"
      "flags -v, --logtostderr, --alsologtostderr, --stderrthreshold, --log_dir and --vmodule\n"
      "are honoured; --enable-azurelustre-mock-dyn-prov and klog's\n"
      "--legacy_stderr_threshold_behavior, --add_dir_header, --skip_headers,\n"
      "--skip_log_headers, --one_output, --log_file and --log_file_max_size are accepted and\n"
      "ignored; --status-controller-only=true is refused.";
  sub.flags = NodeFlags();
  sub.flags.insert(sub.flags.end(), {"lfs", "project_id_range", "status_controller_only"});
  sub.flags.insert(sub.flags.end(), kIgnoredGoFlags.begin(), kIgnoredGoFlags.end());
  sub.run = RunMonolith;
  sub.implicit = true;
  return sub;
}

cli::Subcommand ControllerSubcommand() {
  cli::Subcommand sub;
  sub.name = "controller";
  sub.summary = "serve CSI Identity + Controller for Lustre on a unix socket";
  sub.usage = "[flags]";
  sub.description =
      "CreateVolume, DeleteVolume and ValidateVolumeCapabilities for existing Lustre file\n"
      "systems, with volume ids and parameters of the Azure Lustre CSI driver. With\n"
      "--mount-mode it also creates and deletes per-volume sub-dirs (create-sub-dir); in\n"
      "lustre mode it gives them project quotas (sub-dir-quota) and default layouts\n"
      "(sub-dir-stripe-*) with the host's lfs, and ControllerExpandVolume raises a quota.";
  sub.flags = kSharedFlags;
  for (const char* f : {"mount_mode", "local_root", "mount_namespace", "mount_helper",
                        "working_mount_dir", "mount_timeout_seconds", "call_timeout_seconds",
                        "readiness_interval_seconds", "lfs", "project_id_range"}) {
    sub.flags.push_back(f);
  }
  sub.run = RunController;
  return sub;
}

}  // namespace lustre_csi

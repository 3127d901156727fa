#include "cmd/lustre-csi/manager_cmd.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "cmd/lustre-csi/common_flags.h"
#include "cmd/lustre-csi/kernel_report.h"
#include "cmd/lustre-csi/manager_client.h"
#include "pkg/csimanager/manager.h"
#include "pkg/csimanager/manager_service.h"
#include "pkg/csimanager/registry.h"
#include "pkg/csimanager/state_store.h"
#include "pkg/csimanager/volume_mount_inspector.h"
#include "pkg/server/endpoint.h"
#include "pkg/server/grpc_server.h"
#include "pkg/server/http_server.h"
#include "pkg/server/metrics.h"
#include "pkg/server/signals.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux/linux_syscalls.h"
#include "pkg/volume/safe_path.h"

DECLARE_string(endpoint);
DECLARE_string(metrics_address);
DECLARE_int32(shutdown_grace_seconds);

DEFINE_string(state_file, "/var/lib/lustre-csi/plugin-manager.db",
              "the plugin manager's SQLite state (plugins and claims)");
DEFINE_string(mount_root, "/var/lib/lustre-csi/mounts",
              "root of staging and per-allocation mount paths (plugins must see it at this path)");
DEFINE_string(registration_dir, "",
              "kubelet-style registration directory to watch for plugin sockets; empty: none");
DEFINE_string(plugins, "",
              "static plugins: name:node|controller|monolith:/path/to.sock, separated by ';'");
DEFINE_string(plugins_config, "",
              "file of static plugins, one name:type:socket per line, '#' comments");
DEFINE_int32(fingerprint_period_seconds, 30, "how often each plugin is fingerprinted");
DEFINE_string(node_name, "", "this node's name in node-info (default: the host name)");
DEFINE_bool(unmount_on_shutdown, false,
            "on SIGTERM, unmount everything the manager mounted (retiring the node); "
            "by default mounts stay so a restart does not disturb workloads");
DEFINE_int32(retry_attempts, 3, "attempts of a plugin call that fails transiently");
DEFINE_int32(attempt_timeout_seconds, 120, "deadline of each attempt of a plugin call");
// CLI verbs.
DEFINE_bool(json, false, "verbs: print JSON instead of a table");
DEFINE_string(type, "node", "verbs: plugin type (node, controller, monolith)");
DEFINE_int32(timeout_seconds, 60, "wait: how long to wait for the plugin");
DEFINE_string(volume_namespace, "default", "mount/unmount: the volume's namespace");
DEFINE_string(remote_id, "", "mount/unmount: the plugin's volume id (default: the volume id)");
DEFINE_bool(read_only, false, "mount/unmount: read-only usage");
DEFINE_string(access_mode, "multi-node-multi-writer",
              "mount/unmount: single-node-reader-only, single-node-writer, "
              "multi-node-reader-only, multi-node-single-writer or multi-node-multi-writer");
DEFINE_string(attachment_mode, "file-system", "mount/unmount: file-system or block-device");
DEFINE_string(volume_context, "",
              "mount: the volume context, key=value[,key=value]; a comma inside a value is "
              "written \\, (an MGS NID list: mgs-ip-address=a@o2ib\\,b@o2ib)");
DEFINE_string(publish_context, "",
              "mount: the publish context, key=value[,key=value] (\\, as above)");
DEFINE_string(mount_flags, "", "mount/unmount: mount flags, comma-separated");
DEFINE_string(staging_path, "", "has-mount: the staging path of a staged mount");

namespace lustre_csi {
namespace {

using csimanager::Manager;

constexpr char kDefaultEndpoint[] = "unix:///run/lustre-csi/plugin-manager.sock";

std::string Endpoint() { return FLAGS_endpoint.empty() ? kDefaultEndpoint : FLAGS_endpoint; }

using manager_client::Fail;

// ------------------------------------------------------------------ daemon

absl::StatusOr<std::vector<csimanager::PluginRecord>> StaticPlugins() {
  std::vector<csimanager::PluginRecord> records;
  for (absl::string_view spec : absl::StrSplit(FLAGS_plugins, ';', absl::SkipEmpty())) {
    absl::StatusOr<csimanager::PluginRecord> record = csimanager::ParseStaticPlugin(spec);
    if (!record.ok()) return record.status();
    records.push_back(*record);
  }
  if (!FLAGS_plugins_config.empty()) {
    std::ifstream in(FLAGS_plugins_config);
    if (!in) {
      return absl::NotFoundError(
          absl::StrCat("cannot read --plugins-config ", FLAGS_plugins_config));
    }
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<std::vector<csimanager::PluginRecord>> more =
        csimanager::ParseStaticPluginConfig(text.str());
    if (!more.ok()) return more.status();
    records.insert(records.end(), more->begin(), more->end());
  }
  return records;
}

int RunDaemon(cli::Streams streams) {
  absl::StatusOr<std::string> socket = server::ParseUnixEndpoint(Endpoint());
  if (!socket.ok()) return Fail(streams, "", socket.status());
  absl::StatusOr<std::vector<csimanager::PluginRecord>> static_plugins = StaticPlugins();
  if (!static_plugins.ok()) return Fail(streams, "", static_plugins.status());
  if (FLAGS_fingerprint_period_seconds < 1 || FLAGS_retry_attempts < 1 ||
      FLAGS_attempt_timeout_seconds < 1) {
    streams.err << "lustre-csi plugin-manager: --fingerprint-period-seconds, --retry-attempts "
                   "and --attempt-timeout-seconds must be at least 1\n";
    return cli::kExitUsage;
  }
  std::string node_name = FLAGS_node_name;
  if (node_name.empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    node_name = host;
  }

  server::BlockTerminationSignals();
  std::unique_ptr<volume::Syscalls> sys = volume::NewLinuxSyscalls();
  for (const std::string& dir : {FLAGS_mount_root, volume::ParentPath(FLAGS_state_file),
                                 volume::ParentPath(*socket), FLAGS_registration_dir}) {
    if (dir.empty()) continue;
    if (absl::Status s = volume::MkdirAll(*sys, dir, 0750); !s.ok()) {
      return Fail(streams, "", volume::Annotate(s, absl::StrCat("creating ", dir)));
    }
  }
  absl::StatusOr<std::unique_ptr<csimanager::StateStore>> store =
      csimanager::StateStore::Open(FLAGS_state_file, {});
  if (!store.ok()) {
    // A corrupt or foreign store is not guessed around: an operator decides.
    return Fail(streams, absl::StrCat("state ", FLAGS_state_file), store.status());
  }
  std::unique_ptr<csimanager::MountInspector> inspector =
      csimanager::NewVolumeMountInspector(sys.get());

  csimanager::ManagerOptions options;
  options.mount_root = FLAGS_mount_root;
  options.registration_dir = FLAGS_registration_dir;
  options.node_name = node_name;
  options.instance.fingerprint_period = absl::Seconds(FLAGS_fingerprint_period_seconds);
  options.retry.max_attempts = FLAGS_retry_attempts;
  options.retry.per_attempt_timeout = absl::Seconds(FLAGS_attempt_timeout_seconds);
  options.shutdown_grace = absl::Seconds(FLAGS_shutdown_grace_seconds);
  // Declared before the manager: the manager's metrics live here, and the
  // HTTP server that renders them stops before the manager does.
  server::MetricsRegistry metrics;
  ReportKernel(&metrics);
  csimanager::ManagerDeps deps;
  deps.store = store->get();
  deps.mounts = inspector.get();
  deps.sys = sys.get();
  deps.metrics = &metrics;
  Manager manager(options, deps);

  absl::StatusOr<csimanager::StartReport> report = manager.Start();
  if (!report.ok()) return Fail(streams, "start", report.status());
  LOG(INFO) << "restored " << report->plugins_restored << " plugin(s) from " << FLAGS_state_file;
  for (const auto& [plugin, volumes] : report->volumes) {
    LOG(INFO) << "plugin " << plugin << ": " << volumes.claims << " claim(s), " << volumes.mounted
              << " mounted, " << volumes.interrupted << " interrupted, "
              << volumes.usage_counts.size() << " staging path(s) in use";
    for (const std::string& problem : volumes.problems) {
      LOG(WARNING) << "plugin " << plugin << ": " << problem;
    }
  }
  if (absl::Status s = manager.SetStaticPlugins(*static_plugins); !s.ok()) {
    return Fail(streams, "static plugins", s);
  }

  server::Routes routes;
  std::unique_ptr<grpc::Service> service = csimanager::NewManagerService(&manager, routes);
  absl::StatusOr<std::unique_ptr<server::UnixGrpcServer>> api =
      server::UnixGrpcServer::Start(*socket, routes);
  if (!api.ok()) return Fail(streams, "", api.status());

  std::unique_ptr<server::HttpServer> http;
  if (!FLAGS_metrics_address.empty()) {
    absl::StatusOr<std::unique_ptr<server::HttpServer>> started = server::HttpServer::Start(
        FLAGS_metrics_address, &metrics, [&manager] { return manager.Health(); });
    if (!started.ok()) return Fail(streams, "", started.status());
    http = std::move(*started);
  }
  LOG(INFO) << "plugin manager on node " << node_name << " serving on " << Endpoint()
            << ", mounts under " << FLAGS_mount_root;

  int sig = server::WaitForTerminationSignal();
  LOG(INFO) << "received signal " << sig << ", shutting down"
            << (FLAGS_unmount_on_shutdown ? " and unmounting everything" : "; mounts stay");
  (*api)->SetServing(false);
  manager.Shutdown(absl::Seconds(FLAGS_shutdown_grace_seconds), FLAGS_unmount_on_shutdown);
  (*api)->Shutdown(absl::Seconds(1));
  if (http) http->Stop();
  LOG(INFO) << "plugin manager stopped";
  return cli::kExitOk;
}

// -------------------------------------------------------------------- CLI

int RunVerb(const std::string& verb, const std::vector<std::string>& args, cli::Streams streams) {
  absl::StatusOr<std::string> socket = server::ParseUnixEndpoint(Endpoint());
  if (!socket.ok()) return Fail(streams, verb, socket.status());
  grpc::ChannelArguments channel_args;
  channel_args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  manager_client::Options options;
  options.json = FLAGS_json;
  gflags::CommandLineFlagInfo type;
  gflags::GetCommandLineFlagInfo("type", &type);
  if (!type.is_default) options.type = FLAGS_type;
  options.timeout_seconds = FLAGS_timeout_seconds;
  options.volume_namespace = FLAGS_volume_namespace;
  options.remote_id = FLAGS_remote_id;
  options.read_only = FLAGS_read_only;
  options.access_mode = FLAGS_access_mode;
  options.attachment_mode = FLAGS_attachment_mode;
  options.volume_context = FLAGS_volume_context;
  options.publish_context = FLAGS_publish_context;
  options.mount_flags = FLAGS_mount_flags;
  options.staging_path = FLAGS_staging_path;
  return manager_client::RunVerb(
      verb, args, options,
      grpc::CreateCustomChannel("unix:" + *socket, grpc::InsecureChannelCredentials(),
                                channel_args),
      streams);
}

int RunPluginManager(const std::vector<std::string>& args, cli::Streams streams) {
  if (args.empty()) return RunDaemon(streams);
  std::vector<std::string> rest(args.begin() + 1, args.end());
  return RunVerb(args[0], rest, streams);
}

}  // namespace

cli::Subcommand PluginManagerSubcommand() {
  cli::Subcommand sub;
  sub.name = "plugin-manager";
  sub.summary = "discover, health-check and mount through local CSI plugins";
  sub.usage = "[flags]            run the daemon\n       lustre-csi plugin-manager <verb> [args]";
  sub.description =
      "Without a verb, runs the daemon: discovers CSI plugins (any vendor's) from a\n"
      "registration directory and --plugins, fingerprints and health-checks them, stages and\n"
      "publishes volumes through node plugins, and keeps every claim in an SQLite store so a\n"
      "restart (even kill -9) forgets nothing. SIGTERM keeps mounts; `drain` or\n"
      "--unmount-on-shutdown unmounts everything.\n"
      "\n"
      "Verbs (talk to the daemon at --endpoint; tables by default, --json for JSON):\n" +
      manager_client::VerbHelp() +
      "\n"
      "--endpoint defaults to unix:///run/lustre-csi/plugin-manager.sock.";
  sub.flags = {"endpoint",
               "metrics_address",
               "shutdown_grace_seconds",
               "state_file",
               "mount_root",
               "registration_dir",
               "plugins",
               "plugins_config",
               "fingerprint_period_seconds",
               "node_name",
               "unmount_on_shutdown",
               "retry_attempts",
               "attempt_timeout_seconds",
               "json",
               "type",
               "timeout_seconds",
               "volume_namespace",
               "remote_id",
               "read_only",
               "access_mode",
               "attachment_mode",
               "volume_context",
               "publish_context",
               "mount_flags",
               "staging_path"};
  sub.run = RunPluginManager;
  return sub;
}

}  // namespace lustre_csi

#include "cmd/lustre-csi/manager_cmd.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "cmd/lustre-csi/common_flags.h"
#include "pkg/csimanager/manager.h"
#include "pkg/csimanager/manager_proto.h"
#include "pkg/csimanager/manager_service.h"
#include "pkg/csimanager/registry.h"
#include "pkg/csimanager/state_store.h"
#include "pkg/csimanager/volume_mount_inspector.h"
#include "pkg/server/endpoint.h"
#include "pkg/server/grpc_server.h"
#include "pkg/server/grpc_status.h"
#include "pkg/server/http_server.h"
#include "pkg/server/metrics.h"
#include "pkg/server/signals.h"
#include "pkg/volume/errno_status.h"
#include "pkg/volume/linux_syscalls.h"
#include "pkg/volume/safe_path.h"
#include "proto/manager.grpc.pb.h"

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
DEFINE_string(volume_context, "", "mount: the volume context, key=value[,key=value]");
DEFINE_string(publish_context, "", "mount: the publish context, key=value[,key=value]");
DEFINE_string(mount_flags, "", "mount/unmount: mount flags, comma-separated");
DEFINE_string(staging_path, "", "has-mount: the staging path of a staged mount");

namespace lustre_csi {
namespace {

namespace pb = ::lustre_csi::manager::v1;
using csimanager::Manager;

constexpr char kDefaultEndpoint[] = "unix:///run/lustre-csi/plugin-manager.sock";

std::string Endpoint() { return FLAGS_endpoint.empty() ? kDefaultEndpoint : FLAGS_endpoint; }

int Fail(cli::Streams streams, const std::string& what, const absl::Status& status) {
  streams.err << "lustre-csi plugin-manager" << (what.empty() ? "" : " " + what) << ": "
              << absl::StatusCodeToString(status.code()) << ": " << status.message() << "\n";
  return cli::kExitFailure;
}

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
  csimanager::ManagerDeps deps;
  deps.store = store->get();
  deps.mounts = inspector.get();
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

  csimanager::ManagerService service(&manager);
  absl::StatusOr<std::unique_ptr<server::UnixGrpcServer>> api =
      server::UnixGrpcServer::Start(*socket, {&service});
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

class Client {
 public:
  explicit Client(cli::Streams streams) : streams_(streams) {}

  int Run(const std::string& verb, const std::vector<std::string>& args) {
    absl::StatusOr<std::string> socket = server::ParseUnixEndpoint(Endpoint());
    if (!socket.ok()) return Fail(streams_, verb, socket.status());
    grpc::ChannelArguments channel_args;
    channel_args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    stub_ = pb::PluginManager::NewStub(grpc::CreateCustomChannel(
        "unix:" + *socket, grpc::InsecureChannelCredentials(), channel_args));
    verb_ = verb;
    if (verb == "plugins") return Plugins(args);
    if (verb == "wait") return Wait(args);
    if (verb == "mount") return Mount(args);
    if (verb == "unmount") return Unmount(args);
    if (verb == "has-mount") return HasMount(args);
    if (verb == "claims") return Claims(args);
    if (verb == "node-info") return NodeInfoVerb(args);
    if (verb == "drain") return Drain(args);
    streams_.err << "lustre-csi plugin-manager: unknown verb '" << verb
                 << "'; see lustre-csi plugin-manager --help\n";
    return cli::kExitUsage;
  }

 private:
  std::unique_ptr<grpc::ClientContext> Context(absl::Duration timeout = absl::Minutes(10)) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    return ctx;
  }

  int Usage(const std::string& synopsis) {
    streams_.err << "usage: lustre-csi plugin-manager " << verb_ << " " << synopsis << "\n";
    return cli::kExitUsage;
  }

  int Check(const grpc::Status& status) {
    if (status.ok()) return cli::kExitOk;
    return Fail(streams_, verb_, server::FromGrpcStatus(status));
  }

  void Json(const google::protobuf::Message& message) {
    std::string out;
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    options.add_whitespace = true;
    (void)google::protobuf::util::MessageToJsonString(message, &out, options);
    streams_.out << out;
    if (out.empty() || out.back() != '\n') streams_.out << "\n";
  }

  void Table(const std::vector<std::string>& header,
             const std::vector<std::vector<std::string>>& rows) {
    std::vector<size_t> width(header.size());
    for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
        width[i] = std::max(width[i], row[i].size());
      }
    }
    auto line = [&](const std::vector<std::string>& cells) {
      std::string out;
      for (size_t i = 0; i < cells.size(); ++i) {
        out += cells[i];
        if (i + 1 < cells.size()) out += std::string(width[i] - cells[i].size() + 2, ' ');
      }
      streams_.out << out << "\n";
    };
    line(header);
    for (const auto& row : rows) line(row);
  }

  absl::StatusOr<pb::Usage> UsageFromFlags() {
    csimanager::VolumeUsage usage;
    usage.read_only = FLAGS_read_only;
    absl::StatusOr<csimanager::AccessMode> access = csimanager::ParseAccessMode(FLAGS_access_mode);
    if (!access.ok()) return access.status();
    absl::StatusOr<csimanager::AttachmentMode> attachment =
        csimanager::ParseAttachmentMode(FLAGS_attachment_mode);
    if (!attachment.ok()) return attachment.status();
    usage.access_mode = *access;
    usage.attachment_mode = *attachment;
    for (absl::string_view f : absl::StrSplit(FLAGS_mount_flags, ',', absl::SkipEmpty())) {
      usage.mount_flags.emplace_back(f);
    }
    return csimanager::ToProto(usage);
  }

  std::string PluginType(pb::PluginType type) {
    switch (type) {
      case pb::PLUGIN_TYPE_NODE:
        return "node";
      case pb::PLUGIN_TYPE_CONTROLLER:
        return "controller";
      case pb::PLUGIN_TYPE_MONOLITH:
        return "monolith";
      default:
        return "?";
    }
  }

  absl::StatusOr<pb::PluginType> TypeFlag() {
    absl::StatusOr<csimanager::PluginType> type = csimanager::ParsePluginType(FLAGS_type);
    if (!type.ok()) return type.status();
    return csimanager::ToProto(*type);
  }

  std::string PluginRow(const pb::Plugin& p, std::vector<std::string>* row) {
    *row = {p.name(),
            PluginType(p.type()),
            p.healthy() ? "yes" : "no",
            p.node_id().empty() ? "-" : p.node_id(),
            p.vendor_version().empty() ? "-" : p.vendor_version(),
            p.node_capabilities().empty() ? "-" : absl::StrJoin(p.node_capabilities(), ","),
            p.endpoint(),
            p.health_reason().empty() ? "-" : p.health_reason()};
    return p.name();
  }

  int Plugins(const std::vector<std::string>& args) {
    if (!args.empty()) return Usage("[--type=node|controller|monolith] [--json]");
    pb::ListPluginsRequest req;
    gflags::CommandLineFlagInfo info;
    gflags::GetCommandLineFlagInfo("type", &info);
    if (!info.is_default) {
      absl::StatusOr<pb::PluginType> type = TypeFlag();
      if (!type.ok()) return Fail(streams_, verb_, type.status());
      req.set_type(*type);
    }
    pb::ListPluginsResponse res;
    if (int rc = Check(stub_->ListPlugins(Context().get(), req, &res)); rc != 0) return rc;
    if (FLAGS_json) {
      Json(res);
      return cli::kExitOk;
    }
    std::vector<std::vector<std::string>> rows;
    for (const pb::Plugin& p : res.plugins()) {
      rows.emplace_back();
      PluginRow(p, &rows.back());
    }
    Table({"NAME", "TYPE", "HEALTHY", "NODE-ID", "VERSION", "NODE-CAPABILITIES", "ENDPOINT",
           "REASON"},
          rows);
    return cli::kExitOk;
  }

  int Wait(const std::vector<std::string>& args) {
    if (args.size() != 1) return Usage("<plugin> [--type=node] [--timeout-seconds=60]");
    absl::StatusOr<pb::PluginType> type = TypeFlag();
    if (!type.ok()) return Fail(streams_, verb_, type.status());
    pb::WaitForPluginRequest req;
    req.set_name(args[0]);
    req.set_type(*type);
    req.set_timeout_ms(int64_t{FLAGS_timeout_seconds} * 1000);
    pb::Plugin res;
    absl::Duration rpc_timeout = absl::Seconds(FLAGS_timeout_seconds + 10);
    if (int rc = Check(stub_->WaitForPlugin(Context(rpc_timeout).get(), req, &res)); rc != 0) {
      return rc;
    }
    if (FLAGS_json) {
      Json(res);
    } else {
      streams_.out << res.name() << " is healthy (" << PluginType(res.type()) << ", node id "
                   << (res.node_id().empty() ? "-" : res.node_id()) << ")\n";
    }
    return cli::kExitOk;
  }

  int Mount(const std::vector<std::string>& args) {
    if (args.size() != 3) {
      return Usage(
          "<plugin> <volume-id> <alloc-id> [--volume-namespace=..] [--remote-id=..] "
          "[--read-only] [--access-mode=..] [--volume-context=k=v,..] "
          "[--publish-context=k=v,..] [--mount-flags=a,b]");
    }
    absl::StatusOr<pb::Usage> usage = UsageFromFlags();
    if (!usage.ok()) return Fail(streams_, verb_, usage.status());
    absl::StatusOr<std::map<std::string, std::string>> context =
        cli::ParseKeyValues("volume-context", FLAGS_volume_context);
    if (!context.ok()) return Fail(streams_, verb_, context.status());
    absl::StatusOr<std::map<std::string, std::string>> publish =
        cli::ParseKeyValues("publish-context", FLAGS_publish_context);
    if (!publish.ok()) return Fail(streams_, verb_, publish.status());
    pb::MountVolumeRequest req;
    req.set_plugin(args[0]);
    req.set_namespace_(FLAGS_volume_namespace);
    req.set_volume_id(args[1]);
    req.set_remote_id(FLAGS_remote_id.empty() ? args[1] : FLAGS_remote_id);
    req.set_alloc_id(args[2]);
    *req.mutable_usage() = *usage;
    req.mutable_volume_context()->insert(context->begin(), context->end());
    req.mutable_publish_context()->insert(publish->begin(), publish->end());
    pb::MountVolumeResponse res;
    if (int rc = Check(stub_->MountVolume(Context().get(), req, &res)); rc != 0) return rc;
    if (FLAGS_json) {
      Json(res);
    } else {
      streams_.out << "mounted " << res.mount().target();
      if (res.mount().staged()) streams_.out << " (staged at " << res.mount().source() << ")";
      streams_.out << "\n";
    }
    return cli::kExitOk;
  }

  int Unmount(const std::vector<std::string>& args) {
    if (args.size() != 3) {
      return Usage(
          "<plugin> <volume-id> <alloc-id> [--volume-namespace=..] [--remote-id=..] "
          "[--read-only] [--access-mode=..]");
    }
    absl::StatusOr<pb::Usage> usage = UsageFromFlags();
    if (!usage.ok()) return Fail(streams_, verb_, usage.status());
    pb::UnmountVolumeRequest req;
    req.set_plugin(args[0]);
    req.set_namespace_(FLAGS_volume_namespace);
    req.set_volume_id(args[1]);
    req.set_remote_id(FLAGS_remote_id.empty() ? args[1] : FLAGS_remote_id);
    req.set_alloc_id(args[2]);
    *req.mutable_usage() = *usage;
    pb::UnmountVolumeResponse res;
    if (int rc = Check(stub_->UnmountVolume(Context().get(), req, &res)); rc != 0) return rc;
    if (FLAGS_json) {
      Json(res);
    } else {
      streams_.out << "unmounted" << (res.unstaged() ? "; the volume was unstaged" : "") << "\n";
    }
    return cli::kExitOk;
  }

  int HasMount(const std::vector<std::string>& args) {
    if (args.size() != 2) return Usage("<plugin> <target> [--staging-path=..]");
    pb::HasMountRequest req;
    req.set_plugin(args[0]);
    req.mutable_mount()->set_target(args[1]);
    req.mutable_mount()->set_source(FLAGS_staging_path);
    req.mutable_mount()->set_staged(!FLAGS_staging_path.empty());
    pb::HasMountResponse res;
    if (int rc = Check(stub_->HasMount(Context().get(), req, &res)); rc != 0) return rc;
    if (FLAGS_json) {
      Json(res);
    } else {
      streams_.out << (res.mounted() ? "mounted" : "not mounted") << "\n";
    }
    return cli::kExitOk;
  }

  int Claims(const std::vector<std::string>& args) {
    if (args.size() > 1) return Usage("[plugin] [--json]");
    pb::ListClaimsRequest req;
    if (!args.empty()) req.set_plugin(args[0]);
    pb::ListClaimsResponse res;
    if (int rc = Check(stub_->ListClaims(Context().get(), req, &res)); rc != 0) return rc;
    if (FLAGS_json) {
      Json(res);
      return cli::kExitOk;
    }
    std::vector<std::vector<std::string>> rows;
    for (const pb::Claim& c : res.claims()) {
      rows.push_back({c.plugin(), c.namespace_(), c.volume_id(), c.alloc_id(),
                      c.usage().read_only() ? "ro" : "rw", c.state(), c.mount().target(),
                      c.mount().staged() ? c.mount().source() : "-"});
    }
    Table({"PLUGIN", "NAMESPACE", "VOLUME", "ALLOC", "MODE", "STATE", "TARGET", "STAGED-AT"}, rows);
    return cli::kExitOk;
  }

  int NodeInfoVerb(const std::vector<std::string>& args) {
    if (!args.empty()) return Usage("[--json]");
    pb::NodeInfo res;
    if (int rc = Check(stub_->GetNodeInfo(Context().get(), {}, &res)); rc != 0) return rc;
    if (FLAGS_json) {
      Json(res);
      return cli::kExitOk;
    }
    streams_.out << "node " << res.node_name() << "\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : res.drivers()) {
      rows.push_back(
          {d.name(), d.node_id().empty() ? "-" : d.node_id(), d.available() ? "yes" : "no",
           d.allocatable_count() ? std::to_string(d.allocatable_count()) : "-",
           d.topology_keys().empty() ? "-" : absl::StrJoin(d.topology_keys(), ","), d.status()});
    }
    Table({"DRIVER", "NODE-ID", "AVAILABLE", "ALLOCATABLE", "TOPOLOGY-KEYS", "STATUS"}, rows);
    return cli::kExitOk;
  }

  int Drain(const std::vector<std::string>& args) {
    if (!args.empty()) return Usage("");
    pb::DrainResponse res;
    if (int rc = Check(stub_->Drain(Context().get(), {}, &res)); rc != 0) return rc;
    if (FLAGS_json) {
      Json(res);
    } else {
      streams_.out << "unmounted " << res.unmounted() << " claim(s)\n";
      for (const std::string& e : res.errors()) streams_.out << "error: " << e << "\n";
    }
    return res.errors().empty() ? cli::kExitOk : cli::kExitFailure;
  }

  cli::Streams streams_;
  std::string verb_;
  std::unique_ptr<pb::PluginManager::Stub> stub_;
};

int RunPluginManager(const std::vector<std::string>& args, cli::Streams streams) {
  if (args.empty()) return RunDaemon(streams);
  std::vector<std::string> rest(args.begin() + 1, args.end());
  return Client(streams).Run(args[0], rest);
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
      "Verbs (talk to the daemon at --endpoint; tables by default, --json for JSON):\n"
      "  plugins                               plugins with health and capabilities\n"
      "  wait <plugin>                         wait until the plugin is healthy\n"
      "  mount <plugin> <volume> <alloc>       stage (if offered) and publish for an allocation\n"
      "  unmount <plugin> <volume> <alloc>     unpublish, and unstage when the last user left\n"
      "  has-mount <plugin> <target>           whether the target is mounted\n"
      "  claims [plugin]                       every claim the manager holds\n"
      "  node-info                             the node in the shape of a CSINode object\n"
      "  drain                                 unmount everything the manager mounted\n"
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

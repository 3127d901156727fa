#include "cmd/lustre-csi/manager_client.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "pkg/csimanager/manager_proto.h"
#include "pkg/csimanager/types.h"
#include "pkg/server/grpc_status.h"
#include "proto/manager.grpc.pb.h"

namespace lustre_csi::manager_client {
namespace {

namespace pb = ::lustre_csi::manager::v1;

class Client {
 public:
  Client(const Options& options, std::shared_ptr<grpc::ChannelInterface> channel,
         cli::Streams streams)
      : options_(options), streams_(streams), stub_(pb::PluginManager::NewStub(channel)) {}

  int Run(const std::string& verb, const std::vector<std::string>& args) {
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
    usage.read_only = options_.read_only;
    absl::StatusOr<csimanager::AccessMode> access =
        csimanager::ParseAccessMode(options_.access_mode);
    if (!access.ok()) return access.status();
    absl::StatusOr<csimanager::AttachmentMode> attachment =
        csimanager::ParseAttachmentMode(options_.attachment_mode);
    if (!attachment.ok()) return attachment.status();
    usage.access_mode = *access;
    usage.attachment_mode = *attachment;
    for (absl::string_view f : absl::StrSplit(options_.mount_flags, ',', absl::SkipEmpty())) {
      usage.mount_flags.emplace_back(f);
    }
    return csimanager::ToProto(usage);
  }

  std::string PluginType(pb::PluginType type) {
    absl::StatusOr<std::optional<csimanager::PluginType>> ours = csimanager::FromProto(type);
    if (!ours.ok() || !ours->has_value()) return "?";
    return std::string(csimanager::PluginTypeName(**ours));
  }

  absl::StatusOr<pb::PluginType> TypeFlag() {
    absl::StatusOr<csimanager::PluginType> type =
        csimanager::ParsePluginType(options_.type.value_or("node"));
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
    if (options_.type.has_value()) {
      absl::StatusOr<pb::PluginType> type = TypeFlag();
      if (!type.ok()) return Fail(streams_, verb_, type.status());
      req.set_type(*type);
    }
    pb::ListPluginsResponse res;
    if (int rc = Check(stub_->ListPlugins(Context().get(), req, &res)); rc != 0) return rc;
    if (options_.json) {
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
    req.set_timeout_ms(int64_t{options_.timeout_seconds} * 1000);
    pb::Plugin res;
    absl::Duration rpc_timeout = absl::Seconds(options_.timeout_seconds + 10);
    if (int rc = Check(stub_->WaitForPlugin(Context(rpc_timeout).get(), req, &res)); rc != 0) {
      return rc;
    }
    if (options_.json) {
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
        cli::ParseKeyValues("volume-context", options_.volume_context);
    if (!context.ok()) return Fail(streams_, verb_, context.status());
    absl::StatusOr<std::map<std::string, std::string>> publish =
        cli::ParseKeyValues("publish-context", options_.publish_context);
    if (!publish.ok()) return Fail(streams_, verb_, publish.status());
    pb::MountVolumeRequest req;
    req.set_plugin(args[0]);
    req.set_namespace_(options_.volume_namespace);
    req.set_volume_id(args[1]);
    req.set_remote_id(options_.remote_id.empty() ? args[1] : options_.remote_id);
    req.set_alloc_id(args[2]);
    *req.mutable_usage() = *usage;
    req.mutable_volume_context()->insert(context->begin(), context->end());
    req.mutable_publish_context()->insert(publish->begin(), publish->end());
    pb::MountVolumeResponse res;
    if (int rc = Check(stub_->MountVolume(Context().get(), req, &res)); rc != 0) return rc;
    if (options_.json) {
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
    req.set_namespace_(options_.volume_namespace);
    req.set_volume_id(args[1]);
    req.set_remote_id(options_.remote_id.empty() ? args[1] : options_.remote_id);
    req.set_alloc_id(args[2]);
    *req.mutable_usage() = *usage;
    pb::UnmountVolumeResponse res;
    if (int rc = Check(stub_->UnmountVolume(Context().get(), req, &res)); rc != 0) return rc;
    if (options_.json) {
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
    req.mutable_mount()->set_source(options_.staging_path);
    req.mutable_mount()->set_staged(!options_.staging_path.empty());
    pb::HasMountResponse res;
    if (int rc = Check(stub_->HasMount(Context().get(), req, &res)); rc != 0) return rc;
    if (options_.json) {
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
    if (options_.json) {
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
    if (options_.json) {
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
    if (options_.json) {
      Json(res);
    } else {
      streams_.out << "unmounted " << res.unmounted() << " claim(s)\n";
      for (const std::string& e : res.errors()) streams_.out << "error: " << e << "\n";
    }
    return res.errors().empty() ? cli::kExitOk : cli::kExitFailure;
  }

  const Options options_;
  cli::Streams streams_;
  std::unique_ptr<pb::PluginManager::Stub> stub_;
  std::string verb_;
};

}  // namespace

int Fail(cli::Streams streams, const std::string& what, const absl::Status& status) {
  streams.err << "lustre-csi plugin-manager" << (what.empty() ? "" : " " + what) << ": "
              << absl::StatusCodeToString(status.code()) << ": " << status.message() << "\n";
  return cli::kExitFailure;
}

std::string VerbHelp() {
  return "  plugins                               plugins with health and capabilities\n"
         "  wait <plugin>                         wait until the plugin is healthy\n"
         "  mount <plugin> <volume> <alloc>       stage (if offered) and publish for an "
         "allocation\n"
         "  unmount <plugin> <volume> <alloc>     unpublish, and unstage when the last user left\n"
         "  has-mount <plugin> <target>           whether the target is mounted\n"
         "  claims [plugin]                       every claim the manager holds\n"
         "  node-info                             the node in the shape of a CSINode object\n"
         "  drain                                 unmount everything the manager mounted\n";
}

int RunVerb(const std::string& verb, const std::vector<std::string>& args, const Options& options,
            std::shared_ptr<grpc::ChannelInterface> channel, cli::Streams streams) {
  return Client(options, std::move(channel), streams).Run(verb, args);
}

}  // namespace lustre_csi::manager_client

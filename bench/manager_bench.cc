// manager-bench: figures for the plugin manager, through its API socket.
//
//   --mode=pairs    MountVolume+UnmountVolume pairs for distinct allocations
//                   (and volumes with --distinct-volumes) of --plugin; prints
//                   throughput and latency percentiles like csi-client.
//   --mode=fill     MountVolume for --n allocations and leave them mounted
//                   (to build a store for --mode=restore).
//   --mode=restore  starts the manager (--binary plus the arguments after --),
//                   waits until ListClaims returns --n claims, prints the time
//                   from exec to that answer, then stops it with SIGTERM.
//   --mode=healthy  waits until --n plugins are healthy; prints how long.
#include <fcntl.h>
#include <gflags/gflags.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/load_report.h"
#include "proto/manager.grpc.pb.h"

extern char** environ;

DEFINE_string(endpoint, "", "the manager's socket, unix:///path");
DEFINE_string(mode, "pairs", "pairs, fill, restore or healthy");
DEFINE_string(plugin, "azurelustre.csi.azure.com", "node plugin name");
DEFINE_string(volume_context, "", "key=value[,key=value]");
DEFINE_int64(n, 1000, "operations, claims or plugins");
DEFINE_int32(concurrency, 1, "client threads");
DEFINE_bool(distinct_volumes, true, "pairs: each pair its own volume");
DEFINE_string(binary, "", "restore: the lustre-csi binary");
DEFINE_int32(server_pid, 0,
             "pairs, fill: also print the manager's CPU time (user + system) per operation, "
             "from /proc/<pid>/stat");

namespace {

namespace pb = ::lustre_csi::manager::v1;

std::unique_ptr<pb::PluginManager::Stub> Stub() {
  std::string endpoint = FLAGS_endpoint;
  if (endpoint.rfind("unix://", 0) == 0) endpoint = "unix:" + endpoint.substr(7);
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 1);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5);
  return pb::PluginManager::NewStub(
      grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args));
}

pb::MountVolumeRequest Request(int64_t i) {
  pb::MountVolumeRequest req;
  req.set_plugin(FLAGS_plugin);
  req.set_namespace_("bench");
  std::string volume = FLAGS_distinct_volumes ? absl::StrCat("vol-", i) : "vol-shared";
  req.set_volume_id(volume);
  req.set_remote_id(volume);
  req.set_alloc_id(absl::StrCat("alloc-", i));
  req.mutable_usage()->set_attachment_mode(pb::ATTACHMENT_MODE_FILE_SYSTEM);
  req.mutable_usage()->set_access_mode(pb::ACCESS_MODE_MULTI_NODE_MULTI_WRITER);
  for (absl::string_view kv : absl::StrSplit(FLAGS_volume_context, ',', absl::SkipEmpty())) {
    std::vector<std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    (*req.mutable_volume_context())[p[0]] = p.size() > 1 ? p[1] : "";
  }
  return req;
}

grpc::Status Mount(pb::PluginManager::Stub* stub, int64_t i) {
  grpc::ClientContext ctx;
  pb::MountVolumeResponse res;
  return stub->MountVolume(&ctx, Request(i), &res);
}

grpc::Status Unmount(pb::PluginManager::Stub* stub, int64_t i) {
  pb::MountVolumeRequest m = Request(i);
  pb::UnmountVolumeRequest req;
  req.set_plugin(m.plugin());
  req.set_namespace_(m.namespace_());
  req.set_volume_id(m.volume_id());
  req.set_remote_id(m.remote_id());
  req.set_alloc_id(m.alloc_id());
  *req.mutable_usage() = m.usage();
  grpc::ClientContext ctx;
  pb::UnmountVolumeResponse res;
  return stub->UnmountVolume(&ctx, req, &res);
}

int Pairs(bool unmount) {
  auto stub = Stub();
  return lustre_csi::bench::RunLoad(absl::StrCat("mode=", FLAGS_mode), FLAGS_n, FLAGS_concurrency,
                                    FLAGS_server_pid, [&stub, unmount](int, int64_t i) {
                                      grpc::Status st = Mount(stub.get(), i);
                                      if (st.ok() && unmount) st = Unmount(stub.get(), i);
                                      return st;
                                    });
}

int Restore(int argc, char** argv) {
  std::vector<std::string> args = {FLAGS_binary};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  absl::Time begin = absl::Now();
  pid_t pid;
  if (posix_spawn(&pid, cargs[0], &actions, nullptr, cargs.data(), environ) != 0) {
    perror("posix_spawn");
    return 1;
  }
  // Dial only once the socket accepts: a channel made earlier would sit in
  // gRPC's reconnect backoff and measure that instead.
  std::string path = FLAGS_endpoint.substr(FLAGS_endpoint.rfind("unix://", 0) == 0 ? 7 : 0);
  while (absl::Now() - begin < absl::Seconds(60)) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    bool up = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(fd);
    if (up) break;
    absl::SleepFor(absl::Microseconds(100));
  }
  auto stub = Stub();
  int64_t seen = -1;
  while (absl::Now() - begin < absl::Seconds(60)) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    pb::ListClaimsResponse res;
    if (stub->ListClaims(&ctx, {}, &res).ok()) {
      seen = res.claims_size();
      if (seen >= FLAGS_n) break;
    }
    absl::SleepFor(absl::Microseconds(200));
  }
  double ms = absl::ToDoubleMilliseconds(absl::Now() - begin);
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  printf("mode=restore claims=%lld exec_to_claims_listed_ms=%.1f\n", static_cast<long long>(seen),
         ms);
  return seen >= FLAGS_n ? 0 : 1;
}

int Healthy() {
  auto stub = Stub();
  absl::Time begin = absl::Now();
  int healthy = 0;
  while (absl::Now() - begin < absl::Seconds(120)) {
    grpc::ClientContext ctx;
    pb::ListPluginsResponse res;
    if (stub->ListPlugins(&ctx, {}, &res).ok()) {
      healthy = 0;
      for (const auto& p : res.plugins()) healthy += p.healthy();
      if (healthy >= FLAGS_n) break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  printf("mode=healthy plugins=%d waited_ms=%.0f\n", healthy,
         absl::ToDoubleMilliseconds(absl::Now() - begin));
  return healthy >= FLAGS_n ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_endpoint.empty()) {
    fprintf(stderr, "manager-bench: --endpoint is required\n");
    return 2;
  }
  if (FLAGS_mode == "pairs") return Pairs(true);
  if (FLAGS_mode == "fill") return Pairs(false);
  if (FLAGS_mode == "restore") return Restore(argc, argv);
  if (FLAGS_mode == "healthy") return Healthy();
  fprintf(stderr, "manager-bench: unknown --mode %s\n", FLAGS_mode.c_str());
  return 2;
}

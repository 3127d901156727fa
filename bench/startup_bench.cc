// startup-bench: how long lustre-csi takes from exec to its first successful
// Probe, and how much private memory (RssAnon) it holds idle.
//
//   startup-bench --binary=path/to/lustre-csi --runs=20 -- node --nodeid=n --mount-mode=mock
//
// Each run starts the binary with the given arguments plus
// --endpoint=unix://<tmp>/csi.sock, polls Probe until it answers ready, reads
// /proc/<pid>/status, and stops it with SIGTERM. Prints median and worst
// start time, and the median idle RssAnon and VmRSS, with the binary's size.
#include <fcntl.h>
#include <gflags/gflags.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "proto/csi.grpc.pb.h"

extern char** environ;

DEFINE_string(binary, "", "the lustre-csi binary");
DEFINE_int32(runs, 20, "number of starts");

namespace {

int64_t StatusKb(pid_t pid, const std::string& key) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      absl::string_view v =
          absl::StripAsciiWhitespace(absl::string_view(line).substr(key.size() + 1));
      int64_t kb = 0;
      absl::SimpleAtoi(v.substr(0, v.find(' ')), &kb);
      return kb;
    }
  }
  return -1;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  std::vector<std::string> role(argv + 1, argv + argc);
  if (FLAGS_binary.empty() || role.empty()) {
    fprintf(stderr, "usage: startup-bench --binary=B [--runs=N] -- <role> [flags]\n");
    return 2;
  }
  char dir_tmpl[] = "/tmp/startup-bench.XXXXXX";
  std::string dir = mkdtemp(dir_tmpl);
  std::string socket = dir + "/csi.sock";
  std::vector<double> start_ms, anon_kb, rss_kb;
  for (int run = 0; run < FLAGS_runs; ++run) {
    std::vector<std::string> args = {FLAGS_binary};
    args.insert(args.end(), role.begin(), role.end());
    args.push_back("--endpoint=unix://" + socket);
    std::vector<char*> cargs;
    for (auto& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    absl::Time begin = absl::Now();
    pid_t pid = 0;
    if (posix_spawn(&pid, cargs[0], &actions, nullptr, cargs.data(), environ) != 0) {
      perror("posix_spawn");
      return 1;
    }
    posix_spawn_file_actions_destroy(&actions);
    grpc::ChannelArguments cargs_grpc;
    cargs_grpc.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    cargs_grpc.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 1);
    cargs_grpc.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1);
    cargs_grpc.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1);
    auto identity = csi::v1::Identity::NewStub(grpc::CreateCustomChannel(
        "unix:" + socket, grpc::InsecureChannelCredentials(), cargs_grpc));
    bool ready = false;
    while (!ready && absl::Now() - begin < absl::Seconds(10)) {
      struct stat st;
      if (stat(socket.c_str(), &st) != 0) {
        absl::SleepFor(absl::Microseconds(100));
        continue;
      }
      grpc::ClientContext ctx;
      ctx.set_wait_for_ready(true);
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(50));
      csi::v1::ProbeResponse res;
      ready = identity->Probe(&ctx, {}, &res).ok() && res.ready().value();
    }
    double ms = absl::ToDoubleMilliseconds(absl::Now() - begin);
    if (!ready) {
      fprintf(stderr, "run %d: not ready after 10 s\n", run);
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return 1;
    }
    start_ms.push_back(ms);
    absl::SleepFor(absl::Milliseconds(200));  // idle
    anon_kb.push_back(StatusKb(pid, "RssAnon"));
    rss_kb.push_back(StatusKb(pid, "VmRSS"));
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
  }
  rmdir(dir.c_str());
  struct stat st;
  stat(FLAGS_binary.c_str(), &st);
  printf(
      "runs=%d start_to_probe_ms_p50=%.2f start_to_probe_ms_max=%.2f idle_rss_anon_kb=%.0f "
      "idle_vm_rss_kb=%.0f binary_bytes=%lld\n",
      FLAGS_runs, Median(start_ms), *std::max_element(start_ms.begin(), start_ms.end()),
      Median(anon_kb), Median(rss_kb), static_cast<long long>(st.st_size));
  return 0;
}

// What the load generators (csi-client, manager-bench) print after a run:
// latency percentiles of every operation, throughput, and optionally the CPU
// time the server process spent per operation.
#ifndef LUSTRE_CSI_BENCH_LOAD_REPORT_H_
#define LUSTRE_CSI_BENCH_LOAD_REPORT_H_

#include <grpcpp/support/status.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lustre_csi::bench {

// CPU time (user + system) of a whole process, every thread live or ended,
// in microseconds; -1 when /proc/<pid>/stat cannot be read. Resolution is
// one clock tick (10 ms here), so runs should last seconds.
double ProcessCpuMicros(int pid);

// Reads the server's CPU time at construction and at Report(); pid 0
// measures nothing.
class ServerCpu {
 public:
  explicit ServerCpu(int pid);
  // " server_cpu_us_per_op=X" for `ops` operations, "" when pid is 0;
  // false when /proc could not be read.
  bool Report(long long ops, std::string* out) const;

 private:
  int pid_;
  double start_;
};

// "p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=.." of the latencies
// (microseconds, any order); sorts them.
std::string Percentiles(std::vector<double>& latencies_us);

// Runs op(thread, index) for every index in [0, n) from `concurrency`
// threads, timing each, then prints one line to stdout:
//   <label> n=.. concurrency=.. errors=.. seconds=.. throughput=../s
//   <Percentiles> [server_cpu_us_per_op=..]
// and the first error to stderr. Returns the exit code: 0 when every call
// succeeded, 1 otherwise or when the server's CPU time cannot be read.
int RunLoad(const std::string& label, int64_t n, int concurrency, int server_pid,
            const std::function<grpc::Status(int thread, int64_t index)>& op);

}  // namespace lustre_csi::bench

#endif  // LUSTRE_CSI_BENCH_LOAD_REPORT_H_

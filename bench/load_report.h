// What the load generators (csi-client, manager-bench) run and print: the
// operations from N threads, then latency percentiles, throughput, and
// optionally the CPU time the server process spent per operation (from
// /proc/<pid>/stat: one clock tick of resolution, so runs should last seconds).
#ifndef LUSTRE_CSI_BENCH_LOAD_REPORT_H_
#define LUSTRE_CSI_BENCH_LOAD_REPORT_H_

#include <grpcpp/support/status.h>

#include <cstdint>
#include <functional>
#include <string>

namespace lustre_csi::bench {

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

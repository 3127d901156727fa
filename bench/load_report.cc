#include "bench/load_report.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace lustre_csi::bench {
namespace {

// CPU time (user + system) of a whole process, every thread live or ended,
// in microseconds; -1 when /proc/<pid>/stat cannot be read.
double ProcessCpuMicros(int pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name, in parentheses, may hold spaces; no field after it does.
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 > stat.size()) return -1;
  std::vector<absl::string_view> fields = absl::StrSplit(stat.substr(paren + 2), ' ');
  // utime and stime are the file's fields 14 and 15: 12th and 13th after the name.
  double utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtod(fields[11], &utime) ||
      !absl::SimpleAtod(fields[12], &stime)) {
    return -1;
  }
  return (utime + stime) * 1e6 / sysconf(_SC_CLK_TCK);
}

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

ServerCpu::ServerCpu(int pid) : pid_(pid), start_(pid > 0 ? ProcessCpuMicros(pid) : 0) {}

bool ServerCpu::Report(long long ops, std::string* out) const {
  out->clear();
  if (pid_ <= 0) return true;
  double end = ProcessCpuMicros(pid_);
  if (start_ < 0 || end < 0 || ops <= 0) return false;
  *out = absl::StrFormat(" server_cpu_us_per_op=%.1f", (end - start_) / ops);
  return true;
}

// "p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=.." of the latencies
// (microseconds, any order); sorts them.
std::string Percentiles(std::vector<double>& latencies_us) {
  std::sort(latencies_us.begin(), latencies_us.end());
  auto at = [&latencies_us](double p) {
    if (latencies_us.empty()) return 0.0;
    size_t i = static_cast<size_t>(p * (latencies_us.size() - 1) + 0.5);
    return latencies_us[std::min(i, latencies_us.size() - 1)];
  };
  return absl::StrFormat("p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f", at(0.5),
                         at(0.9), at(0.99), at(0.999),
                         latencies_us.empty() ? 0.0 : latencies_us.back());
}

}  // namespace

int RunLoad(const std::string& label, int64_t n, int concurrency, int server_pid,
            const std::function<grpc::Status(int thread, int64_t index)>& op) {
  std::atomic<int64_t> next{0}, errors{0};
  std::vector<std::vector<double>> latencies(concurrency);
  std::string first_error;
  std::mutex error_mu;
  ServerCpu server_cpu(server_pid);
  absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t i = next++; i < n; i = next++) {
        absl::Time call_start = absl::Now();
        grpc::Status s = op(t, i);
        latencies[t].push_back(absl::ToDoubleMicroseconds(absl::Now() - call_start));
        if (!s.ok()) {
          ++errors;
          std::lock_guard<std::mutex> lock(error_mu);
          if (first_error.empty()) first_error = s.error_message();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::vector<double> all;
  for (const std::vector<double>& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::string cpu;
  if (!server_cpu.Report(n, &cpu)) {
    fprintf(stderr, "cannot read /proc/%d/stat\n", server_pid);
    return 1;
  }
  printf("%s n=%lld concurrency=%d errors=%lld seconds=%.3f throughput=%.0f/s %s%s\n",
         label.c_str(), static_cast<long long>(n), concurrency,
         static_cast<long long>(errors.load()), seconds, n / seconds, Percentiles(all).c_str(),
         cpu.c_str());
  if (!first_error.empty()) fprintf(stderr, "first error: %s\n", first_error.c_str());
  return errors == 0 ? 0 : 1;
}

}  // namespace lustre_csi::bench

#include "bench/load_report.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace lustre_csi::bench {

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

ServerCpu::ServerCpu(int pid) : pid_(pid), start_(pid > 0 ? ProcessCpuMicros(pid) : 0) {}

bool ServerCpu::Report(long long ops, std::string* out) const {
  out->clear();
  if (pid_ <= 0) return true;
  double end = ProcessCpuMicros(pid_);
  if (start_ < 0 || end < 0 || ops <= 0) return false;
  *out = absl::StrFormat(" server_cpu_us_per_op=%.1f", (end - start_) / ops);
  return true;
}

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

}  // namespace lustre_csi::bench

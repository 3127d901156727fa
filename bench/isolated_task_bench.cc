// What handing work to the thread's isolated task costs (volume::IsolatedTasks,
// where every call that may wait on a file system runs): the round trip of
// an empty piece of work, and of a stat(2), against the same on the calling
// thread. Prints the median and the mean per call over `n` calls (default
// 100000), for one thread and for two threads at once.
//
//   bazel run -c opt //bench:isolated_task_bench -- [n]
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "pkg/volume/linux/isolated_task.h"

namespace {

using lustre_csi::volume::Isolation;

struct Figures {
  double median_us;
  double mean_us;
};

Figures Measure(int n, const std::function<void()>& one) {
  std::vector<double> us(n);
  absl::Time all = absl::Now();
  for (int i = 0; i < n; ++i) {
    absl::Time start = absl::Now();
    one();
    us[i] = absl::ToDoubleMicroseconds(absl::Now() - start);
  }
  double mean = absl::ToDoubleMicroseconds(absl::Now() - all) / n;
  std::nth_element(us.begin(), us.begin() + n / 2, us.end());
  return {us[n / 2], mean};
}

void Report(const std::string& what, int threads, int n, const std::function<void()>& one) {
  std::vector<Figures> figures(threads);
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&, t] { figures[t] = Measure(n, one); });
  }
  for (std::thread& t : running) t.join();
  for (int t = 0; t < threads; ++t) {
    printf("%-28s threads=%d  median %7.2f us  mean %7.2f us\n", what.c_str(), threads,
           figures[t].median_us, figures[t].mean_us);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 100000;
  Isolation* tasks = lustre_csi::volume::IsolatedTasks();
  auto nothing = [] {};
  auto look = [] {
    struct stat st;
    stat("/", &st);
  };
  for (int threads : {1, 2}) {
    Report("empty, in place", threads, n, nothing);
    Report("empty, in the task", threads, n, [&] { tasks->Run(nothing); });
    Report("stat /, in place", threads, n, look);
    Report("stat /, in the task", threads, n, [&] { tasks->Run(look); });
  }
  return 0;
}

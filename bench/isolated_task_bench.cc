// What handing work to the thread's isolated task costs (volume::IsolatedTasks,
// where every call that may wait on a file system runs): the round trip of
// an empty piece of work, and of a stat(2), against the same on the calling
// thread. Prints the median and the mean per call over `n` calls (default
// 100000), for one thread and for two threads at once; then over n/10 calls
// 500 µs apart (the pace of a publish and unpublish pair), the thread busy
// in between, so the task's CPU has gone idle by the next call.
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

// The calls come `pace` apart (busy in between, as a thread serving
// requests is), or back to back.
Figures Measure(int n, absl::Duration pace, const std::function<void()>& one) {
  std::vector<double> us(n);
  double total = 0;
  absl::Time next = absl::Now();
  for (int i = 0; i < n; ++i) {
    while (absl::Now() < next) {
    }
    absl::Time start = absl::Now();
    one();
    absl::Time end = absl::Now();
    us[i] = absl::ToDoubleMicroseconds(end - start);
    total += us[i];
    next = end + pace;
  }
  double mean = total / n;
  std::nth_element(us.begin(), us.begin() + n / 2, us.end());
  return {us[n / 2], mean};
}

void Report(const std::string& what, int threads, int n, absl::Duration pace,
            const std::function<void()>& one) {
  std::vector<Figures> figures(threads);
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&, t] { figures[t] = Measure(n, pace, one); });
  }
  for (std::thread& t : running) t.join();
  for (int t = 0; t < threads; ++t) {
    printf("%-28s threads=%d pace=%-6s median %7.2f us  mean %7.2f us\n", what.c_str(), threads,
           absl::FormatDuration(pace).c_str(), figures[t].median_us, figures[t].mean_us);
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
  for (absl::Duration pace : {absl::ZeroDuration(), absl::Microseconds(500)}) {
    const int calls = pace == absl::ZeroDuration() ? n : n / 10;
    for (int threads : {1, 2}) {
      Report("empty, in place", threads, calls, pace, nothing);
      Report("empty, in the task", threads, calls, pace, [&] { tasks->Run(nothing); });
      Report("stat /, in place", threads, calls, pace, look);
      Report("stat /, in the task", threads, calls, pace, [&] { tasks->Run(look); });
    }
  }
  return 0;
}

// The pod sandbox's process for the pod-level e2e (containerd's sandbox
// image must be local: e2e/pod_test.sh packs this static binary as one).
// It holds the pod's namespaces, reaps whatever is reparented to it, and
// exits 0 on SIGTERM or SIGINT.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

volatile sig_atomic_t g_stop = 0;

void OnStop(int) { g_stop = 1; }

void OnChild(int) {
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

}  // namespace

int main() {
  struct sigaction stop = {};
  stop.sa_handler = OnStop;
  sigaction(SIGTERM, &stop, nullptr);
  sigaction(SIGINT, &stop, nullptr);
  struct sigaction child = {};
  child.sa_handler = OnChild;
  child.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &child, nullptr);
  // The signals are blocked outside sigsuspend, so none is lost between
  // the check and the wait.
  sigset_t blocked, waiting;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGINT);
  sigaddset(&blocked, SIGCHLD);
  sigprocmask(SIG_BLOCK, &blocked, &waiting);
  sigdelset(&waiting, SIGTERM);
  sigdelset(&waiting, SIGINT);
  sigdelset(&waiting, SIGCHLD);
  while (g_stop == 0) sigsuspend(&waiting);
  return 0;
}

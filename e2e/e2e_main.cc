// main() of every e2e test: runs the tests in a private mount namespace of
// their own, so nothing they mount is seen by, or left on, the host.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "e2e/e2e_util.h"
#include "gtest/gtest.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  // --kernel=VERSION: every start of the binary runs it as on that kernel.
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--kernel=", 0) == 0) {
      setenv("LUSTRE_CSI_E2E_KERNEL", arg.substr(9).c_str(), 1);
      fprintf(stderr, "the binary runs as on Linux %s (e2e/older-kernel)\n", arg.substr(9).c_str());
    } else {
      fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  absl::Status ns = lustre_csi::e2e::EnterPrivateMountNamespace();
  if (!ns.ok()) {
    fprintf(stderr, "%s\n", std::string(ns.message()).c_str());
    return 1;
  }
  return RUN_ALL_TESTS();
}

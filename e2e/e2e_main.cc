// main() of every e2e test: runs the tests in a private mount namespace of
// their own, so nothing they mount is seen by, or left on, the host.
#include <cstdio>
#include <string>

#include "e2e/e2e_util.h"
#include "gtest/gtest.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  absl::Status ns = lustre_csi::e2e::EnterPrivateMountNamespace();
  if (!ns.ok()) {
    fprintf(stderr, "%s\n", std::string(ns.message()).c_str());
    return 1;
  }
  return RUN_ALL_TESTS();
}

#!/usr/bin/env bash
# The whole test suite, from a fresh clone on a fresh Debian bookworm machine:
# installs what is missing, runs every Bazel test, then the checks that need
# the built binary outside Bazel (static + reproducible, container image,
# deployment manifests, the image run under the manifests at pod level).
# A test that skips itself fails the suite unless tools/allowed_skips.txt
# lists it with its reason. Ends with one line "tests: N passed, M failed,
# K skipped" and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh || { echo "tests: 0 passed, 1 failed"; exit 1; }

passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "=== bazel test //..."
bazel test --curses=no --color=no --noshow_progress --test_summary=short //... 2>&1 | tee "$log" | grep -vE '^[0-9.]+: src/main/tools/'
bazel_rc=${PIPESTATUS[0]}
n_pass=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
n_fail=$(grep -cE '^//[^ ]+ +.*(FAILED|NO STATUS|TIMEOUT|INCOMPLETE)' "$log")
passed=$((passed + n_pass))
failed=$((failed + n_fail))
if [[ $bazel_rc -ne 0 && $n_fail -eq 0 ]]; then
  echo "bazel test exited $bazel_rc"
  failed=$((failed + 1))
fi

echo "=== skipped tests (tools/allowed_skips.txt)"
skip_out=$(bash tools/check_skips.sh)
skip_rc=$?
echo "$skip_out"
skipped=$(sed -n 's/^skipped: \([0-9]*\) (.*/\1/p' <<<"$skip_out" | tail -n 1)
if [[ $skip_rc -eq 0 ]]; then
  passed=$((passed + 1))
else
  echo "FAILED: a test skipped itself and is not on the reviewed list"
  failed=$((failed + 1))
fi

step() {
  local name="$1"
  shift
  echo "=== $name"
  if "$@"; then
    passed=$((passed + 1))
  else
    echo "FAILED: $name"
    failed=$((failed + 1))
  fi
}

step "system calls only behind the seam" bash tools/check_seams.sh
step "the plugin manager's API is closed" bash tools/check_public_headers.sh
step "static and reproducible binary" bash tools/check_static_repro.sh
step "container image" bash e2e/image_test.sh
step "deployment manifests" bash e2e/deploy_test.sh
step "image under the manifests (pod level)" bash e2e/pod_test.sh

echo "tests: $passed passed, $failed failed, ${skipped:-0} skipped"
[[ $failed -eq 0 ]]

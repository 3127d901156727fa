#!/usr/bin/env bash
# Counts the tests that reported SKIPPED in the last `bazel test //...` (the
# gtest XML under bazel-testlogs/) and fails when one of them is not on the
# reviewed list tools/allowed_skips.txt. Prints each skipped test with its
# reason, then "skipped: N (M on the reviewed list)". TESTLOGS and
# ALLOWED_SKIPS name other places (for its own check).
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${TESTLOGS:-$(bazel info bazel-testlogs 2>/dev/null || echo bazel-testlogs)}
list=${ALLOWED_SKIPS:-tools/allowed_skips.txt}

allowed_reason() {  # <suite.test> -> the reason, or nothing
  local name="$1" pattern reason
  while read -r pattern reason; do
    [[ -z "$pattern" || "$pattern" == \#* ]] && continue
    # shellcheck disable=SC2053  # the pattern is a glob on purpose
    if [[ "$name" == $pattern ]]; then
      echo "$reason"
      return
    fi
  done <"$list"
}

total=0
allowed=0
while IFS=$'\t' read -r target name; do
  total=$((total + 1))
  reason=$(allowed_reason "$name")
  if [[ -n "$reason" ]]; then
    allowed=$((allowed + 1))
    echo "skipped: $target $name ($reason)"
  else
    echo "SKIPPED, NOT ON THE REVIEWED LIST: $target $name"
  fi
done < <(find "$logs" -name test.xml -print0 2>/dev/null | xargs -0 -r python3 -c '
import sys, xml.etree.ElementTree as ET
for path in sys.argv[1:]:
    target = "//" + path.split("testlogs/", 1)[-1].rsplit("/test.xml", 1)[0]
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.get("result") == "skipped" or case.find("skipped") is not None:
            print(target + "\t" + case.get("classname", "") + "." + case.get("name", ""))
')
echo "skipped: $total ($allowed on the reviewed list)"
[[ $total -eq $allowed ]]

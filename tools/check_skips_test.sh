#!/usr/bin/env bash
# tools/check_skips.sh on made-up test logs: a skip on the reviewed list
# passes and is counted, one that is not fails the check.
set -u
cd "$(dirname "$0")/.."
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/testlogs/pkg/a/a_test" "$d/testlogs/pkg/b/b_test"
cat >"$d/testlogs/pkg/a/a_test/test.xml" <<'XML'
<testsuites><testsuite name="OwnershipTest">
<testcase name="Regroups" status="run" result="skipped" classname="OwnershipTest"><skipped message="needs root"/></testcase>
<testcase name="Runs" status="run" result="completed" classname="OwnershipTest"/>
</testsuite></testsuites>
XML
cat >"$d/testlogs/pkg/b/b_test/test.xml" <<'XML'
<testsuites><testsuite name="NewTest">
<testcase name="Quietly" status="run" result="skipped" classname="NewTest"><skipped message="why not"/></testcase>
</testsuite></testsuites>
XML
fail=0
out=$(TESTLOGS="$d/testlogs" bash tools/check_skips.sh) && { echo "an unlisted skip passed"; fail=1; }
grep -q "SKIPPED, NOT ON THE REVIEWED LIST: //pkg/b/b_test NewTest.Quietly" <<<"$out" || { echo "unlisted skip not named: $out"; fail=1; }
grep -q "^skipped: 2 (1 on the reviewed list)$" <<<"$out" || { echo "wrong count: $out"; fail=1; }
rm "$d/testlogs/pkg/b/b_test/test.xml"
out=$(TESTLOGS="$d/testlogs" bash tools/check_skips.sh) || { echo "a listed skip failed: $out"; fail=1; }
grep -q "OwnershipTest.Regroups (changing group ownership needs root)" <<<"$out" || { echo "reason not shown: $out"; fail=1; }
grep -q "^skipped: 1 (1 on the reviewed list)$" <<<"$out" || { echo "wrong count: $out"; fail=1; }
exit $fail

#!/usr/bin/env bash
# Runs the real lustre-csi binary: bad use exits 2 with usage on stderr, good
# use exits 0, failures exit 1.
set -u
bin="$1"
failures=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

# expect <exit code> <regex expected in stdout or -> <regex expected in stderr or -> args...
expect() {
  local code="$1" want_out="$2" want_err="$3"
  shift 3
  "$bin" "$@" >"$out" 2>"$err"
  local got=$?
  local ok=1
  [[ $got -eq $code ]] || ok=0
  [[ "$want_out" == - ]] || grep -Eq -- "$want_out" "$out" || ok=0
  [[ "$want_err" == - ]] || grep -Eq -- "$want_err" "$err" || ok=0
  if [[ $ok -eq 0 ]]; then
    echo "FAIL: lustre-csi $* -> exit $got (want $code)"
    echo "  stdout: $(head -c 400 "$out")"
    echo "  stderr: $(head -c 400 "$err")"
    failures=$((failures + 1))
  else
    echo "ok: lustre-csi $*"
  fi
}

expect 2 - 'Usage: lustre-csi <subcommand>'
expect 2 - "unknown subcommand 'frobnicate'" frobnicate
expect 0 'node +serve CSI Identity' - --help
expect 0 'Usage: lustre-csi node' - node --help
expect 0 '--v=<int32>' - node --help
expect 0 '--logtostderr .*\(default true\)' - node --help
expect 0 '^azurelustre\.csi\.azure\.com v[0-9]' - --version
expect 0 '^Build Date: "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z"$' - --version --yaml
expect 0 '^Git Commit: ' - version --yaml
expect 0 '^Driver Name: other\.example$' - --version --yaml --drivername=other.example
expect 2 - 'unknown flag --bogus' --version --bogus
expect 2 - '--yaml goes with --version' --yaml
expect 0 'Verbs' - plugin-manager --help
expect 2 - "unknown verb 'frob'" plugin-manager frob
expect 1 - 'UNAVAILABLE' plugin-manager plugins --endpoint=unix:///nonexistent/pm.sock
expect 2 - 'needs --local-root' node --nodeid=n --mount-mode=local
expect 2 - '--nodeid is required' node
expect 2 - 'project ID range .0-5. must be' controller --project-id-range=0-5
expect 2 - 'project ID range .1-4294967295. must be' controller --project-id-range=1-4294967295
expect 2 - '--lfs must be an absolute path' controller --mount-mode=lustre --lfs=lfs
expect 0 '--project-id-range=<string>' - controller --help
expect 2 - 'unknown flag --lfs' node --nodeid=n --lfs=/usr/bin/lfs

# The YAML keys, in order.
"$bin" --version --yaml | cut -d: -f1 >"$out"
if ! diff -u <(printf '%s\n' "Build Date" Compiler "Compiler Version" "Driver Name" \
  "Driver Version" "Git Commit" Platform) "$out"; then
  echo "FAIL: YAML keys"
  failures=$((failures + 1))
fi

echo "$failures failed"
[[ $failures -eq 0 ]]

#!/usr/bin/env bash
# Verifies the systemd units in deploy/systemd (or the directory given) with
# `systemd-analyze verify`, which loads each unit as systemd would.
#
# verify insists that ExecStart's program exists, and the units name the
# installed path /usr/local/bin/lustre-csi. So the units are copied to a
# temporary directory with that path replaced by a stub executable there; the
# rest of each unit is verified as written. verify reports unknown keys and
# values it cannot parse as warnings with exit code 0: any output at all is a
# failure here.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:-deploy/systemd}
installed=/usr/local/bin/lustre-csi

command -v systemd-analyze >/dev/null || { echo "FAIL: systemd-analyze not found (Debian package systemd)"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin" "$work/units"
printf '#!/bin/sh\nexit 0\n' > "$work/bin/lustre-csi"
chmod +x "$work/bin/lustre-csi"

units=()
for unit in "$dir"/*.service; do
  [[ -e "$unit" ]] || { echo "FAIL: no units in $dir"; exit 1; }
  name=$(basename "$unit")
  grep -q "^ExecStart=$installed " "$unit" || { echo "FAIL: $name: ExecStart does not start $installed"; exit 1; }
  sed "s#^ExecStart=$installed #ExecStart=$work/bin/lustre-csi #" "$unit" > "$work/units/$name"
  units+=("$name")
done

# All units at once: their dependencies on each other resolve.
set +e
out=$(cd "$work/units" && systemd-analyze verify "${units[@]/#/./}" 2>&1)
rc=$?
set -e
if [[ $rc -ne 0 || -n "$out" ]]; then
  echo "$out"
  echo "FAIL: systemd-analyze verify (exit $rc) on ${units[*]}"
  exit 1
fi
echo "systemd units ok: ${units[*]}"

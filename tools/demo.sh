#!/usr/bin/env bash
# The main job: installs what is missing, builds the static lustre-csi binary,
# and shows the driver working end to end on this machine - controller and
# node plugin over their unix sockets, with real bind mounts standing in for
# Lustre, inside a private mount namespace that leaves nothing behind.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh
bazel build //cmd/lustre-csi //bench:csi-client 2>&1 | grep -vE '^[0-9.]+: src/main/tools/' | tail -n 2
bindir=$(bazel info bazel-bin 2>/dev/null)
bin=$bindir/cmd/lustre-csi/lustre-csi
client=$bindir/bench/csi-client

echo
echo "\$ file lustre-csi"
file -b "$bin"
echo "\$ lustre-csi --version --yaml"
"$bin" --version --yaml

unshare -m bash tools/demo_inside.sh "$bin" "$client"

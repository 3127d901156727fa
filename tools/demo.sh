#!/usr/bin/env bash
# The main job: installs what is missing, builds the static lustre-csi binary
# and shows what it is.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh
bazel build //cmd/lustre-csi 2>&1 | grep -vE '^[0-9.]+: src/main/tools/' | tail -n 3
bin=$(bazel info bazel-bin 2>/dev/null)/cmd/lustre-csi/lustre-csi

echo
echo "\$ file lustre-csi"
file -b "$bin"
echo "\$ lustre-csi --version"
"$bin" --version
echo "\$ lustre-csi --version --yaml"
"$bin" --version --yaml
echo "\$ lustre-csi --help"
"$bin" --help

#!/usr/bin/env bash
# Builds the container image from deploy/Containerfile with buildah and writes
# it as an OCI archive.
#
#   tools/build_image.sh [OUTPUT.tar]     default: out/lustre-csi-<version>.oci.tar
#
# Buildah keeps its storage in a temporary directory that is removed on exit,
# so the machine's container storage is left alone. The archive's reference
# name is the driver version (e.g. v0.1.0).
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(tr -d '[:space:]' < VERSION)
out=${1:-out/lustre-csi-$version.oci.tar}
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

bazel build //cmd/lustre-csi >&2
binary=$(bazel info bazel-bin 2>/dev/null)/cmd/lustre-csi/lustre-csi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/context"
cp "$binary" "$work/context/lustre-csi"
chmod 0755 "$work/context/lustre-csi"

buildah=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
"${buildah[@]}" bud --quiet --layers=false -f deploy/Containerfile -t "lustre-csi:$version" \
  "$work/context" >&2
rm -f "$out"
"${buildah[@]}" push --quiet "lustre-csi:$version" "oci-archive:$out:$version" >&2
# Buildah's vfs storage holds read-only layer copies; make them removable.
chmod -R u+w "$work" 2>/dev/null || true
echo "$out"

#!/usr/bin/env bash
# Builds the container image from deploy/Containerfile with buildah and writes
# it as an OCI archive.
#
#   tools/build_image.sh [OUTPUT.tar]     default: out/lustre-csi-<version>.oci.tar
#
# Buildah keeps its storage in a temporary directory that is removed on exit,
# so the machine's container storage is left alone.
#
# The archive names itself as the manifests do (`image: lustre-csi:<version>`,
# which runtimes read as docker.io/library/lustre-csi:<version>), in the two
# forms loaders read, pointing at the same blobs:
#   - an OCI image layout whose index entry carries
#     io.containerd.image.name=docker.io/library/lustre-csi:<version> (read by
#     `ctr images import`, `podman load` and Docker's containerd store) and
#     org.opencontainers.image.ref.name=<version> (the tag, for umoci);
#   - a Docker manifest.json with RepoTags ["lustre-csi:<version>"] (read by
#     `docker load` with its classic store).
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
"${buildah[@]}" push --quiet "lustre-csi:$version" "oci-archive:$work/plain.tar:$version" >&2
# Buildah's vfs storage holds read-only layer copies; make them removable.
chmod -R u+w "$work" 2>/dev/null || true

name=docker.io/library/lustre-csi:$version
mkdir "$work/layout"
tar -xf "$work/plain.tar" -C "$work/layout"
cd "$work/layout"
[[ $(jq '.manifests | length' index.json) == 1 ]] || { echo "build_image: expected one image" >&2; exit 1; }
manifest=blobs/sha256/$(jq -r '.manifests[0].digest | ltrimstr("sha256:")' index.json)
jq --arg name "$name" --arg tag "$version" \
  '.manifests[0].annotations = {"io.containerd.image.name": $name, "org.opencontainers.image.ref.name": $tag}' \
  index.json >index.json.new
mv index.json.new index.json
jq --arg tag "lustre-csi:$version" \
  '[{Config: ("blobs/sha256/" + (.config.digest | ltrimstr("sha256:"))), RepoTags: [$tag],
     Layers: [.layers[].digest | "blobs/sha256/" + ltrimstr("sha256:")]}]' \
  "$manifest" >manifest.json
rm -f "$out"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$out" \
  oci-layout index.json manifest.json blobs
cd - >/dev/null
echo "$out"

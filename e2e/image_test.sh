#!/usr/bin/env bash
# Builds the container image, unpacks it with umoci and runs the binary inside
# the unpacked root with chroot (podman run is not available on these
# machines). Checks that the root holds only the binary and that it reports
# the commit that was built.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
archive=$(tools/build_image.sh "$work/image.oci.tar")
version=$(tr -d '[:space:]' < VERSION)

mkdir "$work/layout"
tar -xf "$archive" -C "$work/layout"
umoci unpack --rootless --image "$work/layout:$version" "$work/bundle" >/dev/null

fail() { echo "FAIL: $*"; exit 1; }

contents=$(cd "$work/bundle/rootfs" && find . -mindepth 1 | sort)
[[ "$contents" == "./lustre-csi" ]] || fail "image root holds more than the binary: $contents"

yaml=$(chroot "$work/bundle/rootfs" /lustre-csi --version --yaml)
echo "$yaml"
commit=$(git rev-parse HEAD)
grep -Eq "^Git Commit: \"?$commit(-dirty)?\"?\$" <<<"$yaml" || fail "image does not report commit $commit"
grep -q "^Driver Version: $version\$" <<<"$yaml" || fail "image does not report version $version"

# The runtime configuration umoci derives from the image starts the binary.
tr -d ' \t\n' < "$work/bundle/config.json" | grep -q '"args":\["/lustre-csi"\]' || fail "entrypoint is not /lustre-csi"

# The archive names itself as the manifests do, for every loader: podman
# loads it (its OCI index) as docker.io/library/lustre-csi:<version>, and its
# Docker manifest.json is the same image (podman's docker-archive reader, as
# `docker load` reads it; podman itself would call that name localhost/...).
name=docker.io/library/lustre-csi:$version
podman=(podman --root "$work/podman" --runroot "$work/podman-run" --storage-driver vfs
  --cgroup-manager cgroupfs --events-backend none)
loaded=$("${podman[@]}" load -i "$archive" 2>&1 | sed -n 's/^Loaded image: //p')
[[ "$loaded" == "$name" ]] || fail "podman load named the image '$loaded', not $name"
[[ $(jq -r '.[0].RepoTags[0]' "$work/layout/manifest.json") == "lustre-csi:$version" ]] ||
  fail "manifest.json does not tag lustre-csi:$version"
oci_id=$("${podman[@]}" image inspect --format '{{.ID}}' "$name")
docker_id=$("${podman[@]}" pull -q "docker-archive:$archive" 2>/dev/null | tail -n 1)
[[ "$docker_id" == "$oci_id" ]] || fail "the Docker form is image '$docker_id', the OCI form '$oci_id'"

# containerd (the kubelet's runtime) imports it the documented way under the
# same name: its own daemon, in a private mount namespace, its root and state
# on a tmpfs there, stopped before the test ends.
cat >"$work/containerd.sh" <<'SCRIPT'
set -euo pipefail
archive=$1 w=$2
mount --make-rprivate /
mount -t tmpfs image-test-containerd "$w"
cat >"$w/config.toml" <<CFG
version = 2
root = "$w/root"
state = "$w/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$w/containerd.sock"
CFG
containerd --config "$w/config.toml" >"$w/containerd.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; umount -l "$w"' EXIT
for _ in $(seq 200); do [[ -S $w/containerd.sock ]] && break; sleep 0.05; done
ctr --address "$w/containerd.sock" -n k8s.io images import --no-unpack "$archive" >/dev/null
ctr --address "$w/containerd.sock" -n k8s.io images ls -q
SCRIPT
mkdir "$work/containerd"
imported=$(unshare -m bash "$work/containerd.sh" "$archive" "$work/containerd")
[[ "$imported" == "$name" ]] || fail "ctr -n k8s.io images import named the image '$imported', not $name"
pgrep -f "containerd --config $work/containerd" >/dev/null && fail "containerd left running"

chmod -R u+w "$work" 2>/dev/null || true
echo "image ok (podman and containerd load it as $name)"

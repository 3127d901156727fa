#!/usr/bin/env bash
# The shipped image under the shipped manifests, at pod level, on the
# container runtime nodes run: containerd and runc, driven through the CRI.
#
# Renders deploy/kubernetes (the base) and its sub-dir-provisioning overlay
# with kubectl kustomize, the Nomad node job as the container a Nomad client
# would start (tools/manifest-check/nomad-pod.mjs, for a client whose
# state_dir is the job's default and an allocation id the test knows), builds
# the image archive as operators get it and a tiny local pod sandbox image,
# and runs //e2e:pod_e2e_test as PID 1 of new mount, PID and network
# namespaces. The test builds a synthetic host there (nothing of it reaches
# this machine's mount table or network), starts containerd on it, imports
# both archives with `ctr -n k8s.io images import`, and runs each manifest's
# container through the CRI as the kubelet would (e2e/kubelet_cri.h) against
# a stand-in Lustre client. Afterwards it checks that no cgroup of its pods is
# left on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d /tmp/lustre-csi-pod-e2e.XXXXXX)
cleanup() {
  # A run that crashed may leave its pods' cgroups (empty once the PID
  # namespace is gone); remove them deepest first.
  if [[ -n ${cgroup:-} ]]; then
    find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -name "$cgroup" -exec find {} -depth -type d \; \
      2>/dev/null | xargs -r rmdir 2>/dev/null || true
  fi
  # Buildah's vfs storage (a pause image build that failed) is read-only.
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

kubectl kustomize deploy/kubernetes > "$work/base.yaml"
kubectl kustomize deploy/kubernetes/overlays/sub-dir-provisioning > "$work/sub-dir.yaml"
MANIFEST_CHECK_NODE_MODULES=$(tools/manifest-check/deps.sh)
export MANIFEST_CHECK_NODE_MODULES
# The Nomad node job's image has no default (the test runs the unpacked image
# whatever its name).
export NOMAD_VAR_image=lustre-csi:v0.1.0
node tools/manifest-check/nomad-pod.mjs deploy/nomad/lustre-csi-node.nomad.hcl \
  /opt/nomad/data/client node-1 7c2f1d4e-0b5a-4c8e-9a61-3d2b8e5f1a90 > "$work/nomad-node.yaml"
# The same job on a client whose state_dir is not the job's client_state_dir.
node tools/manifest-check/nomad-pod.mjs deploy/nomad/lustre-csi-node.nomad.hcl \
  /var/lib/nomad/client node-1 7c2f1d4e-0b5a-4c8e-9a61-3d2b8e5f1a90 > "$work/nomad-node-other-state.yaml"

archive=$(tools/build_image.sh "$work/image.oci.tar")

bazel build --curses=no --noshow_progress //e2e:pod_e2e_test //e2e:standin-mount-lustre \
  //e2e:standin-lfs //e2e:standin-apiserver //e2e:pause //e2e:older-kernel >&2
bin=$(bazel info bazel-bin 2>/dev/null)
cp "$bin/e2e/pod_e2e_test" "$bin/e2e/standin-mount-lustre" "$bin/e2e/standin-lfs" \
  "$bin/e2e/older-kernel" "$work/"

# The pod sandbox image must be on the node: one static binary, packed as a
# Docker archive (the form `ctr images import` also reads).
pause_name=docker.io/lustre-csi-e2e/pause:1
mkdir "$work/pause"
cp "$bin/e2e/pause" "$work/pause/pause"
buildah=(buildah --root "$work/pause/storage" --runroot "$work/pause/run" --storage-driver vfs)
box=$("${buildah[@]}" from scratch)
"${buildah[@]}" copy "$box" "$work/pause/pause" /pause >/dev/null
"${buildah[@]}" config --entrypoint '["/pause"]' "$box"
"${buildah[@]}" commit --quiet "$box" lustre-csi-e2e/pause:1 >/dev/null
"${buildah[@]}" push --quiet lustre-csi-e2e/pause:1 "docker-archive:$work/pause.tar:$pause_name"
"${buildah[@]}" rm "$box" >/dev/null
chmod -R u+w "$work/pause" 2>/dev/null || true
rm -rf "$work/pause"

# The cgroup every pod of this run goes under, in each hierarchy.
cgroup=lustre-csi-pod-e2e-$$
cgroups_left() { find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -name "$cgroup" 2>/dev/null; }
# The stand-in API server, its CA and certificate for 127.0.0.1, and the
# service account's token, for the not-ready taint.
mkdir "$work/kube"
cp "$bin/e2e/standin-apiserver" "$work/kube/"
(
  cd "$work/kube"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=pod-test-ca \
    -keyout ca.key -out ca.crt 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver -keyout server.key \
    -out server.csr 2>/dev/null
  echo "subjectAltName=IP:127.0.0.1" >san.ext
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -out server.crt -extfile san.ext 2>/dev/null
  echo pod-token >token
)

mkdir "$work/scratch"
status=0
POD_E2E_BASE="$work/base.yaml" POD_E2E_SUBDIR="$work/sub-dir.yaml" \
  POD_E2E_NOMAD_NODE="$work/nomad-node.yaml" \
  POD_E2E_NOMAD_NODE_OTHER_STATE="$work/nomad-node-other-state.yaml" \
  POD_E2E_IMAGE="$archive" POD_E2E_PAUSE_IMAGE="$work/pause.tar" POD_E2E_PAUSE_NAME="$pause_name" \
  POD_E2E_CGROUP="$cgroup" POD_E2E_OLDER_KERNEL="$work/older-kernel" \
  POD_E2E_STANDIN="$work/standin-mount-lustre" POD_E2E_STANDIN_LFS="$work/standin-lfs" \
  POD_E2E_WORK="$work/scratch" POD_E2E_KUBE="$work/kube" \
  unshare --mount --pid --net --fork --kill-child "$work/pod_e2e_test" "$@" || status=$?
# Nothing of the runtime may outlive the test: its processes die with the
# PID namespace (the test checks that none was left running before it
# ends), its mounts with the mount namespace; its cgroups are the test's to
# remove.
if [[ -n $(cgroups_left) ]]; then
  echo "pod_test: cgroups left: $(cgroups_left | tr '\n' ' ')" >&2
  status=1
fi
exit "$status"

#!/usr/bin/env bash
# The shipped image under the shipped manifests, at pod level.
#
# Renders deploy/kubernetes (the base) and its sub-dir-provisioning overlay
# with kubectl kustomize, the Nomad node job as the container a Nomad client
# would start (tools/manifest-check/nomad-pod.mjs, for a client whose
# state_dir is the job's default and an allocation id the test knows), builds
# and unpacks the image, and runs
# //e2e:pod_e2e_test as PID 1 of new mount, PID and network namespaces. The
# test builds a synthetic host there (nothing of it reaches this machine's
# mount table or network) and runs the image's binary chrooted with the
# manifests' own args and volumes against a stand-in Lustre client.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d /tmp/lustre-csi-pod-e2e.XXXXXX)
trap 'rm -rf "$work"' EXIT

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
version=$(tr -d '[:space:]' < VERSION)
mkdir "$work/layout"
tar -xf "$archive" -C "$work/layout"
umoci unpack --rootless --image "$work/layout:$version" "$work/bundle" >/dev/null

bazel build --curses=no --noshow_progress //e2e:pod_e2e_test //e2e:standin-mount-lustre \
  //e2e:standin-lfs //e2e:standin-apiserver >&2
bin=$(bazel info bazel-bin 2>/dev/null)
cp "$bin/e2e/pod_e2e_test" "$bin/e2e/standin-mount-lustre" "$bin/e2e/standin-lfs" "$work/"
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
POD_E2E_BASE="$work/base.yaml" POD_E2E_SUBDIR="$work/sub-dir.yaml" \
  POD_E2E_NOMAD_NODE="$work/nomad-node.yaml" \
  POD_E2E_NOMAD_NODE_OTHER_STATE="$work/nomad-node-other-state.yaml" \
  POD_E2E_ROOTFS="$work/bundle/rootfs" POD_E2E_STANDIN="$work/standin-mount-lustre" \
  POD_E2E_STANDIN_LFS="$work/standin-lfs" \
  POD_E2E_WORK="$work/scratch" POD_E2E_KUBE="$work/kube" \
  unshare --mount --pid --net --fork --kill-child "$work/pod_e2e_test" "$@"

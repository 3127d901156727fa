#!/usr/bin/env bash
# The demo proper; tools/demo.sh runs it inside a private mount namespace
# (unshare -m), so every mount it makes disappears with it.
#   demo_inside.sh <lustre-csi binary> <csi-client binary>
set -euo pipefail
bin="$1"
client="$2"

mount --make-rprivate /
work=$(mktemp -d /tmp/lustre-csi-demo.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]:-}"; do [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  # Deepest mounts first.
  grep -F " $work/" /proc/self/mountinfo | awk '{print $5}' | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
# csi-client, shown by its name rather than its build path.
csi() { printf '$ csi-client %s\n' "$*"; "$client" "$@"; }

wait_socket() {
  for _ in $(seq 200); do [[ -S "$1" ]] && return 0; sleep 0.05; done
  echo "no socket at $1" >&2
  return 1
}

step "A stand-in Lustre file system: <local-root>/lustrefs on a tmpfs"
mkdir -p "$work/lustre/lustrefs" "$work/pods"
mount -t tmpfs -o size=256m lustrefs "$work/lustre/lustrefs"
echo "local root: $work/lustre"

step "Start the controller and a node plugin (local mount mode: real bind mounts)"
"$bin" controller --endpoint="unix://$work/controller.sock" 2>"$work/controller.log" &
pids+=($!)
mkdir -p "$work/registry"
"$bin" node --nodeid=demo-node --mount-mode=local --local-root="$work/lustre" \
  --endpoint="unix://$work/node.sock" --plugin-registration-dir="$work/registry" \
  2>"$work/node.log" &
pids+=($!)
node_pid=$!
wait_socket "$work/controller.sock"
wait_socket "$work/node.sock"
ctl=(--endpoint="unix://$work/controller.sock")
node=(--endpoint="unix://$work/node.sock")
csi "${ctl[@]}" --rpc=GetPluginInfo
csi "${node[@]}" --rpc=Probe
csi "${node[@]}" --rpc=NodeGetCapabilities

step "CreateVolume: a PVC-like volume with a per-PVC sub-dir"
params="mgs-ip-address=10.0.0.4,fs-name=lustrefs,sub-dir=\${pvc.metadata.name}"
csi "${ctl[@]}" --rpc=CreateVolume --name=pvc-demo --params="$params"
volume_id='pvc-demo#lustrefs#10.0.0.4#${pvc.metadata.name}#f'
context="$params,csi.storage.k8s.io/pvc/name=data"

step "NodePublishVolume twice: read-write for one pod, read-only for another"
csi "${node[@]}" --rpc=NodePublishVolume --volume-id="$volume_id" \
  --target="$work/pods/writer" --params="$context" --mount-flags=noatime
csi "${node[@]}" --rpc=NodePublishVolume --volume-id="$volume_id" \
  --target="$work/pods/reader" --params="$context" --readonly
grep -E "$work/pods" /proc/self/mountinfo | awk '{print "mounted:", $5, $6}'

step "Data written by the writer is read by the reader; the reader cannot write"
run sh -c "echo 'hello from the writer' > $work/pods/writer/greeting.txt"
run cat "$work/pods/reader/greeting.txt"
if sh -c "echo x > $work/pods/reader/nope.txt" 2>/dev/null; then
  echo "read-only mount accepted a write!" >&2
  exit 1
fi
echo "write through the read-only target refused, as it should be"
echo "on the file system: $(ls "$work/lustre/lustrefs/data")"

step "NodeGetVolumeStats"
csi "${node[@]}" --rpc=NodeGetVolumeStats --volume-id="$volume_id" \
  --target="$work/pods/writer"

step "Bad input gets a clear error with the right code"
csi "${node[@]}" --rpc=NodePublishVolume --volume-id="$volume_id" \
  --target="$work/pods/evil" --params="mgs-ip-address=10.0.0.4,fs-name=lustrefs,sub-dir=../../etc" || true

step "Unpublish both, delete the volume; the data stays on the file system"
csi "${node[@]}" --rpc=NodeUnpublishVolume --volume-id="$volume_id" --target="$work/pods/writer"
csi "${node[@]}" --rpc=NodeUnpublishVolume --volume-id="$volume_id" --target="$work/pods/reader"
csi "${ctl[@]}" --rpc=DeleteVolume --volume-id="$volume_id"
echo "mounts left under $work/pods: $(grep -c "$work/pods" /proc/self/mountinfo || true)"
run cat "$work/lustre/lustrefs/data/greeting.txt"

step "The plugin manager discovers the node plugin through its registration socket"
pm_args=(--endpoint="unix://$work/pm.sock" --state-file="$work/state/pm.db"
  --mount-root="$work/mounts" --registration-dir="$work/registry"
  --fingerprint-period-seconds=2 --node-name=demo-node)
start_manager() {
  "$bin" plugin-manager "${pm_args[@]}" 2>>"$work/manager.log" &
  manager_pid=$!
  pids+=("$manager_pid")
  # A killed manager leaves its socket file behind (the new one replaces it),
  # so wait for an answer, not for the file.
  for _ in $(seq 200); do
    "$bin" plugin-manager plugins --endpoint="unix://$work/pm.sock" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "plugin manager did not start:" >&2
  cat "$work/manager.log" >&2
  return 1
}
start_manager
pm() { printf '$ lustre-csi plugin-manager %s\n' "$*"; "$bin" plugin-manager "$@" --endpoint="unix://$work/pm.sock"; }
pm wait azurelustre.csi.azure.com
pm plugins
pm node-info

step "Mount one volume for two allocations through the node plugin"
vctx="mgs-ip-address=10.0.0.4,fs-name=lustrefs,sub-dir=shared"
pm mount azurelustre.csi.azure.com vol-shared alloc-1 --volume-context="$vctx" --remote-id=pvc-shared
pm mount azurelustre.csi.azure.com vol-shared alloc-2 --volume-context="$vctx" --remote-id=pvc-shared
pm claims
alloc1=$(find "$work/mounts" -path '*alloc-1*' -name 'rw-*' | head -n 1)
alloc2=$(find "$work/mounts" -path '*alloc-2*' -name 'rw-*' | head -n 1)
run sh -c "echo 'written by alloc-1' > $alloc1/note.txt"
run cat "$alloc2/note.txt"

step "kill -9 the plugin manager and start it again: it still knows both claims"
kill -9 "$manager_pid"
wait "$manager_pid" 2>/dev/null || true
start_manager
pm wait azurelustre.csi.azure.com >/dev/null
pm claims

step "Unmount alloc-1 without disturbing alloc-2, then alloc-2"
pm unmount azurelustre.csi.azure.com vol-shared alloc-1 --remote-id=pvc-shared
run cat "$alloc2/note.txt"
pm unmount azurelustre.csi.azure.com vol-shared alloc-2 --remote-id=pvc-shared
pm claims
echo "mounts left under $work/mounts: $(grep -c "$work/mounts" /proc/self/mountinfo || true)"

step "SIGTERM: the node drains, removes its socket and exits 0"
kill -TERM "$node_pid"
wait "$node_pid" && echo "node exited with status 0"
[[ -e "$work/node.sock" ]] && echo "socket left behind!" || echo "socket removed"

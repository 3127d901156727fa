#!/usr/bin/env bash
# NodePublishVolume+NodeUnpublishVolume pairs of a sub-dir volume in the
# modes a node runs, with 10 and then 10,000 unrelated mounts on the node:
#   shared  --mount-mode=lustre --lustre-client=shared (what the manifests
#           ship): the stand-in mount helper (e2e/standin_mount_lustre.cc)
#           with no delay, the mount namespace entered by path as in a pod;
#   local   --mount-mode=local: bind mounts of a directory tree;
#   go      the Go driver's node, when its binary is given as $GO_DRIVER,
#           in its real mode (it runs `mount -t lustre`, which reaches the
#           same stand-in as /sbin/mount.lustre).
# The client is this project's C++ bench/csi-client (grpc C++): the kubelet
# and the sidecars speak grpc-go, which costs a server more per call.
# Prints "name value" lines (appended to $RESULTS when set). Runs in a private
# mount namespace; nothing stays mounted.
#   bash bench/many_mounts_bench.sh [pairs=1000] [many=10000]
#   MODES=shared bash bench/many_mounts_bench.sh   # one mode only
#   GO_DRIVER=/path/to/azurelustreplugin bash bench/many_mounts_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" != --inside ]]; then
  bazel build --noshow_progress //cmd/lustre-csi //bench:csi-client //bench:mount-many \
    //e2e:standin-mount-lustre 2>&1 | tail -n 1 >&2
  B=$(bazel info bazel-bin 2>/dev/null)
  exec unshare -m bash "$0" --inside "$B" "$@"
fi
B=$2
PAIRS=${3:-1000}
MANY=${4:-10000}
bin=${LUSTRE_CSI:-$B/cmd/lustre-csi/lustre-csi}  # LUSTRE_CSI: another build, for A/B
client=$B/bench/csi-client

mount --make-rprivate /
w=$(mktemp -d /tmp/lustre-csi-many-bench.XXXXXX)
mount -t tmpfs -o size=512m many-bench "$w"
made_run_dir=0
[[ -d /run/lustre-standin ]] || { mkdir /run/lustre-standin; made_run_dir=1; }
mount -t tmpfs -o size=64m standin-state /run/lustre-standin
spid=""  # the server running now
made_sbin=0
cleanup() {
  [[ -n "$spid" ]] && kill -9 "$spid" 2>/dev/null || true
  wait 2>/dev/null || true
  umount -l /run/lustre-standin 2>/dev/null || true
  if [[ $made_sbin -eq 1 ]]; then umount /sbin/mount.lustre 2>/dev/null || true; rm -f /sbin/mount.lustre; fi
  [[ $made_run_dir -eq 1 ]] && rmdir /run/lustre-standin
  umount -l "$w"
  rmdir "$w"
}
trap cleanup EXIT
# The stand-in needs the lustre module as /proc/filesystems shows it, and
# `mount -t lustre` (the Go driver) finds it as /sbin/mount.lustre.
{ cat /proc/filesystems; printf 'nodev\tlustre\n'; } >"$w/filesystems"
mount --bind "$w/filesystems" /proc/filesystems
mkdir -p /run/lustre-standin/servers/lustrefs
echo 0 >/run/lustre-standin/delay_ms
cp "$B/e2e/standin-mount-lustre" "$w/mount.lustre"
made_sbin=0
if [[ -n "${GO_DRIVER:-}" ]]; then
  [[ -e /sbin/mount.lustre ]] || { touch /sbin/mount.lustre; made_sbin=1; }
  mount --bind "$w/mount.lustre" /sbin/mount.lustre
fi
# Local mode's file system is a mount of its own, as Lustre on a node is: a
# bind's cost in the kernel grows with the mounts directly on its source's
# mount (it checks each for locked submounts), and the unrelated mounts below
# sit beside the pods' targets, as a node's pod volumes do.
mkdir -p "$w/lustre/lustrefs" "$w/pods" "$w/many"
mount -t tmpfs -o size=64m lustrefs "$w/lustre/lustrefs"
mkdir "$w/lustre/lustrefs/v"

record() {
  echo "$1 $2"
  if [[ -n "${RESULTS:-}" ]]; then echo "$1 $2" >>"$RESULTS"; fi
}
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
wait_socket() { for _ in $(seq 400); do [[ -S "$1" ]] && return 0; sleep 0.025; done; return 1; }

start() {  # mode -> sets $sock and $spid
  local mode=$1
  sock=$w/$mode.sock
  case $mode in
    shared)
      "$bin" node --nodeid=bench --mount-namespace="/proc/$$/ns/mnt" \
        --mount-helper="$w/mount.lustre" --working-mount-dir="$w/work" \
        --endpoint="unix://$sock" 2>"$w/$mode.log" &
      ;;
    local)
      "$bin" node --nodeid=bench --mount-mode=local --local-root="$w/lustre" \
        --endpoint="unix://$sock" 2>"$w/$mode.log" &
      ;;
    go)
      "$GO_DRIVER" --nodeid=bench --endpoint="unix://$sock" \
        --enable-azurelustre-mock-mount=false --remove-not-ready-taint=false \
        2>"$w/$mode.log" &
      ;;
  esac
  spid=$!
  wait_socket "$sock"
}

modes=(${MODES:-shared local})
[[ -n "${GO_DRIVER:-}" ]] && modes+=(go)
have=10
"$B/bench/mount-many" "$w/many" 10 0
for n in 10 "$MANY"; do
  if ((n > have)); then
    "$B/bench/mount-many" "$w/many" "$((n - have))" "$have"
    have=$n
  fi
  echo "# $(wc -l </proc/self/mountinfo) mounts in the table" >&2
  for mode in "${modes[@]}"; do
    start "$mode"
    args=(--endpoint="unix://$sock" --server-pid="$spid" --rpc=PublishUnpublish
      --volume_id="pv#lustrefs#10.0.0.4#v#f"
      --params="mgs-ip-address=10.0.0.4,fs-name=lustrefs,sub-dir=v")
    "$client" "${args[@]}" --target="$w/pods/$mode-$n-warm-%d" --n=20 >/dev/null
    line=$("$client" "${args[@]}" --target="$w/pods/$mode-$n-%d" --n="$PAIRS")
    echo "# $mode at $n mounts: $line" >&2
    for f in server_cpu_us_per_op p50_us p99_us p999_us max_us; do
      record "${mode}_pair_${f%_per_op}_at_${n}_mounts" "$(field "$f" <<<"$line")"
    done
    kill "$spid"
    wait "$spid" || true
    spid=""
  done
done

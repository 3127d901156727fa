#!/usr/bin/env bash
# Memory of a node plugin under a publish storm, the node and every helper
# process it starts together (a container's memory limit, e.g. the Nomad
# docker driver's `memory`, counts them all): lustre mode as the Nomad job
# runs it (--lustre-client=shared), then per-volume clients (a helper per
# publish, up to --max-concurrent-mounts at once), with the stand-in helper
# taking DELAY_MS per mount so helpers overlap. bench/tree-rss samples the
# summed VmRSS of the node and its descendants every millisecond. Also the
# peak RSS of a dynamically linked mount program (util-linux mount making a
# bind mount, /usr/bin/time), for what a real mount.lustre may add per
# helper. Prints "name value" lines (appended to $RESULTS when set).
#   bash bench/node_memory_bench.sh [publishes=64] [concurrency=16] [delay_ms=200]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" != --inside ]]; then
  bazel build --noshow_progress //cmd/lustre-csi //bench:csi-client //bench:tree-rss \
    //e2e:standin-mount-lustre 2>&1 | tail -n 1 >&2
  B=$(bazel info bazel-bin 2>/dev/null)
  exec unshare -m bash "$0" --inside "$B" "$@"
fi
B=$2
N=${3:-64}
C=${4:-16}
DELAY=${5:-200}
bin=$B/cmd/lustre-csi/lustre-csi

mount --make-rprivate /
w=$(mktemp -d /tmp/lustre-csi-mem-bench.XXXXXX)
mount -t tmpfs -o size=256m mem-bench "$w"
made_run_dir=0
[[ -d /run/lustre-standin ]] || { mkdir /run/lustre-standin; made_run_dir=1; }
mount -t tmpfs -o size=64m standin-state /run/lustre-standin
pid=""
sampler=""
cleanup() {
  [[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null || true
  [[ -n "$sampler" ]] && kill "$sampler" 2>/dev/null || true
  wait 2>/dev/null || true
  umount -l /run/lustre-standin 2>/dev/null || true
  [[ $made_run_dir -eq 1 ]] && rmdir /run/lustre-standin
  umount -l "$w"
  rmdir "$w"
}
trap cleanup EXIT
{ cat /proc/filesystems; printf 'nodev\tlustre\n'; } >"$w/filesystems"
mount --bind "$w/filesystems" /proc/filesystems
mkdir -p /run/lustre-standin/servers/lustrefs
echo "$DELAY" >/run/lustre-standin/delay_ms
cp "$B/e2e/standin-mount-lustre" "$w/mount.lustre"

record() {
  echo "$1 $2"
  if [[ -n "${RESULTS:-}" ]]; then echo "$1 $2" >>"$RESULTS"; fi
}
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

for mode in shared per-volume; do
  sock=$w/$mode.sock
  "$bin" node --nodeid=bench --mount-namespace="/proc/$$/ns/mnt" \
    --mount-helper="$w/mount.lustre" --working-mount-dir="$w/work-$mode" \
    --lustre-client="$mode" --endpoint="unix://$sock" 2>"$w/$mode.log" &
  pid=$!
  for _ in $(seq 400); do [[ -S "$sock" ]] && break; sleep 0.025; done
  rm -f "$w/stop"
  "$B/bench/tree-rss" "$pid" "$w/stop" >"$w/rss-$mode" &
  sampler=$!
  mkdir -p "$w/pods/$mode"
  line=$("$B/bench/csi-client" --endpoint="unix://$sock" --rpc=NodePublishVolume --n="$N" \
    --concurrency="$C" --target="$w/pods/$mode/p%d" --volume_id="pv#lustrefs#10.0.0.4#v#f" \
    --params="mgs-ip-address=10.0.0.4,fs-name=lustrefs,sub-dir=v")
  "$B/bench/csi-client" --endpoint="unix://$sock" --rpc=NodeUnpublishVolume --n="$N" \
    --concurrency="$C" --target="$w/pods/$mode/p%d" --volume_id=pv >/dev/null
  touch "$w/stop"
  wait "$sampler"
  sampler=""
  key=${mode//-/_}
  echo "# $mode: $line; $(cat "$w/rss-$mode")" >&2
  record "${key}_storm_errors" "$(field errors <<<"$line")"
  record "${key}_peak_tree_rss_kb" "$(field peak_tree_rss_kb <"$w/rss-$mode")"
  record "${key}_peak_processes" "$(field peak_processes <"$w/rss-$mode")"
  record "${key}_node_vmhwm_kb" "$(awk '$1 == "VmHWM:" {print $2}' "/proc/$pid/status")"
  kill "$pid"
  wait "$pid" || true
  pid=""
done
mkdir "$w/a" "$w/b"
record dynamic_mount_program_max_rss_kb \
  "$(/usr/bin/time -f %M mount --bind "$w/a" "$w/b" 2>&1 >/dev/null | tail -n 1)"
umount "$w/b"

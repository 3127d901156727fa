#!/usr/bin/env bash
# Publish latency and helper calls for N pods x M sub-dir volumes of one file
# system: shared Lustre clients (--lustre-client=shared) against one client
# per publish (per-volume), the real binary in lustre mode with the stand-in
# helper (e2e/standin_mount_lustre.cc) taking DELAY_MS per mount, as a real
# client mount takes hundreds of milliseconds. Runs in a private mount
# namespace; nothing stays mounted. Prints "name value" lines (appended to
# $RESULTS when set).
#   bash bench/shared_client_bench.sh [pods=10] [volumes=5] [delay_ms=200]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" != --inside ]]; then
  bazel build --noshow_progress //cmd/lustre-csi //bench:csi-client //e2e:standin-mount-lustre \
    2>&1 | tail -n 1 >&2
  B=$(bazel info bazel-bin 2>/dev/null)
  exec unshare -m bash "$0" --inside "$B" "$@"
fi
B=$2
N=${3:-10}
M=${4:-5}
DELAY=${5:-200}
bin=$B/cmd/lustre-csi/lustre-csi
client=$B/bench/csi-client
standin=$B/e2e/standin-mount-lustre

mount --make-rprivate /
w=$(mktemp -d /tmp/lustre-csi-shared-bench.XXXXXX)
mount -t tmpfs -o size=256m shared-bench "$w"
made_run_dir=0
[[ -d /run/lustre-standin ]] || { mkdir /run/lustre-standin; made_run_dir=1; }
mount -t tmpfs -o size=64m standin-state /run/lustre-standin
pid=""
cleanup() {
  [[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null || true
  wait 2>/dev/null || true
  umount -l /run/lustre-standin 2>/dev/null || true
  [[ $made_run_dir -eq 1 ]] && rmdir /run/lustre-standin
  umount -l "$w"
  rmdir "$w"
}
trap cleanup EXIT
# The stand-in needs the lustre module as /proc/filesystems shows it.
{ cat /proc/filesystems; printf 'nodev\tlustre\n'; } >"$w/filesystems"
mount --bind "$w/filesystems" /proc/filesystems
mkdir -p /run/lustre-standin/servers/lustrefs
echo "$DELAY" >/run/lustre-standin/delay_ms
cp "$standin" "$w/mount.lustre"

record() {
  echo "$1 $2"
  if [[ -n "${RESULTS:-}" ]]; then echo "$1 $2" >>"$RESULTS"; fi
}
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

for mode in shared per-volume; do
  sock=$w/$mode.sock
  "$bin" node --nodeid=bench --mount-mode=lustre --mount-namespace=current \
    --mount-helper="$w/mount.lustre" --working-mount-dir="$w/work-$mode" \
    --lustre-client="$mode" --endpoint="unix://$sock" 2>"$w/$mode.log" &
  pid=$!
  for _ in $(seq 400); do [[ -S "$sock" ]] && break; sleep 0.025; done
  : >/run/lustre-standin/calls.log
  total=0
  worst_p99=0
  worst_max=0
  for m in $(seq "$M"); do
    mkdir -p "$w/pods/$mode/v$m"
    line=$("$client" --endpoint="unix://$sock" --rpc=NodePublishVolume --n="$N" \
      --target="$w/pods/$mode/v$m/p%d" --volume_id="pv$m#lustrefs#10.0.0.4#v$m#f" \
      --params="mgs-ip-address=10.0.0.4,fs-name=lustrefs,sub-dir=v$m")
    echo "# $mode v$m: $line" >&2
    total=$(awk -v a="$total" -v b="$(field seconds <<<"$line")" 'BEGIN {print a + b}')
    worst_p99=$(awk -v a="$worst_p99" -v b="$(field p99_us <<<"$line")" 'BEGIN {print (b > a) ? b : a}')
    worst_max=$(awk -v a="$worst_max" -v b="$(field max_us <<<"$line")" 'BEGIN {print (b > a) ? b : a}')
  done
  calls=$(grep -vc -- ' -V$' /run/lustre-standin/calls.log || true)
  mounts=$(grep -c " lustrefs " /proc/self/mountinfo || true)
  key=${mode//-/_}
  record "${key}_publishes" "$((N * M))"
  record "${key}_helper_calls" "$calls"
  record "${key}_mean_publish_ms" "$(awk -v t="$total" -v n="$((N * M))" 'BEGIN {printf "%.2f", t * 1000 / n}')"
  record "${key}_worst_p99_ms" "$(awk -v v="$worst_p99" 'BEGIN {printf "%.2f", v / 1000}')"
  record "${key}_max_ms" "$(awk -v v="$worst_max" 'BEGIN {printf "%.2f", v / 1000}')"
  # Lustre clients live: the client roots when shared, every target when not.
  if [[ $mode == shared ]]; then
    clients=$(grep -c -- "$w/work-$mode/clients/" /proc/self/mountinfo || true)
  else
    clients=$(grep -c -- "$w/pods/$mode/" /proc/self/mountinfo || true)
  fi
  record "${key}_lustre_clients" "$clients"
  for m in $(seq "$M"); do
    "$client" --endpoint="unix://$sock" --rpc=NodeUnpublishVolume --n="$N" \
      --target="$w/pods/$mode/v$m/p%d" --volume_id="pv$m" >/dev/null
  done
  left=$(grep -c -- "$w/" /proc/self/mountinfo || true)
  record "${key}_mounts_left_after_unpublish" "$((left - 1))"
  kill "$pid"
  wait "$pid" || true
  pid=""
done

#!/usr/bin/env bash
# CreateVolume of provisioned sub-dirs on a controller run with the
# sub-dir-provisioning overlay's flags (--mount-mode=lustre, the mount
# namespace entered by path as in a pod, a working mount dir), three classes:
#   plain   create-sub-dir only;
#   quota   + sub-dir-quota (a project ID claimed, lfs project, lfs setquota);
#   layout  + sub-dir-quota and sub-dir-stripe-count/-size/-pool.
# The host's programs are the stand-ins (e2e/standin_mount_lustre.cc with no
# delay, e2e/standin_lfs.cc): a real Lustre mount and real lfs calls cost
# more, so the figures are the driver's own share plus process starts. It
# reports latency (p50, p99) and the helper and lfs runs per create, counted
# from the stand-ins' call logs. The client is this project's C++
# bench/csi-client, one call at a time. Prints "name value" lines (appended
# to $RESULTS when set). Runs in a private mount namespace; nothing stays.
#   bash bench/create_volume_bench.sh [creates=200]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" != --inside ]]; then
  bazel build --noshow_progress //cmd/lustre-csi //bench:csi-client //e2e:standin-mount-lustre \
    //e2e:standin-lfs 2>&1 | tail -n 1 >&2
  B=$(bazel info bazel-bin 2>/dev/null)
  exec unshare -m bash "$0" --inside "$B" "$@"
fi
B=$2
N=${3:-200}
bin=${LUSTRE_CSI:-$B/cmd/lustre-csi/lustre-csi}  # LUSTRE_CSI: another build, for A/B
client=$B/bench/csi-client

mount --make-rprivate /
w=$(mktemp -d /tmp/lustre-csi-create-bench.XXXXXX)
mount -t tmpfs -o size=256m create-bench "$w"
made_run_dir=0
[[ -d /run/lustre-standin ]] || { mkdir /run/lustre-standin; made_run_dir=1; }
mount -t tmpfs -o size=64m standin-state /run/lustre-standin
spid=""
cleanup() {
  [[ -n "$spid" ]] && kill -9 "$spid" 2>/dev/null || true
  wait 2>/dev/null || true
  umount -l /run/lustre-standin 2>/dev/null || true
  [[ $made_run_dir -eq 1 ]] && rmdir /run/lustre-standin
  umount -l "$w"
  rmdir "$w"
}
trap cleanup EXIT
{ cat /proc/filesystems; printf 'nodev\tlustre\n'; } >"$w/filesystems"
mount --bind "$w/filesystems" /proc/filesystems
mkdir -p /run/lustre-standin/servers/lustrefs "$w/bin/lfs-state" "$w/work"
echo 0 >/run/lustre-standin/delay_ms
cp "$B/e2e/standin-mount-lustre" "$w/bin/mount.lustre"
cp "$B/e2e/standin-lfs" "$w/bin/lfs"
echo lustrefs.fast >"$w/bin/lfs-state/pools"

record() {
  echo "$1 $2"
  if [[ -n "${RESULTS:-}" ]]; then echo "$1 $2" >>"$RESULTS"; fi
}
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
wait_socket() { for _ in $(seq 400); do [[ -S "$1" ]] && return 0; sleep 0.025; done; return 1; }
count() { [[ -f "$1" ]] && grep -vc -- ' -V$' "$1" || echo 0; }

sock=$w/controller.sock
"$bin" controller --mount-mode=lustre --mount-namespace="/proc/$$/ns/mnt" \
  --mount-helper="$w/bin/mount.lustre" --lfs="$w/bin/lfs" --working-mount-dir="$w/work" \
  --endpoint="unix://$sock" 2>"$w/controller.log" &
spid=$!
wait_socket "$sock"

base="mgs-ip-address=10.0.0.4,fs-name=lustrefs,create-sub-dir=true,sub-dir-on-delete=delete"
declare -A extra=(
  [plain]=""
  [quota]=",sub-dir-quota=true"
  [layout]=",sub-dir-quota=true,sub-dir-stripe-count=4,sub-dir-stripe-size=1M,sub-dir-stripe-pool=fast"
)
for class in plain quota layout; do
  params="$base,sub-dir=$class/v-%d${extra[$class]}"
  "$client" --endpoint="unix://$sock" --rpc=CreateVolume --name="warm-$class-%d" \
    --params="$base,sub-dir=warm-$class/v-%d${extra[$class]}" --required_bytes=$((1 << 30)) \
    --n=10 >/dev/null
  mounts_before=$(count /run/lustre-standin/calls.log)
  lfs_before=$(count "$w/bin/lfs-state/calls.log")
  line=$("$client" --endpoint="unix://$sock" --server-pid="$spid" --rpc=CreateVolume \
    --name="$class-%d" --params="$params" --required_bytes=$((10 << 30)) --n="$N")
  echo "# $class: $line" >&2
  errors=$(field errors <<<"$line")
  [[ "$errors" == 0 ]] || { echo "create_volume_bench: $class: $errors errors" >&2; tail "$w/controller.log" >&2; exit 1; }
  mounts=$(($(count /run/lustre-standin/calls.log) - mounts_before))
  lfs=$(($(count "$w/bin/lfs-state/calls.log") - lfs_before))
  record "create_${class}_p50_us" "$(field p50_us <<<"$line")"
  record "create_${class}_p99_us" "$(field p99_us <<<"$line")"
  record "create_${class}_server_cpu_us" "$(field server_cpu_us_per_op <<<"$line")"
  record "create_${class}_helper_runs_per_create" "$(awk -v a="$mounts" -v n="$N" 'BEGIN { printf "%.2f", a / n }')"
  record "create_${class}_lfs_runs_per_create" "$(awk -v a="$lfs" -v n="$N" 'BEGIN { printf "%.2f", a / n }')"
done
kill "$spid"
wait "$spid" || true
spid=""

#!/usr/bin/env bash
# The benchmark set; bench/run_benchmarks.sh runs it inside a private mount
# namespace. Writes "name value" lines to $OUT/results.txt and the data of the
# plot to $OUT/publish_vs_mounts.dat.
#   bench_inside.sh <bazel-bin dir> <out dir>
set -euo pipefail
B="$1"
OUT="$2"
bin=$B/cmd/lustre-csi/lustre-csi
client=$B/bench/csi-client
mbench=$B/bench/manager-bench

mount --make-rprivate /
w=$(mktemp -d /tmp/lustre-csi-bench.XXXXXX)
# Everything lives on a tmpfs of its own: one lazy unmount at the end takes
# the whole tree with it, however many mounts the benchmarks made below it.
mount -t tmpfs -o size=1g lustre-csi-bench "$w"
# A few figures are taken on the disk too (ext4 here): mount targets and the
# plugin manager's store, where mkdir, rmdir and fdatasync cost what they
# cost on a node.
disk=$(mktemp -d /var/tmp/lustre-csi-bench.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]:-}"; do [[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  umount -l "$w"
  rmdir "$w"
  rm -rf "$disk"
}
trap cleanup EXIT
results=$OUT/results.txt
: >"$results"
record() { echo "$1 $2" | tee -a "$results"; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
wait_socket() { for _ in $(seq 400); do [[ -S "$1" ]] && return 0; sleep 0.025; done; return 1; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

mkdir -p "$w/lustre/lustrefs" "$w/pods" "$w/reg"
mount -t tmpfs -o size=512m lustrefs "$w/lustre/lustrefs"
"$bin" node --nodeid=bench --mount-mode=local --local-root="$w/lustre" \
  --endpoint="unix://$w/local.sock" --plugin-registration-dir="$w/reg" 2>/dev/null &
local_pid=$!
pids+=($local_pid)
"$bin" node --nodeid=bench --mount-mode=mock --drivername=mock.csi.io \
  --endpoint="unix://$w/mock.sock" 2>/dev/null &
mock_pid=$!
pids+=($mock_pid)
"$bin" controller --endpoint="unix://$w/ctl.sock" 2>/dev/null &
ctl_pid=$!
pids+=($ctl_pid)
wait_socket "$w/local.sock"; wait_socket "$w/mock.sock"; wait_socket "$w/ctl.sock"
ctx="mgs-ip-address=10.0.0.4,fs-name=lustrefs"
L=(--endpoint="unix://$w/local.sock" --server-pid=$local_pid)
M=(--endpoint="unix://$w/mock.sock" --server-pid=$mock_pid)
C=(--endpoint="unix://$w/ctl.sock" --server-pid=$ctl_pid)

# Records what a load generator printed: latency p50, p99, p99.9 and maximum,
# throughput, and the server's CPU time per operation.
record_load() {  # name, line
  local name=$1 line=$2
  echo "# $name: $line"
  local f
  for f in p50_us p99_us p999_us max_us; do record "${name}_$f" "$(field $f <<<"$line")"; done
  record "${name}_per_s" "$(field throughput <<<"$line")"
  record "${name}_server_cpu_us" "$(field server_cpu_us_per_op <<<"$line")"
}
run_client() {  # name, csi-client args...
  local name=$1
  shift
  record_load "$name" "$("$client" "$@")"
}

echo "== idle memory of the node after start"
sleep 0.5
record node_idle_rss_anon_kb "$(status_kb $local_pid RssAnon)"

echo "== unary calls, one client"
"$client" "${L[@]}" --rpc=Probe --n=2000 >/dev/null  # warm-up
run_client probe "${L[@]}" --rpc=Probe --n=20000
run_client get_plugin_info "${L[@]}" --rpc=GetPluginInfo --n=20000
run_client node_get_capabilities "${L[@]}" --rpc=NodeGetCapabilities --n=20000
run_client node_get_info "${L[@]}" --rpc=NodeGetInfo --n=20000
"$client" "${L[@]}" --rpc=NodePublishVolume --target="$w/pods/stats" --params="$ctx" >/dev/null
run_client node_get_volume_stats "${L[@]}" --rpc=NodeGetVolumeStats --target="$w/pods/stats" --n=20000
"$client" "${L[@]}" --rpc=NodeUnpublishVolume --target="$w/pods/stats" >/dev/null

echo "== publish+unpublish pairs"
run_client pair_local_c1 "${L[@]}" --rpc=PublishUnpublish --target="$w/pods/a%d" --params="$ctx" --n=5000
run_client pair_local_c16 "${L[@]}" --rpc=PublishUnpublish --target="$w/pods/b%d" --params="$ctx" --n=20000 --concurrency=16
run_client pair_local_c16_16conn "${L[@]}" --rpc=PublishUnpublish --target="$w/pods/e%d" --params="$ctx" --n=20000 --concurrency=16 --channels=16
run_client pair_mock_c1 "${M[@]}" --rpc=PublishUnpublish --target="$w/pods/c%d" --params="$ctx" --n=5000
run_client pair_mock_c16 "${M[@]}" --rpc=PublishUnpublish --target="$w/pods/d%d" --params="$ctx" --n=20000 --concurrency=16
mkdir -p "$disk/pods"
record fs_of_disk_figures "$(findmnt -n -o FSTYPE -T "$disk")"
run_client pair_mock_c16_disk "${M[@]}" --rpc=PublishUnpublish --target="$disk/pods/d%d" --params="$ctx" --n=20000 --concurrency=16
echo "== create+delete pairs"
run_client create_delete_c1 "${C[@]}" --rpc=CreateDelete --name="pvc-%d" --params="$ctx" --n=10000
run_client create_delete_c16 "${C[@]}" --rpc=CreateDelete --name="pvc-x%d" --params="$ctx" --n=40000 --concurrency=16
record node_peak_rss_kb "$(status_kb $local_pid VmHWM)"
record node_after_load_rss_anon_kb "$(status_kb $local_pid RssAnon)"

echo "== start to first Probe, idle private memory"
line=$("$B/bench/startup-bench" --binary="$bin" --runs=30 -- node --nodeid=n --mount-mode=mock)
echo "# $line"
record start_to_probe_ms_p50 "$(field start_to_probe_ms_p50 <<<"$line")"
record start_idle_rss_anon_kb "$(field idle_rss_anon_kb <<<"$line")"
record binary_bytes "$(stat -c %s "$bin")"

# Starts a plugin manager (its arguments after the name of its pid variable),
# waits until it serves and its node plugin is healthy.
start_manager() {  # pid variable, manager args...
  local var=$1
  shift
  "$bin" plugin-manager "$@" 2>>"$w/pm.log" &
  printf -v "$var" %s $!
  pids+=($!)
  local endpoint
  for a in "$@"; do [[ $a == --endpoint=* ]] && endpoint=${a#--endpoint=}; done
  wait_socket "${endpoint#unix://}"
  "$mbench" --endpoint="$endpoint" --mode=healthy --n=1 >/dev/null
}
# MountVolume+UnmountVolume pairs at 1 and 16 concurrent allocations.
manager_pairs() {  # endpoint, pid, suffix of the figure names, pairs at 1, pairs at 16
  record_load "manager_pair_c1$3" "$("$mbench" --endpoint="$1" --server-pid="$2" --mode=pairs \
    --n="$4" --volume-context="$ctx")"
  record_load "manager_pair_c16$3" "$("$mbench" --endpoint="$1" --server-pid="$2" --mode=pairs \
    --n="$5" --concurrency=16 --volume-context="$ctx")"
}

echo "== the plugin manager"
pm_args=(--endpoint="unix://$w/pm.sock" --state-file="$w/state/pm.db" --mount-root="$w/mounts"
  --registration-dir="$w/reg" --fingerprint-period-seconds=30 --node-name=bench)
start_manager pm_pid "${pm_args[@]}"
manager_pairs "unix://$w/pm.sock" "$pm_pid" "" 2000 4000
line=$("$mbench" --endpoint="unix://$w/pm.sock" --mode=fill --n=1000 --volume-context="$ctx" --concurrency=4)
echo "# manager fill: $line"
kill -TERM $pm_pid
wait $pm_pid || true
line=$("$mbench" --endpoint="unix://$w/pm.sock" --mode=restore --n=1000 --binary="$bin" -- \
  plugin-manager "${pm_args[@]}")
echo "# $line"
record manager_restore_1000_claims_ms "$(field exec_to_claims_listed_ms <<<"$line")"

echo "== the plugin manager, its store on the disk"
mkdir -p "$disk/state"
start_manager pmd_pid --endpoint="unix://$w/pmd.sock" --state-file="$disk/state/pm.db" \
  --mount-root="$w/mounts-disk" --registration-dir="$w/reg" --fingerprint-period-seconds=30 \
  --node-name=bench
manager_pairs "unix://$w/pmd.sock" "$pmd_pid" _disk 1000 3000
kill -TERM $pmd_pid
wait $pmd_pid || true

echo "== fingerprinting 50 plugins"
mkdir -p "$w/reg50"
for i in $(seq 1 50); do
  "$bin" node --nodeid=bench --mount-mode=mock --drivername="bench-$i.csi.io" \
    --endpoint="unix://$w/p$i.sock" --plugin-registration-dir="$w/reg50" 2>/dev/null &
  pids+=($!)
done
"$bin" plugin-manager --endpoint="unix://$w/pm50.sock" --state-file="$w/state/pm50.db" \
  --mount-root="$w/mounts50" --registration-dir="$w/reg50" --fingerprint-period-seconds=1 \
  2>/dev/null &
pm50=$!
pids+=($pm50)
wait_socket "$w/pm50.sock"
line=$("$mbench" --endpoint="unix://$w/pm50.sock" --mode=healthy --n=50)
echo "# $line"
record manager_50_plugins_healthy_ms "$(field waited_ms <<<"$line")"
t0=$(awk '{print $14+$15}' /proc/$pm50/stat)
sleep 10
t1=$(awk '{print $14+$15}' /proc/$pm50/stat)
# 10 rounds of 50 fingerprints in 10 s; clock ticks are 10 ms.
record manager_fingerprint_cpu_us_per_plugin "$(( (t1 - t0) * 10000 / (10 * 50) ))"
record manager_50_plugins_rss_anon_kb "$(status_kb $pm50 RssAnon)"

echo "== publish cost with many mounts on the node"
: >"$OUT/publish_vs_mounts.dat"
have=0
for n in 10 100 1000 3000 10000; do
  "$B/bench/mount-many" "$w/many" "$((n - have))" "$have"
  have=$n
  total=$(wc -l </proc/self/mountinfo)
  line=$("$client" "${L[@]}" --rpc=PublishUnpublish --target="$w/pods/m${n}_%d" --params="$ctx" --n=2000)
  p50=$(field p50_us <<<"$line")
  echo "# $n extra mounts ($total in the table): $line"
  echo "$n $p50 $(field p99_us <<<"$line")" >>"$OUT/publish_vs_mounts.dat"
  record "pair_p50_us_at_${n}_mounts" "$p50"
done

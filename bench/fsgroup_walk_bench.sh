#!/usr/bin/env bash
# NodePublishVolume+NodeUnpublishVolume pairs that each change a volume's
# group (fsGroup, CSI's volume_mount_group): the node walks the whole tree
# through directory descriptors (pkg/volume/tree), chowning and chmodding
# every entry. The calls alternate between two groups, so the
# on-root-mismatch shortcut never skips a walk. The node runs in local mode
# (bind mounts of a directory tree on a tmpfs of its own); the tree holds
# <dirs> directories of <files> files each. The client is this project's
# C++ bench/csi-client, one call at a time. Prints "name value" lines
# (appended to $RESULTS when set) and the time per entry walked. Runs in a
# private mount namespace; nothing stays.
#   bash bench/fsgroup_walk_bench.sh [pairs=40] [dirs=100] [files=200]
#   LUSTRE_CSI=/path/to/another/build bash bench/fsgroup_walk_bench.sh   # A/B
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" != --inside ]]; then
  bazel build --noshow_progress //cmd/lustre-csi //bench:csi-client 2>&1 | tail -n 1 >&2
  B=$(bazel info bazel-bin 2>/dev/null)
  exec unshare -m bash "$0" --inside "$B" "$@"
fi
B=$2
PAIRS=${3:-40}
DIRS=${4:-100}
FILES=${5:-200}
bin=${LUSTRE_CSI:-$B/cmd/lustre-csi/lustre-csi}  # LUSTRE_CSI: another build, for A/B
client=$B/bench/csi-client
mount --make-rprivate /
w=$(mktemp -d /tmp/lustre-csi-fsgroup-bench.XXXXXX)
mount -t tmpfs -o size=256m fsgroup-bench "$w"
spid=""
cleanup() {
  [[ -n "$spid" ]] && kill -9 "$spid" 2>/dev/null || true
  wait 2>/dev/null || true
  umount -R -l "$w"
  rmdir "$w"
}
trap cleanup EXIT

mkdir -p "$w/lustre/lustrefs" "$w/pods"
mount -t tmpfs -o size=128m,nr_inodes=0 lustrefs "$w/lustre/lustrefs"
v=$w/lustre/lustrefs/v
mkdir "$v"
for d in $(seq "$DIRS"); do
  mkdir "$v/d$d"
  (cd "$v/d$d" && seq -f "f%g" "$FILES" | xargs touch)
done
entries=$((1 + DIRS + DIRS * FILES))

record() {
  echo "$1 $2"
  if [[ -n "${RESULTS:-}" ]]; then echo "$1 $2" >>"$RESULTS"; fi
}
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

sock=$w/node.sock
"$bin" node --nodeid=bench --mount-mode=local --local-root="$w/lustre" \
  --endpoint="unix://$sock" 2>"$w/node.log" &
spid=$!
for _ in $(seq 400); do [[ -S "$sock" ]] && break; sleep 0.025; done
args=(--endpoint="unix://$sock" --server-pid="$spid" --rpc=PublishUnpublish
  --volume_id="pv#lustrefs#10.0.0.4#v#f" --volume_mount_groups=4001,4002
  --params="mgs-ip-address=10.0.0.4,fs-name=lustrefs,sub-dir=v")
"$client" "${args[@]}" --target="$w/pods/warm-%d" --n=2 >/dev/null
line=$("$client" "${args[@]}" --target="$w/pods/p-%d" --n="$PAIRS")
echo "# $entries entries walked per pair: $line" >&2
# Each pair must really have walked: the last group is on every entry.
last=$((PAIRS % 2 == 0 ? 4002 : 4001))  # call i asks for 4001 + (i mod 2)
wrong=$(find "$v" ! -group "$last" | wc -l)
[[ $wrong -eq 0 ]] || { echo "fsgroup_walk_bench: $wrong entries not in group $last" >&2; exit 1; }
for f in server_cpu_us_per_op p50_us p99_us; do
  record "fsgroup_pair_${f%_per_op}_at_${entries}_entries" "$(field "$f" <<<"$line")"
done
p50=$(field p50_us <<<"$line")
record "fsgroup_walk_ns_per_entry_p50" "$(awk -v t="$p50" -v n="$entries" 'BEGIN{printf "%.0f", t*1000/n}')"
kill "$spid"
wait "$spid" || true
spid=""

#!/usr/bin/env bash
# Runs the standard benchmark set and writes out/bench/: results.txt (one
# "name value" a line), report.md (the table), publish_vs_mounts.dat and the
# plot docs/benchmarks-publish-vs-mounts.png. Needs root (it makes real
# mounts, inside a private mount namespace that disappears with it).
#   bash bench/run_benchmarks.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh >/dev/null
bazel build --noshow_progress //cmd/lustre-csi //bench:all 2>&1 | tail -n 1
B=$(bazel info bazel-bin 2>/dev/null)
OUT=$PWD/out/bench
mkdir -p "$OUT"
unshare -m bash bench/bench_inside.sh "$B" "$OUT"
# Shared Lustre clients against one per publish: 10 pods x 5 volumes, 200 ms mounts.
RESULTS=$OUT/results.txt bash bench/shared_client_bench.sh 10 5 200
# The shipped mode (shared clients) and local mode at 10 and 10,000 mounts, and
# the Go driver's real mode when $GO_DRIVER names its binary: 1,000 pairs each.
RESULTS=$OUT/results.txt bash bench/many_mounts_bench.sh 1000 10000
# CreateVolume of provisioned sub-dirs: plain, with a project quota, with a layout.
RESULTS=$OUT/results.txt bash bench/create_volume_bench.sh 300
# fsGroup walks: publish pairs that each change the group of 20,101 entries.
RESULTS=$OUT/results.txt bash bench/fsgroup_walk_bench.sh 40 100 200

gnuplot <<GP
set terminal pngcairo size 800,480 font "sans,11"
set output "docs/benchmarks-publish-vs-mounts.png"
set title "NodePublish+NodeUnpublish pair vs. mounts already on the node (local mode, 1 client)"
set xlabel "extra mounts on the node"
set ylabel "latency (us)"
set logscale x
set key top left
set yrange [0:*]
set grid
plot "$OUT/publish_vs_mounts.dat" using 1:2 with linespoints lw 2 title "p50", \
     "" using 1:3 with linespoints lw 2 title "p99"
GP

{
  echo "| figure | value |"
  echo "|---|---|"
  while read -r name value; do echo "| $name | $value |"; done <"$OUT/results.txt"
} >"$OUT/report.md"
echo "wrote $OUT/results.txt, $OUT/report.md and docs/benchmarks-publish-vs-mounts.png"

#!/usr/bin/env bash
# Proves two properties of the lustre-csi binary:
#  1. static: no dynamic section, no interpreter, and it runs in an empty root;
#  2. reproducible: two clean builds, each in its own fresh Bazel output base
#     (different absolute paths) and without the action cache, give the same
#     sha256 - and the same as the everyday build.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "FAIL: $*"; exit 1; }
target=//cmd/lustre-csi
rel=cmd/lustre-csi/lustre-csi

bazel build "$target" 2>/dev/null
main_bin=$(bazel info bazel-bin 2>/dev/null)/$rel

# 1. Static.
described=$(file -L "$main_bin")
echo "$described" >&2
grep -q "statically linked" <<<"$described" || fail "file does not say statically linked"
if readelf -d "$main_bin" | grep -q "Dynamic section"; then fail "binary has a dynamic section"; fi
if readelf -l "$main_bin" | grep -q "INTERP"; then fail "binary asks for an interpreter"; fi
root=$(mktemp -d)
cleanup() {
  rm -rf "$root"
  for ob in "${bases[@]:-}"; do
    [[ -n "$ob" ]] || continue
    bazel --output_base="$ob" shutdown >/dev/null 2>&1 || true
    chmod -R u+w "$ob" 2>/dev/null || true
    rm -rf "$ob"
  done
}
bases=()
trap cleanup EXIT
cp "$main_bin" "$root/lustre-csi"
chroot "$root" /lustre-csi --version >/dev/null || fail "binary does not run in an empty root"
echo "static: ok (runs in an empty root)"

# 2. Reproducible.
sums=()
for i in 1 2; do
  ob=$(mktemp -d "/tmp/lustre-csi-repro-$i.XXXXXX")
  bases+=("$ob")
  bazel --output_base="$ob" build --disk_cache= "$target" >/dev/null 2>&1 \
    || fail "clean build $i failed"
  sums+=("$(sha256sum "$(bazel --output_base="$ob" info bazel-bin 2>/dev/null)/$rel" | cut -d' ' -f1)")
  echo "clean build $i: ${sums[-1]}"
done
main_sum=$(sha256sum "$main_bin" | cut -d' ' -f1)
echo "everyday build: $main_sum"
[[ "${sums[0]}" == "${sums[1]}" ]] || fail "two clean builds differ"
[[ "${sums[0]}" == "$main_sum" ]] || fail "clean build differs from the everyday build"
echo "reproducible: ok"

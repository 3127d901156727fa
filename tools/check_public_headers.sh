#!/usr/bin/env bash
# The plugin manager's public face stays closed: no header directly in
# pkg/csimanager/ reaches (also through other headers of this repository) a
# header in pkg/csimanager/internal/, and the API's headers reach no gRPC or
# protobuf header. The two gRPC glue headers (the service and its proto
# conversions) may use the generated protos, never internal/. Prints each
# offending chain and exits 1; exits 0 when clean.
#   bash tools/check_public_headers.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# The gRPC face: what cmd/ serves the API with.
glue=(pkg/csimanager/manager_service.h pkg/csimanager/manager_proto.h)
mapfile -t public < <(git ls-files --cached --others --exclude-standard 'pkg/csimanager/*.h' |
  grep -v '/internal/\|/testing/' | sort -u)
[[ ${#public[@]} -gt 0 ]] || { echo "tools/check_public_headers.sh: no public header found"; exit 2; }

# The repository headers `file` includes ("pkg/..." or "proto/...").
includes() { sed -n 's/^#include "\(\(pkg\|proto\)\/[^"]*\)".*/\1/p' "$1"; }
# Every system/library header `file` includes (<...> and non-repository "...").
external() { sed -n 's/^#include [<"]\([^">]*\)[">].*/\1/p' "$1" | grep -v '^pkg/\|^proto/' || true; }

bad=0
for top in "${public[@]}"; do
  is_glue=0
  for g in "${glue[@]}"; do [[ $top == "$g" ]] && is_glue=1; done
  # Breadth-first over repository headers, remembering how each was reached.
  declare -A via=([$top]="")
  queue=("$top")
  while [[ ${#queue[@]} -gt 0 ]]; do
    h=${queue[0]}
    queue=("${queue[@]:1}")
    chain="${via[$h]:+${via[$h]} -> }$h"
    if [[ $h == pkg/csimanager/internal/* ]]; then
      echo "$chain: reaches internal/"
      bad=1
      continue
    fi
    if [[ $is_glue -eq 0 ]]; then
      if [[ $h == proto/* ]]; then
        echo "$chain: a generated header in the API"
        bad=1
        continue
      fi
      while read -r ext; do
        [[ -z $ext ]] && continue
        if [[ $ext == grpc/* || $ext == grpcpp/* || $ext == google/protobuf/* || $ext == *.pb.h ]]; then
          echo "$chain: includes <$ext> in the API"
          bad=1
        fi
      done < <(external "$h")
    fi
    [[ -f $h ]] || continue  # generated (proto/*.pb.h): not followed
    while read -r inc; do
      [[ -z $inc ]] && continue
      if [[ -z ${via[$inc]+x} ]]; then
        via[$inc]=$chain
        queue+=("$inc")
      fi
    done < <(includes "$h")
  done
  unset via
done
if [[ $bad -ne 0 ]]; then
  echo "tools/check_public_headers.sh: the plugin manager's public headers show what they should not"
  exit 1
fi
echo "the plugin manager's public headers show no internal/ and, but for its gRPC glue, no gRPC"

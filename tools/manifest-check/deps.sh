#!/usr/bin/env bash
# Installs the npm dependencies of tools/manifest-check from package-lock.json
# into a cache outside the work tree (once per lock file) and prints the
# node_modules directory to point MANIFEST_CHECK_NODE_MODULES at. Progress
# and npm's log go to stderr.
set -euo pipefail
tool=$(cd "$(dirname "$0")" && pwd)
lock_hash=$(cat "$tool/package-lock.json" "$tool/package.json" | sha256sum | cut -c1-16)
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/lustre-csi/manifest-check
deps=$cache_root/$lock_hash
if [[ ! -f "$deps/.complete" ]]; then
  mkdir -p "$cache_root"
  staging=$(mktemp -d "$cache_root/.tmp.XXXXXX")
  cp "$tool/package.json" "$tool/package-lock.json" "$staging/"
  if ! (cd "$staging" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error \
      >"$staging/npm.log" 2>&1); then
    cat "$staging/npm.log" >&2
    rm -rf "$staging"
    echo "manifest-check: npm ci failed" >&2
    exit 1
  fi
  touch "$staging/.complete"
  rm -rf "$deps"
  mv -T "$staging" "$deps" 2>/dev/null || rm -rf "$staging"
  echo "  installed into $deps" >&2
else
  echo "  present in $deps" >&2
fi
echo "$deps/node_modules"

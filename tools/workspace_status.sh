#!/bin/sh
# Prints the stable build-status keys Bazel stamps into the binary. Only facts
# of the commit are used (never the wall clock), so the build is reproducible.
set -eu
commit=$(git rev-parse --verify -q HEAD 2>/dev/null) || commit=unknown
if [ "$commit" != unknown ]; then
  # RFC 3339 in UTC, from the committer time.
  date=$(TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD)
  # Untracked files that git ignores do not count; Bazel's own symlinks are ignored.
  if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
    commit="$commit-dirty"
  fi
else
  date=1970-01-01T00:00:00Z
fi
echo "STABLE_GIT_COMMIT $commit"
echo "STABLE_BUILD_DATE $date"

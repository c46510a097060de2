#!/usr/bin/env bash
# Releases every module of the repository together under one version:
#
#   scripts/release.sh vX.Y.Z
#
# On a clean work tree whose CHANGELOG.md has a heading for the version:
# rewrites each nested module's requires of this repository's modules to
# the version and drops its replace directives of them (`go install
# .../cmd/redlock@vX.Y.Z` refuses a module that has any), dates the
# changelog's heading, commits, and tags the root module vX.Y.Z and each
# nested module <dir>/vX.Y.Z, the tags Go looks for. A second commit puts
# the replace directives back for development (`GOWORK=off` builds of the
# tree need them). Nothing is pushed: check the result, then run
# `git push origin HEAD vX.Y.Z <dir>/vX.Y.Z ...` (the last line printed).
# scripts/release-check.sh runs this on a copy of the tree and builds
# applications, and installs the command, from the tags it makes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() { echo "release: $*" >&2; exit 1; }
version=${1:-}
[[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] ||
  die "usage: scripts/release.sh vX.Y.Z (got '$version')"
[[ -z $(git status --porcelain) ]] || die "the work tree has changes: commit or stash them first"
grep -q "^## $version\( (unreleased)\)\?$" CHANGELOG.md || die "CHANGELOG.md has no heading '## $version': say what the release changes"

repo=github.com/redlockgo/redlock
mapfile -t nested < <(git ls-files '*/go.mod' | xargs -n1 dirname | sort)
for dir in "${nested[@]}"; do
  cmp -s LICENSE "$dir/LICENSE" || die "$dir/LICENSE is missing or differs from LICENSE: every module's zip carries the licence"
  git rev-parse -q --verify "refs/tags/$dir/$version" >/dev/null && die "tag $dir/$version exists"
  # Requires of this repository's modules name the version; replace lines
  # (no version) and the module line are left as they are.
  sed -E -i "s#^(require )?([[:space:]]*)(${repo//./\\.}(/[A-Za-z0-9_./-]+)?) v[0-9][^[:space:]]*#\1\2\3 $version#" "$dir/go.mod"
  cp "$dir/go.mod" "$dir/go.mod.dev"
  # Replace lines of this repository's modules, alone or in a block; an
  # emptied block goes too.
  awk -v repo="$repo" '
    function ours(l) { return index(l, repo) > 0 && l ~ /=>/ }
    /^replace \($/ { n = 0; block = $0 "\n"; inblock = 1; next }
    inblock && /^\)$/ { inblock = 0; if (n) printf "%s%s\n", block, $0; next }
    inblock { if (!ours($0)) { block = block $0 "\n"; n++ }; next }
    /^replace / && ours($0) { next }
    { print }
  ' "$dir/go.mod.dev" | cat -s >"$dir/go.mod"
done
git rev-parse -q --verify "refs/tags/$version" >/dev/null && die "tag $version exists"
sed -i "s/^## $version (unreleased)$/## $version ($(date -u +%Y-%m-%d))/" CHANGELOG.md

dev=()
for dir in "${nested[@]}"; do dev+=("$dir/go.mod.dev"); done
git add -A -- . "${dev[@]/#/:!}"
git diff --cached --quiet || git commit -q -m "release $version"
tags=("$version")
for dir in "${nested[@]}"; do tags+=("$dir/$version"); done
for tag in "${tags[@]}"; do git tag -a -m "release $version" "$tag"; done
for dir in "${nested[@]}"; do mv "$dir/go.mod.dev" "$dir/go.mod"; done
git add -A
git diff --cached --quiet || git commit -q -m "after $version: replace this repository's modules by their directories again"
echo "release: tagged ${#tags[@]} modules at $(git rev-parse --short HEAD); to publish:"
echo "git push origin HEAD ${tags[*]}"

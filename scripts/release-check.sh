#!/usr/bin/env bash
# Checks that the modules can be released and used as a user gets them:
# releases a copy of the work tree with scripts/release.sh as the version
# CHANGELOG.md names first, fetches every module from those tags the way
# `go get` fetches from GitHub (git, not the workspace) into a file-based
# module proxy, and builds applications outside the repository from that
# proxy alone (GOWORK=off GOFLAGS=-mod=mod GOPROXY=file://...):
#   - core with each driver, got alone (go get .../drivers/goredis@vX);
#   - drivers/auto with each build tag;
#   - go install of the redlock command;
#   - an upgrade of one driver alone to a later release whose driver uses
#     something new in the root module: the upgrade must bring the root
#     module along.
# It also checks that every module's zip carries the licence.
set -euo pipefail
shopt -s inherit_errexit
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
repo=github.com/redlockgo/redlock
version=$(sed -n 's/^## \(v[0-9][^ ]*\).*/\1/p' "$root/CHANGELOG.md" | head -1)
[[ -n $version ]] || { echo "FAIL: CHANGELOG.md names no version" >&2; exit 1; }
upgrade=${version%.*}.$((${version##*.} + 1))
export GIT_AUTHOR_NAME=release-check GIT_AUTHOR_EMAIL=release-check@localhost
export GIT_COMMITTER_NAME=release-check GIT_COMMITTER_EMAIL=release-check@localhost

# run runs a command, showing its output only when it fails.
run() {
  local out
  out=$("$@" 2>&1) || { printf '%s\n' "$out" >&2; echo "FAIL: $*" >&2; return 1; }
}

# The work tree as it is (tracked and untracked files, not ignored ones),
# released as $version, then as $upgrade with a driver that needs it.
mkdir "$work/repo"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$work/repo" -xf -
cd "$work/repo"
run git init -q -b main
run git add -A
run git commit -q -m "the tree under check"
run bash scripts/release.sh "$version"
cat >driver/adapter/zz_upgrade_check.go <<'EOF'
package adapter

// UpgradeCheck is new in the upgrade release-check.sh makes.
const UpgradeCheck = 1
EOF
cat >drivers/goredis/zz_upgrade_check.go <<'EOF'
package goredis

import "github.com/redlockgo/redlock/driver/adapter"

var _ = adapter.UpgradeCheck
EOF
sed -i "1a\\
\\
## $upgrade (unreleased)\\
\\
The release check's upgrade." CHANGELOG.md
run git add -A
run git commit -q -m "an upgrade whose driver needs its root module"
run bash scripts/release.sh "$upgrade"

# The proxy: every module at the release, and what the upgrade needs at the
# later one, fetched from the tags by git
# as from GitHub, into a module cache whose download directory is a
# file-based proxy.
cat >"$work/gitconfig" <<EOF
[url "file://$work/repo"]
	insteadOf = https://$repo
EOF
modules=("$repo")
mapfile -t -O 1 modules < <(git ls-files '*/go.mod' | xargs -n1 dirname | sed "s#^#$repo/#")
fetch=()
for m in "${modules[@]}"; do fetch+=("$m@$version"); done
fetch+=("$repo@$upgrade" "$repo/drivers/goredis@$upgrade") # what the upgrade needs
run env GOWORK=off GOFLAGS=-modcacherw GIT_CONFIG_GLOBAL="$work/gitconfig" GOPRIVATE="$repo" GOPROXY=direct \
  GOMODCACHE="$work/fetched" go mod download "${fetch[@]}"
proxy=$work/fetched/cache/download
for m in "${modules[@]}"; do
  zip=$proxy/$m/@v/$version.zip
  files=$(unzip -Z1 "$zip")
  grep -qxF "$m@$version/LICENSE" <<<"$files" || { echo "FAIL: the zip of $m@$version carries no LICENSE" >&2; exit 1; }
done

# The applications, with a module cache of their own: this repository's
# modules from the file proxy alone, the others from the usual proxy
# (never "direct": no module of this repository is fetched from anywhere
# else). -trimpath lets the build cache serve the clients' packages,
# whatever the module cache's temporary path.
goproxy=$(go env GOPROXY)
export GOWORK=off GOFLAGS="-mod=mod -trimpath" GONOSUMDB=$repo GOMODCACHE="$work/modcache"
export GOPROXY="file://$proxy,${goproxy%,direct}"
app() { # NAME IMPORT CODE: a new application in $work/NAME
  mkdir "$work/$1"
  printf 'module example.com/%s\n\ngo 1.26.0\n' "$1" >"$work/$1/go.mod"
  printf 'package main\n\nimport (\n\t"github.com/redlockgo/redlock/core"\n\t%s\n)\n\nfunc main() {\n\t_ = core.New\n\t%s\n}\n' "$2" "$3" >"$work/$1/main.go"
  cd "$work/$1"
}
for d in goredis redigo rueidis; do
  app "$d" "\"$repo/drivers/$d\"" "_ = $d.New"
  run go get "$repo/drivers/$d@$version" # alone: it brings the root module at its version
  run go build -o /dev/null .
done
app auto "\"$repo/drivers/auto\"" "_ = auto.Open"
run go get "$repo/drivers/auto@$version"
for tags in "" redlock_redigo redlock_rueidis; do
  run go build -tags "$tags" -o /dev/null .
done
# The command, installed as a user installs it (which a go.mod with
# replace directives would refuse).
cd "$work"
run env GOFLAGS=-trimpath GOBIN="$work/bin" go install "$repo/cmd/redlock@$version"
[[ -x $work/bin/redlock ]] || { echo "FAIL: go install $repo/cmd/redlock@$version made no binary" >&2; exit 1; }
# The upgrade: the driver alone, to a release whose driver uses what only
# the later root module has.
cd "$work/goredis"
run go get "$repo/drivers/goredis@$upgrade"
got=$(go list -m -f '{{.Version}}' "$repo")
[[ $got == "$upgrade" ]] || { echo "FAIL: upgrading drivers/goredis to $upgrade left $repo at $got" >&2; exit 1; }
run go build -o /dev/null .
echo "release check: ${#modules[@]} modules released as $version and $upgrade; core with each driver, drivers/auto with each tag, go install of the command and an upgrade of drivers/goredis alone build from the tags"

#!/usr/bin/env bash
# The project's single test command (README and CI): starts real Redis, Redis
# Cluster and Valkey servers, then vets, checks generated code and runs the
# tests against them. Extra arguments go to `go test`, e.g. -run TestX -v.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/servers.sh
source scripts/servers.sh

section() { printf '\n==> %s\n' "$*"; }

# Fingerprint of the work tree (changes and untracked files), so the generate
# check only blames what go generate itself changed, not a developer's edits.
tree_state() {
  { git diff --binary; git ls-files -z --others --exclude-standard | xargs -0r sha256sum; } | sha256sum
}

section "starting servers"
servers_start

# -race needs cgo and a C compiler, which a machine with only Go lacks.
export CGO_ENABLED=1
command -v "$(go env CC)" >/dev/null || servers_apt_install gcc libc6-dev

section "go vet ./..."
go vet ./...

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  section "go generate ./... (generated code must be up to date)"
  before=$(tree_state)
  go generate ./...
  if [[ $(tree_state) != "$before" ]]; then
    git status --short >&2
    echo "FAIL: generated code is stale: run 'go generate ./...' and commit the result" >&2
    exit 1
  fi
fi

section "go test -race -count=1 ./... $*"
go test -race -count=1 ./... "$@"
section "all tests passed"

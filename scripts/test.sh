#!/usr/bin/env bash
# The project's single test command (README and CI): starts real Redis, Redis
# Cluster and Valkey servers, then vets, checks generated code, runs the tests
# and the conformance matrix against them (and miniredis). Extra arguments go
# to `go test`, e.g. -run TestX -v, and skip the matrix.
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

section "staticcheck ./..."
# Pinned, so that a new release's checks do not fail an unchanged tree.
GOFLAGS= go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
"$(go env GOPATH)/bin/staticcheck" ./...

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

# The conformance suite also runs on in-process miniredis nodes.
export REDLOCK_TEST_MINIREDIS=1

if (($#)); then
  # A narrowed run (extra arguments): plain go test, no matrix.
  section "go test -race -count=1 ./... $*"
  go test -race -count=1 ./... "$@"
else
  # Everything but the conformance suite, which the matrix runs once on
  # every server (Redis 7, Valkey 9, miniredis), failing on any failed
  # cell.
  section "go test -race -count=1 -skip '^TestConformance' ./..."
  go test -race -count=1 -skip '^TestConformance' ./...
  # Fuzzing, bounded: new inputs beyond the seeds that every go test runs.
  section "go test -fuzz, 20s for the public API, 10s for hand-off messages"
  go test -run '^$' -fuzz '^FuzzPublicAPI$' -fuzztime 20s -fuzzminimizetime 5s ./core/
  go test -run '^$' -fuzz '^FuzzHandOffMessage$' -fuzztime 10s ./core/
  # The race detector watches the Go side, which is the same on every
  # server: it runs on Redis 7, standalone and cluster, which reach every
  # code path but the native commands; Valkey 9 (the natives) and
  # miniredis (in the test binary, where under -race its nodes share two
  # cores with the cases and time out) run without it, at a third of the
  # time.
  redis=(--nodes "$REDLOCK_TEST_NODES" --cluster "$REDLOCK_TEST_CLUSTER")
  section "conformance matrix on Redis 7: go run ./cmd/redlock matrix --race --miniredis=false ${redis[*]}"
  go run ./cmd/redlock matrix --race --miniredis=false "${redis[@]}"
  section "conformance matrix on Valkey 9: go run ./cmd/redlock matrix --miniredis=false --nodes $REDLOCK_TEST_VALKEY_NODES"
  go run ./cmd/redlock matrix --miniredis=false --nodes "$REDLOCK_TEST_VALKEY_NODES"
  section "conformance matrix on miniredis: go run ./cmd/redlock matrix --run '.*/miniredis' ${redis[*]}"
  go run ./cmd/redlock matrix --run '.*/miniredis' "${redis[@]}"
fi
section "all tests passed"

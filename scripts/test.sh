#!/usr/bin/env bash
# The project's single test command (README and CI): starts real Redis 7,
# Redis 8 and Valkey servers, each also as a Cluster, then vets, checks generated code, runs the tests
# and the conformance matrix against them. Extra arguments go
# to `go test`, e.g. -run TestX -v, and skip the matrix.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/servers.sh
source scripts/servers.sh

section() { printf '\n==> %s (at %ds)\n' "$*" "$SECONDS"; }

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

# The library is the root module; each driver, the suite, the benchmarks,
# the command, the generator and the OpenTelemetry observer are modules of
# their own (go.work ties them; ./... at the root reaches none of them).
modules=(./... ./drivers/goredis/... ./drivers/redigo/... ./drivers/rueidis/... ./drivers/auto/...
  ./conformance/... ./bench/... ./cmd/redlock/... ./gen/... ./otel/...)

section "go vet (every module)"
go vet "${modules[@]}"

section "staticcheck (every module)"
# Pinned, so that a new release's checks do not fail an unchanged tree.
GOFLAGS= go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
"$(go env GOPATH)/bin/staticcheck" "${modules[@]}"

section "go vet and staticcheck of the redlock command with go-redis and rueidis built in"
go vet -tags redlock_goredis,redlock_rueidis ./cmd/redlock/...
"$(go env GOPATH)/bin/staticcheck" -tags redlock_goredis,redlock_rueidis ./cmd/redlock/...

section "an application of core and one driver: nothing in its go.sum beyond its client's module graph"
bash scripts/gosum.sh

section "the modules released from a copy of the tree, and applications built from the tags: scripts/release-check.sh"
bash scripts/release-check.sh

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
  section "go test -race -count=1 (every module) $*"
  go test -race -count=1 "${modules[@]}" "$@"
else
  # Everything but the conformance suite, which the matrix runs once on
  # Redis 7, Redis 8 and Valkey 9, failing on any failed cell.
  # The redlock command's tests run once, with every client library built
  # in (its TestImportGraph checks the untagged build's imports).
  untagged=()
  for m in "${modules[@]}"; do [[ $m == ./cmd/redlock/... ]] || untagged+=("$m"); done
  section "go test -race -count=1 -skip '^TestConformance' (every module; the command with -tags redlock_goredis,redlock_rueidis)"
  go test -race -count=1 -skip '^TestConformance' "${untagged[@]}"
  go test -race -count=1 -tags redlock_goredis,redlock_rueidis ./cmd/redlock/...
  # Fuzzing, bounded: new inputs beyond the seeds that every go test runs.
  # The budgets are counts of inputs (about 10s each here), not durations:
  # Go 1.26's fuzzing coordinator can fail a run that found nothing with
  # "context deadline exceeded" as a -fuzztime duration ends
  # (go.dev/issue/75804, fixed in Go 1.27).
  section "go test -fuzz FuzzHandOffMessage, 100000 inputs"
  go test -run '^$' -fuzz '^FuzzHandOffMessage$' -fuzztime 100000x ./internal/line/
  # FuzzServerReplies and FuzzPublicAPI minimize a new input by 10 runs at
  # most, as an input's calls may wait for their deadlines: a waiting call
  # waits out what looks like an outage. That made FuzzServerReplies'
  # inputs about ten times slower than they were: each gets about 30s
  # here (2000 and 3000 inputs), so that the whole command keeps a minute
  # under CI's 25. Longer runs: CONTRIBUTING.md.
  section "go test -fuzz FuzzServerReplies, 2000 inputs"
  go test -run '^$' -fuzz '^FuzzServerReplies$' -fuzztime 2000x -fuzzminimizetime 10x ./drivers/goredis/
  section "go test -fuzz FuzzPublicAPI, 3000 inputs"
  go test -run '^$' -fuzz '^FuzzPublicAPI$' -fuzztime 3000x -fuzzminimizetime 10x ./conformance/
  # The matrix runs on the real servers only, with the race detector.
  # Its miniredis cells (the command's default with Go alone) share the
  # test binary's two cores with the cases, which time their nodes out
  # now and then; conformance/cmd/matrix's TestMatrixWithOnlyGo runs one of them, and
  # FuzzPublicAPI takes every primitive on miniredis. Three cases at once
  # per binary (two binaries at once): the cases mostly wait on TTLs and
  # timers, and with two at once the CPU idled about half the time. A case
  # that fails is run once more alone (--rerun, see docs/matrix.md).
  # Valkey gets three of its masters here, so its five-node cells are n/a
  # ("needs 5 independent masters"): they would repeat Redis 7's (the same
  # round over a larger majority) at a seventh of the run's time. The
  # valkey9 single, quorum3 and cluster cells run. Each driver runs on one
  # Redis (conformance/cells.go): rueidis on Redis 8, the others on Redis 7.
  valkey3=$(cut -d, -f1-3 <<<"$REDLOCK_TEST_VALKEY_NODES")
  servers=(--nodes "$REDLOCK_TEST_NODES,$REDLOCK_TEST_REDIS8_NODES,$valkey3"
    --cluster "$REDLOCK_TEST_CLUSTER,$REDLOCK_TEST_REDIS8_CLUSTER,$REDLOCK_TEST_VALKEY_CLUSTER")
  section "conformance matrix on Redis 7, Redis 8 and Valkey 9: go run ./cmd/redlock matrix --race --miniredis=false --cases 3"
  matrix=0
  go run ./cmd/redlock matrix --race --miniredis=false --cases 3 "${servers[@]}" || matrix=$?
  # A report, never a failure: which scripts blocked each kind of server
  # longest during the tests and the matrix (every other client of the
  # server waited behind them), from the SLOWLOG, which logs calls of 1ms
  # or more. It is wall time on a loaded machine: CPU waits count.
  section "scripts that blocked the servers longest: go run ./cmd/redlock slowlog"
  for kind in "Redis 7=$REDLOCK_TEST_NODES" "Redis 7 Cluster=$REDLOCK_TEST_CLUSTER" "Redis 8=$REDLOCK_TEST_REDIS8_NODES" \
    "Redis 8 Cluster=$REDLOCK_TEST_REDIS8_CLUSTER" "Valkey 9=$REDLOCK_TEST_VALKEY_NODES" "Valkey Cluster=$REDLOCK_TEST_VALKEY_CLUSTER"; do
    echo "${kind%%=*}:"
    go run ./cmd/redlock slowlog --servers "${kind#*=}" || echo "WARNING: could not read the SLOWLOG of ${kind%%=*}" >&2
  done
  ((matrix == 0)) || exit "$matrix"
fi
section "all tests passed"

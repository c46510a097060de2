#!/usr/bin/env bash
# Checks that an application importing core and one driver gets nothing in
# its go.sum beyond the module graph of the three clients: what only the
# suite, the benchmarks, the command or the generator need stays in their
# modules. (go-redis is among the sums of an application on another client,
# never linked: core's examples use it.)
set -euo pipefail
shopt -s inherit_errexit
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
app=$(mktemp -d)
trap 'rm -rf "$app"' EXIT

# sums_of prints the modules in the go.sum of an application whose main
# imports imports and runs body.
sums_of() {
  rm -rf "${app:?}"/*
  printf 'module example.com/app\n\ngo 1.26.0\n\nreplace github.com/redlockgo/redlock => %s\n' "$root" >"$app/go.mod"
  printf 'package main\n\nimport (\n%s\n)\n\nfunc main() {\n%s\n}\n' "$1" "$2" >"$app/main.go"
  (cd "$app" && export GOWORK=off GOFLAGS=-mod=mod &&
    { [[ $1 != *redlockgo* ]] || go get github.com/redlockgo/redlock@v0.0.0 >/dev/null 2>&1; } &&
    go mod tidy >/dev/null 2>&1 && go build -o /dev/null .)
  awk '{print $1}' "$app/go.sum" | sort -u
}

# graph_of prints every module in the module graph of the application
# sums_of made last.
graph_of() {
  (cd "$app" && GOWORK=off go mod graph) | tr ' ' '\n' | sed 's/@.*//' | sort -u
}

clients=$(sums_of 'goredis "github.com/redis/go-redis/v9"
redigo "github.com/gomodule/redigo/redis"
"github.com/redis/rueidis"' '_, _, _ = goredis.NewClient, (&redigo.Pool{}).Get, rueidis.NewClient' >/dev/null)
clients=$(graph_of)
status=0
for driver in goredis redigo rueidis; do
  with=$(sums_of "\"github.com/redlockgo/redlock/core\"
_ \"github.com/redlockgo/redlock/drivers/$driver\"" "_ = core.New")
  extra=$(comm -13 <(echo "$clients") <(echo "$with"))
  if [[ -n $extra ]]; then
    echo "FAIL: core and drivers/$driver add to an application's go.sum:" $extra >&2
    status=1
  else
    echo "drivers/$driver: an application's go.sum holds $(wc -l <<<"$with") modules, all the clients' own"
  fi
done
exit $status

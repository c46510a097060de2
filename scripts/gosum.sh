#!/usr/bin/env bash
# Checks that an application importing core and one driver gets nothing in
# its go.sum beyond the module graph of that driver's client (at the
# version the driver requires): each driver is a module of its own, so the
# other clients stay out, and what only the suite, the benchmarks, the
# command or the generator need stays in their modules. The redlock modules
# are replaced by this tree, so they have no sums.
set -euo pipefail
shopt -s inherit_errexit
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
app=$(mktemp -d)
trap 'rm -rf "$app"' EXIT
export GOWORK=off GOFLAGS=-mod=mod

# run runs a go command in the application, showing its output on failure.
run() {
  local out
  out=$(cd "$app" && "$@" 2>&1) || { printf '%s\n' "$out" >&2; echo "FAIL: $*" >&2; return 1; }
}

# sums_of prints the modules in the go.sum of an application that requires
# modules (module@version) and whose main
# imports imports and runs body.
sums_of() {
  rm -rf "${app:?}"/*
  {
    printf 'module example.com/app\n\ngo 1.26.0\n\nreplace (\n'
    printf '\tgithub.com/redlockgo/redlock => %s\n' "$root"
    for d in goredis redigo rueidis auto; do
      printf '\tgithub.com/redlockgo/redlock/drivers/%s => %s/drivers/%s\n' "$d" "$root" "$d"
    done
    printf ')\n'
  } >"$app/go.mod"
  printf 'package main\n\nimport (\n%s\n)\n\nfunc main() {\n%s\n}\n' "$2" "$3" >"$app/main.go"
  run go get $1
  run go mod tidy
  run go build -o /dev/null .
  if [[ -e $app/go.sum ]]; then awk '{print $1}' "$app/go.sum" | sort -u; fi
}

# graph_of prints every module in the module graph of the application
# sums_of made last.
graph_of() {
  (cd "$app" && go mod graph) | tr ' ' '\n' | sed 's/@.*//' | sort -u
}

declare -A module=(
  [goredis]=github.com/redis/go-redis/v9
  [redigo]=github.com/gomodule/redigo
  [rueidis]=github.com/redis/rueidis
)
declare -A import=(
  [goredis]='redis "github.com/redis/go-redis/v9"'
  [redigo]='redis "github.com/gomodule/redigo/redis"'
  [rueidis]='"github.com/redis/rueidis"'
)
declare -A use=(
  [goredis]='_ = redis.NewClient'
  [redigo]='_ = (&redis.Pool{}).Get'
  [rueidis]='_ = rueidis.NewClient'
)
status=0
for driver in goredis redigo rueidis; do
  # The client at the version the driver's go.mod requires, alone.
  version=$(awk -v m="${module[$driver]}" '$1 == m && $2 ~ /^v/ {print $2}' "$root/drivers/$driver/go.mod")
  [[ -n $version ]] || { echo "FAIL: drivers/$driver/go.mod requires no ${module[$driver]}" >&2; exit 1; }
  sums_of "${module[$driver]}@$version" "${import[$driver]}" "${use[$driver]}" >/dev/null
  own=$(graph_of)
  # This repository's modules at the version the driver requires (replaced
  # by this tree).
  ours=$(awk '$1 == "github.com/redlockgo/redlock" && $2 ~ /^v/ {print $2}' "$root/drivers/$driver/go.mod")
  with=$(sums_of "github.com/redlockgo/redlock@$ours github.com/redlockgo/redlock/drivers/$driver@$ours" \
    "\"github.com/redlockgo/redlock/core\"
_ \"github.com/redlockgo/redlock/drivers/$driver\"" "_ = core.New")
  extra=$(comm -13 <(echo "$own") <(echo "$with"))
  if [[ -n $extra ]]; then
    echo "FAIL: core and drivers/$driver add to an application's go.sum beyond ${module[$driver]}'s module graph:" $extra >&2
    status=1
  else
    echo "drivers/$driver: an application's go.sum holds $(grep -c . <<<"$with") modules, all in ${module[$driver]}@$version's module graph"
  fi
done
exit $status

#!/usr/bin/env bash
# Real servers for the integration tests: five independent Redis 7 masters, a
# Redis Cluster of three masters with a replica each, and the same of Valkey 9
# and of Redis 8.0 (both run from the chroot built by valkey-chroot.sh; Redis 7
# lacks DELIFEQ / SET IFEQ).
#
# Sourced (by scripts/test.sh): call servers_start; it exports
#   REDLOCK_TEST_NODES, REDLOCK_TEST_CLUSTER, REDLOCK_TEST_VALKEY_NODES,
#   REDLOCK_TEST_VALKEY_CLUSTER, REDLOCK_TEST_REDIS8_NODES,
#   REDLOCK_TEST_REDIS8_CLUSTER
# and installs an EXIT trap that stops everything, even on failure or Ctrl-C.
#
# Standalone: scripts/servers.sh start [ENVFILE]   (then: source ENVFILE)
#             scripts/servers.sh stop  [ENVFILE]
# ENVFILE defaults to /tmp/redlock-servers.env.

REDLOCK_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REDLOCK_VALKEY_CHROOT=${REDLOCK_VALKEY_CHROOT:-/var/cache/redlock/valkey-chroot}
REDLOCK_SERVERS_DIR=

servers_die() { echo "servers: ERROR: $*" >&2; exit 1; }

# sudo only when we are not already root (CI runs as root, developers may not).
servers_sudo=()
[[ $(id -u) == 0 ]] || servers_sudo=(sudo)
servers_root() { "${servers_sudo[@]}" "$@"; }

servers_apt_install() { # PACKAGE...
  echo "servers: installing $*"
  servers_root env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
    servers_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
}

servers_install() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null && return
  servers_apt_install redis-server
}

# Random ports below the kernel's ephemeral range (32768+), so outgoing client
# connections cannot hold them. Cluster nodes also listen on port+10000 (the
# cluster bus), so every pick keeps both P and P+10000 free and distinct.
servers_used_ports=()
servers_port_taken() {
  local p
  for p in "${servers_used_ports[@]}"; do
    [[ $1 == "$p" || $1 == $((p + 10000)) || $(($1 + 10000)) == "$p" ]] && return 0
  done
  # Anything answering on the port (bash's /dev/tcp: no ss/python needed).
  (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null || (: <"/dev/tcp/127.0.0.1/$(($1 + 10000))") 2>/dev/null
}
servers_pick_port() { # sets $servers_port
  servers_port=$((15000 + RANDOM % 7000))
  while servers_port_taken "$servers_port"; do servers_port=$((15000 + RANDOM % 7000)); done
  servers_used_ports+=("$servers_port")
}

# Wait until redis-cli gets PONG from every port, or fail loudly with its log.
servers_wait_ping() {
  local p i
  for p in "$@"; do
    for ((i = 0; i < 100; i++)); do
      [[ $(redis-cli -p "$p" ping 2>/dev/null) == PONG ]] && continue 2
      sleep 0.1
    done
    tail -n 20 "$REDLOCK_SERVERS_DIR/$p.log" >&2 || true
    servers_die "server on port $p did not answer PING within 10s (log: $REDLOCK_SERVERS_DIR/$p.log)"
  done
}

# Every server logs the commands that run 1ms or longer, in its SLOWLOG, for
# the report of redlock slowlog (an entry keeps at most 32 arguments of 128 bytes;
# the tests' script calls take a few hundred: 10,000 of them, a few MB).
servers_slowlog=(--slowlog-log-slower-than 1000 --slowlog-max-len 10000)

servers_start_redis() { # PORT [extra redis-server args...]
  local p=$1 d=$REDLOCK_SERVERS_DIR
  shift
  redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no "${servers_slowlog[@]}" \
    --daemonize yes --pidfile "$d/$p.pid" --dir "$d" --logfile "$d/$p.log" "$@" 8>&- ||
    servers_die "redis-server on port $p failed to start"
}

# Valkey and Redis 8 run from the chroot, undaemonized in the background (&):
# chroot execs the server, so $! is its PID (no function wrapper: that would
# make $! a subshell), and the log stays on the host instead of in the shared
# chroot. Their files (a cluster node's nodes.conf) go to a directory of this
# run's in the chroot, removed with the state dir.
servers_start_chrooted() { # SERVER PORT [extra server args...]
  local bin=$1 p=$2 d=$REDLOCK_SERVERS_DIR
  shift 2
  "${servers_sudo[@]}" chroot "$REDLOCK_VALKEY_CHROOT" "$bin" --port "$p" --bind 127.0.0.1 \
    --save '' --appendonly no "${servers_slowlog[@]}" --dir "/tmp/${d##*/}" "$@" </dev/null >"$d/$p.log" 2>&1 8>&- &
  echo $! >"$d/$p.pid"
}

# Make a cluster of PORT... (the first three masters, a replica each) and
# wait until every node serves and every replica follows its master.
servers_form_cluster() {
  local p i
  redis-cli --cluster create "${@/#/127.0.0.1:}" --cluster-replicas 1 --cluster-yes \
    >"$REDLOCK_SERVERS_DIR/cluster-create-$1.log" 2>&1 ||
    { cat "$REDLOCK_SERVERS_DIR/cluster-create-$1.log" >&2; servers_die "redis-cli --cluster create $* failed"; }
  for p in "$@"; do
    for ((i = 0; i < 200; i++)); do
      [[ $(redis-cli -p "$p" cluster info) == *cluster_state:ok* ]] && continue 2
      sleep 0.1
    done
    servers_die "cluster node $p did not reach cluster_state:ok within 20s"
  done
  for p in "${@:4}"; do
    for ((i = 0; i < 200; i++)); do
      [[ $(redis-cli -p "$p" info replication) == *master_link_status:up* ]] && continue 2
      sleep 0.1
    done
    servers_die "cluster replica $p did not reach its master within 20s"
  done
}

servers_join() { local IFS=,; echo "$*"; }

servers_check_valkey() {
  local p=$1 k=redlock:servers-probe
  redis-cli -p "$p" set "$k" v >/dev/null
  [[ $(redis-cli -p "$p" set "$k" v IFEQ v) == OK && $(redis-cli -p "$p" delifeq "$k" v) == 1 ]] ||
    servers_die "Valkey on port $p does not support SET IFEQ / DELIFEQ ($(redis-cli -p "$p" info server | grep -i version))"
}

servers_check_redis8() {
  [[ $(redis-cli -p "$1" info server) == *redis_version:8.0.* ]] ||
    servers_die "the server on port $1 is not Redis 8.0 ($(redis-cli -p "$1" info server | grep -i version))"
}

servers_start() {
  local p nodes=() cluster=() valkey=() valkey_cluster=() redis8=() redis8_cluster=() t0=$SECONDS
  trap servers_stop EXIT
  # Turn Ctrl-C / kill into a normal exit so the EXIT trap always runs.
  trap 'exit 130' INT
  trap 'exit 143' TERM HUP

  servers_install || servers_die "could not install redis-server"
  servers_root bash "$REDLOCK_SCRIPTS/valkey-chroot.sh" "$REDLOCK_VALKEY_CHROOT" ||
    servers_die "could not build the chroot of Valkey 9 and Redis 8"
  REDLOCK_SERVERS_DIR=$(mktemp -d /tmp/redlock-servers.XXXXXX)
  servers_root mkdir -p "$REDLOCK_VALKEY_CHROOT/tmp/${REDLOCK_SERVERS_DIR##*/}"

  # Concurrent runs on one machine: pick ports and bind them one run at a time.
  exec 8>/tmp/redlock-servers.lock
  flock 8
  for _ in 1 2 3 4 5; do
    servers_pick_port; nodes+=("$servers_port")
    servers_start_redis "$servers_port"
  done
  for _ in 1 2 3 4 5 6; do # three masters, a replica each
    servers_pick_port; cluster+=("$servers_port")
    servers_start_redis "$servers_port" --cluster-enabled yes \
      --cluster-config-file "$REDLOCK_SERVERS_DIR/nodes-$servers_port.conf"
  done
  for _ in 1 2 3 4 5; do
    servers_pick_port; valkey+=("$servers_port")
    servers_start_chrooted valkey-server "$servers_port"
  done
  for _ in 1 2 3 4 5 6; do
    servers_pick_port; valkey_cluster+=("$servers_port")
    servers_start_chrooted valkey-server "$servers_port" --cluster-enabled yes --cluster-config-file "nodes-$servers_port.conf"
  done
  for _ in 1 2 3 4 5; do
    servers_pick_port; redis8+=("$servers_port")
    servers_start_chrooted redis-server "$servers_port"
  done
  for _ in 1 2 3 4 5 6; do
    servers_pick_port; redis8_cluster+=("$servers_port")
    servers_start_chrooted redis-server "$servers_port" --cluster-enabled yes --cluster-config-file "nodes-$servers_port.conf"
  done
  servers_wait_ping "${nodes[@]}" "${cluster[@]}" "${valkey[@]}" "${valkey_cluster[@]}" "${redis8[@]}" "${redis8_cluster[@]}"
  flock -u 8
  exec 8>&-

  servers_form_cluster "${cluster[@]}"
  servers_form_cluster "${valkey_cluster[@]}"
  servers_form_cluster "${redis8_cluster[@]}"

  for p in "${valkey[@]}"; do servers_check_valkey "$p"; done
  for p in "${redis8[@]}" "${redis8_cluster[@]}"; do servers_check_redis8 "$p"; done

  # The cases that start Valkey or Redis 8 servers of their own run them from the chroot.
  export REDLOCK_TEST_NODES REDLOCK_TEST_CLUSTER REDLOCK_TEST_VALKEY_NODES REDLOCK_TEST_VALKEY_CLUSTER \
    REDLOCK_TEST_REDIS8_NODES REDLOCK_TEST_REDIS8_CLUSTER REDLOCK_SERVERS_DIR REDLOCK_VALKEY_CHROOT
  REDLOCK_TEST_NODES=$(servers_join "${nodes[@]/#/127.0.0.1:}")
  # The seeds are the masters (redis-cli makes the first three masters);
  # clients find the replicas through them.
  local masters=("${cluster[@]:0:3}")
  REDLOCK_TEST_CLUSTER=$(servers_join "${masters[@]/#/127.0.0.1:}")
  REDLOCK_TEST_VALKEY_NODES=$(servers_join "${valkey[@]/#/127.0.0.1:}")
  local valkey_masters=("${valkey_cluster[@]:0:3}")
  REDLOCK_TEST_VALKEY_CLUSTER=$(servers_join "${valkey_masters[@]/#/127.0.0.1:}")
  REDLOCK_TEST_REDIS8_NODES=$(servers_join "${redis8[@]/#/127.0.0.1:}")
  local redis8_masters=("${redis8_cluster[@]:0:3}")
  REDLOCK_TEST_REDIS8_CLUSTER=$(servers_join "${redis8_masters[@]/#/127.0.0.1:}")
  echo "servers: up in $((SECONDS - t0))s (state in $REDLOCK_SERVERS_DIR)"
  echo "  REDLOCK_TEST_NODES=$REDLOCK_TEST_NODES"
  echo "  REDLOCK_TEST_CLUSTER=$REDLOCK_TEST_CLUSTER"
  echo "  REDLOCK_TEST_VALKEY_NODES=$REDLOCK_TEST_VALKEY_NODES"
  echo "  REDLOCK_TEST_VALKEY_CLUSTER=$REDLOCK_TEST_VALKEY_CLUSTER"
  echo "  REDLOCK_TEST_REDIS8_NODES=$REDLOCK_TEST_REDIS8_NODES"
  echo "  REDLOCK_TEST_REDIS8_CLUSTER=$REDLOCK_TEST_REDIS8_CLUSTER"
}

# Running, and not a zombie (an orphan whose reaper is slow still has /proc/PID).
servers_alive() {
  local s
  read -r s 2>/dev/null <"/proc/$1/stat" || return 1
  s=${s##*) }
  [[ ${s:0:1} != Z ]]
}

# Stop every server whose pidfile is in the state dir, then remove the dir.
# Never fails: it runs from the EXIT trap and must not mask the exit status.
servers_stop() {
  local - d=${1:-$REDLOCK_SERVERS_DIR} f pid pids=() i alive
  set +e # best effort: a hiccup must not skip the rest of the cleanup
  [[ -n $d && -d $d ]] || return 0
  for f in "$d"/*.pid; do
    [[ -s $f ]] || continue
    pid=$(<"$f")
    servers_root kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  for ((i = 0; i < 50; i++)); do # up to 5s for a clean shutdown
    alive=0
    for pid in "${pids[@]}"; do servers_alive "$pid" && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do servers_root kill -KILL "$pid" 2>/dev/null || true; done
  servers_root rm -rf "$REDLOCK_VALKEY_CHROOT/tmp/${d##*/}"
  rm -rf "$d"
  [[ $d == "$REDLOCK_SERVERS_DIR" ]] && REDLOCK_SERVERS_DIR=
  return 0
}

# Standalone use.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  envfile=${2:-/tmp/redlock-servers.env}
  case ${1:-} in
  start)
    servers_start
    trap - EXIT INT TERM HUP # leave them running for "stop"
    for v in REDLOCK_TEST_NODES REDLOCK_TEST_CLUSTER REDLOCK_TEST_VALKEY_NODES REDLOCK_TEST_VALKEY_CLUSTER \
      REDLOCK_TEST_REDIS8_NODES REDLOCK_TEST_REDIS8_CLUSTER REDLOCK_SERVERS_DIR REDLOCK_VALKEY_CHROOT; do
      printf 'export %s="%s"\n' "$v" "${!v}"
    done >"$envfile"
    echo "servers: wrote $envfile; stop with: $0 stop $envfile"
    ;;
  stop)
    [[ -f $envfile ]] || servers_die "no $envfile; nothing to stop"
    # shellcheck disable=SC1090
    source "$envfile"
    servers_stop "$REDLOCK_SERVERS_DIR"
    rm -f "$envfile"
    ;;
  *) echo "usage: $0 start|stop [ENVFILE]" >&2; exit 2 ;;
  esac
fi

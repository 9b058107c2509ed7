#!/usr/bin/env bash
# A local 3-server Writ cluster on loopback, with two node agents, for
# development (make cluster, make cluster-down). State, logs and credentials
# live in $WRIT_CLUSTER_DIR (default .cluster). The servers are the real
# `writ server` over TLS with a cluster CA made here, taking node sessions on
# their API ports over UDP; the agents are the real `writ agent`, enrolled
# with join tokens, each with its own data directory and an allowlist of the
# dev tools. The product itself never runs a shell.
#
#   deploy/cluster.sh up     start (creating everything on first use)
#   deploy/cluster.sh down   stop the agents and the servers; state stays
#   deploy/cluster.sh clean  stop and remove the directory
set -euo pipefail

WRIT=${WRIT:-bin/writ}
DIR=${WRIT_CLUSTER_DIR:-.cluster}
BASE=${WRIT_CLUSTER_PORT:-7170}   # s1: BASE (API, and node sessions over UDP), BASE+1 (Raft), BASE+2 (gossip); s2: BASE+10…
SERVERS=(s1 s2 s3)
AGENTS=(a1 a2)

port() { echo $((BASE + 10 * $1 + $2)); }   # port INDEX OFFSET

running() { [ -f "$DIR/$1.pid" ] && kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null; }

setup() {
  mkdir -p "$DIR" && chmod 700 "$DIR"
  DIR=$(cd "$DIR" && pwd)
  "$WRIT" ca create --dir "$DIR/pki" >/dev/null
  "$WRIT" keygen hmac --id keyring --dir "$DIR" >/dev/null   # the shared cluster keyring
  local addrs=()
  for i in "${!SERVERS[@]}"; do
    "$WRIT" ca issue --ca-dir "$DIR/pki" --id "${SERVERS[$i]}" --host 127.0.0.1 --host localhost --out-dir "$DIR/pki" >/dev/null
    addrs+=("https://127.0.0.1:$(port "$i" 0)")
  done
  local out origin hash
  out=$("$WRIT" dev credentials --out "$DIR/dev.json" --ca "$DIR/pki/ca.pem" --addr "$(IFS=,; echo "${addrs[*]}")")
  origin=$(sed -n 's/.*"ledger_origin":"\([^"]*\)".*/\1/p' <<<"$out")
  hash=$(sed -n 's/.*"admin_token_hash":"\([^"]*\)".*/\1/p' <<<"$out")
  configs "$origin" "$hash"
}

# configs writes the servers' configuration files.
configs() {
  local origin=$1 hash=$2 joins=()
  for i in "${!SERVERS[@]}"; do joins+=("\"127.0.0.1:$(port "$i" 2)\""); done
  for i in "${!SERVERS[@]}"; do
    local s=${SERVERS[$i]}
    cat >"$DIR/$s.json" <<JSON
{
  "id": "$s",
  "data_dir": "$DIR/$s",
  "http_addr": "127.0.0.1:$(port "$i" 0)",
  "raft_addr": "127.0.0.1:$(port "$i" 1)",
  "gossip_addr": "127.0.0.1:$(port "$i" 2)",
  "join": [$(IFS=,; echo "${joins[*]}")],
  "bootstrap_expect": ${#SERVERS[@]},
  "agent_addr": "127.0.0.1:$(port "$i" 0)",
  "agent_heartbeat": "2s",
  "tls": {"ca_file": "$DIR/pki/ca.pem", "cert_file": "$DIR/pki/$s.pem", "key_file": "$DIR/pki/$s.key", "ca_key_file": "$DIR/pki/ca.key"},
  "keyring_file": "$DIR/keyring.key",
  "ledger": {"origin": "$origin", "seed_file": "$DIR/ledger.key"},
  "admin_token_hashes": ["$hash"]
}
JSON
  done
}

up() {
  [ -x "$WRIT" ] || { echo "cluster: $WRIT is missing; run make build" >&2; exit 1; }
  [ -f "$DIR/dev.json" ] || setup
  DIR=$(cd "$DIR" && pwd)
  if ! grep -q '"agent_addr"' "$DIR/s1.json"; then
    # A cluster made before it had agents: the servers now take node sessions.
    configs "$(sed -n 's/.*"origin": "\([^"]*\)".*/\1/p' "$DIR/s1.json")" \
            "$(sed -n 's/.*"admin_token_hashes": \["\([^"]*\)"\].*/\1/p' "$DIR/s1.json")"
  fi
  for s in "${SERVERS[@]}"; do
    if running "$s"; then echo "cluster: $s is already running"; continue; fi
    nohup "$WRIT" server --config "$DIR/$s.json" >"$DIR/$s.log" 2>&1 &
    echo $! >"$DIR/$s.pid"
  done
  if [ ! -f "$DIR/registered" ] || [ ! -d "$DIR/agent-tools" ]; then
    # The client fails over between servers and retries while the cluster
    # forms. The agents' allowlist gets the dev tools' manifests exactly as
    # registered.
    for try in 1 2 3 4; do
      if "$WRIT" dev register --credentials "$DIR/dev.json" --allowlist "$DIR/agent-tools" >/dev/null; then touch "$DIR/registered"; break; fi
      [ "$try" = 4 ] && { echo "cluster: registration failed; see $DIR/s*.log" >&2; exit 1; }
    done
  fi
  local servers=() api=()
  for i in "${!SERVERS[@]}"; do servers+=("127.0.0.1:$(port "$i" 0)"); api+=("https://127.0.0.1:$(port "$i" 0)"); done
  # The admin token, in a file the admin commands read (--token-file):
  # never on a command line, where other users of the host could read it.
  # printf is a shell builtin, so the token is on no process's argv here.
  local admin="$DIR/admin.token"
  (umask 077; printf '%s\n' "$(sed -n 's/.*"admin_token": *"\([^"]*\)".*/\1/p' "$DIR/dev.json")" >"$admin")
  for a in "${AGENTS[@]}"; do
    if running "$a"; then echo "cluster: agent $a is already running"; continue; fi
    local enroll=()
    if [ ! -f "$DIR/$a/node.json" ]; then
      # A one-time join token (it pins the cluster CA), in a file: never on
      # a command line, where other users could read it.
      (umask 077; "$WRIT" token create --token-file "$admin" --role node --labels "agent=$a" --ttl 10m \
        --server "$(IFS=,; echo "${api[*]}")" --ca "$DIR/pki/ca.pem" -o text >"$DIR/$a.token")
      enroll=(--token-file "$DIR/$a.token")
    fi
    nohup "$WRIT" agent --server "$(IFS=,; echo "${servers[*]}")" --data-dir "$DIR/$a" --tools-dir "$DIR/agent-tools" \
      --name "$a" "${enroll[@]}" >"$DIR/$a.log" 2>&1 &
    echo $! >"$DIR/$a.pid"
  done
  # Wait until both nodes are ready: the first intent then has somewhere to run.
  local ready=0
  for _ in $(seq 100); do
    ready=$("$WRIT" nodes list --token-file "$admin" --server "$(IFS=,; echo "${api[*]}")" --ca "$DIR/pki/ca.pem" 2>/dev/null |
      grep -o '"status": *"ready"' | wc -l) || true
    [ "$ready" -ge "${#AGENTS[@]}" ] && break
    for a in "${AGENTS[@]}"; do
      running "$a" || { echo "cluster: agent $a stopped; see $DIR/$a.log" >&2; exit 1; }
    done
    sleep 0.2
  done
  rm -f "$DIR"/a*.token
  [ "$ready" -ge "${#AGENTS[@]}" ] || echo "cluster: only $ready of ${#AGENTS[@]} agents are ready; see $DIR/a*.log" >&2
  local all; all=$(IFS=,; echo "${api[*]}")
  cat <<TXT
Writ cluster: 3 servers on https://127.0.0.1:$(port 0 0), :$(port 1 0), :$(port 2 0) (tenant "dev"),
and node agents ${AGENTS[*]} (data in $DIR/a1, $DIR/a2; allowlist $DIR/agent-tools)
Credentials: $DIR/dev.json (with "addrs" and "ca_file"); logs: $DIR/s*.log, $DIR/a*.log

An intent that runs on one of the agents (the echo tool, in the wasm sandbox):

  export WRIT_CA=$DIR/pki/ca.pem
  writ intent sign --key dev-orchestrator=$DIR/orchestrator.key --tenant dev --principal bot --run r1 \\
      --tool echo --params '{"msg":"hello"}' > intent.json
  writ intent submit --server $all --wait 5s < intent.json

It ends "completed" with the node's signed result (the output's hashes); the output itself
comes with a read signed by the tenant's key, on any server:

  writ intent get INTENT_ID --server $all --tenant dev --key dev-orchestrator=$DIR/orchestrator.key

"dispatch" names the node. To run it
on one agent, add --target-node a1 to intent sign. The nodes, and which server holds each
one's session:

  writ nodes list --server $all --token-file $DIR/admin.token

make cluster-down stops it; state stays in $DIR.
TXT
}

# stop NAME...: SIGTERM, then wait for each to exit.
stop() {
  for n in "$@"; do
    if running "$n"; then kill "$(cat "$DIR/$n.pid")"; fi
  done
  for n in "$@"; do
    if [ -f "$DIR/$n.pid" ]; then
      local pid; pid=$(cat "$DIR/$n.pid")
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      rm -f "$DIR/$n.pid"
    fi
  done
}

down() {
  stop "${AGENTS[@]}"   # first: an agent stopping reports its runs to a server
  stop "${SERVERS[@]}"
  echo "cluster: stopped"
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  clean) down; rm -rf "$DIR" ;;
  *) echo "usage: $0 up|down|clean" >&2; exit 2 ;;
esac

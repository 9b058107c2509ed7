#!/usr/bin/env bash
# A local 3-server Writ cluster on loopback, for development (make cluster,
# make cluster-down). State, logs and credentials live in $WRIT_CLUSTER_DIR
# (default .cluster). The servers are the real `writ server` over TLS with a
# cluster CA made here; the product itself never runs a shell.
#
#   deploy/cluster.sh up     start (creating everything on first use)
#   deploy/cluster.sh down   stop the servers; state stays
#   deploy/cluster.sh clean  stop and remove the directory
set -euo pipefail

WRIT=${WRIT:-bin/writ}
DIR=${WRIT_CLUSTER_DIR:-.cluster}
BASE=${WRIT_CLUSTER_PORT:-7170}   # s1: BASE (API), BASE+1 (Raft), BASE+2 (gossip); s2: BASE+10…
SERVERS=(s1 s2 s3)

port() { echo $((BASE + 10 * $1 + $2)); }   # port INDEX OFFSET

running() { [ -f "$DIR/$1.pid" ] && kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null; }

setup() {
  mkdir -p "$DIR" && chmod 700 "$DIR"
  DIR=$(cd "$DIR" && pwd)
  "$WRIT" ca create --dir "$DIR/pki" >/dev/null
  "$WRIT" keygen hmac --id keyring --dir "$DIR" >/dev/null   # the shared cluster keyring
  local addrs=() joins=()
  for i in "${!SERVERS[@]}"; do
    "$WRIT" ca issue --ca-dir "$DIR/pki" --id "${SERVERS[$i]}" --host 127.0.0.1 --host localhost --out-dir "$DIR/pki" >/dev/null
    addrs+=("https://127.0.0.1:$(port "$i" 0)")
    joins+=("\"127.0.0.1:$(port "$i" 2)\"")
  done
  local out origin hash
  out=$("$WRIT" dev credentials --out "$DIR/dev.json" --ca "$DIR/pki/ca.pem" --addr "$(IFS=,; echo "${addrs[*]}")")
  origin=$(sed -n 's/.*"ledger_origin":"\([^"]*\)".*/\1/p' <<<"$out")
  hash=$(sed -n 's/.*"admin_token_hash":"\([^"]*\)".*/\1/p' <<<"$out")
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
  "tls": {"ca_file": "$DIR/pki/ca.pem", "cert_file": "$DIR/pki/$s.pem", "key_file": "$DIR/pki/$s.key"},
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
  for s in "${SERVERS[@]}"; do
    if running "$s"; then echo "cluster: $s is already running"; continue; fi
    nohup "$WRIT" server --config "$DIR/$s.json" >"$DIR/$s.log" 2>&1 &
    echo $! >"$DIR/$s.pid"
  done
  if [ ! -f "$DIR/registered" ]; then
    # The client fails over between servers and retries while the cluster forms.
    for try in 1 2 3 4; do
      if "$WRIT" dev register --credentials "$DIR/dev.json" >/dev/null; then touch "$DIR/registered"; break; fi
      [ "$try" = 4 ] && { echo "cluster: registration failed; see $DIR/s*.log" >&2; exit 1; }
    done
  fi
  cat <<TXT
Writ cluster: 3 servers on https://127.0.0.1:$(port 0 0), :$(port 1 0), :$(port 2 0) (tenant "dev")
Credentials: $DIR/dev.json (with "addrs" and "ca_file"); logs: $DIR/s*.log

  export WRIT_CA=$DIR/pki/ca.pem
  writ intent sign --key dev-orchestrator=$DIR/orchestrator.key --tenant dev --principal bot --run r1 \\
      --tool echo --params '{"msg":"hello"}' > intent.json
  writ intent submit --server https://127.0.0.1:$(port 0 0),https://127.0.0.1:$(port 1 0),https://127.0.0.1:$(port 2 0) --wait 5s < intent.json

make cluster-down stops it; state stays in $DIR.
TXT
}

down() {
  for s in "${SERVERS[@]}"; do
    if running "$s"; then kill "$(cat "$DIR/$s.pid")"; fi
  done
  for s in "${SERVERS[@]}"; do
    if [ -f "$DIR/$s.pid" ]; then
      local pid; pid=$(cat "$DIR/$s.pid")
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      rm -f "$DIR/$s.pid"
    fi
  done
  echo "cluster: stopped"
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  clean) down; rm -rf "$DIR" ;;
  *) echo "usage: $0 up|down|clean" >&2; exit 2 ;;
esac

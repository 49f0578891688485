#!/usr/bin/env bash
# A throwaway PostgreSQL 15 server for the tests: `source scripts/pg_server.sh` starts one in a
# temp dir (initdb + pg_ctl, as the `postgres` user when run as root), listening on a Unix socket
# only, exports TEST_POSTGRES_URL and stops it (and removes the dir) when the shell exits.
# Without initdb/pg_ctl on PATH it says so and exports nothing: the PostgreSQL tests then skip.
pg_server_start() {
  if ! command -v initdb >/dev/null || ! command -v pg_ctl >/dev/null; then
    echo "pg_server.sh: initdb/pg_ctl not on PATH: the PostgreSQL tests will skip" >&2
    return 0
  fi
  local dir run=()
  dir=$(mktemp -d /tmp/hybrid-rag-pg.XXXXXX)
  if [ "$(id -u)" = 0 ]; then
    chown postgres: "$dir"
    run=(runuser -u postgres --)
  fi
  chmod 700 "$dir"
  "${run[@]}" initdb -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; return 1; }
  "${run[@]}" pg_ctl -D "$dir/data" -l "$dir/server.log" -w \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c fsync=off" start >/dev/null \
    || { cat "$dir/server.log" >&2; return 1; }
  PG_SERVER_DIR=$dir
  PG_SERVER_RUN=("${run[@]}")
  trap pg_server_stop EXIT
  export TEST_POSTGRES_URL="postgresql+psycopg://postgres@/postgres?host=$dir"
  echo "PostgreSQL for the tests: $TEST_POSTGRES_URL" >&2
}

pg_server_stop() {
  [ -n "${PG_SERVER_DIR:-}" ] || return 0
  "${PG_SERVER_RUN[@]}" pg_ctl -D "$PG_SERVER_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
  # removed in the background: its ~40 MB took 3.5 s on a loaded disk, after the tests and a Ctrl-C
  rm -rf "$PG_SERVER_DIR" >/dev/null 2>&1 </dev/null &
  PG_SERVER_DIR=
}

pg_server_start

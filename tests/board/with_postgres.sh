#!/usr/bin/env bash
# Runs COMMAND with WIT_TEST_POSTGRES_URL naming a PostgreSQL server of its own: a fresh cluster
# (initdb) in a temporary directory, listening on 127.0.0.1 at a free port and on a socket in
# that directory, stopped and removed afterwards. As root the server runs as user postgres.
# Skipped (exit 77) where PostgreSQL's server is not installed.
# Usage: with_postgres.sh COMMAND...
set -uo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "SKIP: PostgreSQL's server is not installed (launch/install-deps)"; exit 77; }
dir=$(mktemp -d /tmp/wit-pg-XXXXXX)
as=()
if [ "$(id -u)" -eq 0 ]; then
  chown postgres "$dir"
  as=(runuser -u postgres --)
fi
cleanup() {
  "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1
  rm -rf "$dir"
}
trap cleanup EXIT
"${as[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 ||
  { cat "$dir/initdb.log"; echo "FAIL: initdb"; exit 1; }
# A port another program holds is tried again elsewhere, a few times.
started=0
for attempt in 1 2 3 4 5; do
  port=$(( 20000 + (RANDOM * 7 + $$) % 20000 ))
  if "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
       -o "-h 127.0.0.1 -p $port -k $dir" start >/dev/null; then
    started=1
    break
  fi
  grep -q "Address already in use" "$dir/server.log" || break
done
[ $started = 1 ] || { cat "$dir/server.log"; echo "FAIL: the PostgreSQL server did not start"; exit 1; }
"${as[@]}" "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres wit ||
  { echo "FAIL: createdb"; exit 1; }
export WIT_TEST_POSTGRES_URL="postgresql://postgres@127.0.0.1:$port/wit"
echo "with_postgres: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
"$@"

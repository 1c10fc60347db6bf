#!/usr/bin/env bash
# Start a throwaway PostgreSQL server for the test suite (catalog back-end "postgres").
#
# The cluster lives in its own temp directory, listens on 127.0.0.1 only, on a free port, with
# trust authentication, so nothing on the machine is touched and nothing needs a password.
# Diagnostics go to stderr; stdout is only shell code, so a developer can run:
#
#     eval "$(.ci/start_postgres.sh)"      # exports DUCKLAKE_TEST_PG and DUCKLAKE_TEST_PG_DIR
#     make test
#     .ci/stop_postgres.sh "$DUCKLAKE_TEST_PG_DIR"
#
# PG_MAX_CONNECTIONS (default 100, PostgreSQL's own) caps the server's connections: the
# leak tests start a small server of their own with it, so that a leak fails loudly.
# As root the server runs as the `postgres` user (initdb refuses root); otherwise as yourself.
# Needs the PostgreSQL server binaries (Debian: `apt-get install postgresql`); .ci/run installs them.
set -euo pipefail

pg_bindir() {
    # Debian keeps initdb/pg_ctl under /usr/lib/postgresql/<ver>/bin, not on PATH.
    if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
        dirname "$(command -v initdb)"
        return
    fi
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    if [[ -z "$d" || ! -x "$d/initdb" ]]; then
        echo "start_postgres.sh: PostgreSQL server binaries not found" \
             "(Debian: apt-get install postgresql)" >&2
        return 1
    fi
    echo "$d"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

bin=$(pg_bindir)
dir=${1:-$(mktemp -d "${TMPDIR:-/tmp}/ducklake-pg.XXXXXX")}
port=$(free_port)

as_owner=()
if [[ $EUID -eq 0 ]]; then
    chown postgres: "$dir"
    as_owner=(runuser -u postgres --)
fi

"${as_owner[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
# The socket goes into our own directory: /var/run/postgresql may not exist or be writable.
"${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=${PG_MAX_CONNECTIONS:-100}" start >&2 \
    || { cat "$dir/server.log" >&2; exit 1; }

echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" \
     "(data in $dir)" >&2
printf 'export DUCKLAKE_TEST_PG=%q\n' "host=127.0.0.1 port=$port user=postgres dbname=postgres"
printf 'export DUCKLAKE_TEST_PG_DIR=%q\n' "$dir"

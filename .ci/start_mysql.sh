#!/usr/bin/env bash
# Start a throwaway MariaDB server for the test suite (catalog back-end "mysql").
#
# The server lives in its own temp directory, listens on 127.0.0.1 only, on a free port, and
# root@127.0.0.1 has no password, so nothing on the machine is touched. The character set
# is utf8mb4 (without it DuckDB's catalog tables are latin1). Diagnostics go to stderr;
# stdout is only shell code, so a developer can run:
#
#     eval "$(.ci/start_mysql.sh)"      # exports DUCKLAKE_TEST_MYSQL and DUCKLAKE_TEST_MYSQL_DIR
#     make test
#     .ci/stop_mysql.sh "$DUCKLAKE_TEST_MYSQL_DIR"
#
# DUCKLAKE_TEST_MYSQL is DuckDB's MySQL connection spelling without a database
# ("host=127.0.0.1 port=... user=root"): each test lake makes a database of its own.
# Needs the MariaDB server (Debian: `apt-get install mariadb-server`); .ci/run installs it.
set -euo pipefail

for tool in mariadb-install-db mariadbd mariadb-admin; do
    if ! command -v "$tool" >/dev/null && [[ ! -x "/usr/sbin/$tool" ]]; then
        echo "start_mysql.sh: $tool not found (Debian: apt-get install mariadb-server)" >&2
        exit 1
    fi
done
export PATH="$PATH:/usr/sbin"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The data directory goes to memory (/dev/shm) when there is one: every DDL statement of the
# tests' catalog copies syncs files, which costs seconds per test on a shared disk.
base=${TMPDIR:-/tmp}
[[ -d /dev/shm && -w /dev/shm ]] && base=/dev/shm
dir=${1:-$(mktemp -d "$base/ducklake-mysql.XXXXXX")}
port=$(free_port)
user=$(id -un)

mariadb-install-db --no-defaults --user="$user" --datadir="$dir/data" \
    --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 \
    || { cat "$dir/install.log" >&2; exit 1; }
# No syncing and no doublewrite: a test server need not survive a crash (and tmpfs takes
# no O_DIRECT, MariaDB's default flush method).
mariadbd --no-defaults --user="$user" --datadir="$dir/data" --socket="$dir/mysql.sock" \
    --pid-file="$dir/mysql.pid" --port="$port" --bind-address=127.0.0.1 \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
    --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 --innodb-flush-method=nosync \
    --skip-log-bin \
    --log-error="$dir/server.log" >/dev/null 2>&1 &
for _ in $(seq 1 600); do
    if mariadb-admin --no-defaults --socket="$dir/mysql.sock" -u root ping >/dev/null 2>&1; then
        break
    fi
    if ! kill -0 $! 2>/dev/null; then
        cat "$dir/server.log" >&2
        exit 1
    fi
    sleep 0.1
done
mariadb-admin --no-defaults --socket="$dir/mysql.sock" -u root ping >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }

echo "MariaDB $(mariadbd --version | awk '{print $3}') on 127.0.0.1:$port (data in $dir)" >&2
printf 'export DUCKLAKE_TEST_MYSQL=%q\n' "host=127.0.0.1 port=$port user=root"
printf 'export DUCKLAKE_TEST_MYSQL_DIR=%q\n' "$dir"

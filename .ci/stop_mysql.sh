#!/usr/bin/env bash
# Stop and delete a server started by .ci/start_mysql.sh:  .ci/stop_mysql.sh <dir>
set -euo pipefail
dir=${1:?usage: stop_mysql.sh <dir printed by start_mysql.sh>}
if [[ -f "$dir/mysql.pid" ]]; then
    pid=$(cat "$dir/mysql.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
fi
rm -rf "$dir"

#!/usr/bin/env bash
# Stop and delete a server started by .ci/start_postgres.sh:  .ci/stop_postgres.sh <dir>
set -euo pipefail
dir=${1:?usage: stop_postgres.sh <dir printed by start_postgres.sh>}
if [[ -f "$dir/data/postmaster.pid" ]]; then
    bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    pg_ctl=$(command -v pg_ctl || echo "$bin/pg_ctl")
    as_owner=()
    [[ $EUID -eq 0 ]] && as_owner=(runuser -u postgres --)
    "${as_owner[@]}" "$pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
fi
rm -rf "$dir"

#!/usr/bin/env bash
# Runs a command (make rust-test: `cargo test`) in the environment the last zig build gave
# cargo (.ci/zig-cargo/cargo wrote it down), so it compiles nothing the editable install or
# the wheel compiled already: the same C compiler, linker and target for every crate.
#   .ci/zig_env.sh cargo test --release --lib --target x86_64-unknown-linux-gnu
set -euo pipefail
recorded="${CARGO_TARGET_DIR:?CARGO_TARGET_DIR is not set}/zig-build.env"
if [[ ! -s "$recorded" ]]; then
    echo "zig_env: $recorded is missing: run make venv first (its build writes it)" >&2
    exit 1
fi
vars=()
while IFS= read -r line; do
    vars+=("$line")
done <"$recorded"
exec env "${vars[@]}" "$@"

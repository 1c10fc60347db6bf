#!/usr/bin/env bash
# Cargo decides that a path crate needs compiling again by its files' modification times,
# and a fresh clone's files are all new: every CI run compiled the extension's crate again
# (twice: the library and its unit tests, ~1 minute on 2 cores) though the cargo target
# directory outside the clone held the build of the very same sources.
#
#   .ci/cargo_fresh.sh record    # after the builds: what the target directory now holds
#   .ci/cargo_fresh.sh restore   # before them: the same sources? then give them old times
#
# `record` writes down the rust/ sources' content (git's blob ids) and the crate's cargo
# fingerprints (their files and times) in the target directory. `restore` gives rust/'s
# files a time before any build only when both still match: the sources are the ones
# built, and nothing built the crate since (a build of other sources changes its
# fingerprints). A working tree with changes under rust/ is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:?CARGO_TARGET_DIR is not set}"
stamp="$target/ducklake-sources.stamp"

state() {
    git ls-files -s rust | sha256sum | cut -d' ' -f1
    find "$target" -path '*/.fingerprint/ducklake-datafusion-rust-*' -type f -printf '%P %T@\n' \
        2>/dev/null | sort | sha256sum | cut -d' ' -f1
}

clean() {
    git diff --quiet HEAD -- rust && [[ -z "$(git ls-files --others --exclude-standard rust)" ]]
}

case "${1:-}" in
record)
    if clean; then state >"$stamp"; else rm -f "$stamp"; fi
    ;;
restore)
    if [[ -f "$stamp" ]] && clean && [[ "$(state)" == "$(cat "$stamp")" ]]; then
        git ls-files -z rust | xargs -0 touch -d '2000-01-01 00:00:00'
        echo "cargo_fresh: rust/ is what $target holds the build of; its times set back" >&2
    fi
    ;;
*)
    echo "usage: $0 record|restore" >&2
    exit 2
    ;;
esac

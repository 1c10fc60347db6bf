#!/usr/bin/env bash
# Install the object-store servers the tests start on 127.0.0.1 (tests/support/emulators.py)
# into a cache outside the clone, once per version:
#   fake-gcs-server (GCS) and MinIO (S3), built with `go install` from the Go module proxy;
#   Azurite (Azure Blob Storage), the npm package.
# Cache: $DUCKLAKE_TEST_TOOLS, default ~/.cache/ducklake-datafusion/tools.
#
# Usage: .ci/install_emulators.sh [--if-possible]
#   --if-possible (make test): a tool that cannot be installed here (no go, no npm, a failed
#   build) is reported and left out, and its tests skip. Without it (.ci/run) that fails.
# DUCKLAKE_TEST_MINIO=0 leaves MinIO out (its first build takes ~10 minutes on 2 cores).
set -euo pipefail

FAKE_GCS_VERSION=v1.56.1
# MinIO tags no semver releases, so the module proxy knows it only by pseudo-versions;
# this is the newest (2026-02-12).
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
# The newest Azurite that runs on Node 18 (Debian 12); 3.36 and later need Node 21+.
AZURITE_VERSION=3.35.0
# fake-gcs-server 1.56 needs Go 1.26. Go >= 1.21 fetches this toolchain itself (GOTOOLCHAIN);
# an older go (Debian 12 has 1.19) downloads it as the module golang.org/toolchain.
GO_TOOLCHAIN=go1.26.8

TOOLS=${DUCKLAKE_TEST_TOOLS:-$HOME/.cache/ducklake-datafusion/tools}
strict=1
[[ ${1:-} == --if-possible ]] && strict=0
failed=()

say() { echo "install_emulators: $*" >&2; }

give_up() {  # tool, reason
    say "$1 not installed: $2"
    failed+=("$1")
}

go_minor() {  # "go version go1.19.8 linux/amd64" -> 19
    "$1" version 2>/dev/null | sed -n 's/^go version go1\.\([0-9]*\).*/\1/p'
}

# Prints the go command to build with (and exports GOTOOLCHAIN), or nothing.
find_go() {
    local own="$TOOLS/go/bin/go" candidate minor
    if [[ -x $own ]] && GOTOOLCHAIN=local "$own" version | grep -q "$GO_TOOLCHAIN "; then
        export GOTOOLCHAIN=local
        echo "$own"
        return
    fi
    for candidate in "$(command -v go || true)" /usr/local/go/bin/go /usr/lib/go/bin/go; do
        [[ -n $candidate && -x $candidate ]] || continue
        minor=$(go_minor "$candidate")
        [[ -n $minor ]] || continue
        if ((minor >= 21)); then
            export GOTOOLCHAIN=$GO_TOOLCHAIN
            echo "$candidate"
            return
        fi
        if ((minor >= 17)) && bootstrap_go "$candidate"; then
            export GOTOOLCHAIN=local
            echo "$own"
            return
        fi
    done
}

# An old go downloads the toolchain module; its zip keeps no file modes, hence the chmod.
bootstrap_go() {
    local old=$1 arch work dir
    arch=$("$old" env GOARCH)
    work=$(mktemp -d)
    say "fetching the $GO_TOOLCHAIN toolchain with $("$old" version)"
    dir=$(cd "$work" && GOMODCACHE="$work/mod" GOFLAGS=-mod=mod "$old" mod download -json \
        "golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN.linux-$arch" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || true
    if [[ -z $dir || ! -x $dir/bin || ! -f $dir/bin/go ]]; then
        chmod -R u+w "$work" 2>/dev/null || true
        rm -rf "$work"
        return 1
    fi
    rm -rf "$TOOLS/go"
    mkdir -p "$TOOLS"
    cp -R "$dir" "$TOOLS/go"
    chmod -R u+w "$TOOLS/go"
    chmod +x "$TOOLS/go/bin/"* "$TOOLS/go/pkg/tool/"*/*
    chmod -R u+w "$work"
    rm -rf "$work"
}

go_tool() {  # name module version
    local name=$1 module=$2 version=$3 stamp="$TOOLS/bin/.$1-$3" go start
    [[ -x $TOOLS/bin/$name && -f $stamp ]] && return
    go=$(find_go)
    if [[ -z $go ]]; then
        give_up "$name" "needs Go (>= 1.17; apt-get install golang-go)"
        return
    fi
    say "building $name $version (go install; minutes on a small machine)"
    start=$SECONDS
    if GOBIN="$TOOLS/bin" GOFLAGS= CGO_ENABLED=0 "$go" install "$module@$version"; then
        touch "$stamp"
        say "$name built in $((SECONDS - start)) s"
    else
        give_up "$name" "go install $module@$version failed"
    fi
}

azurite() {
    local dir="$TOOLS/azurite" stamp="$TOOLS/azurite/.azurite-$AZURITE_VERSION" start
    [[ -x $dir/node_modules/.bin/azurite-blob && -f $stamp ]] && return
    if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
        give_up azurite "needs Node.js and npm (apt-get install nodejs npm)"
        return
    fi
    say "installing azurite $AZURITE_VERSION (npm)"
    start=$SECONDS
    mkdir -p "$dir"
    if npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
        "azurite@$AZURITE_VERSION" >&2; then
        touch "$stamp"
        say "azurite installed in $((SECONDS - start)) s"
    else
        give_up azurite "npm install azurite@$AZURITE_VERSION failed"
    fi
}

mkdir -p "$TOOLS/bin"
azurite
go_tool fake-gcs-server github.com/fsouza/fake-gcs-server "$FAKE_GCS_VERSION"
if [[ ${DUCKLAKE_TEST_MINIO:-1} != 0 ]]; then
    go_tool minio github.com/minio/minio "$MINIO_VERSION"
fi

if ((${#failed[@]})); then
    if ((strict)); then
        say "failed: ${failed[*]}"
        exit 1
    fi
    say "their tests will skip: ${failed[*]}"
fi
exit 0

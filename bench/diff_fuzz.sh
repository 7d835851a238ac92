#!/usr/bin/env bash
# The differential fuzzer of fusion (fuzz/README.md) over GRAPHS random graphs (default
# 100,000) from SEED (default 1), in the Release build, a progress line every 1,000 graphs.
# Exits 1 at the first mismatch, printing the smallest graph that shows it.
#
#   bench/diff_fuzz.sh [GRAPHS] [SEED] [FLAGS...]   e.g. bench/diff_fuzz.sh 100000 1 --max-seconds 3600
set -euo pipefail
cd "$(dirname "$0")/.."
GRAPHS=${1:-100000}
SEED=${2:-1}
cmake --build "${BUILD_DIR:-build}" -j2 --target nnfuse_diff_fuzz >/dev/null
export NNFUSE_CACHE_DIR=${NNFUSE_CACHE_DIR:-$PWD/${BUILD_DIR:-build}/jit-cache}
exec "${BUILD_DIR:-build}/fuzz/nnfuse_diff_fuzz" --graphs "$GRAPHS" --seed "$SEED" "${@:3}"

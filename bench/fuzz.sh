#!/usr/bin/env bash
# Runs every libFuzzer target (fuzz/) for RUNS executions each (default 10,000,000), two at a
# time, from the seed corpora (fuzz/seed_corpus.py), in the Clang sanitizer build
# (build-fuzz/, configured here when missing). A target that crashes, leaks, hangs (over 10 s on
# one input) or trips a sanitizer stops with its reproducer in OUT/<target>/; the summary gives
# each target's executions and result.
#
#   bench/fuzz.sh [RUNS] [OUT]        e.g. bench/fuzz.sh 10000000 /tmp/nnfuse-fuzz
#   TARGETS="fuzz_tensor fuzz_switches" bench/fuzz.sh 100000
#   MAX_TIME=15 bench/fuzz.sh          each target for 15 s instead (the test run's sample)
#   FUZZ_FLAGS=-entropic=0 TARGETS=fuzz_graph bench/fuzz.sh
#                                      more libFuzzer flags (entropic scheduling costs fuzz_graph,
#                                      with its tens of thousands of features, most of its time)
#   JOBS=2 TARGETS=fuzz_graph bench/fuzz.sh
#                                      RUNS split over 2 processes that share one corpus
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-10000000}
OUT=${2:-/tmp/nnfuse-fuzz}
TARGETS=${TARGETS:-fuzz_model fuzz_graph fuzz_switches fuzz_tensor}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ BUILD_DIR=$BUILD ./scripts/build.sh -DNNFUSE_SANITIZE=ON -DNNFUSE_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DNNFUSE_BUILD_PYTHON=OFF -DNNFUSE_BUILD_TESTS=OFF
fi
# shellcheck disable=SC2086
cmake --build "$BUILD" -j2 --target $TARGETS
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BIN=$(cd "$BUILD/fuzz" && pwd)
/usr/bin/python3 fuzz/seed_corpus.py "$OUT/corpus" >/dev/null
# A leak is memory an input allocated and never freed; a malloc over -rss_limit_mb is a crash.
# No allocation stacks are kept for the reports (malloc_context_size=0): recording one per
# allocation costs a third of fuzz_model's time. A report still shows where it happened; rerun its
# reproducer with ASAN_OPTIONS=malloc_context_size=30 for where the memory came from.
# Nor does it hand freed memory back to the system as it goes (allocator_release_to_os_interval_ms):
# both timeouts of the long runs so far stopped inside that madvise, on inputs that take 0.3 s.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:malloc_context_size=0:allocator_release_to_os_interval_ms=-1}
run() {
  local t=$1
  mkdir -p "$OUT/$t"
  local start=$SECONDS rc=0
  local limit=(-runs="$RUNS") split=""
  # A timed sample (the test run's) starts from a fixed seed, so what it tries is the same each
  # time; a counted run draws its own.
  if [ -n "${MAX_TIME:-}" ]; then
    limit=(-max_total_time="$MAX_TIME" -seed=1)
  elif [ "${JOBS:-1}" -gt 1 ]; then
    # Each job runs its share and writes its log to OUT/<target>/fuzz-<job>.log; the jobs pick up
    # each other's new inputs from the shared corpus.
    limit=(-runs="$((RUNS / JOBS))" -jobs="$JOBS" -workers="$JOBS")
    split=1
  fi
  # shellcheck disable=SC2086
  (cd "$OUT/$t" && "$BIN/$t" "${limit[@]}" ${FUZZ_FLAGS:-} -timeout=10 -rss_limit_mb=4096 \
    -max_len=65536 -print_final_stats=1 "$OUT/corpus/$t" >"$OUT/$t.log" 2>&1) || rc=$?
  local execs
  if [ -n "$split" ]; then
    execs=$(cat "$OUT/$t"/fuzz-*.log | grep -a 'stat::number_of_executed_units' |
      awk '{n += $2} END {print n}')
  else
    execs=$(grep -a 'stat::number_of_executed_units' "$OUT/$t.log" | awk '{print $2}' | tail -1)
  fi
  echo "$t: ${execs:-?} executions in $((SECONDS - start)) s, exit $rc" >>"$OUT/summary.txt"
  if [ "$rc" != 0 ]; then
    echo "== $t failed; the end of $OUT/$t.log:"
    cat "$OUT/$t.log" "$OUT/$t"/fuzz-*.log 2>/dev/null | grep -a -v '^#[0-9]' | tail -40
  fi
}
: >"$OUT/summary.txt"
set -- $TARGETS
while [ $# -gt 0 ]; do
  run "$1" &
  if [ $# -gt 1 ]; then run "$2" & fi
  wait
  shift $(($# > 1 ? 2 : 1))
done
cat "$OUT/summary.txt"
! grep -q 'exit [^0]' "$OUT/summary.txt"

#!/usr/bin/env bash
# Installs what nnfuse needs, checks formatting and that no source file outside the tests is over
# 600 lines, builds, and runs every test: unit tests, the ONNX node conformance suite, bad-input
# and fusion CLI tests and real models exported from PyTorch; the C++ example built against the
# installed package; then the same tests (without the real models) under AddressSanitizer and
# UndefinedBehaviorSanitizer, built with Clang together with the libFuzzer targets, which each
# run for a short time; and the concurrency tests under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
./scripts/check_format.sh
./scripts/check_commits.sh
./scripts/check_file_size.sh
# Ops are known by their identity (src/ops/), not by string comparisons of their names: none
# outside src/ops/, the importer and the exporter (219 before src/ops/ existed).
/usr/bin/python3 scripts/op_name_compares.py --max 0
./scripts/build.sh
# Generated kernels built by the tests go to a cache inside the build, not the user's.
export NNFUSE_CACHE_DIR="$PWD/${BUILD_DIR:-build}/jit-cache"
# Outputs allocated by a kernel start as NaN bytes, so one left partly unwritten fails its test.
export NNFUSE_POISON_OUTPUTS=1
ctest --test-dir "${BUILD_DIR:-build}" -j2 --output-on-failure
echo "== Python module (pytest)"
PYTHONPATH="$PWD/${BUILD_DIR:-build}/python" /usr/bin/python3 -m pytest -q python/tests
echo "== installed package: the C++ example built against it, the Python package imported"
./scripts/test_install.sh
if [ "${NNFUSE_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "== sanitizer build (ASan + UBSan, Clang, with the libFuzzer targets)"
  # -O1 -g1: line tables for the reports' stacks, and a build more than twice as fast as -O2 -g
  # (the sanitizers' usual level). The Python module is tested in the Release build only.
  CC=clang CXX=clang++ BUILD_DIR=build-asan ./scripts/build.sh -DNNFUSE_SANITIZE=ON -DNNFUSE_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DNNFUSE_BUILD_PYTHON=OFF
  # oneDNN and OpenMP keep allocations for the life of the process; leaks are not checked.
  # These run in the Release build only: the real models, the fusion baseline (which reads them;
  # what fuses does not depend on the build), the killed compiles (which time kills against a
  # Release compile's phases), the progress line (timed runs of a real model) and the report in
  # a browser (two large models profiled), and the differential fuzzer's sample (random graphs
  # whose kernels the fuzz targets below exercise).
  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan -j2 --output-on-failure -E '^(export_models|model_|fusion_baseline$|killed_compile$|progress_tty$|report_browser$|diff_fuzz(_quantized)?$)'
  echo "== libFuzzer targets, 20 s each from their seed corpora"
  FUZZ_BUILD_DIR=build-asan MAX_TIME=20 ./bench/fuzz.sh 0 "$PWD/build-asan/fuzz-run"
  echo "== thread sanitizer build: concurrent runs, plans, compiles and kernel builds"
  # The concurrency tests alone: their binaries, not the whole suite. OpenMP's runtime is not
  # built for ThreadSanitizer, so each run's kernels use one thread; the threads under test are
  # the callers'. -O0: every access instrumented as written, and a faster build (the tests run
  # in seconds either way).
  BUILD_DIR=build-tsan TARGET="api_tests runtime_tests codegen_tests" ./scripts/build.sh \
    -DNNFUSE_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1 -DNDEBUG" -DNNFUSE_BUILD_PYTHON=OFF
  OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ctest --test-dir build-tsan -j2 --output-on-failure \
    -R '^(Concurrency\.|SessionThreads\.|PlanCache\.|Api\.OneSessionFromEightThreads|JitTest\.Concurrent)'
fi

#!/usr/bin/env bash
# Installs what nnfuse needs, checks formatting, builds, and runs every test: unit tests,
# the ONNX node conformance suite, bad-input tests and real models exported from PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
./scripts/check_format.sh
./scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" -j2 --output-on-failure

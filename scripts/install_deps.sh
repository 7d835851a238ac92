#!/usr/bin/env bash
# Installs every Debian package nnfuse needs to build, test and benchmark. Idempotent: packages
# already present are left alone, and nothing is fetched when all are installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config clang-format
  clang libclang-rt-dev libomp-dev  # the sanitizer build and its libFuzzer targets (fuzz/)
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  pybind11-dev python3-dev python3-numpy python3-pytest python3-onnx python3-torch python3-torchvision
  graphviz
  chromium  # headless browser for the HTML report's check (tests/report/check_report.js)
)
# npm installs ONNX Runtime's Node package (onnxruntime-node), which the ORT-export tests and the
# benchmarks run; a Node.js that ships its own npm is kept.
if ! command -v npm >/dev/null 2>&1; then PACKAGES+=(nodejs npm); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} packages are installed"
  exit 0
fi

echo "install_deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# Fails when a C++ file differs from clang-format's output (.clang-format: Google, 100 columns).
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files --cached --others --exclude-standard '*.cc' '*.h' 2>/dev/null || find src tools tests -name '*.cc' -o -name '*.h')
clang-format --dry-run --Werror $files
echo "check_format: $(echo "$files" | wc -w) files are formatted"

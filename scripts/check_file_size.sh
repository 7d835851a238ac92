#!/usr/bin/env bash
# Fails naming every source file over 600 lines outside the tests. Sources are the C and C++,
# Python, shell, JavaScript and CMake files git tracks (or would: untracked files that are not
# ignored, so build outputs and other generated files are never seen), wherever they lie: src/,
# tools/, include/, python/, fuzz/, bench/, scripts/, examples/. Tests are exempt: anything
# under a tests/ directory, *_test.cc, test_*.py and the tests' helpers (test_util.h,
# *_test_util.h, *_test_support.h). So are the paths listed in scripts/file_size_exempt.txt
# (one a line; blank lines and # comments are skipped); a listed path must still be a file over
# the limit, so that the list is emptied as the files are split.
set -euo pipefail
cd "$(dirname "$0")/.."
max=600
exempt_list=scripts/file_size_exempt.txt

declare -A exempt=()
if [ -f "$exempt_list" ]; then
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line%%#*}
    line=$(echo "$line" | xargs)
    if [ -n "$line" ]; then exempt[$line]=1; fi
  done <"$exempt_list"
fi

if files=$(git ls-files --cached --others --exclude-standard 2>/dev/null); then
  :
else
  files=$(find src tools include python fuzz bench scripts examples CMakeLists.txt cmake \
    -type f 2>/dev/null | sed 's|^\./||')
fi

is_source() {
  case "$1" in
    *.cc | *.h | *.cpp | *.hpp | *.c | *.py | *.sh | *.js | *.cmake) return 0 ;;
    CMakeLists.txt | */CMakeLists.txt) return 0 ;;
    *) return 1 ;;
  esac
}

is_test() {
  case "$1" in
    tests/* | */tests/*) return 0 ;;
  esac
  case "${1##*/}" in
    *_test.cc | *_test.h | test_*.py | *_test.py | conftest.py | test_util.h | *_test_util.h | \
      *_test_support.h) return 0 ;;
  esac
  return 1
}

checked=0
over=()
while IFS= read -r f; do
  [ -n "$f" ] && [ -f "$f" ] || continue
  is_source "$f" || continue
  is_test "$f" && continue
  [ -n "${exempt[$f]:-}" ] && continue
  checked=$((checked + 1))
  n=$(wc -l <"$f")
  if [ "$n" -gt "$max" ]; then over+=("$f: $n lines"); fi
done <<<"$files"

stale=()
for f in "${!exempt[@]}"; do
  if [ ! -f "$f" ]; then
    stale+=("$f: listed in $exempt_list but not a file")
  elif [ "$(wc -l <"$f")" -le "$max" ]; then
    stale+=("$f: $(wc -l <"$f") lines now; remove it from $exempt_list")
  fi
done

if [ ${#over[@]} -gt 0 ] || [ ${#stale[@]} -gt 0 ]; then
  if [ ${#over[@]} -gt 0 ]; then
    echo "check_file_size: source files over $max lines (split them by concern):"
    printf '  %s\n' "${over[@]}"
  fi
  if [ ${#stale[@]} -gt 0 ]; then
    echo "check_file_size: stale entries in $exempt_list:"
    printf '  %s\n' "${stale[@]}"
  fi
  exit 1
fi
echo "check_file_size: $checked source files, none over $max lines (${#exempt[@]} exempt)"

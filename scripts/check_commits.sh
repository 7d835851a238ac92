#!/usr/bin/env bash
# Fails when a commit subject is longer than 72 characters. The rule holds from the commit after
# BASE (below) on; older subjects are left as they are.
#
#   scripts/check_commits.sh                     # the commits after BASE, up to HEAD
#   scripts/check_commits.sh --range main..HEAD  # the commits of a working branch
#   scripts/check_commits.sh --message-file F    # a message before it is committed
#   scripts/check_commits.sh --install-hook      # that check as this clone's commit-msg hook
#
# Without git history (no git, not a checkout) it says why and passes. A shallow clone without
# BASE checks the commits it holds that are newer than BASE.
set -euo pipefail
# Characters, not bytes, for ${#s} (a C.UTF-8 locale is part of Debian's libc).
export LC_ALL=C.UTF-8

MAX=72
BASE=6a6ba866362fadb02f9a6688cdef5906bcf4f632
BASE_TIME=1796572379  # BASE's committer date (seconds since the epoch)

usage() {
  awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"
  exit "$1"
}

range="" message_file="" install_hook=0
while [ $# -gt 0 ]; do
  case "$1" in
    --range) [ $# -ge 2 ] || usage 2; range=$2; shift 2 ;;
    --message-file) [ $# -ge 2 ] || usage 2; message_file=$(realpath -- "$2"); shift 2 ;;
    --install-hook) install_hook=1; shift ;;
    -h | --help) usage 0 ;;
    *) echo "check_commits: unknown argument '$1'" >&2; usage 2 ;;
  esac
done
script=$(realpath -- "$0")
cd "$(dirname "$script")/.."

if [ $install_hook = 1 ]; then
  hook=$(git rev-parse --git-path hooks)/commit-msg
  if [ -e "$hook" ]; then
    echo "check_commits: $hook exists; not replaced" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$hook")"
  printf '#!/bin/sh\nexec scripts/check_commits.sh --message-file "$1"\n' > "$hook"
  chmod +x "$hook"
  echo "check_commits: installed $hook"
  exit 0
fi

# A message as git will store it: comment lines and leading blank lines dropped; the subject is
# its first paragraph, lines joined by spaces (as `git log --format=%s` shows it).
if [ -n "$message_file" ]; then
  [ -r "$message_file" ] || { echo "check_commits: cannot read $message_file" >&2; exit 2; }
  subject=$(awk '/^#/ {next} !started && /^[[:space:]]*$/ {next}
                 {started = 1} started && /^[[:space:]]*$/ {exit}
                 {sub(/[[:space:]]+$/, ""); printf "%s%s", (n++ ? " " : ""), $0}' \
            "$message_file")
  if [ ${#subject} -gt $MAX ]; then
    echo "check_commits: the subject has ${#subject} characters (at most $MAX):" >&2
    echo "  $subject" >&2
    echo "  put the details in the body, after a blank line" >&2
    exit 1
  fi
  exit 0
fi

if ! command -v git > /dev/null 2>&1; then
  echo "check_commits: skipped: git is not installed"
  exit 0
fi
if ! why=$(git rev-parse --verify HEAD 2>&1 > /dev/null); then
  echo "check_commits: skipped: no git history in $(pwd) ($(echo "$why" | head -1))"
  exit 0
fi

newer_than_base=0
if [ -n "$range" ]; then
  what="in $range"
elif git cat-file -e "$BASE^{commit}" 2> /dev/null; then
  range="$BASE..HEAD"
  what="after ${BASE:0:7}"
else
  # No BASE to stop at: every commit here, keeping those newer than BASE.
  range="HEAD"
  newer_than_base=1
  if [ "$(git rev-parse --is-shallow-repository 2> /dev/null)" = true ]; then
    why="a shallow clone without ${BASE:0:7}"
  else
    why="${BASE:0:7} is not in this history"
  fi
  what="newer than ${BASE:0:7} ($why: checking the commits it holds)"
fi

checked=0 long=0
while IFS=' ' read -r hash time subject; do
  if [ $newer_than_base = 1 ] && [ "$time" -le $BASE_TIME ]; then continue; fi
  checked=$((checked + 1))
  if [ ${#subject} -gt $MAX ]; then
    long=$((long + 1))
    echo "  ${hash:0:10} ${#subject} characters: ${subject:0:100}$([ ${#subject} -gt 100 ] && echo ...)" >&2
  fi
done < <(git log --format='%H %ct %s' "$range" --)

subjects="commit subject$([ $checked = 1 ] || echo s)"
if [ $long -gt 0 ]; then
  echo "check_commits: $long of $checked $subjects $what $([ $long = 1 ] && echo is || echo are) over $MAX characters" >&2
  echo "  a subject says what changed in at most $MAX characters; the why goes in the body" >&2
  exit 1
fi
echo "check_commits: $checked $subjects $what $([ $checked = 1 ] && echo is || echo are) at most $MAX characters"

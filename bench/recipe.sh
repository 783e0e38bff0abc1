#!/usr/bin/env bash
# The by-hand baseline: every case of a suite run the way the session-memory-recall task's
# run_case.sh recipe prescribes, written as a plain bash loop.
#
#   bench/recipe.sh CASES_DIR OUT_DIR AGENT [AGENT ARGS...]
#
# Per case: session 1 runs in a fresh mktemp directory with TRAP_MANIFEST removed from its
# environment and its stdout thrown away; that directory is gone before session 2 starts in
# another fresh one; only session 2's stdout is kept, in OUT_DIR/<case>.txt.
set -u
cases=$1
out=$2
shift 2
for case in "$cases"/*/; do
  name=$(basename "$case")
  first=$(mktemp -d)
  (cd "$first" && env -u TRAP_MANIFEST "$@" "$(cat "${case}step1.txt")" > /dev/null)
  rm -rf "$first"
  second=$(mktemp -d)
  (cd "$second" && env -u TRAP_MANIFEST "$@" "$(cat "${case}step2.txt")" > "$out/$name.txt")
  rm -rf "$second"
done

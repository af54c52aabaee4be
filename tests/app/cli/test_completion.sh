#!/usr/bin/env bash
# Bash completion against the parsers (issue 34): every option each command's parser accepts
# (CCO_LIST_OPTIONS=1 makes a command list them and run nothing) is completed for that command,
# and every option completed for run, report, plan, doctor and info is one its parser accepts
# (the help pages the completion is generated from say no more than the parser takes). The
# bench and tune flag table is checked the same way in tests/lab/bench/test_flags.cpp.
# Usage: test_completion.sh CCO COMPLETION_FILE
set -u
cco=$1 comp=$2
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
[ -s "$comp" ] || { echo "FAIL: no completion file $comp"; exit 1; }

completed() {  # the words completed for command $1
  sed -n "s/^    $1) opts=\"\(.*\)\" ;;\$/\1/p" "$comp" | tr ' ' '\n' | sed '/^$/d' | sort -u
}
listed() {  # the options the parser of "cco $*" accepts
  CCO_LIST_OPTIONS=1 "$cco" "$@" </dev/null 2>/dev/null | sort -u
}

for spec in "run" "report" "plan" "doctor" "info" "tune" "tune -- true"; do
  # shellcheck disable=SC2086
  set -- $spec
  cmd=$1
  parser=$(listed "$@")
  [ -n "$parser" ] || { fail "cco $spec listed no options under CCO_LIST_OPTIONS=1"; continue; }
  comp_words=$(completed "$cmd")
  [ -n "$comp_words" ] || { fail "no completion case for $cmd"; continue; }
  missing=$(comm -23 <(echo "$parser") <(echo "$comp_words") | tr '\n' ' ')
  [ -z "$missing" ] || fail "cco $spec accepts options the completion lacks: $missing"
  case $cmd in
    tune) ;;  # tune also completes the bench options it passes on (the flag table's test)
    *)
      extra=$(comm -13 <(echo "$parser") <(echo "$comp_words") | grep -vxE -- '-h|--help' | tr '\n' ' ')
      [ -z "$extra" ] || fail "the completion (from docs/cli/$cmd.md) offers options cco $cmd does not take: $extra"
      ;;
  esac
done
# The listing runs nothing: the program after -- did not run.
out=$(CCO_LIST_OPTIONS=1 "$cco" run -- sh -c 'echo RAN' 2>&1)
grep -q RAN <<<"$out" && fail "CCO_LIST_OPTIONS=1 cco run ran the program"

[ $fails = 0 ] && echo "completion: every parser's options are completed" && exit 0
echo "$fails completion check(s) failed"
exit 1

# Sourced by the shell tests (cli.sh, classify_example.sh, example_outputs.sh, export_weights.sh)
# from the repository root: counted results and the closing line. The
# caller sets W, its work folder; a command under test writes to $W/out.txt,
# which a failing check shows.
pass=0
fail=0

# check NAME CONDITION...: one result.
check() {
  c_name=$1; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $c_name"; sed 's/^/    /' "$W/out.txt"; fi
}

# no_doubled LABEL: no line of $W/out.txt names a thing twice ("x.png: x.png: cannot open",
# "vit: vit: input has shape") or ends in a code's name after a message that already says what failed.
no_doubled() {
  check "$1: nothing named twice, no code's name appended" test -z "$(grep -E -e '(^|[ :])([^ :][^:]*): \2:' \
    -e '\((i/o error|bad file format|shape mismatch|invalid argument|missing tensor or key)\)$' "$W/out.txt")"
}

# summary NAME: the counts; the status is 0 when nothing failed.
summary() {
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}

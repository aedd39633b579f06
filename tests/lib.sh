# Sourced by the shell tests (cli.sh, classify_example.sh, export_weights.sh)
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

# summary NAME: the counts; the status is 0 when nothing failed.
summary() {
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}

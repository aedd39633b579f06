#!/bin/sh
# examples/03_attention_png.c and 05_tour.c: OUTDIR made when missing (as
# `vit maps --out` makes it), each PNG under its whole name in a valid
# 1,195-byte OUTDIR (never cut to a fixed buffer), and failures that name
# each thing once (vit.h's message names the file; the example must not).
# Usage: tests/example_outputs.sh EXAMPLES_DIR WORKDIR   (from the repository root)
set -u
EXD=$1 W=$2
M=tests/fixtures/vit_tv.safetensors
IMG=tests/fixtures/maps/rgba.png
. tests/lib.sh
rm -rf "$W" && mkdir -p "$W"
MAPS="heads mean max min rollout_mean rollout_max rollout_min" TOUR="sge shuffle emsa aft"

# all_pngs DIR PREFIX NAMES: DIR holds PREFIX<name>.png for every name, and nothing else.
all_pngs() {
  for ap_n in $3; do [ -f "$1/$2$ap_n.png" ] || return 1; done
  [ "$(find "$1" -mindepth 1 -maxdepth 1 | wc -l)" -eq "$(echo "$3" | wc -w)" ]
}

# OUTDIR missing: made.
"$EXD/03_attention_png" $M $IMG "$W/maps" > "$W/out.txt" 2>&1
check "03: OUTDIR made, its 7 PNGs" test $? -eq 0 -a -d "$W/maps" && check "03: the PNGs" all_pngs "$W/maps" "" "$MAPS"
"$EXD/05_tour" $IMG "$W/tour" > "$W/out.txt" 2>&1
check "05: OUTDIR made" test $? -eq 0 -a -d "$W/tour" && check "05: the PNGs" all_pngs "$W/tour" tour_ "$TOUR"

# A valid OUTDIR of 1,195 bytes (its parents made here).
D=$W
while [ ${#D} -lt 990 ]; do D=$D/$(printf '%0199d' 0); done
mkdir -p "$D" && D=$D/$(printf "%0$((1195 - ${#D} - 1))d" 0)
"$EXD/03_attention_png" $M $IMG "$D" > "$W/out.txt" 2>&1
check "03: an OUTDIR of ${#D} bytes" test $? -eq 0 && check "03: its PNGs by name" all_pngs "$D" "" "$MAPS"
rm -rf "$D"
"$EXD/05_tour" $IMG "$D" > "$W/out.txt" 2>&1
check "05: an OUTDIR of ${#D} bytes" test $? -eq 0 && check "05: its PNGs by name" all_pngs "$D" tour_ "$TOUR"

# Failures: exit 1, each thing named once.
: > "$W/file"
for args in "03_attention_png $M $W/none.jpg $W/maps" "03_attention_png $W/none.safetensors $IMG $W/maps" \
  "03_attention_png $M $IMG $W/file" "03_attention_png $M $IMG $W/file/sub" "05_tour $W/none.jpg $W/tour" \
  "05_tour $IMG $W/file" "05_tour $IMG $W/file/sub"; do
  # shellcheck disable=SC2086
  "$EXD"/$args > "$W/out.txt" 2>&1
  check "$args: exit 1" test $? -eq 1
  no_doubled "$args"
done

summary example_outputs

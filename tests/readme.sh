#!/bin/sh
# README.md's own lines, run as they stand: the program after the marker
# "<!-- readme-test: classify.c" and each group of lines (blank-line
# separated) of the block after "<!-- readme-test: build". Each build group
# runs in a clean folder holding only vit.h, classify.c, a model and a photo;
# it must print the class (and its name) that `vit classify` gives.
# Usage (from the repository root, after the native build):
#   tests/readme.sh groups                 the number of build groups
#   tests/readme.sh name K                 group K's name, from its comment ("# Linux with gcc (...)": linux-with-gcc)
#   tests/readme.sh build K VIT PYTHON     run group K (1-based)
#   tests/readme.sh snippet VIT PYTHON     classify.c with -Werror and ASan+UBSan, 41 images, a missing one
set -u
W=build/readme

# block MARKER: the fenced block after the line starting with MARKER.
block() {
  awk -v m="$1" 'index($0, m) == 1 { found = 1; next }
                 found == 1 && /^```/ { found = 2; next }
                 found == 2 && /^```/ { exit }
                 found == 2 { print }' README.md
}
# group K: the K-th blank-line separated group of the build block.
group() { block "<!-- readme-test: build" | awk -v k="$1" 'BEGIN { RS = "" } NR == k { print }'; }

# setup VIT PYTHON DIR: DIR with vit.h, classify.c, a labelled model and a
# 1024 x 1024 JPEG photo (12 MB decoded); prints the line classify.c must print for the photo (up to its
# probability, which may differ in the last digit between platforms).
setup() {
  s_vit=$1 s_py=$2 s_dir=$3
  rm -rf "$s_dir" && mkdir -p "$s_dir" || return 1
  cp vit.h "$s_dir/" && block "<!-- readme-test: classify.c" > "$s_dir/classify.c" || return 1
  [ -s "$s_dir/classify.c" ] || { echo "README.md: no classify.c block" >&2; return 1; }
  if [ ! -f $W/model.safetensors ] || [ README.md -nt $W/model.safetensors ]; then
    printf '%s\n' tench goldfish "great white shark" "tiger shark" hammerhead "electric ray" stingray cock hen ostrich > $W/labels.txt
    "$s_py" tools/export.py "torchvision:VisionTransformer:image_size=32,patch_size=8,num_layers=2,num_heads=3,hidden_dim=48,mlp_dim=96,num_classes=10" \
      $W/model.safetensors --seed 11 --labels $W/labels.txt > /dev/null 2>&1 &&
      "$s_py" -c 'import sys; from PIL import Image; Image.open(sys.argv[1]).convert("RGB").resize((1024, 1024)).save(sys.argv[2], quality=90)' \
        tests/fixtures/maps/prep_flower.png $W/photo.jpg || return 1
  fi
  cp $W/model.safetensors $W/photo.jpg "$s_dir/" || return 1
  "$s_vit" classify $W/model.safetensors $W/photo.jpg --top 1 2> /dev/null | awk '{ i = $2; $1 = $2 = ""; sub(/^ +/, ""); printf "photo.jpg: %s (class %d,\n", $0, i }'
}

case "${1:-}" in
groups)
  block "<!-- readme-test: build" | awk 'BEGIN { RS = "" } END { print NR }'
  ;;
name)
  group "$2" | sed -n '1s/^# *\([^(,]*\).*/\1/p' | sed 's/ *$//; s/ /-/g' | tr 'A-Z' 'a-z'
  ;;
build)
  k=$2
  mkdir -p $W
  want=$(setup "$3" "$4" $W/build$k) || exit 1
  echo "README group $k, run in $W/build$k:"
  group "$k" | sed 's/^/  | /'
  # wine's settings live in the tests' prefix, as tests/run.sh's wine steps do.
  lines=$(group "$k")
  # One server for the group's wine programs, as tests/run.sh keeps one (a
  # program started as the last one's server exits finds it gone).
  export WINEDEBUG=-all WINEPREFIX="$PWD/build/wineprefix"
  case "$lines" in *wine*) mkdir -p "$WINEPREFIX" && wineserver -p ;; esac
  (cd $W/build$k && sh -e -c "$lines") > $W/build$k.out 2>&1
  code=$?
  case "$lines" in *wine*) wineserver -k ;; esac
  sed 's/^/  > /' $W/build$k.out
  [ $code -eq 0 ] || { echo "group $k exited with $code"; exit 1; }
  got=$(grep -F "photo.jpg: " $W/build$k.out | tail -n 1)
  case "$got" in
  "$want"*) echo "$got: as vit classify" ;;
  *) echo "printed '$got', vit classify says '$want'"; exit 1 ;;
  esac
  ;;
snippet)
  mkdir -p $W
  want=$(setup "$2" "$3" $W/snippet) || exit 1
  cd $W/snippet || exit 1
  gcc -std=c99 -Wall -Wextra -Wpedantic -Werror -O1 -g -mavx2 -mfma -fsanitize=address,undefined -fno-sanitize-recover=all \
    classify.c -o classify -lm || exit 1
  printf '\377\330\377\340 not really a JPEG' > broken.jpg
  # 40 photos: without the arena reset the 256 MB would run out after 20; a
  # missing file and a broken one each get their message, the rest go on.
  set -- model.safetensors
  i=0
  while [ $i -lt 40 ]; do set -- "$@" photo.jpg; i=$((i + 1)); done
  ASAN_OPTIONS=detect_leaks=1 ./classify "$@" missing.jpg broken.jpg photo.jpg > out.txt 2> err.txt
  code=$?
  cat err.txt
  n=$(grep -cF "$want" out.txt)
  echo "$n of 41 lines '$want ...', exit $code"
  [ "$code" -eq 1 ] && [ "$n" -eq 41 ] && [ "$(wc -l < out.txt)" -eq 41 ] &&
    grep -q "^missing.jpg: " err.txt && grep -q "^broken.jpg: " err.txt && [ "$(wc -l < err.txt)" -eq 2 ] || exit 1
  ./classify > /dev/null 2>&1
  [ $? -eq 2 ] || { echo "no arguments: expected exit 2"; exit 1; }
  ./classify photo.jpg photo.jpg > out.txt 2>&1
  [ $? -eq 1 ] && grep -q "photo.jpg" out.txt || { echo "a JPEG as the model: expected exit 1 and a message"; exit 1; }
  echo "classify.c: checks errors, names the class, resets the arena per image, frees (ASan)"
  ;;
*)
  echo "usage: tests/readme.sh groups | name K | build K VIT PYTHON | snippet VIT PYTHON" >&2
  exit 2
  ;;
esac

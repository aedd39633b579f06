#!/bin/sh
# examples/02_classify.c against `vit classify` (which prints class indices):
# --labels names with commas (one a line), a model whose "labels" metadata
# names fewer classes than it has, a model of 2^23 classes (an arena sized
# by a counting pass, every allocation checked), and --attention drawn over
# the classified crop, not the whole photo; failures that name each thing once.
# Usage: tests/classify_example.sh EXAMPLE VIT PYTHON WORKDIR   (from the repository root)
set -u
EX=$1 VIT=$2 PY=$3 W=$4
M=tests/fixtures/vit_tv.safetensors
IMG=tests/fixtures/maps/rgba.png
. tests/lib.sh
rm -rf "$W" && mkdir -p "$W"
# top MODEL: the index of the class `vit classify` ranks first.
top() { "$VIT" classify "$1" $IMG --top 1 | awk '{print $2}'; }

# Names with commas, one a line: the example prints the name of vit's top class.
i=0
while [ $i -lt 10 ]; do echo "name $i, with a comma, and more"; i=$((i + 1)); done > "$W/labels.txt"
best=$(top $M)
"$EX" $M $IMG --top 1 --labels "$W/labels.txt" > "$W/out.txt" 2>&1
check "--labels with commas: top class $best by name" grep -qF "name $best, with a comma, and more" "$W/out.txt"

# A "labels" list naming 3 of 10 classes is not used: the index is printed, the right one.
$PY -c '
import sys
sys.path.insert(0, "tools")
import export as E
m = E.randomize(E.build("torchvision:VisionTransformer:image_size=32,patch_size=8,num_layers=1,num_heads=2,hidden_dim=16,mlp_dim=20,num_classes=10"), 5)
E.export_module(m, sys.argv[1], extra={"labels": "first,second,third"})' "$W/short.safetensors"
best=$(top "$W/short.safetensors")
"$EX" "$W/short.safetensors" $IMG --top 1 > "$W/out.txt" 2>&1
check "a short label list: class $best" grep -qx " *[0-9.]*%  class $best" "$W/out.txt"

# 2^23 classes: a message or a result, never a crash; the same class as vit's.
$PY tools/export.py "torchvision:VisionTransformer:image_size=8,patch_size=8,num_layers=1,num_heads=1,hidden_dim=2,mlp_dim=2,num_classes=8388608" \
  "$W/wide.safetensors" --seed 1 > "$W/out.txt" 2>&1
best=$(top "$W/wide.safetensors")
"$EX" "$W/wide.safetensors" $IMG --top 1 > "$W/out.txt" 2>&1
check "2^23 classes: class $best" grep -qx " *[0-9.]*%  class $best" "$W/out.txt"
rm -f "$W/wide.safetensors"

# --attention: the 32 px crop drawn at 224 px, not the 157 x 263 photo.
"$EX" $M $IMG --attention "$W/roll.png" > "$W/out.txt" 2>&1 &&
  $PY -c 'import sys; from PIL import Image; s = Image.open(sys.argv[1]).size; print(s); sys.exit(s != (224, 224))' "$W/roll.png" >> "$W/out.txt" 2>&1
check "--attention over the classified crop" test $? -eq 0
"$EX" $M $IMG --top 0 > "$W/out.txt" 2>&1
check "--top 0 refused, named" test $? -eq 2 -a -n "$(grep -F -- '--top 0' "$W/out.txt")"

# Failures name each thing once: vit.h's message names the file, the example does not repeat it.
printf '\377\330\377\340\000\020JFIF\000' > "$W/photo.jpg"
for args in "$M $W/none.jpg" "$M $W/photo.jpg" "$W/none.safetensors $IMG" "$W/photo.jpg $IMG" \
  "$M $IMG --attention $W/none/roll.png"; do
  # shellcheck disable=SC2086
  "$EX" $args > "$W/out.txt" 2>&1
  check "02_classify $args: exit 1" test $? -eq 1
  no_doubled "02_classify $args"
done

summary 02_classify

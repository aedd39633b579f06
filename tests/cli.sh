#!/bin/sh
# The `vit` command: every usage error names the argument and the problem
# (exit 2), --help and --version, the bounds of each number, text from
# files printed with control characters escaped, classify on images the old
# arena guess was too small for, timm's crop_pct, --mean/--std against the
# model's channels, `vit maps`, each command's help, the image formats the
# usage lists, and what the shipped model says about the images it knows.
# Usage: tests/cli.sh VIT PYTHON WORKDIR   (from the repository root)
set -u
VIT=$1 PY=$2 W=$3
M=tests/fixtures/vit_tv.safetensors      # a 32 px torchvision ViT, 3 channels, 10 classes
IMG=tests/fixtures/maps/rgba.png
. tests/lib.sh
rm -rf "$W" && mkdir -p "$W"

# expect CODE TEXT ARGS...: `vit ARGS` exits with CODE and says TEXT (on stdout or stderr).
expect() {
  e_code=$1 e_text=$2; shift 2
  "$VIT" "$@" > "$W/out.txt" 2>&1
  e_got=$?
  check "vit $* -> exit $e_got (want $e_code) and '$e_text'" test "$e_got" -eq "$e_code" -a -n "$(grep -F -- "$e_text" "$W/out.txt")"
}

# Usage errors: exit 2, the argument named.
expect 2 "vit: no command given"
expect 2 "unknown command 'clasify'" clasify $M $IMG
expect 2 "expected a command before '--top'" --top 3 classify $M $IMG
expect 2 "vit info: missing MODEL" info
expect 2 "vit run: missing INPUT.npy" run $M
expect 2 "vit run: missing OUTPUT.npy" run $M in.npy
expect 2 "vit classify: missing IMAGE" classify $M
expect 2 "vit maps: missing IMAGE" maps $M --out "$W"
expect 2 "vit maps: missing --out DIR" maps $M $IMG
expect 2 "unexpected argument 'extra' (info takes MODEL)" info $M extra
expect 2 "unexpected argument 'now' (version takes none)" version now
expect 2 "unknown option '--tpo'" classify $M $IMG --tpo 3
expect 2 "unknown option '-t'" classify $M $IMG -t 3
expect 2 "--top is not an option of info (it is for classify, maps)" info $M --top 3
expect 2 "--features is not an option of classify (it is for run)" classify $M $IMG --features
expect 2 "--top needs a value (K)" classify $M $IMG --top
expect 2 "--top needs a value (K), got the option --resize" classify $M $IMG --top --resize 40
expect 2 "--top given twice" classify $M $IMG --top 3 --top=4
expect 2 "--features takes no value" run $M a.npy b.npy --features=1
expect 2 "--features and --tokens: one or the other" run $M a.npy b.npy --features --tokens
expect 2 "vit input-shape: B 'two': not a size in 1..2147483647" input-shape $M two
expect 2 "vit input-shape: N '0': not a size" input-shape $M 2 0
expect 2 "unexpected argument '5' (input-shape takes MODEL [B [N [W]]])" input-shape $M 1 2 3 5
# Numbers: strtol and a range, never atoi.
expect 2 "--top 0: out of range, K must be in 1..2147483647" classify $M $IMG --top 0
expect 2 "--top 'three': not a whole number" classify $M $IMG --top three
expect 2 "--top '3x': not a whole number" classify $M $IMG --top 3x
expect 2 "--top 99999999999: out of range" classify $M $IMG --top 99999999999
for n in 0 -1 1000000 99999999999; do
  expect 2 "--threads $n: out of range, N must be in 1..1024" run $M a.npy b.npy --threads $n
  expect 2 "--threads $n: out of range, N must be in 1..1024" classify $M $IMG --threads=$n
done
expect 2 "--image-size 0: out of range, N must be in 1..8192" info $M --image-size 0
expect 2 "--image-size 100000: out of range, N must be in 1..8192" info $M --image-size 100000
expect 2 "--resize 0: out of range, N must be in 1..65536" classify $M $IMG --resize 0
expect 2 "--resize 2000000000: out of range, N must be in 1..65536" classify $M $IMG --resize 2000000000
expect 2 "--resize 16: smaller than the model's 32-pixel crop" classify $M $IMG --resize 16
expect 2 "--heads -3: out of range" info $M --heads -3
expect 2 "--std 0: a standard deviation must be positive" classify $M $IMG --mean 0.5 --std 0
expect 2 "--std 0.2,-1,0.2: a standard deviation must be positive" classify $M $IMG --std 0.2,-1,0.2
expect 2 "--mean '0.5,,0.5': expected 1 to 3 numbers" classify $M $IMG --mean 0.5,,0.5
expect 2 "--mean 'nan': expected 1 to 3 numbers" classify $M $IMG --mean nan
expect 2 "--mean '1,2,3,4': expected 1 to 3 numbers" classify $M $IMG --mean 1,2,3,4
expect 2 "--mean 0.5,0.5: 2 numbers for a model with 3 channels" classify $M $IMG --mean 0.5,0.5
expect 2 "--std 0.3,0.3,0.3: 3 numbers for a model with 1 channel" classify models/fashion_vit.safetensors $IMG --std 0.3,0.3,0.3
expect 2 "--fusion 'avg': expected one of mean|max|min" maps $M $IMG --out "$W" --fusion avg
expect 2 "--discard 1: out of range, R must be in [0, 1)" maps $M $IMG --out "$W" --discard 1
expect 2 "--layer 2: the model has 2 layers (0..1)" maps $M $IMG --out "$W" --layer 2
expect 2 "would both write rgba_*.png" maps $M $IMG ./$IMG --out "$W"
expect 2 "holds a module (kind mha), not a ViT classifier" classify tests/fixtures/mha_nn.safetensors $IMG
expect 2 "is a ViT without a class token: the maps are the class token's attention" maps tests/fixtures/families/no_cls_avg/model.safetensors $IMG --out "$W"
expect 0 "3 32 32" input-shape $M 3
# Help and version: stdout, exit 0.
"$VIT" --help > "$W/out.txt" 2> "$W/err.txt"
check "--help: usage on stdout, exit 0" test $? -eq 0 -a -n "$(grep -F 'vit maps MODEL IMAGE... [--threads N]' "$W/out.txt")" -a ! -s "$W/err.txt"
"$VIT" classify --top 0 --help > "$W/out.txt" 2>&1
check "--help wins over a bad option" test $? -eq 0 -a -n "$(grep -F 'usage:' "$W/out.txt")"
expect 0 "vit.h 0." --version
expect 0 "vit.h 0." version

# Help: `vit CMD --help` and `vit help CMD` print CMD's usage alone (exit 0);
# the commands come from cli/vit.c's table, and the no-command message names each.
CMDS=$(sed -n '/^static const cli_command cli_commands\[\] = {/,/^};/p' cli/vit.c | sed -n 's/^ *{"\([a-z-]*\)",.*/\1/p')
check "the command table read from cli/vit.c: $(echo $CMDS)" test "$(echo "$CMDS" | wc -l)" -ge 7
"$VIT" > "$W/none.txt" 2>&1
"$VIT" --help > "$W/all.txt" 2>&1
for c in $CMDS; do
  check "the no-command message names $c" grep -qE "[(, ]$c[,) ]" "$W/none.txt"
  check "vit --help lists $c" grep -q "^  vit $c\b" "$W/all.txt"
done
for c in $CMDS; do
  "$VIT" "$c" --help > "$W/out.txt" 2>&1
  check "vit $c --help: exit 0, its usage" test $? -eq 0 -a -n "$(grep "^  vit $c\b" "$W/out.txt")"
  check "vit $c --help: no other command's usage" test "$(grep -c '^  vit ' "$W/out.txt")" -eq 1
  "$VIT" help "$c" > "$W/help.txt" 2>&1
  check "vit help $c: exit 0, the same as vit $c --help" test $? -eq 0
  check "vit help $c: the same text" cmp -s "$W/out.txt" "$W/help.txt"
done
"$VIT" help > "$W/out.txt" 2>&1
check "vit help: exit 0, the whole usage" test $? -eq 0
check "vit help: the same as vit --help" cmp -s "$W/out.txt" "$W/all.txt"
expect 2 "unknown command 'clasify'" help clasify
expect 2 "unexpected argument 'maps' (help takes [COMMAND])" help classify maps

# Image formats: the list in `vit --help` is README.md's, and each format
# listed is read, each other one refused (tiny images made by PIL).
help_formats=$("$VIT" --help | sed -n 's/^IMAGE: //p' | grep -oE '\b[A-Z][A-Z]+\b' | sort -u | tr '\n' ' ')
readme_formats=$(sed -n 's/^IMAGE: //p' README.md | grep -oE '\b[A-Z][A-Z]+\b' | sort -u | tr '\n' ' ')
echo "--help: $help_formats; README: $readme_formats" > "$W/out.txt"
check "image formats: --help lists some ($help_formats)" test -n "$help_formats"
check "image formats: README.md's IMAGE: line lists --help's" test "$help_formats" = "$readme_formats"
/usr/bin/python3 -c '
import sys
from PIL import Image
im = Image.new("RGB", (40, 30), (200, 40, 90))
for ext, fmt in [("png", "PNG"), ("jpg", "JPEG"), ("bmp", "BMP"), ("ppm", "PPM"), ("gif", "GIF"), ("tga", "TGA"),
                 ("tif", "TIFF"), ("ico", "ICO"), ("webp", "WEBP")]:
    try: im.save(f"{sys.argv[1]}/fmt.{ext}", fmt)
    except Exception as e: print("PIL cannot write", fmt, e)
im.convert("L").save(f"{sys.argv[1]}/fmt.pgm", "PPM")
open(f"{sys.argv[1]}/fmt.psd", "wb").write(b"8BPS\0\1" + bytes(6) + b"\0\3" + (30).to_bytes(4, "big") + (40).to_bytes(4, "big") + b"\0\x08\0\3" + bytes(64))
' "$W" > "$W/out.txt" 2>&1
for f in png:PNG jpg:JPEG bmp:BMP ppm:PPM pgm:PGM gif:GIF tga:TGA tif:TIFF ico:ICO webp:WEBP psd:PSD; do
  ext=${f%%:*} name=${f#*:}
  [ -f "$W/fmt.$ext" ] || continue
  "$VIT" classify $M "$W/fmt.$ext" --top 1 > "$W/out.txt" 2>&1
  rc=$?
  case " $help_formats " in
  *" $name "*) check "image format $name: listed, and read" test $rc -eq 0 ;;
  *) check "image format $name: not listed, and refused with the formats read" test $rc -eq 1 \
       -a -n "$(grep -F 'PNG, JPEG, BMP' "$W/out.txt")" ;;
  esac
done

# maps on a ViT without a head: no class, the maps all the same.
"$VIT" maps tests/fixtures/families/hf_dinov2/model.safetensors $IMG --out "$W/nohead" > "$W/out.txt" 2>&1
check "maps without a head: exit 0, 'no class', no class number" test $? -eq 0 -a -n "$(grep -F 'rgba.png: no class' "$W/out.txt")" \
  -a -z "$(grep -E 'class [0-9]' "$W/out.txt")"
check "maps without a head: the three PNGs" test -f "$W/nohead/rgba_heads.png" -a -f "$W/nohead/rgba_fused.png" -a -f "$W/nohead/rgba_rollout.png"

# The shipped Fashion-MNIST model says what it was trained on (vit info), and
# classify notes a colour photo given to it (stderr), not a small grey image.
F=models/fashion_vit.safetensors
expect 0 "trained on: fashion-mnist, 28x28 greyscale images (test accuracy 90.24%)" info $F
"$VIT" classify $F tests/fixtures/maps/prep_flower.png --top 1 > "$W/std.txt" 2> "$W/out.txt"
check "classify: a colour photo for the greyscale 28x28 model, a note on stderr" test $? -eq 0 -a -s "$W/std.txt" \
  -a -n "$(grep -F 'note: tests/fixtures/maps/prep_flower.png is a 224x224 colour image; models/fashion_vit.safetensors takes 28x28 greyscale images (trained on fashion-mnist)' "$W/out.txt")"
/usr/bin/python3 -c 'import sys; from PIL import Image; Image.new("L", (28, 28), 90).save(sys.argv[1]); Image.new("L", (600, 500), 90).save(sys.argv[2])' "$W/g28.png" "$W/g600.png"
"$VIT" classify $F "$W/g28.png" --top 1 > "$W/std.txt" 2> "$W/out.txt"
check "classify: a 28x28 grey image for that model, no note" test $? -eq 0 -a ! -s "$W/out.txt"
"$VIT" classify $F "$W/g600.png" --top 1 > "$W/std.txt" 2> "$W/out.txt"
check "classify: a 600x500 grey image for that model, a note" test $? -eq 0 -a -n "$(grep -F 'is a 600x500 image;' "$W/out.txt")"
"$VIT" classify $M $IMG --top 1 > "$W/std.txt" 2> "$W/out.txt"
check "classify: a colour model on a colour image, no note" test $? -eq 0 -a ! -s "$W/out.txt"

# Failures while running: exit 1 with vit.h's message naming the file.
printf '\377\330\377\340\000\020JFIF\000' > "$W/photo.jpg"
expect 1 "$W/photo.jpg" info "$W/photo.jpg"
expect 1 "photo.jpg: not a safetensors file" classify "$W/photo.jpg" $IMG
expect 1 "vit: " info "$W/no such file.safetensors"
expect 1 "$W/no-image.png" classify $M "$W/no-image.png"
expect 1 "vit_model_set_image_size: 36 is not a positive multiple of the patch size 8" info $M --image-size 36

# Failures say each thing once: vit.h's message names the file, the command does not repeat it.
"$PY" -c 'import numpy, sys; numpy.save(sys.argv[1], numpy.zeros((1, 3, 48, 48), numpy.float32))' "$W/x48.npy"
for args in "info $W/photo.jpg" "info $W/none.safetensors" "classify $M $W/none.jpg" "classify $M $W/photo.jpg" \
  "run $M $W/none.npy $W/o.npy" "run $M $W/x48.npy $W/o.npy" "run $M $W/x48.npy $W/none/o.npy --image-size 48" \
  "maps $M $W/none.jpg --out $W/m1" "info $M --image-size 36" "run tests/fixtures/mha_nn.safetensors $W/x48.npy $W/o.npy"; do
  # shellcheck disable=SC2086
  "$VIT" $args > "$W/out.txt" 2>&1
  check "vit $args: exit 1" test $? -eq 1
  no_doubled "vit $args"
done

# A working classify, with several images; a broken one among them fails only itself.
expect 0 "  4  " classify $M $IMG tests/fixtures/maps/gray.png --top 10
expect 1 "tests/fixtures/maps/gray.png" classify $M "$W/photo.jpg" tests/fixtures/maps/gray.png
# Images whose decoded or resized size the old fixed guess did not cover:
# a 2 x 6000 strip (resized to 36 x 108000 before the crop) and a grey
# 1500 x 1500 (every channel replicated); the arena is sized by a counting pass.
$PY -c 'import sys; from PIL import Image; Image.new("RGB", (2, 6000), (200, 30, 90)).save(sys.argv[1]); Image.new("L", (1500, 1500), 77).save(sys.argv[2])' \
  "$W/tall.png" "$W/grey.png"
expect 0 "%" classify $M "$W/tall.png" "$W/grey.png" --top 1
# timm's crop_pct from a config.json: a tiny one is refused (vit_model_preprocess), not cast to int.
cp -r tests/fixtures/naming/timm_avg "$W/timm"
sed 's/"crop_pct": 0.9/"crop_pct": 1e-30/' tests/fixtures/naming/timm_avg/config.json > "$W/timm/config.json"
expect 1 "timm/model.safetensors: metadata input_crop_pct '1e-30' is not a number in [0.0625, 1]" classify "$W/timm/model.safetensors" $IMG
sed 's/"crop_pct": 0.9/"crop_pct": 0/' tests/fixtures/naming/timm_avg/config.json > "$W/timm/config.json"
expect 1 "timm/model.safetensors: metadata input_crop_pct '0' is not a number in [0.0625, 1]" classify "$W/timm/model.safetensors" $IMG
cp tests/fixtures/naming/timm_avg/config.json "$W/timm/config.json"
expect 0 "goldfish" classify "$W/timm/model.safetensors" $IMG --top 5

# Text from files reaches the terminal escaped: labels, and tensor names in messages.
{ printf 'plain\n\033[2J\033]0;title\007clear\nnew\rline\n\302\233csi\n'; printf 'ok %d\n' 4 5 6 7 8; printf 'caf\303\251\n'; } > "$W/labels.txt"
"$VIT" classify $M $IMG --labels "$W/labels.txt" --top 10 > "$W/out.txt" 2>&1
check "classify: labels with control characters escaped" test $? -eq 0 -a -n "$(grep -F '\x1b[2J\x1b]0;title\x07clear' "$W/out.txt")" \
  -a -n "$(grep -F 'new\x0dline' "$W/out.txt")" -a -n "$(grep -F '\xc2\x9bcsi' "$W/out.txt")" -a -n "$(grep -F 'café' "$W/out.txt")" \
  -a -z "$(tr -d '\n' < "$W/out.txt" | tr -d '[:print:]' | tr -d '\303\251')"
"$VIT" info $M --labels "$W/labels.txt" > "$W/out.txt" 2>&1
check "info: labels escaped" test $? -eq 0 -a -n "$(grep -F 'labels: plain, \x1b[2J\x1b]0;title\x07clear, ... café' "$W/out.txt")"
$PY -c '
import json, struct, sys
h = json.dumps({"\u001b[31mred\u001b[0m": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(4))' "$W/evil.safetensors"
"$VIT" info "$W/evil.safetensors" > "$W/out.txt" 2>&1
check "a tensor name in vit.h's message escaped" test $? -eq 1 -a -n "$(grep -F '\x1b[31mred\x1b[0m' "$W/out.txt")" \
  -a -z "$(tr -d '\n' < "$W/out.txt" | tr -d '[:print:]')"

# run: --threads 1 and 2 give the same bits (vit_set_threads reaches OpenMP).
"$VIT" run $M tests/fixtures/maps/pos48.in.npy "$W/t1.npy" --image-size 48 --threads 1 > "$W/out.txt" 2>&1 &&
  "$VIT" run $M tests/fixtures/maps/pos48.in.npy "$W/t2.npy" --image-size 48 --threads 2 >> "$W/out.txt" 2>&1
check "run --threads 1 and 2: same output" cmp "$W/t1.npy" "$W/t2.npy"

# run's output written whole to a temporary file, then renamed over the target: through a
# symbolic link the file it names is replaced (the link stays; a dangling link's file is made),
# a 0600 file stays 0600, and a valid 250-byte name is saved (the temporary's name stays short).
: > "$W/target.npy" && ln -s target.npy "$W/link.npy" && ln -s made.npy "$W/dangling.npy"
: > "$W/private.npy" && chmod 600 "$W/private.npy"
N250=$(printf 'n%.0s' $(seq 246)).npy
for out in link.npy dangling.npy private.npy "$N250"; do
  "$VIT" run $M tests/fixtures/maps/pos48.in.npy "$W/$out" --image-size 48 > "$W/out.txt" 2>&1
  check "run into $(echo "$out" | cut -c1-20): exit 0" test $? -eq 0
done
check "through a link: the file it names replaced, the link kept" test -L "$W/link.npy" -a ! -L "$W/target.npy"
check "through a link: the data" cmp "$W/target.npy" "$W/t1.npy"
check "a 0600 file replaced stays 0600" test "$(stat -c %a "$W/private.npy")" = 600 -a -s "$W/private.npy"
check "a dangling link: its file made, the link kept" test -L "$W/dangling.npy" -a -f "$W/made.npy"
check "a dangling link: the data" cmp "$W/made.npy" "$W/t1.npy"
check "a 250-byte name" cmp "$W/$N250" "$W/t1.npy"

# maps: three PNGs per image, for several images, over the crop each was classified on.
expect 0 "rollout through 2 layers, max fusion, 0.50 discarded" maps $M $IMG tests/fixtures/maps/gray.png --out "$W/maps" --fusion max --discard 0.5 --layer 0
for f in rgba_heads rgba_fused rgba_rollout gray_heads gray_fused gray_rollout; do
  check "maps wrote $f.png" test -n "$(head -c 8 "$W/maps/$f.png" | grep -a PNG)"
done
# With registers (timm's DINOv2) and a distillation token (DeiT): the maps are the patches' part of each row.
for mdl in dinov2_reg4 deit_distilled; do
  expect 0 "rollout through 2 layers" maps tests/fixtures/families/$mdl/model.safetensors $IMG --out "$W/$mdl"
done
$PY -c '
import sys
from PIL import Image
a, b = Image.open(sys.argv[1]), Image.open(sys.argv[2])
print(a.size, b.size)
sys.exit(a.size != (224, 224) or b.size != ((160 + 2) * 3 - 2, 160))' "$W/maps/rgba_fused.png" "$W/maps/rgba_heads.png" > "$W/out.txt" 2>&1
check "maps: the fused map is the 224 px crop, the heads a row of 3 cells" test $? -eq 0
: > "$W/file"
expect 1 "exists and is not a folder" maps $M $IMG --out "$W/file"
# --out a valid folder of 1,195 bytes: each PNG under its whole name, none cut to a fixed size.
D=$W
while [ ${#D} -lt 990 ]; do D=$D/$(printf '%0199d' 0); done
mkdir -p "$D" && D=$D/$(printf "%0$((1195 - ${#D} - 1))d" 0)
expect 0 "rollout through 2 layers" maps $M $IMG --out "$D"
check "--out of 1,195 bytes: ${#D} bytes, the three PNGs by name" test ${#D} -eq 1195 -a -f "$D/rgba_heads.png" \
  -a -f "$D/rgba_fused.png" -a -f "$D/rgba_rollout.png" -a "$(find "$D" -mindepth 1 -maxdepth 1 | wc -l)" -eq 3

# run: an input's shape is checked from its header before its data is read:
# a 2 GB (sparse) .npy of the wrong shape is refused within 1 GB of address
# space (not under ASan, whose shadow memory needs terabytes of it).
$PY -c '
import struct, sys
h = "{\x27descr\x27: \x27<f4\x27, \x27fortran_order\x27: False, \x27shape\x27: (2000, 3, 300, 300), }"
h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())
    f.truncate(10 + len(h) + 2000 * 3 * 300 * 300 * 4)' "$W/big.npy"
case $VIT in
*asan*) expect 1 "input has shape [2000,3,300,300], the model expects (B, 3, 32, 32)" run $M "$W/big.npy" "$W/o.npy" ;;
*) (ulimit -v 1000000; "$VIT" run $M "$W/big.npy" "$W/o.npy") > "$W/out.txt" 2>&1
   check "a 2 GB .npy of the wrong shape refused before it is read" test $? -eq 1 \
     -a -n "$(grep -F "the model expects (B, 3, 32, 32)" "$W/out.txt")" ;;
esac
rm -f "$W/big.npy"

summary cli

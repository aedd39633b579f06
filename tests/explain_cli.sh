#!/bin/sh
# `vit maps --method`: each method writes a map per class over the crop
# (and with --npy the raw map, G x G or H x W), --class by number and by
# label, --top, --target for a model without a head; bad requests exit 2
# naming the problem. The maps' numbers are test_reverse's (against the
# authors' code); here, the command around them.
# Usage: tests/explain_cli.sh VIT PYTHON WORKDIR   (from the repository root)
set -u
VIT=$1 PY=$2 W=$3
M=tests/fixtures/explain/vit/model.safetensors        # timm ViT, 32 px, 8 px patches, 5 classes, no labels
SIG=tests/fixtures/explain/siglip/model.safetensors   # SigLIP tower: no head, 32 features
FASHION=models/fashion_vit.safetensors                # labelled classes
IMG=tests/fixtures/maps/rgba.png
. tests/lib.sh
rm -rf "$W" && mkdir -p "$W"

expect() { # expect CODE TEXT ARGS...
  e_code=$1 e_text=$2; shift 2
  "$VIT" "$@" > "$W/out.txt" 2>&1
  e_got=$?
  check "vit $* -> exit $e_got (want $e_code) and '$e_text'" test "$e_got" -eq "$e_code" -a -n "$(grep -F -- "$e_text" "$W/out.txt")"
}

# shape FILE ROWS COLS: a float32 .npy of that shape, finite
shape() {
  "$PY" -c 'import sys, numpy as np; a = np.load(sys.argv[1]); sys.exit(not (a.shape == (int(sys.argv[2]), int(sys.argv[3])) and a.dtype == np.float32 and np.isfinite(a).all()))' "$@"
}

# every method, the two likeliest classes, PNG and raw map
for meth in rollout grad-rollout chefer legrad gradcam saliency gxi ig; do
  expect 0 "rgba_${meth}_" maps $M $IMG --out "$W/m" --method $meth --top 2 --npy
  n=$(ls "$W/m" | grep -c "^rgba_${meth}_[0-4]\.png$")
  check "$meth: two PNGs ($n)" test "$n" -eq 2
  f=$(ls "$W/m"/rgba_${meth}_*.npy | head -n 1)
  case $meth in saliency|gxi|ig) check "$meth: raw map 32 x 32" shape "$f" 32 32 ;; *) check "$meth: raw map 4 x 4" shape "$f" 4 4 ;; esac
done
# classes by number, repeated, and by label (Fashion-MNIST's names)
expect 0 "chefer for class 3" maps $M $IMG --out "$W/c" --method chefer --class 3 --class 1
check "--class twice: two maps" test -f "$W/c/rgba_chefer_3.png" -a -f "$W/c/rgba_chefer_1.png"
expect 0 "grad-rollout for class 8 Bag" maps $FASHION $IMG --out "$W/c" --method grad-rollout --class Bag --pairing vit-explain
expect 0 "ig for class 0 T-shirt/top" maps $FASHION $IMG --out "$W/c" --method ig --class 0 --steps 4
# a model without a head: a direction, from a file
"$PY" -c 'import numpy as np; np.save("'"$W"'/dir.npy", np.linspace(-1, 1, 32, dtype=np.float32))'
expect 0 "legrad for the direction in" maps $SIG $IMG --out "$W/s" --method legrad --target "$W/dir.npy" --npy
check "siglip: raw map 4 x 4" shape "$W/s/rgba_legrad_target.npy" 4 4

# bad requests: exit 2, the problem named
expect 2 "--class 5: out of range, the model has classes 0..4" maps $M $IMG --out "$W/e" --method chefer --class 5
expect 2 "--class 'Sandal ': no label" maps $FASHION $IMG --out "$W/e" --method chefer --class "Sandal "
expect 2 "--class: only with --method" maps $M $IMG --out "$W/e" --class 1
expect 2 "--npy: only with --method" maps $M $IMG --out "$W/e" --npy
expect 2 "--method 'grad_rollout': expected one of" maps $M $IMG --out "$W/e" --method grad_rollout
expect 2 "has no classes to explain (give --target FILE.npy" maps $SIG $IMG --out "$W/e" --method chefer
expect 2 "is a ViT without a head: it has no classes to explain" maps $SIG $IMG --out "$W/e" --method chefer --class 1
expect 2 "5 values, the model has 32 outputs" maps $SIG $IMG --out "$W/e" --method chefer --target tests/fixtures/explain/vit/seed.npy
expect 2 "--target and --class: a direction or classes, not both" maps $M $IMG --out "$W/e" --method chefer --target "$W/dir.npy" --class 1
expect 2 "--steps 0: out of range" maps $M $IMG --out "$W/e" --method ig --steps 0
expect 2 "--layer: not with --method" maps $M $IMG --out "$W/e" --method chefer --layer 0
# the reverse pass is F32's: a BF16 file is refused, named
"$PY" tools/export.py --from $M --dtype BF16 "$W/bf16.safetensors" > /dev/null && cp "$(dirname $M)/config.json" "$W/config.json"
expect 1 "the reverse pass needs F32 weights" maps "$W/bf16.safetensors" $IMG --out "$W/e" --method chefer
summary explain_cli

#!/bin/sh
# tools/export.py's command line: pretrained torchvision weights from torch
# hub's cache (a file made here, in the cache's layout: this machine has no
# network), ImageNet's class names and preprocessing in the metadata, a clear
# message when the weights can be neither found nor downloaded, untrained
# exports flagged (export.py, vit info, vit classify), --labels, `make
# export`, and Debian's python3 without the venv. timm's --pretrained runs
# when timm is importable.
# Usage: tests/export_weights.sh VIT PYTHON WORKDIR   (from the repository root)
set -u
VIT=$1 PY=$2 W=$3
IMG=tests/fixtures/maps/prep_flower.png
SMALL="torchvision:VisionTransformer:image_size=32,patch_size=8,num_layers=1,num_heads=2,hidden_dim=16,mlp_dim=20,num_classes=4"
. tests/lib.sh
mkdir -p "$W"
rm -f "$W"/*.txt "$W"/*.safetensors "$W/config.json"
rm -rf "$W/timm" "$W/new" "$W/file"
has() { [ -n "$(grep -F -- "$1" "$W/out.txt")" ]; }

# torchvision:vit_b_16 --weights IMAGENET1K_V1 from the cache: a ViT-B/16
# with weights drawn from seed 7 stands in for the download (330 MB, kept
# between runs; torchvision checks no hash of a cached file).
export TORCH_HOME="$PWD/$W/torchhome"
CACHED=$TORCH_HOME/hub/checkpoints/vit_b_16-c867db91.pth
if [ ! -f "$CACHED" ]; then
  mkdir -p "$(dirname "$CACHED")"
  $PY -c '
import sys, torch, torchvision
sys.path.insert(0, "tools")
import export as E
torch.save(E.randomize(torchvision.models.vit_b_16(), 7).state_dict(), sys.argv[1] + ".tmp")' "$CACHED" && mv "$CACHED.tmp" "$CACHED"
fi
make -s export SPEC=torchvision:vit_b_16 OUT="$W/vit_b_16.safetensors" ARGS="--weights IMAGENET1K_V1" > "$W/out.txt" 2>&1
check "make export --weights IMAGENET1K_V1: from the cache, 1000 class names" has "wrote $W/vit_b_16.safetensors: kind=vit naming=torchvision, 86567656 weights as F32, 1000 class names"
check "export.py says where the weights came from" has "from torch hub's cache, $CACHED"
"$VIT" info "$W/vit_b_16.safetensors" > "$W/out.txt" 2>&1
check "vit info: where the weights come from, the labels" test $? -eq 0 -a -n "$(grep -F 'weights: torchvision ViT_B_16_Weights.IMAGENET1K_V1' "$W/out.txt")" \
  -a -n "$(grep -F 'labels: tench, goldfish, ... toilet tissue' "$W/out.txt")" -a -z "$(grep -F UNTRAINED "$W/out.txt")"
# The file holds the cached weights, ImageNet's names and preprocessing; vit
# classify prints the name of PyTorch's top class (torchvision's transform
# and model, the same weights), and no warning.
"$VIT" classify "$W/vit_b_16.safetensors" $IMG --top 1 > "$W/vit.txt" 2> "$W/err.txt"
$PY -c '
import sys, torch, torchvision
from PIL import Image
sys.path.insert(0, "tools")
import export as E
got, meta = E.load_safetensors(sys.argv[1])
want = torch.load(sys.argv[2])
w = torchvision.models.ViT_B_16_Weights.IMAGENET1K_V1
bad = [k for k in want if not (got[k] == want[k].numpy()).all()]
print("tensors differing from the cached weights:", bad, "of", len(want), "; metadata keys", sorted(meta))
ok = not bad and set(got) == set(want) and meta["labels"].split(",") == w.meta["categories"] and "untrained" not in meta
ok = ok and "IMAGENET1K_V1" in meta["weights"] and meta["input_resize"] == "256" and meta["input_crop"] == "224" and meta["input_mean"] == "0.485,0.456,0.406"
m = torchvision.models.vit_b_16()
m.load_state_dict(want)
p = m.eval()(w.transforms()(Image.open(sys.argv[3]).convert("RGB"))[None]).softmax(-1)[0]
top = p.topk(2)
name = w.meta["categories"][top.indices[0]]
print(f"PyTorch: {int(top.indices[0])} {name} {100 * top.values[0]:.2f}% (next {100 * top.values[1]:.2f}%)")
line = open(sys.argv[4]).read().split(None, 2)
print("vit.h:", line)
sys.exit(not ok or int(line[1]) != int(top.indices[0]) or line[2].strip() != name)' "$W/vit_b_16.safetensors" "$CACHED" $IMG "$W/vit.txt" > "$W/out.txt" 2>&1
check "the cached weights, ImageNet's names and preprocessing; vit classify: PyTorch's top class by name" test $? -eq 0 -a ! -s "$W/err.txt"

# No cache and no network (a proxy nobody listens on): a message that says where to put the file.
TORCH_HOME="$PWD/$W/empty" https_proxy=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 \
  $PY tools/export.py torchvision:vit_b_16 "$W/x.safetensors" --weights IMAGENET1K_V1 > "$W/out.txt" 2>&1
check "no weights, no network: exit 2, what to download and where to put it" test $? -eq 2 -a ! -f "$W/x.safetensors" \
  -a -n "$(grep -F "cannot download https://download.pytorch.org/models/vit_b_16-c867db91.pth" "$W/out.txt")" \
  -a -n "$(grep -F "put vit_b_16-c867db91.pth at $PWD/$W/empty/hub/checkpoints/vit_b_16-c867db91.pth" "$W/out.txt")"
mkdir -p "$W/bad/hub/checkpoints" && head -c 100000 "$CACHED" > "$W/bad/hub/checkpoints/vit_b_16-c867db91.pth"
TORCH_HOME="$PWD/$W/bad" $PY tools/export.py torchvision:vit_b_16 "$W/x.safetensors" --weights IMAGENET1K_V1 > "$W/out.txt" 2>&1
check "a truncated cached file: exit 2, delete it" test $? -eq 2 -a -n "$(grep -F "cannot read $PWD/$W/bad/hub/checkpoints/vit_b_16-c867db91.pth" "$W/out.txt")" \
  -a -n "$(grep -F 'delete it' "$W/out.txt")"
$PY tools/export.py torchvision:vit_b_16 "$W/x.safetensors" --weights IMAGENET1K_V9 > "$W/out.txt" 2>&1
check "unknown weights: the names there are" test $? -eq 2 -a -n "$(grep -F 'vit_b_16 has IMAGENET1K_V1, IMAGENET1K_SWAG_E2E_V1' "$W/out.txt")"
$PY tools/export.py "$SMALL" "$W/x.safetensors" --weights IMAGENET1K_V1 > "$W/out.txt" 2>&1
check "--weights on a class with arguments: refused" test $? -eq 2 -a -n "$(grep -F "no pretrained weights for 'VisionTransformer'" "$W/out.txt")"

# Untrained: warned at export, recorded, repeated by vit info and classify.
# Debian's python3 (no venv, no einops) exports a torchvision ViT.
/usr/bin/python3 tools/export.py "$SMALL" "$W/untrained.safetensors" > "$W/out.txt" 2>&1
check "/usr/bin/python3: an untrained export warns" test $? -eq 0 \
  -a -n "$(grep -F "WARNING: $W/untrained.safetensors holds UNTRAINED weights (random initialisation, head all zeros)" "$W/out.txt")"
"$VIT" info "$W/untrained.safetensors" > "$W/out.txt" 2>&1
check "vit info: UNTRAINED" has "UNTRAINED: random initialisation, head all zeros"
"$VIT" classify "$W/untrained.safetensors" $IMG > /dev/null 2> "$W/out.txt"
check "vit classify: a warning" has "WARNING: $W/untrained.safetensors holds untrained weights"
$PY tools/export.py "$SMALL" "$W/seeded.safetensors" --seed 3 > "$W/out.txt" 2>&1 && "$VIT" info "$W/seeded.safetensors" >> "$W/out.txt" 2>&1
check "--seed: untrained too" has "UNTRAINED: random weights, --seed 3"
/usr/bin/python3 -c 'import einops' > /dev/null 2>&1 ||
  { /usr/bin/python3 tools/export.py reference:seed004.ViT:img_size=16 "$W/x.safetensors" > "$W/out.txt" 2>&1
    check "seed 004 without einops: exit 2, how to get it" test $? -eq 2 -a -n "$(grep -F 'need einops==0.8.2' "$W/out.txt")"; }

# The output's folder is made when missing (the README's timm_b16/model.safetensors),
# and one that cannot be made is refused before any model is built or downloaded.
/usr/bin/python3 tools/export.py "$SMALL" "$W/new/deeper/x.safetensors" > "$W/out.txt" 2>&1
check "an output folder that does not exist: made" test $? -eq 0 -a -f "$W/new/deeper/x.safetensors" \
  -a -n "$(grep -F "made the folder $W/new/deeper/" "$W/out.txt")"
: > "$W/file"
HF_HOME="$PWD/$W/empty" HF_HUB_OFFLINE=1 $PY tools/export.py timm:vit_base_patch16_224 "$W/file/model.safetensors" --pretrained > "$W/out.txt" 2>&1
check "an output folder that cannot be made: exit 2 before the model is built" test $? -eq 2 \
  -a -n "$(grep -F "cannot make the folder for $W/file/model.safetensors" "$W/out.txt")"

# --labels: one name a line, into the metadata.
printf 'cat\ndog\nsea otter\nhot-air balloon\n' > "$W/labels.txt"
$PY tools/export.py "$SMALL" "$W/labelled.safetensors" --seed 3 --labels "$W/labels.txt" > "$W/out.txt" 2>&1 &&
  "$VIT" classify "$W/labelled.safetensors" $IMG --top 4 >> "$W/out.txt" 2>&1
check "--labels: vit classify prints them" test -n "$(grep -F 'sea otter' "$W/out.txt")" -a -n "$(grep -F 'hot-air balloon' "$W/out.txt")"
printf 'cat\ndog\n' > "$W/short.txt"
$PY tools/export.py "$SMALL" "$W/x.safetensors" --labels "$W/short.txt" > "$W/out.txt" 2>&1
check "--labels: a count that is not the head's refused" test $? -eq 2 -a -n "$(grep -F '2 names (lines) for a head of 4 classes' "$W/out.txt")"
printf 'cat\ntabby, tabby cat\nx\ny\n' > "$W/comma.txt"
$PY tools/export.py "$SMALL" "$W/x.safetensors" --labels "$W/comma.txt" > "$W/out.txt" 2>&1
check "--labels: a comma refused in the metadata, with the alternatives" test $? -eq 2 -a -n "$(grep -F "class name 1 ('tabby, tabby cat') has a comma" "$W/out.txt")"
$PY tools/export.py "$SMALL" "$W/named.safetensors" --seed 3 --naming transformers --labels "$W/comma.txt" > "$W/out.txt" 2>&1 &&
  "$VIT" info "$W/named.safetensors" >> "$W/out.txt" 2>&1
check "--naming transformers: labels with commas in config.json, untrained in the metadata" \
  test -n "$(grep -F 'labels: cat, tabby, tabby cat, ... y' "$W/out.txt")" -a -n "$(grep -F 'UNTRAINED: random weights, --seed 3' "$W/out.txt")"

# timm:NAME --pretrained, where timm and huggingface_hub are importable (not
# Debian packages): seeded weights in the Hugging Face cache's layout stand
# in for the download; vit's top class is timm's (bilinear resize, as vit.h).
if $PY -c 'import timm, huggingface_hub' > /dev/null 2>&1; then
  HF=$PWD/$W/hf/hub/models--timm--vit_tiny_patch16_224.augreg_in21k_ft_in1k
  mkdir -p "$HF/snapshots/0" "$HF/refs" && printf 0 > "$HF/refs/main"  # $W/timm is made by export.py
  $PY -c '
import sys, torch, timm
sys.path.insert(0, "tools")
import export as E
torch.save(E.randomize(timm.create_model("vit_tiny_patch16_224"), 7).state_dict(), sys.argv[1])' "$HF/snapshots/0/pytorch_model.bin"
  HF_HOME=$PWD/$W/hf HF_HUB_OFFLINE=1 $PY tools/export.py timm:vit_tiny_patch16_224 "$W/timm/model.safetensors" --pretrained > "$W/out.txt" 2>&1 &&
    "$VIT" classify "$W/timm/model.safetensors" $IMG --top 1 > "$W/vit.txt" 2>> "$W/out.txt"
  check "timm --pretrained: exported with 1000 names" test $? -eq 0 -a -n "$(grep -F '1000 class names' "$W/out.txt")"
  $PY -c '
import sys, torch, timm
from PIL import Image
from timm.data import ImageNetInfo
m = timm.create_model("vit_tiny_patch16_224")
m.load_state_dict(torch.load(sys.argv[1]))
cfg = timm.data.resolve_data_config({}, model=m)
cfg["interpolation"] = "bilinear"
k = int(m.eval()(timm.data.create_transform(**cfg)(Image.open(sys.argv[2]).convert("RGB"))[None]).argmax())
name = ImageNetInfo().label_descriptions(detailed=False)[k]
line = open(sys.argv[3]).read().split(None, 2)
print("timm:", k, name, "vit.h:", line)
sys.exit(int(line[1]) != k or line[2].strip() != name)' "$HF/snapshots/0/pytorch_model.bin" $IMG "$W/vit.txt" > "$W/out.txt" 2>&1
  check "timm --pretrained: vit classify prints timm's top class by name" test $? -eq 0
else
  $PY tools/export.py timm:vit_tiny_patch16_224 "$W/x.safetensors" --pretrained > "$W/out.txt" 2>&1
  check "timm missing: exit 2, how to get it" test $? -eq 2 -a -n "$(grep -F 'need timm, which this Python cannot import' "$W/out.txt")"
  echo "(timm or huggingface_hub is not importable here: the --pretrained path was not run)"
fi

rm -f "$W/vit_b_16.safetensors"
summary export

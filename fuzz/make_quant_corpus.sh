#!/bin/sh
# Remakes fuzz/corpus/quant: fixture models as F32 (as they are), BF16 and
# I8 files (tools/export.py --from), each behind the byte fuzz_quant reads
# first (the input it feeds: 0 small, 1 +-3e38, 2 one 1e30, 3 1e-30..1e30).
# A file's dense weights of every type are packed at load, from memory not.
# Usage: fuzz/make_quant_corpus.sh [PYTHON]   (from the repository root)
set -eu
PY=${1:-build/venv/bin/python}
out=fuzz/corpus/quant
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$out" && mkdir -p "$out"
mode=0
for f in vit_tv vit_001 vit_004 block_tv mha_nn mha_sep mlp_gelu outlook_k5 sdsa_a cls002_a emsa_r2 aft_full_a; do
  for d in F32 BF16 I8; do
    if [ $d = F32 ]; then cp "tests/fixtures/$f.safetensors" "$tmp/$f.safetensors"
    else "$PY" tools/export.py --from "tests/fixtures/$f.safetensors" --dtype "$d" "$tmp/$f.safetensors" > /dev/null; fi
    printf "\\$(printf %03o $mode)" > "$out/${f}_$d"
    cat "$tmp/$f.safetensors" >> "$out/${f}_$d"
    mode=$(((mode + 1) % 4))
  done
done
echo "$(ls "$out" | wc -l) files in $out"

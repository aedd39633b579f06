#!/bin/sh
# bench/explain_pairs.c (what `make demo-explain` runs) on the shipped pairs
# model: the pointing game on a handful of test composites (exit 0, a row per
# method) and the demo's PNGs; its composites are tools/train_fashion.py's
# (the model's two top classes agree with PyTorch's count on the same ones);
# and the training code, on a few hundred items, gives the same weights twice
# (the model itself is not retrained).
# Usage: tests/explain_pairs.sh PROGRAM PYTHON WORKDIR   (from the repository root)
set -u
EX=$1 PY=$2 W=$3
M=models/pairs_vit.safetensors
. tests/lib.sh
rm -rf "$W" && mkdir -p "$W/data"
for f in t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  gzip -dc /usr/share/datasets/fashion-mnist/$f.gz > "$W/data/$f" || exit 1
done
N=12

# The pointing game on N composites, and composite 3 drawn.
"$EX" $M "$W/data" --count $N --show 3 --out "$W/demo" > "$W/out.txt" 2>&1
check "explain_pairs --count $N --show 3: exit 0" test $? -eq 0
rows=$(grep -cE "^[a-z-]+ +[0-9]+/$((2 * N)) +[01]\.[0-9]{3}$" "$W/out.txt")
check "a row per method, hits out of $((2 * N))" test "$rows" -eq 8
pngs=$(find "$W/demo" -name 'pair_3*.png' -size +100c | wc -l)
check "the demo's PNGs: the composite and one per class" test "$pngs" -eq 3

# Python's composites, the same model: the same count of composites with both classes on top.
c=$(sed -n "s/^$N test composites: both classes in the top 2: \([0-9]*\) .*/\1/p" "$W/out.txt")
$PY - "$M" $N "$c" > "$W/out.txt" 2>&1 <<'EOF'
import sys
sys.path.insert(0, "tools")
import torch
import train_fashion as T
from export import load_module
path, n, c = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
model, meta = load_module(path)
(_, _), (x, y) = T.load_data("/usr/share/datasets/fashion-mnist")
j, mean, std = T.test_partners(y)[:n], float(meta["input_mean"]), float(meta["input_std"])
with torch.no_grad():
    top = model((T.compose(x[:n], x[j]) - mean) / std).topk(2, 1).indices
both = int(((top == y[:n, None]).any(1) & (top == y[j][:, None]).any(1)).sum())
print(f"PyTorch: {both} of {n}, explain_pairs: {c}")
sys.exit(both != c)
EOF
check "composites as tools/train_fashion.py makes them: $c of $N both on top" test $? -eq 0

# The training code: 256 items, one epoch, twice: the same weights.
$PY - > "$W/out.txt" 2>&1 <<'EOF'
import sys
sys.path.insert(0, "tools")
import torch
import train_fashion as T
torch.set_num_threads(1)
(x, y), _ = T.load_data("/usr/share/datasets/fashion-mnist")
cfg = dict(T.MODELS["pairs"], norm=(0.143, 0.3))
runs = [T.train("pairs", cfg, (x[:256], y[:256]), 0, 1)[0].state_dict() for _ in range(2)]
same = all(torch.equal(runs[0][k], runs[1][k]) for k in runs[0])
print("the same weights" if same else "different weights")
sys.exit(not same)
EOF
check "train_fashion.py --models pairs: deterministic" test $? -eq 0

summary explain_pairs

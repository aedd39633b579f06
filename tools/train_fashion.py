"""Train vit.h's demo models on Fashion-MNIST and export them into models/.

    build/venv/bin/python tools/train_fashion.py [--models vit,sdsa,mlp,pairs] [--seed 0] [--threads 2]
        [--epochs N] [--data /usr/share/datasets/fashion-mnist] [--out models]

Models (tools/reference.py), each written to OUT/fashion_NAME.safetensors
(pairs: OUT/pairs_vit.safetensors, out of the fashion_* files that tests/run.sh
classifies as single 28x28 items):
    vit    seed001.VisionTransformer, 1 channel, 28x28, patch 7, hidden 64,
           4 heads, 4 layers, MLP 128; input (B, 1, 28, 28)
    sdsa   seed002.Model: scaled dot-product self-attention over the 16 7x7
           patches, ReLU, linear; input (B, 16, 49), patches in row-major
           order, each patch row-major (the seed's unfold)
    mlp    seed002.MLP, 784-784-10; input (B, 784), row-major. Stored as F16:
           as F32 it would be 2.5 MB
    pairs  seed001.VisionTransformer, 1 channel, 56x56, patch 7 (8x8 grid),
           hidden 64, 4 heads, 4 layers, MLP 128; input (B, 1, 56, 56): two
           items side by side (see PAIRS below), trained multi-label (binary
           cross-entropy on the 10 logits, the two classes positive)

PAIRS, the composites (bench/explain_pairs.c builds the test ones the same
way): a 56x56 image, zero but for two 28x28 Fashion-MNIST items of
different classes in rows 14..41, one in columns 0..27 (left), the other in
28..55 (right). Training pairs are drawn from the training set per epoch (a
permutation from --seed; a partner of the same class is replaced by the
next in the permutation). Test composite i (0..9999) has test image i on
the left and on the right test image j: j = (7919 * i + 4999) % 10000, then
j = (j + 1) % 10000 while label[j] == label[i]. Its metric, test_accuracy
in the metadata (described by test_metric): the fraction of the 10,000 test
composites whose two classes are the model's two highest logits.

Every input is x = (pixel / 255 - input_mean) / input_std, the mean and std
of the training pixels (pairs: of the training composites'), recorded in
the metadata with dataset, labels (class names in label order,
comma-separated), input_layout, test_accuracy (of the weights as stored, on
the 10,000 test images), train_seed, train_settings, train_seconds and
train_threads. vit.h ignores these; the demos read them. Also writes
OUT/README.md, a table made from the metadata of the files in OUT.

Deterministic on CPU for a given seed, torch build and thread count: all
randomness (init, shuffling, augmentation) comes from torch generators
seeded with --seed. OpenBLAS runs on 1 thread and PyTorch on --threads
(both pools at 2 fight over 2 cores and train ~2x slower). When other jobs
share the cores, 2 PyTorch threads can slow down 5-10x (each OpenMP
barrier waits for the descheduled thread): use --threads 1 there. Data: the
idx files of Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist).
--epochs N overrides every model's epochs (for a quick smoke run).
"""

import os

# Before torch is imported: OpenBLAS sizes its thread pool when it loads.
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import gzip  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import reference as R  # noqa: E402
from export import export_module, load_module, round_weights  # noqa: E402

LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
THREADS = 2  # default of --threads
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name -> what to build and how to train it. Augmentation, drawn per image:
# a random shift by up to `shift` pixels (zero padding), a horizontal flip.
MODELS = {
    "vit": dict(build=lambda: R.seed001.VisionTransformer(28, 7, 4, 4, 64, 128, 10, in_channels=1),
                arch="seed001 ViT: patch 7 (16 tokens + cls), hidden 64, 4 heads, 4 layers, MLP 128 (ReLU)",
                layout="image", epochs=30, batch=128, lr=2e-3, wd=0.05, warmup=1, smoothing=0.0, shift=0,
                flip=True, dtype="F32"),
    "sdsa": dict(build=R.seed002.Model,
                 arch="seed002 attention classifier: SDSA over 16 patches of 7x7, ReLU, linear 784-10",
                 layout="patches", epochs=15, batch=128, lr=2e-3, wd=0.01, warmup=1, smoothing=0.0, shift=0,
                 flip=False, dtype="F32"),
    "mlp": dict(build=R.seed002.MLP, arch="seed002 MLP baseline: 784-784-10, ReLU",
                layout="flat", epochs=15, batch=128, lr=1e-3, wd=0.01, warmup=1, smoothing=0.0, shift=0,
                flip=False, dtype="F16"),
    # Two items per image (PAIRS); an epoch is 60,000 composites (each training item twice). Flips are per item.
    "pairs": dict(build=lambda: R.seed001.VisionTransformer(56, 7, 4, 4, 64, 128, 10, in_channels=1),
                  arch="seed001 ViT on 56x56 pairs: patch 7 (64 tokens + cls), hidden 64, 4 heads, 4 layers, MLP 128",
                  layout="pairs", epochs=3, batch=128, lr=2e-3, wd=0.05, warmup=0.1, smoothing=0.0, shift=0,
                  flip=True, dtype="F32"),
}
LAYOUTS = {"image": "(B,1,28,28)", "patches": "(B,16,49): 4x4 patches of 7x7, row-major, each row-major",
           "flat": "(B,784) row-major",
           "pairs": "(B,1,56,56): two 28x28 items side by side in rows 14..41, zero elsewhere"}
METRICS = {"pairs": "both classes are the top 2 logits, 10,000 test composites"}


def model_path(out, name):
    return os.path.join(out, "pairs_vit.safetensors" if name == "pairs" else f"fashion_{name}.safetensors")


def read_idx(path):
    """An idx(.gz) file as a uint8 array of its declared shape."""
    with gzip.open(path, "rb") as f:
        blob = f.read()
    ndim = blob[3]
    shape = [int.from_bytes(blob[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(blob, np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load_data(root):
    def pair(split):
        x = read_idx(os.path.join(root, f"{split}-images-idx3-ubyte.gz"))
        y = read_idx(os.path.join(root, f"{split}-labels-idx1-ubyte.gz"))
        return torch.from_numpy(x.astype(np.float32) / 255).unsqueeze(1), torch.from_numpy(y.astype(np.int64))
    return pair("train"), pair("t10k")


def to_layout(x, layout):
    """(B, 1, 28, 28) normalised images -> the model's input."""
    if layout == "patches":  # the seed's image.unfold(0, 7, 7).unfold(1, 7, 7).view(-1, 49), per image
        return x[:, 0].unfold(1, 7, 7).unfold(2, 7, 7).reshape(x.shape[0], 16, 49)
    if layout == "flat":
        return x.reshape(x.shape[0], 784)
    return x


def compose(left, right):
    """Two (B, 1, 28, 28) batches of items -> (B, 1, 56, 56) composites (PAIRS)."""
    out = left.new_zeros(left.shape[0], 1, 56, 56)
    out[:, :, 14:42, :28], out[:, :, 14:42, 28:] = left, right
    return out


def test_partners(y):
    """PAIRS' partner j of each test image i (the right item of composite i)."""
    y, n = y.tolist(), len(y)
    partners = []
    for i in range(n):
        j = (7919 * i + 4999) % n
        while y[j] == y[i]:
            j = (j + 1) % n
        partners.append(j)
    return torch.tensor(partners)


def train_partners(y, g):
    """An epoch's partners: a permutation from g, a same-class partner replaced by the next in it."""
    perm = torch.randperm(len(y), generator=g)
    partner = perm.clone()
    shift = 0
    while True:
        clash = y[partner] == y
        if not clash.any():
            return partner
        shift += 1
        partner[clash] = perm[(torch.nonzero(clash)[:, 0] + shift) % len(y)]


def pairs_targets(ya, yb):
    """Multi-label targets (B, 10): 1 at both classes."""
    t = torch.zeros(len(ya), 10)
    t[torch.arange(len(ya)), ya] = 1
    t[torch.arange(len(yb)), yb] = 1
    return t


def augment(x, shift, flip, g):
    """Random shift in [-shift, shift]^2 (zero padding), then (if flip) a horizontal flip, per image."""
    b = x.shape[0]
    if shift == 0 and not flip:
        return x
    pad = F.pad(x, (shift,) * 4)
    dy, dx = (torch.randint(0, 2 * shift + 1, (b,), generator=g) for _ in range(2))
    rows = (dy[:, None] + torch.arange(28))[:, None, :, None]  # (B, 1, 28, 1)
    cols = (dx[:, None] + torch.arange(28))[:, None, None, :]  # (B, 1, 1, 28)
    x = pad[torch.arange(b)[:, None, None, None], torch.zeros(1, 1, 1, 1, dtype=torch.long), rows, cols]
    if not flip:
        return x
    flipped = torch.rand(b, generator=g) < 0.5
    return torch.where(flipped[:, None, None, None], x.flip(3), x)


def accuracy(model, x, y, cfg):
    """Top-1 accuracy; for pairs, x holds the test items in [0, 1] and y their labels (PAIRS' metric)."""
    model.eval()
    layout = cfg["layout"]
    if layout == "pairs":
        j, (mean, std) = test_partners(y), cfg["norm"]
        with torch.no_grad():
            top = torch.cat([model((compose(x[i], x[j[i]]) - mean) / std).topk(2, 1).indices
                             for i in torch.arange(len(x)).split(500)])
        hits = ((top == y[:, None]).any(1) & (top == y[j][:, None]).any(1))
        return hits.double().mean().item()
    with torch.no_grad():
        pred = torch.cat([model(to_layout(xb, layout)).argmax(1) for xb in x.split(1000)])
    return (pred == y).double().mean().item()


def train(name, cfg, train_set, seed, epochs):
    """Train one model; returns (model, train seconds, settings string). For pairs, train_set's images are
    items in [0, 1] and each batch is composed (PAIRS), augmented per item, then normalised with cfg["norm"]."""
    x, y = train_set
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    model = cfg["build"]()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["wd"])
    steps_per_epoch = math.ceil(len(x) / cfg["batch"])
    total, warm = epochs * steps_per_epoch, cfg["warmup"] * steps_per_epoch

    def lr_at(step):  # linear warm-up, then cosine to 0
        if step < warm:
            return (step + 1) / warm
        return 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    start = time.perf_counter()
    pairs = cfg["layout"] == "pairs"
    for epoch in range(epochs):
        model.train()
        partner = train_partners(y, g) if pairs else None
        order = torch.randperm(len(x), generator=g)
        loss_sum, correct = 0.0, 0
        for idx in order.split(cfg["batch"]):
            xb = augment(x[idx], cfg["shift"], cfg["flip"], g)
            if pairs:  # compose, normalise; a hit: both classes are the top 2 logits
                right = augment(x[partner[idx]], cfg["shift"], cfg["flip"], g)
                out = model((compose(xb, right) - cfg["norm"][0]) / cfg["norm"][1])
                loss = F.binary_cross_entropy_with_logits(out, pairs_targets(y[idx], y[partner[idx]]))
                top = out.topk(2, 1).indices
                hits = (top == y[idx][:, None]).any(1) & (top == y[partner[idx]][:, None]).any(1)
            else:
                out = model(to_layout(xb, cfg["layout"]))
                loss = F.cross_entropy(out, y[idx], label_smoothing=cfg["smoothing"])
                hits = out.argmax(1) == y[idx]
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item() * len(idx)
            correct += hits.sum().item()
        print(f"{name}: epoch {epoch + 1}/{epochs}: loss {loss_sum / len(x):.4f}, train acc {correct / len(x):.4f}, "
              f"{time.perf_counter() - start:.0f} s", flush=True)
    seconds = time.perf_counter() - start
    settings = (f"AdamW lr={cfg['lr']:g} wd={cfg['wd']:g}, batch {cfg['batch']}, {epochs} epochs, "
                f"warmup {cfg['warmup']} epoch + cosine, label smoothing {cfg['smoothing']:g}, "
                + (" + ".join([f"shift {cfg['shift']}px"] * bool(cfg["shift"]) + ["hflip"] * cfg["flip"]) or "no aug")
                + (", binary cross-entropy (2 positives)" if pairs else "")
                + f", torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    return model.eval(), seconds, settings


def write_readme(out):
    """OUT/README.md: one row per model file in OUT, from its metadata."""
    rows = []
    for name in MODELS:
        path = model_path(out, name)
        if not os.path.exists(path):
            continue
        module, meta = load_module(path)
        params = sum(p.numel() for p in module.parameters())
        metric = " (both classes the top 2)" if name in METRICS else ""
        rows.append(f"| `{os.path.basename(path)}` | {MODELS[name]['arch']} | {params:,} | "
                    f"{MODELS[name]['dtype']}, {os.path.getsize(path) / 1024:.0f} KiB | "
                    f"{float(meta['test_accuracy']):.2%}{metric} | "
                    f"{float(meta['train_seconds']) / 60:.1f} min | "
                    f"`build/venv/bin/python tools/train_fashion.py --models {name} --threads {meta['train_threads']}` |")
    text = f"""# Trained demo models

Fashion-MNIST classifiers for vit.h's demos, trained on the CPU by
`tools/train_fashion.py` (Debian's PyTorch, seed 0) from the idx files of
Debian's `dataset-fashion-mnist` (/usr/share/datasets/fashion-mnist). Test
accuracy is on the 10,000 test images, with the weights exactly as stored;
for the pairs model, on the 10,000 test composites (below), the fraction
whose two classes are its two highest logits. This file is written by the
same script.

| file | architecture | params | stored | test accuracy | training time | retrain |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Each file's `__metadata__` carries, besides vit.h's config: `dataset`,
`labels` (class names in label order, comma-separated), `input_mean` and
`input_std`, `input_layout`, `test_accuracy`, `train_seed`,
`train_settings`, `train_seconds` and `train_threads`; the pairs model
also `test_metric`, what its `test_accuracy` counts.

Input: x = (pixel / 255 - input_mean) / input_std, then shaped as
`input_layout` says: the ViT takes images (B,1,28,28); the pairs ViT takes
composites (B,1,56,56), two items of different classes side by side in
rows 14..41, zero elsewhere (PAIRS in tools/train_fashion.py says how the
training pairs and the test composites are drawn; bench/explain_pairs.c
builds the same test composites); the attention
classifier takes the 16 7x7 patches (B,16,49), patches in row-major order,
each patch row-major (`image.unfold(0,7,7).unfold(1,7,7).view(16,49)`, as
in seed 002); the MLP takes (B,784).

The MLP's 623,290 weights are stored as F16 (as F32 the file would be
2.4 MiB); its accuracy is that of the F16 weights.

Results are deterministic for a given seed, torch build and thread count,
so the commands above rewrite the same files (train_seconds aside).
Training times are wall times on a 2-core machine that other jobs shared.
The pairs model was trained with OpenBLAS 0.3.21 as PyTorch's BLAS
(Debian's libopenblas0-pthread, extracted and put first on
LD_LIBRARY_PATH, where that machine's libblas.so.3 was the reference BLAS,
about 8x slower); another BLAS may round differently. Its training got
about half a core (its CPU time was about half its wall time).
"""
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated subset of {','.join(MODELS)}")
    parser.add_argument("--seed", type=int, default=0, help="seed of init, shuffling and augmentation (default 0)")
    parser.add_argument("--epochs", type=int, help="override every model's epochs (smoke runs)")
    parser.add_argument("--threads", type=int, default=THREADS,
                        help=f"PyTorch threads (default {THREADS}); on a busy machine 1 is safer (see above)")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist", help="directory of the idx .gz files")
    parser.add_argument("--out", default=os.path.join(ROOT, "models"), help="default: models/")
    args = parser.parse_args(argv)
    names = args.models.split(",")
    if any(n not in MODELS for n in names):
        parser.error(f"--models: choose from {','.join(MODELS)}")
    torch.set_num_threads(args.threads)
    try:
        (x_train, y_train), (x_test, y_test) = load_data(args.data)
    except OSError as e:
        parser.exit(2, f"train_fashion.py: {e} (hint: apt-get install dataset-fashion-mnist)\n")
    # Pixel mean and std, as recorded, used as recorded: of the training items, or (pairs) of the
    # composites they make, whose other half is zero.
    m1, m2 = x_train.mean().item(), x_train.pow(2).mean().item()
    item_norm = round(m1, 6), round(x_train.std().item(), 6)
    pairs_norm = round(m1 / 2, 6), round(math.sqrt(m2 / 2 - m1 * m1 / 4), 6)
    os.makedirs(args.out, exist_ok=True)

    for name in names:
        cfg = MODELS[name]
        pairs = cfg["layout"] == "pairs"
        (mean, std) = cfg["norm"] = pairs_norm if pairs else item_norm
        # Composites are normalised as they are made; single items here.
        train_x, test_x = (x_train, x_test) if pairs else ((x_train - mean) / std, (x_test - mean) / std)
        model, seconds, settings = train(name, cfg, (train_x, y_train), args.seed, args.epochs or cfg["epochs"])
        if cfg["dtype"] != "F32":
            round_weights(model, cfg["dtype"])  # the accuracy recorded is that of the stored weights
        acc = accuracy(model, test_x, y_test, cfg)
        path = model_path(args.out, name)
        extra = dict(dataset="fashion-mnist pairs (tools/train_fashion.py: PAIRS)" if pairs else "fashion-mnist",
                     labels=",".join(LABELS), input_mean=mean, input_std=std, input_layout=LAYOUTS[cfg["layout"]],
                     test_accuracy=round(acc, 4), train_seed=args.seed, train_settings=settings,
                     train_seconds=round(seconds), train_threads=args.threads)
        if name in METRICS:
            extra["test_metric"] = METRICS[name]
        export_module(model, path, dtype=cfg["dtype"], extra=extra)
        # What the file holds must score the same: reload it and re-evaluate.
        reloaded = accuracy(load_module(path)[0], test_x, y_test, cfg)
        if reloaded != acc:
            sys.exit(f"train_fashion.py: {path}: reloaded accuracy {reloaded} != {acc}")
        print(f"wrote {path}: test accuracy {acc:.4f}, {os.path.getsize(path)} bytes, trained in {seconds:.0f} s",
              flush=True)
    write_readme(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

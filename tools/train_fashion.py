"""Train vit.h's demo models on Fashion-MNIST and export them into models/.

    build/venv/bin/python tools/train_fashion.py [--models vit,sdsa,mlp] [--seed 0] [--threads 2]
        [--epochs N] [--data /usr/share/datasets/fashion-mnist] [--out models]

Models (tools/reference.py), each written to OUT/fashion_NAME.safetensors:
    vit    seed001.VisionTransformer, 1 channel, 28x28, patch 7, hidden 64,
           4 heads, 4 layers, MLP 128; input (B, 1, 28, 28)
    sdsa   seed002.Model: scaled dot-product self-attention over the 16 7x7
           patches, ReLU, linear; input (B, 16, 49), patches in row-major
           order, each patch row-major (the seed's unfold)
    mlp    seed002.MLP, 784-784-10; input (B, 784), row-major. Stored as F16:
           as F32 it would be 2.5 MB

Every input is x = (pixel / 255 - input_mean) / input_std, the mean and std
of the training pixels, recorded in the metadata with dataset, labels (class
names in label order, comma-separated), input_layout, test_accuracy (of the
weights as stored, on the 10,000 test images), train_seed, train_settings,
train_seconds and train_threads. vit.h ignores these; the demos read them.
Also writes OUT/README.md, a table made from the metadata of the files in OUT.

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
}
LAYOUTS = {"image": "(B,1,28,28)", "patches": "(B,16,49): 4x4 patches of 7x7, row-major, each row-major",
           "flat": "(B,784) row-major"}


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


def accuracy(model, x, y, layout):
    model.eval()
    with torch.no_grad():
        pred = torch.cat([model(to_layout(xb, layout)).argmax(1) for xb in x.split(1000)])
    return (pred == y).double().mean().item()


def train(name, cfg, train_set, seed, epochs):
    """Train one model; returns (model, train seconds, settings string)."""
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
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(x), generator=g)
        loss_sum, correct = 0.0, 0
        for idx in order.split(cfg["batch"]):
            xb = augment(x[idx], cfg["shift"], cfg["flip"], g)
            out = model(to_layout(xb, cfg["layout"]))
            loss = F.cross_entropy(out, y[idx], label_smoothing=cfg["smoothing"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item() * len(idx)
            correct += (out.argmax(1) == y[idx]).sum().item()
        print(f"{name}: epoch {epoch + 1}/{epochs}: loss {loss_sum / len(x):.4f}, train acc {correct / len(x):.4f}, "
              f"{time.perf_counter() - start:.0f} s", flush=True)
    seconds = time.perf_counter() - start
    settings = (f"AdamW lr={cfg['lr']:g} wd={cfg['wd']:g}, batch {cfg['batch']}, {epochs} epochs, "
                f"warmup {cfg['warmup']} epoch + cosine, label smoothing {cfg['smoothing']:g}, "
                + (" + ".join([f"shift {cfg['shift']}px"] * bool(cfg["shift"]) + ["hflip"] * cfg["flip"]) or "no aug")
                + f", torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    return model.eval(), seconds, settings


def write_readme(out):
    """OUT/README.md: one row per fashion_*.safetensors, from its metadata."""
    rows = []
    for name in MODELS:
        path = os.path.join(out, f"fashion_{name}.safetensors")
        if not os.path.exists(path):
            continue
        module, meta = load_module(path)
        params = sum(p.numel() for p in module.parameters())
        rows.append(f"| `{os.path.basename(path)}` | {MODELS[name]['arch']} | {params:,} | "
                    f"{MODELS[name]['dtype']}, {os.path.getsize(path) / 1024:.0f} KiB | {float(meta['test_accuracy']):.2%} | "
                    f"{float(meta['train_seconds']) / 60:.1f} min | "
                    f"`build/venv/bin/python tools/train_fashion.py --models {name} --threads {meta['train_threads']}` |")
    text = f"""# Trained demo models

Fashion-MNIST classifiers for vit.h's demos, trained on the CPU by
`tools/train_fashion.py` (Debian's PyTorch, seed 0) from the idx files of
Debian's `dataset-fashion-mnist` (/usr/share/datasets/fashion-mnist). Test
accuracy is on the 10,000 test images, with the weights exactly as stored.
This file is written by the same script.

| file | architecture | params | stored | test accuracy | training time | retrain |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Each file's `__metadata__` carries, besides vit.h's config: `dataset`,
`labels` (class names in label order, comma-separated), `input_mean` and
`input_std`, `input_layout`, `test_accuracy`, `train_seed`,
`train_settings`, `train_seconds` and `train_threads`.

Input: x = (pixel / 255 - input_mean) / input_std, then shaped as
`input_layout` says: the ViT takes images (B,1,28,28); the attention
classifier takes the 16 7x7 patches (B,16,49), patches in row-major order,
each patch row-major (`image.unfold(0,7,7).unfold(1,7,7).view(16,49)`, as
in seed 002); the MLP takes (B,784).

The MLP's 623,290 weights are stored as F16 (as F32 the file would be
2.4 MiB); its accuracy is that of the F16 weights.

Results are deterministic for a given seed, torch build and thread count,
so the commands above rewrite the same files (train_seconds aside).
Training times are wall times on a 2-core machine that other jobs shared.
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
    mean, std = round(x_train.mean().item(), 6), round(x_train.std().item(), 6)  # as recorded, used as recorded
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std
    os.makedirs(args.out, exist_ok=True)

    for name in names:
        cfg = MODELS[name]
        model, seconds, settings = train(name, cfg, (x_train, y_train), args.seed, args.epochs or cfg["epochs"])
        if cfg["dtype"] != "F32":
            round_weights(model, cfg["dtype"])  # the accuracy recorded is that of the stored weights
        acc = accuracy(model, x_test, y_test, cfg["layout"])
        path = os.path.join(args.out, f"fashion_{name}.safetensors")
        export_module(model, path, dtype=cfg["dtype"], extra=dict(
            dataset="fashion-mnist", labels=",".join(LABELS), input_mean=mean, input_std=std,
            input_layout=LAYOUTS[cfg["layout"]], test_accuracy=round(acc, 4), train_seed=args.seed,
            train_settings=settings, train_seconds=round(seconds), train_threads=args.threads))
        # What the file holds must score the same: reload it and re-evaluate.
        reloaded = accuracy(load_module(path)[0], x_test, y_test, cfg["layout"])
        if reloaded != acc:
            sys.exit(f"train_fashion.py: {path}: reloaded accuracy {reloaded} != {acc}")
        print(f"wrote {path}: test accuracy {acc:.4f}, {os.path.getsize(path)} bytes, trained in {seconds:.0f} s",
              flush=True)
    write_readme(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

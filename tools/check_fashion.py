"""vit.h's Fashion-MNIST predictions against PyTorch's, image by image.

    build/venv/bin/python tools/check_fashion.py MODEL.safetensors PREDS.npy [--data DIR]

PREDS.npy is what `build/examples/04_fashion MODEL DIR --preds PREDS.npy`
writes: vit.h's predicted class for each of the 10,000 test images. This
rebuilds the model in PyTorch (tools/export.py load_module), feeds it the
same inputs (x = (pixel / 255 - input_mean) / input_std, shaped by the
file's input_layout), and exits non-zero unless every argmax is equal.
"""

import argparse
import gzip
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


def test_images(data):
    with gzip.open(os.path.join(data, "t10k-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(data, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return images, labels


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("preds")
    ap.add_argument("--data", default=DATA)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model, meta = export.load_module(args.model)
    images, labels = test_images(args.data)
    x = (images.astype(np.float32) / 255 - float(meta.get("input_mean", 0))) / float(meta.get("input_std", 1))
    layout = meta.get("input_layout", "")
    x = torch.from_numpy(x)
    if meta["kind"] == "vit":
        x = x.reshape(-1, 1, 28, 28)
    elif meta["kind"] == "mlp":
        x = x.reshape(-1, 784)
    else:  # 16 patches of 7x7, as seed 002's unfold
        x = x.unfold(1, 7, 7).unfold(2, 7, 7).reshape(-1, 16, 49)
    with torch.no_grad():
        torch_preds = torch.cat([model(x[i:i + 500]).argmax(1) for i in range(0, len(x), 500)]).numpy()
    vit_preds = np.load(args.preds).astype(np.int64)
    differ = np.flatnonzero(torch_preds != vit_preds)
    print(f"{os.path.basename(args.model)} ({layout or meta['kind']}): PyTorch accuracy {np.mean(torch_preds == labels):.2%}, "
          f"vit.h accuracy {np.mean(vit_preds == labels):.2%}, {len(differ)} of {len(labels)} predictions differ")
    if len(differ):
        print("first differing images:", differ[:10].tolist())
    return 1 if len(differ) or len(vit_preds) != len(labels) else 0


if __name__ == "__main__":
    sys.exit(main())

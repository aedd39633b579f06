#!/usr/bin/env python3
"""The page's bundled images: the first Fashion-MNIST test image of each
class as a 28x28 grey PNG, and samples.json naming them with their true
labels (from the model file's "labels" metadata). Standard library only.

    make_samples.py DATASET_DIR MODEL.safetensors OUT_DIR
DATASET_DIR holds Debian's gzip'd idx files (/usr/share/datasets/fashion-mnist).
"""
import gzip
import json
import os
import struct
import sys
import zlib


def read_idx(path, magic):
    with gzip.open(path, "rb") as f:
        data = f.read()
    if struct.unpack(">I", data[:4])[0] != magic:
        sys.exit(f"{path}: not an idx file with magic {magic:#x}")
    return data


def png_grey(pixels, w, h):
    """An 8-bit greyscale PNG of h rows of w bytes, no filtering."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    rows = b"".join(b"\0" + pixels[y * w:(y + 1) * w] for y in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def model_labels(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        meta = json.loads(f.read(n)).get("__metadata__", {})
    return meta["labels"].split(",")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    data_dir, model, out = sys.argv[1:]
    images = read_idx(os.path.join(data_dir, "t10k-images-idx3-ubyte.gz"), 0x803)[16:]
    truth = read_idx(os.path.join(data_dir, "t10k-labels-idx1-ubyte.gz"), 0x801)[8:]
    labels = model_labels(model)
    os.makedirs(out, exist_ok=True)
    samples = []
    for cls in range(len(labels)):
        i = truth.index(cls)
        name = f"fashion_{i:04d}.png"
        with open(os.path.join(out, name), "wb") as f:
            f.write(png_grey(images[i * 784:(i + 1) * 784], 28, 28))
        samples.append({"file": name, "index": i, "class": cls, "label": labels[cls]})
    samples.sort(key=lambda s: s["index"])
    with open(os.path.join(out, "samples.json"), "w") as f:
        json.dump(samples, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

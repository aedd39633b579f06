"""BF16 and I8 files against F32: logits' relative L2 error, or Fashion-MNIST predictions' agreement and accuracy.

    check_precision.py logits REF.npy GOT.npy --max-rel-l2 E
    check_precision.py preds F32.npy GOT.npy --min-agree A --max-drop D [--data DIR]

logits: ||GOT - REF|| / ||REF|| over the whole array must be <= E.
preds: the predicted classes of the 10,000 test images (what
`04_fashion MODEL DIR --preds` writes) must agree with the F32 model's on a
fraction >= A, and the accuracy may be at most D points (of 100) below the
F32 model's. Prints the numbers either way; exits 1 when a bound fails.
"""

import argparse
import gzip
import os
import sys

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    lg = sub.add_parser("logits")
    lg.add_argument("ref")
    lg.add_argument("got")
    lg.add_argument("--max-rel-l2", type=float, required=True)
    pr = sub.add_parser("preds")
    pr.add_argument("ref")
    pr.add_argument("got")
    pr.add_argument("--min-agree", type=float, required=True)
    pr.add_argument("--max-drop", type=float, required=True)
    pr.add_argument("--data", default=DATA)
    args = ap.parse_args(argv)
    ref, got = np.load(args.ref).astype(np.float64), np.load(args.got).astype(np.float64)
    if args.what == "preds" and got.ndim == 1 and got.size < ref.size:
        ref = ref[:got.size]  # got covers the first images only
    if ref.shape != got.shape:
        print(f"shapes differ: {ref.shape} and {got.shape}")
        return 1
    if args.what == "logits":
        err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
        same = float(np.mean(ref.reshape(-1, ref.shape[-1]).argmax(-1) == got.reshape(-1, got.shape[-1]).argmax(-1)))
        print(f"relative L2 {err:.3g} (bound {args.max_rel_l2:g}), top-1 the same on {same:.0%} of the rows")
        return int(not err <= args.max_rel_l2)
    with gzip.open(os.path.join(args.data, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.float64)
    labels = labels[:ref.size]  # a run over the first N images (04_fashion --count N)
    if labels.shape != ref.shape:
        print(f"{labels.size} labels for {ref.size} predictions")
        return 1
    agree = float(np.mean(ref == got))
    acc_ref, acc = 100 * float(np.mean(ref == labels)), 100 * float(np.mean(got == labels))
    print((f"first {ref.size} images: " if ref.size < 10000 else "") + f"agreement {agree:.2%} (bound {args.min_agree:.2%}), accuracy {acc:.2f}% against F32's {acc_ref:.2f}% "
          f"(drop bound {args.max_drop:g} points)")
    return int(not (agree >= args.min_agree and acc_ref - acc <= args.max_drop))


if __name__ == "__main__":
    sys.exit(main())

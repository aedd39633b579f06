"""The polynomial that vit__v_exp2 evaluates: 2^f ~ 1 + c1 f + ... + c6 f^6 on |f| <= 1/2.

    fit_exp2.py            prints c6 .. c1 as vit.h writes them, and their error in float32 arithmetic
    fit_exp2.py --check    also evaluates vit.h's coefficients the same way: exits 1 past 1.5 ulp (9e-8)

The fit: (2^f - 1) / f = c1 + c2 f + ... + c6 f^5 by least squares on Chebyshev
nodes, weighted by 1 / 2^f (relative error), then reweighted each round towards
the points of largest error (which moves a least-squares fit towards the
minimax one). Degree 6: 2e-9 relative in exact arithmetic, so float32's
roundings in Horner's rule (1.3 ulp at worst) are all that remain; degree 5
would leave 1e-7 of its own.
"""

import argparse
import re
import sys

import numpy as np

DEG, ROUNDS = 6, 60


def fit():
    f = np.cos(np.linspace(0.0, np.pi, 4001)) * 0.5
    y = 2.0**f
    a = np.vstack([f**k for k in range(1, DEG + 1)]).T
    w = np.ones_like(f)
    for _ in range(ROUNDS):
        rw = w / y
        c = np.linalg.lstsq(a * rw[:, None], (y - 1.0) * rw, rcond=None)[0]
        err = (1.0 + a @ c - y) / y
        w = w * (1.0 + 50.0 * np.abs(err) / np.abs(err).max())
        w /= w.mean()
    return c.astype(np.float32)  # c1 .. c6


def exp2_32(c, f):
    """2^f as vit__v_exp2 computes it, in float32 with fused multiply-adds, Horner's rule from c6."""
    f = f.astype(np.float32)
    fd = f.astype(np.float64)
    y = np.full_like(f, c[-1])
    for k in list(c[-2::-1]) + [np.float32(1.0)]:
        y = (y.astype(np.float64) * fd + np.float64(k)).astype(np.float32)
    return y


def worst(c):
    f = np.linspace(-0.5, 0.5, 400001).astype(np.float32)
    t = 2.0 ** f.astype(np.float64)
    return (np.abs(exp2_32(c, f).astype(np.float64) - t) / t).max()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the coefficients in vit.h")
    ap.add_argument("--header", default="vit.h")
    args = ap.parse_args()
    c = fit()
    print("c6 .. c1:", ", ".join("%.17gf" % v for v in c[::-1]))
    e = worst(c)
    print("max relative error in float32 arithmetic %.2e (%.2f ulp)" % (e, e / 2.0**-24))
    if e > 9e-8:
        print("the fit is worse than vit.h's comment says")
        return 1
    if args.check:  # vit.h's own coefficients (a refit may differ in its last bits with another LAPACK)
        src = open(args.header).read()
        body = src[src.index("static VIT__INLINE vit__vf vit__v_exp2(vit__vf x) {") :]
        body = body[: body.index("\n}\n")]
        vals = [np.float32(v.rstrip("f")) for v in re.findall(r"vit__v_set1\(([-0-9.e+]+f)\)", body)]
        # in vit.h's order: the clamp, the rounding constant (twice, the branch without AVX-512), c6 .. c1, 1
        poly = [v for v in vals if v not in (np.float32(-126.0), np.float32(12583039.0))]
        if len(poly) != DEG + 1 or poly[-1] != 1.0:
            print("vit.h's vit__v_exp2 is not the degree-%d polynomial its comment describes" % DEG)
            return 1
        hc = np.array(poly[:-1][::-1], dtype=np.float32)  # c1 .. c6
        eh = worst(hc)
        print("vit.h's coefficients: max relative error %.2e" % eh)
        if eh > 9e-8:
            print("vit.h's vit__v_exp2 is not the fit its comment describes")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

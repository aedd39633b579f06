"""The tables vit__v_gelu and vit__v_gelu_i8h evaluate on AVX-512: erf(a / sqrt2) / 2 as a cubic in each of 32
intervals of a = |x|, and erf(sqrt2 b) as a quadratic about each of 32 points of b = |x| / 2.

    fit_gelu.py            prints the tables as vit.h writes them (vit__gelu_tab, vit__gelu_i8_tab), and GELU's
                           error in float32
    fit_gelu.py --check    also evaluates vit.h's tables the same way: exits 1 past the bounds below

GELU(x) = x/2 + |x| E(|x|), E(a) = erf(a / sqrt2) / 2. On AVX-512, E is a cubic in u, the position within
one of 32 intervals of 3/16 from 0 to 6 (s = 16/3 min(a, 6 - ulp), i = floor(s), u = s - i), its four
coefficients looked up by i with one two-register permutation each (vpermi2ps): 16 operations a vector
where the rational erf of fit_erf.py takes 25, 11 of them multiply-adds on the two FMA pipes. The last
interval is the constant 1/2 (erf(5.8125 / sqrt2) is 1 - 6e-9), so GELU is exactly 0 below -5.8125 (x is
first raised to -6: -inf gives 0, NaN stays NaN) and exactly x above 5.8125.

The I8 products' GELU (vit__v_gelu_i8h, fc1's finish, whose outputs fc2 rounds to 8 bits) takes h = x/2 (the
finish's scale and bias halved give it exactly) and returns h + |h| E2(|h|), E2(b) = erf(sqrt2 b): a quadratic
about the nearest of 32 points 1/8 apart in b = |h| (1/4 in |x|; s = min(b, 31/8), s + 1.5 2^20 rounds s to
them, its low bits i, which vpermt2ps takes as they are, u = s - i/8 in [-1/16, 1/16]; the last point the
constant 1, so GELU is x above 7.6875 and 0 below -7.6875 (h is first raised to -3: -inf gives 0, NaN stays
NaN)): no multiply before the lookups, three multiply-adds, each a slot of the products' vpdpbusd pipes where
the finish runs beside them; within BOUND_I8 of GELU, a 20th of an 8-bit step of a hidden row's range of 0.1 or
more.

Each fit: least squares over Chebyshev nodes, reweighted by the square root of the previous round's
error (Lawson's reweighting, towards the minimax fit); coefficients rounded to float32.
"""

import argparse
import math
import re
import sys

import numpy as np

WIDTH, N, DEG, ROUNDS = 0.1875, 32, 3, 30
BOUND = 3e-7  # max |GELU error| / max(1, |x|) in float32 (x/2 + a E cancels where x < 0: a few ulps of 1)
DEG_I8, BOUND_I8, STEP_I8 = 2, 2e-5, 0.125  # STEP_I8: the points' spacing in |h| = |x|/2


def half_erf(a):
    return np.array([math.erf(v / math.sqrt(2.0)) / 2.0 for v in np.atleast_1d(a)])


def fit():
    tab = np.zeros((DEG + 1, N))
    tab[0, N - 1] = 0.5
    m = 400
    s = (1.0 - np.cos(np.pi * (np.arange(m) + 0.5) / m)) / 2.0
    powers = np.vander(s, DEG + 1, increasing=True)
    for i in range(N - 1):
        y = half_erf((i + s) * WIDTH)
        w = np.ones(m)
        for _ in range(ROUNDS):
            c = np.linalg.lstsq(powers * w[:, None], y * w, rcond=None)[0]
            r = np.abs(powers @ c - y)
            w = w * np.sqrt(r / r.max() + 1e-3)
            w /= w.max()
        tab[:, i] = c
    return tab.astype(np.float32)


def fit_i8():
    """The quadratics in u about b = i/8, i = 0..30, on u in [-1/16, 1/16] ([0, 1/16] for i = 0: b >= 0) of
    E2(b) = erf(sqrt2 b); i = 31 the constant 1. Weighed by b / max(1, 2 b): GELU's error is b times E2's, the bound
    relative to max(1, |x|)."""
    tab = np.zeros((DEG_I8 + 1, N))
    tab[0, N - 1] = 1.0
    m = 400
    for i in range(N - 1):
        lo = 0.0 if i == 0 else -STEP_I8 / 2
        u = lo + (STEP_I8 / 2 - lo) * (1.0 - np.cos(np.pi * (np.arange(m) + 0.5) / m)) / 2.0
        b = i * STEP_I8 + u
        y, scale = 2.0 * half_erf(2.0 * b), b / np.maximum(1.0, 2.0 * b)
        powers = np.vander(u, DEG_I8 + 1, increasing=True)
        w = scale + 1e-6
        for _ in range(ROUNDS):
            c = np.linalg.lstsq(powers * w[:, None], y * w, rcond=None)[0]
            r = np.abs(powers @ c - y) * scale
            w = w * np.sqrt(r / r.max() + 1e-3)
            w /= w.max()
        tab[:, i] = c
    return tab.astype(np.float32)


def fma32(a, b, c):
    """a b + c rounded once to float32 (a float32 product is exact in float64)."""
    return (a.astype(np.float64) * b + c).astype(np.float32)


def gelu32(tab, x):
    """GELU as vit__v_gelu computes it on AVX-512, in float32."""
    f = np.float32
    x = np.maximum(x.astype(np.float32), f(-6.0))
    a = np.abs(x)
    s = (np.minimum(a, np.nextafter(f(6.0), f(0.0))) * f(1.0 / WIDTH)).astype(np.float32)
    i = np.floor(s)
    u = (s - i).astype(np.float32)
    i = i.astype(int)
    e = tab[DEG, i]
    for k in range(DEG - 1, -1, -1):
        e = fma32(e, u, tab[k, i])
    return fma32(a, e, (f(0.5) * x).astype(np.float32))


def gelu32_i8(tab, x):
    """GELU as vit__v_gelu_i8 computes it on AVX-512 (vit__v_gelu_i8h on x/2), in float32."""
    f = np.float32
    h = np.maximum((x.astype(np.float32) * f(0.5)).astype(np.float32), f(-3.0))
    b = np.abs(h)
    s = np.minimum(b, f((N - 1) * STEP_I8))
    t = (s + f(1572864.0)).astype(np.float32)  # 1.5 2^20: s rounded to a multiple of 1/8, i in t's low bits
    i = t.view(np.int32) & 31
    u = (s - (t - f(1572864.0)).astype(np.float32)).astype(np.float32)
    e = tab[DEG_I8, i]
    for k in range(DEG_I8 - 1, -1, -1):
        e = fma32(e, u, tab[k, i])
    return fma32(b, e, h)


def worst(tab, fn=gelu32):
    xs = np.linspace(-8.0, 8.0, 320001).astype(np.float32)
    x64 = xs.astype(np.float64)
    ref = 0.5 * x64 * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in x64]))
    err = np.abs(fn(tab, xs) - ref)
    return (err / np.maximum(1.0, np.abs(x64))).max(), err[np.abs(xs) <= 3].max()


def c_float(v):
    t = "%.9g" % v
    return t + (".0f" if "." not in t and "e" not in t else "f")


def vit_h_table(src, name, rows):
    body = src[src.index("static const float %s[" % name) :]
    body = body[body.index("{") + 1 : body.index("};")]
    vals = [np.float32(v.rstrip("f")) for v in re.findall(r"[-0-9.e+]+f", body)]
    if len(vals) != rows * N:
        return None
    return np.array(vals, dtype=np.float32).reshape(rows, N)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="evaluate the tables in vit.h too")
    ap.add_argument("--header", default="vit.h")
    args = ap.parse_args()
    src = open(args.header).read() if args.check else ""
    for name, tab, fn, bound in (("vit__gelu_tab", fit(), gelu32, BOUND),
                                 ("vit__gelu_i8_tab", fit_i8(), gelu32_i8, BOUND_I8)):
        print("static const float %s[%d][%d] = {" % (name, tab.shape[0], N))
        for k in range(tab.shape[0]):
            print("    {" + ", ".join(c_float(v) for v in tab[k]) + "},")
        print("};")
        rel, abs3 = worst(tab, fn)
        print("max |GELU error| / max(1, |x|) %.2e; for |x| <= 3 %.2e" % (rel, abs3))
        if rel > bound:
            print("the fit is worse than vit.h's comment says")
            return 1
        if args.check:  # vit.h's own table (a refit may differ in its last bits with another LAPACK)
            mine = vit_h_table(src, name, tab.shape[0])
            if mine is None:
                print("vit.h's %s has not %d values" % (name, tab.shape[0] * N))
                return 1
            rel, abs3 = worst(mine, fn)
            print("vit.h's table: max |GELU error| / max(1, |x|) %.2e; for |x| <= 3 %.2e" % (rel, abs3))
            if rel > bound:
                print("vit.h's %s is not the fit its comment describes" % name)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

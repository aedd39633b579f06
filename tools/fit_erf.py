"""The rational erf that vit__v_gelu evaluates: erf(z) ~ z P(z^2) / Q(z^2), Q(0) = 1, on 0 <= z <= 3.92.

    fit_erf.py            prints P and Q as vit.h writes them, and their error in float32 arithmetic
    fit_erf.py --check    also evaluates vit.h's coefficients the same way: exits 1 past 4e-7

The fit: f(z) = erf(z) / z, and P(s) - f Q(s) = 0 solved by least squares over
s = z^2 for P's and Q's coefficients, weighted by 1 / Q of the previous round
(so the residual is P/Q - f), then by the square root of the error of the
previous round (Lawson's reweighting, which moves a least-squares fit towards
the minimax one). Degrees 5 and 5: the error in float arithmetic stops
falling there (3.8e-7), where A&S 7.1.26 and its exp took twice the
operations. Past z = 3.92 erf is 1 - 4.6e-8, which rounds to 1 in floats.
"""

import argparse
import math
import re
import sys

import numpy as np

CLAMP = 3.92
DEG_P, DEG_Q, ROUNDS = 5, 5, 60


def fit():
    z = np.linspace(1e-6, CLAMP, 40001)
    s = z * z
    f = np.array([math.erf(v) for v in z]) / z
    w = np.ones_like(s)
    q = np.ones_like(s)
    powers_p = np.vstack([s**i for i in range(DEG_P + 1)]).T
    powers_q = np.vstack([s**j for j in range(1, DEG_Q + 1)]).T
    for _ in range(ROUNDS):
        a = np.hstack([powers_p, -f[:, None] * powers_q])
        rw = (w / q)[:, None]
        sol = np.linalg.lstsq(a * rw, f * rw[:, 0], rcond=None)[0]
        p = sol[: DEG_P + 1]
        qc = np.concatenate([[1.0], sol[DEG_P + 1 :]])
        q = np.polyval(qc[::-1], s)
        err = z * (np.polyval(p[::-1], s) / q - f)
        w = w * np.sqrt(np.abs(err))
        w /= w.mean()
    return p.astype(np.float32), qc.astype(np.float32)


def erf32(p, q, x):
    """erf(x) as vit__v_gelu computes it, in float32, Horner's rule from the highest degree."""
    x = x.astype(np.float32)
    z = np.minimum(np.abs(x), np.float32(CLAMP))
    s = (z * z).astype(np.float32)
    pv = np.full_like(s, p[-1])
    for c in p[-2::-1]:
        pv = (pv * s + c).astype(np.float32)
    qv = np.full_like(s, q[-1])
    for c in q[-2::-1]:
        qv = (qv * s + c).astype(np.float32)
    return (z * pv / qv).astype(np.float32) * np.sign(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the coefficients in vit.h")
    ap.add_argument("--header", default="vit.h")
    args = ap.parse_args()
    p, q = fit()
    xs = np.linspace(-6.0, 6.0, 400001)
    ref = np.array([math.erf(v) for v in xs])
    e = np.abs(erf32(p, q, xs) - ref)
    g = 0.5 * np.abs(xs) * e
    print("P:", ", ".join("%.9gf" % v for v in p))
    print("Q:", ", ".join("%.9gf" % v for v in q))
    print("max |erf error| %.2e; GELU's for |x| <= 3: %.2e" % (e.max(), g[np.abs(xs) <= 3].max()))
    if e.max() > 4e-7:
        print("the fit is worse than vit.h's comment says")
        return 1
    if args.check:  # vit.h's own coefficients (a refit may differ in its last bits with another LAPACK)
        src = open(args.header).read()
        body = src[src.index("static VIT__INLINE vit__vf vit__v_gelu_in(vit__vf x) {") :]
        body = body[: body.index("\n}\n")]
        vals = [np.float32(v.rstrip("f")) for v in re.findall(r"vit__v_set1\(([-0-9.e+]+f)\)", body)]
        # in vit.h's order: 1/sqrt2, the clamp, P's and Q's top coefficients, P's others, Q's others (to its
        # 1), then 0.5, 0.5 and the cut
        hp = np.array([vals[2]] + vals[4 : 4 + DEG_P])[::-1]
        hq = np.array([vals[3]] + vals[4 + DEG_P : 4 + DEG_P + DEG_Q])[::-1]
        eh = np.abs(erf32(hp, hq, xs) - ref).max()
        print("vit.h's coefficients: max |erf error| %.2e" % eh)
        if len(hp) != DEG_P + 1 or hq[0] != 1 or eh > 4e-7:
            print("vit.h's vit__v_gelu is not the fit its comment describes")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

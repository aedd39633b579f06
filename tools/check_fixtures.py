"""Check that tests/fixtures is what tools/make_fixtures.py writes today (CI runs this).

    build/venv/bin/python tools/check_fixtures.py [--fixtures tests/fixtures]

Regenerates the small fixtures into a temporary directory and compares:
MANIFEST and .safetensors byte for byte, .npy arrays elementwise within
1e-6 * max(1, |ref|) (another torch build may round differently, but not by
more than that). Exits 1 with a report on any drift: a changed reference
module, exporter or case list must come with regenerated fixtures.
"""

import argparse
import os
import sys
import tempfile

import numpy as np

import make_fixtures


def compare(fresh, committed):
    """Problems found, one line each; empty when the committed fixtures are current."""
    names_new, names_old = set(os.listdir(fresh)), set(os.listdir(committed))
    problems = [f"missing from {committed}: {n}" for n in sorted(names_new - names_old)]
    problems += [f"not generated any more: {n}" for n in sorted(names_old - names_new)]
    for name in sorted(names_new & names_old):
        new, old = os.path.join(fresh, name), os.path.join(committed, name)
        if not name.endswith(".npy"):
            with open(new, "rb") as a, open(old, "rb") as b:
                if a.read() != b.read():
                    problems.append(f"{name}: bytes differ")
            continue
        a, b = np.load(new), np.load(old)
        if a.shape != b.shape or a.dtype != b.dtype:
            problems.append(f"{name}: {a.dtype}{list(a.shape)} now, {b.dtype}{list(b.shape)} committed")
            continue
        excess = np.abs(a - b) - 1e-6 * np.maximum(1, np.abs(b))
        if (excess > 0).any():
            i = np.unravel_index(np.argmax(excess), a.shape)
            problems.append(f"{name}: max |diff| {np.abs(a - b).max():.3g}; at {list(i)} now {a[i]!r}, committed {b[i]!r}")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--fixtures", default=os.path.join(root, "tests", "fixtures"), help="default: tests/fixtures")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as fresh:
        make_fixtures.generate(fresh)
        problems = compare(fresh, args.fixtures)
    if problems:
        print(f"{args.fixtures} has drifted from tools/make_fixtures.py:", *problems, sep="\n  ")
        print("If the change is intended, regenerate: build/venv/bin/python tools/make_fixtures.py")
        return 1
    print(f"{args.fixtures}: all {len(make_fixtures.CASES)} cases current")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Check that tests/fixtures is what tools/make_fixtures.py writes today (CI runs this).

    build/venv/bin/python tools/check_fixtures.py [--fixtures tests/fixtures]

Regenerates the small fixtures into a temporary directory and compares:
MANIFEST and .safetensors byte for byte, .npy arrays elementwise within
1e-5 * max(1, max |ref|), the bound the C tests hold vit.h to: on another
CPU torch picks other BLAS kernels that round differently (EMSA's
InstanceNorm turned that into 7e-6 on an AMD Zen 4 against the Intel
machine that wrote the fixtures), while a changed module moves results by
far more. Then reloads each committed case with export.load_module
(metadata -> module, as bench/bench_torch.py does) and checks that it
reproduces NAME.out.npy within the same bound. Exits 1 with a report on any
drift: a changed reference module, exporter or case list must come with
regenerated fixtures.
"""

import argparse
import os
import sys
import tempfile

import numpy as np
import torch

import make_fixtures
from export import ExportError, load_module, reference_forward


def compare(fresh, committed):
    """Problems found, one line each; empty when the committed fixtures are current."""
    # Sub-folders (maps/) belong to other generators with their own --check.
    names_new, names_old = ({n for n in os.listdir(d) if os.path.isfile(os.path.join(d, n))} for d in (fresh, committed))
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
        problem = _excess(name, a, b)
        problems += [problem] if problem else []
    return problems


def _excess(name, a, b):
    """A problem line when a differs from b by more than 1e-5 * max(1, max |b|), else None."""
    excess = np.abs(a - b) - 1e-5 * max(1.0, float(np.abs(b).max()) if b.size else 0.0)
    if (excess > 0).any():
        i = np.unravel_index(np.argmax(excess), a.shape)
        return f"{name}: max |diff| {np.abs(a - b).max():.3g}; at {list(i)} now {a[i]!r}, committed {b[i]!r}"
    return None


def reload(committed):
    """Problems found when each case's weights file is rebuilt into a module and run on NAME.in.npy."""
    problems = []
    with open(os.path.join(committed, "MANIFEST")) as f:
        lines = [line.split() for line in f if line.strip()]
    for name, *flags in lines:
        weights = next((x[len("weights="):] for x in flags if x.startswith("weights=")), f"{name}.safetensors")
        try:
            module, _ = load_module(os.path.join(committed, weights))
        except ExportError as e:
            problems.append(f"{weights}: cannot rebuild: {e}")
            continue
        x = torch.from_numpy(np.load(os.path.join(committed, f"{name}.in.npy")))
        with torch.no_grad():
            got = reference_forward(module, x).numpy()
        want = np.load(os.path.join(committed, f"{name}.out.npy"))
        problem = f"{name}: reloaded output {list(got.shape)}, committed {list(want.shape)}" \
            if got.shape != want.shape else _excess(f"{name} (reloaded from {weights})", got, want)
        problems += [problem] if problem else []
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--fixtures", default=os.path.join(root, "tests", "fixtures"), help="default: tests/fixtures")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as fresh:
        make_fixtures.generate(fresh)
        problems = compare(fresh, args.fixtures)
    problems += reload(args.fixtures)
    if problems:
        print(f"{args.fixtures} has drifted from tools/make_fixtures.py:", *problems, sep="\n  ")
        print("If the change is intended, regenerate: build/venv/bin/python tools/make_fixtures.py")
        return 1
    print(f"{args.fixtures}: all {len(make_fixtures.CASES)} cases current, and each reloads into PyTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main())

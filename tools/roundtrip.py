"""Check the `vit run` CLI against PyTorch on any exportable module.

    build/venv/bin/python tools/roundtrip.py SPEC [--num-classes N] [--image-size S] [--batch B]
                          [--tokens N] [--seed S] [--dtype F32|F16|BF16] [--threads N] [--vit build/vit]

Builds SPEC (same syntax as tools/export.py), randomizes its weights, exports
it to a temporary directory (timm specs in timm's names with its config.json,
the rest with vit.h metadata) with a random input of the shape its kind takes,
runs `vit run MODEL IN.npy OUT.npy [--threads N]`, and compares OUT with
PyTorch's output: pass when max|diff| <= 1e-4 * max(1, max|ref|) for whole
ViTs, 1e-5 * ... for modules (the tolerances of tests/fixtures/MANIFEST).
Exit 0 on pass, 1 on a mismatch, 2 when the run itself fails.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

from export import (ExportError, add_build_args, build, describe, export_module, export_timm, randomize, reference_forward,
                    round_weights)

SPATIAL = (5, 7)  # N or H, and W, where the kind leaves them free: odd and unequal on purpose


def input_shape(vit, model, batch, tokens):
    """The input `vit input-shape` says the model takes (vit_model_input_shape); `tokens` sets N where the kind leaves it free."""
    run = subprocess.run([vit, "input-shape", model, str(batch), str(tokens), str(SPATIAL[1])], capture_output=True, text=True)
    if run.returncode != 0:
        raise ExportError(f"vit input-shape {model}: {run.stderr.strip()}")
    return tuple(int(v) for v in run.stdout.split())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_build_args(parser)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--batch", type=int, default=2, help="batch size (default 2)")
    parser.add_argument("--tokens", type=int, default=13, help="sequence length where the kind leaves it free")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the input (default 0)")
    parser.add_argument("--threads", type=int, help="passed to vit run")
    parser.add_argument("--vit", default=os.path.join(root, "build", "vit"), help="the vit binary (default build/vit)")
    args = parser.parse_args(argv)

    timm_spec = args.spec.startswith("timm:")
    try:
        module = randomize(build(args.spec, args.num_classes, args.image_size), args.seed)
        kind = "vit" if timm_spec else describe(module)[0]
    except (ExportError, TypeError) as e:
        parser.exit(2, f"roundtrip.py: error: {e}\n")
    if args.dtype != "F32":
        round_weights(module, args.dtype)

    with tempfile.TemporaryDirectory() as tmp:
        model, inp, out = (os.path.join(tmp, f) for f in ("model.safetensors", "in.npy", "out.npy"))
        if timm_spec:
            export_timm(module, model, dtype=args.dtype)  # timm's names and config.json, no vit.h metadata
        else:
            export_module(module, model, dtype=args.dtype)
        try:
            shape = input_shape(args.vit, model, args.batch, args.tokens)
        except (OSError, ExportError) as e:
            parser.exit(2, f"roundtrip.py: {e} (build vit first: make)\n")
        x = torch.randn(shape, generator=torch.Generator().manual_seed(args.seed + 1))
        with torch.no_grad():
            ref = reference_forward(module, x).numpy()
        np.save(inp, x.numpy())
        cmd = [args.vit, "run", model, inp, out] + (["--threads", str(args.threads)] if args.threads else [])
        try:
            run = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            parser.exit(2, f"roundtrip.py: cannot run {args.vit}: {e} (build it first: make)\n")
        if run.returncode != 0 or not os.path.exists(out):
            parser.exit(2, f"roundtrip.py: `{' '.join(cmd)}` failed with exit code {run.returncode}:\n"
                           f"{run.stdout}{run.stderr}")
        got = np.load(out)

    scale = 1e-4 if kind == "vit" else 1e-5
    tol = scale * max(1.0, float(np.abs(ref).max()))
    if got.shape != ref.shape:
        print(f"{args.spec}: output shape {list(got.shape)}, PyTorch's is {list(ref.shape)}")
        return 1
    err = float(np.abs(got.astype(np.float64) - ref).max())
    ok = err <= tol
    print(f"{args.spec}: input {list(x.shape)} -> {list(ref.shape)}, max|diff| {err:.3g}, "
          f"tolerance {tol:.3g} ({'model' if kind == 'vit' else 'module'}: {scale:g} * max(1, max|ref|)): "
          f"{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Write the golden fixtures the C tests compare vit.h against.

    build/venv/bin/python tools/make_fixtures.py [--out tests/fixtures] [--big DIR]

For each case NAME: NAME.safetensors (tools/export.py), NAME.in.npy (float32
input), NAME.out.npy (PyTorch's output, eval mode, no grad, one thread) and,
for whole ViTs, NAME.feat.npy (the representation before the head). MANIFEST
has one line per case:

    NAME TOL [feat] [weights=FILE]

TOL is `module` (C passes when max|diff| <= 1e-5 * max(1, max|ref|)) or
`model` (1e-4 * ...); `feat` says NAME.feat.npy exists; `weights=FILE` names
the weights when they are not NAME.safetensors.

Weights are seeded from the case name (or the shared weights' name), inputs
from the case name, so a rerun with the same torch writes byte-identical
files (tools/check_fixtures.py verifies this, for CI).
Sizes are small and odd on purpose (not multiples of 8, batch > 1), to reach
the SIMD kernels' scalar tails.

--big DIR writes instead a randomized torchvision vit_b_16 (~350 MB, keep it
under build/, never commit it) with B=1 and B=3 cases sharing its weights.
"""

import argparse
import os
import sys
import zlib
from typing import Callable, NamedTuple

import numpy as np
import torch
import torchvision.models.vision_transformer as tv
from torch import nn

import reference as R
from export import describe, export_module, features, randomize, reference_forward, round_products, round_weights


class Case(NamedTuple):
    factory: Callable[[], nn.Module]
    shape: tuple
    dtype: str = "F32"  # as stored in the .safetensors; PyTorch then computes with rounded weights
    weights: str = None  # cases naming the same weights share one module and WEIGHTS.safetensors


CASES = {
    "sdpa_a": Case(R.seed000.SDPA, (2, 7, 9)),
    "sdpa_b": Case(R.seed000.SDPA, (1, 13, 16)),
    "mha_sep": Case(lambda: R.seed000.MultiHeadedAttention(heads=3, d_model=24), (2, 9, 24)),
    "mha_sep1": Case(lambda: R.seed000.MultiHeadedAttention(heads=1, d_model=7), (1, 5, 7)),
    # 4 heads: PyTorch's fused fast path; 5 heads (odd): its plain path.
    "mha_nn": Case(lambda: nn.MultiheadAttention(24, 4, batch_first=True), (3, 5, 24)),
    "mha_nn2": Case(lambda: nn.MultiheadAttention(20, 5, batch_first=True), (2, 11, 20)),
    "mha_004": Case(lambda: R.seed004.MultiHeadAttention(emb_size=24, num_heads=3), (2, 7, 24)),
    "mha_004b": Case(lambda: R.seed004.MultiHeadAttention(emb_size=18, num_heads=2), (1, 10, 18)),
    "mlp_relu": Case(lambda: R.seed001.MLP(20, 37), (2, 5, 20)),
    "mlp_gelu": Case(lambda: tv.MLPBlock(20, 37, 0.0), (2, 5, 20)),
    "mlp_004": Case(lambda: R.seed004.FeedForwardBlock(12, expansion=3), (3, 4, 12)),
    "block_tv": Case(lambda: tv.EncoderBlock(num_heads=3, hidden_dim=24, mlp_dim=40, dropout=0.0,
                                         attention_dropout=0.0), (2, 9, 24)),
    "block_001": Case(lambda: R.seed001.EncoderBlock(3, 24, 40), (3, 9, 24)),
    "block_004": Case(lambda: R.seed004.TransformerEncoderBlock(emb_size=24, num_heads=3), (2, 9, 24)),
    "patch_000": Case(lambda: R.seed000.PatchifyLayer(image_size=20, patch_size=5, hidden_dim=16), (2, 3, 20, 20)),
    "patch_004": Case(lambda: R.seed004.PatchEmbedding(3, 5, 16, 20), (2, 3, 20, 20)),
    "vit_tv": Case(lambda: tv.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=3, hidden_dim=48, mlp_dim=96, num_classes=10),
        (3, 3, 32, 32)),
    "vit_tv_rep": Case(lambda: tv.VisionTransformer(
        image_size=24, patch_size=6, num_layers=2, num_heads=3, hidden_dim=48, mlp_dim=96, num_classes=7,
        representation_size=20), (2, 3, 24, 24)),
    "vit_001": Case(lambda: R.seed001.VisionTransformer(32, 8, 2, 4, 32, 64, 10), (2, 3, 32, 32)),
    "vit_004": Case(lambda: R.seed004.ViT(
        in_channels=3, patch_size=8, emb_size=48, img_size=32, depth=2, n_classes=10, num_heads=3),
        (2, 3, 32, 32)),
    # Stored as F16 / BF16 / I8: PyTorch ran with the rounded weights, and (BF16, I8) with each Linear's
    # input rounded as vit.h's products round it.
    "mlp_f16": Case(lambda: R.seed001.MLP(20, 37), (2, 5, 20), dtype="F16"),
    "mlp_bf16": Case(lambda: R.seed001.MLP(20, 37), (2, 5, 20), dtype="BF16"),
    "mlp_i8": Case(lambda: R.seed001.MLP(20, 37), (2, 5, 20), dtype="I8"),
    # seed 000 channel attention, (B, C, H, W)
    "se_a": Case(lambda: R.seed000.SqueezeExcitation(16, 4), (2, 16, 5, 7)),
    "se_b": Case(lambda: R.seed000.SqueezeExcitation(7), (3, 7, 6, 5)),
    "se_c": Case(lambda: R.seed000.SqueezeExcitation(13, 5), (1, 13, 9, 9)),
    # seed 002, (B, N, C); the classifier takes (B, seq_len, n_embd), the MLP (B, 784)
    "sdsa_a": Case(lambda: R.seed002.ScaledDotSelfAttention(49), (2, 16, 49)),
    "sdsa_b": Case(lambda: R.seed002.ScaledDotSelfAttention(9), (3, 5, 9)),
    "sdsa_c": Case(lambda: R.seed002.ScaledDotSelfAttention(20), (1, 11, 20)),
    "cls002_a": Case(R.seed002.Model, (3, 16, 49)),
    "cls002_b": Case(lambda: R.seed002.Model(n_embd=9, seq_len=5), (2, 5, 9)),
    "cls002_c": Case(lambda: R.seed002.Model(n_embd=12, seq_len=7), (1, 7, 12)),
    # The baseline is fixed at 784-784-10 (2.5 MB as F32): one F16 weights file for three batch sizes
    # keeps tests/fixtures under 4 MB.
    "mlp002_b1": Case(R.seed002.MLP, (1, 784), dtype="F16", weights="mlp002"),
    "mlp002_b2": Case(R.seed002.MLP, (2, 784), dtype="F16", weights="mlp002"),
    "mlp002_b5": Case(R.seed002.MLP, (5, 784), dtype="F16", weights="mlp002"),
    # seed 003, EMSA on (B, H*W, C); apply_transform is forced off when h == 1
    "emsa_r1t": Case(lambda: R.seed003.EMSA(12, 5, 3, 3, H=3, W=5, ratio=1), (2, 15, 12)),
    "emsa_r1": Case(lambda: R.seed003.EMSA(10, 4, 6, 2, H=4, W=3, ratio=1, apply_transform=False), (3, 12, 10)),
    "emsa_r2": Case(lambda: R.seed003.EMSA(10, 4, 6, 2, H=5, W=7, ratio=2, apply_transform=False), (2, 35, 10)),
    "emsa_r3t": Case(lambda: R.seed003.EMSA(9, 3, 3, 3, H=7, W=6, ratio=3), (3, 42, 9)),
    "emsa_h1": Case(lambda: R.seed003.EMSA(8, 8, 8, 1, H=4, W=5, ratio=2), (1, 20, 8)),
    # seed 003, (B, C, H, W)
    "shuffle_a": Case(lambda: R.seed003.ShuffleAttention(24, G=3), (2, 24, 5, 7)),
    "shuffle_b": Case(lambda: R.seed003.ShuffleAttention(16, G=8), (3, 16, 4, 3)),
    "shuffle_c": Case(lambda: R.seed003.ShuffleAttention(30, G=5), (1, 30, 6, 6)),
    "sge_a": Case(lambda: R.seed003.SpatialGroupEnhance(4), (2, 12, 5, 7)),
    "sge_b": Case(lambda: R.seed003.SpatialGroupEnhance(3), (3, 15, 4, 6)),
    "sge_c": Case(lambda: R.seed003.SpatialGroupEnhance(8), (2, 8, 7, 5)),
    # seed 003 AFT, (B, T, dim) with T <= max_seqlen
    "aft_full_a": Case(lambda: R.seed003.AFTFull(11, 12, 16), (2, 9, 12)),
    "aft_full_b": Case(lambda: R.seed003.AFTFull(7, 10, 5), (3, 7, 10)),
    "aft_full_c": Case(lambda: R.seed003.AFTFull(20, 6, 13), (1, 13, 6)),
    "aft_simple_a": Case(lambda: R.seed003.AFTSimple(11, 12, 16), (2, 9, 12)),
    "aft_simple_b": Case(lambda: R.seed003.AFTSimple(7, 10, 5), (3, 7, 10)),
    "aft_simple_c": Case(lambda: R.seed003.AFTSimple(20, 6, 13), (1, 13, 6)),
    "aft_local_a": Case(lambda: R.seed003.AFTLocal(11, 12, 16, s=3), (2, 9, 12)),
    "aft_local_b": Case(lambda: R.seed003.AFTLocal(7, 10, 5, s=1), (3, 7, 10)),
    "aft_local_c": Case(lambda: R.seed003.AFTLocal(20, 6, 13, s=5), (2, 13, 6)),
    "aft_local_d": Case(lambda: R.seed003.AFTLocal(9, 8, 8), (2, 9, 8)),  # default s=256: no weight zeroed
    # seed 003 outlook attention, (B, H, W, C)
    "outlook_s1": Case(lambda: R.seed003.OutlookAttention(12, 3), (2, 5, 7, 12)),
    "outlook_s2": Case(lambda: R.seed003.OutlookAttention(10, 2, stride=2), (2, 7, 9, 10)),
    "outlook_s2b": Case(lambda: R.seed003.OutlookAttention(8, 1, stride=2, qkv_bias=True), (1, 6, 8, 8)),
    "outlook_k5": Case(lambda: R.seed003.OutlookAttention(6, 2, kernel_size=5, padding=2, qk_scale=0.25),
                       (2, 6, 5, 6)),
}

# --big: torchvision's vit_b_16 (random weights), B=1 and B=3 on one weights file
BIG_CASES = {f"vit_b16_b{b}": Case(tv.vit_b_16, (b, 3, 224, 224), weights="vit_b16") for b in (1, 3)}


def _seed(name):
    """A per-case seed that does not depend on the case's position in the list."""
    return zlib.crc32(name.encode())


def _input(name, shape):
    return torch.randn(shape, generator=torch.Generator().manual_seed(_seed(name) + 1))


def _save(path, tensor):
    np.save(path, np.ascontiguousarray(tensor.detach().numpy(), dtype=np.float32))


def _case_files(out, name, module, x):
    """Write NAME.in.npy, NAME.out.npy and, for a whole ViT, NAME.feat.npy; return the kind."""
    kind = describe(module)[0]
    _save(os.path.join(out, f"{name}.in.npy"), x)
    with torch.no_grad():
        _save(os.path.join(out, f"{name}.out.npy"), reference_forward(module, x))
        if kind == "vit":
            _save(os.path.join(out, f"{name}.feat.npy"), features(module, x))
    return kind


def generate(out, cases=CASES):
    """Write cases into directory out, with their MANIFEST."""
    torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    modules, lines = {}, []
    for name, case in cases.items():
        weights = case.weights or name
        if weights not in modules:
            module = randomize(case.factory().eval(), _seed(weights))
            if case.dtype != "F32":
                round_weights(module, case.dtype)
            if case.dtype in ("BF16", "I8"):  # and the products' inputs, as vit.h rounds them
                round_products(module, case.dtype)
            # Export before any forward pass: seed 003's AFTLocal zeroes part of
            # its weights during forward, and the C side must do that itself.
            export_module(module, os.path.join(out, f"{weights}.safetensors"), dtype=case.dtype)
            modules[weights] = module
        kind = _case_files(out, name, modules[weights], _input(name, case.shape))
        line = [name, "model" if kind == "vit" else "module"]
        line += ["feat"] if kind == "vit" else []
        line += [f"weights={weights}.safetensors"] if case.weights else []
        lines.append(" ".join(line))
    with open(os.path.join(out, "MANIFEST"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--out", default=os.path.join(root, "tests", "fixtures"), help="default: tests/fixtures")
    parser.add_argument("--big", metavar="DIR", help="write only the vit_b_16 cases, into DIR (under build/)")
    args = parser.parse_args(argv)
    out, cases = (args.big, BIG_CASES) if args.big else (args.out, CASES)
    generate(out, cases)
    print(f"wrote {len(cases)} cases to {out}")


if __name__ == "__main__":
    sys.exit(main())

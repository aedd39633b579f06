"""Class-specific explanations of timm ViTs as their authors compute them: the reference for vit.h's reverse pass.

    build/venv/bin/python tools/explain_reference.py [--out tests/fixtures/explain] [--check [--vit build/vit]] [--selftest]

Six small timm 1.0.31 models (depth 2, 32 px in 8 px patches, 32-36 channels,
random weights drawn as tools/families_reference.py draws them, saved the
same way: model.safetensors + timm's config.json, so `vit run` reads them
with no flags). For each, on one random image and one target (a class's
logit, or for SigLIP's features a random vector), tests/fixtures/explain/CASE/
holds the forward pass (attention probabilities, tokens), its gradients, and
the maps of nine explanation methods, each by its original authors' code:
pytorch-grad-cam 1.5.7 and torchcam 0.5.0 from PyPI (torchcam's LeGrad ported
to torch 1.13 by tools/explain_legrad.py), vit-explain and Chefer et al.'s
rule reimplemented in tools/explain_methods.py (neither is on PyPI).

FILES (float32 .npy, C order; L blocks, NH heads, T tokens with the prefix
tokens first in timm's order (class, distillation, registers) then the G x G
patches row by row, C channels, S image size, W output width; B = 1):
  in (1, 3, S, S)  out (1, W)  seed (1, W): the target is (out * seed).sum()
  attn, grad_attn (L, NH, T, T), B = 1 dropped: each block's softmax output (what attn_drop
    receives) and d target / d it
  tokens, grad_tokens (L+1, 1, T, C): [0] what enters blocks[0] (after patch
    embedding, prefix tokens, position embedding, norm_pre), [l+1] block l's output
  grad_input (1, 3, S, S); saliency, gxi, ig (S, S); the other maps (G, G)
  meta.txt: `key value` lines, note_<method> saying what each map holds
  MANIFEST: the cases, one a line

THE MAPS, from those arrays (explain_methods.maps_from_arrays computes the first
four from attn and grad_attn alone; --selftest checks it). Rows read: q = the
class token's row where the model has one ("query cls"), else the mean of all
rows ("query mean"); columns: the patches, prefix onwards, as (G, G).
  rollout (vit-explain): R = I; per block F = mean over heads of attn; the
    k = int(T * T * 0.9) smallest entries of F (flattened, torch.topk order)
    set to 0 except flat index 0 (F[0, 0]); A = (F + I) / 2; A[i, j] /= the sum
    of row j of A (vit-explain's a / a.sum(dim=-1) broadcasts over the last
    axis); R = A @ R. Map: R[q, patches] / its max.
  grad_rollout: the same but F = max(0, mean over heads of attn * D), no entry
    spared, D = d target / d pre-softmax scores = attn * (g - sum over keys of
    attn * g) for g = grad_attn (what vit-explain's register_backward_hook on
    attn_drop receives: in eval attn_drop returns its input, so the hook lands
    on the softmax's backward node); block l's attn with block l's D.
  grad_rollout_orig: block l's attn with block L-1-l's D (vit-explain's order).
  chefer: R = I; per block R += mean over heads of max(0, grad_attn * attn) @ R;
    raw R[q, patches].
  legrad: per block l, s_l = the target applied to forward_head(norm(tokens[l+1]))
    (the model's own tail on block l's output; s_{L-1} is the target),
    m_l = mean over heads and query rows of relu(d s_l / d attn_l), keys
    prefix onwards; map = mean over blocks of m_l, raw.
  gradcam: a = blocks[-1].norm1(tokens[L-1]) without the prefix rows,
    (G*G, C); w_c = mean over patches of d target / d a[:, c];
    map = max(0, sum_c w_c * a[:, c]), raw (pytorch-grad-cam min-max scales it
    and resizes it to the image after).
  saliency = max over channels |grad_input|; gxi = sum over channels
    grad_input * in; ig = sum over channels in * mean over i < 16 of
    d target / d x at x = (i + 0.5) / 16 * in.

--check regenerates into a temporary folder and compares every .npy within
1e-5 of its array's largest |value| (other files byte for byte), and with
--vit runs `vit run` on each case against out.npy: a rerun on this machine
gives the same bits; another CPU's BLAS sums in another order, a few 1e-7
relative per product, grown through two blocks and their backward pass to a
few 1e-6, while a changed method, pairing or target moves a map by a sizeable
part of its scale. The scale is the array's own largest value, not
max(1, ...) as families_reference.py uses, because gradients and maps here
are often far below 1. --selftest checks the gradients against central
finite differences on float64 copies of the models.
"""

import argparse
import os
import sys
import tempfile

import numpy as np
import torch

import families_reference as FR
import explain_methods as M

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "explain")

DISCARD_RATIO = 0.9  # vit-explain's default (vit_explain.py --discard_ratio)
IG_STEPS = 16

# name -> (timm architecture, image size, model kwargs, target class or None for a random vector).
# Kept small (each case's files under ~300 KB): two blocks, 32 px images in 8 px patches (a 4 x 4
# grid; the families' own 14 and 16 px patches would make the patch embedding most of the file).
SMALL = dict(depth=2, patch_size=8)
CASES = {
    "vit": ("vit_base_patch16_224", 32, dict(embed_dim=32, num_heads=2, num_classes=5, **SMALL), 3),
    "deit_dist": ("deit_tiny_distilled_patch16_224", 32, dict(embed_dim=32, num_heads=4, num_classes=5, **SMALL), 1),
    "dinov2_reg": ("vit_small_patch14_reg4_dinov2", 32, dict(embed_dim=36, num_heads=3, num_classes=4, **SMALL), 2),
    "clip_quickgelu": ("vit_base_patch16_clip_quickgelu_224", 32, dict(embed_dim=32, num_heads=2, num_classes=3, **SMALL), 2),
    "siglip": ("vit_base_patch16_siglip_224", 32, dict(embed_dim=32, num_heads=2, num_classes=0, **SMALL), None),
    "gap": ("vit_medium_patch16_gap_256", 32, dict(embed_dim=32, num_heads=4, num_classes=3, **SMALL), 1),
    # the block's remaining pieces: qk-norm (LayerNorm on each head's q and k), SwiGLU (DINOv2-giant's MLP)
    "qknorm": ("vit_base_patch16_224", 32, dict(embed_dim=32, num_heads=2, num_classes=4, qk_norm=True, **SMALL), 2),
    "swiglu": ("vit_giant_patch14_dinov2", 32, dict(embed_dim=32, num_heads=2, num_classes=3, **SMALL), 0),
    # BEiT's relative position bias (a table per block, mean pool and fc_norm), EVA-02's rotary embedding
    "beit": ("beit_base_patch16_224", 32, dict(embed_dim=32, num_heads=2, num_classes=3, **SMALL), 1),
    "eva02": ("eva02_tiny_patch14_224", 56, dict(embed_dim=32, num_heads=2, num_classes=4, depth=2, patch_size=7), 2),
    # EVA-02 B's LayerNorm inside the SwiGLU (mlp.norm), EVA-CLIP's before the attention's projection (attn.norm)
    "eva02_b": ("eva02_base_patch14_224", 56, dict(embed_dim=32, num_heads=2, num_classes=3, depth=2, patch_size=7), 1),
    "eva02_clip": ("eva02_base_patch16_clip_224", 64, dict(embed_dim=32, num_heads=2, num_classes=3, depth=2,
                                                         patch_size=8), 2),
    # BEiT's plain MLP with a LayerNorm inside (scale_mlp): the norm after a GELU, not a gate
    "beit_mlpnorm": ("beit_base_patch16_224", 64, dict(embed_dim=32, num_heads=2, num_classes=3, depth=2, patch_size=8,
                                                      scale_mlp=True), 1),
    # the newer rotary embeddings: DINOv3's (pairs in halves, registers), RoPE-Mixed's (a table per block and head);
    # Perception Encoder's attention pool (8 heads of its own, attending to the class token too)
    # (class 2: for class 1 this random DINOv3 leaves vit-explain's grad rollout all zero, which it divides by 0)
    "dinov3": ("vit_small_patch16_dinov3", 32, dict(embed_dim=32, num_heads=2, num_classes=4, **SMALL), 2),
    "rope_mixed": ("vit_small_patch16_rope_mixed_224", 32, dict(embed_dim=32, num_heads=2, num_classes=3, **SMALL), 0),
    "pe_core": ("vit_pe_core_tiny_patch16_384", 32, dict(embed_dim=32, num_heads=2, num_classes=4, **SMALL), 2),
}

# What each map file holds, written into meta.txt as note_<method>.
NOTES = {
    "rollout": "vit-explain rollout (head_fusion mean): result[q, prefix:] divided by its max (vit-explain returns only that)",
    "grad_rollout": "vit-explain grad rollout, layer l's attention with layer l's gradient (issue #6 fix); the gradient is "
                    "what its backward hook on attn_drop receives: d target / d pre-softmax scores "
                    "(see tools/explain_reference.py); divided by its max",
    "grad_rollout_orig": "as grad_rollout but vit-explain's own pairing: layer l's attention with layer L-1-l's gradient; "
                         "divided by its max",
    "chefer": "raw: R = I + sum of rules, R[q, prefix:] (Transformer-MM-Explainability generate_relevance), no normalisation",
    "legrad": "raw: torchcam LeGrad(normalized=False), mean over blocks of relu(d s_l / d A_l) meaned over heads and queries, "
              "keys prefix: on; s_l = target applied to forward_head(norm(tokens after block l)); no min-max",
    "gradcam": "raw: pytorch-grad-cam GradCAM on blocks[-1].norm1, prefix tokens dropped, relu(sum_c mean_grad_c * act_c) "
               "at grid size, before its min-max scaling and resize to the image",
    "saliency": "raw: max over channels of |grad_input|",
    "gxi": "raw: sum over channels of grad_input * input",
    "ig": "raw: sum over channels of input * mean of the gradients at (i + 0.5) / ig_steps * input, baseline zeros",
}


def build(name):
    arch, size, kw, _ = CASES[name]
    torch.manual_seed(0)
    timm, _ = FR._quiet_imports()
    model = timm.create_model(arch, pretrained=False, img_size=size, **kw)
    return FR.randomize(model, FR._seed("explain_" + name))


def describe(model):
    """(depth, heads, tokens, dim, prefix, grid) of a timm VisionTransformer."""
    depth = len(model.blocks)
    heads = model.blocks[0].attn.num_heads
    grid = model.patch_embed.grid_size[0]
    prefix = model.num_prefix_tokens  # class + distillation + register tokens
    return depth, heads, prefix + grid * grid, model.embed_dim, prefix, grid


def inputs(name, model):
    """The image (1, 3, S, S) and the seed (1, W) that makes the target (out * seed).sum()."""
    _, size, kw, cls = CASES[name]
    g = torch.Generator().manual_seed(FR._seed("explain_" + name) + 1)
    x = torch.randn(1, 3, size, size, generator=g)
    width = kw["num_classes"] or model.num_features
    if cls is None:
        seed = torch.randn(1, width, generator=g)
    else:
        seed = torch.zeros(1, width)
        seed[0, cls] = 1.0
    return x, seed


def write_case(out, name):
    arch, size, kw, cls = CASES[name]
    model = build(name)
    d = os.path.join(out, name)
    FR._save_model("timm", model, d)
    depth, heads, tokens, dim, prefix, grid = describe(model)
    x, seed = inputs(name, model)
    query = "cls" if model.cls_token is not None else "mean"

    fw = M.forward_backward(model, x, seed)
    arrays = {
        # (L, NH, T, T): B = 1 dropped, so that the arrays stay within vit.h's 4 dimensions (VIT_MAX_DIMS)
        "in": x, "out": fw["out"], "seed": seed, "attn": fw["attn"][:, 0], "grad_attn": fw["grad_attn"][:, 0],
        "tokens": fw["tokens"], "grad_tokens": fw["grad_tokens"], "grad_input": fw["grad_input"],
        "rollout": M.vit_explain_rollout(model, x, DISCARD_RATIO, prefix, query),
        "grad_rollout": M.vit_explain_grad_rollout(model, x, seed, DISCARD_RATIO, prefix, query, fixed=True),
        "grad_rollout_orig": M.vit_explain_grad_rollout(model, x, seed, DISCARD_RATIO, prefix, query, fixed=False),
        "chefer": M.chefer(model, x, seed, prefix, query),
        "legrad": M.legrad(model, x, seed, cls, prefix),
        "gradcam": M.gradcam(model, x, seed, cls, prefix, grid),
        "saliency": fw["grad_input"][0].abs().amax(dim=0),
        "gxi": (fw["grad_input"][0] * x[0]).sum(dim=0),
        "ig": M.integrated_gradients(model, x, seed, IG_STEPS),
    }
    for key, value in arrays.items():
        FR._npy(os.path.join(d, f"{key}.npy"), torch.as_tensor(value))
    meta = [("family", name), ("timm_name", arch), ("depth", depth), ("heads", heads), ("tokens", tokens),
            ("dim", dim), ("prefix", prefix), ("grid", grid), ("image", size), ("width", seed.shape[1]),
            ("target", "vector" if cls is None else f"class {cls}"), ("discard_ratio", DISCARD_RATIO),
            ("ig_steps", IG_STEPS), ("query", query)]
    meta += [(f"note_{k}", v) for k, v in NOTES.items()]
    with open(os.path.join(d, "meta.txt"), "w") as f:
        f.write("".join(f"{k} {v}\n" for k, v in meta))
    return name


def generate(out):
    os.makedirs(out, exist_ok=True)
    names = [write_case(out, name) for name in CASES]
    with open(os.path.join(out, "MANIFEST"), "w") as f:
        f.write("".join(f"{n}\n" for n in names))
    return names


def compare(fresh, committed):
    """(passed, problems): every file of fresh against committed."""
    passed, problems = 0, []
    for root, _, files in os.walk(fresh):
        for fname in sorted(files):
            new = os.path.join(root, fname)
            rel = os.path.relpath(new, fresh)
            old = os.path.join(committed, rel)
            if not os.path.exists(old):
                problems.append(f"missing from {committed}: {rel}")
                continue
            if fname.endswith(".npy"):
                a, b = np.load(new), np.load(old)
                tol = 1e-5 * max(float(np.abs(b).max()) if b.size else 0.0, 1e-30)
                if a.shape != b.shape:
                    problems.append(f"{rel}: shape {a.shape}, committed {b.shape}")
                    continue
                diff = float(np.abs(a - b).max()) if a.size else 0.0
                if not diff <= tol:
                    problems.append(f"{rel}: max|diff| {diff:.3g} over tolerance {tol:.3g}")
                    continue
            else:
                with open(new, "rb") as f1, open(old, "rb") as f2:
                    if f1.read() != f2.read():
                        problems.append(f"{rel}: bytes differ")
                        continue
            passed += 1
    for root, _, files in os.walk(committed):
        for fname in sorted(files):
            rel = os.path.relpath(os.path.join(root, fname), committed)
            if not os.path.exists(os.path.join(fresh, rel)):
                problems.append(f"{rel}: in {committed} but no longer written")
    return passed, problems


def run_vit(vit, committed):
    """(passed, problems): `vit run CASE/model.safetensors in.npy` against out.npy, no flags: config.json is
    all vit.h reads (within 1e-4 of max(1, |out|), the bound tests/run.sh's cli-image-size uses)."""
    import subprocess
    passed, problems = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for name in CASES:
            d = os.path.join(committed, name)
            got = os.path.join(tmp, f"{name}.npy")
            run = subprocess.run([vit, "run", os.path.join(d, "model.safetensors"), os.path.join(d, "in.npy"), got],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                problems.append(f"{name}: vit run failed: {run.stderr.strip()}")
                continue
            g, w = np.load(got), np.load(os.path.join(d, "out.npy"))
            diff, tol = float(np.abs(g - w).max()), 1e-4 * max(1.0, float(np.abs(w).max()))
            if g.shape != w.shape or not diff <= tol:
                problems.append(f"{name}: vit run gives shape {g.shape}, max|diff| {diff:.3g} (tolerance {tol:.3g})")
                continue
            passed += 1
    return passed, problems


def check(committed, vit=None):
    with tempfile.TemporaryDirectory() as fresh:
        generate(fresh)
        passed, problems = compare(fresh, committed)
    if vit:
        more, trouble = run_vit(vit, committed)
        passed, problems = passed + more, problems + trouble
    if problems:
        print(f"{committed} has drifted from tools/explain_reference.py:", *problems, sep="\n  ")
    print(f"{passed} passed, {len(problems)} failed")
    return 1 if problems else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=FIXTURES)
    parser.add_argument("--check", action="store_true", help="compare a fresh run with the committed fixtures")
    parser.add_argument("--selftest", action="store_true", help="gradients against finite differences (float64)")
    parser.add_argument("--vit", metavar="PATH", help="with --check: also `PATH run` each case against its out.npy")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # the same bits on any machine with the same BLAS
    if args.selftest:
        return M.selftest({name: (build(name), *inputs(name, build(name))) for name in CASES})
    if args.check:
        return check(args.out, args.vit)
    generate(args.out)
    print(f"wrote {len(CASES)} cases to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Reference fixtures for attention maps, torchvision preprocessing and position-embedding interpolation.

    build/venv/bin/python tools/maps_reference.py [--out tests/fixtures/maps] [--images DIR]
    build/venv/bin/python tools/maps_reference.py --check      # regenerate to a temp dir, compare, exit 1 on drift
    build/venv/bin/python tools/maps_reference.py --prep-npy DIR   # also write prep_NAME.npy (float32) into DIR

Everything is derived from tests/fixtures/vit_tv.safetensors (torchvision
VisionTransformer, image 32, patch 8, 2 layers, 3 heads, hidden 48, mlp 96,
10 classes; rebuilt with tools/export.py's load_module), its input
tests/fixtures/vit_tv.in.npy (B=3), and scikit-learn's sample photos
(--images, default /usr/lib/python3/dist-packages/sklearn/datasets/images,
not committed). One thread, no randomness except a seeded generator, so a
rerun writes identical files. All .npy files are float32, C order.

1. Attention maps (T = 1 + 16 tokens, NH = 3 heads, depth 2)

vit_tv.att.npy (depth, B, NH, T, T) = (2, 3, 3, 17, 17)
    att[l] = softmax(Q K^T / sqrt(head_dim)) of encoder layer l, per head,
    as nn.MultiheadAttention computes it inside torchvision's EncoderBlock:
    ln_1's output (captured by a forward hook during the model's forward)
    fed to layer.self_attention(y, y, y, need_weights=True,
    average_attn_weights=False). Rows sum to 1; att[l, b, h, i, j] is how
    much query token i attends to key token j (token 0 = class token).

The files below are for batch item b = 1 only; a "mask" is a vector of the
T-1 = 16 patch tokens in row-major patch order (reshape to (4, 4) for the
image grid). Fusions over heads are computed in float64 from the float32
att and saved as float32.

cls_head{h}_layer{l}.npy (16,)     att[l, 1, h, 0, 1:]     h in 0..2, l in 0..1
cls_{mean,max,min}_layer{l}.npy (16,)  att[l, 1, :, 0, 1:] fused over the head axis

rollout_{mean,max,min}_d{0,90}.npy (16,)
    Attention rollout (Abnar & Zuidema) as jacobgil/vit-explain's rollout()
    does it, but with rows renormalised; discard ratio 0.0 (d0) or 0.9
    (d90); float64 throughout, starting from the float32 att:
        result = I (T, T)
        for l in 0..depth-1:
            fused = fuse(att[l, 1]) over heads          (T, T)
            flat = fused.reshape(-1)                    (a view: edits fused)
            k = int(T * T * ratio)                      (289 * 0.9 -> 260)
            idx = the first k entries of a STABLE ascending argsort of flat
                  (the k smallest; equal values: lower flat index first)
            idx = idx without 0                         (the class token's
                  self-attention is never dropped; k-1 entries then go)
            flat[idx] = 0
            a = (fused + I) / 2
            a = a / a.sum(axis=-1, keepdims=True)       (each row sums to 1)
            result = a @ result
        mask = result[0, 1:]; mask = mask / mask.max()

rollout_explain_{mean,max}_d{0,90}.npy (16,)
    vit-explain's rollout() verbatim, in float32 torch, on the list of
    att[l, 1:2] (1, NH, T, T): fusion attention.mean(axis=1) /
    attention.max(axis=1)[0]; flat.topk(k, -1, largest=False) for the
    dropped entries (minus index 0); a = (fused + I) / 2;
    a = a / a.sum(dim=-1) -- with a of shape (1, T, T) this broadcasts
    the (1, T) row sums as (1, 1, T), i.e. a[i, j] / rowsum(j): column j is
    divided by ROW j's sum (vit-explain's bug, kept); result = a @ result;
    mask = result[0, 0, 1:] / max. (Mean fusion with d0 keeps rows
    summing to 1, so there both rollouts agree; they differ elsewhere.)
    The generator asserts that topk dropped the same entries as the stable
    argsort, and that the k-th and (k+1)-th smallest values are more than
    1e-5 apart (for every fusion), so a C rollout in float32 picks the same
    entries. Index 0 is among the k smallest in several layers here (mean
    and max layer 1, min both layers), so the "never index 0" rule is
    exercised.

rollout_grid{3,7,14}.npy (3, 5, G*G)
    vit-explain's rollout() as above (rollout_explain) on G x G grids
    (T = G*G + 1 tokens, NH = 3 heads, depth 2): [fusion mean/max/min,
    discard ratio 0, 0.39, 0.53, 0.78, 0.9 as Python floats]. The
    number of dropped weights, int(T*T * ratio) in double, is what these
    check: float arithmetic gets it wrong at 0.39, 0.53 and 0.78 on 7x7
    and at 0.53 on 3x3, and the double of the float ratio (0.78f is
    0.7799999713...) at every nonzero ratio on 3x3 and 7x7. The attention
    is made from integers, so that test_maps.c makes the same bits:
        s = G (uint32); next() = s = s * 1664525 + 1013904223 mod 2^32
        for each layer: perm = 0..T*T-1 shuffled by Fisher-Yates,
            for i = T*T-1 down to 1: swap perm[i], perm[next() % (i+1)]
          then for each head h, each flat index p (row-major (T, T)):
            rank = perm[p] + (T*T if p < T else 0)
            att[layer, h, p] = (200 * (rank + 1) + next() % 121 - 60) * 2^-22
    (exact in float32: below 2^24 * 2^-22). Each head's weight is its
    position's rank, give or take 60 of 200, so every fusion orders the
    weights by rank and no two are within 80 * 2^-22 of each other: the
    dropped set cannot depend on rounding. Row 0 (the class token's) ranks
    above all others and is never dropped, so every weight dropped or kept
    moves the class token's row of the product: one weight more or fewer
    changes the mask.
rollout_grid3.att.npy (2, 3, 10, 10)
    the 3 x 3 grid's attention, for test_maps.c to check its generator.

2. torchvision preprocessing (ViT_B_16_Weights.IMAGENET1K_V1.transforms())

For each image NAME, Image.open(path).convert("RGB") goes through
torchvision's ImageClassification(crop_size=224, resize_size=256, bilinear):
    resize: short side -> 256, long side -> int(256 * long / short)
            (truncated), PIL's Image.resize(BILINEAR) = antialiased
            (filter support scaled by the downscale factor), 8-bit, two
            passes (horizontal first), each rounded to uint8;
    crop:   224x224 at top = int(round((h - 224) / 2)),
            left = int(round((w - 224) / 2)) -- Python's round, half to EVEN
            (58.5 -> 58, 79.5 -> 80);
    scale:  /255, then (x - mean) / std with the ImageNet mean/std.
The result is saved un-normalised (x * std + mean), which is exactly the
cropped uint8 image / 255 (checked to 1e-6), as an 8-bit RGB PNG:

prep_NAME.png (224x224 RGB)   value k stands for k/255 (compare within 1/255)

JPEG caveat: PIL decodes with libjpeg(-turbo). stb_image's decoder differs
by up to 3 levels on ~0.04% of china/flower's pixels; fed through PIL's own
resize, that leaves 1 pixel of prep_flower 2/255 away (none for china). A C
test decoding the photos with stb_image needs 2/255 there; the PNGs decode
identically.

Sizes (W x H -> resized W x H, crop left, top):
    china   sklearn china.jpg  640x427 -> 383x256, crop 80, 16  (not committed)
    flower  sklearn flower.jpg 640x427 -> 383x256, crop 80, 16  (not committed)
    gray    gray.png   301x199 8-bit grayscale, china.jpg crop box
            (40, 120, 341, 319) as "L"; -> 387x256, crop 82, 16;
            .convert("RGB") copies L into R, G, B
    rgba    rgba.png   157x263 RGBA, china.jpg crop box (380, 60, 537, 323)
            with alpha[y, x] = (3x + 5y) mod 256 (alpha 0 included);
            -> 256x428, crop 16, 102; .convert("RGB") DROPS alpha (no
            compositing, no premultiplication: the stored RGB is used)
    tiny    tiny.png   40x30 RGB, flower.jpg resized with Image.BOX;
            -> 341x256 (upscale), crop 58, 16 (half-to-even: 58.5 -> 58)
(prep_NAME.npy (3, 224, 224) float32 of the same values is written only
into --prep-npy DIR: five of them would be 3 MB.)

3. Position-embedding interpolation (vit_tv, image 32 -> 48)

pos48.npy (37, 48)
    torchvision.models.vision_transformer.interpolate_embeddings(
    image_size=48, patch_size=8, model_state=vit_tv's state_dict)
    ["encoder.pos_embedding"][0]: row 0 (class token) unchanged; rows 1..16
    as a (48, 4, 4) grid (row-major patches) resized to (48, 6, 6) by
    F.interpolate(mode="bicubic", align_corners=True): Keys cubic with
    a = -0.75, output o samples source o * (4 - 1) / (6 - 1), taps
    clamped to the border, separable; then rows 1..36.
pos48_timm.npy, pos24_timm.npy (37, 48), (10, 48)
    the same position embedding resized to 6 x 6 and 3 x 3 grids as timm's
    resample_abs_pos_embed does: F.interpolate(mode="bicubic",
    antialias=True) (PIL's bicubic, a = -0.5, filter stretched by the
    shrink factor).
pos48_hf.npy, pos24_hf.npy
    the same, as transformers' interpolate_pos_encoding:
    F.interpolate(mode="bicubic", align_corners=False).
pos48.in.npy (2, 3, 48, 48)
    torch.randn with torch.Generator().manual_seed(0).
pos48.out.npy (2, 10)
    logits of torchvision VisionTransformer(image_size=48, patch_size=8,
    same config) loaded with the interpolated state dict, on pos48.in.npy.
"""

import argparse
import os
import shutil
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
import torchvision.models.vision_transformer as tv
from PIL import Image

from check_fixtures import compare
from export import load_module, rebuild

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
SKLEARN_IMAGES = "/usr/lib/python3/dist-packages/sklearn/datasets/images"

ITEM = 1  # the batch item of vit_tv.in.npy the per-image maps are for
RATIOS = {"d0": 0.0, "d90": 0.9}
GRIDS = (3, 7, 14)
GRID_RATIOS = (0.0, 0.39, 0.53, 0.78, 0.9)
GRID_DEPTH, GRID_HEADS = 2, 3
FUSIONS = ("mean", "max", "min")
EXPLAIN_FUSIONS = ("mean", "max")
# Committed inputs made from the sklearn photos: name -> (source, how)
PNG_INPUTS = ("gray", "rgba", "tiny")
PHOTOS = ("china", "flower")
POS_SIZE = 48
POS_SMALL = 24  # a shrink: the 4 x 4 grid to 3 x 3


def _save(path, a):
    np.save(path, np.ascontiguousarray(a, dtype=np.float32))


# ---- 1. attention maps ----

def attention_maps(model, x):
    """(depth, B, NH, T, T) attention probabilities of a torchvision ViT on x, and its logits."""
    layers = list(model.encoder.layers)
    seen = {}
    hooks = [layer.ln_1.register_forward_hook(lambda m, inp, out, i=i: seen.__setitem__(i, out.detach()))
             for i, layer in enumerate(layers)]
    try:
        with torch.no_grad():
            logits = model(x)
            maps = []
            for i, layer in enumerate(layers):
                y = seen[i]
                _, w = layer.self_attention(y, y, y, need_weights=True, average_attn_weights=False)
                maps.append(w)
    finally:
        for h in hooks:
            h.remove()
    return torch.stack(maps).numpy(), logits.numpy()


def fuse(att, how):
    """Fuse over the head axis (axis 0 of (NH, ...))."""
    return {"mean": np.mean, "max": np.max, "min": np.min}[how](att, axis=0)


def _dropped(flat, ratio):
    """Flat indices rollout zeroes: the int(n * ratio) smallest (stable order), minus index 0."""
    idx = np.argsort(flat, kind="stable")[:int(flat.size * ratio)]
    return idx[idx != 0]


def rollout(att, ratio, how):
    """Rollout mask (T-1,) from one item's attention (depth, NH, T, T), rows renormalised, in float64."""
    att = att.astype(np.float64)
    t = att.shape[-1]
    eye = np.eye(t)
    result = eye.copy()
    for layer in att:
        fused = fuse(layer, how)
        flat = fused.reshape(-1)
        flat[_dropped(flat, ratio)] = 0
        a = (fused + eye) / 2
        a = a / a.sum(axis=-1, keepdims=True)
        result = a @ result
    mask = result[0, 1:]
    return mask / mask.max()


def rollout_explain(attentions, discard_ratio, head_fusion):
    """jacobgil/vit-explain's rollout() (vit_rollout.py), unchanged but for the return: the flat mask."""
    result = torch.eye(attentions[0].size(-1))
    with torch.no_grad():
        for attention in attentions:
            if head_fusion == "mean":
                attention_heads_fused = attention.mean(axis=1)
            elif head_fusion == "max":
                attention_heads_fused = attention.max(axis=1)[0]
            elif head_fusion == "min":
                attention_heads_fused = attention.min(axis=1)[0]
            flat = attention_heads_fused.view(attention_heads_fused.size(0), -1)
            _, indices = flat.topk(int(flat.size(-1) * discard_ratio), -1, False)
            indices = indices[indices != 0]
            flat[0, indices] = 0
            eye = torch.eye(attention_heads_fused.size(-1))
            a = (attention_heads_fused + 1.0 * eye) / 2
            a = a / a.sum(dim=-1)
            result = torch.matmul(a, result)
    mask = result[0, 0, 1:]
    return (mask / mask.max()).numpy()


def _check_selection(att, ratio, how):
    """Fail unless the dropped set is unambiguous: torch's topk agrees with the stable argsort, and the
    k-th and (k+1)-th smallest fused values are more than 1e-5 apart (float32 noise cannot swap them)."""
    for layer in att:
        flat64 = fuse(layer.astype(np.float64), how).reshape(-1)
        k = int(flat64.size * ratio)
        if k == 0:
            continue
        order = np.sort(flat64)
        gap = order[k] - order[k - 1]
        t = torch.from_numpy(layer)
        fused32 = {"mean": lambda: t.mean(0), "max": lambda: t.max(0)[0], "min": lambda: t.min(0)[0]}[how]()
        _, idx = fused32.reshape(-1).topk(k, -1, False)
        if set(idx.tolist()) != set(np.argsort(flat64, kind="stable")[:k].tolist()) or gap <= 1e-5:
            raise AssertionError(f"rollout {how} ratio {ratio}: ambiguous discard set (gap {gap:.3g})")


def write_attention(out, model, x, logits_ref):
    att, logits = attention_maps(model, x)
    if np.abs(logits - logits_ref).max() > 1e-5 * max(1, np.abs(logits_ref).max()):
        raise AssertionError("vit_tv reloaded does not reproduce tests/fixtures/vit_tv.out.npy")
    if np.abs(att.sum(-1) - 1).max() > 1e-5:
        raise AssertionError("attention rows do not sum to 1")
    _save(os.path.join(out, "vit_tv.att.npy"), att)
    item = att[:, ITEM]  # (depth, NH, T, T)
    for l, layer in enumerate(item):
        for h in range(layer.shape[0]):
            _save(os.path.join(out, f"cls_head{h}_layer{l}.npy"), layer[h, 0, 1:])
        for how in FUSIONS:
            _save(os.path.join(out, f"cls_{how}_layer{l}.npy"), fuse(layer.astype(np.float64), how)[0, 1:])
    for tag, ratio in RATIOS.items():
        for how in FUSIONS:
            _check_selection(item, ratio, how)
            _save(os.path.join(out, f"rollout_{how}_{tag}.npy"), rollout(item, ratio, how))
        for how in EXPLAIN_FUSIONS:
            maps = [torch.from_numpy(att[l, ITEM:ITEM + 1].copy()) for l in range(att.shape[0])]
            _save(os.path.join(out, f"rollout_explain_{how}_{tag}.npy"), rollout_explain(maps, ratio, how))


def grid_attention(g):
    """(depth, NH, T, T) attention of a g x g grid from the integer recipe of the module docstring."""
    t = g * g + 1
    n, state = t * t, g

    def draw():
        nonlocal state
        state = (state * 1664525 + 1013904223) % 2**32
        return state

    att = np.empty((GRID_DEPTH, GRID_HEADS, n), np.float32)
    for layer in att:
        perm = list(range(n))
        for i in range(n - 1, 0, -1):
            j = draw() % (i + 1)
            perm[i], perm[j] = perm[j], perm[i]
        rank = [perm[p] + (n if p < t else 0) for p in range(n)]
        for head in layer:
            head[:] = [(200 * (rank[p] + 1) + draw() % 121 - 60) * 2.0**-22 for p in range(n)]
    return att.reshape(GRID_DEPTH, GRID_HEADS, t, t)


def write_grid_rollouts(out):
    """rollout_grid{G}.npy: vit-explain's rollout at each fusion and GRID_RATIOS, and the 3 x 3 attention."""
    for g in GRIDS:
        att = grid_attention(g)
        masks = np.empty((len(FUSIONS), len(GRID_RATIOS), g * g), np.float32)
        for f, how in enumerate(FUSIONS):
            for r, ratio in enumerate(GRID_RATIOS):
                _check_selection(att, ratio, how)
                masks[f, r] = rollout_explain([torch.from_numpy(layer[None].copy()) for layer in att], ratio, how)
        _save(os.path.join(out, f"rollout_grid{g}.npy"), masks)
        if g == GRIDS[0]:
            _save(os.path.join(out, f"rollout_grid{g}.att.npy"), att)


# ---- 2. preprocessing ----

def make_inputs(out, images):
    """Write gray.png, rgba.png and tiny.png, small images made from the sklearn photos."""
    china = Image.open(os.path.join(images, "china.jpg")).convert("RGB")
    flower = Image.open(os.path.join(images, "flower.jpg")).convert("RGB")
    china.crop((40, 120, 341, 319)).convert("L").save(os.path.join(out, "gray.png"))
    rgba = china.crop((380, 60, 537, 323)).convert("RGBA")
    w, h = rgba.size
    yy, xx = np.mgrid[0:h, 0:w]
    rgba.putalpha(Image.fromarray(((3 * xx + 5 * yy) % 256).astype(np.uint8), "L"))
    rgba.save(os.path.join(out, "rgba.png"))
    flower.resize((40, 30), Image.BOX).save(os.path.join(out, "tiny.png"))


def preprocess(path):
    """(3, 224, 224) float32: the ViT-B/16 transforms of the image at path, un-normalised to [0, 1]."""
    transform = torchvision.models.ViT_B_16_Weights.IMAGENET1K_V1.transforms()
    with Image.open(path) as im:
        x = transform(im.convert("RGB"))
    mean = torch.tensor(transform.mean).view(3, 1, 1)
    std = torch.tensor(transform.std).view(3, 1, 1)
    return (x * std + mean).numpy()


def write_prep(out, sources, npy_dir=None):
    """prep_NAME.png for each name -> image path (and prep_NAME.npy into npy_dir)."""
    for name, path in sources.items():
        x = preprocess(path)
        pixels = np.rint(x * 255)
        if np.abs(x * 255 - pixels).max() > 255e-6 or pixels.min() < 0 or pixels.max() > 255:
            raise AssertionError(f"{name}: preprocessed values are not k/255")
        Image.fromarray(pixels.astype(np.uint8).transpose(1, 2, 0), "RGB").save(os.path.join(out, f"prep_{name}.png"))
        if npy_dir:
            _save(os.path.join(npy_dir, f"prep_{name}.npy"), x)


# ---- 3. position embeddings ----

def write_pos(out, model, meta):
    state = tv.interpolate_embeddings(POS_SIZE, int(meta["patch_size"]), dict(model.state_dict()))
    big = rebuild(dict(meta, image_size=str(POS_SIZE)))
    big.load_state_dict(state)
    x = torch.randn((2, 3, POS_SIZE, POS_SIZE), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits = big(x)
    _save(os.path.join(out, "pos48.npy"), state["encoder.pos_embedding"][0])
    _save(os.path.join(out, "pos48.in.npy"), x)
    _save(os.path.join(out, "pos48.out.npy"), logits)
    # The same grid resized as timm and transformers resize theirs.
    pos = model.state_dict()["encoder.pos_embedding"]
    for size in (POS_SIZE, POS_SMALL):
        grid = size // int(meta["patch_size"])
        _save(os.path.join(out, f"pos{size}_timm.npy"), timm_resample(pos, grid)[0])
        _save(os.path.join(out, f"pos{size}_hf.npy"), hf_interpolate(pos, grid)[0])


def _grid(pos):
    """(1, 1 + G*G, C) -> class row (1, 1, C), grid (1, C, G, G)."""
    g = int(round((pos.shape[1] - 1) ** 0.5))
    return pos[:, :1], pos[:, 1:].reshape(1, g, g, -1).permute(0, 3, 1, 2)


def _ungrid(cls, grid):
    return torch.cat([cls, grid.permute(0, 2, 3, 1).reshape(1, -1, grid.shape[1])], dim=1)


def timm_resample(pos, grid):
    """timm.layers.resample_abs_pos_embed(pos, (grid, grid)) with its defaults
    (interpolation='bicubic', antialias=True, one prefix token): timm is not a
    Debian package, so its one F.interpolate call is written out here."""
    cls, g = _grid(pos)
    return _ungrid(cls, F.interpolate(g, size=(grid, grid), mode="bicubic", antialias=True))


def hf_interpolate(pos, grid):
    """transformers' ViTEmbeddings.interpolate_pos_encoding for a square image
    of grid patches a side (its size= form, transformers >= 4.4x)."""
    cls, g = _grid(pos)
    return _ungrid(cls, F.interpolate(g, size=(grid, grid), mode="bicubic", align_corners=False))


# ---- all ----

def have_photos(images):
    return all(os.path.exists(os.path.join(images, f"{p}.jpg")) for p in PHOTOS)


def generate(out, images=SKLEARN_IMAGES, fixtures=FIXTURES, npy_dir=None):
    """Write every file into out; the preprocessing part only when the sklearn photos exist (returns whether)."""
    torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    model, meta = load_module(os.path.join(fixtures, "vit_tv.safetensors"))
    x = torch.from_numpy(np.load(os.path.join(fixtures, "vit_tv.in.npy")))
    write_attention(out, model, x, np.load(os.path.join(fixtures, "vit_tv.out.npy")))
    write_grid_rollouts(out)
    write_pos(out, model, meta)
    if not have_photos(images):
        return False
    make_inputs(out, images)
    sources = {p: os.path.join(images, f"{p}.jpg") for p in PHOTOS}
    sources.update((n, os.path.join(out, f"{n}.png")) for n in PNG_INPUTS)
    if npy_dir:
        os.makedirs(npy_dir, exist_ok=True)
    write_prep(out, sources, npy_dir)
    return True


def _image_files():
    return {f"{n}.png" for n in PNG_INPUTS} | {f"prep_{n}.png" for n in PHOTOS + PNG_INPUTS}


def check(committed, images):
    """Regenerate into a temporary directory and compare; 0 when current, 1 on drift."""
    with tempfile.TemporaryDirectory() as fresh:
        full = generate(fresh, images)
        if not full:
            # Without the photos the image files cannot be regenerated: leave them out of the comparison.
            with tempfile.TemporaryDirectory() as rest:
                for name in os.listdir(committed):
                    if name not in _image_files():
                        shutil.copy(os.path.join(committed, name), rest)
                problems = compare(fresh, rest)
        else:
            problems = compare(fresh, committed)
    if problems:
        print(f"{committed} has drifted from tools/maps_reference.py:", *problems, sep="\n  ")
        print("If the change is intended, regenerate: build/venv/bin/python tools/maps_reference.py")
        return 1
    if not full:
        print(f"warning: no {', '.join(p + '.jpg' for p in PHOTOS)} in {images}: "
              f"skipped {len(_image_files())} image files")
    print(f"{committed}: current ({len(os.listdir(committed))} files)")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(FIXTURES, "maps"), help="default: tests/fixtures/maps")
    parser.add_argument("--images", default=SKLEARN_IMAGES, help="directory holding china.jpg and flower.jpg")
    parser.add_argument("--check", action="store_true", help="compare --out with a fresh run instead of writing")
    parser.add_argument("--prep-npy", metavar="DIR", help="also write prep_NAME.npy (3, 224, 224) float32 into DIR")
    args = parser.parse_args(argv)
    if args.check:
        return check(args.out, args.images)
    if not have_photos(args.images):  # before writing anything
        parser.exit(1, f"maps_reference.py: error: no {' / '.join(p + '.jpg' for p in PHOTOS)} in {args.images} "
                       f"(apt-get install python3-sklearn, or pass --images DIR)\n")
    generate(args.out, args.images, npy_dir=args.prep_npy)
    print(f"wrote {len(os.listdir(args.out))} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The explanation methods tools/explain_reference.py runs on timm ViTs, each as its authors' code computes it.

- forward_backward: attention probabilities, tokens and their gradients by autograd.
- vit_explain_rollout / vit_explain_grad_rollout: our reimplementation of
  jacobgil/vit-explain at commit 15a81d355a5aa6128ea4e71bbd56c28888d0f33b
  (vit_rollout.py: rollout, VITAttentionRollout; vit_grad_rollout.py:
  grad_rollout, VITAttentionGradRollout), not on PyPI.
- chefer: our reimplementation of Chefer et al. 2021's ViT rule as
  hila-chefer/Transformer-MM-Explainability's ViT notebook runs it
  (Transformer_MM_explainability_ViT.ipynb at commit
  58eaea85ac9c34aff052f368514b35d2e4c8dd3c: avg_heads,
  apply_self_attention_rules, generate_relevance; the attention and its
  gradient as hila-chefer/Transformer-Explainability's
  baselines/ViT/ViT_new.py, Attention.forward, at commit
  6b4f3119cb93da4c5aa2751f9dc6f838467defb0, hooks them), not on PyPI.
- legrad: torchcam 0.5.0's LeGrad (tools/explain_legrad.py ports it to torch 1.13).
- gradcam: pytorch-grad-cam 1.5.7's GradCAM, set up as jacobgil/pytorch-grad-cam's
  ViT tutorial does (tutorials/vision_transformers.md at commit
  1cb3b5b8f3bf717cb286ba667e12cf3d93ab6b8f, usage_examples/vit_example.py at
  18144f2afc8a14a73e71b68dc7fbdb7378af2f8e: target_layers = [model.blocks[-1].norm1],
  a reshape_transform dropping the class token). Its reason for norm1 (the
  class token's last block ignores the patches' outputs) does not hold for
  the average- and attention-pooled models; we keep norm1 for all, so the
  six cases use one rule.
- integrated_gradients: Sundararajan et al. 2017, Riemann midpoint rule.

Models without a class token (timm's gap and SigLIP's 'map' pooling): the
rollout-type methods read the mean over all rows (queries) of their final
token-by-token matrix instead of the class token's row ("query mean" in
meta.txt); the columns kept are the patches' in both cases.
"""

import copy
import warnings

import numpy as np
import torch


def _blocks_attn_drop(model):
    """The modules vit-explain hooks: every module whose name contains 'attn_drop' (one per block in timm's ViT)."""
    return [m for n, m in model.named_modules() if "attn_drop" in n]


class _Hooks:
    """Handles removed on exit."""

    def __init__(self):
        self.handles = []

    def add(self, handle):
        self.handles.append(handle)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        for h in self.handles:
            h.remove()


def forward_backward(model, x, seed):
    """out (1, W); attn, grad_attn (L, 1, NH, T, T); tokens, grad_tokens (L+1, 1, T, C); grad_input (1, 3, S, S).

    attn is what each block's attn_drop receives and returns (the softmax output:
    timm's Attention without fused attention, torch 1.13); tokens[0] what enters
    blocks[0] (after patch embedding, prefix tokens, position embedding and
    norm_pre), tokens[l + 1] what block l returns; every gradient is of
    (out * seed).sum()."""
    attn, tokens = [], []

    def keep(store, t):
        t.retain_grad()
        store.append(t)

    x = x.clone().requires_grad_(True)
    with _Hooks() as hooks:
        for blk in model.blocks:
            hooks.add(blk.attn.attn_drop.register_forward_hook(lambda m, i, o: keep(attn, o)))
            hooks.add(blk.register_forward_hook(lambda m, i, o: keep(tokens, o)))
        hooks.add(model.blocks[0].register_forward_pre_hook(lambda m, i: keep(tokens, i[0])))
        out = model(x)
        (out * seed).sum().backward()
    # block 0's pre-hook runs before any block's forward hook: tokens[0] is the input
    return {
        "out": out.detach(), "attn": torch.stack([a.detach() for a in attn]),
        "grad_attn": torch.stack([a.grad for a in attn]), "tokens": torch.stack([t.detach() for t in tokens]),
        "grad_tokens": torch.stack([t.grad for t in tokens]), "grad_input": x.grad.detach(),
    }


# ---- vit-explain (jacobgil/vit-explain @ 15a81d3) ----

def _rollout_matrix(fused, discard_ratio, spare_first):
    """One layer of vit-explain's rollout: fused (1, T, T) heads already fused; returns a (1, T, T).

    As vit_rollout.py / vit_grad_rollout.py do: the int(T * T * discard_ratio)
    smallest entries of the flattened matrix are set to 0, in place (rollout
    spares flat index 0, the [0, 0] entry; grad_rollout has that line commented
    out), then a = (fused + I) / 2 and a / a.sum(dim=-1): the sum has shape
    (1, T) and broadcasts over the LAST axis, so entry [i, j] is divided by row
    j's sum, not row i's. That is what their code computes, so we keep it."""
    flat = fused.view(fused.size(0), -1)
    _, drop = flat.topk(int(flat.size(-1) * discard_ratio), -1, largest=False)
    if spare_first:
        drop = drop[drop != 0]
    flat[0, drop] = 0
    eye = torch.eye(fused.size(-1), dtype=fused.dtype)
    a = (fused + eye) / 2
    return a / a.sum(dim=-1)


def _read_rows(result, prefix, query):
    """(G, G) numpy: the class token's row (query 'cls'), or the mean of all rows (query 'mean'),
    at the patch columns. vit-explain reads result[0, 0, 1:]: with distillation or register
    tokens the patches start at `prefix`, not 1."""
    rows = result[0, 0] if query == "cls" else result[0].mean(dim=0)
    mask = rows[prefix:]
    width = int(mask.numel() ** 0.5)
    return mask.reshape(width, width).numpy()


def vit_explain_rollout(model, x, discard_ratio, prefix, query):
    """VITAttentionRollout(model, head_fusion='mean', discard_ratio)(x): divided by its max, as vit-explain returns it."""
    attentions = []
    with _Hooks() as hooks:
        for m in _blocks_attn_drop(model):
            hooks.add(m.register_forward_hook(lambda m, i, o: attentions.append(o.detach().clone())))
        with torch.no_grad():
            model(x)
    result = torch.eye(attentions[0].size(-1))
    with torch.no_grad():
        for attention in attentions:
            a = _rollout_matrix(attention.mean(dim=1), discard_ratio, spare_first=True)
            result = torch.matmul(a, result)
    mask = _read_rows(result, prefix, query)
    return mask / np.max(mask)


def vit_explain_grad_rollout(model, x, seed, discard_ratio, prefix, query, fixed):
    """VITAttentionGradRollout(model, discard_ratio)(x, category): divided by its max.

    The target is (out * seed).sum(), vit-explain's (output * category_mask).sum()
    when seed is one-hot. Its gradients come from Module.register_backward_hook
    on attn_drop, taking grad_input[0]. In eval (and at timm's attn_drop p = 0)
    F.dropout returns its input tensor itself, so that old-style hook lands on
    the softmax's backward node and grad_input[0] is d target / d (pre-softmax
    scores), A * (g - sum_k A * g) for the probabilities' gradient g: we use the
    same hook, so the same tensor (selftest checks which it is). The hook fires
    in backward order, last block first, and vit-explain zips that list with the
    attentions in forward order: fixed=False keeps that pairing (layer l with
    layer L-1-l's gradient), fixed=True reverses the list (vit-explain issue #6)."""
    attentions, gradients = [], []
    with _Hooks() as hooks, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation note on register_backward_hook
        for m in _blocks_attn_drop(model):
            hooks.add(m.register_forward_hook(lambda m, i, o: attentions.append(o.detach().clone())))
            hooks.add(m.register_backward_hook(lambda m, gi, go: gradients.append(gi[0].detach().clone())))
        model.zero_grad()
        out = model(x)
        (out * seed).sum().backward()
    if fixed:
        gradients = gradients[::-1]
    result = torch.eye(attentions[0].size(-1))
    with torch.no_grad():
        for attention, grad in zip(attentions, gradients):
            fused = (attention * grad).mean(dim=1)
            fused[fused < 0] = 0
            a = _rollout_matrix(fused, discard_ratio, spare_first=False)
            result = torch.matmul(a, result)
    mask = _read_rows(result, prefix, query)
    return mask / np.max(mask)


# ---- Chefer et al. 2021 (Transformer-MM-Explainability @ 58eaea8) ----

def chefer(model, x, seed, prefix, query):
    """generate_relevance: R = I; per block R += mean over heads of clamp(grad * attn, min=0) @ R; raw R[q, prefix:].

    The attention is each block's post-attn_drop probabilities and the gradient
    is taken on that tensor (ViT_new.py's attn.register_hook), for (out * seed).sum()
    (the notebook's one_hot * output)."""
    attentions, gradients = [], [None] * len(model.blocks)

    def keep(idx, o):
        attentions.append(o.detach())
        o.register_hook(lambda g: gradients.__setitem__(idx, g.detach()))

    with _Hooks() as hooks:
        for idx, blk in enumerate(model.blocks):
            hooks.add(blk.attn.attn_drop.register_forward_hook(lambda m, i, o, idx=idx: keep(idx, o)))
        model.zero_grad()
        out = model(x)
        (out * seed).sum().backward()
    t = attentions[0].shape[-1]
    relevance = torch.eye(t)
    for attention, grad in zip(attentions, gradients):
        # avg_heads: batch and heads flattened together, then the mean (B = 1: over heads)
        cam = (grad * attention).reshape(-1, t, t).clamp(min=0).mean(dim=0)
        relevance = relevance + torch.matmul(cam, relevance)
    return _read_rows(relevance[None], prefix, query)


# ---- torchcam 0.5.0 LeGrad ----

def legrad(model, x, seed, cls, prefix):
    """torchcam's LeGrad over every block, unnormalised (normalized=False), (G, G).

    score_projection maps block l's tokens to scores with the model's own tail,
    forward_head(norm(tokens)) (torchcam's built-in projection is for
    torchvision only); for a target vector (no head) the score is that tail's
    features dotted with the seed, class index 0."""
    from explain_legrad import TimmLeGrad

    if cls is None:
        def project(tokens):
            return (model.forward_head(model.norm(tokens)) * seed).sum(dim=-1, keepdim=True)
        idx = 0
    else:
        def project(tokens):
            return model.forward_head(model.norm(tokens))
        idx = cls
    with TimmLeGrad(model, list(model.blocks), score_projection=project, prefix_tokens=prefix) as extractor:
        out = model(x)
        # the last block's score must be the target itself: the projection is the model's own tail
        want = (out * seed).sum(dim=-1) if cls is None else out[:, cls]
        assert torch.allclose(extractor.hook_a[-1][:, idx], want, rtol=1e-5, atol=1e-6), "score_projection != model tail"
        cam = extractor(idx, normalized=False)[0]
    return cam[0].detach()


# ---- pytorch-grad-cam 1.5.7 GradCAM ----

def gradcam(model, x, seed, cls, prefix, grid):
    """GradCAM on blocks[-1].norm1 (its ViT tutorial's target layer), prefix tokens dropped: (G, G), ReLU'd, raw.

    The library returns only a min-max scaled map resized to the image (cv2);
    the raw map is its own get_cam_image on the activations and gradients it
    recorded, followed by the np.maximum(cam, 0) of compute_cam_per_layer,
    i.e. everything before scale_cam_image."""
    from pytorch_grad_cam import GradCAM
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget

    def drop_prefix(t):
        # the tutorial's reshape_transform, with `prefix` tokens dropped instead of 1
        r = t[:, prefix:, :].reshape(t.size(0), grid, grid, t.size(2))
        return r.transpose(2, 3).transpose(1, 2)

    if cls is None:
        def target(output):
            return (output * seed[0]).sum()
    else:
        target = ClassifierOutputTarget(cls)
    layer = model.blocks[-1].norm1
    with GradCAM(model=model, target_layers=[layer], reshape_transform=drop_prefix) as cam:
        cam(input_tensor=x, targets=[target])
        acts = cam.activations_and_grads.activations[0].numpy()
        grads = cam.activations_and_grads.gradients[0].numpy()
        raw = cam.get_cam_image(x, layer, [target], acts, grads)
    return np.maximum(raw, 0)[0]


def integrated_gradients(model, x, seed, steps):
    """(S, S): sum over channels of x * mean_i grad((i + 0.5) / steps * x), baseline zeros, all steps in one batch."""
    alphas = (torch.arange(steps, dtype=x.dtype) + 0.5) / steps
    xs = (alphas.view(steps, 1, 1, 1) * x).requires_grad_(True)
    out = model(xs)
    (out * seed).sum().backward()
    return (x[0] * xs.grad.mean(dim=0)).sum(dim=0).detach()


def maps_from_arrays(attn, grad_attn, prefix, query, discard_ratio):
    """rollout, grad_rollout, grad_rollout_orig and chefer from attn (L, 1, NH, T, T) and grad_attn alone.

    What a consumer of the fixture files has: vit-explain's gradient is the
    pre-softmax one, A * (g - sum over keys of A * g)."""
    pre = attn * (grad_attn - (attn * grad_attn).sum(dim=-1, keepdim=True))
    t = attn.shape[-1]
    out = {}
    result = torch.eye(t)
    for a in attn:
        result = _rollout_matrix(a.mean(dim=1).clone(), discard_ratio, spare_first=True) @ result
    mask = _read_rows(result, prefix, query)
    out["rollout"] = mask / mask.max()
    for key, grads in (("grad_rollout", pre), ("grad_rollout_orig", pre.flip(0))):
        result = torch.eye(t)
        for a, g in zip(attn, grads):
            result = _rollout_matrix((a * g).mean(dim=1).clamp(min=0), discard_ratio, spare_first=False) @ result
        mask = _read_rows(result, prefix, query)
        out[key] = mask / mask.max()
    relevance = torch.eye(t)
    for a, g in zip(attn, grad_attn):
        relevance = relevance + (g * a)[0].clamp(min=0).mean(dim=0) @ relevance
    out["chefer"] = _read_rows(relevance[None], prefix, query)
    return out


# ---- selftest: gradients against finite differences ----

def _target64(model, x, seed, bump=None):
    """(out * seed).sum() with an optional (kind, layer, index, eps) added to one tensor on the way."""
    with _Hooks() as hooks, torch.no_grad():
        if bump is not None:
            kind, layer, index, eps = bump

            def add(t):
                t = t.clone()
                t[index] += eps
                return t
            if kind == "attn":
                hooks.add(model.blocks[layer].attn.attn_drop.register_forward_hook(lambda m, i, o: add(o)))
            elif kind == "tokens" and layer == 0:
                hooks.add(model.blocks[0].register_forward_pre_hook(lambda m, i: (add(i[0]),) + tuple(i[1:])))
            elif kind == "tokens":
                hooks.add(model.blocks[layer - 1].register_forward_hook(lambda m, i, o: add(o)))
            else:
                x = add(x)
        return float((model(x) * seed).sum())


def selftest(cases, points=4, eps=1e-6):
    """For each case: autograd in float64 against central differences at a few random entries of
    grad_input, grad_attn and grad_tokens; float32 gradients against float64 ones; vit-explain's
    hooked gradient against the softmax backward of grad_attn. Prints the worst of each."""
    failed = 0
    for name, (model32, x32, seed32) in cases.items():
        model = copy.deepcopy(model32).double()
        x, seed = x32.double(), seed32.double()
        fw, f32 = forward_backward(model, x, seed), forward_backward(model32, x32, seed32)
        rng = np.random.default_rng(0)
        worst_fd = 0.0
        for kind, grads, layers in (("input", fw["grad_input"][None], 1), ("attn", fw["grad_attn"], len(model.blocks)),
                                    ("tokens", fw["grad_tokens"], len(model.blocks) + 1)):
            for layer in range(layers):
                g = grads[layer]
                scale = float(g.abs().max())
                for _ in range(points):
                    index = tuple(int(rng.integers(n)) for n in g.shape)
                    up = _target64(model, x, seed, (kind, layer, index, eps))
                    down = _target64(model, x, seed, (kind, layer, index, -eps))
                    fd = (up - down) / (2 * eps)
                    worst_fd = max(worst_fd, abs(fd - float(g[index])) / scale)
        worst_32 = max(float((f32[k].double() - fw[k]).abs().max() / fw[k].abs().max())
                       for k in ("grad_input", "grad_attn", "grad_tokens"))
        # what vit-explain's register_backward_hook on attn_drop hands over, in backward order
        hooked = []
        with _Hooks() as hooks, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for m in _blocks_attn_drop(model):
                hooks.add(m.register_backward_hook(lambda m, gi, go: hooked.append(gi[0].detach())))
            (model(x) * seed).sum().backward()
        a, g = fw["attn"], fw["grad_attn"]
        pre_softmax = a * (g - (a * g).sum(dim=-1, keepdim=True))
        worst_hook = max(float((h - pre_softmax[len(hooked) - 1 - i]).abs().max() / pre_softmax.abs().max())
                         for i, h in enumerate(hooked))
        # the rollout-type maps again from the arrays the fixtures hold (attn, grad_attn), as a C test would
        prefix, query = model32.num_prefix_tokens, "cls" if model32.cls_token is not None else "mean"
        worst_maps = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in (
            (maps_from_arrays(f32["attn"], f32["grad_attn"], prefix, query, 0.9)[k], v) for k, v in (
                ("rollout", vit_explain_rollout(model32, x32, 0.9, prefix, query)),
                ("grad_rollout", vit_explain_grad_rollout(model32, x32, seed32, 0.9, prefix, query, fixed=True)),
                ("grad_rollout_orig", vit_explain_grad_rollout(model32, x32, seed32, 0.9, prefix, query, fixed=False)),
                ("chefer", chefer(model32, x32, seed32, prefix, query)))))
        # integrated gradients' completeness, sum(ig) = f(x) - f(0) up to the midpoint rule's error (16 steps)
        ig = integrated_gradients(model, x, seed, 16)
        gap = abs(float(ig.sum()) - (_target64(model, x, seed) - _target64(model, 0 * x, seed)))
        gap /= abs(_target64(model, x, seed) - _target64(model, 0 * x, seed))
        ok = worst_fd < 1e-6 and worst_32 < 1e-4 and worst_hook < 1e-12 and worst_maps < 1e-5
        failed += not ok
        print(f"{name}: finite differences (float64, eps {eps:g}) vs autograd: max |diff| / max |grad| {worst_fd:.2e}; "
              f"float32 vs float64 grads {worst_32:.2e}; vit-explain hook vs d/d pre-softmax {worst_hook:.2e}; "
              f"rollout/grad-rollout/chefer from attn.npy + grad_attn.npy {worst_maps:.2e}; "
              f"IG completeness gap (16 steps) {gap:.2e}{'' if ok else '  FAILED'}")
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0

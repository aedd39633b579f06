"""Every timm model name against vit.h's table of architectures: the check that vit.h runs exactly what it accepts.

    build/venv/bin/python tools/arch_reference.py [--vit build/native/vit] [--list]

A timm config.json's "architecture" is the authority on what a checkpoint
computes (vit.h's vit__timm_archs). For each name in timm.list_models()
this asks vit.h (`vit info` on a small timm-named file, with a config.json
naming it) whether it runs the name, and checks the answer against timm's
own source:

- a name from any module but vision_transformer.py and deit.py (timm's
  VisionTransformer class) and beit.py (its Beit class) is refused, by
  name, with what vit.h lacks;
- a name vit.h accepts is one whose entrypoint asks _create_vision_transformer
  (or _create_deit) only for features vit.h runs: timm's Block, Attention
  and Mlp (or the packed SwiGLU of DINOv2-giant), a learned position
  embedding, a final LayerNorm, LayerNorm (any eps) and a pool vit.h has
  (token, avg, map); the LayerNorm eps and activation vit.h reports must
  be the entrypoint's. A Beit name is asked of a BEiT file (the families
  fixture) and must ask _create_beit only for what vit.h runs: a relative
  position bias per block or shared (not both), layer scale, timm's Mlp
  or SwiGLU with or without a LayerNorm inside, LayerNorm, the token or
  avg pool. An Eva name
  (eva.py) is asked of an EVA-02 file and must ask _create_eva only for
  EVA-02's or EVA-01 giant's features: q and v biases (qkv fused or not),
  timm's Mlp or a SwiGLU (packed, or apart), either with a LayerNorm
  inside (scale_mlp), a
  LayerNorm inside the attention (scale_attn_inner), EvaAttention or
  AttentionRope, register tokens, a LayerNorm before the blocks, the
  token, avg or map pool, and a rotary embedding vit.h runs (timm's
  RotaryEmbeddingCat, RotaryEmbeddingDinoV3 or RotaryEmbeddingMixed) or
  none, whose every setting (type, reference grid, temperature, offset,
  grid order, pairing) and attention pool's heads vit.h must report as
  timm's entrypoint sets them. A mixed RoPE name is asked of a RoPE-Mixed
  file (its rope.freqs).

vit.h may refuse a supported name (the table is conservative). Then every
transformers model_type (CONFIG_MAPPING_NAMES) on a transformers ViT file:
vit.h runs 'vit', refuses the other eight it knows as another naming than
the file's, and refuses every other model_type by name. --list prints
every name with its verdict. Exit 1 on any disagreement.
"""

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# a timm-named ViT (hidden 12, 2 blocks, 2 heads), no config of its own
MODEL = os.path.join(ROOT, "tests", "fixtures", "naming", "bad", "no_heads", "model.safetensors")
# a transformers ViTForImageClassification (hidden 30, 5 heads)
HF_MODEL = os.path.join(ROOT, "tests", "fixtures", "naming", "hf_cls", "model.safetensors")
# the model_types vit.h runs (vit__hf_archs), each in its own naming
HF_RUNS = ("vit", "dinov2", "dinov2_with_registers", "clip", "clip_vision_model", "siglip", "siglip_vision_model", "beit",
           "data2vec-vision")
VIT_MODULES = ("vision_transformer", "deit")
# a timm Beit file (hidden 48, 3 heads, a relative position bias per block): vit.h's BEiT names are asked of it
BEIT_MODEL = os.path.join(ROOT, "tests", "fixtures", "families", "beit", "model.safetensors")
BEIT_MODULES = ("beit",)
# a timm Eva file (EVA-02 Ti made small: hidden 48, 3 heads, rotary embeddings): vit.h's Eva names are asked of it
EVA_MODEL = os.path.join(ROOT, "tests", "fixtures", "families", "eva02", "model.safetensors")
# the MLP is the tensors' to say: Eva names without a SwiGLU (EVA-01 giant) are asked of a file with a GELU MLP
EVA_GELU_MODEL = os.path.join(ROOT, "tests", "fixtures", "families", "eva_giant", "model.safetensors")
# timm's AttentionRope keeps one qkv bias (PE, NAVER's RoPE ViTs): their names are asked of such a file, and the
# mixed RoPE names of one with the learned frequencies (rope.freqs)
ROPE_MODEL = os.path.join(ROOT, "tests", "fixtures", "families", "rope_axial", "model.safetensors")
ROPE_MIXED_MODEL = os.path.join(ROOT, "tests", "fixtures", "families", "rope_mixed", "model.safetensors")
# and those with an attention pool (Perception Encoder) of a file that has one
PE_MODEL = os.path.join(ROOT, "tests", "fixtures", "families", "pe_core", "model.safetensors")
EVA_MODULES = ("eva",)
OTHER = BEIT_MODULES + EVA_MODULES  # modules whose names are asked of a file of their own


def timm_entrypoint_args():
    """{name: (module, kwargs or None)}: each timm model's module, and for timm's VisionTransformer the arguments its
    entrypoint gives the class (captured, no model built)."""
    import logging
    import warnings
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    import timm
    import timm.models.beit as BE
    import timm.models.deit as D
    import timm.models.eva as EV
    import timm.models.vision_transformer as V
    from timm.models import _registry as R

    class Captured(Exception):
        pass

    got = {}

    def capture(variant, pretrained=False, distilled=False, **kw):
        got[variant] = kw
        raise Captured

    saved = V._create_vision_transformer, D._create_deit, BE._create_beit, EV._create_eva
    V._create_vision_transformer, D._create_deit, BE._create_beit, EV._create_eva = capture, capture, capture, capture
    out = {}
    try:
        for name in timm.list_models():
            module = R._model_to_module[name]
            if module in VIT_MODULES + OTHER:
                try:
                    R.model_entrypoint(name)(pretrained=False)
                except Captured:
                    pass
            out[name] = (module, got.get(name))
    finally:
        V._create_vision_transformer, D._create_deit, BE._create_beit, EV._create_eva = saved
    return out


def _norm_eps(norm, eps, lacks):
    """The LayerNorm eps a norm_layer argument sets (eps when it sets none); anything but a LayerNorm with
    only eps bound is appended to lacks."""
    import torch.nn as nn
    import timm.layers as L
    if norm is None:
        return eps
    if isinstance(norm, functools.partial) and norm.func in (L.LayerNorm, nn.LayerNorm) and set(norm.keywords) == {"eps"}:
        return norm.keywords["eps"]
    lacks.append(f"norm_layer {norm}")
    return eps


def supported(kw):
    """(what vit.h lacks for these VisionTransformer arguments (empty: nothing), LayerNorm eps, activation)."""
    import torch.nn as nn
    import timm.layers as L
    import timm.models.vision_transformer as V
    lacks, eps, glu = [], 1e-6, False
    g = kw.get
    if g("block_fn") not in (None, V.Block):
        lacks.append(f"block_fn {g('block_fn').__name__}")
    if g("attn_layer") is not None:
        lacks.append(f"attn_layer {g('attn_layer')}")
    mlp = g("mlp_layer")
    if mlp is not None:  # SwiGLUPacked: GluMlp with the gate first, as DINOv2-giant
        glu = isinstance(mlp, functools.partial) and mlp.func is L.GluMlp and mlp.keywords.get("gate_last") is False
        if not glu:
            lacks.append(f"mlp_layer {mlp}")
    for k in ("scale_attn_norm", "scale_mlp_norm", "pool_include_prefix", "dynamic_img_pad"):
        if g(k):
            lacks.append(k)
    for k in ("proj_bias", "final_norm"):
        if g(k) is False:
            lacks.append(f"{k}=False")
    if g("embed_norm_layer") is not None:
        lacks.append("embed_norm_layer")
    if g("embed_layer") is not None:
        lacks.append("embed_layer")
    if g("pos_embed", "learn") != "learn":
        lacks.append(f"pos_embed {g('pos_embed')}")
    if g("global_pool", "token") not in ("token", "avg", "map"):
        lacks.append(f"global_pool {g('global_pool')}")
    eps = _norm_eps(g("norm_layer"), eps, lacks)
    act = {None: "gelu", "gelu": "gelu", "gelu_tanh": "gelu_tanh", "quick_gelu": "quick_gelu", "silu": "silu",
           nn.SiLU: "silu", nn.GELU: "gelu"}.get(g("act_layer"), None)
    if act is None:
        lacks.append(f"act_layer {g('act_layer')}")
    for k in ("img_size", "patch_size"):
        v = g(k)
        if isinstance(v, (tuple, list)) and v[0] != v[1]:
            lacks.append(f"{k} not square")
    return lacks, eps, "silu (gated)" if glu else act


def supported_beit(kw):
    """(what vit.h lacks for these Beit arguments (empty: nothing), LayerNorm eps, activation)."""
    import torch.nn as nn
    lacks, eps = [], 1e-6
    g = kw.get
    if g("use_rel_pos_bias") and g("use_shared_rel_pos_bias"):
        lacks.append("a relative position bias per block and a shared one")
    if g("attn_head_dim") is not None:
        lacks.append("attn_head_dim")
    if g("global_pool", "avg") not in ("token", "avg"):
        lacks.append(f"global_pool {g('global_pool')}")
    eps = _norm_eps(g("norm_layer"), eps, lacks)
    if g("act_layer") not in (None, nn.GELU):
        lacks.append(f"act_layer {g('act_layer')}")
    for k in ("img_size", "patch_size"):
        v = g(k)
        if isinstance(v, (tuple, list)) and v[0] != v[1]:
            lacks.append(f"{k} not square")
    return lacks, eps, "gelu"


def supported_eva(kw):
    """(what vit.h lacks for these Eva arguments (empty: nothing), LayerNorm eps, activation, the rotary embedding's
    and attention pool's settings as vit info prints them)."""
    import torch.nn as nn
    lacks, eps = [], 1e-6
    g = kw.get
    for k in ("qk_norm", "use_post_norm", "attn_only_layer_scale", "gated_attn", "dynamic_img_pad", "num_kv_heads",
              "attn_head_dim", "rope_mrope_section"):
        if g(k):
            lacks.append(k)
    if g("attn_type", "eva") not in ("eva", "rope"):
        lacks.append(f"attn_type={g('attn_type')!r}")
    rope_type = g("rope_type", "cat")
    if rope_type not in ("cat", "dinov3", "mixed"):
        lacks.append(f"rope_type={rope_type!r}")
    if g("use_post_transformer_norm") is False:
        lacks.append("use_post_transformer_norm=False")
    if g("global_pool", "avg") not in ("token", "avg", "map"):
        lacks.append(f"global_pool {g('global_pool')}")
    eps = _norm_eps(g("norm_layer"), eps, lacks)
    if not g("swiglu_mlp") and g("act_layer") not in (None, nn.GELU):
        lacks.append(f"act_layer {g('act_layer')}")
    ref = g("ref_feat_shape")
    if isinstance(ref, (tuple, list)):
        if ref[0] != ref[1]:
            lacks.append("ref_feat_shape not square")
        ref = ref[0]
    for k in ("img_size", "patch_size"):
        v = g(k)
        if isinstance(v, (tuple, list)) and v[0] != v[1]:
            lacks.append(f"{k} not square")
    # as timm's create_rope_embed hands them on: the mixed one takes no reference grid and no offset, DINOv3's no
    # reference grid; vit_config.rope numbers them cat 1, dinov3 2, mixed 3
    rope = g("use_rot_pos_emb", False)
    kind = {"cat": 1, "dinov3": 2, "mixed": 3}.get(rope_type, 0) if rope else 0
    said = (f"rope={kind} rope_ref={(ref or 0) if kind == 1 else 0} rope_temp={g('rope_temperature', 10000.) if kind else 0:g} "
            f"rope_offset={g('rope_grid_offset', 0.) if kind in (1, 2) else 0:g} "
            f"rope_xy={int(g('rope_grid_indexing', 'ij') == 'xy') if kind else 0} "
            f"rope_half={int(bool(g('rope_rotate_half'))) if kind else 0}")
    if g("global_pool") == "map":
        said += f" pool_heads={g('attn_pool_num_heads') or 0}"
    return lacks, eps, "silu (gated)" if g("swiglu_mlp") else "gelu", said


def vit_verdict(vit, name, tmp, hf=False, beit=False, eva=False):
    """(accepted, what vit info said: the inferred line, or the refusal)."""
    cfg = os.path.join(tmp, "config.json")
    with open(cfg, "w") as f:
        json.dump({"model_type": name, "num_attention_heads": 5} if hf else
                  {"architecture": name, "model_args": dict({"num_heads": 3 if beit or eva else 2},
                                                            # the RoPE files have no position embedding to say it
                                                            **({"img_size": 32} if eva in ("rope", "mixed", "map")
                                                               else {}))},
                  f)
    evas = {"glu": EVA_MODEL, "gelu": EVA_GELU_MODEL, "rope": ROPE_MODEL, "mixed": ROPE_MIXED_MODEL, "map": PE_MODEL}
    model = HF_MODEL if hf else BEIT_MODEL if beit else evas[eva] if eva else MODEL
    p = subprocess.run([vit, "info", model, "--config", cfg], capture_output=True, text=True)
    if p.returncode == 0:  # the inferred line, then the line of hyperparameters
        return True, " | ".join(line.strip() for line in p.stdout.splitlines()[1:3])
    return False, p.stderr.strip()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vit", default=os.path.join(ROOT, "build", "native", "vit"))
    parser.add_argument("--list", action="store_true", help="print every name with vit.h's verdict")
    args = parser.parse_args(argv)
    names = timm_entrypoint_args()
    problems, accepted, missed = [], 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (module, kw) in sorted(names.items()):
            eva = module in EVA_MODULES and ("glu" if kw is None or kw.get("swiglu_mlp") else
                                             "mixed" if kw.get("rope_type") == "mixed" else
                                             "map" if kw.get("global_pool") == "map" else
                                             "rope" if kw.get("attn_type") == "rope" else "gelu")
            ok, said = vit_verdict(args.vit, name, tmp, beit=module in BEIT_MODULES, eva=eva)
            check = supported_beit if module in BEIT_MODULES else supported_eva if module in EVA_MODULES else supported
            if args.list:
                print(f"{'runs   ' if ok else 'refuses'} {module:28} {name}: {said}")
            if not ok:
                if f"timm architecture '{name}' is" not in said:
                    problems.append(f"{name}: refused, but not by its architecture: {said}")
                elif module in VIT_MODULES + OTHER and kw is not None and not check(kw)[0]:
                    missed.append(name)
                continue
            accepted += 1
            if module not in VIT_MODULES + OTHER or kw is None:
                problems.append(f"{name}: timm's {module}.py, not its VisionTransformer, Beit or Eva, and vit.h runs it")
                continue
            lacks, eps, act = check(kw)[:3]
            if module in EVA_MODULES and check(kw)[3] not in said:
                problems.append(f"{name}: {check(kw)[3]} in timm, vit.h says: {said}")
            if lacks:
                problems.append(f"{name}: vit.h runs it, but it has {', '.join(lacks)}")
            if f"LayerNorm eps {eps:g}," not in said:
                problems.append(f"{name}: LayerNorm eps {eps:g} in timm, vit.h says: {said}")
            if act != "silu (gated)" and f", {act}, pool" not in said:
                problems.append(f"{name}: activation {act} in timm, vit.h says: {said}")
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
        for mt in sorted(CONFIG_MAPPING_NAMES):
            ok, said = vit_verdict(args.vit, mt, tmp, hf=True)
            if args.list:
                print(f"{'runs   ' if ok else 'refuses'} {'transformers':28} {mt}: {said}")
            want = (f"transformers model_type '{mt}' is" if mt not in HF_RUNS else
                    None if mt == "vit" else "naming, but the tensors of")
            if ok != (want is None) or (want and want not in said):
                problems.append(f"transformers model_type {mt}: {said}")
    print(*problems, sep="\n")
    print(f"timm {len(names)} names: vit.h runs {accepted}, refuses {len(names) - accepted}"
          f" ({len(missed)} of them VisionTransformer names it could run: {' '.join(missed) or 'none'})"
          f"; transformers {len(CONFIG_MAPPING_NAMES)} model types: runs vit, refuses the rest; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

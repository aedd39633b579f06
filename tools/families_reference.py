"""The ViT families people download, as timm and Hugging Face transformers save them: the reference for vit.h.

    build/venv/bin/python tools/families_reference.py [--out tests/fixtures/families] [--check] [--big DIR]

Small configurations (depth 2, a few dozen channels) of DINOv2 (with and
without registers, with SwiGLU), CLIP (GELU and QuickGELU, and the image
tower of a whole CLIPModel file), SigLIP and SigLIP 2, DeiT distilled,
qk-norm, a ViT without a class token, BEiT (a relative position bias
per block, and BEiT v2 with one shared; timm's Mlp and SwiGLU with a
LayerNorm inside), EVA-02 (rotary position
embeddings: Ti, B and EVA-CLIP's B/16 tower; these with their attention
probabilities too), EVA-01 giant, DINOv3 (plain, _qkvb and SwiGLU),
Perception Encoder core, NAVER's RoPE-Axial and RoPE-Mixed ViTs (with
and without an absolute position embedding), timm's RoPE ViT with a
register token, transformers' BEiT and Data2Vec
vision (BeitModel, BeitForImageClassification and their Data2VecVision
twins: a relative position bias per layer or shared, a position embedding
or none, layer scale or not, mean pooling or the class token; saved by
save_pretrained itself), each built by timm.create_model or transformers'
own classes (timm 1.0.31, transformers 4.48.3: tools/requirements.txt)
with every parameter re-drawn (gammas, tokens, probes and norms too), saved
with the library's own names and the config.json it writes (no vit.h
metadata), and run on a random batch of 1 and of 3: the logits where the
model has a head, the pooled features (timm's pre_logits, transformers'
pooler_output) and every token (timm's forward_features, transformers'
last_hidden_state). NAME.pix.npy is a photo prepared as the library
does for that model (timm's eval transform from its pretrained_cfg;
transformers' image processor, saved beside as preprocessor_config.json).
tests/test_families.c checks vit.h against them. refuse/NAME/ holds real
timm and transformers models (made small) that vit.h must refuse by the
architecture their config.json names, or by what their file lacks
(REFUSED: the code and message).

--check regenerates into a temporary folder and compares (arrays within
1e-5 of max(1, |ref|), the other files byte for byte); --big writes the
full-size DINOv2 ViT-S/14, CLIP ViT-B/16, SigLIP B/16, DeiT-S distilled,
DINOv3 ViT-S/16 and PE core T/16 at batch 1 (about 1 GB: under build/; make
test-all's families-big step).
"""

import argparse
import json
import math
import os
import sys
import tempfile

import numpy as np
import torch

import export as E

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "families")


def _quiet_imports():
    """timm and transformers, without their warnings about the hub client."""
    import logging
    import warnings
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    import timm
    import transformers
    transformers.logging.set_verbosity_error()
    logging.disable(logging.NOTSET)
    return timm, transformers


def randomize(model, seed):
    """Every parameter re-drawn, in module order: LayerNorm weights and layer-scale gammas 1 + 0.3 N(0,1),
    biases 0.1 N(0,1), tokens, probes and position embeddings 0.5 N(0,1), matrices N(0,1)/sqrt(fan_in)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for owner in model.modules():
            norm = isinstance(owner, torch.nn.LayerNorm)
            for name, p in owner.named_parameters(recurse=False):
                z = torch.randn(p.shape, generator=g)
                if name in ("gamma", "lambda1", "gamma_1", "gamma_2", "lambda_1", "lambda_2") or (norm and name == "weight"):
                    z = 1 + 0.3 * z
                elif name.endswith("bias"):
                    z = 0.1 * z
                elif p.dim() == 1 or "weight" not in name:
                    z = 0.5 * z
                else:
                    z = z / math.sqrt(math.prod(p.shape[1:]))
                p.copy_(z)
    return model.eval()


def _seed(name):
    return sum(ord(c) * (i + 1) for i, c in enumerate(name)) % 100003


# ---- the cases ----
# name -> (library, builder, image size): each builder returns the model, built small.

def _timm(arch, **kw):
    def build():
        timm, _ = _quiet_imports()
        return timm.create_model(arch, pretrained=False, **kw)
    return build


def _hf(cls_name, cfg_name, **kw):
    def build():
        _, transformers = _quiet_imports()
        cfg = getattr(transformers, cfg_name)(**kw)
        return getattr(transformers, cls_name)(cfg)
    return build


SMALL = dict(embed_dim=48, depth=2, num_heads=3)
# transformers' BEiT and Data2Vec vision: a 4 x 4 grid (the relative position bias tables' 7 x 7 + 3 entries)
HF_BEIT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, image_size=16, patch_size=4)
HF_SMALL = dict(hidden_size=48, num_hidden_layers=2, num_attention_heads=3)  # DINOv2 sizes its MLP by mlp_ratio
TEXT = dict(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=8)
CASES = {
    "dinov2": ("timm", _timm("vit_small_patch14_dinov2", img_size=42, num_classes=5, **SMALL), 42),
    "dinov2_reg4": ("timm", _timm("vit_small_patch14_reg4_dinov2", img_size=42, num_classes=5, dynamic_img_size=True, **SMALL), 42),
    "dinov2_swiglu": ("timm", _timm("vit_giant_patch14_dinov2", img_size=28, num_classes=4, embed_dim=48, depth=2, num_heads=3), 28),
    "clip": ("timm", _timm("vit_base_patch16_clip_224", img_size=32, num_classes=6, **SMALL), 32),
    "clip_quickgelu": ("timm", _timm("vit_base_patch16_clip_quickgelu_224", img_size=32, num_classes=6, **SMALL), 32),
    "siglip": ("timm", _timm("vit_base_patch16_siglip_224", img_size=48, num_classes=5, **SMALL), 48),
    # SigLIP 2's towers: gelu_tanh, which only the architecture's name says (timm's config.json leaves act_layer out)
    "siglip2": ("timm", _timm("vit_base_patch32_siglip_256", img_size=64, num_classes=3, **SMALL), 64),
    "deit_distilled": ("timm", _timm("deit_tiny_distilled_patch16_224", img_size=32, num_classes=7, **SMALL), 32),
    "qk_norm": ("timm", _timm("vit_base_patch16_224", img_size=32, num_classes=3, qk_norm=True, **SMALL), 32),
    "no_cls_avg": ("timm", _timm("vit_base_patch16_224", img_size=32, num_classes=3, class_token=False, global_pool="avg", **SMALL), 32),
    # timm's Beit: no position embedding, a relative position bias table in every block (or one shared), q and v
    # biases without a k bias, layer scale; mean pooling with fc_norm, or the class token after norm
    "beit": ("timm", _timm("beit_base_patch16_224", img_size=40, patch_size=8, num_classes=5, **SMALL), 40),
    "beitv2_shared": ("timm", _timm("beitv2_base_patch16_224", img_size=32, patch_size=8, num_classes=4, global_pool="token",
                                    use_rel_pos_bias=False, use_shared_rel_pos_bias=True, **SMALL), 32),
    # Beit's MLP variants: timm's Mlp with a LayerNorm inside (scale_mlp), and its SwiGLU (gate and value apart) with one
    "beit_scale_mlp": ("timm", _timm("beit_base_patch16_224", img_size=32, patch_size=8, num_classes=4, scale_mlp=True,
                                     **SMALL), 32),
    "beit_swiglu": ("timm", _timm("beitv2_base_patch16_224", img_size=32, patch_size=8, num_classes=4, swiglu_mlp=True,
                                  scale_mlp=True, **SMALL), 32),
    # timm's Eva as EVA-02 Ti: RotaryEmbeddingCat on a 16 x 16 reference grid (the patches' q and k, the class
    # token's left), q and v biases without a k bias, a packed SwiGLU; dynamic_img_size, also run at 56 (a 4 x 4 grid)
    "eva02": ("timm", _timm("eva02_tiny_patch14_224", img_size=42, num_classes=5, dynamic_img_size=True, **SMALL), 42),
    # EVA-02 B (qkv_fused=False: q_proj, k_proj without a bias, v_proj; timm's SwiGLU with fc1_g, fc1_x and a
    # LayerNorm before fc2) and EVA-CLIP's B/16 tower (a LayerNorm inside the attention too, the class token pooled)
    "eva02_base": ("timm", _timm("eva02_base_patch14_224", img_size=28, num_classes=4, embed_dim=64, depth=2, num_heads=4), 28),
    "eva02_clip": ("timm", _timm("eva02_base_patch16_clip_224", img_size=32, num_classes=3, dynamic_img_size=True,
                                 embed_dim=64, depth=2, num_heads=2), 32),
    # EVA-01 giant (timm's Eva without a rotary embedding: q and v biases, a GELU MLP of ratio 6144/1408)
    "eva_giant": ("timm", _timm("eva_giant_patch14_224", img_size=28, num_classes=4, dynamic_img_size=True, **SMALL), 28),
    # DINOv3 (RotaryEmbeddingDinoV3: centred coordinates, pairs in halves; 4 registers, layer scale, no position
    # embedding; the mean of the patch tokens after norm), its _qkvb form (q and v biases) giving features only,
    # and its SwiGLU form (small_plus: gate and value apart, the width aligned to 8); dynamic_img_size
    "dinov3": ("timm", _timm("vit_small_patch16_dinov3", img_size=32, patch_size=8, num_classes=5, **SMALL), 32),
    "dinov3_qkvb": ("timm", _timm("vit_base_patch16_dinov3_qkvb", img_size=32, patch_size=8, num_classes=0, **SMALL),
                    32),
    "dinov3_swiglu": ("timm", _timm("vit_small_plus_patch16_dinov3", img_size=24, patch_size=8, num_classes=3,
                                    global_pool="token", **SMALL), 24),
    # Perception Encoder core (AttentionRope: one qkv bias; an xy grid counted from 1 on a 24 x 24 reference; a
    # LayerNorm before the blocks; an 8-head attention pool over every token, then the projection as the head)
    "pe_core": ("timm", _timm("vit_pe_core_tiny_patch16_384", img_size=32, patch_size=8, num_classes=6,
                              dynamic_img_size=True, **SMALL), 32),
    # NAVER's RoPE ViTs: RoPE-Axial (an xy grid, temperature 100), RoPE-Mixed (frequencies learned per block and
    # head: rope.freqs), each also with an absolute position embedding that leaves the class token out (*_ape);
    # timm's own with a register token, average pooling and EVA-02's rotary embedding
    "rope_axial": ("timm", _timm("vit_small_patch16_rope_224", img_size=32, patch_size=8, num_classes=4,
                                 dynamic_img_size=True, **SMALL), 32),
    "rope_ape": ("timm", _timm("vit_base_patch16_rope_ape_224", img_size=32, patch_size=8, num_classes=4, **SMALL),
                 32),
    "rope_mixed": ("timm", _timm("vit_small_patch16_rope_mixed_224", img_size=32, patch_size=8, num_classes=4,
                                 dynamic_img_size=True, **SMALL), 32),
    "rope_mixed_ape": ("timm", _timm("vit_base_patch16_rope_mixed_ape_224", img_size=32, patch_size=8,
                                     num_classes=3, **SMALL), 32),
    "rope_reg_gap": ("timm", _timm("vit_medium_patch16_rope_reg1_gap_256", img_size=32, patch_size=8,
                                   num_classes=3, dynamic_img_size=True, **SMALL), 32),
    "hf_dinov2": ("hf", _hf("Dinov2Model", "Dinov2Config", image_size=28, patch_size=7, **HF_SMALL), 28),
    "hf_dinov2_swiglu": ("hf", _hf("Dinov2Model", "Dinov2Config", image_size=28, patch_size=7, use_swiglu_ffn=True, **HF_SMALL), 28),
    "hf_dinov2_reg": ("hf", _hf("Dinov2WithRegistersModel", "Dinov2WithRegistersConfig", image_size=28, patch_size=7,
                                num_register_tokens=4, **HF_SMALL), 28),
    "hf_clip": ("hf", _hf("CLIPVisionModelWithProjection", "CLIPVisionConfig", image_size=32, patch_size=8, projection_dim=20,
                          intermediate_size=96, **HF_SMALL), 32),
    "hf_siglip": ("hf", _hf("SiglipVisionModel", "SiglipVisionConfig", image_size=32, patch_size=8, intermediate_size=96, **HF_SMALL), 32),
    # whole image-text models: vit.h reads the image tower and leaves the text tower
    "hf_clip_full": ("hf", _hf("CLIPModel", "CLIPConfig", projection_dim=20, text_config=TEXT,
                               vision_config=dict(image_size=32, patch_size=8, intermediate_size=96, **HF_SMALL)), 32),
    "hf_siglip_full": ("hf", _hf("SiglipModel", "SiglipConfig", text_config=TEXT,
                                 vision_config=dict(image_size=32, patch_size=8, intermediate_size=96, **HF_SMALL)), 32),
    # transformers' BEiT, saved with save_pretrained (config.json with its architectures): a relative position bias
    # table per layer with layer scale and mean pooling (pooler.layernorm), as microsoft/beit-base-patch16-224;
    # one shared table, no layer scale, the class token after layernorm, a mask token; an absolute position
    # embedding only (also run at 24, resampled as BeitPatchEmbeddings does at any other size); BeitConfig's
    # defaults: no positions at all
    "hf_beit": ("hf_pretrained", _hf("BeitForImageClassification", "BeitConfig", num_labels=5,
                                     use_relative_position_bias=True, **HF_BEIT), 16),
    "hf_beit_shared": ("hf_pretrained", _hf("BeitModel", "BeitConfig", use_shared_relative_position_bias=True,
                                            use_mean_pooling=False, layer_scale_init_value=0.0, use_mask_token=True,
                                            **HF_BEIT), 16),
    "hf_beit_abs": ("hf_pretrained", _hf("BeitModel", "BeitConfig", use_absolute_position_embeddings=True, **HF_BEIT), 16),
    "hf_beit_nopos": ("hf_pretrained", _hf("BeitModel", "BeitConfig", **HF_BEIT), 16),
    # Data2Vec vision: BEiT's modules under data2vec_vision. (the classifier: a position embedding and a relative
    # position bias per layer), and its Data2VecVisionModel, saved without a pooler by default
    "hf_data2vec": ("hf_pretrained", _hf("Data2VecVisionForImageClassification", "Data2VecVisionConfig", num_labels=3,
                                         use_absolute_position_embeddings=True, use_relative_position_bias=True,
                                         **HF_BEIT), 16),
    "hf_data2vec_model": ("hf_pretrained", _hf("Data2VecVisionModel", "Data2VecVisionConfig",
                                               use_shared_relative_position_bias=True, use_mean_pooling=False,
                                               use_mask_token=True, **HF_BEIT), 16),
}
# Real models vit.h must refuse: timm's by their config.json's architecture
# (what they compute differently has no tensors, so their files look like
# ones vit.h runs), transformers' BEiT heads vit.h lacks by their
# architectures, and a Data2VecVisionModel whose mean pooling has no
# LayerNorm in the file. name -> (library, builder, the refusal's code, a
# substring of its message); written under refuse/NAME/ and listed in
# REFUSED.
REFUSE = {
    "pe_spatial": ("timm", _timm("vit_pe_spatial_tiny_patch16_512", img_size=32, patch_size=8, num_classes=4,
                                 **SMALL),
                   "UNSUPPORTED", "timm architecture 'vit_pe_spatial_tiny_patch16_512' is a Perception Encoder "
                   "language or spatial tower (timm's Eva class: no LayerNorm after the blocks): vit.h does not run it"),
    "eva02_enormous": ("timm", _timm("eva02_enormous_patch14_clip_224", img_size=28, num_classes=4, embed_dim=48,
                                     depth=1, num_heads=3), "UNSUPPORTED", "timm architecture "
                       "'eva02_enormous_patch14_clip_224' is an EVA-02-CLIP-E (timm's Eva class: post-norm blocks): "
                       "vit.h does not run it"),
    "hf_beit_mim": ("hf_pretrained", _hf("BeitForMaskedImageModeling", "BeitConfig", vocab_size=16, use_mask_token=True,
                                         use_shared_relative_position_bias=True, **dict(HF_BEIT, num_hidden_layers=1)),
                    "UNSUPPORTED", "transformers model_type 'beit', architecture BeitForMaskedImageModeling is BEiT's "
                    "masked image modelling (a LayerNorm and a linear layer predicting a visual token for every patch, "
                    "after masked patches become the mask token; vit.h has no per-patch head and no masking): vit.h "
                    "does not run it"),
    "hf_data2vec_nopooler": ("hf_pretrained", _hf("Data2VecVisionModel", "Data2VecVisionConfig",
                                                  use_relative_position_bias=True, **dict(HF_BEIT, num_hidden_layers=1)),
                             "FORMAT", "'use_mean_pooling' is true, but the weights have no tensor "
                             "'pooler.layernorm.weight': saved without its pooler, as a Data2VecVisionModel is, a "
                             "mean-pooling model has no LayerNorm after the blocks, which vit.h needs"),
}
BIG = {
    "dinov2_s14": ("timm", _timm("vit_small_patch14_dinov2", img_size=224), 224),
    "clip_b16": ("timm", _timm("vit_base_patch16_clip_224"), 224),
    "siglip_b16": ("timm", _timm("vit_base_patch16_siglip_224"), 224),
    "deit_s_distilled": ("timm", _timm("deit_small_distilled_patch16_224"), 224),
    # the newer families at their default sizes: DINOv3 ViT-S/16 at 256, PE core T/16 at 384
    "dinov3_s16": ("timm", _timm("vit_small_patch16_dinov3"), 256),
    "pe_core_t16": ("timm", _timm("vit_pe_core_tiny_patch16_384"), 384),
}


# Cases whose attention probabilities are written too (NAME.attnB.npy, (depth * B, NH, T, T)): what timm's
# unfused attention hands its dropout, or transformers' output_attentions, the relative position bias added before
# the softmax.
MAPS_OF = ("beit", "beitv2_shared", "eva02", "eva02_base", "eva02_clip", "hf_beit", "hf_beit_shared", "hf_data2vec",
           "dinov3", "pe_core", "rope_axial", "rope_mixed")


def attention_maps(model, x):
    """Every block's attention probabilities on x, through timm's unfused path (its attn_drop's input), or
    transformers' output_attentions."""
    if not hasattr(model, "blocks"):
        with torch.no_grad():
            return torch.cat(model(pixel_values=x, output_attentions=True).attentions)
    maps, hooks = [], []
    for blk in model.blocks:
        blk.attn.fused_attn = False
        hooks.append(blk.attn.attn_drop.register_forward_hook(lambda m, i, o: maps.append(i[0].detach().clone())))
    with torch.no_grad():
        model.forward_features(x)
    for h in hooks:
        h.remove()
    return torch.cat(maps)  # (depth * B, NH, T, T): npy files of vit.h hold 4 dimensions at most


def outputs(lib, model, x):
    """(logits or None, pooled features, every token) as the library computes them."""
    with torch.no_grad():
        if lib == "timm":
            tokens = model.forward_features(x)
            feats = model.forward_head(tokens, pre_logits=True)
            logits = model.forward_head(tokens) if model.num_classes else None
            return logits, feats, tokens
        if hasattr(model, "classifier"):  # a transformers *ForImageClassification: its base model's pooler_output
            base = getattr(model, model.base_model_prefix)(pixel_values=x)
            return model(pixel_values=x).logits, base.pooler_output, base.last_hidden_state
        if hasattr(model, "vision_model") and hasattr(model, "text_model"):  # a CLIPModel or SiglipModel
            out = model.vision_model(pixel_values=x)
            logits = model.get_image_features(pixel_values=x) if hasattr(model, "visual_projection") else None
            return logits, out.pooler_output, out.last_hidden_state
        out = model(pixel_values=x)
        logits = getattr(out, "image_embeds", None)
        pooled = out.pooler_output if getattr(out, "pooler_output", None) is not None else None
        return logits, pooled, out.last_hidden_state


# Cases also run at another image size, the position embedding resampled
# as the library does: timm's dynamic_img_size (resample_abs_pos_embed),
# transformers' interpolate_pos_encoding. timm's Beit has no
# dynamic_img_size (its relative position bias tables would be resized),
# so the BEiT cases run at their own size only.
RESIZE = {"dinov2_reg4": 56, "hf_dinov2_reg": 42, "hf_dinov2": 21, "eva02": 56, "eva02_clip": 48, "eva_giant": 42,
          "dinov3": 48, "dinov3_qkvb": 40, "pe_core": 48, "rope_axial": 40, "rope_mixed": 48, "rope_reg_gap": 40,
          "hf_beit_abs": 24}


def _save_model(lib, model, d):
    """The library's own names, F32, and its config.json, as a hub download has them ("hf_pretrained": written by
    transformers' save_pretrained itself, architectures included)."""
    os.makedirs(d, exist_ok=True)
    if lib == "hf_pretrained":
        model.save_pretrained(d)
        return
    tensors = {k: v for k, v in model.state_dict().items() if v.is_floating_point()}
    E.write_safetensors(os.path.join(d, "model.safetensors"), tensors, {"format": "pt"})
    if lib == "timm":
        from timm.models._hub import save_config_for_hf
        save_config_for_hf(model, os.path.join(d, "config.json"))
    else:
        model.config.to_json_file(os.path.join(d, "config.json"))


def _npy(path, t):
    np.save(path, np.ascontiguousarray(t.detach().numpy(), dtype=np.float32))


# transformers' image processors saved beside the HF cases (their
# preprocessor_config.json, as a hub download has it), sized for the small
# models as the real ones are for theirs: DINOv2's resizes the short side to
# 256/224 of the crop, bicubic, ImageNet's mean (hf_dinov2 crops 21 for a
# model built at 28, as the real one crops 224 for 518); CLIP's resizes the
# short side to the crop, bicubic; SigLIP's squashes to the size, bicubic.
# The timm cases' preprocessing comes from the pretrained_cfg in their
# config.json.
def _processor(name, size):
    _, transformers = _quiet_imports()
    imagenet = dict(image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])
    if name == "hf_dinov2":
        return transformers.BitImageProcessor(size={"shortest_edge": 24}, crop_size={"height": 21, "width": 21}, resample=3, **imagenet)
    if name == "hf_dinov2_reg":
        return transformers.BitImageProcessor(size={"shortest_edge": size * 256 // 224}, crop_size={"height": size, "width": size},
                                              resample=3, **imagenet)
    if name.startswith("hf_clip"):
        return transformers.CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size})
    if name.startswith("hf_siglip"):
        return transformers.SiglipImageProcessor(size={"height": size, "width": size})
    if name == "hf_beit":  # BEiT's squashes to a size, then crops; bicubic, mean and std 0.5
        return transformers.BeitImageProcessor(size={"height": size + 2, "width": size + 2}, resample=3,
                                               crop_size={"height": size, "width": size}, do_center_crop=True)
    return None


PHOTOS = "/usr/lib/python3/dist-packages/sklearn/datasets/images"
PHOTO = os.path.join(PHOTOS, "china.jpg")


def write_pixels(out, name, lib, model, size):
    """NAME.pix.npy: PHOTO as the library's own preprocessing hands it to the model (1, 3, crop, crop)."""
    from PIL import Image
    img = Image.open(PHOTO).convert("RGB")
    if lib == "timm":
        timm, _ = _quiet_imports()
        cfg = timm.data.resolve_data_config(args={"input_size": (3, size, size)}, model=model)
        x = timm.data.create_transform(**cfg)(img).unsqueeze(0)
    else:
        proc = _processor(name, size)
        if proc is None:
            return
        proc.save_pretrained(os.path.join(out, name))
        x = torch.from_numpy(proc(images=img, return_tensors="np")["pixel_values"])
    _npy(os.path.join(out, f"{name}.pix.npy"), x)


def write_case(out, name, spec, batches=(1, 3)):
    lib, build, size = spec
    torch.manual_seed(0)
    model = randomize(build(), _seed(name))
    _save_model(lib, model, os.path.join(out, name))
    write_pixels(out, name, lib, model, size)
    g = torch.Generator().manual_seed(_seed(name) + 1)
    for b in batches:
        x = torch.randn(b, 3, size, size, generator=g)
        logits, feats, tokens = outputs(lib, model, x)
        _npy(os.path.join(out, f"{name}.in{b}.npy"), x)
        if logits is not None:
            _npy(os.path.join(out, f"{name}.logits{b}.npy"), logits)
        if feats is not None:
            _npy(os.path.join(out, f"{name}.feat{b}.npy"), feats)
        _npy(os.path.join(out, f"{name}.tokens{b}.npy"), tokens)
        if name in MAPS_OF:
            _npy(os.path.join(out, f"{name}.attn{b}.npy"), attention_maps(model, x))
    if name in RESIZE:
        x = torch.randn(2, 3, RESIZE[name], RESIZE[name], generator=g)
        _, feats, tokens = outputs(lib, model, x)
        _npy(os.path.join(out, f"{name}.in_s{RESIZE[name]}.npy"), x)
        _npy(os.path.join(out, f"{name}.feat_s{RESIZE[name]}.npy"), feats)
        _npy(os.path.join(out, f"{name}.tokens_s{RESIZE[name]}.npy"), tokens)
    return name


# The families' preprocessing, as timm's eval transform and transformers'
# image processors run it on PIL images: bicubic resize of the short side
# (CLIP: 224 / 0.9 = 248, then a 224 centre crop) or of both sides (SigLIP:
# 224 x 224, no crop). prep_NAME.png holds the 224 x 224 result, value k
# standing for k/255 (vit.h computes in float, PIL in bytes: within 1/255,
# 2/255 for the photographs, whose JPEG decoders differ).
MAPS = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "maps")
PREP = {"bicubic_rgba": (os.path.join(MAPS, "rgba.png"), 248, False), "bicubic_gray": (os.path.join(MAPS, "gray.png"), 248, False),
        "squash_rgba": (os.path.join(MAPS, "rgba.png"), 224, True), "bicubic_china": (os.path.join(PHOTOS, "china.jpg"), 248, False),
        "squash_flower": (os.path.join(PHOTOS, "flower.jpg"), 224, True)}


def write_prep(out, cases):
    """PREP: the photo every case's NAME.pix.npy comes from; with the small cases, PIL's resizes too."""
    from PIL import Image
    import torchvision.transforms as T
    lines = []
    for name, (src, size, squash) in (PREP.items() if cases is CASES else ()):
        img = Image.open(src).convert("RGB")
        img = T.Resize((size, size) if squash else size, interpolation=T.InterpolationMode.BICUBIC)(img)
        img = T.CenterCrop(224)(img)
        img.save(os.path.join(out, f"prep_{name}.png"))
        root = os.path.dirname(HERE)
        shown = os.path.relpath(src, root) if src.startswith(root) else src
        lines.append(f"prep {name} {shown} {size} {int(squash)}\n")
    lines.append(f"photo {PHOTO}\n")
    with open(os.path.join(out, "PREP"), "w") as f:
        f.writelines(lines)


def write_refusals(out):
    """refuse/NAME/: each REFUSE model as timm saves it for the hub; REFUSED: NAME CODE | MESSAGE per line."""
    lines = []
    for name, (lib, build, code, message) in REFUSE.items():
        torch.manual_seed(0)
        _save_model(lib, randomize(build(), _seed(name)), os.path.join(out, "refuse", name))
        lines.append(f"{name} {code} | {message}\n")
    with open(os.path.join(out, "REFUSED"), "w") as f:
        f.writelines(lines)


def generate(out, cases):
    os.makedirs(out, exist_ok=True)
    write_prep(out, cases)
    if cases is CASES:
        write_refusals(out)
    # the full-size models at batch 1 only: their weights are what is at stake, not the batching
    names = [write_case(out, name, spec, (1, 3) if cases is CASES else (1,)) for name, spec in cases.items()]
    with open(os.path.join(out, "MANIFEST"), "w") as f:
        f.write("".join(f"{n} {RESIZE[n]}\n" if n in RESIZE else f"{n}\n" for n in names))
    return names


def check(committed):
    problems = []
    with tempfile.TemporaryDirectory() as fresh:
        generate(fresh, CASES)
        for root, _, files in os.walk(fresh):
            for fname in files:
                new = os.path.join(root, fname)
                rel = os.path.relpath(new, fresh)
                old = os.path.join(committed, rel)
                if not os.path.exists(old):
                    problems.append(f"missing from {committed}: {rel}")
                elif fname.endswith(".npy"):
                    a, b = np.load(new), np.load(old)
                    tol = 1e-5 * max(1.0, float(np.abs(b).max()))
                    if a.shape != b.shape or float(np.abs(a - b).max()) > tol:
                        problems.append(f"{rel}: differs (shape {a.shape} vs {b.shape})")
                else:
                    with open(new, "rb") as f1, open(old, "rb") as f2:
                        if f1.read() != f2.read():
                            problems.append(f"{rel}: bytes differ")
    if problems:
        print(f"{committed} has drifted from tools/families_reference.py:", *problems, sep="\n  ")
        return 1
    print(f"{committed}: all {len(CASES)} families current")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=FIXTURES)
    parser.add_argument("--check", action="store_true", help="compare a fresh run with the committed fixtures")
    parser.add_argument("--big", metavar="DIR", help="write the full-size models into DIR instead")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # the same bits on any machine with the same BLAS
    if args.check:
        return check(args.out)
    if args.big:
        torch.set_num_threads(4)
        generate(args.big, BIG)
        print(f"wrote {len(BIG)} full-size models to {args.big}")
        return 0
    generate(args.out, CASES)
    print(f"wrote {len(CASES)} families to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

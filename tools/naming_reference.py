"""Small PyTorch ViTs in timm's and Hugging Face transformers' naming: the reference for vit.h's checkpoint loading.

    build/venv/bin/python tools/naming_reference.py [--out tests/fixtures/naming]
    build/venv/bin/python tools/naming_reference.py --check      # regenerate to a temp dir, compare, exit 1 on drift
    build/venv/bin/python tools/naming_reference.py --big DIR    # ViT-Ti/16, S/16 and B/32 sized cases (never commit)
    build/venv/bin/python tools/naming_reference.py --run MODEL.safetensors IN.npy OUT.npy [--config C] [--heads N]

The modules here are written from the libraries' documented structure, not
imported from them (neither library is a dependency), and not derived from
torchvision: TimmViT has timm's VisionTransformer names (patch_embed.proj,
cls_token, pos_embed, blocks.N.{norm1,attn.qkv,attn.proj,norm2,mlp.fc1,
mlp.fc2}, norm or fc_norm, head) and its global_pool 'token'/'avg' with
fc_norm; HFViTForImageClassification and HFViTModel have transformers'
(vit.embeddings.{cls_token,position_embeddings,patch_embeddings.projection},
vit.encoder.layer.N.{layernorm_before, attention.attention.{query,key,value},
attention.output.dense, layernorm_after, intermediate.dense, output.dense},
vit.layernorm, classifier; a ViTModel has no "vit." prefix and may have a
pooler). load() reads a safetensors file, tells the naming from the tensor
names as vit.h does, builds the module and loads every tensor by name
(strict), so a wrong mapping in tools/export.py or in vit.h shows up as a
mismatch against these modules, not only against torchvision.

Fixtures (tests/fixtures/naming, read by tests/test_naming.c): one
directory per case, laid out as a hub download (model.safetensors, maybe
config.json), and per case NAME.in.npy, NAME.out.npy (what vit.h's
vit_model_forward must return: logits, or a ViTModel's pooler output or
class-token features), NAME.feat.npy (the pooled representation before the
head), NAME.labels.txt (the class names vit.h must report, when any) and
NAME.info.txt (substrings vit.h's m->inferred must contain). MANIFEST:

    case NAME DIR [heads=N] [config=FILE] [labels=FILE]
    refuse NAME DIR CODE [options] | MESSAGE SUBSTRING

DIR holds model.safetensors; FILE paths are relative to the MANIFEST's
directory. Weights are seeded from the case name, so reruns write
byte-identical files (--check verifies this).
"""

import argparse
import json
import math
import os
import sys
import tempfile
import zlib

import numpy as np
import torch
import torchvision.models.vision_transformer as tv
from torch import nn

import export as E

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "naming")
STANDARD_HEADS = {192: 3, 384: 6, 512: 8, 768: 12, 1024: 16, 1280: 16, 1408: 16, 1664: 16}


# ---- timm's VisionTransformer, by its names ----

class TimmAttention(nn.Module):
    """qkv: one Linear(C, 3C), rows q then k then v, head h in rows [h*HS, (h+1)*HS) of each; proj."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        hs = C // self.heads
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, hs).permute(2, 0, 3, 1, 4)
        a = torch.softmax((q * hs ** -0.5) @ k.transpose(-2, -1), dim=-1)
        return self.proj((a @ v).transpose(1, 2).reshape(B, N, C))


class TimmMlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TimmBlock(nn.Module):
    def __init__(self, dim, heads, hidden, eps):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.attn = TimmAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = TimmMlp(dim, hidden)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TimmPatchEmbed(nn.Module):
    def __init__(self, patch, chans, dim):
        super().__init__()
        self.proj = nn.Conv2d(chans, dim, patch, patch)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class TimmViT(nn.Module):
    """timm's VisionTransformer with a class token, learned position embedding and LayerNorm eps 1e-6.

    global_pool 'token' takes the class token; 'avg' the mean of the patch
    tokens (class token excluded). fc_norm (default: global_pool == 'avg')
    moves the final LayerNorm after the pool, and `norm` is then absent.
    """

    def __init__(self, img_size, patch_size, in_chans, num_classes, embed_dim, depth, num_heads, mlp_dim,
                 global_pool="token", fc_norm=None, eps=1e-6):
        super().__init__()
        use_fc = global_pool == "avg" if fc_norm is None else fc_norm
        self.global_pool = global_pool
        self.patch_embed = TimmPatchEmbed(patch_size, in_chans, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, (img_size // patch_size) ** 2 + 1, embed_dim))
        self.blocks = nn.Sequential(*[TimmBlock(embed_dim, num_heads, mlp_dim, eps) for _ in range(depth)])
        self.norm = nn.Identity() if use_fc else nn.LayerNorm(embed_dim, eps=eps)
        self.fc_norm = nn.LayerNorm(embed_dim, eps=eps) if use_fc else nn.Identity()
        self.head = nn.Linear(embed_dim, num_classes) if num_classes else nn.Identity()

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        x = self.norm(self.blocks(x))
        x = x[:, 0] if self.global_pool == "token" else x[:, 1:].mean(dim=1)
        return self.fc_norm(x)

    def forward(self, x):
        return self.head(self.forward_features(x))


# ---- transformers' ViTModel and ViTForImageClassification, by their names ----

class _Linear(nn.Module):
    """A module whose only child is `dense` (transformers' ViTSelfOutput, ViTIntermediate, ViTOutput, ViTPooler)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.dense = nn.Linear(n_in, n_out)


class HFSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        hs = C // self.heads
        q, k, v = (f(x).view(B, N, self.heads, hs).permute(0, 2, 1, 3) for f in (self.query, self.key, self.value))
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hs), dim=-1)
        return (a @ v).permute(0, 2, 1, 3).reshape(B, N, C)


class HFAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attention = HFSelfAttention(dim, heads)
        self.output = _Linear(dim, dim)

    def forward(self, x):
        return self.output.dense(self.attention(x))


class HFLayer(nn.Module):
    def __init__(self, dim, heads, hidden, eps, act):
        super().__init__()
        self.attention = HFAttention(dim, heads)
        self.intermediate = _Linear(dim, hidden)
        self.output = _Linear(hidden, dim)
        self.layernorm_before = nn.LayerNorm(dim, eps=eps)
        self.layernorm_after = nn.LayerNorm(dim, eps=eps)
        self.act = {"gelu": nn.GELU(), "relu": nn.ReLU()}[act]

    def forward(self, x):
        x = x + self.attention(self.layernorm_before(x))
        return x + self.output.dense(self.act(self.intermediate.dense(self.layernorm_after(x))))


class HFPatchEmbeddings(nn.Module):
    def __init__(self, patch, chans, dim):
        super().__init__()
        self.projection = nn.Conv2d(chans, dim, patch, patch)


class HFEmbeddings(nn.Module):
    def __init__(self, image, patch, chans, dim):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.position_embeddings = nn.Parameter(torch.zeros(1, (image // patch) ** 2 + 1, dim))
        self.patch_embeddings = HFPatchEmbeddings(patch, chans, dim)

    def forward(self, x):
        x = self.patch_embeddings.projection(x).flatten(2).transpose(1, 2)
        return torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.position_embeddings


class HFEncoder(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layer = nn.ModuleList(layers)


class HFViTModel(nn.Module):
    """transformers' ViTModel: forward returns (last_hidden_state, pooler_output or None)."""

    def __init__(self, cfg, add_pooling_layer=True):
        super().__init__()
        dim, eps = cfg["hidden_size"], cfg.get("layer_norm_eps", 1e-12)
        self.embeddings = HFEmbeddings(cfg["image_size"], cfg["patch_size"], cfg.get("num_channels", 3), dim)
        self.encoder = HFEncoder([HFLayer(dim, cfg["num_attention_heads"], cfg["intermediate_size"], eps,
                                          cfg.get("hidden_act", "gelu")) for _ in range(cfg["num_hidden_layers"])])
        self.layernorm = nn.LayerNorm(dim, eps=eps)
        self.pooler = _Linear(dim, dim) if add_pooling_layer else None

    def forward(self, x):
        x = self.embeddings(x)
        for layer in self.encoder.layer:
            x = layer(x)
        x = self.layernorm(x)
        return x, (torch.tanh(self.pooler.dense(x[:, 0])) if self.pooler is not None else None)


class HFViTForImageClassification(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.vit = HFViTModel(cfg, add_pooling_layer=False)
        self.classifier = nn.Linear(cfg["hidden_size"], len(cfg["id2label"]))

    def forward(self, x):
        return self.classifier(self.vit(x)[0][:, 0])


# ---- files -> modules, by name ----

def naming_of(names):
    """(naming, variant) of a checkpoint from its tensor names, as vit.h tells them apart."""
    for naming, variant, probe in (("torchvision", "VisionTransformer", "conv_proj.weight"),
                                   ("timm", "VisionTransformer", "patch_embed.proj.weight"),
                                   ("transformers", "ViTForImageClassification", "vit.embeddings.patch_embeddings.projection.weight"),
                                   ("transformers", "ViTModel", "embeddings.patch_embeddings.projection.weight")):
        if probe in names:
            return naming, variant
    raise E.ExportError(f"no known ViT naming: first tensor {sorted(names)[0]!r}")


def _heads(dim, config, heads):
    if heads:
        return heads
    n = config.get("num_attention_heads") or config.get("model_args", {}).get("num_heads")
    if n:
        return n
    if dim not in STANDARD_HEADS:
        raise E.ExportError(f"hidden size {dim}: heads unknown")
    return STANDARD_HEADS[dim]


def load(path, config_path=None, heads=None):
    """(module, naming) for a torchvision, timm or transformers ViT file, every tensor loaded by name (strict)."""
    sd, _ = E.load_safetensors(path)
    if config_path is None and os.path.exists(os.path.join(os.path.dirname(os.path.abspath(path)), "config.json")):
        config_path = os.path.join(os.path.dirname(os.path.abspath(path)), "config.json")
    config = json.load(open(config_path)) if config_path else {}
    naming, variant = naming_of(sd)
    if naming == "timm":
        dim, chans, patch, _ = sd["patch_embed.proj.weight"].shape
        grid = math.isqrt(sd["pos_embed"].shape[1] - 1)
        depth = len({k.split(".")[1] for k in sd if k.startswith("blocks.")})
        gp = config.get("model_args", {}).get("global_pool") or config.get("global_pool") or \
            ("avg" if "fc_norm.weight" in sd else "token")
        fc = config.get("model_args", {}).get("fc_norm")
        module = TimmViT(grid * patch, patch, chans, sd["head.weight"].shape[0] if "head.weight" in sd else 0, dim, depth,
                         _heads(dim, config, heads), sd["blocks.0.mlp.fc1.weight"].shape[0], gp, fc)
    elif naming == "transformers":
        p = "vit." if variant == "ViTForImageClassification" else ""
        dim, chans, patch, _ = sd[p + "embeddings.patch_embeddings.projection.weight"].shape
        grid = math.isqrt(sd[p + "embeddings.position_embeddings"].shape[1] - 1)
        cfg = {"hidden_size": dim, "num_channels": chans, "patch_size": patch, "image_size": grid * patch,
               "num_hidden_layers": len({k.split(".")[2 + (p != "")] for k in sd if k.startswith(p + "encoder.layer.")}),
               "intermediate_size": sd[p + "encoder.layer.0.intermediate.dense.weight"].shape[0],
               "num_attention_heads": _heads(dim, config, heads), "layer_norm_eps": config.get("layer_norm_eps", 1e-12),
               "hidden_act": config.get("hidden_act", "gelu")}
        if p:
            cfg["id2label"] = {str(i): str(i) for i in range(sd["classifier.weight"].shape[0])}
            module = HFViTForImageClassification(cfg)
        else:
            module = HFViTModel(cfg, add_pooling_layer="pooler.dense.weight" in sd)
    else:
        dim = sd["conv_proj.weight"].shape[0]
        layers = len({k.split(".")[2] for k in sd if k.startswith("encoder.layers.")})
        pre = sd["heads.pre_logits.weight"].shape[0] if "heads.pre_logits.weight" in sd else None
        module = tv.VisionTransformer(math.isqrt(sd["encoder.pos_embedding"].shape[1] - 1) * sd["conv_proj.weight"].shape[2],
                                      sd["conv_proj.weight"].shape[2], layers, _heads(dim, config, heads), dim,
                                      sd["encoder.layers.encoder_layer_0.mlp.0.weight"].shape[0],
                                      num_classes=sd["heads.head.weight"].shape[0], representation_size=pre)
    state = module.state_dict()
    if set(state) != set(sd):
        raise E.ExportError(f"{path}: missing {sorted(set(state) - set(sd))}, unexpected {sorted(set(sd) - set(state))}")
    module.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})
    return module.eval(), naming


def outputs(module, x):
    """(out, feat): what vit.h's vit_model_forward returns without and with opts.features."""
    with torch.no_grad():
        if isinstance(module, HFViTModel):
            seq, pooled = module(x)
            return (pooled if pooled is not None else seq[:, 0]), seq[:, 0]
        if isinstance(module, HFViTForImageClassification):
            return module(x), module.vit(x)[0][:, 0]
        if isinstance(module, TimmViT):
            return module(x), module.forward_features(x)
        return module(x), E.features(module, x)


# ---- fixtures ----

def _seed(name):
    return zlib.crc32(name.encode())


def _save(path, t):
    np.save(path, np.ascontiguousarray(t.detach().numpy(), dtype=np.float32))


def _randomize(module, seed):
    """export.randomize, then the position embeddings (named differently here) at its class-token scale."""
    E.randomize(module, seed)
    g = torch.Generator().manual_seed(seed + 7)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith(("pos_embed", "position_embeddings")):
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
    return module


def _write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


def _timm_sd(module):
    return {k: v for k, v in module.state_dict().items()}


def _hf_cfg(module, classification, labels=None, eps=1e-12, act="gelu"):
    vit = module.vit if classification else module
    emb = vit.embeddings
    dim = emb.cls_token.shape[2]
    patch = emb.patch_embeddings.projection.kernel_size[0]
    cfg = {"architectures": ["ViTForImageClassification" if classification else "ViTModel"], "model_type": "vit",
           "hidden_size": dim, "num_hidden_layers": len(vit.encoder.layer),
           "num_attention_heads": vit.encoder.layer[0].attention.attention.heads,
           "intermediate_size": vit.encoder.layer[0].intermediate.dense.out_features, "hidden_act": act,
           "layer_norm_eps": eps, "image_size": math.isqrt(emb.position_embeddings.shape[1] - 1) * patch,
           "patch_size": patch, "num_channels": emb.patch_embeddings.projection.in_channels, "qkv_bias": True}
    names = labels or ["LABEL_0", "LABEL_1"]  # transformers' default for a ViTModel's config
    cfg["id2label"] = {str(i): n for i, n in enumerate(names)}
    cfg["label2id"] = {n: i for i, n in enumerate(names)}
    return cfg


def _beit_sd():
    """A transformers BeitModel's names and shapes (zeros: the refusals come before any weight is read): hidden 8,
    1 layer, 2 heads, image 8, patch 4 (a 2 x 2 grid: (2*2-1)^2 + 3 = 12 relative positions), one shared relative
    position bias table, layer scale, mean pooling (pooler.layernorm)."""
    sd = {"embeddings.cls_token": (1, 1, 8), "embeddings.patch_embeddings.projection.weight": (8, 3, 4, 4),
          "embeddings.patch_embeddings.projection.bias": (8,),
          "encoder.relative_position_bias.relative_position_bias_table": (12, 2),
          "pooler.layernorm.weight": (8,), "pooler.layernorm.bias": (8,)}
    layer = {"attention.attention.query.weight": (8, 8), "attention.attention.query.bias": (8,),
             "attention.attention.key.weight": (8, 8), "attention.attention.value.weight": (8, 8),
             "attention.attention.value.bias": (8,), "attention.output.dense.weight": (8, 8),
             "attention.output.dense.bias": (8,), "intermediate.dense.weight": (16, 8), "intermediate.dense.bias": (16,),
             "output.dense.weight": (8, 16), "output.dense.bias": (8,), "layernorm_before.weight": (8,),
             "layernorm_before.bias": (8,), "layernorm_after.weight": (8,), "layernorm_after.bias": (8,),
             "lambda_1": (8,), "lambda_2": (8,)}
    sd.update({f"encoder.layer.0.{k}": v for k, v in layer.items()})
    return {k: torch.zeros(v) for k, v in sd.items()}


def _beit_cfg():
    """The config.json transformers writes for _beit_sd's model (the keys vit.h reads)."""
    return {"architectures": ["BeitModel"], "model_type": "beit", "hidden_size": 8, "num_hidden_layers": 1,
            "num_attention_heads": 2, "intermediate_size": 16, "image_size": 8, "patch_size": 4, "num_channels": 3,
            "hidden_act": "gelu", "layer_norm_eps": 1e-12, "use_absolute_position_embeddings": False,
            "use_relative_position_bias": False, "use_shared_relative_position_bias": True,
            "layer_scale_init_value": 0.1, "use_mean_pooling": True, "use_mask_token": False}


# Class names with commas, quotes, escapes and non-ASCII: id2label as ImageNet's ("tench, Tinca tinca").
LABELS5 = ["tench, Tinca tinca", "goldfish", 'say "cheese"', "caf\u00e9 cr\u00e8me", "back\\slash"]
SYNSETS5 = ["n01440764", "n01443537", "n01484850", "n01491361", "n01494475"]


class Fixture:
    """One case: writes DIR/model.safetensors (+ config.json) and NAME.* files; returns its MANIFEST line."""

    def __init__(self, out):
        self.out, self.lines = out, []

    def case(self, name, module, naming_sd, shape, meta=None, config=None, options="", labels=None, info=(),
             dtype="F32", config_name="config.json"):
        d = os.path.join(self.out, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.safetensors")
        if dtype != "F32":
            E.round_weights(module, dtype)
            naming_sd = {k: v.to(E.DTYPES[dtype][0]).float() for k, v in naming_sd.items()}
        E.write_safetensors_plain(path, naming_sd, meta, dtype)
        if config is not None:
            _write_json(os.path.join(d, config_name), config)
        x = torch.randn(shape, generator=torch.Generator().manual_seed(_seed(name) + 1))
        heads = next((int(o[6:]) for o in options.split() if o.startswith("heads=")), None)
        cfg = next((os.path.join(self.out, o[7:]) for o in options.split() if o.startswith("config=")), None)
        # The independent path: the file, loaded by name into this file's modules.
        ref, _ = load(path, cfg, heads)
        out, feat = outputs(ref, x)
        want, want_feat = outputs(module, x)
        assert torch.equal(out, want) and torch.equal(feat, want_feat), f"{name}: reloaded module differs"
        _save(os.path.join(self.out, f"{name}.in.npy"), x)
        _save(os.path.join(self.out, f"{name}.out.npy"), out)
        _save(os.path.join(self.out, f"{name}.feat.npy"), feat)
        if labels:
            with open(os.path.join(self.out, f"{name}.labels.txt"), "w") as f:
                f.write("".join(f"{s}\n" for s in labels))
        with open(os.path.join(self.out, f"{name}.info.txt"), "w") as f:
            f.write("".join(f"{s}\n" for s in info))
        self.lines.append(f"case {name} {name}{' ' + options if options else ''}")

    def refuse(self, name, sd, meta, code, message, options="", config=None):
        d = os.path.join(self.out, "bad", name)
        os.makedirs(d, exist_ok=True)
        E.write_safetensors_plain(os.path.join(d, "model.safetensors"), sd, meta)
        if config is not None:
            _write_json(os.path.join(d, "config.json"), config)
        self.lines.append(f"refuse {name} bad/{name} {code}{' ' + options if options else ''} | {message}")


def _tv(seed_name, **kw):
    return _randomize(tv.VisionTransformer(**kw).eval(), _seed(seed_name))


def generate(out):
    """The small committed cases (each under 100 KB) and the refusals."""
    torch.set_num_threads(1)
    os.makedirs(out, exist_ok=True)
    fx = Fixture(out)
    # timm, class token; hidden 36 is no standard size: heads given by the caller.
    m = _randomize(TimmViT(24, 8, 3, 5, 36, 2, 3, 50).eval(), _seed("timm_tok"))
    fx.case("timm_tok", m, _timm_sd(m), (2, 3, 24, 24), options="heads=3", info=["timm naming", "3 heads (given)", "no labels"])
    # timm, avg pool with fc_norm; timm's hub config.json: heads, global_pool, synset labels and their descriptions.
    m = _randomize(TimmViT(20, 5, 3, 5, 32, 2, 4, 40, global_pool="avg").eval(), _seed("timm_avg"))
    fx.case("timm_avg", m, _timm_sd(m), (3, 3, 20, 20),
            config={"architecture": "vit_tiny_patch16_224", "num_classes": 5, "num_features": 32, "global_pool": "avg",
                    "model_args": {"num_heads": 4, "global_pool": "avg"}, "label_names": SYNSETS5,
                    "label_descriptions": dict(zip(SYNSETS5[:4], LABELS5[:4])),
                    "pretrained_cfg": {"mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5], "crop_pct": 0.9}},
            labels=LABELS5[:4] + SYNSETS5[4:], info=["timm naming", "4 heads (", "timm_avg/config.json",
                                                     "mean of the patch tokens, then fc_norm", "label_names"])
    # timm, avg pool without fc_norm: norm on every token, then the mean; one input channel.
    m = _randomize(TimmViT(16, 4, 1, 3, 24, 1, 2, 20, global_pool="avg", fc_norm=False).eval(), _seed("timm_avg_norm"))
    fx.case("timm_avg_norm", m, _timm_sd(m), (2, 1, 16, 16),
            config={"architecture": "vit_small_patch16_224", "model_args": {"num_heads": 2, "global_pool": "avg", "fc_norm": False}},
            info=["norm, then the mean of the patch tokens"])
    # transformers ViTForImageClassification, eps 1e-12 from config.json, id2label with commas and escapes, F16.
    cfg = {"hidden_size": 30, "num_hidden_layers": 2, "num_attention_heads": 5, "intermediate_size": 44,
           "image_size": 21, "patch_size": 7, "num_channels": 3, "id2label": {str(i): str(i) for i in range(5)}}
    m = _randomize(HFViTForImageClassification(dict(cfg, layer_norm_eps=1e-12)).eval(), _seed("hf_cls"))
    fx.case("hf_cls", m, m.state_dict(), (2, 3, 21, 21), meta={"format": "pt"}, dtype="F16",
            config=_hf_cfg(m, True, LABELS5), labels=LABELS5,
            info=["transformers naming (ViTForImageClassification", "5 heads (", "hf_cls/config.json", "eps 1e-12", "(id2label)"])
    # transformers ViTModel (no prefix) with its pooler: the output is pooler_output; relu from config.json.
    cfg = {"hidden_size": 24, "num_hidden_layers": 2, "num_attention_heads": 3, "intermediate_size": 30,
           "image_size": 16, "patch_size": 8, "num_channels": 3, "hidden_act": "relu", "layer_norm_eps": 1e-12}
    m = _randomize(HFViTModel(cfg).eval(), _seed("hf_model"))
    fx.case("hf_model", m, m.state_dict(), (2, 3, 16, 16), meta={"format": "pt"}, config=_hf_cfg(m, False, act="relu"),
            info=["transformers naming (ViTModel)", "relu", "no labels"])
    # transformers ViTModel without a pooler: the output is the normalised class token; config passed by path.
    cfg = {"hidden_size": 20, "num_hidden_layers": 1, "num_attention_heads": 4, "intermediate_size": 28,
           "image_size": 12, "patch_size": 6, "num_channels": 3, "layer_norm_eps": 1e-6}
    m = _randomize(HFViTModel(cfg, add_pooling_layer=False).eval(), _seed("hf_model_nopool"))
    fx.case("hf_model_nopool", m, m.state_dict(), (1, 3, 12, 12), meta={"format": "pt"}, config=_hf_cfg(m, False, eps=1e-6),
            config_name="vit_config.json", options="config=hf_model_nopool/vit_config.json", info=["vit_config.json"])
    # torchvision's own names, no metadata: heads from the caller, a labels file.
    m = _tv("tv_plain", image_size=16, patch_size=8, num_layers=2, num_heads=2, hidden_dim=20, mlp_dim=24, num_classes=4)
    with open(os.path.join(out, "tv_plain.names.txt"), "w") as f:
        f.write("zero\r\none\r\ntwo, too\r\nthree\r\n")
    fx.case("tv_plain", m, {k: v for k, v in m.state_dict().items()}, (2, 3, 16, 16),
            options="heads=2 labels=tv_plain.names.txt", labels=["zero", "one", "two, too", "three"],
            info=["torchvision naming", "2 heads (given)", "tv_plain.names.txt"])
    # tools/export.py's renamings of one torchvision ViT: each file must run as torchvision's model does.
    m = _tv("tv_renamed", image_size=24, patch_size=6, num_layers=2, num_heads=3, hidden_dim=27, mlp_dim=33, num_classes=6)
    x = torch.randn(2, 3, 24, 24, generator=torch.Generator().manual_seed(_seed("tv_renamed")))
    for naming in ("timm", "transformers", "transformers-model"):
        name = "tv_as_" + naming.replace("-", "_")
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        cfg = E.export_naming(m, os.path.join(d, "model.safetensors"), naming)
        ref, _ = load(os.path.join(d, "model.safetensors"), None, 3)
        if "id2label" in cfg:
            with open(os.path.join(out, f"{name}.labels.txt"), "w") as f:
                f.write("".join(f"{cfg['id2label'][str(i)]}\n" for i in range(len(cfg["id2label"]))))
        got, want = outputs(ref, x), (m(x), E.features(m, x))
        if naming == "transformers-model":
            want = (want[1], want[1])  # no head, no pooler: the features
        for a, b in zip(got, want):
            assert torch.allclose(a, b, rtol=1e-5, atol=1e-5), f"{name}: renamed torchvision model differs"
        _save(os.path.join(out, f"{name}.in.npy"), x)
        _save(os.path.join(out, f"{name}.out.npy"), got[0])
        _save(os.path.join(out, f"{name}.feat.npy"), got[1])
        with open(os.path.join(out, f"{name}.info.txt"), "w") as f:
            f.write(f"{naming.split('-')[0]} naming\n")
        fx.lines.append(f"case {name} {name}")

    # Refusals: each names the tensor (or setting) that does not fit.
    base = _randomize(TimmViT(16, 8, 3, 2, 12, 2, 2, 16).eval(), _seed("bad"))
    sd = _timm_sd(base)
    fx.refuse("no_naming", {"layers.0.weight": torch.zeros(4, 3), "layers.0.bias": torch.zeros(4)}, None, "MISSING",
              "tensor 'layers.0.weight' follows no ViT naming")
    fx.refuse("bad_shape", dict(sd, **{"blocks.1.attn.qkv.weight": torch.zeros(30, 12)}), None, "SHAPE",
              "tensor 'blocks.1.attn.qkv.weight' has shape [30,12], expected [36,12]", "heads=2")
    fx.refuse("layer_scale", dict(sd, **{"blocks.0.ls1.gamma": torch.ones(12)}), None, "MISSING",
              "missing tensor 'blocks.0.ls2.gamma'", "heads=2")
    fx.refuse("no_heads", sd, None, "MISSING", "cannot tell the number of attention heads of a ViT of hidden size 12")
    fx.refuse("heads_not_divisor", sd, None, "FORMAT", "hidden size 12 is not a multiple of 5 heads (given)", "heads=5")
    fx.refuse("no_square_grid", dict(sd, pos_embed=torch.zeros(1, 6, 12)), None, "SHAPE",
              "tensor 'pos_embed' has 6 positions; vit.h needs a square grid", "heads=2")
    fx.refuse("missing_block", {k: v for k, v in sd.items() if k != "blocks.1.mlp.fc2.bias"}, None, "MISSING",
              "missing tensor 'blocks.1.mlp.fc2.bias'", "heads=2")
    fx.refuse("conv_not_square", dict(sd, **{"patch_embed.proj.weight": torch.zeros(12, 3, 8, 4)}), None, "SHAPE",
              "tensor 'patch_embed.proj.weight' has shape [12,3,8,4], expected (hidden, in_channels, P, P)", "heads=2")
    fx.refuse("map_pool", sd, None, "MISSING", "global_pool 'map', but the file has no tensor 'attn_pool.latent'",
              config={"global_pool": "map", "model_args": {"num_heads": 2}})
    # timm's model_args against the tensors, as transformers' sizes are: each contradiction names the key and the
    # tensor; and the architecture as the authority: a name vit.h does not know, or knows and does not run, or runs
    # in another naming than the file's.
    tcfg = {"architecture": "vit_tiny_patch16_224", "model_args": {"num_heads": 2}}
    fx.refuse("timm_depth", sd, None, "FORMAT", "'model_args.depth' is 3, but the weights have 2 (the blocks end before "
              "tensor 'blocks.2.norm1.weight'", config=dict(tcfg, model_args={"num_heads": 2, "depth": 3}))
    fx.refuse("timm_embed_dim", sd, None, "FORMAT", "'model_args.embed_dim' is 16, but the weights have 12 (tensor "
              "'patch_embed.proj.weight'", config=dict(tcfg, model_args={"num_heads": 2, "embed_dim": 16}))
    fx.refuse("timm_reg_tokens", sd, None, "FORMAT", "'model_args.reg_tokens' is 4, but the weights have 0 (tensor "
              "'reg_token' is absent", config=dict(tcfg, model_args={"num_heads": 2, "reg_tokens": 4}))
    fx.refuse("timm_pool_include_prefix", sd, None, "UNSUPPORTED", "model_args 'pool_include_prefix' is true: a pool over "
              "the prefix tokens too, which vit.h does not run", config=dict(tcfg, model_args={
                  "num_heads": 2, "global_pool": "avg", "pool_include_prefix": True}))
    fx.refuse("timm_arch_unknown", sd, None, "UNSUPPORTED", "timm architecture 'vit_unknown_224' is not one vit.h knows",
              config=dict(tcfg, architecture="vit_unknown_224"))
    fx.refuse("timm_arch_eva02", sd, None, "FORMAT", "timm architecture 'eva02_base_patch14_224' is an EVA-02 (timm's "
              "Eva class: rotary position embeddings) in eva naming, but the tensors of",
              config=dict(tcfg, architecture="eva02_base_patch14_224"))
    hf = _randomize(HFViTForImageClassification({"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
                                                 "intermediate_size": 8, "image_size": 8, "patch_size": 4,
                                                 "id2label": {"0": "a", "1": "b"}}).eval(), _seed("bad_hf"))
    hsd = hf.state_dict()
    hcfg = _hf_cfg(hf, True, ["a", "b"])
    fx.refuse("hf_hidden_size", hsd, {"format": "pt"}, "FORMAT", "'hidden_size' is 16, but", config=dict(hcfg, hidden_size=16))
    fx.refuse("hf_gelu_fast", hsd, {"format": "pt"}, "UNSUPPORTED", "activation 'gelu_fast' is not supported",
              config=dict(hcfg, hidden_act="gelu_fast"))
    fx.refuse("hf_id2label_count", hsd, {"format": "pt"}, "FORMAT", "'id2label' names 3 classes",
              config=dict(hcfg, id2label={"0": "a", "1": "b", "2": "c"}))
    fx.refuse("hf_id2label_gap", hsd, {"format": "pt"}, "FORMAT", "'id2label' has 2 names for classes up to 2",
              config=dict(hcfg, id2label={"0": "a", "2": "c"}))
    fx.refuse("hf_missing_key", {k: v for k, v in hsd.items() if k != "vit.encoder.layer.0.attention.attention.key.bias"},
              {"format": "pt"}, "MISSING", "missing tensor 'vit.encoder.layer.0.attention.attention.key.bias'", config=hcfg)
    fx.refuse("hf_pooler_and_classifier", dict(hsd, **{"vit.pooler.dense.weight": torch.zeros(8, 8),
                                                       "vit.pooler.dense.bias": torch.zeros(8)}), {"format": "pt"}, "FORMAT",
              "unexpected tensor 'vit.pooler.dense.weight' for a vit model with naming 'transformers'; the naming has "
              "no place for a pooler beside a classifier", config=hcfg)
    fx.refuse("hf_model_type", hsd, {"format": "pt"}, "UNSUPPORTED", "transformers model_type 'swin' is not one vit.h "
              "runs", config=dict(hcfg, model_type="swin", architectures=["SwinForImageClassification"]))
    fx.refuse("hf_beit_naming", hsd, {"format": "pt"}, "FORMAT", "transformers model_type 'beit' is BEiT in hf_beit "
              "naming, but the tensors of", config=dict(hcfg, model_type="beit", architectures=["BeitForImageClassification"]))
    # transformers' BEiT heads vit.h lacks, refused by name whatever the tensors
    for name, mt, arch, what in (("hf_beit_seg", "beit", "BeitForSemanticSegmentation", "a BEiT segmenter (UperNet"),
                                 ("hf_data2vec_seg", "data2vec-vision", "Data2VecVisionForSemanticSegmentation",
                                  "a BEiT segmenter (UperNet"),
                                 ("hf_beit_backbone", "beit", "BeitBackbone", "a BEiT backbone (chosen layers' hidden")):
        fx.refuse(name, hsd, {"format": "pt"}, "UNSUPPORTED", f"transformers model_type '{mt}', architecture {arch} is "
                  f"{what}", config=dict(hcfg, model_type=mt, architectures=[arch]))
    # transformers' BEiT switches against the tensors they make: each contradiction names the key and the tensor
    bsd, bcfg = _beit_sd(), _beit_cfg()
    fx.refuse("hf_beit_rel_switch", bsd, {"format": "pt"}, "FORMAT", "'use_relative_position_bias' is true, but the "
              "weights have no tensor 'encoder.layer.0.attention.attention.relative_position_bias.relative_position_bias_"
              "table'", config=dict(bcfg, use_relative_position_bias=True))
    fx.refuse("hf_beit_shared_switch", bsd, {"format": "pt"}, "FORMAT", "'use_shared_relative_position_bias' is false, "
              "but the weights have tensor 'encoder.relative_position_bias.relative_position_bias_table'",
              config=dict(bcfg, use_shared_relative_position_bias=False))
    fx.refuse("hf_beit_ls_switch", bsd, {"format": "pt"}, "FORMAT", "'layer_scale_init_value' is 0, but the weights have "
              "tensor 'encoder.layer.0.lambda_1'", config=dict(bcfg, layer_scale_init_value=0.0))
    fx.refuse("hf_beit_pos_switch", bsd, {"format": "pt"}, "FORMAT", "'use_absolute_position_embeddings' is true, but "
              "the weights have no tensor 'embeddings.position_embeddings'",
              config=dict(bcfg, use_absolute_position_embeddings=True))
    fx.refuse("hf_beit_mean_switch", bsd, {"format": "pt"}, "FORMAT", "'use_mean_pooling' is false, but the weights have "
              "tensor 'pooler.layernorm.weight'", config=dict(bcfg, use_mean_pooling=False))
    fx.refuse("hf_beit_both_rel", dict(bsd, **{"encoder.layer.0.attention.attention.relative_position_bias."
                                               "relative_position_bias_table": torch.zeros(12, 2)}),
              {"format": "pt"}, "UNSUPPORTED", "both a shared relative position bias and one in each block",
              config=dict(bcfg, use_relative_position_bias=True))
    fx.refuse("hf_vit_mim", hsd, {"format": "pt"}, "UNSUPPORTED", "transformers architecture 'ViTForMaskedImageModeling' "
              "(model_type 'vit') is not one vit.h runs", config=dict(hcfg, architectures=["ViTForMaskedImageModeling"]))
    fx.refuse("hf_dinov2_classifier", hsd, {"format": "pt"}, "UNSUPPORTED", "transformers model_type 'dinov2', "
              "architecture Dinov2ForImageClassification is a DINOv2 classifier (its head reads the class token and the "
              "mean of the patch tokens side by side): vit.h does not run it",
              config=dict(hcfg, model_type="dinov2", architectures=["Dinov2ForImageClassification"]))
    fx.refuse("hf_timm_arch", hsd, {"format": "pt"}, "FORMAT", "timm architecture 'vit_base_patch16_224' is a ViT in timm "
              "naming, but the tensors of", config={"architecture": "vit_base_patch16_224"})
    fx.refuse("hf_config_not_json", hsd, {"format": "pt"}, "FORMAT", "config.json: bad JSON", config=None)
    with open(os.path.join(out, "bad", "hf_config_not_json", "config.json"), "w") as f:
        f.write('{"num_attention_heads": 2, "id2label": {"0": "a" "1": "b"}}\n')
    with open(os.path.join(out, "MANIFEST"), "w") as f:
        f.write("\n".join(fx.lines) + "\n")
    return fx.lines


def generate_big(out):
    """ViT-Ti/16 in timm naming (no config: 3 heads from the standard size), ViT-S/16 as transformers'
    ViTForImageClassification with config.json, ViT-B/32 in timm naming with avg pooling and fc_norm, stored F16.
    About 300 MB: keep it under build/."""
    torch.set_num_threads(4)
    os.makedirs(out, exist_ok=True)
    lines = []
    cases = [("vit_ti16_timm", dict(patch_size=16, num_layers=12, num_heads=3, hidden_dim=192, mlp_dim=768), "timm", "F32"),
             ("vit_s16_hf", dict(patch_size=16, num_layers=12, num_heads=6, hidden_dim=384, mlp_dim=1536), "transformers", "F32"),
             ("vit_b32_timm_avg", dict(patch_size=32, num_layers=12, num_heads=12, hidden_dim=768, mlp_dim=3072), "timm-avg", "F16")]
    for name, kw, naming, dtype in cases:
        m = _tv(name, image_size=224, num_classes=1000, **kw)
        if dtype != "F32":
            E.round_weights(m, dtype)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        cfg = E.export_naming(m, os.path.join(d, "model.safetensors"), naming, dtype=dtype, config=naming == "transformers")
        if cfg and "id2label" in cfg:
            with open(os.path.join(out, f"{name}.labels.txt"), "w") as f:
                f.write("".join(f"{cfg['id2label'][str(i)]}\n" for i in range(len(cfg["id2label"]))))
        x = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(_seed(name) + 1))
        ref, _ = load(os.path.join(d, "model.safetensors"))
        out_, feat = outputs(ref, x)
        if naming != "timm-avg":  # same model as torchvision's: the renaming loses nothing
            assert torch.allclose(out_, m(x), rtol=1e-4, atol=1e-4), f"{name}: renamed model differs from torchvision's"
        _save(os.path.join(out, f"{name}.in.npy"), x)
        _save(os.path.join(out, f"{name}.out.npy"), out_)
        _save(os.path.join(out, f"{name}.feat.npy"), feat)
        with open(os.path.join(out, f"{name}.info.txt"), "w") as f:
            f.write(f"{naming.split('-')[0]} naming\n{kw['num_heads']} heads (\n")
        lines.append(f"case {name} {name}")
    with open(os.path.join(out, "MANIFEST"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def check(committed):
    """Problems: files that differ from a fresh generate() (bytes; .npy within 1e-5 * max(1, |ref|): PyTorch's
    float32 kernels may round differently with the buffers' alignment, and a changed tool moves far more)."""
    problems = []
    with tempfile.TemporaryDirectory() as fresh:
        generate(fresh)
        files = lambda d: {os.path.relpath(os.path.join(r, f), d) for r, _, fs in os.walk(d) for f in fs}
        new, old = files(fresh), files(committed)
        problems += [f"missing from {committed}: {n}" for n in sorted(new - old)]
        problems += [f"not generated any more: {n}" for n in sorted(old - new)]
        for name in sorted(new & old):
            a, b = os.path.join(fresh, name), os.path.join(committed, name)
            if name.endswith(".npy"):
                x, y = np.load(a), np.load(b)
                if x.shape != y.shape or (np.abs(x - y) > 1e-5 * np.maximum(1, np.abs(y))).any():
                    problems.append(f"{name}: values differ")
            elif open(a, "rb").read() != open(b, "rb").read():
                problems.append(f"{name}: bytes differ")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=FIXTURES, help="default: tests/fixtures/naming")
    parser.add_argument("--check", action="store_true", help="compare --out with a fresh run instead of writing")
    parser.add_argument("--big", metavar="DIR", help="write the ViT-Ti/16, S/16 and B/32 cases into DIR (under build/)")
    parser.add_argument("--run", nargs=3, metavar=("MODEL", "IN", "OUT"), help="save MODEL's output on IN.npy to OUT.npy")
    parser.add_argument("--config", help="with --run: a config.json (default: the one beside MODEL, if any)")
    parser.add_argument("--heads", type=int, help="with --run: attention heads")
    args = parser.parse_args(argv)
    if args.run:
        module, naming = load(args.run[0], args.config, args.heads)
        _save(args.run[2], outputs(module, torch.from_numpy(np.load(args.run[1])))[0])
        print(f"{args.run[0]}: {naming} naming; wrote {args.run[2]}")
    elif args.check:
        problems = check(args.out)
        print("\n".join(problems) if problems else f"{args.out}: up to date")
        return 1 if problems else 0
    elif args.big:
        print(f"wrote {len(generate_big(args.big))} cases to {args.big}")
    else:
        print(f"wrote {len(generate(args.out))} cases and refusals to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Export PyTorch modules to safetensors files for vit.h, with their config in the metadata.

    python3 tools/export.py SPEC OUT.safetensors [--num-classes N] [--image-size S]
                            [--seed S] [--dtype F32|F16|BF16|I8] [--naming NAMING]
    python3 tools/export.py --from IN.safetensors --dtype BF16|I8 OUT.safetensors

SPEC names a module to build:
    torchvision:vit_b_16                    a torchvision builder (vit_b_32, vit_l_16, vit_l_32, vit_h_14)
    torchvision:VisionTransformer:image_size=32,patch_size=8,...   a torchvision class with arguments
    nn:MultiheadAttention:embed_dim=24,num_heads=4,batch_first=True
    reference:seed001.VisionTransformer:image_size=32,...          a class of tools/reference.py
--num-classes 0 replaces a ViT's head by nn.Identity (vit.h then returns features).
--naming timm|timm-avg|transformers|transformers-model|torchvision writes a
torchvision ViT in that library's names without vit.h metadata, plus a
config.json beside it (timm, transformers): a checkpoint as a model hub has it.
--seed re-draws every parameter (see randomize); without it the module keeps its own init.
--dtype BF16 stores every tensor as bfloat16 (vit.h keeps the dense layers'
weight matrices so and widens the rest); I8 stores each dense layer's weight
matrix as int8, symmetric per output row, with its F32 scales in
'<name>_scale', and everything else as F32 (see quantize_i8).
--from converts an existing file (any dtype; its metadata kept) to --dtype.

The file is plain safetensors (STYLE.md section 7), written here so the tools
need only torch and numpy. Tensors are packed back to back in state_dict()
order with no gaps, as Hugging Face's safetensors loader requires (it rejects
holes between data_offsets). The JSON header is padded with trailing spaces
so the data section starts at a multiple of 64 bytes from the file start;
every tensor then starts at a multiple of its element size (4 for F32), and
vit.h can use F32 tensors in place. Tensor names are the module's own
state_dict() names.

This file is also the tools' library: the importers (make_fixtures.py,
roundtrip.py, check_fixtures.py) get spec building, random weights and "what
does PyTorch compute for this module" from here, so all of them agree.
"""

import argparse
import ast
import functools
import inspect
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torchvision.models.vision_transformer as tv
from torch import nn

import reference as R

ALIGN = 64

# safetensors dtype -> (torch dtype, little-endian numpy dtype of the stored bits)
DTYPES = {
    "F32": (torch.float32, "<f4"),
    "F16": (torch.float16, "<f2"),
    "BF16": (torch.bfloat16, "<u2"),  # numpy has no bfloat16: carried as raw 16-bit words
    "I8": (torch.int8, "<i1"),  # dense layers' weights only, with '<name>_scale' (see stored_tensors)
}
QUANTIZATION = "int8-per-channel-symmetric"  # the I8 files' __metadata__ "quantization"


class ExportError(ValueError):
    """A module that vit.h cannot represent, or a bad spec; the message says which and why."""


# ---- safetensors ----

def _align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _tensor_bytes(t, dtype):
    torch_dtype, np_dtype = DTYPES[dtype]
    t = t.detach().cpu().contiguous().to(torch_dtype)
    if dtype == "BF16":
        t = t.view(torch.int16)
    return t.numpy().astype(np_dtype, copy=False).tobytes()


def is_dense_weight(name, t):
    """A dense layer's weight matrix, by name and shape: what I8 quantises and vit.h keeps as BF16 or I8.

    vit.h's I8 products take at most 65536 inputs (their int32 sums stay exact); wider ones stay F32."""
    return t.dim() == 2 and name.endswith("weight") and t.shape[1] <= 65536


def quantize_i8(w):
    """(q, scale) with w ~ scale[:, None] * q: symmetric per output row, q in [-127, 127], scale = max|row| / 127."""
    w = w.detach().float()
    amax = w.abs().amax(dim=1)
    scale = torch.where(amax > 0, amax / 127, torch.ones_like(amax))
    return torch.clamp(torch.round(w / scale[:, None]), -127, 127).to(torch.int8), scale


def stored_tensors(tensors, dtype):
    """(name, stored dtype, tensor) for each tensor a file of dtype holds: every tensor as dtype, except I8,
    which stores dense weights as I8 followed by their F32 '<name>_scale' and all else as F32."""
    for name, t in tensors.items():
        if dtype != "I8":
            yield name, dtype, t
        elif is_dense_weight(name, t):
            q, scale = quantize_i8(t)
            yield name, "I8", q
            yield name + "_scale", "F32", scale
        else:
            yield name, "F32", t


def write_safetensors(path, tensors, metadata, dtype="F32"):
    """Write {name: tensor} with string metadata: tensors packed in order, the data section 64-byte aligned."""
    if dtype not in DTYPES:
        raise ExportError(f"dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    header = {"__metadata__": metadata}
    blobs, end = [], 0
    for name, sd, t in stored_tensors(tensors, dtype):
        data = _tensor_bytes(t, sd)
        header[name] = {"dtype": sd, "shape": list(t.shape), "data_offsets": [end, end + len(data)]}
        blobs.append(data)
        end += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (_align(8 + len(text)) - 8 - len(text))
    check_layout(header, end)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def check_layout(header, data_size):
    """Raise ExportError unless the tensors tile [0, data_size) in offset order, as Hugging Face's loader demands."""
    spans = sorted(tuple(v["data_offsets"]) + (k,) for k, v in header.items() if k != "__metadata__")
    pos = 0
    for begin, end, name in spans:
        if begin != pos or end < begin:
            raise ExportError(f"tensor {name!r}: data_offsets [{begin}, {end}], expected to begin at {pos}")
        pos = end
    if pos != data_size:
        raise ExportError(f"tensors end at {pos}, the data section has {data_size} bytes")


def _read_header(f, path):
    """(header without __metadata__, metadata, start of the data section) of an open safetensors file."""
    size = os.fstat(f.fileno()).st_size
    head = f.read(8)
    (n,) = struct.unpack("<Q", head) if len(head) == 8 else (size,)
    if 8 + n > size:
        raise ExportError(f"{path}: not a safetensors file (header length {n}, file size {size})")
    header = json.loads(f.read(n))
    metadata = header.pop("__metadata__", {})
    try:
        check_layout(header, size - 8 - n)
    except ExportError as e:
        raise ExportError(f"{path}: {e} (hint: re-export with tools/export.py)") from None
    for name, info in header.items():
        if info["dtype"] not in DTYPES:
            raise ExportError(f"{path}: tensor {name!r}: dtype {info['dtype']!r}, expected one of {', '.join(DTYPES)}")
    return header, metadata, 8 + n


def _read_tensor(f, start, info):
    """One tensor of an open file as a writable float32 ndarray, read on its own (no whole-file copy)."""
    begin, end = info["data_offsets"]
    f.seek(start + begin)
    buf = bytearray(end - begin)
    f.readinto(buf)
    a = np.frombuffer(buf, dtype=DTYPES[info["dtype"]][1])
    if info["dtype"] == "BF16":
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32, copy=False).reshape(info["shape"])


def load_safetensors(path):
    """Read a safetensors file: ({name: float32 ndarray}, metadata dict). Any of DTYPES is widened to float32;
    an I8 tensor comes back as scale * q, without its '_scale' tensor."""
    with open(path, "rb") as f:
        header, metadata, start = _read_header(f, path)
        tensors = {name: _read_tensor(f, start, info) for name, info in header.items()}
    for name, info in header.items():
        if info["dtype"] == "I8":
            if name + "_scale" not in tensors:
                raise ExportError(f"{path}: I8 tensor {name!r} has no {name + '_scale'!r}")
            scale = tensors.pop(name + "_scale")
            tensors[name] = tensors[name] * scale.reshape((-1,) + (1,) * (tensors[name].ndim - 1))
    return tensors, metadata


def convert(src, out, dtype):
    """Write the tensors of safetensors file src to out as dtype, keeping its metadata (no __metadata__ stays
    none, unless I8 adds its "quantization"). Returns the number of weights."""
    if dtype not in ("BF16", "I8"):
        raise ExportError(f"--from converts to BF16 or I8, not {dtype}")
    tensors, meta = load_safetensors(src)
    meta.pop("quantization", None)
    if dtype == "I8":
        meta["quantization"] = QUANTIZATION
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in tensors.items()}
    write_safetensors_plain(out, tensors, dict(sorted(meta.items())) if meta else None, dtype)
    return sum(v.numel() for v in tensors.values())


# ---- what a module is, for vit.h ----

def _out(linear):
    """Classes of a head: 0 when it was replaced by nn.Identity (feature extraction)."""
    return 0 if isinstance(linear, nn.Identity) else linear.out_features


def _patch(conv, image_size):
    return dict(image_size=image_size, patch_size=conv.kernel_size[0], in_channels=conv.in_channels,
                hidden_dim=conv.out_channels)


def _vit_torchvision(m):
    if not isinstance(m.conv_proj, nn.Conv2d):
        raise ExportError("torchvision VisionTransformer with a conv stem (conv_stem_configs) is not supported")
    heads = {} if isinstance(m.heads, nn.Identity) else dict(m.heads.named_children())
    return dict(_patch(m.conv_proj, m.image_size), num_layers=len(m.encoder.layers),
                num_heads=m.encoder.layers[0].num_heads, mlp_dim=m.mlp_dim, num_classes=_out(heads.get("head", nn.Identity())),
                representation_size=_out(heads.get("pre_logits", nn.Identity())), ln_eps=m.encoder.ln.eps,
                act="gelu", pool="cls", scale_after_softmax=False)


def _vit_seed001(m):
    p = m.patchify
    # The seed keeps image_size // patch_size only; image_size is rebuilt from it.
    return dict(_patch(p.conv_proj, p.new_size * p.conv_proj.kernel_size[0]), num_layers=len(m.encoder),
                num_heads=m.encoder[0].attention.num_heads, mlp_dim=m.encoder[0].mlp.layers[0].out_features,
                num_classes=_out(m.final), representation_size=0, ln_eps=m.ln.eps, act="relu", pool="cls",
                scale_after_softmax=False)


def _pe_seed004(pe):
    side = math.isqrt(pe.positions.shape[0] - 1)
    return _patch(pe.projection[0], side * pe.projection[0].kernel_size[0])


def _vit_seed004(m):
    embed, encoder, head = m
    block = encoder[0]
    return dict(_pe_seed004(embed), num_layers=len(encoder), num_heads=block[0].fn[1].num_heads,
                mlp_dim=block[1].fn[1][0].out_features, num_classes=_out(head[2]), representation_size=0,
                ln_eps=head[1].eps, act="gelu", pool="mean", scale_after_softmax=True)


def _mha(embed_dim, num_heads, scale_after_softmax):
    if embed_dim % num_heads:
        raise ExportError(f"embed_dim {embed_dim} is not a multiple of num_heads {num_heads}")
    return dict(embed_dim=embed_dim, num_heads=num_heads, scale_after_softmax=scale_after_softmax)


def _mha_nn(m):
    refuse = [why for why, bad in [
        ("batch_first=True is required (vit.h takes (B, N, C))", not m.batch_first),
        ("kdim/vdim must equal embed_dim", not m._qkv_same_embed_dim),
        ("bias=True is required", m.in_proj_bias is None),
        ("add_bias_kv is not supported", m.bias_k is not None),
        ("add_zero_attn is not supported", m.add_zero_attn)] if bad]
    if refuse:
        raise ExportError("nn.MultiheadAttention: " + "; ".join(refuse))
    return _mha(m.embed_dim, m.num_heads, False)


def _mlp(first, second, act):
    return dict(in_dim=first.in_features, hidden_dim=first.out_features, out_dim=second.out_features, act=act)


def _block(ln, num_heads, mlp_first, act, scale_after_softmax):
    return dict(hidden_dim=ln.normalized_shape[0], num_heads=num_heads, mlp_dim=mlp_first.out_features,
                ln_eps=ln.eps, act=act, scale_after_softmax=scale_after_softmax)


def _aft(m, variant):
    meta = dict(variant=variant, max_seqlen=m.wbias.shape[0] if variant != "simple" else 0,
                dim=m.to_q.in_features, hidden_dim=m.hidden_dim)  # AFTSimple has no position bias: max_seqlen 0
    if variant == "local":
        meta["s"] = m.s
    return meta


# exact type -> (kind, naming, hyperparameters). Exact, not isinstance: seed002.Model subclasses seed002.MLP.
DESCRIBE = {
    tv.VisionTransformer: ("vit", "torchvision", _vit_torchvision),
    R.seed001.VisionTransformer: ("vit", "patchify", _vit_seed001),
    R.seed004.ViT: ("vit", "einops", _vit_seed004),
    R.seed000.SDPA: ("sdpa", "default", lambda m: {}),
    R.seed000.MultiHeadedAttention: ("mha", "proj_qkv", lambda m: _mha(m.proj_query.in_features, m.heads, False)),
    nn.MultiheadAttention: ("mha", "nn", _mha_nn),
    R.seed004.MultiHeadAttention: ("mha", "einops", lambda m: _mha(m.emb_size, m.num_heads, True)),
    # seed 000's MLP has seed 001's layout (layers.0, ReLU, layers.2), so it shares its naming.
    R.seed000.MLP: ("mlp", "seq_layers", lambda m: _mlp(m.layers[0], m.layers[2], "relu")),
    R.seed001.MLP: ("mlp", "seq_layers", lambda m: _mlp(m.layers[0], m.layers[2], "relu")),
    tv.MLPBlock: ("mlp", "torchvision", lambda m: _mlp(m[0], m[3], "gelu")),
    R.seed004.FeedForwardBlock: ("mlp", "einops", lambda m: _mlp(m[0], m[3], "gelu")),
    R.seed002.MLP: ("mlp", "seq_mlp", lambda m: _mlp(m.mlp[0], m.mlp[2], "relu")),
    tv.EncoderBlock: ("encoder_block", "torchvision", lambda m: _block(m.ln_1, m.num_heads, m.mlp[0], "gelu", False)),
    R.seed001.EncoderBlock: ("encoder_block", "patchify",
                             lambda m: _block(m.ln_1, m.attention.num_heads, m.mlp.layers[0], "relu", False)),
    R.seed004.TransformerEncoderBlock: ("encoder_block", "einops",
                                        lambda m: _block(m[0].fn[0], m[0].fn[1].num_heads, m[1].fn[1][0], "gelu", True)),
    R.seed000.PatchifyLayer: ("patch_embed", "conv_proj", lambda m: dict(
        _patch(m.conv_proj, m.new_size * m.conv_proj.kernel_size[0]), class_token=False, pos_embed=False)),
    R.seed001.PatchifyLayer: ("patch_embed", "conv_proj", lambda m: dict(
        _patch(m.conv_proj, m.new_size * m.conv_proj.kernel_size[0]), class_token=False, pos_embed=False)),
    R.seed004.PatchEmbedding: ("patch_embed", "einops", lambda m: dict(_pe_seed004(m), class_token=True, pos_embed=True)),
    R.seed002.ScaledDotSelfAttention: ("sdsa", "default", lambda m: dict(n_embd=m.key.in_features)),
    R.seed002.Model: ("sdsa_classifier", "default", lambda m: dict(
        n_embd=m.attn.key.in_features, seq_len=m.fc.in_features // m.attn.key.in_features,
        num_classes=m.fc.out_features)),
    R.seed000.SqueezeExcitation: ("se", "torchvision", lambda m: dict(
        in_channels=m.fc1.in_channels, squeeze_channels=m.fc1.out_channels)),
    R.seed003.EMSA: ("emsa", "default", lambda m: dict(
        d_model=m.d_model, d_k=m.d_k, d_v=m.d_v, h=m.h, H=m.H, W=m.W, ratio=m.ratio,
        apply_transform=m.apply_transform)),
    R.seed003.ShuffleAttention: ("shuffle", "default", lambda m: dict(channel=m.channel, G=m.G)),
    R.seed003.SpatialGroupEnhance: ("sge", "default", lambda m: dict(groups=m.groups)),
    R.seed003.AFTFull: ("aft", "default", lambda m: _aft(m, "full")),
    R.seed003.AFTSimple: ("aft", "default", lambda m: _aft(m, "simple")),
    R.seed003.AFTLocal: ("aft", "default", lambda m: _aft(m, "local")),
    R.seed003.OutlookAttention: ("outlook", "default", lambda m: dict(
        dim=m.v.in_features, num_heads=m.num_heads, kernel_size=m.kernel_size, padding=m.padding,
        stride=m.stride, qkv_bias=m.v.bias is not None, scale=float(m.scale))),
}


def _str(v):
    """Metadata values are strings: ints in decimal, floats as repr (1e-06), booleans as 1/0."""
    if isinstance(v, bool):
        return "1" if v else "0"
    return repr(v) if isinstance(v, float) else str(v)


def describe(module):
    """(kind, naming, metadata) of a module, metadata as the strings written to the file."""
    cls = type(module)
    if cls not in DESCRIBE:
        raise ExportError(f"{cls.__module__}.{cls.__qualname__}: no vit.h kind for this class; "
                          f"known: {', '.join(sorted(c.__qualname__ for c in DESCRIBE))}")
    kind, naming, params = DESCRIBE[cls]
    meta = {"format": "vit.h", "format_version": "1", "kind": kind, "naming": naming,
            "class": f"{cls.__module__}.{cls.__qualname__}"}
    meta.update((k, _str(v)) for k, v in params(module).items())
    return kind, naming, meta


def export_module(module, path, kind=None, dtype="F32", extra=None, **overrides):
    """Write module's weights and inferred config to path; returns the metadata.

    kind, when given, must be the inferred one (a guard for callers).
    extra adds metadata entries vit.h does not read (a trained model's
    dataset, labels, input normalisation); they may not shadow inferred keys.
    overrides replace inferred hyperparameters, e.g. image_size for a seed 001
    model whose image size was not a multiple of the patch size.
    """
    found, _, meta = describe(module)
    if kind is not None and kind != found:
        raise ExportError(f"{type(module).__qualname__} exports as kind {found!r}, not {kind!r}")
    for key, value in (extra or {}).items():
        if key in meta:
            raise ExportError(f"extra metadata {key!r} would shadow an inferred entry")
        meta[key] = _str(value)
    for key, value in overrides.items():
        if key not in meta or key in ("format", "format_version", "kind", "naming", "class"):
            raise ExportError(f"cannot override {key!r} for kind {found!r}")
        meta[key] = _str(value)
    # Floating-point entries only: integer buffers (e.g. BatchNorm's num_batches_tracked) are not weights.
    tensors = {k: v for k, v in module.state_dict().items() if v.is_floating_point()}
    if dtype == "I8":
        meta["quantization"] = QUANTIZATION
    write_safetensors(path, tensors, dict(sorted(meta.items())), dtype)
    return meta


# ---- weights and forward passes, as the tests see them ----

NORMS = (nn.LayerNorm, nn.GroupNorm, nn.InstanceNorm2d, nn.BatchNorm2d)
POSITIONAL = {"class_token", "cls_token", "pos_embedding", "positions", "wbias"}  # wbias: AFT's pairwise position bias


def randomize(module, seed):
    """Re-draw every parameter from a generator seeded with `seed`, in module order.

    Library inits leave zeros and ones (torchvision's head is all zeros, norms
    start at weight 1, bias 0), which would hide a C kernel that drops a term.
    Norm weights 1 + 0.1 N(0,1); biases 0.1 N(0,1); class tokens and position
    embeddings 0.5 N(0,1); other weights N(0,1) / sqrt(fan_in), fan_in being the
    product of the dims after the first, so activations stay O(1) at any width.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for owner in module.modules():
            for name, p in owner.named_parameters(recurse=False):
                z = torch.randn(p.shape, generator=g)
                if name in POSITIONAL:
                    z = 0.5 * z
                elif name.endswith("bias"):
                    z = 0.1 * z
                elif isinstance(owner, NORMS):
                    z = 1 + 0.1 * z
                else:
                    z = z / math.sqrt(math.prod(p.shape[1:]))
                p.copy_(z)
    return module


def round_weights(module, dtype):
    """Round parameters to dtype and back, so PyTorch computes with what an F16, BF16 or I8 file holds."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if dtype == "I8":
                if is_dense_weight(name, p):
                    q, scale = quantize_i8(p)
                    p.copy_(q.float() * scale[:, None])
            else:
                p.copy_(p.to(DTYPES[dtype][0]).float())
    return module


def round_products(module, dtype):
    """Make module's nn.Linear layers take their input as vit.h's BF16 and I8 products do (see vit.h's
    "kernels: matrix multiply"): BF16 rounds it to bfloat16, I8 quantises each row to u8, [min(x, 0),
    max(x, 0)] onto 0..255 with a zero point. Weights: round_weights. Returns the hook handles."""
    def hook(_, args):
        x = args[0]
        if dtype == "BF16":
            return (x.to(torch.bfloat16).float(),) + args[1:]
        lo, hi = x.amin(-1, keepdim=True).clamp(max=0), x.amax(-1, keepdim=True).clamp(min=0)
        sx = (hi - lo) / 255
        sx = torch.where(sx > 1e-30, sx, torch.ones_like(sx))
        inv = 1 / sx
        zp = torch.round(-lo * inv)
        xq = torch.clamp(torch.round(x * inv) + zp, 0, 255)
        return ((xq - zp) * sx,) + args[1:]
    return [m.register_forward_pre_hook(hook) for m in module.modules() if isinstance(m, nn.Linear)]


SELF_ATTENTION_QKV = (nn.MultiheadAttention, R.seed000.MultiHeadedAttention, R.seed003.EMSA)


def reference_forward(module, x):
    """What vit.h must compute for input x: modules taking (query, key, value) get x, x, x; tuples give [0]."""
    out = module(x, x, x) if type(module) in SELF_ATTENTION_QKV else module(x)
    return out[0] if isinstance(out, tuple) else out


def _head(model):
    """(parent, attribute) holding a whole ViT's classification head."""
    if isinstance(model, tv.VisionTransformer):
        return model, "heads"
    if isinstance(model, R.seed001.VisionTransformer):
        return model, "final"
    if isinstance(model, R.seed004.ViT):
        return model[2], "2"
    raise ExportError(f"{type(model).__qualname__} is not a whole ViT")


def drop_head(model):
    """Replace the head by nn.Identity: the model then returns its features (seed 001's `heads = Identity`)."""
    parent, attr = _head(model)
    setattr(parent, attr, nn.Identity())
    return model


def features(model, x):
    """A ViT's pre-head representation: the LayerNorm'd class token, or (seed 004) the LayerNorm'd token mean."""
    parent, attr = _head(model)
    head = getattr(parent, attr)
    setattr(parent, attr, nn.Identity())
    try:
        return model(x)
    finally:
        setattr(parent, attr, head)


# ---- modules from files: the inverse of export_module ----

def _tv_vit(m):
    if m["in_channels"] != 3:
        raise ExportError(f"torchvision's VisionTransformer takes 3 input channels, not {m['in_channels']}")
    return tv.VisionTransformer(m["image_size"], m["patch_size"], m["num_layers"], m["num_heads"], m["hidden_dim"],
                                m["mlp_dim"], num_classes=m["num_classes"] or 1,
                                representation_size=m["representation_size"] or None,
                                norm_layer=functools.partial(nn.LayerNorm, eps=m["ln_eps"]))


def _aft_rebuild(m):
    cls = {"full": R.seed003.AFTFull, "simple": R.seed003.AFTSimple, "local": R.seed003.AFTLocal}[m["variant"]]
    extra = {"s": m["s"]} if m["variant"] == "local" else {}
    return cls(m["max_seqlen"], m["dim"], m["hidden_dim"], **extra)


# class -> constructor from parsed metadata; every class of DESCRIBE has one.
REBUILD = {
    tv.VisionTransformer: _tv_vit,
    R.seed001.VisionTransformer: lambda m: R.seed001.VisionTransformer(
        m["image_size"], m["patch_size"], m["num_layers"], m["num_heads"], m["hidden_dim"], m["mlp_dim"],
        m["num_classes"] or 1, m["in_channels"]),
    R.seed004.ViT: lambda m: R.seed004.ViT(
        m["in_channels"], m["patch_size"], m["hidden_dim"], m["image_size"], m["num_layers"], m["num_classes"] or 1,
        num_heads=m["num_heads"], forward_expansion=m["mlp_dim"] // m["hidden_dim"]),
    R.seed000.SDPA: lambda m: R.seed000.SDPA(),
    R.seed000.MultiHeadedAttention: lambda m: R.seed000.MultiHeadedAttention(m["num_heads"], m["embed_dim"]),
    nn.MultiheadAttention: lambda m: nn.MultiheadAttention(m["embed_dim"], m["num_heads"], batch_first=True),
    R.seed004.MultiHeadAttention: lambda m: R.seed004.MultiHeadAttention(m["embed_dim"], m["num_heads"]),
    R.seed000.MLP: lambda m: R.seed000.MLP(m["in_dim"], m["hidden_dim"]),
    R.seed001.MLP: lambda m: R.seed001.MLP(m["in_dim"], m["hidden_dim"]),
    tv.MLPBlock: lambda m: tv.MLPBlock(m["in_dim"], m["hidden_dim"], 0.0),
    R.seed004.FeedForwardBlock: lambda m: R.seed004.FeedForwardBlock(m["in_dim"], m["hidden_dim"] // m["in_dim"]),
    R.seed002.MLP: lambda m: R.seed002.MLP(),
    tv.EncoderBlock: lambda m: tv.EncoderBlock(m["num_heads"], m["hidden_dim"], m["mlp_dim"], 0.0, 0.0,
                                               functools.partial(nn.LayerNorm, eps=m["ln_eps"])),
    R.seed001.EncoderBlock: lambda m: R.seed001.EncoderBlock(m["num_heads"], m["hidden_dim"], m["mlp_dim"]),
    R.seed004.TransformerEncoderBlock: lambda m: R.seed004.TransformerEncoderBlock(
        m["hidden_dim"], forward_expansion=m["mlp_dim"] // m["hidden_dim"], num_heads=m["num_heads"]),
    R.seed000.PatchifyLayer: lambda m: R.seed000.PatchifyLayer(
        m["image_size"], m["patch_size"], m["hidden_dim"], m["in_channels"]),
    R.seed001.PatchifyLayer: lambda m: R.seed001.PatchifyLayer(
        m["image_size"], m["patch_size"], m["hidden_dim"], m["in_channels"]),
    R.seed004.PatchEmbedding: lambda m: R.seed004.PatchEmbedding(
        m["in_channels"], m["patch_size"], m["hidden_dim"], m["image_size"]),
    R.seed002.ScaledDotSelfAttention: lambda m: R.seed002.ScaledDotSelfAttention(m["n_embd"]),
    R.seed002.Model: lambda m: R.seed002.Model(m["n_embd"], m["seq_len"]),
    R.seed000.SqueezeExcitation: lambda m: R.seed000.SqueezeExcitation(m["in_channels"], m["squeeze_channels"]),
    R.seed003.EMSA: lambda m: R.seed003.EMSA(m["d_model"], m["d_k"], m["d_v"], m["h"], H=m["H"], W=m["W"],
                                             ratio=m["ratio"], apply_transform=bool(m["apply_transform"])),
    R.seed003.ShuffleAttention: lambda m: R.seed003.ShuffleAttention(m["channel"], G=m["G"]),
    R.seed003.SpatialGroupEnhance: lambda m: R.seed003.SpatialGroupEnhance(m["groups"]),
    R.seed003.AFTFull: _aft_rebuild,
    R.seed003.AFTSimple: _aft_rebuild,
    R.seed003.AFTLocal: _aft_rebuild,
    R.seed003.OutlookAttention: lambda m: R.seed003.OutlookAttention(
        m["dim"], m["num_heads"], m["kernel_size"], m["padding"], m["stride"], bool(m["qkv_bias"]), m["scale"]),
}


# Files written before vit.h 0.2 named kinds, namings and a key after the
# tutorials the modules came from; vit.h reads them as today's names
# (vit__kind_alias, vit__naming_alias), and so does rebuild().
KIND_ALIASES = {"seed002_classifier": "sdsa_classifier"}
NAMING_ALIASES = {
    ("vit", "seed001"): "patchify", ("vit", "seed004"): "einops", ("encoder_block", "seed001"): "patchify",
    ("encoder_block", "seed004"): "einops", ("mha", "seed000"): "proj_qkv", ("mha", "seed004"): "einops",
    ("mlp", "seed001"): "seq_layers", ("mlp", "seed002"): "seq_mlp", ("mlp", "seed004"): "einops",
    ("patch_embed", "seed000"): "conv_proj", ("patch_embed", "seed001"): "conv_proj", ("patch_embed", "seed004"): "einops",
    ("se", "seed000"): "torchvision"}
KEY_ALIASES = {"attn_quirk": "scale_after_softmax"}


def current_names(meta):
    """meta with the kind, naming and keys of files before vit.h 0.2 under today's names."""
    meta = {KEY_ALIASES.get(k, k): v for k, v in meta.items()}
    if "kind" in meta:
        meta["kind"] = KIND_ALIASES.get(meta["kind"], meta["kind"])
        old = meta.get("naming", "")
        meta["naming"] = NAMING_ALIASES.get((meta["kind"], old), "default" if old in ("seed000", "seed002", "seed003") else old)
    return meta


def rebuild(meta):
    """The module (eval mode, init weights) that export_module would describe with these metadata.

    Raises ExportError when the class is unknown or the rebuilt module would
    not be described by the same metadata (what vit.h reads must be what ran).
    """
    meta = current_names(meta)
    classes = {f"{c.__module__}.{c.__qualname__}": c for c in REBUILD}
    cls = classes.get(meta.get("class"))
    if cls is None:
        raise ExportError(f"metadata class {meta.get('class')!r}: no module to rebuild; known: {', '.join(classes)}")
    module = REBUILD[cls]({k: _value(v) for k, v in meta.items()})
    if int(meta.get("num_classes", 1)) == 0:
        drop_head(module)
    _, _, mine = describe(module)
    wrong = [f"{k}={meta.get(k)!r} (rebuilt: {v!r})" for k, v in mine.items() if meta.get(k) != v]
    if wrong:
        raise ExportError(f"rebuilt {cls.__qualname__} differs from the metadata: {', '.join(wrong)}")
    return module.eval()


def load_module(path):
    """(module, metadata) from a file export_module wrote: rebuild(metadata) with the file's weights.

    Tensors are read one at a time straight into the module, so the peak
    memory is the module plus one tensor. An I8 tensor is read as scale * q.
    When the file's dense weights are BF16 or I8, the module's Linear layers
    also take their inputs as vit.h's products do (round_products).
    """
    with open(path, "rb") as f:
        header, meta, start = _read_header(f, path)
        module = rebuild(meta)
        state = {k: v for k, v in module.state_dict().items() if v.is_floating_point()}
        scales = {k[:-len("_scale")] for k in header if k.endswith("_scale") and header.get(k[:-len("_scale")], {}).get("dtype") == "I8"}
        names = set(header) - {k + "_scale" for k in scales}
        if set(state) != names:
            raise ExportError(f"{path}: missing tensors {sorted(set(state) - names)}, "
                              f"unexpected tensors {sorted(names - set(state))}")
        with torch.no_grad():
            for name in names:
                info = header[name]
                if list(state[name].shape) != info["shape"]:
                    raise ExportError(f"{path}: tensor {name!r} has shape {info['shape']}, "
                                      f"the module's is {list(state[name].shape)}")
                t = torch.from_numpy(_read_tensor(f, start, info))
                if name in scales:
                    t = t * torch.from_numpy(_read_tensor(f, start, header[name + "_scale"])).reshape(-1, 1)
                state[name].copy_(t)
    low = {header[k]["dtype"] for k in names if header[k]["dtype"] in ("BF16", "I8") and is_dense_weight(k, state[k])}
    if low:
        round_products(module, "I8" if "I8" in low else "BF16")
    return module, meta


# ---- other libraries' names: timm and Hugging Face transformers ----
# A torchvision VisionTransformer written as timm or transformers would save
# it: their state_dict names, no vit.h metadata, and (transformers, and timm
# when asked) a config.json beside the weights. vit.h then has to infer the
# config, as for a checkpoint downloaded from a model hub.

NAMINGS = ("torchvision", "timm", "timm-avg", "transformers", "transformers-model")


def _tv_parts(model):
    """(layers, head Linear or None, pre_logits Linear or None) of a torchvision ViT, refusing what the others lack."""
    if not isinstance(model, tv.VisionTransformer):
        raise ExportError(f"{type(model).__qualname__}: only a torchvision VisionTransformer can be renamed")
    if not isinstance(model.conv_proj, nn.Conv2d):
        raise ExportError("a conv stem (conv_stem_configs) has no timm or transformers name")
    heads = {} if isinstance(model.heads, nn.Identity) else dict(model.heads.named_children())
    return list(model.encoder.layers), heads.get("head"), heads.get("pre_logits")


def timm_state_dict(model, global_pool="token"):
    """A torchvision ViT's weights under timm's VisionTransformer names.

    global_pool "token" keeps the final LayerNorm as `norm`; "avg" makes it
    `fc_norm` (timm's default for avg pooling), which then normalises the
    mean of the patch tokens: the same weights, a different model.
    """
    layers, head, pre = _tv_parts(model)
    if pre is not None:
        raise ExportError("timm's VisionTransformer has no pre_logits layer (representation_size)")
    if global_pool not in ("token", "avg"):
        raise ExportError(f"global_pool {global_pool!r}: expected 'token' or 'avg'")
    sd = {"cls_token": model.class_token, "pos_embed": model.encoder.pos_embedding,
          "patch_embed.proj.weight": model.conv_proj.weight, "patch_embed.proj.bias": model.conv_proj.bias}
    for i, layer in enumerate(layers):
        attn, mlp, b = layer.self_attention, layer.mlp, f"blocks.{i}."
        sd.update({b + "norm1.weight": layer.ln_1.weight, b + "norm1.bias": layer.ln_1.bias,
                   b + "attn.qkv.weight": attn.in_proj_weight, b + "attn.qkv.bias": attn.in_proj_bias,
                   b + "attn.proj.weight": attn.out_proj.weight, b + "attn.proj.bias": attn.out_proj.bias,
                   b + "norm2.weight": layer.ln_2.weight, b + "norm2.bias": layer.ln_2.bias,
                   b + "mlp.fc1.weight": mlp[0].weight, b + "mlp.fc1.bias": mlp[0].bias,
                   b + "mlp.fc2.weight": mlp[3].weight, b + "mlp.fc2.bias": mlp[3].bias})
    norm = "fc_norm" if global_pool == "avg" else "norm"
    sd.update({f"{norm}.weight": model.encoder.ln.weight, f"{norm}.bias": model.encoder.ln.bias})
    if head is not None:
        sd.update({"head.weight": head.weight, "head.bias": head.bias})
    return {k: v.detach() for k, v in sd.items()}


def hf_state_dict(model, classification=True):
    """A torchvision ViT's weights under transformers' names.

    classification: ViTForImageClassification ("vit." before every name,
    the head as `classifier`); else ViTModel (no prefix, no head), whose
    pooler (dense + tanh on the class token) is the model's pre_logits
    layer when it has one of the hidden size.
    """
    layers, head, pre = _tv_parts(model)
    p = "vit." if classification else ""
    if pre is not None and (classification or pre.out_features != pre.in_features):
        raise ExportError("transformers' ViT has no pre_logits layer; only a ViTModel's pooler (hidden -> hidden) is one")
    sd = {p + "embeddings.cls_token": model.class_token, p + "embeddings.position_embeddings": model.encoder.pos_embedding,
          p + "embeddings.patch_embeddings.projection.weight": model.conv_proj.weight,
          p + "embeddings.patch_embeddings.projection.bias": model.conv_proj.bias}
    for i, layer in enumerate(layers):
        attn, mlp, b = layer.self_attention, layer.mlp, f"{p}encoder.layer.{i}."
        for part, w, bias in zip(("query", "key", "value"), attn.in_proj_weight.chunk(3), attn.in_proj_bias.chunk(3)):
            sd.update({f"{b}attention.attention.{part}.weight": w, f"{b}attention.attention.{part}.bias": bias})
        sd.update({b + "attention.output.dense.weight": attn.out_proj.weight, b + "attention.output.dense.bias": attn.out_proj.bias,
                   b + "layernorm_before.weight": layer.ln_1.weight, b + "layernorm_before.bias": layer.ln_1.bias,
                   b + "layernorm_after.weight": layer.ln_2.weight, b + "layernorm_after.bias": layer.ln_2.bias,
                   b + "intermediate.dense.weight": mlp[0].weight, b + "intermediate.dense.bias": mlp[0].bias,
                   b + "output.dense.weight": mlp[3].weight, b + "output.dense.bias": mlp[3].bias})
    sd.update({p + "layernorm.weight": model.encoder.ln.weight, p + "layernorm.bias": model.encoder.ln.bias})
    if pre is not None:
        sd.update({"pooler.dense.weight": pre.weight, "pooler.dense.bias": pre.bias})
    if classification and head is not None:
        sd.update({"classifier.weight": head.weight, "classifier.bias": head.bias})
    return {k: v.detach().contiguous() for k, v in sd.items()}


def hf_config(model, classification=True, labels=None):
    """transformers' ViTConfig of a torchvision ViT, as config.json holds it (id2label from labels, if given)."""
    layers, head, _ = _tv_parts(model)
    config = {"architectures": ["ViTForImageClassification" if classification else "ViTModel"], "model_type": "vit",
              "hidden_size": model.hidden_dim, "num_hidden_layers": len(layers), "num_attention_heads": layers[0].num_heads,
              "intermediate_size": model.mlp_dim, "hidden_act": "gelu", "layer_norm_eps": model.encoder.ln.eps,
              "image_size": model.image_size, "patch_size": model.patch_size, "num_channels": 3, "qkv_bias": True,
              "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "initializer_range": 0.02}
    if classification and head is not None:
        names = labels or [f"LABEL_{i}" for i in range(head.out_features)]
        config["id2label"] = {str(i): name for i, name in enumerate(names)}
        config["label2id"] = {name: i for i, name in enumerate(names)}
    return config


def timm_config(model, global_pool="token", labels=None, mean=None, std=None, crop_pct=None):
    """timm's hub config.json for a renamed torchvision ViT: global_pool, num_heads in model_args, labels, preprocessing."""
    layers, head, _ = _tv_parts(model)
    pretrained = {"input_size": [3, model.image_size, model.image_size], "num_classes": head.out_features if head else 0}
    pretrained.update({k: v for k, v in (("mean", mean), ("std", std), ("crop_pct", crop_pct)) if v is not None})
    config = {"architecture": "vit_custom", "num_classes": pretrained["num_classes"], "num_features": model.hidden_dim,
              "global_pool": global_pool, "model_args": {"embed_dim": model.hidden_dim, "depth": len(layers),
                                                         "num_heads": layers[0].num_heads, "global_pool": global_pool},
              "pretrained_cfg": pretrained}
    if labels:
        config["label_names"] = list(labels)
    return config


def write_safetensors_plain(path, tensors, metadata=None, dtype="F32"):
    """Like write_safetensors, but with no __metadata__ at all when metadata is None (as safetensors' save_file)."""
    if metadata is not None:
        return write_safetensors(path, tensors, metadata, dtype)
    if dtype not in DTYPES:
        raise ExportError(f"dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    header, blobs, end = {}, [], 0
    for name, sd, t in stored_tensors(tensors, dtype):
        data = _tensor_bytes(t, sd)
        header[name] = {"dtype": sd, "shape": list(t.shape), "data_offsets": [end, end + len(data)]}
        blobs.append(data)
        end += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (_align(8 + len(text)) - 8 - len(text))
    check_layout(header, end)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def export_naming(model, path, naming, dtype="F32", config=True, labels=None):
    """Write a torchvision ViT in another library's naming (one of NAMINGS) without vit.h metadata.

    timm and timm-avg (global_pool 'avg' with fc_norm) files have no
    __metadata__, as timm's own; transformers files have {"format": "pt"},
    as save_pretrained writes. With config, config.json goes beside the
    file (transformers always needs it for the heads unless the width is a
    standard one; timm's holds global_pool). Returns the config written, or None.
    """
    if naming not in NAMINGS:
        raise ExportError(f"naming {naming!r}: expected one of {', '.join(NAMINGS)}")
    cfg, meta = None, None
    if naming == "torchvision":
        _tv_parts(model)
        sd = {k: v for k, v in model.state_dict().items() if v.is_floating_point()}
    elif naming.startswith("timm"):
        pool = "avg" if naming == "timm-avg" else "token"
        sd = timm_state_dict(model, pool)
        cfg = timm_config(model, pool, labels) if config else None
    else:
        classification = naming == "transformers"
        sd, meta = hf_state_dict(model, classification), {"format": "pt"}
        cfg = hf_config(model, classification, labels) if config else None
    write_safetensors_plain(path, sd, meta, dtype)
    if cfg is not None:
        with open(os.path.join(os.path.dirname(os.path.abspath(path)), "config.json"), "w") as f:
            json.dump(cfg, f, indent=2, sort_keys=True)
            f.write("\n")
    return cfg


# ---- specs ----

def _value(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _set_arg(spec, factory, kwargs, names, value, flag):
    """Pass value under the first of names that factory takes (torchvision and seed 004 spell them differently)."""
    params = inspect.signature(factory).parameters
    name = next((n for n in names if n in params), None)
    if name is None and any(p.kind == p.VAR_KEYWORD for p in params.values()):
        name = names[0]  # torchvision builders take **kwargs
    if name is None:
        raise ExportError(f"{flag} does not apply to {spec}")
    kwargs[name] = value


def build(spec, num_classes=None, image_size=None):
    """Build the module a SPEC names (see the module docstring), in eval mode."""
    prefix, _, rest = spec.partition(":")
    name, _, args = rest.partition(":")
    roots = {"torchvision": tv, "nn": nn, "reference": R}
    if prefix not in roots or not name:
        raise ExportError(f"spec {spec!r}: expected torchvision:NAME, nn:NAME or reference:NAME, then :arg=value,...")
    factory = roots[prefix]
    for part in name.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            raise ExportError(f"spec {spec!r}: {prefix} has no {name!r}")
    kwargs = {}
    for item in filter(None, args.split(",")):
        key, eq, text = item.partition("=")
        if not eq:
            raise ExportError(f"spec {spec!r}: argument {item!r} is not key=value")
        kwargs[key.strip()] = _value(text.strip())
    if image_size is not None:
        _set_arg(spec, factory, kwargs, ("image_size", "img_size"), image_size, "--image-size")
    if num_classes:
        _set_arg(spec, factory, kwargs, ("num_classes", "n_classes"), num_classes, "--num-classes")
    module = factory(**kwargs)
    if num_classes == 0:
        drop_head(module)
    return module.eval()


def add_build_args(parser):
    parser.add_argument("spec", help="torchvision:vit_b_16, torchvision:VisionTransformer:k=v,..., "
                                     "nn:MultiheadAttention:k=v,..., reference:seed001.VisionTransformer:k=v,...")
    parser.add_argument("--num-classes", type=int, help="classes of a ViT's head; 0 removes the head (features)")
    parser.add_argument("--image-size", type=int, help="image size of a ViT or patch embedding")
    parser.add_argument("--dtype", default="F32", choices=list(DTYPES),
                        help="stored dtype (default F32); I8: dense layers' weights only, the rest F32")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_build_args(parser)
    parser.add_argument("out", nargs="?", help="output .safetensors path")
    parser.add_argument("--from", dest="src", metavar="IN", help="convert this safetensors file to --dtype (BF16 or I8) "
                                                                   "instead of building a module: export.py --from IN --dtype I8 OUT")
    parser.add_argument("--seed", type=int, help="re-draw all parameters with this seed (default: keep the init)")
    parser.add_argument("--naming", choices=NAMINGS, help="write a torchvision ViT in this library's names, without "
                                                          "vit.h metadata (and config.json beside it); see export_naming")
    args = parser.parse_args(argv)
    if args.src:
        if args.out is not None:
            parser.error("--from takes one path, the output: export.py --from IN --dtype BF16|I8 OUT")
        try:
            count = convert(args.src, args.spec, args.dtype)
        except (ExportError, OSError, ValueError) as e:
            parser.exit(2, f"export.py: error: {e}\n")
        print(f"wrote {args.spec}: {args.src} as {args.dtype}, {count} weights")
        return 0
    if args.out is None:
        parser.error("the following arguments are required: out")
    try:
        module = build(args.spec, args.num_classes, args.image_size)
        if args.seed is not None:
            randomize(module, args.seed)
        if args.naming:
            export_naming(module, args.out, args.naming, dtype=args.dtype)
            meta = {"kind": "vit", "naming": args.naming}
        else:
            meta = export_module(module, args.out, dtype=args.dtype)
    except (ExportError, TypeError) as e:
        parser.exit(2, f"export.py: error: {e}\n")
    count = sum(p.numel() for p in module.state_dict().values())
    print(f"wrote {args.out}: kind={meta['kind']} naming={meta['naming']}, {count} weights as {args.dtype}")


if __name__ == "__main__":
    sys.exit(main())

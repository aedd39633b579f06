"""Export PyTorch modules to safetensors files for vit.h, with their config in the metadata.

    /usr/bin/python3 tools/export.py SPEC OUT.safetensors [--weights NAME | --pretrained] [--labels FILE]
                            [--num-classes N] [--image-size S] [--seed S] [--dtype F32|F16|BF16|I8] [--naming NAMING]
    /usr/bin/python3 tools/export.py --from IN.safetensors --dtype BF16|I8 OUT.safetensors
    (or: make export SPEC=... OUT=... ARGS="--weights NAME")

SPEC names a module to build:
    torchvision:vit_b_16                    a torchvision builder (vit_b_32, vit_l_16, vit_l_32, vit_h_14)
    torchvision:VisionTransformer:image_size=32,patch_size=8,...   a torchvision class with arguments
    timm:vit_small_patch14_dinov2[:depth=2,...]   a timm model (DINOv2, CLIP, SigLIP, DeiT, ...), written
                                            in timm's own names with the config.json timm writes
    nn:MultiheadAttention:embed_dim=24,num_heads=4,batch_first=True
    reference:seed001.VisionTransformer:image_size=32,...          a class of tools/reference.py
--weights NAME loads a torchvision builder's pretrained weights (IMAGENET1K_V1,
DEFAULT, ...: torchvision's weights enum) from torch hub's cache
($TORCH_HOME/hub/checkpoints, default ~/.cache/torch/hub/checkpoints), downloading
them there when missing; the file then records the weights, ImageNet's class
names (torchvision ships them) and the weights' preprocessing (mean, std,
crop_pct). --pretrained does the same for timm:NAME through timm. Without
either the weights are a random initialisation (torchvision's ViT head is
all zeros): export.py warns and the file's metadata says "untrained", which
`vit info` and `vit classify` repeat.
--labels FILE puts class names (one a line) in the metadata.
--num-classes 0 replaces a ViT's head by nn.Identity (vit.h then returns features).
--naming timm|timm-avg|transformers|transformers-model|torchvision writes a
torchvision ViT in that library's names without vit.h metadata, plus a
config.json beside it (timm, transformers): a checkpoint as a model hub has it.
--seed re-draws every parameter (see randomize); without it the module keeps its own init.
Only reference:seed004.* needs einops and timm:* timm (tools/requirements.txt,
in build/venv); the rest runs with Debian's python3, torch and torchvision.
--dtype BF16 stores every tensor as bfloat16 (vit.h keeps the dense layers'
weight matrices and the patch embedding's conv kernel so and widens the rest); I8
stores each dense layer's weight matrix and the patch embedding's conv kernel as
int8, symmetric per output row (the kernel's row: an output channel's in_channels
x kh x kw values), with its F32 scales in '<name>_scale', and everything else as
F32 (see quantize_i8).
--from converts an existing file (any dtype; its metadata kept) to --dtype.

The file is plain safetensors (STYLE.md section 7), written here so the tools
need only torch and numpy. Tensors are packed back to back in state_dict()
order with no gaps, as Hugging Face's safetensors loader requires (it rejects
holes between data_offsets). The JSON header is padded with trailing spaces
so the data section starts at a multiple of 64 bytes from the file start;
every tensor then starts at a multiple of its element size (4 for F32), and
vit.h can use F32 tensors in place. Tensor names are the module's own
state_dict() names.

From Python, export_module(module, path) takes a module of any class whose
layout vit.h reads, recognised by class name and parameters (see READERS):
tools/reference.py's, the same classes typed into one's own code, and the
original authors' classes the seeds came from.

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
import pickle
import re
import struct
import sys
import urllib.error
import urllib.parse
from typing import Callable, NamedTuple

import numpy as np
import torch
import torchvision.models.vision_transformer as tv
from torch import nn
from torch.nn import functional as F
from torch.nn.modules.utils import _pair

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

    vit.h's I8 products take at most 65536 inputs (their int32 sums stay exact); wider ones stay F32.
    An nn.Embedding's table (transformers' position_embedding.weight) is 2-D and named "weight" too, but
    it is added, not multiplied: vit.h refuses it as I8."""
    parent = name.split(".")[-2] if "." in name else ""
    return t.dim() == 2 and name.endswith("weight") and t.shape[1] <= 65536 and "embedding" not in parent


# The patch embedding's conv weight under each naming vit.h reads (timm's, torchvision's, transformers' ViT and
# CLIP's, the seeds'): vit.h binds its kernel as the (out, in_channels kh kw) matrix of a dense layer.
PATCH_CONVS = ("patch_embed.proj.weight", "conv_proj.weight", "patch_embeddings.projection.weight",
               "embeddings.patch_embedding.weight", "projection.0.weight")


def is_patch_conv(name, t):
    """The patch embedding's conv kernel (out, in_channels, P, P), at most 65536 inputs an output, as I8 takes."""
    return t.dim() == 4 and name.endswith(PATCH_CONVS) and t[0].numel() <= 65536


def quantize_i8(w):
    """(q, scale) with w ~ scale[:, None] * q: symmetric per output row, q in [-127, 127], scale = max|row| / 127.
    A conv kernel's row is an output channel's values; q keeps the kernel's shape."""
    if w.dim() == 4:
        q, scale = quantize_i8(w.reshape(w.shape[0], -1))
        return q.reshape(w.shape), scale
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
        elif is_dense_weight(name, t) or is_patch_conv(name, t):
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


def convert(src, out, dtype, activation_bits=8):
    """Write the tensors of safetensors file src to out as dtype, keeping its metadata (no __metadata__ stays
    none, unless I8 adds its "quantization", and "activation_bits" when 7: vit.h's I8 products then round each
    row of x to 0..127, which AVX2 without VNNI multiplies 1.4x faster). Returns the number of weights."""
    if dtype not in ("BF16", "I8"):
        raise ExportError(f"--from converts to BF16 or I8, not {dtype}")
    if activation_bits not in (7, 8):
        raise ExportError(f"--activation-bits {activation_bits}: I8 takes 8 (the default) or 7")
    if activation_bits != 8 and dtype != "I8":
        raise ExportError(f"--activation-bits {activation_bits} goes with --dtype I8 ({dtype} products round x to "
                          f"{dtype.lower()})")
    tensors, meta = load_safetensors(src)
    meta.pop("quantization", None)
    meta.pop("activation_bits", None)
    if dtype == "I8":
        meta["quantization"] = QUANTIZATION
        if activation_bits == 7:
            meta["activation_bits"] = "7"
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in tensors.items()}
    write_safetensors_plain(out, tensors, dict(sorted(meta.items())) if meta else None, dtype)
    return sum(v.numel() for v in tensors.values())


# ---- what a module is, for vit.h ----
# A module is recognised by what it is, not by the file that defined it:
# its class name, the names of its parameters, and its attributes where
# those decide what the forward computes (AFTLocal's s, EMSA's ratio,
# OutlookAttention's scale). Each Reader is one layout of one vit.h kind:
# the class names it answers to, the parameter names it reads, how the
# hyperparameters are read off the module, and, for a layout other than
# the one vit.h reads, how its tensors become vit.h's (ResT's fused kv
# split into k and v; a bias-free Linear SE as 1x1 convs with zero
# biases). Every shape is then checked against the module rebuild() makes
# from those hyperparameters (_construct): the class of
# tools/reference.py (or torchvision, nn) that vit.h is tested against, so
# what is written is what vit.h reads.

class Reader(NamedTuple):
    kind: str
    naming: str
    classes: tuple  # the class names it answers to
    params: str  # its parameter names: {i} a layer index, {a,b} either, a trailing ? optional
    meta: Callable  # module -> hyperparameters; ExportError when an attribute does not fit vit.h
    tensors: Callable = None  # (module, hyperparameters, state) -> vit.h's tensors, popping what it uses from state
    types: tuple = ()  # the tested classes themselves (their state_dict is vit.h's, read as it is)


def _out(linear):
    """Classes of a head: 0 when it was replaced by nn.Identity (feature extraction)."""
    return 0 if isinstance(linear, nn.Identity) else linear.out_features


def _patch(conv, image_size):
    return dict(image_size=image_size, patch_size=conv.kernel_size[0], in_channels=conv.in_channels,
                hidden_dim=conv.out_channels)


def _act(*modules):
    """vit.h's name of the activation all of modules are: "relu" (nn.ReLU) or "gelu" (nn.GELU, exact erf form)."""
    names = {"relu" if isinstance(a, nn.ReLU) else
             "gelu" if isinstance(a, nn.GELU) and getattr(a, "approximate", "none") == "none" else repr(a)
             for a in modules}
    if len(names) != 1 or not names <= {"relu", "gelu"}:
        raise ExportError(f"activation {', '.join(sorted(names))}: vit.h computes nn.ReLU or nn.GELU (exact), "
                          f"the same in every layer")
    return names.pop()


def _need(ok, why):
    if not ok:
        raise ExportError(why)


def _vit_torchvision(m):
    if not isinstance(m.conv_proj, nn.Conv2d):
        raise ExportError("torchvision VisionTransformer with a conv stem (conv_stem_configs) is not supported")
    heads = {} if isinstance(m.heads, nn.Identity) else dict(m.heads.named_children())
    return dict(_patch(m.conv_proj, m.image_size), num_layers=len(m.encoder.layers),
                num_heads=m.encoder.layers[0].num_heads, mlp_dim=m.mlp_dim, num_classes=_out(heads.get("head", nn.Identity())),
                representation_size=_out(heads.get("pre_logits", nn.Identity())), ln_eps=m.encoder.ln.eps,
                act=_act(*(layer.mlp[1] for layer in m.encoder.layers)), pool="cls", scale_after_softmax=False)


def _vit_seed001(m):
    p = m.patchify
    # The seed keeps image_size // patch_size only; image_size is rebuilt from it.
    return dict(_patch(p.conv_proj, p.new_size * p.conv_proj.kernel_size[0]), num_layers=len(m.encoder),
                num_heads=m.encoder[0].attention.num_heads, mlp_dim=m.encoder[0].mlp.layers[0].out_features,
                num_classes=_out(m.final), representation_size=0, ln_eps=m.ln.eps,
                act=_act(*(block.mlp.layers[1] for block in m.encoder)), pool="cls", scale_after_softmax=False)


def _pe_seed004(pe):
    side = math.isqrt(pe.positions.shape[0] - 1)
    return _patch(pe.projection[0], side * pe.projection[0].kernel_size[0])


def _vit_seed004(m):
    embed, encoder, head = m
    block = encoder[0]
    return dict(_pe_seed004(embed), num_layers=len(encoder), num_heads=block[0].fn[1].num_heads,
                mlp_dim=block[1].fn[1][0].out_features, num_classes=_out(head[2]), representation_size=0,
                ln_eps=head[1].eps, act=_act(*(b[1].fn[1][1] for b in encoder)), pool="mean",
                scale_after_softmax=True)


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


def _mlp(seq, second):
    """An MLP nn.Sequential: Linear at 0, the activation at 1, Linear at `second`, dropouts (no-ops) besides."""
    layers = [type(layer).__name__ for layer in seq]
    others = [layer for i, layer in enumerate(seq) if i not in (0, 1, second)]
    _need(len(seq) > second and all(isinstance(layer, nn.Dropout) for layer in others),
          f"the MLP is {layers}; vit.h's mlp computes Linear, activation, Linear")
    first, last = seq[0], seq[second]
    return dict(in_dim=first.in_features, hidden_dim=first.out_features, out_dim=last.out_features, act=_act(seq[1]))


def _block(ln, num_heads, mlp_first, act, scale_after_softmax):
    return dict(hidden_dim=ln.normalized_shape[0], num_heads=num_heads, mlp_dim=mlp_first.out_features,
                ln_eps=ln.eps, act=act, scale_after_softmax=scale_after_softmax)


def _sdsa_classifier(m):
    _need(_act(m.actn) == "relu", f"actn is {m.actn!r}; vit.h's sdsa_classifier computes ReLU")
    C = m.attn.key.in_features
    return dict(n_embd=C, seq_len=m.fc.in_features // C, num_classes=m.fc.out_features)


def _se(m):
    """SqueezeExcitation (torchvision.ops, the tutorials' copy): 1x1 convs, ReLU and sigmoid as vit.h computes."""
    _need(isinstance(getattr(m, "activation", nn.ReLU()), nn.ReLU),
          f"activation is {m.activation!r}; vit.h's se computes ReLU")
    _need(isinstance(getattr(m, "scale_activation", nn.Sigmoid()), nn.Sigmoid),
          f"scale_activation is {m.scale_activation!r}; vit.h's se computes a sigmoid")
    return dict(in_channels=m.fc1.in_channels, squeeze_channels=m.fc1.out_channels)


def _se_linear(m):
    """External-Attention-pytorch's SEAttention: fc = Sequential(Linear, ReLU, Linear, Sigmoid), no biases."""
    _need(len(m.fc) == 4 and isinstance(m.fc[1], nn.ReLU) and isinstance(m.fc[3], nn.Sigmoid),
          f"fc is {[type(layer).__name__ for layer in m.fc]}; vit.h's se computes Linear, ReLU, Linear, Sigmoid")
    return dict(in_channels=m.fc[0].in_features, squeeze_channels=m.fc[0].out_features)


def _bias(state, name, size):
    """state's bias `name`, or zeros(size) for a layer without one (adding 0 changes nothing)."""
    return state.pop(name) if name in state else torch.zeros(size)


def _se_linear_tensors(m, meta, state):
    """The Linear layers as fc1/fc2 1x1 convs: weights (out, in, 1, 1), zero biases where they had none."""
    C, S = meta["in_channels"], meta["squeeze_channels"]
    return {"fc1.weight": state.pop("fc.0.weight")[:, :, None, None], "fc1.bias": _bias(state, "fc.0.bias", S),
            "fc2.weight": state.pop("fc.2.weight")[:, :, None, None], "fc2.bias": _bias(state, "fc.2.bias", C)}


def _emsa_norms(sr, ratio, ln, norm):
    """EMSA's reduction conv and its LayerNorm (ratio > 1), and the transform's InstanceNorm (or None),
    as vit.h computes them."""
    if ratio > 1:
        _need(sr.stride == (ratio, ratio) and sr.padding == (ratio // 2, ratio // 2) and sr.groups == sr.in_channels,
              f"the reduction conv has stride {sr.stride}, padding {sr.padding}, groups {sr.groups}; "
              f"vit.h's emsa computes stride {ratio}, padding {ratio // 2}, groups = channels")
        _need(ln.eps == 1e-5, f"the reduction LayerNorm has eps {ln.eps}; vit.h's emsa computes 1e-05")
    if norm is not None:
        _need(isinstance(norm, nn.InstanceNorm2d) and not norm.affine and not norm.track_running_stats
              and norm.eps == 1e-5, f"the transform's norm is {norm!r}; vit.h's emsa computes "
                                    f"InstanceNorm2d(eps=1e-05) without affine weights or running stats")


def _emsa(m):
    _emsa_norms(getattr(m, "sr_conv", None), m.ratio, getattr(m, "sr_ln", None),
                m.transform[2] if m.apply_transform else None)
    return dict(d_model=m.d_model, d_k=m.d_k, d_v=m.d_v, h=m.h, H=m.H, W=m.W, ratio=m.ratio,
                apply_transform=m.apply_transform)


def _emsa_rest(m):
    """ResT's Attention (wofmanaf/ResT): EMSA with q, kv = [k; v] fused, sr, sr_norm, transform_conv/_norm.
    Its forward takes H and W; vit.h needs them when sr_ratio > 1 (export_module(m, path, H=.., W=..))."""
    C, NH = m.q.in_features, m.num_heads
    _need(C % NH == 0, f"dim {C} is not a multiple of num_heads {NH}")
    hs = C // NH
    _need(math.isclose(m.scale, hs ** -0.5, rel_tol=1e-6),
          f"scale (qk_scale) is {m.scale!r}; vit.h's emsa scales by 1/sqrt(head size) = {hs ** -0.5!r}")
    ratio = m.sr_ratio
    _emsa_norms(getattr(m, "sr", None), ratio, getattr(m, "sr_norm", None),
                m.transform_norm if m.apply_transform else None)
    # H and W only matter with a reduction (ratio > 1); otherwise any grid, 1 x 1 by default.
    grid = None if ratio > 1 else 1
    return dict(d_model=C, d_k=hs, d_v=hs, h=NH, H=grid, W=grid, ratio=ratio, apply_transform=m.apply_transform)


def _emsa_rest_tensors(m, meta, state):
    C = meta["d_model"]
    k, v = state.pop("kv.weight").split(C)
    kb, vb = _bias(state, "kv.bias", 2 * C).split(C)
    out = {"fc_q.weight": state.pop("q.weight"), "fc_q.bias": _bias(state, "q.bias", C),
           "fc_k.weight": k, "fc_k.bias": kb, "fc_v.weight": v, "fc_v.bias": vb,
           "fc_o.weight": state.pop("proj.weight"), "fc_o.bias": state.pop("proj.bias")}
    for old, new in (("sr", "sr_conv"), ("sr_norm", "sr_ln"), ("transform_conv", "transform.conv")):
        out.update((f"{new}.{p}", state.pop(f"{old}.{p}")) for p in ("weight", "bias") if f"{old}.{p}" in state)
    return out


def _shuffle(m):
    """ShuffleAttention (G, channel) or SA-Net's sa_layer (groups; channel only in the weights' shape)."""
    G = m.G if hasattr(m, "G") else m.groups
    half = m.cweight.shape[1]
    channel = getattr(m, "channel", 2 * G * half)
    _need(channel == 2 * G * half,
          f"channel {channel} is not a multiple of 2 * G = {2 * G}: vit.h splits every group into two equal halves")
    gn = m.gn
    _need(gn.num_groups == gn.num_channels == half and gn.affine and gn.eps == 1e-5,
          f"gn is {gn!r}; vit.h's shuffle computes GroupNorm({half}, {half}) with eps 1e-05 and affine weights")
    return dict(channel=channel, G=G)


def _aft(m, variant):
    meta = dict(variant=variant, max_seqlen=m.wbias.shape[0] if variant != "simple" else 0,
                dim=m.to_q.in_features, hidden_dim=m.hidden_dim)  # AFTSimple has no position bias: max_seqlen 0
    if variant == "local":
        meta["s"] = m.s
    return meta


def _aft_ea(m):
    """External-Attention-pytorch's AFT_FULL: fc_q/k/v, no output projection, position_biases (n, n).
    With simple=True position_biases is a constant zero tensor: AFT-simple. It takes exactly n tokens."""
    pb = m.position_biases
    full = isinstance(pb, nn.Parameter) or bool(pb.any())
    D = m.fc_q.in_features
    return dict(variant="full" if full else "simple", max_seqlen=pb.shape[0] if full else 0, dim=D, hidden_dim=D)


def _aft_ea_tensors(m, meta, state):
    """fc_q/k/v as to_q/k/v; the missing projection as the identity (exact: x * 1 + 0 * others); wbias."""
    D = meta["dim"]
    out = {f"to_{p}.{w}": state.pop(f"fc_{p}.{w}") if w == "weight" else _bias(state, f"fc_{p}.bias", D)
           for p in "qkv" for w in ("weight", "bias")}
    out.update({"project.weight": torch.eye(D), "project.bias": torch.zeros(D)})
    pb = state.pop("position_biases", m.position_biases)
    if meta["variant"] == "full":
        out["wbias"] = pb
    return out


def _outlook(m, v):
    """OutlookAttention (VOLO's, External-Attention-pytorch's): its unfold and pool as vit.h's outlook computes them."""
    K, P, S = m.kernel_size, m.padding, m.stride
    for name, layer in m.named_children():
        if isinstance(layer, nn.Unfold):
            got = [_pair(getattr(layer, a)) for a in ("kernel_size", "dilation", "padding", "stride")]
            _need(got == [(K, K), (1, 1), (P, P), (S, S)],
                  f"{name} is Unfold(kernel_size={layer.kernel_size}, dilation={layer.dilation}, "
                  f"padding={layer.padding}, stride={layer.stride}); vit.h's outlook unfolds {K}x{K} windows with "
                  f"padding {P}, stride {S} (as the fold puts them back)")
        if isinstance(layer, nn.AvgPool2d):
            _need(_pair(layer.kernel_size) == _pair(layer.stride) == (S, S) and
                  layer.ceil_mode and _pair(layer.padding) == (0, 0),
                  f"{name} is {layer!r}; vit.h's outlook pools with AvgPool2d({S}, {S}, ceil_mode=True)")
    return dict(dim=v.in_features, num_heads=m.num_heads, kernel_size=m.kernel_size, padding=m.padding,
                stride=m.stride, qkv_bias=v.bias is not None, scale=float(m.scale))


def _outlook_ea_tensors(m, meta, state):
    """External-Attention-pytorch's v_pj is VOLO's v."""
    out = {name.replace("v_pj.", "v.", 1): state.pop(name) for name in list(state) if name.startswith("v_pj.")}
    out.update((name, state.pop(name)) for name in list(state) if name.split(".")[0] in ("attn", "proj"))
    return out


AFT = "to_{q,k,v}.{weight,bias} project.{weight,bias}"
TV_LAYER = "encoder.layers.encoder_layer_{i}."
SEED004_LAYER = "1.{i}."

READERS = [
    Reader("vit", "torchvision", ("VisionTransformer",),
           f"class_token conv_proj.{{weight,bias}} encoder.pos_embedding {TV_LAYER}{{ln_1,ln_2}}.{{weight,bias}} "
           f"{TV_LAYER}self_attention.{{in_proj_weight,in_proj_bias}} "
           f"{TV_LAYER}self_attention.out_proj.{{weight,bias}} {TV_LAYER}mlp.{{0,3}}.{{weight,bias}} "
           f"encoder.ln.{{weight,bias}} heads.{{head,pre_logits}}.{{weight,bias}}?",
           _vit_torchvision, types=(tv.VisionTransformer,)),
    Reader("vit", "patchify", ("VisionTransformer",),
           "class_token pos_embedding patchify.conv_proj.{weight,bias} encoder.{i}.{ln_1,ln_2}.{weight,bias} "
           "encoder.{i}.attention.{in_proj_weight,in_proj_bias} encoder.{i}.attention.out_proj.{weight,bias} "
           "encoder.{i}.mlp.layers.{0,2}.{weight,bias} ln.{weight,bias} final.{weight,bias}?",
           _vit_seed001, types=(R.seed001.VisionTransformer,)),
    Reader("vit", "einops", ("ViT",),
           f"0.cls_token 0.positions 0.projection.0.{{weight,bias}} {SEED004_LAYER}{{0,1}}.fn.0.{{weight,bias}} "
           f"{SEED004_LAYER}0.fn.1.{{qkv,projection}}.{{weight,bias}} {SEED004_LAYER}1.fn.1.{{0,3}}.{{weight,bias}} "
           "2.1.{weight,bias} 2.2.{weight,bias}?", _vit_seed004, types=(R.seed004.ViT,)),
    Reader("sdpa", "default", ("SDPA",), "", lambda m: {}, types=(R.seed000.SDPA,)),
    Reader("mha", "proj_qkv", ("MultiHeadedAttention",), "proj_{query,key,value}.{weight,bias} final.{weight,bias}",
           lambda m: _mha(m.proj_query.in_features, m.heads, False), types=(R.seed000.MultiHeadedAttention,)),
    Reader("mha", "nn", ("MultiheadAttention",), "in_proj_weight in_proj_bias out_proj.{weight,bias}", _mha_nn,
           types=(nn.MultiheadAttention,)),
    Reader("mha", "einops", ("MultiHeadAttention",), "qkv.{weight,bias} projection.{weight,bias}",
           lambda m: _mha(m.emb_size, m.num_heads, True), types=(R.seed004.MultiHeadAttention,)),
    # seed 000's MLP has seed 001's layout (layers.0, ReLU, layers.2), so it shares its naming.
    Reader("mlp", "seq_layers", ("MLP",), "layers.{0,2}.{weight,bias}", lambda m: _mlp(m.layers, 2),
           types=(R.seed001.MLP, R.seed000.MLP)),
    Reader("mlp", "torchvision", ("MLPBlock",), "{0,3}.{weight,bias}", lambda m: _mlp(m, 3),
           types=(tv.MLPBlock,)),
    Reader("mlp", "einops", ("FeedForwardBlock",), "{0,3}.{weight,bias}", lambda m: _mlp(m, 3),
           types=(R.seed004.FeedForwardBlock,)),
    Reader("mlp", "seq_mlp", ("MLP",), "mlp.{0,2}.{weight,bias}", lambda m: _mlp(m.mlp, 2), types=(R.seed002.MLP,)),
    Reader("encoder_block", "torchvision", ("EncoderBlock",),
           "{ln_1,ln_2}.{weight,bias} self_attention.{in_proj_weight,in_proj_bias} "
           "self_attention.out_proj.{weight,bias} mlp.{0,3}.{weight,bias}",
           lambda m: _block(m.ln_1, m.num_heads, m.mlp[0], _act(m.mlp[1]), False), types=(tv.EncoderBlock,)),
    Reader("encoder_block", "patchify", ("EncoderBlock",),
           "{ln_1,ln_2}.{weight,bias} attention.{in_proj_weight,in_proj_bias} attention.out_proj.{weight,bias} "
           "mlp.layers.{0,2}.{weight,bias}",
           lambda m: _block(m.ln_1, m.attention.num_heads, m.mlp.layers[0], _act(m.mlp.layers[1]), False),
           types=(R.seed001.EncoderBlock,)),
    Reader("encoder_block", "einops", ("TransformerEncoderBlock",),
           "{0,1}.fn.0.{weight,bias} 0.fn.1.{qkv,projection}.{weight,bias} 1.fn.1.{0,3}.{weight,bias}",
           lambda m: _block(m[0].fn[0], m[0].fn[1].num_heads, m[1].fn[1][0], _act(m[1].fn[1][1]), True),
           types=(R.seed004.TransformerEncoderBlock,)),
    Reader("patch_embed", "conv_proj", ("PatchifyLayer",), "conv_proj.{weight,bias}", lambda m: dict(
        _patch(m.conv_proj, m.new_size * m.conv_proj.kernel_size[0]), class_token=False, pos_embed=False),
        types=(R.seed000.PatchifyLayer, R.seed001.PatchifyLayer)),
    Reader("patch_embed", "einops", ("PatchEmbedding",), "cls_token positions projection.0.{weight,bias}",
           lambda m: dict(_pe_seed004(m), class_token=True, pos_embed=True), types=(R.seed004.PatchEmbedding,)),
    Reader("sdsa", "default", ("ScaledDotSelfAttention",), "{query,key,value}.{weight,bias}",
           lambda m: dict(n_embd=m.key.in_features), types=(R.seed002.ScaledDotSelfAttention,)),
    Reader("sdsa_classifier", "default", ("Model",), "attn.{query,key,value}.{weight,bias} fc.{weight,bias}",
           _sdsa_classifier, types=(R.seed002.Model,)),
    Reader("se", "torchvision", ("SqueezeExcitation",), "fc1.{weight,bias} fc2.{weight,bias}", _se,
           types=(R.seed000.SqueezeExcitation,)),
    Reader("se", "torchvision", ("SEAttention",), "fc.0.weight fc.0.bias? fc.2.weight fc.2.bias?", _se_linear,
           _se_linear_tensors),
    Reader("emsa", "default", ("EMSA",),
           "fc_{q,k,v,o}.{weight,bias} sr_conv.{weight,bias}? sr_ln.{weight,bias}? transform.conv.{weight,bias}?",
           _emsa, types=(R.seed003.EMSA,)),
    Reader("emsa", "default", ("Attention",),
           "q.weight q.bias? kv.weight kv.bias? proj.{weight,bias} sr.{weight,bias}? sr_norm.{weight,bias}? "
           "transform_conv.{weight,bias}?", _emsa_rest, _emsa_rest_tensors),
    Reader("shuffle", "default", ("ShuffleAttention", "sa_layer"), "cweight cbias sweight sbias gn.{weight,bias}",
           _shuffle, types=(R.seed003.ShuffleAttention,)),
    Reader("sge", "default", ("SpatialGroupEnhance",), "weight bias", lambda m: dict(groups=m.groups),
           types=(R.seed003.SpatialGroupEnhance,)),
    # Local before full: with kind="aft" and a class of another name, AFTLocal's window s decides.
    Reader("aft", "default", ("AFTLocal",), f"{AFT} wbias", lambda m: _aft(m, "local"), types=(R.seed003.AFTLocal,)),
    Reader("aft", "default", ("AFTFull",), f"{AFT} wbias", lambda m: _aft(m, "full"), types=(R.seed003.AFTFull,)),
    Reader("aft", "default", ("AFTSimple",), AFT, lambda m: _aft(m, "simple"), types=(R.seed003.AFTSimple,)),
    Reader("aft", "default", ("AFT_FULL",), "fc_{q,k,v}.weight fc_{q,k,v}.bias? position_biases?", _aft_ea,
           _aft_ea_tensors),
    Reader("outlook", "default", ("OutlookAttention",), "v.weight v.bias? attn.{weight,bias} proj.{weight,bias}",
           lambda m: _outlook(m, m.v), types=(R.seed003.OutlookAttention,)),
    Reader("outlook", "default", ("OutlookAttention",), "v_pj.weight v_pj.bias? attn.{weight,bias} proj.{weight,bias}",
           lambda m: _outlook(m, m.v_pj), _outlook_ea_tensors),
]
# A tested class -> its reader; (kind, naming) -> the tested class rebuild() makes for a file of another class.
EXACT = {t: r for r in READERS for t in r.types}
CANONICAL = {}
for _r in READERS:
    if _r.types:
        CANONICAL.setdefault((_r.kind, _r.naming), _r.types[0])
KINDS = tuple(dict.fromkeys(r.kind for r in READERS))


@functools.lru_cache(maxsize=None)
def _patterns(params):
    """[(regex, text, required)] of a Reader's params string."""
    out = []
    for word in params.split():
        text = word.rstrip("?")
        parts = re.split(r"(\{[^}]*\})", text)
        rx = "".join(r"\d+" if p == "{i}" else "(?:" + "|".join(map(re.escape, p[1:-1].split(","))) + ")"
                     if p.startswith("{") else re.escape(p) for p in parts)
        out.append((re.compile(rx), text, not word.endswith("?")))
    return out


def _fit(reader, names):
    """(the required parameters names lacks, the names reader does not read): ([], []) when names fit it."""
    pats = _patterns(reader.params)
    missing = [text for rx, text, required in pats if required and not any(rx.fullmatch(n) for n in names)]
    stray = [n for n in names if not any(rx.fullmatch(n) for rx, _, _ in pats)]
    return missing, stray


def _state(module):
    """The module's weights: its floating-point state_dict entries (integer buffers such as BatchNorm's
    num_batches_tracked are not weights)."""
    return {k: v for k, v in module.state_dict().items() if v.is_floating_point()}


def _name(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def _str(v):
    """Metadata values are strings: ints in decimal, floats as repr (1e-06), booleans as 1/0."""
    if isinstance(v, bool):
        return "1" if v else "0"
    return repr(v) if isinstance(v, float) else str(v)


def _metadata(reader, cls, hyper):
    meta = {"format": "vit.h", "format_version": "1", "kind": reader.kind, "naming": reader.naming, "class": _name(cls)}
    meta.update((k, _str(v)) for k, v in hyper.items())
    return meta


def _hyper(reader, module, given):
    """reader's hyperparameters of module, then the given ones in their place."""
    try:
        hyper = reader.meta(module)
    except (AttributeError, TypeError, IndexError) as e:
        raise ExportError(f"{e}") from None
    for key, value in given.items():
        if key not in hyper:
            raise ExportError(f"cannot override {key!r} for kind {reader.kind!r}")
        hyper[key] = value
    unset = [k for k, v in hyper.items() if v is None]
    if unset:
        raise ExportError(f"{' and '.join(unset)} are not stored in the module (its forward takes them); "
                          f"pass {', '.join(k + '=...' for k in unset)}")
    return hyper


def _tensors(reader, module, hyper):
    """vit.h's tensors for module read by reader, in the order of the tested class, every shape checked against it."""
    state = _state(module)
    if reader.tensors:
        rest = dict(state)
        state = reader.tensors(module, hyper, rest)
        if rest:
            raise ExportError(f"parameter {next(iter(rest))!r} has no place in vit.h's {reader.kind}")
    ref = _state(_construct(_metadata(reader, type(module), hyper)))
    how = ", ".join(f"{k}={_str(v)}" for k, v in hyper.items())
    for name, t in ref.items():
        if name not in state:
            raise ExportError(f"no parameter {name!r}, which vit.h's {reader.kind} reads with {how}")
        if tuple(state[name].shape) != tuple(t.shape):
            raise ExportError(f"parameter {name!r} has shape {list(state[name].shape)}; vit.h's {reader.kind} reads "
                              f"{list(t.shape)} with {how}")
    stray = [name for name in state if name not in ref]
    if stray:
        raise ExportError(f"parameter {stray[0]!r} is not one vit.h's {reader.kind} reads with {how}")
    return {name: state[name] for name in ref}


def _closest(module, pool, names):
    """An ExportError naming the reader of pool that module comes closest to, and what differs."""
    def score(r):
        missing, stray = _fit(r, names)
        required = sum(req for _, _, req in _patterns(r.params))
        return (type(module).__name__ in r.classes, (required - len(missing) + len(names) - len(stray)) /
                max(1, required + len(names)))

    def listed(items):
        return ", ".join(map(repr, items[:4])) + (f" and {len(items) - 4} more" if len(items) > 4 else "")

    what = _name(type(module))
    best = max(pool, key=score)
    if score(best) == (False, 0):
        kinds = list(dict.fromkeys(r.kind for r in pool))
        if len(kinds) == 1:
            raise ExportError(f"{what}: kind {kinds[0]!r} reads none of its parameters ({listed(names)})")
        raise ExportError(f"{what}: no vit.h kind reads parameters named {listed(names)} "
                          f"(the kinds: {', '.join(kinds)})")
    missing, stray = _fit(best, names)
    differs = [f"it lacks {listed(missing)}"] if missing else []
    differs += [f"{best.kind} does not read {listed(stray)}"] if stray else []
    raise ExportError(f"{what}: no vit.h kind fits; the closest is kind {best.kind!r} ({' / '.join(best.classes)}, "
                      f"{best.naming} names): {'; '.join(differs)}")


def _read(module, kind=None, given=None):
    """(reader, hyperparameters, tensors) of module; tensors None when its state_dict is what vit.h reads.

    A class the tools test against (tools/reference.py's, torchvision's,
    nn's) is read as it is. Any other is matched by parameter names, among
    the readers of kind when given: a fit whose class names include the
    module's class name is tried first; a fit of another class name only
    when kind says so, as the names alone cannot tell what a forward
    computes.
    """
    given = given or {}
    cls = type(module)
    exact = EXACT.get(cls)
    if exact is not None and kind in (None, exact.kind):
        return exact, _hyper(exact, module, given), None
    if kind is not None and kind not in KINDS:
        raise ExportError(f"kind {kind!r}: expected one of {', '.join(KINDS)}")
    names = sorted(_state(module))
    pool = [r for r in READERS if kind in (None, r.kind)]
    fits = [r for r in pool if _fit(r, names) == ([], [])]
    named = [r for r in fits if cls.__name__ in r.classes]
    errors = []
    for r in named or (fits if kind else []):
        try:
            hyper = _hyper(r, module, given)
            return r, hyper, _tensors(r, module, hyper)
        except ExportError as e:
            errors.append(f"read as kind {r.kind!r} ({' / '.join(r.classes)}): {e}")
    if errors:
        raise ExportError(f"{_name(cls)}: {'; '.join(errors)}")
    if fits:
        r = fits[0]
        raise ExportError(f"{_name(cls)}: vit.h knows no class named {cls.__name__!r}, but its parameters are those "
                          f"of kind {r.kind!r} ({' / '.join(r.classes)}): pass kind={r.kind!r} if its forward computes "
                          f"the same")
    _closest(module, pool, names)


def describe(module, kind=None, **given):
    """(kind, naming, metadata) of a module, metadata as the strings written to the file.

    kind picks the reader where the class name does not (see _read); given
    replaces hyperparameters (export_module's overrides).
    """
    reader, hyper, _ = _read(module, kind, given)
    return reader.kind, reader.naming, _metadata(reader, type(module), hyper)


def export_module(module, path, kind=None, dtype="F32", extra=None, **overrides):
    """Write module's weights and inferred config to path; returns the metadata.

    The module may be of any class vit.h has a reader for: tools/reference.py's,
    torchvision's and nn's, the same classes typed into one's own code, and
    the original authors' layouts (External-Attention-pytorch, VOLO, ResT,
    SA-Net, PytorchInsight, aft-pytorch); see READERS. kind, when given,
    picks the reader (and must be the module's). extra adds metadata entries
    vit.h does not read (a trained model's dataset, labels, input
    normalisation); they may not shadow inferred keys. overrides replace
    inferred hyperparameters, e.g. image_size for a seed 001 model whose
    image size was not a multiple of the patch size, or H and W for ResT's
    Attention, whose forward takes them.
    """
    reader, hyper, tensors = _read(module, kind, overrides)
    meta = _metadata(reader, type(module), hyper)
    for key, value in (extra or {}).items():
        if key in meta:
            raise ExportError(f"extra metadata {key!r} would shadow an inferred entry")
        meta[key] = _str(value)
    if zero_head(module) and "untrained" not in (extra or {}):
        print(f"export.py: WARNING: {path}: the classification head is all zeros (torchvision's initialisation, "
              "never trained): every class gets the same score", file=sys.stderr)
    if dtype == "I8":
        meta["quantization"] = QUANTIZATION
    write_safetensors(path, _state(module) if tensors is None else tensors, dict(sorted(meta.items())), dtype)
    return meta


def _head_linear(module):
    """The Linear that makes a whole ViT's logits, or None (not a ViT, or its head dropped)."""
    try:
        parent, attr = _head(module)
    except ExportError:
        return None
    linears = [m for m in getattr(parent, attr).modules() if isinstance(m, nn.Linear)]
    return linears[-1] if linears else None


def zero_head(module):
    """True for a whole ViT whose classification head's weights are all zero (torchvision's untrained init)."""
    head = _head_linear(module)
    return head is not None and not bool(head.weight.detach().any())


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
                if is_dense_weight(name, p) or is_patch_conv(name, p):
                    q, scale = quantize_i8(p)
                    p.copy_(q.float() * scale.reshape((-1,) + (1,) * (p.dim() - 1)))
            else:
                p.copy_(p.to(DTYPES[dtype][0]).float())
    return module


@functools.lru_cache(maxsize=None)
def _takes_qkv(cls):
    """Whether cls's forward takes (query, key, value): nn.MultiheadAttention, MultiHeadedAttention, EMSA."""
    params = [p for p in inspect.signature(cls.forward).parameters.values()
              if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(params) >= 4 and params[2].name in ("key", "keys", "k")


def _round_rows(x, dtype, xmax=255):
    """x as a BF16 or I8 product takes its rows (the last dimension); I8 onto 0..xmax (255, or 127: 7 bits)."""
    if dtype == "BF16":
        return x.to(torch.bfloat16).float()
    lo, hi = x.amin(-1, keepdim=True).clamp(max=0), x.amax(-1, keepdim=True).clamp(min=0)
    sx = (hi - lo) / xmax
    sx = torch.where(sx > 1e-30, sx, torch.ones_like(sx))
    inv = 1 / sx
    zp = torch.round(-lo * inv)
    xq = torch.clamp(torch.round(x * inv) + zp, 0, xmax)
    return (xq - zp) * sx


def round_products(module, dtype, activation_bits=8):
    """Make module's nn.Linear layers and its patch embedding's conv take their input as vit.h's BF16 and I8
    products do (see vit.h's "kernels: matrix multiply"): BF16 rounds it to bfloat16, I8 quantises each row to
    u8, [min(x, 0), max(x, 0)] onto 0..255 (0..127 for a file's activation_bits 7) with a zero point; the conv's
    rows are its patches (vit.h's im2col). Weights: round_weights. Returns the hook handles."""
    xmax = (1 << activation_bits) - 1

    def hook(_, args):
        return (_round_rows(args[0], dtype, xmax),) + args[1:]

    def patch_hook(conv, args):
        x = args[0]
        P, size = conv.kernel_size, x.shape[-2:]
        cols = F.unfold(x, P, stride=conv.stride).transpose(1, 2)  # (B, patches, in_channels kh kw)
        return (F.fold(_round_rows(cols, dtype, xmax).transpose(1, 2), size, P, stride=conv.stride),) + args[1:]
    hooks = [m.register_forward_pre_hook(hook) for m in module.modules() if isinstance(m, nn.Linear)]
    return hooks + [m.register_forward_pre_hook(patch_hook) for name, m in module.named_modules()
                    if isinstance(m, nn.Conv2d) and is_patch_conv(name + ".weight", m.weight)]


def reference_forward(module, x):
    """What vit.h must compute for input x: modules taking (query, key, value) get x, x, x; tuples give [0].
    (ResT's Attention takes (x, H, W): call it yourself.)"""
    out = module(x, x, x) if _takes_qkv(type(module)) else module(x)
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


# class -> constructor from parsed metadata; every tested class of READERS (EXACT) has one.
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

assert set(REBUILD) == set(EXACT), "every tested class needs a reader and a constructor"


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


def _construct(meta):
    """The tested module (init weights) for metadata with today's names: its class's when it is one of
    REBUILD, else (a user's class, read by one of READERS) the tested class of its kind and naming."""
    classes = {_name(c): c for c in REBUILD}
    cls = classes.get(meta.get("class")) or CANONICAL.get((meta.get("kind"), meta.get("naming")))
    if cls is None:
        raise ExportError(f"metadata class {meta.get('class')!r}, kind {meta.get('kind')!r}, naming "
                          f"{meta.get('naming')!r}: no module to rebuild; known: {', '.join(classes)}")
    try:
        module = REBUILD[cls]({k: _value(v) for k, v in meta.items()})
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        raise ExportError(f"cannot rebuild {cls.__qualname__} from the metadata: {e!r}") from None
    if int(meta.get("num_classes", 1)) == 0:
        drop_head(module)
    return module


def rebuild(meta):
    """The module (eval mode, init weights) that export_module would describe with these metadata.

    A file of a class not in REBUILD (a user's) rebuilds as the tested class
    of its kind and naming. Raises ExportError when neither is known or the
    rebuilt module would not be described by the same metadata (what vit.h
    reads must be what ran).
    """
    meta = current_names(meta)
    module = _construct(meta)
    _, _, mine = describe(module)
    wrong = [f"{k}={meta.get(k)!r} (rebuilt: {v!r})" for k, v in mine.items() if k != "class" and meta.get(k) != v]
    if wrong:
        raise ExportError(f"rebuilt {type(module).__qualname__} differs from the metadata: {', '.join(wrong)}")
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
                    t = t * torch.from_numpy(_read_tensor(f, start, header[name + "_scale"])).reshape(
                        (-1,) + (1,) * (t.dim() - 1))
                state[name].copy_(t)
    low = {header[k]["dtype"] for k in names
           if header[k]["dtype"] in ("BF16", "I8") and (is_dense_weight(k, state[k]) or is_patch_conv(k, state[k]))}
    if low:
        round_products(module, "I8" if "I8" in low else "BF16", 7 if meta.get("activation_bits") == "7" else 8)
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
    """timm's hub config.json for a renamed torchvision ViT: global_pool, num_heads in model_args, labels, preprocessing.
    The architecture is timm's plain ViT-B/16 (LayerNorm eps 1e-6, GELU, as torchvision's), its sizes in model_args:
    vit.h takes the architecture as the authority on what the model computes."""
    layers, head, _ = _tv_parts(model)
    pretrained = {"input_size": [3, model.image_size, model.image_size], "num_classes": head.out_features if head else 0}
    pretrained.update({k: v for k, v in (("mean", mean), ("std", std), ("crop_pct", crop_pct)) if v is not None})
    config = {"architecture": "vit_base_patch16_224", "num_classes": pretrained["num_classes"],
              "num_features": model.hidden_dim, "global_pool": global_pool,
              "model_args": {"img_size": model.image_size, "patch_size": model.patch_size,
                             "embed_dim": model.hidden_dim, "depth": len(layers), "num_heads": layers[0].num_heads,
                             "mlp_ratio": model.mlp_dim / model.hidden_dim, "global_pool": global_pool},
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


def export_naming(model, path, naming, dtype="F32", config=True, labels=None, extra=None):
    """Write a torchvision ViT in another library's naming (one of NAMINGS) without vit.h metadata.

    timm and timm-avg (global_pool 'avg' with fc_norm) files have no
    __metadata__, as timm's own; transformers files have {"format": "pt"},
    as save_pretrained writes. With config, config.json goes beside the
    file (transformers always needs it for the heads unless the width is a
    standard one; timm's holds global_pool). extra: metadata entries to add
    (export.py's record of the weights). Returns the config written, or None.
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
    if extra:
        meta = dict(meta or {}, **{k: _str(v) for k, v in extra.items()})
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


def _timm():
    """timm (tools/requirements.txt pins it into build/venv), quietly: it warns about its hub client."""
    import logging
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            import timm
        except ImportError as e:
            raise ExportError(f"timm specs need timm ({e}); run make deps, then use build/venv/bin/python") from None
        finally:
            logging.disable(logging.NOTSET)
    return timm


def tv_weights(name, weights):
    """torchvision's weights enum entry for builder `name` ("vit_b_16") from "IMAGENET1K_V1", "DEFAULT", ..."""
    import torchvision.models
    try:
        enum = torchvision.models.get_model_weights(name)
    except (ValueError, KeyError):
        raise ExportError(f"--weights {weights}: torchvision has no pretrained weights for {name!r} "
                          "(a builder such as vit_b_16 has; a class with arguments has none)") from None
    try:
        return enum.verify(weights)
    except (ValueError, KeyError):
        raise ExportError(f"--weights {weights}: {name} has {', '.join(enum.__members__)}") from None


def hub_path(url):
    """Where torch hub keeps the file at url: $TORCH_HOME/hub/checkpoints/NAME (default ~/.cache/torch)."""
    return os.path.join(torch.hub.get_dir(), "checkpoints", os.path.basename(urllib.parse.urlparse(url).path))


def _pretrained(what, url, path, make):
    """make(), the pretrained module, with a message that says where its weights come from when it fails."""
    if url:
        print(f"export.py: {what}: " + (f"from torch hub's cache, {path}" if os.path.exists(path) else f"downloading {url} to {path}"),
              file=sys.stderr)
    try:
        return make()
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", None) or e
        where = f"; without a network, put {os.path.basename(path)} at {path} (TORCH_HOME moves ~/.cache/torch)" if path else ""
        raise ExportError(f"{what}: cannot download {url or 'the weights'} ({reason}){where}, then run this again") from None
    except (RuntimeError, EOFError, pickle.UnpicklingError) as e:  # a truncated or foreign file in the cache
        raise ExportError(f"{what}: cannot read {path or 'the weights'} ({str(e).splitlines()[0]}); delete it and run again "
                          "to download it") from None


def build(spec, num_classes=None, image_size=None, pretrained=False, weights=None):
    """Build the module a SPEC names (see the module docstring), in eval mode.

    pretrained: timm's weights (timm:NAME); weights: a torchvision builder's
    pretrained weights (see tv_weights). Both load from their library's
    cache or download.
    """
    prefix, _, rest = spec.partition(":")
    name, _, args = rest.partition(":")
    roots = {"torchvision": tv, "nn": nn, "reference": R, "timm": None}
    if prefix not in roots or not name:
        raise ExportError(f"spec {spec!r}: expected torchvision:NAME, timm:NAME, nn:NAME or reference:NAME, then :arg=value,...")
    kwargs = {}
    for item in filter(None, args.split(",")):
        key, eq, text = item.partition("=")
        if not eq:
            raise ExportError(f"spec {spec!r}: argument {item!r} is not key=value")
        kwargs[key.strip()] = _value(text.strip())
    if prefix == "timm":
        timm = _timm()
        if image_size is not None:
            kwargs["img_size"] = image_size
        if num_classes is not None:
            kwargs["num_classes"] = num_classes
        if weights:
            raise ExportError("--weights is for torchvision builders; timm specs take --pretrained")
        try:
            return timm.create_model(name, pretrained=pretrained, **kwargs).eval()
        except Exception as e:  # timm's, huggingface_hub's and the network's own kinds
            if not pretrained and not isinstance(e, RuntimeError):
                raise
            why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            if not pretrained:
                raise ExportError(f"spec {spec!r}: {why}") from None
            raise ExportError(f"timm:{name} --pretrained: cannot load timm's weights ({why}); timm downloads them from the "
                              "Hugging Face hub into its cache (~/.cache/huggingface/hub; HF_HOME moves it)") from None
    if pretrained:
        raise ExportError("--pretrained applies to timm specs; torchvision builders take --weights NAME (e.g. IMAGENET1K_V1)")
    if weights and prefix != "torchvision":
        raise ExportError(f"--weights is for torchvision builders; {spec} has none")
    factory = roots[prefix]
    for part in name.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            raise ExportError(f"spec {spec!r}: {prefix} has no {name!r}")
    if image_size is not None:
        _set_arg(spec, factory, kwargs, ("image_size", "img_size"), image_size, "--image-size")
    if num_classes:
        _set_arg(spec, factory, kwargs, ("num_classes", "n_classes"), num_classes, "--num-classes")
    if weights:
        w = tv_weights(name, weights)
        try:
            module = _pretrained(f"--weights {weights}", w.url, hub_path(w.url), lambda: factory(weights=w, **kwargs))
        except ExportError:
            raise
        except ValueError as e:  # torchvision: num_classes or image_size that the weights do not have
            raise ExportError(f"--weights {weights}: {e}") from None
    else:
        module = factory(**kwargs)
    if num_classes == 0:
        drop_head(module)
    return module.eval()


def export_timm(model, path, dtype="F32", labels=None, extra=None):
    """A timm model as timm saves it for the hub: its state_dict names, no vit.h metadata (but extra,
    export.py's record of the weights), and the config.json timm's save_config_for_hf writes
    (architecture, model_args, pretrained_cfg) beside it, with label_names when labels are given."""
    from timm.models._hub import save_config_for_hf
    sd = {k: v for k, v in model.state_dict().items() if v.is_floating_point()}
    write_safetensors(path, sd, dict({"format": "pt"}, **{k: _str(v) for k, v in (extra or {}).items()}), dtype)
    config = os.path.join(os.path.dirname(os.path.abspath(path)), "config.json")
    save_config_for_hf(model, config)
    if labels:
        with open(config) as f:
            cfg = json.load(f)
        cfg["label_names"] = list(labels)
        with open(config, "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")


def tv_record(name, weights):
    """Metadata for a torchvision builder's pretrained weights: where they come from, their class names, and
    how they prepare images (torchvision's ImageClassification: resize, crop, mean, std, filter)."""
    w = tv_weights(name, weights)
    acc = w.meta.get("_metrics", {}).get("ImageNet-1K", {}).get("acc@1")
    rec = {"weights": f"torchvision {type(w).__name__}.{w.name} ({w.url})" + (f", ImageNet-1K top-1 {acc}%" if acc else "")}
    t = w.transforms()
    rec.update(input_mean=",".join(repr(v) for v in t.mean), input_std=",".join(repr(v) for v in t.std),
               input_resize=str(t.resize_size[0]), input_crop=str(t.crop_size[0]))
    if "bicubic" in str(t.interpolation).lower():
        rec["input_interpolation"] = "bicubic"
    return rec, list(w.meta.get("categories") or [])


def timm_labels(model):
    """ImageNet class names for a timm model's pretrained head, when timm knows them (timm >= 0.9), else None."""
    try:
        from timm.data import ImageNetInfo, infer_imagenet_subset
        subset = infer_imagenet_subset(model)
        return ImageNetInfo(subset).label_descriptions(detailed=False) if subset else None
    except ImportError:
        return None


def read_labels(path, classes):
    """Class names from a file, one a line, as many as the head has classes."""
    try:
        with open(path, encoding="utf-8") as f:
            names = [line.rstrip("\r\n") for line in f]
    except (OSError, UnicodeDecodeError) as e:
        raise ExportError(f"--labels {path}: {e}") from None
    if len(names) != classes:
        raise ExportError(f"--labels {path}: {len(names)} names (lines) for a head of {classes} classes")
    return names


def add_build_args(parser):
    parser.add_argument("spec", help="torchvision:vit_b_16, torchvision:VisionTransformer:k=v,..., timm:vit_small_patch14_dinov2[:k=v,...], "
                                     "nn:MultiheadAttention:k=v,..., reference:seed001.VisionTransformer:k=v,...")
    parser.add_argument("--num-classes", type=int, help="classes of a ViT's head; 0 removes the head (features)")
    parser.add_argument("--image-size", type=int, help="image size of a ViT or patch embedding")
    parser.add_argument("--dtype", default="F32", choices=list(DTYPES),
                        help="stored dtype (default F32); I8: dense layers' weights only, the rest F32")


def _classes(module):
    """Classes of a whole ViT's head (timm's too), or 0."""
    if hasattr(module, "num_classes") and hasattr(module, "blocks"):  # timm
        return module.num_classes
    head = _head_linear(module)
    return head.out_features if head is not None else 0


def make_out_dir(parser, out):
    """The output's folder, made when missing, before any model is built or downloaded."""
    folder = os.path.dirname(out)
    if not folder or os.path.isdir(folder):
        return
    try:
        os.makedirs(folder)
    except OSError as e:
        parser.exit(2, f"export.py: error: cannot make the folder for {out}: {e}\n")
    print(f"export.py: made the folder {folder}/")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_build_args(parser)
    parser.add_argument("out", nargs="?", help="output .safetensors path")
    parser.add_argument("--from", dest="src", metavar="IN", help="convert this safetensors file to --dtype (BF16 or I8) "
                                                                   "instead of building a module: export.py --from IN --dtype I8 OUT")
    parser.add_argument("--weights", help="a torchvision builder's pretrained weights: IMAGENET1K_V1, DEFAULT, ... "
                                          "(from torch hub's cache, else downloaded)")
    parser.add_argument("--pretrained", action="store_true", help="timm specs: the pretrained weights (timm downloads them "
                                                                   "from the Hugging Face hub, or finds them in its cache)")
    parser.add_argument("--labels", help="class names, one a line (default: the pretrained weights' own)")
    parser.add_argument("--seed", type=int, help="re-draw all parameters with this seed (default: keep the init)")
    parser.add_argument("--activation-bits", type=int, default=8, choices=(8, 7),
                        help="with --from and --dtype I8: the bits vit.h's I8 products round each row of x to (7: "
                             "1.4x faster on AVX2 without VNNI, twice the rounding step; see vit.h's WEIGHTS FORMAT)")
    parser.add_argument("--naming", choices=NAMINGS, help="write a torchvision ViT in this library's names, without "
                                                          "vit.h metadata (and config.json beside it); see export_naming")
    args = parser.parse_args(argv)
    if args.src:
        if args.out is not None:
            parser.error("--from takes one path, the output: export.py --from IN --dtype BF16|I8 OUT")
        make_out_dir(parser, args.spec)
        try:
            count = convert(args.src, args.spec, args.dtype, args.activation_bits)
        except (ExportError, OSError, ValueError) as e:
            parser.exit(2, f"export.py: error: {e}\n")
        print(f"wrote {args.spec}: {args.src} as {args.dtype}, {count} weights")
        return 0
    if args.out is None:
        parser.error("the following arguments are required: out")
    if args.activation_bits != 8:
        parser.error("--activation-bits goes with --from IN --dtype I8 (convert an F32 file)")
    make_out_dir(parser, args.out)
    try:
        if args.seed is not None and (args.weights or args.pretrained):
            raise ExportError("--seed re-draws every weight: it cannot go with --weights or --pretrained")
        module = build(args.spec, args.num_classes, args.image_size, args.pretrained, args.weights)
        name = args.spec.partition(":")[2].partition(":")[0]
        classes, labels, extra = _classes(module), None, {}
        if args.weights:
            extra, labels = tv_record(name, args.weights)
        elif args.pretrained:
            cfg = getattr(module, "pretrained_cfg", None) or {}
            extra = {"weights": f"timm {name}" + (f" ({cfg['hf_hub_id']})" if cfg.get("hf_hub_id") else "")}
            labels = timm_labels(module)
        else:
            if args.seed is not None:
                randomize(module, args.seed)
            extra = {"untrained": f"random weights, --seed {args.seed}" if args.seed is not None else
                     "random initialisation" + (", head all zeros" if zero_head(module) else "")}
        if args.labels:
            labels = read_labels(args.labels, classes)
        if labels is not None and (not classes or len(labels) != classes):
            labels = None  # the weights' names do not fit this head (--num-classes)
        if args.spec.startswith("timm:"):
            export_timm(module, args.out, args.dtype, labels, extra)
            meta = {"kind": "vit", "naming": "timm"}
        elif args.naming:
            export_naming(module, args.out, args.naming, dtype=args.dtype, labels=labels, extra=extra)
            meta = {"kind": "vit", "naming": args.naming}
        else:
            comma = next((i for i, n in enumerate(labels or []) if "," in n), None)
            if comma is not None:
                raise ExportError(f"class name {comma} ({labels[comma]!r}) has a comma, and the file's labels metadata is "
                                  "comma-separated: give vit the names in a file instead (vit classify --labels FILE), "
                                  "or export with --naming timm or transformers (config.json holds them)")
            meta = export_module(module, args.out, dtype=args.dtype, extra=dict(extra, **({"labels": ",".join(labels)} if labels else {})))
    except (ExportError, TypeError, ImportError, OSError) as e:  # ImportError: seed 004 without einops; OSError: writing OUT
        parser.exit(2, f"export.py: error: {e}\n")
    count = sum(p.numel() for p in module.state_dict().values())
    print(f"wrote {args.out}: kind={meta['kind']} naming={meta['naming']}, {count} weights as {args.dtype}"
          + (f", {len(labels)} class names" if labels else ""))
    if "untrained" in extra:
        print(f"export.py: WARNING: {args.out} holds UNTRAINED weights ({extra['untrained']}): its predictions mean "
              "nothing. Pretrained: torchvision builders take --weights IMAGENET1K_V1, timm:NAME --pretrained.",
              file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

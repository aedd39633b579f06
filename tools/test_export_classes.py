"""export_module on classes the seeds' code did not define: each exports and `vit run` computes its forward.

    build/venv/bin/python tools/test_export_classes.py [--vit build/vit]

The classes below are written here as a user would type them into their
own code, under this file's module path, not tools/reference.py's:
`my_copies` retypes the tutorials' (seed) classes; the other namespaces
follow the parameter names, layouts and forward passes of the original
authors' classes (External-Attention-pytorch's SEAttention, AFT_FULL and
OutlookAttention, whose EMSA and ShuffleAttention are the seeds' and
covered by the copies, its SpatialGroupEnhance PytorchInsight's; VOLO's
OutlookAttention; ResT's Attention; SA-Net's sa_layer; PytorchInsight's
SpatialGroupEnhance; aft-pytorch's AFTFull, AFTSimple and AFTLocal), plus
torchvision.ops' SqueezeExcitation and nn.MultiheadAttention. Every parameter is random
(export.randomize). Each module is exported with a plain
export_module(m, path) (kind= only where the test says why), run with
`vit run`, and its output must equal the class's own forward within
1e-5 * max(1, max|ref|); the file must also reload (export.load_module)
into a tested module that computes the same. Then modules vit.h cannot
compute, or cannot tell from their parameters, must be refused with a
message that says which parameter or attribute differs.
Exit 0 when every check passes, 1 otherwise.
"""

import argparse
import math
import os
import subprocess
import sys
import tempfile
import zlib
from typing import Callable, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

from export import ExportError, export_module, load_module, randomize, reference_forward

TOL = 1e-5


# ---- the tutorials' classes, retyped ----

class my_copies:
    class SqueezeExcitation(nn.Module):
        def __init__(self, in_channels, squeeze_channels):
            super().__init__()
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc1 = nn.Conv2d(in_channels, squeeze_channels, 1)
            self.activation = nn.ReLU()
            self.fc2 = nn.Conv2d(squeeze_channels, in_channels, 1)
            self.scale_activation = nn.Sigmoid()

        def forward(self, x):
            return x * self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))

    class MultiHeadedAttention(nn.Module):
        def __init__(self, heads, d_model):
            super().__init__()
            self.heads, self.d_k = heads, d_model // heads
            self.proj_query = nn.Linear(d_model, d_model)
            self.proj_key = nn.Linear(d_model, d_model)
            self.proj_value = nn.Linear(d_model, d_model)
            self.final = nn.Linear(d_model, d_model)

        def forward(self, query, key, value):
            B = query.shape[0]
            q, k, v = (layer(t).view(B, -1, self.heads, self.d_k).transpose(1, 2)
                       for layer, t in ((self.proj_query, query), (self.proj_key, key), (self.proj_value, value)))
            att = (q @ k.transpose(-2, -1) / self.d_k ** 0.5).softmax(-1)
            return self.final((att @ v).transpose(1, 2).reshape(B, -1, self.heads * self.d_k))

    class MultiHeadAttention(nn.Module):
        """The einops ViT's, without einops: qkv rows run (head, lane, q/k/v); softmax, then / sqrt(emb_size)."""

        def __init__(self, emb_size, num_heads):
            super().__init__()
            self.emb_size, self.num_heads = emb_size, num_heads
            self.qkv = nn.Linear(emb_size, 3 * emb_size)
            self.projection = nn.Linear(emb_size, emb_size)

        def forward(self, x):
            B, N, _ = x.shape
            q, k, v = self.qkv(x).view(B, N, self.num_heads, -1, 3).permute(4, 0, 2, 1, 3)
            att = (q @ k.transpose(-2, -1)).softmax(-1) / self.emb_size ** 0.5
            return self.projection((att @ v).transpose(1, 2).reshape(B, N, -1))

    class ScaledDotSelfAttention(nn.Module):
        def __init__(self, n_embd):
            super().__init__()
            self.key, self.query, self.value = (nn.Linear(n_embd, n_embd) for _ in range(3))

        def forward(self, x):
            q, k, v = self.query(x), self.key(x), self.value(x)
            return (q @ k.transpose(1, 2) / math.sqrt(k.shape[-1])).softmax(-1) @ v

    class PatchifyLayer(nn.Module):
        def __init__(self, image_size, patch_size, token_dim):
            super().__init__()
            self.conv_proj = nn.Conv2d(3, token_dim, patch_size, patch_size)
            self.new_size = image_size // patch_size

        def forward(self, x):
            return self.conv_proj(x).flatten(2).transpose(1, 2)

    class MLP(nn.Module):
        def __init__(self, token_dim, mlp_dim):
            super().__init__()
            self.layers = nn.Sequential(nn.Linear(token_dim, mlp_dim), nn.ReLU(), nn.Linear(mlp_dim, token_dim))

        def forward(self, x):
            return self.layers(x)

    class EncoderBlock(nn.Module):
        def __init__(self, num_heads, token_dim, mlp_dim):
            super().__init__()
            self.ln_1 = nn.LayerNorm(token_dim)
            self.attention = nn.MultiheadAttention(token_dim, num_heads, batch_first=True)
            self.ln_2 = nn.LayerNorm(token_dim)
            self.mlp = my_copies.MLP(token_dim, mlp_dim)

        def forward(self, x):
            y = self.ln_1(x)
            x = x + self.attention(y, y, y)[0]
            return x + self.mlp(self.ln_2(x))

    class VisionTransformer(nn.Module):
        def __init__(self, image_size, patch_size, num_layers, num_heads, token_dim, mlp_dim, num_classes):
            super().__init__()
            self.patchify = my_copies.PatchifyLayer(image_size, patch_size, token_dim)
            self.class_token = nn.Parameter(torch.zeros(1, 1, token_dim))
            self.pos_embedding = nn.Parameter(torch.zeros(1, (image_size // patch_size) ** 2 + 1, token_dim))
            blocks = (my_copies.EncoderBlock(num_heads, token_dim, mlp_dim) for _ in range(num_layers))
            self.encoder = nn.Sequential(*blocks)
            self.ln = nn.LayerNorm(token_dim)
            self.final = nn.Linear(token_dim, num_classes)

        def forward(self, x):
            x = self.patchify(x)
            x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], 1) + self.pos_embedding
            return self.final(self.ln(self.encoder(x))[:, 0])

    class EMSA(nn.Module):
        """The seed's (External-Attention-pytorch's) EMSA, called as EMSA(x, x, x)."""

        def __init__(self, d_model, d_k, d_v, h, H=7, W=7, ratio=3, apply_transform=True, ln_eps=1e-5):
            super().__init__()
            self.H, self.W, self.ratio = H, W, ratio
            self.fc_q, self.fc_k = nn.Linear(d_model, h * d_k), nn.Linear(d_model, h * d_k)
            self.fc_v, self.fc_o = nn.Linear(d_model, h * d_v), nn.Linear(h * d_v, d_model)
            if ratio > 1:
                self.sr_conv = nn.Conv2d(d_model, d_model, ratio + 1, ratio, ratio // 2, groups=d_model)
                self.sr_ln = nn.LayerNorm(d_model, eps=ln_eps)
            self.apply_transform = apply_transform and h > 1
            if self.apply_transform:
                self.transform = nn.Sequential()
                self.transform.add_module("conv", nn.Conv2d(h, h, 1))
                self.transform.add_module("softmax", nn.Softmax(-1))
                self.transform.add_module("in", nn.InstanceNorm2d(h))
            self.d_model, self.d_k, self.d_v, self.h = d_model, d_k, d_v, h

        def forward(self, queries, keys, values):
            B, N, C = queries.shape
            q = self.fc_q(queries).view(B, N, self.h, self.d_k).transpose(1, 2)
            if self.ratio > 1:
                keys = values = self.sr_ln(self.sr_conv(queries.transpose(1, 2).reshape(B, C, self.H, self.W))
                                           .flatten(2).transpose(1, 2))
            k = self.fc_k(keys).view(B, -1, self.h, self.d_k).permute(0, 2, 3, 1)
            v = self.fc_v(values).view(B, -1, self.h, self.d_v).transpose(1, 2)
            att = q @ k / np.sqrt(self.d_k)
            att = self.transform(att) if self.apply_transform else att.softmax(-1)
            return self.fc_o((att @ v).transpose(1, 2).reshape(B, N, self.h * self.d_v))

    class ShuffleAttention(nn.Module):
        """The seed's (External-Attention-pytorch's) ShuffleAttention."""

        def __init__(self, channel=512, reduction=16, G=8):
            super().__init__()
            self.G, self.channel = G, channel
            half = channel // (2 * G)
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.gn = nn.GroupNorm(half, half)
            self.cweight = nn.Parameter(torch.zeros(1, half, 1, 1))
            self.cbias = nn.Parameter(torch.ones(1, half, 1, 1))
            self.sweight = nn.Parameter(torch.zeros(1, half, 1, 1))
            self.sbias = nn.Parameter(torch.ones(1, half, 1, 1))

        def forward(self, x):
            b, c, h, w = x.shape
            x0, x1 = x.reshape(b * self.G, -1, h, w).chunk(2, dim=1)
            x0 = x0 * torch.sigmoid(self.cweight * self.avg_pool(x0) + self.cbias)
            x1 = x1 * torch.sigmoid(self.sweight * self.gn(x1) + self.sbias)
            out = torch.cat([x0, x1], 1).reshape(b, c, h, w)
            return out.reshape(b, 2, c // 2, h, w).transpose(1, 2).reshape(b, c, h, w)


# ---- the original authors' layouts ----

def _outlook(m, v_layer, unfold, x):
    """VOLO's outlook attention (External-Attention-pytorch's is the same): x (B, H, W, C)."""
    B, H, W, C = x.shape
    K2, NH = m.kernel_size ** 2, m.num_heads
    h, w = math.ceil(H / m.stride), math.ceil(W / m.stride)
    v = unfold(v_layer(x).permute(0, 3, 1, 2)).reshape(B, NH, C // NH, K2, h * w).permute(0, 1, 4, 3, 2)
    a = m.attn(m.pool(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)).reshape(B, h * w, NH, K2, K2).transpose(1, 2)
    a = m.attn_drop((a * m.scale).softmax(-1))
    y = (a @ v).permute(0, 1, 4, 3, 2).reshape(B, C * K2, h * w)
    y = F.fold(y, (H, W), m.kernel_size, padding=m.padding, stride=m.stride)
    return m.proj_drop(m.proj(y.permute(0, 2, 3, 1)))


class external_attention:
    """xmu-xiaoma666/External-Attention-pytorch's layouts."""

    class SEAttention(nn.Module):
        def __init__(self, channel=512, reduction=16):
            super().__init__()
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Sequential(nn.Linear(channel, channel // reduction, bias=False), nn.ReLU(inplace=True),
                                    nn.Linear(channel // reduction, channel, bias=False), nn.Sigmoid())

        def forward(self, x):
            return x * self.fc(self.avg_pool(x).flatten(1))[:, :, None, None]

    class ExternalAttention(nn.Module):
        """Two memory units: no vit.h kind computes it."""

        def __init__(self, d_model, S=64):
            super().__init__()
            self.mk, self.mv = nn.Linear(d_model, S, bias=False), nn.Linear(S, d_model, bias=False)

        def forward(self, x):
            a = self.mk(x).softmax(1)
            return self.mv(a / a.sum(2, keepdim=True))

    class AFT_FULL(nn.Module):
        """AFT-full without an output projection; simple=True: position biases a constant 0 (AFT-simple).
        Takes exactly n tokens."""

        def __init__(self, d_model, n=49, simple=False):
            super().__init__()
            self.fc_q, self.fc_k, self.fc_v = (nn.Linear(d_model, d_model) for _ in range(3))
            self.position_biases = torch.zeros(n, n) if simple else nn.Parameter(torch.ones(n, n))
            self.d_model, self.n = d_model, n
            self.sigmoid = nn.Sigmoid()

        def forward(self, x):
            q, k, v = self.fc_q(x), self.fc_k(x), self.fc_v(x)
            e = torch.exp(k[:, None] + self.position_biases[None, :, :, None])  # (B, t, t', D)
            return self.sigmoid(q) * ((e * v[:, None]).sum(2) / e.sum(2))

    class OutlookAttention(nn.Module):
        def __init__(self, dim, num_heads=1, kernel_size=3, padding=1, stride=1, qkv_bias=False, attn_drop=0.1):
            super().__init__()
            self.dim, self.num_heads, self.head_dim = dim, num_heads, dim // num_heads
            self.kernel_size, self.padding, self.stride = kernel_size, padding, stride
            self.scale = self.head_dim ** -0.5
            self.v_pj = nn.Linear(dim, dim, bias=qkv_bias)
            self.attn = nn.Linear(dim, kernel_size ** 4 * num_heads)
            self.attn_drop, self.proj_drop = nn.Dropout(attn_drop), nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            # As the original: Unfold's second and third positional arguments are dilation and padding, so
            # this unfolds as the fold folds back only with padding 1 and stride 1.
            self.unflod = nn.Unfold(kernel_size, padding, stride)
            self.pool = nn.AvgPool2d(stride, stride, ceil_mode=True)

        def forward(self, x):
            return _outlook(self, self.v_pj, self.unflod, x)


class volo:
    """sail-sg/volo's OutlookAttention: qk_scale replaces head_dim ** -0.5."""

    class OutlookAttention(nn.Module):
        def __init__(self, dim, num_heads, kernel_size=3, padding=1, stride=1, qkv_bias=False, qk_scale=None,
                     attn_drop=0., proj_drop=0.):
            super().__init__()
            self.num_heads, self.kernel_size, self.padding, self.stride = num_heads, kernel_size, padding, stride
            self.scale = qk_scale or (dim // num_heads) ** -0.5
            self.v = nn.Linear(dim, dim, bias=qkv_bias)
            self.attn = nn.Linear(dim, kernel_size ** 4 * num_heads)
            self.attn_drop, self.proj_drop = nn.Dropout(attn_drop), nn.Dropout(proj_drop)
            self.proj = nn.Linear(dim, dim)
            self.unfold = nn.Unfold(kernel_size=kernel_size, padding=padding, stride=stride)
            self.pool = nn.AvgPool2d(kernel_size=stride, stride=stride, ceil_mode=True)

        def forward(self, x):
            return _outlook(self, self.v, self.unfold, x)


class rest:
    """wofmanaf/ResT's Attention: q and a fused kv layer (k rows, then v rows), forward(x, H, W)."""

    class Attention(nn.Module):
        def __init__(self, dim, num_heads=8, qkv_bias=False, qk_scale=None, attn_drop=0., proj_drop=0., sr_ratio=1,
                     apply_transform=False):
            super().__init__()
            self.num_heads = num_heads
            self.scale = qk_scale or (dim // num_heads) ** -0.5
            self.q = nn.Linear(dim, dim, bias=qkv_bias)
            self.kv = nn.Linear(dim, 2 * dim, bias=qkv_bias)
            self.attn_drop, self.proj_drop = nn.Dropout(attn_drop), nn.Dropout(proj_drop)
            self.proj = nn.Linear(dim, dim)
            self.sr_ratio = sr_ratio
            if sr_ratio > 1:
                self.sr = nn.Conv2d(dim, dim, sr_ratio + 1, sr_ratio, sr_ratio // 2, groups=dim)
                self.sr_norm = nn.LayerNorm(dim)
            self.apply_transform = apply_transform and num_heads > 1
            if self.apply_transform:
                self.transform_conv = nn.Conv2d(num_heads, num_heads, 1)
                self.transform_norm = nn.InstanceNorm2d(num_heads)

        def forward(self, x, H, W):
            B, N, C = x.shape
            q = self.q(x).view(B, N, self.num_heads, -1).transpose(1, 2)
            src = x
            if self.sr_ratio > 1:
                src = self.sr_norm(self.sr(x.transpose(1, 2).reshape(B, C, H, W)).flatten(2).transpose(1, 2))
            k, v = self.kv(src).view(B, src.shape[1], 2, self.num_heads, -1).permute(2, 0, 3, 1, 4)
            a = q @ k.transpose(-2, -1) * self.scale
            a = self.transform_norm(self.transform_conv(a).softmax(-1)) if self.apply_transform else a.softmax(-1)
            return self.proj_drop(self.proj((self.attn_drop(a) @ v).transpose(1, 2).reshape(B, N, C)))


class sanet:
    """wofmanaf/SA-Net's sa_layer: ShuffleAttention keeping only `groups` (channel is in the weights' shape)."""

    class sa_layer(nn.Module):
        def __init__(self, channel, groups=64):
            super().__init__()
            half = channel // (2 * groups)
            self.groups = groups
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.cweight = nn.Parameter(torch.zeros(1, half, 1, 1))
            self.cbias = nn.Parameter(torch.ones(1, half, 1, 1))
            self.sweight = nn.Parameter(torch.zeros(1, half, 1, 1))
            self.sbias = nn.Parameter(torch.ones(1, half, 1, 1))
            self.sigmoid = nn.Sigmoid()
            self.gn = nn.GroupNorm(half, half)

        def forward(self, x):
            b, c, h, w = x.shape
            x0, x1 = x.reshape(b * self.groups, -1, h, w).chunk(2, dim=1)
            xn = x0 * self.sigmoid(self.cweight * self.avg_pool(x0) + self.cbias)
            xs = x1 * self.sigmoid(self.sweight * self.gn(x1) + self.sbias)
            out = torch.cat([xn, xs], dim=1).reshape(b, -1, h, w)
            return out.reshape(b, 2, -1, h, w).permute(0, 2, 1, 3, 4).reshape(b, -1, h, w)


class pytorch_insight:
    """implus/PytorchInsight's SpatialGroupEnhance (External-Attention-pytorch's is the same but for its init)."""

    class SpatialGroupEnhance(nn.Module):
        def __init__(self, groups=64):
            super().__init__()
            self.groups = groups
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.weight = nn.Parameter(torch.zeros(1, groups, 1, 1))
            self.bias = nn.Parameter(torch.ones(1, groups, 1, 1))
            self.sig = nn.Sigmoid()

        def forward(self, x):
            b, c, h, w = x.shape
            x = x.reshape(b * self.groups, -1, h, w)
            t = (x * self.avg_pool(x)).sum(1).reshape(b * self.groups, -1)
            t = t - t.mean(1, keepdim=True)
            t = t / (t.std(1, keepdim=True) + 1e-5)
            t = t.reshape(b, self.groups, h, w) * self.weight + self.bias
            return (x * self.sig(t.reshape(b * self.groups, 1, h, w))).reshape(b, c, h, w)


class aft_pytorch:
    """rish-16/aft-pytorch's AFTFull, AFTSimple, AFTLocal(max_seqlen, dim, hidden_dim[, s])."""

    class AFTFull(nn.Module):
        def __init__(self, max_seqlen, dim, hidden_dim=64):
            super().__init__()
            self.dim, self.hidden_dim = dim, hidden_dim
            self.to_q, self.to_k, self.to_v = (nn.Linear(dim, hidden_dim) for _ in range(3))
            self.project = nn.Linear(hidden_dim, dim)
            self.wbias = nn.Parameter(torch.empty(max_seqlen, max_seqlen))
            nn.init.xavier_uniform_(self.wbias)

        def weights(self, T):
            return torch.exp(self.wbias[:T, :T])

        def forward(self, x):
            q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
            e, ek = self.weights(x.shape[1]), torch.exp(k)
            return self.project(torch.sigmoid(q) * ((e @ (ek * v)) / (e @ ek)))

    class AFTLocal(AFTFull):
        """AFT-full with the position biases outside the window |t - t'| < s set to 0 (e^0 = 1, not masked)."""

        def __init__(self, max_seqlen, dim, hidden_dim=64, s=256):
            super().__init__(max_seqlen, dim, hidden_dim)
            self.max_seqlen, self.s = max_seqlen, s

        def weights(self, T):
            i = torch.arange(T)
            return torch.exp(torch.where((i[:, None] - i[None, :]).abs() < self.s, self.wbias[:T, :T], torch.zeros(())))

    class AFTSimple(nn.Module):
        def __init__(self, max_seqlen, dim, hidden_dim=64):
            super().__init__()
            self.dim, self.hidden_dim = dim, hidden_dim
            self.to_q, self.to_k, self.to_v = (nn.Linear(dim, hidden_dim) for _ in range(3))
            self.project = nn.Linear(hidden_dim, dim)

        def forward(self, x):
            q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
            return self.project(torch.sigmoid(q) * (torch.softmax(k, 1) * v).sum(1, keepdim=True))


class MyAttention(my_copies.EMSA):
    """EMSA under a name vit.h does not know: exported only when kind="emsa" says what it is."""


class Case(NamedTuple):
    factory: Callable[[], nn.Module]
    shape: tuple  # the input's
    kwargs: dict = {}  # export_module's keyword arguments
    call: Callable = reference_forward  # how the class's forward takes x: x, or x, x, x for (query, key, value)


def _rest(H, W):
    """ResT's Attention takes the grid in its forward."""
    return lambda m, x: m(x, H, W)


# name -> Case: every class exported with a plain export_module (kind= once), run, reloaded
CASES = {
    "copy SqueezeExcitation": Case(lambda: my_copies.SqueezeExcitation(16, 5), (2, 16, 5, 7)),
    "copy MultiHeadedAttention": Case(lambda: my_copies.MultiHeadedAttention(3, 24), (2, 9, 24)),
    "copy MultiHeadAttention (einops ViT)": Case(lambda: my_copies.MultiHeadAttention(18, 3), (2, 7, 18)),
    "copy ScaledDotSelfAttention": Case(lambda: my_copies.ScaledDotSelfAttention(10), (3, 5, 10)),
    "copy VisionTransformer (seed 001)": Case(lambda: my_copies.VisionTransformer(16, 4, 2, 3, 24, 40, 7),
                                              (2, 3, 16, 16)),
    "copy EMSA ratio 2, transform": Case(lambda: my_copies.EMSA(12, 4, 5, 3, H=5, W=7, ratio=2), (2, 35, 12)),
    "copy EMSA ratio 1": Case(lambda: my_copies.EMSA(10, 4, 6, 2, H=4, W=3, ratio=1, apply_transform=False),
                              (3, 12, 10)),
    "copy ShuffleAttention": Case(lambda: my_copies.ShuffleAttention(24, G=3), (2, 24, 5, 7)),
    "External-Attention SEAttention": Case(lambda: external_attention.SEAttention(32, reduction=4), (2, 32, 5, 6)),
    "External-Attention AFT_FULL": Case(lambda: external_attention.AFT_FULL(12, n=9), (2, 9, 12)),
    "External-Attention AFT_FULL simple": Case(lambda: external_attention.AFT_FULL(10, n=7, simple=True), (3, 7, 10)),
    "External-Attention OutlookAttention": Case(lambda: external_attention.OutlookAttention(12, 3), (2, 7, 9, 12)),
    "VOLO OutlookAttention": Case(lambda: volo.OutlookAttention(12, 3), (2, 5, 7, 12)),
    "VOLO OutlookAttention qk_scale, v bias": Case(
        lambda: volo.OutlookAttention(8, 2, stride=2, qkv_bias=True, qk_scale=0.3), (1, 6, 8, 8)),
    "ResT Attention sr_ratio 2, transform": Case(lambda: rest.Attention(16, 4, sr_ratio=2, apply_transform=True),
                                                 (2, 35, 16), dict(H=5, W=7), _rest(5, 7)),
    "ResT Attention sr_ratio 1, qkv_bias": Case(lambda: rest.Attention(12, 3, qkv_bias=True), (2, 13, 12),
                                                call=_rest(13, 1)),
    "SA-Net sa_layer": Case(lambda: sanet.sa_layer(32, groups=4), (2, 32, 5, 6)),
    "PytorchInsight SpatialGroupEnhance": Case(lambda: pytorch_insight.SpatialGroupEnhance(4), (2, 12, 5, 7)),
    "aft-pytorch AFTFull": Case(lambda: aft_pytorch.AFTFull(11, 12, 16), (2, 9, 12)),
    "aft-pytorch AFTSimple": Case(lambda: aft_pytorch.AFTSimple(7, 10, 5), (3, 7, 10)),
    "aft-pytorch AFTLocal": Case(lambda: aft_pytorch.AFTLocal(20, 6, 13, s=5), (2, 13, 6)),
    "torchvision.ops.SqueezeExcitation": Case(lambda: torchvision.ops.SqueezeExcitation(20, 6), (2, 20, 6, 5)),
    "nn.MultiheadAttention": Case(lambda: nn.MultiheadAttention(20, 5, batch_first=True), (2, 7, 20)),
    "EMSA under another name, kind='emsa'": Case(lambda: MyAttention(9, 3, 3, 3, H=7, W=6, ratio=3), (2, 42, 9),
                                                 dict(kind="emsa")),
}


def _se_gelu():
    """EA's SEAttention with a GELU where the ReLU was."""
    m = external_attention.SEAttention(16, 4)
    m.fc[1] = nn.GELU()
    return m


def _se_deeper():
    """EA's SEAttention with a fifth layer: not an SE any more."""
    m = external_attention.SEAttention(16, 4)
    m.fc = nn.Sequential(*m.fc[:4], nn.Linear(16, 16))
    return m


def _se_3x3():
    """A SqueezeExcitation copy whose first conv is 3x3."""
    m = my_copies.SqueezeExcitation(16, 4)
    m.fc1 = nn.Conv2d(16, 4, 3, padding=1)
    return m


# name -> (module factory, export_module's keyword arguments, words the refusal must contain)
REFUSALS = {
    "SqueezeExcitation with a hard sigmoid": (
        lambda: torchvision.ops.SqueezeExcitation(8, 2, scale_activation=nn.Hardsigmoid), {},
        ["scale_activation", "Hardsigmoid"]),
    "SEAttention with GELU": (
        _se_gelu, {}, ["fc is", "GELU", "ReLU"]),
    "External-Attention OutlookAttention stride 2": (
        lambda: external_attention.OutlookAttention(12, 3, stride=2), {}, ["unflod", "dilation=1, padding=2, stride=1",
                                                                          "padding 1, stride 2"]),
    "ResT Attention with qk_scale": (lambda: rest.Attention(12, 3, qk_scale=0.2), {}, ["qk_scale", "0.2"]),
    "ResT Attention sr_ratio 2 without H and W": (lambda: rest.Attention(12, 3, sr_ratio=2), {}, ["H=...", "W=..."]),
    "EMSA with LayerNorm eps 1e-6": (lambda: my_copies.EMSA(8, 4, 4, 2, H=4, W=4, ratio=2, ln_eps=1e-6), {},
                                     ["eps", "1e-06"]),
    "ShuffleAttention with channel 20, G 3": (lambda: my_copies.ShuffleAttention(20, G=3), {},
                                              ["channel 20", "multiple of 2 * G = 6"]),
    "nn.MultiheadAttention without batch_first": (lambda: nn.MultiheadAttention(8, 2), {}, ["batch_first"]),
    "EMSA under another name": (lambda: MyAttention(9, 3, 3, 3, H=7, W=6, ratio=3), {},
                                ["no class named 'MyAttention'", "kind='emsa'"]),
    "SqueezeExcitation with a 3x3 conv": (_se_3x3, {}, ["'fc1.weight'", "[4, 16, 3, 3]", "[4, 16, 1, 1]"]),
    "External-Attention ExternalAttention": (lambda: external_attention.ExternalAttention(16, 8), {},
                                             ["no vit.h kind reads", "'mk.weight'", "'mv.weight'"]),
    "SEAttention with a third layer": (_se_deeper, {}, ["closest is kind 'se'", "SEAttention", "'fc.4.weight'"]),
    "AFTFull as kind mha": (lambda: aft_pytorch.AFTFull(5, 4, 4), dict(kind="mha"),
                            ["kind 'mha' reads none", "'project.bias'"]),
}


def _seed(name):
    return zlib.crc32(name.encode())


def run_case(vit, tmp, name, case):
    """Problems found exporting and running one module (empty when it passes)."""
    module = randomize(case.factory().eval(), _seed(name))
    x = torch.randn(case.shape, generator=torch.Generator().manual_seed(_seed(name) + 1))
    path, inp, out = (os.path.join(tmp, f) for f in ("model.safetensors", "in.npy", "out.npy"))
    meta = export_module(module, path, **case.kwargs)
    with torch.no_grad():
        ref = case.call(module, x).numpy()
    np.save(inp, x.numpy())
    run = subprocess.run([vit, "run", path, inp, out], capture_output=True, text=True)
    if run.returncode != 0:
        return [f"vit run failed ({run.returncode}): {run.stdout}{run.stderr}".strip()]
    got = np.load(out)
    tol = TOL * max(1.0, float(np.abs(ref).max()))
    problems = []
    if got.shape != ref.shape:
        return [f"output shape {list(got.shape)}, the class's {list(ref.shape)}"]
    err = float(np.abs(got.astype(np.float64) - ref).max())
    if not err <= tol:
        problems.append(f"vit run: max|diff| {err:.3g} > {tol:.3g}")
    rebuilt, _ = load_module(path)  # the tested class of the same kind, with the file's weights
    with torch.no_grad():
        again = reference_forward(rebuilt, x).numpy()
    err2 = float(np.abs(again.astype(np.float64) - ref).max())
    if not err2 <= tol:
        problems.append(f"reloaded as {type(rebuilt).__qualname__}: max|diff| {err2:.3g} > {tol:.3g}")
    print(f"{'ok  ' if not problems else 'FAIL'} {name}: kind {meta['kind']} ({meta['naming']}), "
          f"input {list(case.shape)}, max|diff| {err:.3g}, reloaded as {type(rebuilt).__qualname__} {err2:.3g}, "
          f"tolerance {tol:.3g}")
    return problems


def run_refusal(tmp, name, factory, kwargs, words):
    try:
        export_module(factory().eval(), os.path.join(tmp, "refused.safetensors"), **kwargs)
    except ExportError as e:
        missing = [w for w in words if w not in str(e)]
        print(f"{'ok  ' if not missing else 'FAIL'} refused {name}: {e}")
        return [f"the message lacks {missing}"] if missing else []
    print(f"FAIL refused {name}: exported")
    return ["exported, expected a refusal"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--vit", default=os.path.join(root, "build", "vit"), help="the vit binary (default build/vit)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, case in CASES.items():
            try:
                problems = run_case(args.vit, tmp, name, case)
            except (ExportError, OSError) as e:
                print(f"FAIL {name}: {e}")
                problems = [str(e)]
            failed += [f"{name}: {p}" for p in problems]
        for name, (factory, kwargs, words) in REFUSALS.items():
            failed += [f"{name}: {p}" for p in run_refusal(tmp, name, factory, kwargs, words)]
    total, bad = len(CASES) + len(REFUSALS), len({f.split(": ")[0] for f in failed})
    if failed:
        print("failed:", *failed, sep="\n  ")
    print(f"{total - bad} of {total} checks pass ({len(CASES)} classes exported and run, "
          f"{len(REFUSALS)} refusals)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

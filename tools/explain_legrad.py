"""torchcam 0.5.0's LeGrad on timm ViTs under torch 1.13: the fewest changes to make it run.

torchcam.methods.LeGrad (torchcam 0.5.0, torchcam/methods/gradient.py, class
LeGrad; frgfm/torch-cam pull request #416) finds each target block's
attention as a `self_attention: nn.MultiheadAttention` child and captures
its per-head probabilities with forward pre- and post-hooks registered with
`with_kwargs=True` (torch >= 2.0): the pre-hook forces need_weights=True,
average_attn_weights=False, and the post-hook replays the value
aggregation so the captured tensor is the one used downstream. Neither the
kwargs hooks nor nn.MultiheadAttention exist here: torch 1.13 has no
with_kwargs, and timm's Attention is its own module, which (without
F.scaled_dot_product_attention in torch 1.13) passes its softmax output
through `attn_drop` and multiplies what comes out by v.

So only _register_attention_hooks is replaced: a plain forward hook on each
block's attn.attn_drop keeps its output, which is already the tensor used
downstream, so no replay is needed. Everything else (the per-block scores
from score_projection, d score / d attention, ReLU, the mean over heads and
queries, dropping prefix keys, the mean over blocks, the normalisation) is
torchcam's own code, inherited unchanged.
"""

from functools import partial

import torch
from torchcam.methods import LeGrad


class TimmLeGrad(LeGrad):
    """LeGrad with the attention probabilities taken from timm's attn_drop (torch 1.13: no kwargs hooks)."""

    def _register_attention_hooks(self):
        # replaces LeGrad._register_attention_hooks: its pre/post hooks need torch 2's with_kwargs
        # and an nn.MultiheadAttention child, timm blocks have `attn.attn_drop` instead
        for idx, name in enumerate(self.target_names):
            drop = self.submodule_dict[name].attn.attn_drop
            self.hook_handles.append(drop.register_forward_hook(partial(self._keep_probabilities, idx=idx)))

    def _keep_probabilities(self, module, _input, output, idx=0):
        # the checks LeGrad._prepare_attention makes, for the ones that still apply
        if not self._hooks_enabled:
            return
        if not torch.is_grad_enabled() or torch.is_inference_mode_enabled():
            raise RuntimeError("LeGrad requires a forward pass with gradient tracking enabled")
        if module.training and module.p > 0:
            raise ValueError("LeGrad does not support active attention dropout")
        self.hook_attn[idx] = output

"""The seeds' PyTorch modules, importable: the numerical specification of vit.h.

Each seed (/work/shared/seeds, see its README) gets one namespace class,
`seed000` ... `seed004`, holding that seed's code as written. The seeds reuse
names (three `MLP`s, two `PatchifyLayer`s), so the namespace is what tells
them apart: `reference.seed001.MLP`, and in specs `reference:seed001.MLP`.
Inside a namespace a sibling is named through it (`seed001.MLP(...)`), the
only change made to code that runs as is.

What the seeds needed to run is marked `# FIX(seed NNN): ...`; additions the
project asked for (an `in_channels` argument, wrappers) say so in a comment.
Everything else, quirks included, is the seed's.

Only seed 004 needs einops (pin: tools/requirements.txt). Without it the other
seeds still import and run; building a seed 004 module raises an ImportError
that says how to get einops.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F
import torchvision.models.vision_transformer
from torch import Tensor, nn
from torch.nn import init

try:
    from einops import rearrange, repeat
    from einops.layers.torch import Rearrange, Reduce
except ImportError:

    def _no_einops(*args, **kwargs):
        raise ImportError(
            "seed 004 modules need einops==0.8.2, which Debian does not package. From the repo root:\n"
            "  /usr/bin/python3 -m venv --system-site-packages build/venv\n"
            "  build/venv/bin/pip install --no-deps -r tools/requirements.txt\n"
            "then run the tools with build/venv/bin/python."
        )

    rearrange = repeat = Rearrange = Reduce = _no_einops


class seed000:
    """Seed 000 (Portuguese): channel attention, patchify, attention, multi-head attention."""

    class SqueezeExcitation(nn.Module):
        def __init__(self, in_channels, squeeze_channels=None):
            super().__init__()

            if squeeze_channels is None:
                squeeze_channels = in_channels

            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc1 = nn.Conv2d(in_channels, squeeze_channels, 1)
            self.activation = nn.ReLU()
            self.fc2 = nn.Conv2d(squeeze_channels, in_channels, 1)
            self.scale_activation = nn.Sigmoid()

        def forward(self, x):
            # bs x C x 1 x 1
            scale = self.avgpool(x)
            # Mistura os canais
            scale = self.fc1(scale)
            scale = self.activation(scale)
            scale = self.fc2(scale)
            # Normaliza no intervalo [0,1]
            scale = self.scale_activation(scale)
            # Reescala os canais
            x = scale * x

            return x

    class PatchifyLayer(nn.Module):
        # in_channels added (default 3, the seed's value) so 1-channel images work.
        def __init__(self, image_size=224, patch_size=16, hidden_dim=768, in_channels=3):
            '''`image_size` precisa ser divisível por `patch_size`.'''
            super().__init__()

            # Cada região patch_size x patch_size da imagem é transformada
            # em 1 x 1
            self.conv_proj = nn.Conv2d(
                in_channels, hidden_dim, kernel_size=patch_size, stride=patch_size
            )

            new_size = image_size // patch_size
            seq_length = new_size**2

            self.new_size = new_size
            self.seq_length = seq_length

        def forward(self, x):
            # (bs, c, image_size, image_size) -> (bs, hidden_dim, new_size, new_size)
            x = self.conv_proj(x)
            # (n, hidden_dim, new_size, new_size) -> (n, hidden_dim, (new_size*new_size))
            x = x.reshape(x.shape[0], x.shape[1], -1)
            # Coloca a dimensão espacial como segunda, pois o padrão de camadas de
            # atenção é bs x seq_length x hidden_dim
            x = x.permute(0, 2, 1)

            return x

    @staticmethod
    def attention(query, key, value):
        d_k = query.shape[-1]
        scores = torch.matmul(query, key.transpose(-2, -1)) / d_k**0.5
        p_attn = scores.softmax(dim=-1)
        out = torch.matmul(p_attn, value)

        return out

    class SDPA(nn.Module):
        """Added: `attention(x, x, x)` as a module, so it can be exported and run like the others."""

        def forward(self, x):
            return seed000.attention(x, x, x)

    class MultiHeadedAttention(nn.Module):
        def __init__(self, heads=12, d_model=768):
            super().__init__()

            # Assumimos d_k=d_v
            d_k = d_model // heads
            self.heads = heads
            self.d_k = d_k
            self.proj_query = nn.Linear(d_model, d_model)
            self.proj_key = nn.Linear(d_model, d_model)
            self.proj_value = nn.Linear(d_model, d_model)
            self.final = nn.Linear(d_model, d_model)

        def proj_and_reshape(self, layer, x):
            '''Aplica uma transformação linear e redimensiona o resultado
            para ser usado na função de atenção.'''

            nbatches = x.shape[0]
            x = layer(x)
            # Visualiza o resultado como uma matriz bs x heads x n x d_k. Isso
            # possibilita aplicar a função `attention` nas dimensões n x d_k
            x = x.view(nbatches, -1, self.heads, self.d_k).transpose(1, 2)

            return x

        def forward(self, query, key, value):
            nbatches = query.shape[0]
            query_proj = self.proj_and_reshape(self.proj_query, query)
            key_proj = self.proj_and_reshape(self.proj_key, key)
            value_proj = self.proj_and_reshape(self.proj_value, value)

            x = seed000.attention(query_proj, key_proj, value_proj)
            # Redimensiona de bs x heads x n x d_k para bs x n x d_model
            x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.heads * self.d_k)

            return self.final(x)

    class MLP(nn.Module):
        def __init__(self, in_channels=768, hidden_channels=3072):
            super().__init__()  # FIX(seed 000): the seed forgets super().__init__().

            self.layers = nn.Sequential(
                torch.nn.Linear(in_channels, hidden_channels),
                nn.ReLU(),
                torch.nn.Linear(hidden_channels, in_channels),
            )

        def forward(self, x):
            return self.layers(x)

    # The seed's EncoderBlock is torchvision's, verbatim (its `MLP(hidden_dim,
    # mlp_dim, dropout)` call only fits torchvision's MLPBlock), so use that.
    EncoderBlock = torchvision.models.vision_transformer.EncoderBlock


class seed001:
    """Seed 001 (Portuguese): a whole ViT with a ReLU MLP and LayerNorm eps 1e-5."""

    class PatchifyLayer(nn.Module):
        """Módulo que transforma uma imagem em um conjunto de tokens. Mesmo
        módulo implementado no notebook anterior."""

        # in_channels added (default 3, the seed's value) so 1-channel images work.
        def __init__(self, image_size, patch_size, token_dim, in_channels=3):
            super().__init__()
            self.conv_proj = nn.Conv2d(
                in_channels, token_dim, kernel_size=patch_size, stride=patch_size
            )
            new_size = image_size // patch_size
            seq_length = new_size**2
            self.token_dim = token_dim
            self.new_size = new_size
            self.seq_length = seq_length

        def forward(self, x):
            x = self.conv_proj(x)
            x = x.reshape(x.shape[0], self.token_dim, -1)
            x = x.permute(0, 2, 1)

            return x

    class MLP(nn.Module):
        """Camada multilayer perceptron / feedforward.
        Nota: Usualmente mlp_dim>token_dim."""

        def __init__(self, token_dim, mlp_dim):
            super().__init__()

            self.layers = nn.Sequential(
                torch.nn.Linear(token_dim, mlp_dim),
                nn.ReLU(),
                torch.nn.Linear(mlp_dim, token_dim),
            )

        def forward(self, x):
            return self.layers(x)

    class EncoderBlock(nn.Module):
        """Bloco codificador de um transformer."""

        def __init__(self, num_heads, token_dim, mlp_dim):
            super().__init__()

            # Normalização e atenção
            self.ln_1 = nn.LayerNorm(token_dim)
            self.attention = nn.MultiheadAttention(token_dim, num_heads, batch_first=True)

            # Normalização e camada linear
            self.ln_2 = nn.LayerNorm(token_dim)
            self.mlp = seed001.MLP(token_dim, mlp_dim)

        def forward(self, input):
            x = self.ln_1(input)
            x, _ = self.attention(x, x, x)
            # Adiciona resíduo (assim como na resnet)
            x = x + input

            y = self.ln_2(x)
            y = self.mlp(y)

            # Adciona resíduo e retorna
            return x + y

    class VisionTransformer(nn.Module):
        # in_channels added (default 3, the seed's value) so 1-channel images work.
        def __init__(self, image_size, patch_size, num_layers, num_heads, token_dim,
                     mlp_dim, num_classes, in_channels=3):
            super().__init__()

            # Transforma imagem em tokens
            self.patchify = seed001.PatchifyLayer(image_size, patch_size, token_dim, in_channels)
            seq_length = (image_size // patch_size)**2

            # Adiciona token para a classe
            self.class_token = nn.Parameter(torch.zeros(1, 1, token_dim))
            seq_length += 1

            # Adiciona informação sobre a posição
            self.pos_embedding = nn.Parameter(torch.empty(1, seq_length, token_dim).normal_(std=0.02))

            # Codificador
            encoder = []
            for _ in range(num_layers):
                encoder.append(seed001.EncoderBlock(num_heads, token_dim, mlp_dim))
            self.encoder = nn.Sequential(*encoder)
            self.ln = nn.LayerNorm(token_dim)

            # Camada de classificação
            self.final = nn.Linear(token_dim, num_classes)

        def forward(self, x):
            # bs x c x H x W -> bs x seq_length x token_dim
            x = self.patchify(x)
            bs = x.shape[0]

            # Expansão do token de classe de 1 x 1 x token_dim -> bs x 1 x token_dim
            batch_class_token = self.class_token.expand(bs, -1, -1)
            # Concatena na dimensão da sequência
            x = torch.cat([batch_class_token, x], dim=1)

            # Adiciona embedding posicional
            x = x + self.pos_embedding
            x = self.ln(self.encoder(x))

            # Extrai apenas o primeiro token de cada batch
            x = x[:, 0]

            # bs x token_dim -> bs x num_classes
            x = self.final(x)

            return x


class seed002:
    """Seed 002 (Spanish): scaled dot-product self-attention as an MNIST classifier, and an MLP baseline.

    The seed's classes are PyTorch Lightning modules; here they are plain
    nn.Modules with the same layers and forward (the training methods are
    left out), so state_dict names match the seed's.
    """

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp = torch.nn.Sequential(
                torch.nn.Linear(784, 784),
                torch.nn.ReLU(inplace=True),
                torch.nn.Linear(784, 10)
            )

        def forward(self, x):
            return self.mlp(x)

    # basado en: https://github.com/karpathy/minGPT/blob/master/mingpt/model.py
    class ScaledDotSelfAttention(torch.nn.Module):
        def __init__(self, n_embd):
            super().__init__()

            # key, query, value projections
            self.key = torch.nn.Linear(n_embd, n_embd)
            self.query = torch.nn.Linear(n_embd, n_embd)
            self.value = torch.nn.Linear(n_embd, n_embd)

        def forward(self, x):
            B, L, F = x.size()

            # calculate query, key, values
            k = self.key(x)  # (B, L, F)
            q = self.query(x)  # (B, L, F)
            v = self.value(x)  # (B, L, F)

            # attention (B, L, F) x (B, F, L) -> (B, L, L)
            att = (q @ k.transpose(1, 2)) * (1.0 / math.sqrt(k.size(-1)))
            att = torch.nn.functional.softmax(att, dim=-1)
            y = att @ v  # (B, L, L) x (B, L, F) -> (B, L, F)

            return y

    class Model(MLP):
        def __init__(self, n_embd=7*7, seq_len=4*4):
            super().__init__()
            self.mlp = None

            self.attn = seed002.ScaledDotSelfAttention(n_embd)
            self.actn = torch.nn.ReLU(inplace=True)
            self.fc = torch.nn.Linear(n_embd*seq_len, 10)

        def forward(self, x):
            x = self.attn(x)
            y = self.fc(self.actn(x.view(x.size(0), -1)))
            return y


class seed003:
    """Seed 003 (Chinese): EMSA, ShuffleAttention, SGE, AFT (full, simple, local), OutlookAttention.

    The copy lost its line breaks; they are restored here. The seed imports
    numpy as np, torch.nn.init as init and nn; the fixes below add the rest.
    """

    class EMSA(nn.Module):
        def __init__(self, d_model, d_k, d_v, h, dropout=.1, H=7, W=7, ratio=3, apply_transform=True):
            super(seed003.EMSA, self).__init__()
            self.H = H
            self.W = W
            self.fc_q = nn.Linear(d_model, h * d_k)
            self.fc_k = nn.Linear(d_model, h * d_k)
            self.fc_v = nn.Linear(d_model, h * d_v)
            self.fc_o = nn.Linear(h * d_v, d_model)
            self.dropout = nn.Dropout(dropout)

            self.ratio = ratio
            if(self.ratio > 1):
                self.sr = nn.Sequential()
                self.sr_conv = nn.Conv2d(d_model, d_model, kernel_size=ratio+1, stride=ratio, padding=ratio//2, groups=d_model)
                self.sr_ln = nn.LayerNorm(d_model)

            self.apply_transform = apply_transform and h > 1
            if(self.apply_transform):
                self.transform = nn.Sequential()
                self.transform.add_module('conv', nn.Conv2d(h, h, kernel_size=1, stride=1))
                self.transform.add_module('softmax', nn.Softmax(-1))
                self.transform.add_module('in', nn.InstanceNorm2d(h))

            self.d_model = d_model
            self.d_k = d_k
            self.d_v = d_v
            self.h = h

            self.init_weights()

        def init_weights(self):
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    init.kaiming_normal_(m.weight, mode='fan_out')
                    if m.bias is not None:
                        init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    init.constant_(m.weight, 1)
                    init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    init.normal_(m.weight, std=0.001)
                    if m.bias is not None:
                        init.constant_(m.bias, 0)

        def forward(self, queries, keys, values, attention_mask=None, attention_weights=None):
            b_s, nq, c = queries.shape
            nk = keys.shape[1]

            q = self.fc_q(queries).view(b_s, nq, self.h, self.d_k).permute(0, 2, 1, 3)  # (b_s, h, nq, d_k)

            if(self.ratio > 1):
                x = queries.permute(0, 2, 1).view(b_s, c, self.H, self.W)  # bs,c,H,W
                x = self.sr_conv(x)  # bs,c,h,w
                x = x.contiguous().view(b_s, c, -1).permute(0, 2, 1)  # bs,n',c
                x = self.sr_ln(x)
                k = self.fc_k(x).view(b_s, -1, self.h, self.d_k).permute(0, 2, 3, 1)  # (b_s, h, d_k, n')
                v = self.fc_v(x).view(b_s, -1, self.h, self.d_v).permute(0, 2, 1, 3)  # (b_s, h, n', d_v)
            else:
                k = self.fc_k(keys).view(b_s, nk, self.h, self.d_k).permute(0, 2, 3, 1)  # (b_s, h, d_k, nk)
                v = self.fc_v(values).view(b_s, nk, self.h, self.d_v).permute(0, 2, 1, 3)  # (b_s, h, nk, d_v)

            if(self.apply_transform):
                att = torch.matmul(q, k) / np.sqrt(self.d_k)  # (b_s, h, nq, n')
                att = self.transform(att)  # (b_s, h, nq, n')
            else:
                att = torch.matmul(q, k) / np.sqrt(self.d_k)  # (b_s, h, nq, n')
                att = torch.softmax(att, -1)  # (b_s, h, nq, n')

            if attention_weights is not None:
                att = att * attention_weights
            if attention_mask is not None:
                att = att.masked_fill(attention_mask, -np.inf)

            att = self.dropout(att)

            out = torch.matmul(att, v).permute(0, 2, 1, 3).contiguous().view(b_s, nq, self.h * self.d_v)  # (b_s, nq, h*d_v)
            out = self.fc_o(out)  # (b_s, nq, d_model)
            return out

    class ShuffleAttention(nn.Module):
        def __init__(self, channel=512, reduction=16, G=8):
            super().__init__()
            self.G = G
            self.channel = channel
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            self.gn = nn.GroupNorm(channel // (2 * G), channel // (2 * G))
            self.cweight = nn.Parameter(torch.zeros(1, channel // (2 * G), 1, 1))
            self.cbias = nn.Parameter(torch.ones(1, channel // (2 * G), 1, 1))
            self.sweight = nn.Parameter(torch.zeros(1, channel // (2 * G), 1, 1))
            self.sbias = nn.Parameter(torch.ones(1, channel // (2 * G), 1, 1))
            self.sigmoid = nn.Sigmoid()

        # Defined but never called, as in the seed.
        def init_weights(self):
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    init.kaiming_normal_(m.weight, mode='fan_out')
                    if m.bias is not None:
                        init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    init.constant_(m.weight, 1)
                    init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    init.normal_(m.weight, std=0.001)
                    if m.bias is not None:
                        init.constant_(m.bias, 0)

        @staticmethod
        def channel_shuffle(x, groups):
            b, c, h, w = x.shape
            x = x.reshape(b, groups, -1, h, w)
            x = x.permute(0, 2, 1, 3, 4)

            # flatten
            x = x.reshape(b, -1, h, w)

            return x

        def forward(self, x):
            b, c, h, w = x.size()
            # group into subfeatures
            x = x.view(b*self.G, -1, h, w)  # bs*G,c//G,h,w

            # channel_split
            x_0, x_1 = x.chunk(2, dim=1)  # bs*G,c//(2*G),h,w

            # channel attention
            x_channel = self.avg_pool(x_0)  # bs*G,c//(2*G),1,1
            x_channel = self.cweight*x_channel + self.cbias  # bs*G,c//(2*G),1,1
            x_channel = x_0*self.sigmoid(x_channel)

            # spatial attention
            x_spatial = self.gn(x_1)  # bs*G,c//(2*G),h,w
            x_spatial = self.sweight*x_spatial + self.sbias  # bs*G,c//(2*G),h,w
            x_spatial = x_1*self.sigmoid(x_spatial)  # bs*G,c//(2*G),h,w

            # concatenate along channel axis
            out = torch.cat([x_channel, x_spatial], dim=1)  # bs*G,c//G,h,w
            out = out.contiguous().view(b, -1, h, w)

            # channel shuffle
            out = self.channel_shuffle(out, 2)
            return out

    class SpatialGroupEnhance(nn.Module):
        def __init__(self, groups=64):
            super(seed003.SpatialGroupEnhance, self).__init__()
            self.groups = groups
            self.avg_pool = nn.AdaptiveAvgPool2d(1)
            # FIX(seed 003): the seed uses Parameter without importing it; nn.Parameter is the same class.
            self.weight = nn.Parameter(torch.zeros(1, groups, 1, 1))
            self.bias = nn.Parameter(torch.ones(1, groups, 1, 1))
            self.sig = nn.Sigmoid()

        def forward(self, x):  # (b, c, h, w)
            b, c, h, w = x.size()
            x = x.view(b * self.groups, -1, h, w)
            xn = x * self.avg_pool(x)
            xn = xn.sum(dim=1, keepdim=True)
            t = xn.view(b * self.groups, -1)
            t = t - t.mean(dim=1, keepdim=True)
            std = t.std(dim=1, keepdim=True) + 1e-5
            t = t / std
            t = t.view(b, self.groups, h, w)
            t = t * self.weight + self.bias
            t = t.view(b * self.groups, 1, h, w)
            x = x * self.sig(t)
            x = x.view(b, c, h, w)
            return x

    class AFTFull(nn.Module):
        def __init__(self, max_seqlen, dim, hidden_dim=64):
            super().__init__()
            '''
            max_seqlen: the maximum number of timesteps (sequence length) to be fed in
            dim: the embedding dimension of the tokens
            hidden_dim: the hidden dimension used inside AFT Full

            Number of heads is 1 as done in the paper
            '''
            self.dim = dim
            self.hidden_dim = hidden_dim
            self.to_q = nn.Linear(dim, hidden_dim)
            self.to_k = nn.Linear(dim, hidden_dim)
            self.to_v = nn.Linear(dim, hidden_dim)
            self.project = nn.Linear(hidden_dim, dim)
            self.wbias = nn.Parameter(torch.Tensor(max_seqlen, max_seqlen))
            nn.init.xavier_uniform_(self.wbias)

        def forward(self, x):
            B, T, _ = x.shape
            Q = self.to_q(x).view(B, T, self.hidden_dim)
            K = self.to_k(x).view(B, T, self.hidden_dim)
            V = self.to_v(x).view(B, T, self.hidden_dim)
            temp_wbias = self.wbias[:T, :T].unsqueeze(0)  # sequences can still be variable length

            '''
            From the paper
            '''
            Q_sig = torch.sigmoid(Q)
            temp = torch.exp(temp_wbias) @ torch.mul(torch.exp(K), V)
            weighted = temp / (torch.exp(temp_wbias) @ torch.exp(K))
            Yt = torch.mul(Q_sig, weighted)

            Yt = Yt.view(B, T, self.hidden_dim)
            Yt = self.project(Yt)

            return Yt

    class AFTSimple(nn.Module):
        def __init__(self, max_seqlen, dim, hidden_dim=64):
            super().__init__()
            '''
            max_seqlen: the maximum number of timesteps (sequence length) to be fed in
            dim: the embedding dimension of the tokens
            hidden_dim: the hidden dimension used inside AFT Full

            Number of Heads is 1 as done in the paper.
            '''
            self.dim = dim
            self.hidden_dim = hidden_dim
            self.to_q = nn.Linear(dim, hidden_dim)
            self.to_k = nn.Linear(dim, hidden_dim)
            self.to_v = nn.Linear(dim, hidden_dim)
            self.project = nn.Linear(hidden_dim, dim)

        def forward(self, x):
            B, T, _ = x.shape
            Q = self.to_q(x).view(B, T, self.hidden_dim)
            K = self.to_k(x).view(B, T, self.hidden_dim)
            V = self.to_v(x).view(B, T, self.hidden_dim)

            '''
            From the paper
            '''
            weights = torch.mul(torch.softmax(K, 1), V).sum(dim=1, keepdim=True)
            Q_sig = torch.sigmoid(Q)
            Yt = torch.mul(Q_sig, weights)

            Yt = Yt.view(B, T, self.hidden_dim)
            Yt = self.project(Yt)

            return Yt

    class AFTLocal(nn.Module):
        def __init__(self, max_seqlen, dim, hidden_dim=64, s=256):
            super().__init__()
            '''
            max_seqlen: the maximum number of timesteps (sequence length) to be fed in
            dim: the embedding dimension of the tokens
            hidden_dim: the hidden dimension used inside AFT Full
            s: the window size used for AFT-Local in the paper

            Number of heads is 1 as done in the paper
            '''
            self.dim = dim
            self.hidden_dim = hidden_dim
            self.to_q = nn.Linear(dim, hidden_dim)
            self.to_k = nn.Linear(dim, hidden_dim)
            self.to_v = nn.Linear(dim, hidden_dim)
            self.project = nn.Linear(hidden_dim, dim)
            self.wbias = nn.Parameter(torch.Tensor(max_seqlen, max_seqlen))
            self.max_seqlen = max_seqlen
            self.s = s
            nn.init.xavier_uniform_(self.wbias)

        def forward(self, x):
            B, T, _ = x.shape
            Q = self.to_q(x).view(B, T, self.hidden_dim)
            K = self.to_k(x).view(B, T, self.hidden_dim)
            V = self.to_v(x).view(B, T, self.hidden_dim)
            # The seed rebuilds wbias with a max_seqlen^2 Python loop:
            #   [[self.wbias[i][j] if math.fabs(i-j) < self.s else 0 for j ...] for i ...]
            # torch.where gives the same values (a +0.0 outside the window, each
            # kept weight copied bit for bit) and, as in the seed, replaces the
            # Parameter on every call, without the O(max_seqlen^2) Python loop.
            i = torch.arange(self.max_seqlen)
            window = (i[:, None] - i[None, :]).abs() < self.s
            self.wbias = nn.Parameter(torch.where(window, self.wbias.detach(), torch.zeros(())))
            temp_wbias = self.wbias[:T, :T].unsqueeze(0)  # sequences can still be variable length

            '''
            From the paper
            '''
            Q_sig = torch.sigmoid(Q)
            temp = torch.exp(temp_wbias) @ torch.mul(torch.exp(K), V)
            weighted = temp / (torch.exp(temp_wbias) @ torch.exp(K))
            Yt = torch.mul(Q_sig, weighted)

            Yt = Yt.view(B, T, self.hidden_dim)
            Yt = self.project(Yt)

            return Yt

    class OutlookAttention(nn.Module):
        """
        Implementation of outlook attention
        --dim: hidden dim
        --num_heads: number of heads
        --kernel_size: kernel size in each window for outlook attention
        return: token features after outlook attention
        """

        # FIX(seed 003): the seed's code uses math and F (torch.nn.functional)
        # without importing them; this file imports both.
        def __init__(self, dim, num_heads, kernel_size=3, padding=1, stride=1,
                     qkv_bias=False, qk_scale=None, attn_drop=0., proj_drop=0.):
            super().__init__()
            head_dim = dim // num_heads
            self.num_heads = num_heads
            self.kernel_size = kernel_size
            self.padding = padding
            self.stride = stride
            self.scale = qk_scale or head_dim**-0.5

            self.v = nn.Linear(dim, dim, bias=qkv_bias)
            self.attn = nn.Linear(dim, kernel_size**4 * num_heads)

            self.attn_drop = nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(proj_drop)

            self.unfold = nn.Unfold(kernel_size=kernel_size, padding=padding, stride=stride)
            self.pool = nn.AvgPool2d(kernel_size=stride, stride=stride, ceil_mode=True)

        def forward(self, x):
            B, H, W, C = x.shape

            v = self.v(x).permute(0, 3, 1, 2)  # B, C, H, W

            h, w = math.ceil(H / self.stride), math.ceil(W / self.stride)
            v = self.unfold(v).reshape(B, self.num_heads, C // self.num_heads,
                                       self.kernel_size * self.kernel_size,
                                       h * w).permute(0, 1, 4, 3, 2)  # B,H,N,kxk,C/H

            attn = self.pool(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
            attn = self.attn(attn).reshape(
                B, h * w, self.num_heads, self.kernel_size * self.kernel_size,
                self.kernel_size * self.kernel_size).permute(0, 2, 1, 3, 4)  # B,H,N,kxk,kxk
            attn = attn * self.scale
            attn = attn.softmax(dim=-1)
            attn = self.attn_drop(attn)

            x = (attn @ v).permute(0, 1, 4, 3, 2).reshape(
                B, C * self.kernel_size * self.kernel_size, h * w)
            x = F.fold(x, output_size=(H, W), kernel_size=self.kernel_size,
                       padding=self.padding, stride=self.stride)

            x = self.proj(x.permute(0, 2, 3, 1))
            x = self.proj_drop(x)

            return x


class seed004:
    """Seed 004 (Korean): a ViT written with einops (fused qkv, post-softmax scaling, mean-pooled head)."""

    class PatchEmbedding(nn.Module):
        def __init__(self, in_channels=3, patch_size=16, emb_size=768, img_size=224):
            self.patch_size = patch_size
            super().__init__()
            self.projection = nn.Sequential(
                nn.Conv2d(in_channels, emb_size, kernel_size=patch_size, stride=patch_size),
                Rearrange('b e (h) (w) -> b (h w) e')
            )
            self.cls_token = nn.Parameter(torch.randn(1, 1, emb_size))
            self.positions = nn.Parameter(torch.randn((img_size // patch_size) **2 + 1, emb_size))

        def forward(self, x):  # x : Input image
            b, _, _, _ = x.shape
            x = self.projection(x)  # Input image to flattened patch
            cls_tokens = repeat(self.cls_token, '() n e -> b n e', b=b)
            x = torch.cat([cls_tokens, x], dim=1)  # [CLS] 추가
            x += self.positions  # position embedding 추가

            return x

    class MultiHeadAttention(nn.Module):
        def __init__(self, emb_size: int = 768, num_heads: int = 8, dropout: float = 0):
            super().__init__()
            self.emb_size = emb_size
            self.num_heads = num_heads
            # Q,K,V를 하나의 매트릭스에 저장
            self.qkv = nn.Linear(emb_size, emb_size * 3)
            self.att_drop = nn.Dropout(dropout)
            self.projection = nn.Linear(emb_size, emb_size)

        def forward(self, x: Tensor, mask: Tensor = None) -> Tensor:
            # Q,K,V 분할
            qkv = rearrange(self.qkv(x), "b n (h d qkv) -> (qkv) b h n d", h=self.num_heads, qkv=3)
            queries, keys, values = qkv[0], qkv[1], qkv[2]
            energy = torch.einsum('bhqd, bhkd -> bhqk', queries, keys)  # (Batch, Heads, Query_len, Key_len)

            # Attention 연산 수행 시 무시할 정보를 설정
            if mask is not None:
                fill_value = torch.finfo(torch.float32).min
                # FIX(seed 004): `energy.mask_fill(~mask, fill_value)` names no
                # method, and masked_fill returns a new tensor the seed would
                # discard; keep the result so the mask masks.
                energy = energy.masked_fill(~mask, fill_value)

            scaling = self.emb_size ** (1/2)
            att = F.softmax(energy, dim=-1) / scaling
            att = self.att_drop(att)

            out = torch.einsum('bhal, bhlv -> bhav ', att, values)
            out = rearrange(out, "b h n d -> b n (h d)")
            out = self.projection(out)

            return out

    class ResidualAdd(nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, x, **kwargs):
            res = x
            x = self.fn(x, **kwargs)
            x += res

            return x

    class FeedForwardBlock(nn.Sequential):
        def __init__(self, emb_size: int, expansion: int = 4, drop_p: float = 0.):
            super().__init__(
                nn.Linear(emb_size, expansion * emb_size),  # 확장
                nn.GELU(),
                nn.Dropout(drop_p),
                nn.Linear(expansion * emb_size, emb_size),  # 원래대로 축소
            )

    class TransformerEncoderBlock(nn.Sequential):
        def __init__(self,
                     emb_size: int = 768,
                     drop_p: float = 0.,
                     forward_expansion: int = 4,
                     forward_drop_p: float = 0.,
                     ** kwargs):
            super().__init__(
                seed004.ResidualAdd(nn.Sequential(
                    nn.LayerNorm(emb_size),
                    seed004.MultiHeadAttention(emb_size, **kwargs),
                    nn.Dropout(drop_p)
                )),
                seed004.ResidualAdd(nn.Sequential(
                    nn.LayerNorm(emb_size),
                    seed004.FeedForwardBlock(
                        emb_size, expansion=forward_expansion, drop_p=forward_drop_p),
                    nn.Dropout(drop_p)
                )
                ))

    class TransformerEncoder(nn.Sequential):
        def __init__(self, depth: int = 12, **kwargs):
            super().__init__(*[seed004.TransformerEncoderBlock(**kwargs) for _ in range(depth)])

    class ClassificationHead(nn.Sequential):
        def __init__(self, emb_size: int = 768, n_classes: int = 1000):
            super().__init__(
                Reduce('b n e -> b e', reduction='mean'),  # emb_size의 1차원 벡터로 projection
                nn.LayerNorm(emb_size),
                nn.Linear(emb_size, n_classes))

    class ViT(nn.Sequential):
        def __init__(self,
                     in_channels: int = 3,
                     patch_size: int = 16,
                     emb_size: int = 768,
                     img_size: int = 224,
                     depth: int = 12,
                     n_classes: int = 1000,
                     **kwargs):
            super().__init__(
                seed004.PatchEmbedding(in_channels, patch_size, emb_size, img_size),
                seed004.TransformerEncoder(depth, emb_size=emb_size, **kwargs),
                seed004.ClassificationHead(emb_size, n_classes)
            )

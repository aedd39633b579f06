/* vit - command-line front end of vit.h.

     vit info MODEL.safetensors
     vit run  MODEL.safetensors INPUT.npy OUTPUT.npy [--threads N] [--features]

   `run` works for every kind tools/export.py writes (whole ViTs and single
   modules): float32 .npy in, float32 .npy out. This contract is stable. */
#define VIT_IMPLEMENTATION
#include "vit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void) {
    fprintf(stderr,
            "usage: vit info MODEL.safetensors\n"
            "       vit run MODEL.safetensors INPUT.npy OUTPUT.npy [--threads N] [--features]\n"
            "       vit version\n");
    return 2;
}

static int fail(vit_result r) {
    fprintf(stderr, "vit: %s (%s)\n", vit_last_error(), vit_result_string(r));
    return 1;
}

static void print_tensor(const char *label, const vit_tensor *t) {
    char s[64];
    if (t->data) printf("  %-22s %s\n", label, vit_tensor_shape_str(t, s, sizeof s));
}

static int cmd_info(const char *path) {
    vit_model m;
    vit_result r = vit_model_load_file(&m, path);
    if (r != VIT_OK) return fail(r);
    printf("%s: %s (naming %s), %lld weights\n", path, vit_kind_name(m.kind), m.naming, (long long)m.n_params);
    switch (m.kind) {
    case VIT_KIND_VIT: {
        const vit_config *c = &m.cfg;
        printf("  image %dx%d, %d channels, patch %d, %d tokens\n", c->image_size, c->image_size, c->in_channels, c->patch_size,
               (c->image_size / c->patch_size) * (c->image_size / c->patch_size) + 1);
        printf("  %d layers, hidden %d, %d heads, mlp %d (%s), LayerNorm eps %g\n", c->depth, c->dim, c->heads, c->mlp_dim,
               c->act == VIT_ACT_GELU ? "gelu" : "relu", (double)c->ln_eps);
        printf("  pool %s, classes %d, representation %d%s\n", c->pool == VIT_POOL_CLS ? "class token" : "mean", c->num_classes,
               c->representation_size, c->quirk ? ", seed-004 attention quirk" : "");
        printf("  input (B, %d, %d, %d)\n", c->in_channels, c->image_size, c->image_size);
        break;
    }
    case VIT_KIND_SDPA: printf("  input (B, N, C)\n"); break;
    case VIT_KIND_MHA:
        printf("  embed %d, %d heads%s\n  input (B, N, %d)\n", m.mha.dim, m.mha.heads, m.mha.quirk ? ", seed-004 attention quirk" : "", m.mha.dim);
        print_tensor("qkv weight", &m.mha_w.qkv_w);
        break;
    case VIT_KIND_MLP:
        printf("  %d -> %d (%s) -> %d\n  input (..., %d)\n", m.mlp.in_dim, m.mlp.hidden_dim, m.mlp.act == VIT_ACT_GELU ? "gelu" : "relu",
               m.mlp.out_dim, m.mlp.in_dim);
        break;
    case VIT_KIND_BLOCK:
        printf("  hidden %d, %d heads, mlp %d, eps %g\n  input (B, N, %d)\n", m.block.dim, m.block.heads, m.block.mlp_dim,
               (double)m.block.ln_eps, m.block.dim);
        break;
    case VIT_KIND_PATCH:
        printf("  image %d, patch %d, %d channels -> %d features%s%s\n  input (B, %d, %d, %d)\n", m.patch.image_size, m.patch.patch_size,
               m.patch.in_channels, m.patch.dim, m.patch.class_token ? ", class token" : "", m.patch.pos_embed ? ", position embedding" : "",
               m.patch.in_channels, m.patch.image_size, m.patch.image_size);
        break;
    case VIT_KIND_SE:
        printf("  %d channels, squeeze %d\n  input (B, %d, H, W)\n", m.se.channels, m.se.squeeze, m.se.channels);
        break;
    case VIT_KIND_SDSA: printf("  n_embd %d, one head, no output projection\n  input (B, N, %d)\n", m.sdsa.dim, m.sdsa.dim); break;
    case VIT_KIND_CLS002:
        printf("  %d patches of %d values -> self-attention, ReLU, linear -> %d classes\n  input (B, %d, %d)\n", m.cls002.seq_len, m.cls002.dim,
               m.cls002.num_classes, m.cls002.seq_len, m.cls002.dim);
        break;
    case VIT_KIND_EMSA:
        printf("  d_model %d, %d heads, d_k %d, d_v %d, ratio %d%s\n", m.emsa.dim, m.emsa.heads, m.emsa.d_k, m.emsa.d_v, m.emsa.ratio,
               m.emsa.transform && m.emsa.heads > 1 ? ", transform" : "");
        if (m.emsa.ratio > 1) printf("  input (B, %d, %d): a %dx%d grid\n", m.emsa.height * m.emsa.width, m.emsa.dim, m.emsa.height, m.emsa.width);
        else printf("  input (B, N, %d)\n", m.emsa.dim);
        break;
    case VIT_KIND_SHUFFLE:
        printf("  %d channels, %d groups\n  input (B, %d, H, W)\n", m.shuffle.channels, m.shuffle.groups, m.shuffle.channels);
        break;
    case VIT_KIND_SGE: printf("  %d groups\n  input (B, C, H, W), C a multiple of %d, H*W >= 2\n", m.sge.groups, m.sge.groups); break;
    case VIT_KIND_AFT:
        printf("  AFT-%s, dim %d, hidden %d", m.aft.variant == VIT_AFT_FULL ? "full" : m.aft.variant == VIT_AFT_SIMPLE ? "simple" : "local", m.aft.dim,
               m.aft.hidden_dim);
        if (m.aft.variant == VIT_AFT_LOCAL) printf(", window s %d", m.aft.s);
        if (m.aft.variant == VIT_AFT_SIMPLE) printf("\n  input (B, T, %d)\n", m.aft.dim);
        else printf("\n  input (B, T, %d), T <= max_seqlen %d\n", m.aft.dim, m.aft.max_seqlen);
        break;
    case VIT_KIND_OUTLOOK:
        printf("  dim %d, %d heads, kernel %d, padding %d, stride %d, scale %g%s\n  input (B, H, W, %d)\n", m.outlook.dim, m.outlook.heads,
               m.outlook.kernel_size, m.outlook.padding, m.outlook.stride, (double)m.outlook.scale, m.outlook.qkv_bias ? ", v bias" : "", m.outlook.dim);
        break;
    }
    vit_model_free(&m);
    return 0;
}

static int cmd_run(const char *model_path, const char *in_path, const char *out_path, int features) {
    vit_model m;
    vit_arena io, act;
    vit_tensor x, y;
    vit_forward_opts opts;
    size_t bytes;
    vit_result r;
    memset(&opts, 0, sizeof opts);
    opts.features = features;
    if ((r = vit_model_load_file(&m, model_path)) != VIT_OK) return fail(r);
    /* The input's size is only known from its header: count, then load. */
    vit_arena_init(&io, NULL, 0);
    if ((r = vit_npy_load(&io, in_path, &x)) != VIT_OK) { vit_model_free(&m); return fail(r); }
    if ((r = vit_arena_init_alloc(&io, io.peak)) != VIT_OK || (r = vit_npy_load(&io, in_path, &x)) != VIT_OK ||
        (r = vit_model_memory(&m, &x, &opts, &bytes)) != VIT_OK || (r = vit_arena_init_alloc(&act, bytes)) != VIT_OK) {
        vit_arena_free(&io);
        vit_model_free(&m);
        return fail(r);
    }
    r = vit_model_forward(&m, &act, &x, &opts, &y);
    if (r == VIT_OK) r = vit_npy_save(out_path, &y);
    vit_arena_free(&act);
    vit_arena_free(&io);
    vit_model_free(&m);
    return r == VIT_OK ? 0 : fail(r);
}

int main(int argc, char **argv) {
    int i, features = 0;
    if (argc >= 2 && !strcmp(argv[1], "version")) {
        printf("vit.h %s\n", vit_version());
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "info")) return cmd_info(argv[2]);
    if (argc >= 5 && !strcmp(argv[1], "run")) {
        for (i = 5; i < argc; i++) {
            if (!strcmp(argv[i], "--features")) features = 1;
            else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
                int n = atoi(argv[++i]);
                if (n < 1) return usage();
#ifdef _OPENMP
                omp_set_num_threads(n);
#endif
            } else return usage();
        }
        return cmd_run(argv[2], argv[3], argv[4], features);
    }
    return usage();
}

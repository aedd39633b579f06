/* Where a ViT's forward pass spends its time, against this machine's
   FMA peak: the profile issue 27 asks for before any kernel changes.
   Usage: profile_vit MODEL [--batch B] [--threads T] [--image-size S] [--reps R]

   A whole forward (vit_model_forward) is timed, then each piece of the
   encoder blocks on the model's own weights and shapes, as the forward
   runs it (the same internal calls: LayerNorm, the qkv product, the
   attention core, the output projection, fc1 with its fused activation,
   fc2), over every block in turn; the patch embedding; and what is left
   (pool, head, the residual copies, the pieces' handing on in the cache)
   as the difference. The attention core is
   vit__mha_core less its two products, so it holds the scores, softmax,
   P V and the qk-norm or rotary work if the model has them. The
   activation is fused into fc1's epilogue: "fc1 + act" is that product,
   and the activation alone, unfused, is printed apart for scale.
   Each piece is the median of R runs; FLOPs are 2 per multiply-add of
   the products (attention: 4 B T^2 C); the peak is one core's, measured
   here (bench.h, as bench_kernels and compare.py count it), times the
   threads, so "% peak" says how far each piece is from what the FPU can
   do. */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "bench.h"

#include <stdlib.h>
#include <string.h>

typedef struct piece {
    const char *name;
    double s, flops; /* median seconds of one run; FLOPs of one run */
    int times;       /* runs in a forward (the depth for a block's pieces) */
} piece;

#define TIME(P, REPS, CODE)                                                                                            \
    do {                                                                                                               \
        double ts_[101];                                                                                               \
        int k_;                                                                                                        \
        for (k_ = 0; k_ <= (REPS); k_++) { /* the first is a warm-up */                                                \
            double t0_ = now();                                                                                        \
            CODE;                                                                                                      \
            ts_[k_] = now() - t0_;                                                                                     \
        }                                                                                                              \
        qsort(ts_ + 1, (size_t)(REPS), sizeof(double), cmp_double);                                                    \
        (P)->s = ts_[1 + (REPS) / 2];                                                                                  \
    } while (0)

int main(int argc, char **argv) {
    int B = 1, threads = 1, reps = 9, size = 0, i, np = 0;
    vit_model m;
    vit_arena act, scr;
    vit_tensor x, y;
    int32_t shape[4], ndim;
    size_t bytes;
    vit_result r;
    piece p[16];
    double total_s, fwd_s, peak, sum = 0.0, fl = 0.0;
    if (argc < 2) {
        fprintf(stderr, "usage: profile_vit MODEL [--batch B] [--threads T] [--image-size S] [--reps R]\n");
        return 2;
    }
    for (i = 2; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--batch")) B = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--threads")) threads = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--image-size")) size = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "profile_vit: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (B < 1 || B > 64 || threads < 1 || threads > 64 || reps < 1 || reps > 100) return 2;
    if (vit_set_threads(threads) != VIT_OK || (r = vit_model_load_file(&m, argv[1])) != VIT_OK ||
        (size && (r = vit_model_set_image_size(&m, size)) != VIT_OK)) {
        fprintf(stderr, "profile_vit: %s\n", vit_last_error());
        return 1;
    }
    if (m.kind != VIT_KIND_VIT) {
        fprintf(stderr, "profile_vit: %s is not a ViT\n", argv[1]);
        return 1;
    }

    /* the whole forward */
    if (vit_model_input_shape(&m, B, 1, 1, &ndim, shape) != VIT_OK || vit_arena_init_alloc(&scr, 1u << 30) != VIT_OK ||
        vit_tensor_init(&scr, &x, ndim, shape) != VIT_OK || vit_model_memory(&m, &x, NULL, &bytes) != VIT_OK ||
        vit_arena_init_alloc(&act, bytes) != VIT_OK) {
        fprintf(stderr, "profile_vit: %s\n", vit_last_error());
        return 1;
    }
    for (i = 0; i < (int)vit_tensor_numel(&x); i++) x.data[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    {
        piece f;
        TIME(&f, reps, (vit_arena_reset(&act), vit_model_forward(&m, &act, &x, NULL, &y)));
        fwd_s = f.s;
    }

    /* each piece over every block's own weights in turn, as the forward meets them (from memory at B = 1:
       one block's weights, timed alone and again, would sit in the cache) */
    {
        const vit_config *c = &m.cfg;
        int32_t C = c->dim, G = c->image_size / c->patch_size, T = G * G + vit__prefix(c), rows = B * T;
        int32_t H = c->mlp_dim, H1 = c->glu ? 2 * H : H, L = c->depth, l;
        size_t mark;
        float *t = (float *)vit_arena_alloc(&scr, (size_t)rows * C * sizeof(float));
        /* h: LayerNorm's output as the blocks lay it (vit__ld_x), x of qkv and fc1 */
        int32_t ldh = vit__ld_x(C);
        float *h = (float *)vit_arena_alloc(&scr, (size_t)rows * ldh * sizeof(float));
        int32_t wide = vit__ld_x(H) > H1 ? vit__ld_x(H) : H1;
        float *q = (float *)vit_arena_alloc(&scr, (size_t)rows * (wide > 3 * C ? wide : 3 * C) * sizeof(float));
        void *xs = vit_arena_alloc(&scr, vit__dense_scratch(vit__dense_scratch(vit__dense_scratch(
                                                                0, &m.blocks[0].attn.qkv_w, rows, C),
                                                                &m.blocks[0].mlp.fc1_w, rows, C),
                                                            &m.blocks[0].mlp.fc2_w, rows, H) + 64);
        vit_mha_params mp;
        vit_mlp_params lp;
        vit__mm fc;
        piece mha, mlp;
        vit__ln *ln1 = (vit__ln *)vit_arena_alloc(&scr, (size_t)L * sizeof(vit__ln)),
                *ln2 = (vit__ln *)vit_arena_alloc(&scr, (size_t)L * sizeof(vit__ln));
        int f1 = vit__ln_fuses(&m.blocks[0].attn.qkv_w, C), f2 = vit__ln_fuses(&m.blocks[0].mlp.fc1_w, C);
        if (!t || !h || !q || !xs || !ln1 || !ln2) {
            fprintf(stderr, "profile_vit: %s\n", vit_last_error());
            return 1;
        }
        for (i = 0; i < rows * C; i++) t[i] = (float)((i * 104729) % 2000) / 1000.0f - 1.0f;
        for (i = 0; i < rows * ldh; i++) h[i] = t[i % (rows * C)];
        memset(&mp, 0, sizeof mp);
        mp.dim = C; mp.heads = c->heads; mp.scale_after_softmax = c->scale_after_softmax; mp.qk_norm = c->qk_norm;
        mp.qk_eps = c->ln_eps;
        lp.in_dim = C; lp.hidden_dim = H; lp.out_dim = C; lp.act = c->act; lp.glu = c->glu; lp.norm_eps = c->ln_eps;
        mark = vit_arena_mark(&scr);
#define EACH(CODE)                                                                                                     \
    for (l = 0; l < L; l++) {                                                                                          \
        const vit_block_weights *w = &m.blocks[l];                                                                     \
        CODE;                                                                                                          \
    }
        /* a LayerNorm the qkv or fc1 product takes as it converts or packs x (vit__ln_fuses), as the forward
           does, is timed in that product; the others as a pass of their own */
        for (l = 0; l < L; l++) {
            const vit_block_weights *w = &m.blocks[l];
            ln1[l].w = w->ln1_w.data; ln1[l].b = w->ln1_b.data; ln1[l].eps = c->ln_eps;
            ln2[l].w = w->ln2_w.data; ln2[l].b = w->ln2_b.data; ln2[l].eps = c->ln_eps;
        }
        if (!f1 || !f2) {
            p[np] = (piece){f1 || f2 ? "LayerNorm (1 a block)" : "LayerNorm (2 a block)", 0, 0, 2 - f1 - f2};
            TIME(&p[np], reps, EACH(vit_k_layernorm(q, t, w->ln1_w.data, w->ln1_b.data, rows, C, c->ln_eps)));
            np++;
        }
        p[np] = (piece){f1 ? "qkv product (+ LN1)" : "qkv product", 0, 2.0 * rows * C * 3 * C * L, 1};
        TIME(&p[np], reps, EACH((fc = vit__mm_w(q, h, &w->attn.qkv_w, w->attn.qkv_b.data, rows, C, 3 * C, xs),
                                 fc.ldx = ldh, fc.ln = f1 ? &ln1[l] : NULL, vit__matmul(&fc))));
        np++;
        p[np] = (piece){"output projection", 0, 2.0 * rows * C * C * L, 1};
        /* x: the heads' output, rows as far apart as h's (vit__ld_x) */
        TIME(&p[np], reps, EACH((fc = vit__mm_w(t, h, &w->attn.out_w, w->attn.out_b.data, rows, C, C, xs),
                                 fc.ldx = ldh, vit__matmul(&fc))));
        np++;
        TIME(&mha, reps,
             EACH((vit__mha_core(&scr, &mp, &w->attn, h, ldh, f1 ? &ln1[l] : NULL, t, NULL, NULL, B, T),
                   vit_arena_rewind(&scr, mark))));
        p[np] = (piece){"attention core (QK^T, softmax, PV)", mha.s - p[np - 2].s - p[np - 1].s,
                        4.0 * B * (double)T * T * C * L, 1};
        np++;
        p[np] = (piece){"fc2", 0, 2.0 * rows * H * C * L, 1};
        /* x at the row stride the MLP gives its hidden features (vit__ld_x) */
        TIME(&p[np], reps, EACH((fc = vit__mm_w(t, q, &w->mlp.fc2_w, w->mlp.fc2_b.data, rows, H, C, xs),
                                 fc.ldx = vit__ld_x(H), vit__matmul(&fc))));
        np++;
        TIME(&mlp, reps,
             EACH((vit__mlp_core(&scr, &lp, &w->mlp, h, ldh, f2 ? &ln2[l] : NULL, t, NULL, rows),
                   vit_arena_rewind(&scr, mark))));
        p[np] = (piece){c->glu ? (f2 ? "fc1 + gate (fused, + LN2)" : "fc1 + gate (fused)")
                               : (f2 ? "fc1 + act (fused, + LN2)" : "fc1 + act (fused)"),
                        mlp.s - p[np - 1].s,
                        2.0 * rows * C * H1 * L, 1};
        np++;
#undef EACH
    }

    /* the patch embedding alone */
    {
        vit_tensor pe;
        size_t mark = vit_arena_mark(&act);
        int32_t G = m.cfg.image_size / m.cfg.patch_size;
        p[np] = (piece){"patch embedding", 0,
                        2.0 * B * G * G * m.cfg.dim * m.cfg.in_channels * m.cfg.patch_size * m.cfg.patch_size, 1};
        vit_arena_reset(&act);
        TIME(&p[np], reps,
             (vit_arena_rewind(&act, mark), vit_patch_forward(&act, &m.patch, &m.patch_w, &x, &pe, NULL)));
        np++;
    }

    peak = fma_peak() * threads;
    for (i = 0; i < np; i++) {
        sum += p[i].s * p[i].times;
        fl += p[i].flops * p[i].times;
    }
    total_s = fwd_s;
    printf("profile_vit %s: B=%d, %d thread%s, %d px (%d tokens), F32 FMA peak %.1f GFLOP/s (a core's x threads)\n",
           argv[1], B, threads, threads > 1 ? "s" : "", (int)m.cfg.image_size,
           (int)((m.cfg.image_size / m.cfg.patch_size) * (m.cfg.image_size / m.cfg.patch_size) + vit__prefix(&m.cfg)),
           peak);
    printf("| piece | ms | share | GFLOP/s | of peak |\n|---|---|---|---|---|\n");
    for (i = 0; i < np; i++) {
        double s = p[i].s * p[i].times;
        if (p[i].flops > 0)
            printf("| %s | %.2f | %.1f%% | %.1f | %.0f%% |\n", p[i].name, 1e3 * s, 100.0 * s / total_s,
                   p[i].flops * p[i].times / s / 1e9, 100.0 * p[i].flops * p[i].times / s / 1e9 / peak);
        else printf("| %s | %.2f | %.1f%% | | |\n", p[i].name, 1e3 * s, 100.0 * s / total_s);
    }
    printf("| the rest (pool, head, residual copies) | %.2f | %.1f%% | | |\n", 1e3 * (total_s - sum),
           100.0 * (total_s - sum) / total_s);
    printf("| **whole forward** | **%.2f** | 100%% | %.1f | %.0f%% |\n", 1e3 * total_s, fl / total_s / 1e9,
           100.0 * fl / total_s / 1e9 / peak);
    {
        const vit_config *c = &m.cfg;
        int32_t rows = B * ((c->image_size / c->patch_size) * (c->image_size / c->patch_size) + vit__prefix(c));
        piece a;
        float *g = (float *)vit_arena_alloc(&scr, (size_t)rows * c->mlp_dim * sizeof(float));
        if (g) {
            for (i = 0; i < rows * c->mlp_dim; i++) g[i] = (float)(i % 17) * 0.1f - 0.8f;
            TIME(&a, reps, vit_k_act(g, g, rows * c->mlp_dim, c->act));
            printf("(the activation alone, unfused, would take %.2f ms a forward)\n", 1e3 * a.s * c->depth);
        }
    }
    vit_model_free(&m);
    vit_arena_free(&act);
    vit_arena_free(&scr);
    return 0;
}

/* A tour of the seed modules on a real image, with weights made up here
   (no files): each module runs on features of the image and its gates or
   attention are drawn over it.
     05_tour IMAGE OUTDIR
   Writes OUTDIR/tour_sge.png (SGE's spatial gate per group), tour_shuffle.png
   (ShuffleAttention's spatial gates), tour_emsa.png (EMSA: where the centre
   token looks) and tour_aft.png (AFT-Simple's token weights), making OUTDIR
   if missing, and prints squeeze-excitation's channel gates. */
#define VIT_IMPLEMENTATION
#include "vit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <direct.h>
#define mkdir(path, mode) _mkdir(path)
#else
#include <sys/stat.h>
#endif

static vit_arena A;
static uint32_t seed = 1;

/* A tensor of uniform values in [-scale, scale]: stand-in weights. */
static vit_tensor rnd(int32_t ndim, int32_t d0, int32_t d1, int32_t d2, int32_t d3, float scale) {
    int32_t shape[4];
    vit_tensor t;
    size_t i;
    shape[0] = d0; shape[1] = d1; shape[2] = d2; shape[3] = d3;
    vit_tensor_init(&A, &t, ndim, shape);
    for (i = 0; i < vit_tensor_numel(&t); i++) {
        seed = seed * 1664525u + 1013904223u;
        t.data[i] = scale * ((float)(seed >> 8) / 8388608.0f - 1.0f);
    }
    return t;
}

/* vit.h's message, with `what` before it unless the message starts with
   it already (a file's name). */
static int ok(vit_result r, const char *what) {
    const char *msg = vit_last_error();
    if (r == VIT_OK) return 1;
    if (!strncmp(msg, what, strlen(what))) fprintf(stderr, "05_tour: %s\n", msg);
    else fprintf(stderr, "05_tour: %s: %s\n", what, msg);
    return 0;
}

int main(int argc, char **argv) {
    enum { S = 64, G = 16, C = 8 };
    char *path;
    vit_tensor img, rgb, feat, tok, y, gates, gs[2], att;
    vit_preprocess pp = {S, S, {0, 0, 0}, {1, 1, 1}, VIT_RESAMPLE_BILINEAR, 0, 0}; /* a 64x64 crop left in [0, 1] */
    int32_t shape[4], i, x, yy, c;
    if (argc < 3) { fprintf(stderr, "usage: 05_tour IMAGE OUTDIR\n"); return 2; }
    if (mkdir(argv[2], 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "05_tour: %s: cannot make the folder (%s)\n", argv[2], strerror(errno));
        return 1;
    }
    if (!(path = (char *)malloc(strlen(argv[2]) + 32))) return 1; /* OUTDIR/tour_<module>.png, sized from OUTDIR */
    if (!ok(vit_arena_init_alloc(&A, 64u << 20), "arena") || !ok(vit_image_load(&A, argv[1], 3, &img), argv[1]) ||
        !ok(vit_image_preprocess(&A, &img, &pp, &rgb), "preprocess"))
        return 1;
    rgb = vit_tensor_view(&rgb, 0); /* (3, S, S) */
    /* Features (1, C, S, S): R, G, B, grey, and the grey image's x/y gradients and their sizes. */
    shape[0] = 1; shape[1] = C; shape[2] = S; shape[3] = S;
    vit_tensor_init(&A, &feat, 4, shape);
    for (yy = 0; yy < S; yy++)
        for (x = 0; x < S; x++) {
            float *f = feat.data, gr = 0, gx, gy;
            for (c = 0; c < 3; c++)
                gr += rgb.data[(c * S + yy) * S + x] / 3, f[(c * S + yy) * S + x] = rgb.data[(c * S + yy) * S + x];
            f[(3 * S + yy) * S + x] = gr;
            gx = x + 1 < S ? (rgb.data[yy * S + x + 1] - rgb.data[yy * S + x]) * 4 : 0;
            gy = yy + 1 < S ? (rgb.data[(yy + 1) * S + x] - rgb.data[yy * S + x]) * 4 : 0;
            f[(4 * S + yy) * S + x] = gx; f[(5 * S + yy) * S + x] = gy;
            f[(6 * S + yy) * S + x] = gx < 0 ? -gx : gx; f[(7 * S + yy) * S + x] = gy < 0 ? -gy : gy;
        }
    {   /* Squeeze-excitation: one gate per channel. */
        vit_se_params p = {C, 2};
        vit_se_weights w;
        w.fc1_w = rnd(4, 2, C, 1, 1, 1);
        w.fc1_b = rnd(1, 2, 1, 1, 1, 0.1f);
        w.fc2_w = rnd(4, C, 2, 1, 1, 1);
        w.fc2_b = rnd(1, C, 1, 1, 1, 0.1f);
        if (!ok(vit_se_forward(&A, &p, &w, &feat, &y, &gates), "se")) return 1;
        printf("squeeze-excitation channel gates:");
        for (c = 0; c < C; c++) printf(" %.2f", gates.data[c]);
        printf("\n");
    }
    {   /* Spatial group-wise enhance: a spatial gate per group of channels. */
        vit_sge_params p = {4};
        vit_sge_weights w;
        w.weight = rnd(4, 1, 4, 1, 1, 2); w.bias = rnd(4, 1, 4, 1, 1, 0.5f);
        sprintf(path, "%s/tour_sge.png", argv[2]);
        if (!ok(vit_sge_forward(&A, &p, &w, &feat, &y, &gates), "sge") ||
            !ok(vit_png_grid(path, &rgb, gates.data, 4, S, S, 4, 128, 0.6f), path))
            return 1;
        printf("%s: SGE's 4 spatial gates\n", path);
    }
    {   /* Shuffle attention: gates of the channel and spatial halves. */
        vit_shuffle_params p = {C, 2};
        vit_shuffle_weights w;
        w.cweight = rnd(4, 1, 2, 1, 1, 1);
        w.cbias = rnd(4, 1, 2, 1, 1, 1);
        w.sweight = rnd(4, 1, 2, 1, 1, 2);
        w.sbias = rnd(4, 1, 2, 1, 1, 1);
        w.gn_w = rnd(1, 2, 1, 1, 1, 1); w.gn_b = rnd(1, 2, 1, 1, 1, 0.2f);
        sprintf(path, "%s/tour_shuffle.png", argv[2]);
        if (!ok(vit_shuffle_forward(&A, &p, &w, &feat, &y, gs), "shuffle") ||
            !ok(vit_png_grid(path, &rgb, gs[1].data, C / 2, S, S, 4, 128, 0.6f), path))
            return 1;
        printf("%s: ShuffleAttention's %d spatial gates\n", path, C / 2);
    }
    /* Tokens for the sequence modules: the features average-pooled to G x G, (1, G*G, C). */
    shape[0] = 1; shape[1] = G * G; shape[2] = C;
    vit_tensor_init(&A, &tok, 3, shape);
    memset(tok.data, 0, vit_tensor_numel(&tok) * sizeof(float));
    for (c = 0; c < C; c++)
        for (i = 0; i < S * S; i++)
            tok.data[((i / S) / (S / G) * G + (i % S) / (S / G)) * C + c] +=
                feat.data[c * S * S + i] / ((S / G) * (S / G));
    {   /* EMSA with 2x2-reduced keys: where the centre token looks. */
        vit_emsa_params p = {C, 4, 4, 2, G, G, 2, 1};
        vit_emsa_weights w;
        float map[(G / 2) * (G / 2)];
        memset(&w, 0, sizeof w);
        w.q_w = rnd(2, 8, C, 1, 1, 1);
        w.q_b = rnd(1, 8, 1, 1, 1, 0.1f);
        w.k_w = rnd(2, 8, C, 1, 1, 1);
        w.k_b = rnd(1, 8, 1, 1, 1, 0.1f);
        w.v_w = rnd(2, 8, C, 1, 1, 1);
        w.v_b = rnd(1, 8, 1, 1, 1, 0.1f);
        w.o_w = rnd(2, C, 8, 1, 1, 1);
        w.o_b = rnd(1, C, 1, 1, 1, 0.1f);
        w.sr_w = rnd(4, C, 1, 3, 3, 0.5f);
        w.sr_b = rnd(1, C, 1, 1, 1, 0.1f);
        w.ln_w = rnd(1, C, 1, 1, 1, 1);
        w.ln_b = rnd(1, C, 1, 1, 1, 0.1f);
        w.tr_w = rnd(4, 2, 2, 1, 1, 1); w.tr_b = rnd(1, 2, 1, 1, 1, 0.1f);
        if (!ok(vit_emsa_forward(&A, &p, &w, &tok, &y, &att), "emsa")) return 1;
        for (i = 0; i < (G / 2) * (G / 2); i++) /* head 0, query = the centre token */
            map[i] = att.data[(size_t)(G / 2 * G + G / 2) * att.shape[3] + i];
        sprintf(path, "%s/tour_emsa.png", argv[2]);
        if (!ok(vit_png_grid(path, &rgb, map, 1, G / 2, G / 2, 1, 256, 0.6f), path)) return 1;
        printf("%s: EMSA, head 0, the centre token's attention over the reduced keys\n", path);
    }
    {   /* AFT-Simple: softmax over tokens of K, averaged over features. */
        vit_aft_params p = {VIT_AFT_SIMPLE, 0, C, 8, 0};
        vit_aft_weights w;
        float map[G * G];
        memset(&w, 0, sizeof w);
        w.q_w = rnd(2, 8, C, 1, 1, 1);
        w.q_b = rnd(1, 8, 1, 1, 1, 0.1f);
        w.k_w = rnd(2, 8, C, 1, 1, 2);
        w.k_b = rnd(1, 8, 1, 1, 1, 0.1f);
        w.v_w = rnd(2, 8, C, 1, 1, 1);
        w.v_b = rnd(1, 8, 1, 1, 1, 0.1f);
        w.proj_w = rnd(2, C, 8, 1, 1, 1);
        w.proj_b = rnd(1, C, 1, 1, 1, 0.1f);
        if (!ok(vit_aft_forward(&A, &p, &w, &tok, &y, &att), "aft")) return 1;
        for (i = 0; i < G * G; i++) {
            map[i] = 0;
            for (c = 0; c < 8; c++) map[i] += att.data[(size_t)c * G * G + i] / 8;
        }
        sprintf(path, "%s/tour_aft.png", argv[2]);
        if (!ok(vit_png_grid(path, &rgb, map, 1, G, G, 1, 256, 0.6f), path)) return 1;
        printf("%s: AFT-Simple, each token's weight averaged over the features\n", path);
    }
    free(path);
    vit_arena_free(&A);
    return 0;
}

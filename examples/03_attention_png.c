/* Where a ViT looks: every head of one layer, the heads fused, and the
   attention rollout through all layers, each drawn over the image.
     03_attention_png MODEL IMAGE OUTDIR [--layer L] [--discard R]
   Writes OUTDIR/heads.png (class token -> patches, one cell per head of
   layer L, default the last), OUTDIR/{mean,max,min}.png (the heads fused)
   and OUTDIR/rollout_{mean,max,min}.png, making OUTDIR if missing, all over
   the crop the model saw (prepared as the file asks: vit_model_preprocess).
   Registers and a distillation token sit between the class token and the
   patches (vit_model_prefix_tokens): each map is the patches' part of the row. */
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

static int check(vit_result r) {
    if (r != VIT_OK) fprintf(stderr, "03_attention_png: %s\n", vit_last_error());
    return r == VIT_OK;
}

int main(int argc, char **argv) {
    static const char *fusion_names[3] = {"mean", "max", "min"};
    char *path;
    int layer = -1, G, NH, f, h, T, skip;
    float discard = 0.9f, *maps, *row;
    vit_model m;
    vit_arena a;
    vit_tensor img, x, crop, y, *att;
    vit_preprocess pp, show;
    vit_forward_opts opts;
    if (argc < 4) {
        fprintf(stderr, "usage: 03_attention_png MODEL IMAGE OUTDIR [--layer L] [--discard R]\n");
        return 2;
    }
    for (f = 4; f + 1 < argc; f += 2) {
        if (!strcmp(argv[f], "--layer")) layer = atoi(argv[f + 1]);
        else if (!strcmp(argv[f], "--discard")) discard = (float)atof(argv[f + 1]);
    }
    if (mkdir(argv[3], 0777) != 0 && errno != EEXIST)
        return fprintf(stderr, "03_attention_png: %s: cannot make the folder (%s)\n", argv[3], strerror(errno)), 1;
    if (!(path = (char *)malloc(strlen(argv[3]) + 32))) return 1; /* OUTDIR/<name>.png, sized from OUTDIR */
    if (!check(vit_model_load_file(&m, argv[1]))) return 1;
    if (m.kind != VIT_KIND_VIT || !m.cfg.class_token) {
        fprintf(stderr, "03_attention_png: %s is not a ViT with a class token (the maps are its attention)\n", argv[1]);
        return 1;
    }
    /* a crop other than the model's size (transformers' DINOv2) means the
       position embedding resized to it */
    if (!check(vit_model_preprocess(&m, &pp)) ||
        (pp.crop != m.cfg.image_size && !check(vit_model_set_image_size(&m, pp.crop))))
        return 1;
    if (layer < 0 || layer >= m.cfg.depth) layer = m.cfg.depth - 1;
    G = m.cfg.image_size / m.cfg.patch_size;
    NH = m.cfg.heads;
    skip = vit_model_prefix_tokens(&m) - 1; /* the maps leave out the class token only */
    T = G * G + skip;                       /* floats in one map */
    show = pp; /* the same crop, left in [0, 1] for drawing */
    show.mean[0] = show.mean[1] = show.mean[2] = 0.0f;
    show.std[0] = show.std[1] = show.std[2] = 1.0f;
    if (!check(vit_arena_init_alloc(&a, 256u << 20)) || !check(vit_image_load(&a, argv[2], m.cfg.in_channels, &img)) ||
        !check(vit_image_preprocess(&a, &img, &pp, &x)) || !check(vit_image_preprocess(&a, &img, &show, &crop)))
        return 1;
    crop = vit_tensor_view(&crop, 0); /* (C, S, S) */
    att = (vit_tensor *)vit_arena_alloc(&a, (size_t)m.cfg.depth * sizeof(vit_tensor));
    maps = (float *)vit_arena_alloc(&a, (size_t)NH * G * G * sizeof(float));
    row = (float *)vit_arena_alloc(&a, (size_t)T * sizeof(float));
    memset(&opts, 0, sizeof opts);
    opts.attn = att;
    if (!att || !maps || !row || !check(vit_model_forward(&m, &a, &x, &opts, &y))) return 1;
    for (h = 0; h < NH; h++) {
        vit_map_cls(&att[layer], 0, h, VIT_FUSE_MEAN, row);
        memcpy(maps + (size_t)h * G * G, row + skip, (size_t)G * G * sizeof(float));
    }
    sprintf(path, "%s/heads.png", argv[3]);
    if (!check(vit_png_grid(path, &crop, maps, NH, G, G, NH < 6 ? NH : 6, 160, 0.6f))) return 1;
    printf("%s: layer %d, %d heads\n", path, layer, NH);
    for (f = 0; f < 3; f++) {
        vit_rollout_params rp;
        rp.fusion = (vit_fusion)f; rp.discard_ratio = discard; rp.explain_compat = 0;
        vit_map_cls(&att[layer], 0, -1, (vit_fusion)f, row);
        sprintf(path, "%s/%s.png", argv[3], fusion_names[f]);
        if (!check(vit_png_overlay(path, &crop, row + skip, G, G, 0.6f))) return 1;
        printf("%s: layer %d, heads fused by %s\n", path, layer, fusion_names[f]);
        if (!check(vit_map_rollout(&a, att, m.cfg.depth, 0, &rp, row))) return 1;
        sprintf(path, "%s/rollout_%s.png", argv[3], fusion_names[f]);
        if (!check(vit_png_overlay(path, &crop, row + skip, G, G, 0.6f))) return 1;
        printf("%s: rollout over %d layers, %s fusion, discard %.2f\n", path, m.cfg.depth, fusion_names[f], discard);
    }
    free(path);
    vit_arena_free(&a);
    vit_model_free(&m);
    return 0;
}

/* Classify an image with any exported ViT: top-k classes with labels, and
   optionally the attention rollout drawn over the crop it classified.
     02_classify MODEL IMAGE [--top K] [--labels FILE] [--attention OUT.png]
   Images are prepared as the file asks (vit_model_preprocess: a trained
   model's mean/std, timm's crop_pct, ..., else torchvision's ViT transform).
   Labels come from --labels (one name a line) or the model. The arena is
   sized for this image by a counting pass over the same calls. */
#define VIT_IMPLEMENTATION
#include "vit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* vit.h's message, with `what` (a file) before it unless the message
   starts with it already. */
static int fail(const char *what) {
    const char *msg = vit_last_error();
    if (!strncmp(msg, what, strlen(what))) fprintf(stderr, "02_classify: %s\n", msg);
    else fprintf(stderr, "02_classify: %s: %s\n", what, msg);
    return 1;
}

int main(int argc, char **argv) {
    const char *png = NULL;
    long top = 5;
    int i, k, G, T, skip;
    vit_model m;
    vit_load_opts lo;
    vit_arena a;
    vit_tensor img, x, crop, logits, *att;
    vit_preprocess pp, show;
    vit_forward_opts opts;
    size_t fwd, extra;
    memset(&lo, 0, sizeof lo);
    for (i = 3; i < argc; i += 2) {
        char *end = NULL;
        if (i + 1 < argc && !strcmp(argv[i], "--top") && (top = strtol(argv[i + 1], &end, 10)) > 0 && top < 1 << 30 &&
            !*end)
            continue;
        if (i + 1 < argc && !strcmp(argv[i], "--attention")) png = argv[i + 1];
        else if (i + 1 < argc && !strcmp(argv[i], "--labels")) lo.labels_path = argv[i + 1];
        else
            return fprintf(stderr, "02_classify: %s %s: unknown option, or a bad or missing value\n", argv[i],
                           i + 1 < argc ? argv[i + 1] : ""),
                   2;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: 02_classify MODEL IMAGE [--top K] [--labels FILE] [--attention OUT.png]\n");
        return 2;
    }
    if (vit_model_load_file_ex(&m, argv[1], &lo) != VIT_OK) return fail(argv[1]);
    if (m.kind != VIT_KIND_VIT || m.cfg.num_classes < 1 || (png && !m.cfg.class_token)) {
        fprintf(stderr, "02_classify: %s is not a ViT classifier%s\n", argv[1],
                png ? " with a class token (the rollout is its attention)" : "");
        return 1;
    }
    /* Images as the file asks; a crop other than the model's size (transformers' DINOv2)
       resizes its position embedding. */
    if (vit_model_preprocess(&m, &pp) != VIT_OK ||
        (pp.crop != m.cfg.image_size && vit_model_set_image_size(&m, pp.crop) != VIT_OK))
        return fail(argv[1]);
    show = pp; /* the same crop, left in [0, 1] and drawn at least 224 pixels wide */
    k = (224 + pp.crop - 1) / pp.crop;
    show.crop *= k, show.resize *= k;
    show.mean[0] = show.mean[1] = show.mean[2] = 0.0f;
    show.std[0] = show.std[1] = show.std[2] = 1.0f;
    /* The arena: a counting pass (decode, preprocess, the forward's size),
       plus the rollout's row and scratch (three T x T matrices, T sums, a
       ranking of T x T entries). */
    G = m.cfg.image_size / m.cfg.patch_size;
    skip = vit_model_prefix_tokens(&m) - 1; /* registers or a distillation token before the patches */
    T = G * G + skip + 1;
    extra =
        (size_t)T * sizeof(float) + (size_t)T * T * (3 * sizeof(float) + 8) + (size_t)T * sizeof(float) + 8 * VIT_ALIGN;
    memset(&opts, 0, sizeof opts);
    opts.attn = att = png ? (vit_tensor *)calloc((size_t)m.cfg.depth, sizeof(vit_tensor)) : NULL;
    if (png && !att) {
        fprintf(stderr, "02_classify: out of memory\n");
        return 1;
    }
    vit_arena_init(&a, NULL, 0);
    if (vit_image_load(&a, argv[2], m.cfg.in_channels, &img) != VIT_OK ||
        vit_image_preprocess(&a, &img, &pp, &x) != VIT_OK || vit_image_preprocess(&a, &img, &show, &crop) != VIT_OK ||
        vit_model_memory(&m, &x, &opts, &fwd) != VIT_OK ||
        vit_arena_init_alloc(&a, a.peak + fwd + (png ? extra : 0) + 4 * VIT_ALIGN) != VIT_OK)
        return fail(argv[2]);
    if (vit_image_load(&a, argv[2], m.cfg.in_channels, &img) != VIT_OK ||
        vit_image_preprocess(&a, &img, &pp, &x) != VIT_OK || vit_image_preprocess(&a, &img, &show, &crop) != VIT_OK ||
        vit_model_forward(&m, &a, &x, &opts, &logits) != VIT_OK)
        return fail(argv[2]);
    /* Softmax of the logits in place, then the top k. */
    vit_k_softmax(logits.data, logits.data, 1, m.cfg.num_classes);
    for (k = 0; k < top && k < m.cfg.num_classes; k++) {
        int best = 0;
        for (i = 1; i < m.cfg.num_classes; i++)
            if (logits.data[i] > logits.data[best]) best = i;
        if (vit_model_label(&m, best)) printf("%5.1f%%  %s\n", 100.0f * logits.data[best], vit_model_label(&m, best));
        else printf("%5.1f%%  class %d\n", 100.0f * logits.data[best], best);
        logits.data[best] = -1.0f;
    }
    if (png) {
        float *mask = (float *)vit_arena_alloc(&a, (size_t)(T - 1) * sizeof(float));
        vit_rollout_params rp = {VIT_FUSE_MAX, 0.9f, 0};
        crop = vit_tensor_view(&crop, 0); /* (C, S, S): what the model saw */
        if (!mask || vit_map_rollout(&a, att, m.cfg.depth, 0, &rp, mask) != VIT_OK ||
            vit_png_overlay(png, &crop, mask + skip, G, G, 0.5f) != VIT_OK)
            return fail(png);
        printf("attention rollout (max fusion, discard 0.9) over the classified crop written to %s\n", png);
    }
    free(att);
    vit_arena_free(&a);
    vit_model_free(&m);
    return 0;
}

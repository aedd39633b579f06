/* Classify an image with any exported ViT: top-k classes with labels, and
   optionally the class token's attention rollout as a PNG overlay.
     02_classify MODEL IMAGE [--top K] [--labels FILE] [--attention OUT.png]
   Preprocessing follows the file: models trained by tools/train_fashion.py
   record their input size and mean/std; others get torchvision's ViT
   transform (resize 256/224 of the input size, centre crop, ImageNet
   mean/std). Labels come from --labels (one per line) or the file's
   "labels" metadata. */
#define VIT_IMPLEMENTATION
#include "vit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *label_of(const char *list, int k, char *buf, size_t n) {
    const char *p = list;
    size_t len;
    while (p && k-- > 0) p = strpbrk(p, ",\n") ? strpbrk(p, ",\n") + 1 : NULL;
    if (!p) { snprintf(buf, n, "class %d", k); return buf; }
    len = strcspn(p, ",\n");
    snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), p);
    return buf;
}

int main(int argc, char **argv) {
    const char *labels = NULL, *png = NULL, *mean_s, *std_s;
    static char label_file[1 << 16], name[128];
    int top = 5, i, k, depth;
    vit_model m;
    vit_arena a;
    vit_tensor img, x, logits, *att;
    vit_preprocess pp;
    vit_forward_opts opts;
    float *prob;
    if (argc < 3) {
        fprintf(stderr, "usage: 02_classify MODEL IMAGE [--top K] [--labels FILE] [--attention OUT.png]\n");
        return 2;
    }
    for (i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--top")) top = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--attention")) png = argv[i + 1];
        else if (!strcmp(argv[i], "--labels")) {
            FILE *f = fopen(argv[i + 1], "r");
            size_t n = f ? fread(label_file, 1, sizeof label_file - 1, f) : 0;
            if (f) fclose(f);
            label_file[n] = 0;
            labels = label_file;
        }
    }
    if (vit_model_load_file(&m, argv[1]) != VIT_OK || m.kind != VIT_KIND_VIT || !m.cfg.num_classes) {
        fprintf(stderr, "02_classify: %s\n", m.kind != VIT_KIND_VIT ? "not a ViT classifier" : vit_last_error());
        return 1;
    }
    if (!labels) labels = vit_model_meta(&m, "labels");
    /* Preprocessing: the file's own numbers when it has them. */
    memset(&pp, 0, sizeof pp);
    mean_s = vit_model_meta(&m, "input_mean");
    std_s = vit_model_meta(&m, "input_std");
    pp.crop = m.cfg.image_size;
    pp.resize = mean_s ? m.cfg.image_size : m.cfg.image_size * 256 / 224;
    for (i = 0; mean_s && std_s && i < 3; i++) { /* "0.286" or "0.485,0.456,0.406" */
        char *e1, *e2;
        pp.mean[i] = (float)strtod(mean_s, &e1);
        pp.std[i] = (float)strtod(std_s, &e2);
        if (*e1 == ',') mean_s = e1 + 1;
        if (*e2 == ',') std_s = e2 + 1;
    }
    depth = m.cfg.depth;
    if (vit_arena_init_alloc(&a, 64u << 20) != VIT_OK ||
        vit_image_load(&a, argv[2], m.cfg.in_channels, &img) != VIT_OK ||
        vit_image_preprocess(&a, &img, &pp, &x) != VIT_OK) {
        fprintf(stderr, "02_classify: %s\n", vit_last_error());
        return 1;
    }
    att = (vit_tensor *)vit_arena_alloc(&a, (size_t)depth * sizeof(vit_tensor));
    memset(&opts, 0, sizeof opts);
    opts.attn = png ? att : NULL;
    if (vit_model_forward(&m, &a, &x, &opts, &logits) != VIT_OK) {
        fprintf(stderr, "02_classify: %s\n", vit_last_error());
        return 1;
    }
    /* Softmax of the logits, then the top k. */
    prob = (float *)vit_arena_alloc(&a, (size_t)m.cfg.num_classes * sizeof(float));
    vit_k_softmax(prob, logits.data, 1, m.cfg.num_classes);
    for (k = 0; k < top && k < m.cfg.num_classes; k++) {
        int best = 0;
        for (i = 1; i < m.cfg.num_classes; i++)
            if (prob[i] > prob[best]) best = i;
        printf("%5.1f%%  %s\n", 100.0f * prob[best], label_of(labels, best, name, sizeof name));
        prob[best] = -1.0f;
    }
    if (png) {
        int G = m.cfg.image_size / m.cfg.patch_size;
        float *mask = (float *)vit_arena_alloc(&a, (size_t)G * G * sizeof(float));
        vit_rollout_params rp = {VIT_FUSE_MAX, 0.9f, 0};
        if (vit_map_rollout(&a, att, depth, 0, &rp, mask) != VIT_OK || vit_png_overlay(png, &img, mask, G, G, 0.5f) != VIT_OK) {
            fprintf(stderr, "02_classify: %s\n", vit_last_error());
            return 1;
        }
        printf("attention rollout (max fusion, discard 0.9) written to %s\n", png);
    }
    vit_arena_free(&a);
    vit_model_free(&m);
    return 0;
}

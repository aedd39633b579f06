/* Fashion-MNIST with a model trained by tools/train_fashion.py.
     04_fashion MODEL DATADIR [--eval] [--preds OUT.npy] [--count N] [--show N --out DIR]
   DATADIR holds the uncompressed test set (t10k-images-idx3-ubyte,
   t10k-labels-idx1-ubyte; `make demo` prepares it from Debian's
   dataset-fashion-mnist). --eval classifies all 10,000 images and prints
   the accuracy; --preds saves the predicted classes (float32 .npy) for
   tools/check_fashion.py to compare with PyTorch; --count N takes the first
   N images only (a multiple of 100: emulated CPUs are slow); --show prints the first N
   predictions and, for ViTs, writes DIR/fashion_<i>.png: the attention
   rollout and each last-layer head over the image. */
#define VIT_IMPLEMENTATION
#include "vit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *labels[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

static unsigned char *read_idx(const char *dir, const char *name, size_t want) {
    char *path = (char *)malloc(strlen(dir) + strlen(name) + 2); /* DIR/name, sized from them */
    unsigned char *buf = (unsigned char *)malloc(want);
    FILE *f = NULL;
    if (path) sprintf(path, "%s/%s", dir, name);
    if (!buf || !path || !(f = fopen(path, "rb")) || fread(buf, 1, want, f) != want) {
        fprintf(stderr, "04_fashion: cannot read %zu bytes of %s/%s\n", want, dir, name);
        exit(1);
    }
    fclose(f);
    free(path);
    return buf;
}

/* Image i as the model's input: (1, 28, 28) normalised for a ViT, 16
   patches of 7x7 for seed 002's classifier, 784 pixels for the MLP. */
static void fill(const vit_model *m, const unsigned char *px, float mean, float stdv, float *dst) {
    int i, p;
    if (m->kind == VIT_KIND_VIT || m->kind == VIT_KIND_MLP)
        for (i = 0; i < 784; i++) dst[i] = (px[i] / 255.0f - mean) / stdv;
    else /* row-major 4x4 grid of 7x7 patches, as the seed's unfold */
        for (p = 0; p < 16; p++)
            for (i = 0; i < 49; i++)
                dst[p * 49 + i] = (px[(p / 4 * 7 + i / 7) * 28 + p % 4 * 7 + i % 7] / 255.0f - mean) / stdv;
}

int main(int argc, char **argv) {
    const char *preds_path = NULL, *out = NULL, *s;
    int eval = 0, show = 0, i, b, n = 10000, batch = 100, correct = 0;
    float mean = 0.0f, stdv = 1.0f;
    unsigned char *images, *truth;
    vit_model m;
    vit_arena a;
    vit_tensor x, y, preds, att[64];
    vit_forward_opts opts;
    int32_t shape[4];
    if (argc < 3) {
        fprintf(stderr,
                "usage: 04_fashion MODEL DATADIR [--eval] [--preds OUT.npy] [--count N] [--show N --out DIR]\n");
        return 2;
    }
    for (i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--eval")) eval = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--preds")) preds_path = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--show")) show = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--count")) {
            n = atoi(argv[++i]);
            if (n < batch || n > 10000 || n % batch) {
                fprintf(stderr, "04_fashion: --count %s: a multiple of %d in %d..10000\n", argv[i], batch, batch);
                return 2;
            }
        }
        else if (i + 1 < argc && !strcmp(argv[i], "--out")) out = argv[++i];
    }
    if (vit_model_load_file(&m, argv[1]) != VIT_OK) { fprintf(stderr, "04_fashion: %s\n", vit_last_error()); return 1; }
    if ((s = vit_model_meta(&m, "input_mean"))) mean = (float)atof(s);
    if ((s = vit_model_meta(&m, "input_std"))) stdv = (float)atof(s);
    images = read_idx(argv[2], "t10k-images-idx3-ubyte", 16 + 784 * 10000) + 16;
    truth = read_idx(argv[2], "t10k-labels-idx1-ubyte", 8 + 10000) + 8;
    shape[0] = batch;
    if (m.kind == VIT_KIND_VIT) { shape[1] = 1; shape[2] = shape[3] = 28; }
    else if (m.kind == VIT_KIND_MLP) shape[1] = 784;
    else { shape[1] = 16; shape[2] = 49; }
    if (vit_arena_init_alloc(&a, 256u << 20) != VIT_OK) return 1;
    if (vit_tensor_init(&a, &x, m.kind == VIT_KIND_VIT ? 4 : m.kind == VIT_KIND_MLP ? 2 : 3, shape) != VIT_OK) return 1;
    shape[0] = n;
    vit_tensor_init(&a, &preds, 1, shape);
    memset(&opts, 0, sizeof opts);
    if (m.kind == VIT_KIND_VIT && m.cfg.depth <= 64 && show) opts.attn = att;
    if (!eval && !preds_path) n = show < batch ? show : batch;
    for (b = 0; b < n; b += batch) {
        size_t mark = vit_arena_mark(&a);
        for (i = 0; i < batch; i++) fill(&m, images + (size_t)(b + i) * 784, mean, stdv, x.data + (size_t)i * 784);
        if (vit_model_forward(&m, &a, &x, b == 0 ? &opts : NULL, &y) != VIT_OK) {
            fprintf(stderr, "04_fashion: %s\n", vit_last_error());
            return 1;
        }
        for (i = 0; i < batch && b + i < n; i++) {
            const float *l = y.data + (size_t)i * 10;
            int k, best = 0;
            for (k = 1; k < 10; k++) best = l[k] > l[best] ? k : best;
            preds.data[b + i] = (float)best;
            correct += best == truth[b + i];
            if (b == 0 && i < show) {
                float p[10];
                vit_k_softmax(p, l, 1, 10);
                printf("image %d: %-11s %5.1f%%  (true: %s)%s\n", i, labels[best], 100.0f * p[best], labels[truth[i]],
                       best == truth[i] ? "" : "  <- wrong");
            }
        }
        if (b == 0 && opts.attn && out) {
            /* Rollout first, then each head of the last layer, over the image. */
            int G = m.cfg.image_size / m.cfg.patch_size, NH = m.cfg.heads, h;
            float *maps = (float *)vit_arena_alloc(&a, (size_t)(NH + 1) * G * G * sizeof(float));
            vit_rollout_params rp = {VIT_FUSE_MEAN, 0.0f, 0};
            vit_tensor img;
            int32_t ishape[3] = {1, 28, 28};
            char *path = (char *)malloc(strlen(out) + 32); /* DIR/fashion_<i>.png, sized from DIR */
            if (!path) return 1;
            vit_tensor_init(&a, &img, 3, ishape);
            for (i = 0; i < show && i < batch; i++) {
                int k;
                for (k = 0; k < 784; k++) img.data[k] = images[(size_t)i * 784 + k] / 255.0f;
                vit_map_rollout(&a, att, m.cfg.depth, i, &rp, maps);
                for (h = 0; h < NH; h++)
                    vit_map_cls(&att[m.cfg.depth - 1], i, h, VIT_FUSE_MEAN, maps + (size_t)(h + 1) * G * G);
                sprintf(path, "%s/fashion_%d.png", out, i);
                if (vit_png_grid(path, &img, maps, NH + 1, G, G, NH + 1, 168, 0.55f) != VIT_OK) {
                    fprintf(stderr, "04_fashion: %s\n", vit_last_error());
                    return 1;
                }
                printf("  %s: rollout, then the %d heads of layer %d\n", path, NH, m.cfg.depth - 1);
            }
            free(path);
        }
        vit_arena_rewind(&a, mark);
    }
    if (eval) printf("accuracy on %d test images: %.2f%%\n", n, 100.0 * correct / n);
    if (preds_path) {
        preds.shape[0] = n;
        if (vit_npy_save(preds_path, &preds) != VIT_OK) {
            fprintf(stderr, "04_fashion: %s\n", vit_last_error());
            return 1;
        }
    }
    free(images - 16);
    free(truth - 8);
    vit_arena_free(&a);
    vit_model_free(&m);
    return 0;
}

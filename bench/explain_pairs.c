/* Why this class: each class's map on two Fashion-MNIST items side by side,
   and how often it points at the right item.
     explain_pairs MODEL DATADIR [--count N] [--show I --out DIR]
   MODEL: models/pairs_vit.safetensors (tools/train_fashion.py --models
   pairs); DATADIR: the uncompressed test set, as for examples/04_fashion.c
   (`make demo-explain` prepares it and runs this). Test composite i is
   PAIRS of tools/train_fashion.py: test image i in the left half, image j
   in the right (rows 14..41 of a 56x56 zero image), where
   j = (7919 i + 4999) % 10000, stepped on while its class is i's.
   --count N (default 1000): the pointing game on composites 0..N-1. For each
   method and each of a composite's two classes, a hit when the class's map
   has more mass on the half holding it than on the other (token maps: the
   left G/2 columns against the right; pixel maps: 28 columns each), taking
   each map's positive part (only gxi and ig are signed). Rollout is not
   class-specific: one map for both classes, at most one hit per composite.
   --show I --out DIR: composite I as DIR/pair_I.png and, per class K,
   DIR/pair_I_K.png: chefer's and grad rollout's maps over it (DIR made if
   missing). */
#define VIT_IMPLEMENTATION
#include "vit.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <direct.h>
#define mkdir(path, mode) _mkdir(path)
#else
#include <sys/stat.h>
#endif

static unsigned char *read_idx(const char *dir, const char *name, size_t want) {
    char *path = (char *)malloc(strlen(dir) + strlen(name) + 2); /* DIR/name, sized from them */
    unsigned char *buf = (unsigned char *)malloc(want);
    FILE *f = NULL;
    if (path) sprintf(path, "%s/%s", dir, name);
    if (!buf || !path || !(f = fopen(path, "rb")) || fread(buf, 1, want, f) != want) {
        fprintf(stderr, "explain_pairs: cannot read %zu bytes of %s/%s\n", want, dir, name);
        exit(1);
    }
    fclose(f);
    free(path);
    return buf;
}

/* Composite i's pixels in [0, 1] (56 * 56) into img; its classes into cls[0] (left), cls[1] (right). */
static void compose(const unsigned char *images, const unsigned char *labels, int i, float *img, int cls[2]) {
    int j = (int)((7919L * i + 4999) % 10000), r, c;
    while (labels[j] == labels[i]) j = (j + 1) % 10000;
    memset(img, 0, 56 * 56 * sizeof(float));
    for (r = 0; r < 28; r++)
        for (c = 0; c < 28; c++) {
            img[(14 + r) * 56 + c] = images[(size_t)i * 784 + r * 28 + c] / 255.0f;
            img[(14 + r) * 56 + 28 + c] = images[(size_t)j * 784 + r * 28 + c] / 255.0f;
        }
    cls[0] = labels[i];
    cls[1] = labels[j];
}

static int die(void) { fprintf(stderr, "explain_pairs: %s\n", vit_last_error()); return 1; }

int main(int argc, char **argv) {
    const char *out = NULL, *s;
    char *path = NULL;
    int count = 1000, show = -1, i, k, side, top2 = 0, hits[VIT_METHOD_COUNT] = {0}, cls[2];
    float mean = 0.0f, stdv = 1.0f, prob[2], *map;
    unsigned char *images, *labels;
    size_t bytes = 0, need;
    vit_model m;
    vit_arena act;
    vit_tensor x, img, logits;
    vit_explain_params ep;
    int32_t shape[4] = {1, 1, 56, 56};
    if (argc < 3) {
        fprintf(stderr, "usage: explain_pairs MODEL DATADIR [--count N] [--show I --out DIR]\n");
        return 2;
    }
    for (i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--count")) count = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--show")) show = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--out")) out = argv[i + 1];
    }
    if (count < 0 || count > 10000 || show >= 10000 || (show >= 0) != (out != NULL)) {
        fprintf(stderr, "explain_pairs: --count in 0..10000; --show I (0..9999) and --out DIR go together\n");
        return 2;
    }
    if (out && mkdir(out, 0777) != 0 && errno != EEXIST)
        return fprintf(stderr, "explain_pairs: %s: cannot make the folder (%s)\n", out, strerror(errno)), 1;
    if (out && !(path = (char *)malloc(strlen(out) + 32))) return 1; /* DIR/pair_<i>_<k>.png, sized from DIR */
    if (vit_model_load_file(&m, argv[1]) != VIT_OK) return die();
    if (m.kind != VIT_KIND_VIT || m.cfg.image_size != 56 || m.cfg.in_channels != 1 || m.cfg.num_classes != 10) {
        fprintf(stderr, "explain_pairs: %s is not a 1-channel 56x56 ViT with 10 classes\n", argv[1]);
        return 2;
    }
    if ((s = vit_model_meta(&m, "input_mean"))) mean = (float)atof(s);
    if ((s = vit_model_meta(&m, "input_std"))) stdv = (float)atof(s);
    images = read_idx(argv[2], "t10k-images-idx3-ubyte", 16 + 784 * 10000);
    labels = read_idx(argv[2], "t10k-labels-idx1-ubyte", 8 + 10000);

    /* one arena: the input, the composite, a map, and the largest method's scratch (or a forward pass) */
    memset(&ep, 0, sizeof ep);
    vit_arena_init(&act, NULL, 0);
    vit_tensor_init(&act, &x, 4, shape);
    if (vit_model_memory(&m, &x, NULL, &bytes) != VIT_OK) return die();
    for (k = 0; k < VIT_METHOD_COUNT; k++) {
        if (vit_explain_memory(&m, &x, (vit_method)k, &ep, &need) != VIT_OK) return die();
        bytes = need > bytes ? need : bytes;
    }
    if (vit_arena_init_alloc(&act, bytes + 4 * 56 * 56 * sizeof(float) + 8 * VIT_ALIGN) != VIT_OK) return die();
    vit_tensor_init(&act, &x, 4, shape);
    vit_tensor_init(&act, &img, 3, shape + 1);
    map = (float *)vit_arena_alloc(&act, 2 * 56 * 56 * sizeof(float)); /* two maps: the demo's pair */

    for (i = 0; i < count || i <= show; i++) {
        int G = m.cfg.image_size / m.cfg.patch_size, best = 0, second = -1;
        size_t mark = vit_arena_mark(&act);
        compose(images + 16, labels + 8, i, img.data, cls);
        for (k = 0; k < 56 * 56; k++) x.data[k] = (img.data[k] - mean) / stdv;

        /* the model's probabilities for the two classes (sigmoid: trained multi-label), its top 2 */
        if (vit_model_forward(&m, &act, &x, NULL, &logits) != VIT_OK) return die();
        for (k = 1; k < 10; k++) best = logits.data[k] > logits.data[best] ? k : best;
        for (k = 0; k < 10; k++)
            if (k != best && (second < 0 || logits.data[k] > logits.data[second])) second = k;
        for (side = 0; side < 2; side++) prob[side] = 1.0f / (1.0f + expf(-logits.data[cls[side]]));
        top2 += i < count && (best == cls[0] || best == cls[1]) && (second == cls[0] || second == cls[1]);
        vit_arena_rewind(&act, mark);

        /* the pointing game: each method, each class */
        if (i < count)
            for (k = 0; k < VIT_METHOD_COUNT; k++)
                for (side = 0; side < 2; side++) {
                    int n = vit_explain_size(&m, (vit_method)k), w = n == G * G ? G : 56, p;
                    double mass[2] = {0.0, 0.0};
                    if (vit_explain(&m, &act, &x, (vit_method)k, cls[side], NULL, &ep, map) != VIT_OK) return die();
                    for (p = 0; p < n; p++) mass[p % w >= w / 2] += map[p] > 0.0f ? map[p] : 0.0f;
                    hits[k] += mass[side] > mass[1 - side];
                }

        /* the demo: the composite, each class's maps over it */
        if (i == show) {
            sprintf(path, "%s/pair_%d.png", out, i);
            if (vit_png_image(path, &img) != VIT_OK) return die();
            printf("%s: test composite %d: %s (left), %s (right)\n", path, i, vit_model_label(&m, cls[0]),
                   vit_model_label(&m, cls[1]));
            for (side = 0; side < 2; side++) {
                if (vit_explain(&m, &act, &x, VIT_METHOD_CHEFER, cls[side], NULL, &ep, map) != VIT_OK ||
                    vit_explain(&m, &act, &x, VIT_METHOD_GRAD_ROLLOUT, cls[side], NULL, &ep, map + G * G) != VIT_OK)
                    return die();
                sprintf(path, "%s/pair_%d_%d.png", out, i, cls[side]);
                if (vit_png_grid(path, &img, map, 2, G, G, 2, 224, 0.55f) != VIT_OK) return die();
                printf("%s: class %d %s (%s half, %.1f%%): chefer | grad-rollout\n", path, cls[side],
                       vit_model_label(&m, cls[side]), side ? "right" : "left", 100.0f * prob[side]);
            }
        }
    }
    if (count) {
        printf("%d test composites: both classes in the top 2: %d (%.1f%%)\n", count, top2, 100.0 * top2 / count);
        printf("pointing game, each composite's two classes:\n%-13s %11s %8s\n", "method", "hits/total", "fraction");
        for (k = 0; k < VIT_METHOD_COUNT; k++)
            printf("%-13s %5d/%-5d %8.3f\n", vit_method_name((vit_method)k), hits[k], 2 * count,
                   (double)hits[k] / (2 * count));
    }
    free(path);
    free(images);
    free(labels);
    vit_arena_free(&act);
    vit_model_free(&m);
    return 0;
}

/* vit - command-line front end of vit.h.

     vit info MODEL.safetensors [LOAD]
     vit run  MODEL.safetensors INPUT.npy OUTPUT.npy [--threads N] [--features | --tokens] [LOAD]
     vit classify MODEL.safetensors IMAGE [--top K] [--mean A,B,C] [--std A,B,C] [--resize N] [LOAD]
     vit input-shape MODEL.safetensors [B [N [W]]]
   LOAD: [--heads N] [--config config.json] [--labels FILE] [--image-size N]

   `run` works for every kind tools/export.py writes (whole ViTs and single
   modules): float32 .npy in, float32 .npy out. This contract is stable.
   MODEL may also be a ViT checkpoint from timm, Hugging Face transformers
   or torchvision without vit.h metadata: a config.json beside it is read,
   or give --config, or --heads for a width that is not a standard one.
   `classify` preprocesses as torchvision's ImageClassification transform
   (resize the short side, centre crop to the model's size, normalise): the
   file's input_mean/input_std and timm's crop_pct when it has them, else
   ImageNet's mean/std and a 256/224 resize; the options override.
   --image-size runs a ViT at another input size: its position embedding
   is resized as the library the file came from does it (torchvision,
   timm or transformers; vit_model_set_image_size). */
#define VIT_IMPLEMENTATION
#include "vit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void) {
    fprintf(stderr,
            "usage: vit info MODEL.safetensors [LOAD]\n"
            "       vit run MODEL.safetensors INPUT.npy OUTPUT.npy [--threads N] [--features | --tokens] [LOAD]\n"
            "       vit classify MODEL.safetensors IMAGE [--top K] [--mean A,B,C] [--std A,B,C] [--resize N] [LOAD]\n"
            "       vit input-shape MODEL.safetensors [B [N [W]]]   (the input shape for B items; N tokens or height, W width where free)\n"
            "       vit version\n"
            "LOAD: [--heads N] [--config config.json] [--labels FILE] (checkpoints without vit.h metadata; labels for any ViT)\n"
            "      [--image-size N] (a ViT at another input size: its position embedding resized)\n");
    return 2;
}

static int image_size; /* --image-size, 0: the model's own */

/* Takes argv[*i] (and its value) if it is a load option; 1 taken, 0 not, -1 bad. */
static int load_arg(int argc, char **argv, int *i, vit_load_opts *o) {
    const char *a = argv[*i];
    if (strcmp(a, "--heads") && strcmp(a, "--config") && strcmp(a, "--labels") && strcmp(a, "--image-size")) return 0;
    if (*i + 1 >= argc) return -1;
    (*i)++;
    if (!strcmp(a, "--heads")) return (o->heads = atoi(argv[*i])) > 0 ? 1 : -1;
    if (!strcmp(a, "--image-size")) return (image_size = atoi(argv[*i])) > 0 ? 1 : -1;
    if (!strcmp(a, "--config")) o->config_path = argv[*i];
    else o->labels_path = argv[*i];
    return 1;
}

static int fail(vit_result r) {
    fprintf(stderr, "vit: %s (%s)\n", vit_last_error(), vit_result_string(r));
    return 1;
}

/* vit_model_load_file_ex, then --image-size if given. */
static vit_result load_model(vit_model *m, const char *path, const vit_load_opts *o) {
    vit_result r = vit_model_load_file_ex(m, path, o);
    if (r == VIT_OK && image_size > 0 && (r = vit_model_set_image_size(m, image_size)) != VIT_OK) vit_model_free(m);
    return r;
}

static int cmd_info(const char *path, const vit_load_opts *o) {
    vit_model m;
    char text[4096];
    vit_result r = load_model(&m, path, o);
    if (r != VIT_OK) return fail(r);
    vit_model_describe(&m, text, sizeof text);
    printf("%s: %s", path, text);
    vit_model_free(&m);
    return 0;
}

/* The input shape the model takes for B items, n tokens (or height) and
   width w where its kind leaves them free: one line of sizes. */
static int cmd_input_shape(const char *path, int argc, char **argv, const vit_load_opts *o) {
    vit_model m;
    int32_t shape[VIT_MAX_DIMS], ndim, i, v[3] = {1, 16, 16};
    vit_result r;
    for (i = 0; i < argc && i < 3; i++)
        if ((v[i] = atoi(argv[i])) < 1) return usage();
    if ((r = load_model(&m, path, o)) != VIT_OK) return fail(r);
    r = vit_model_input_shape(&m, v[0], v[1], v[2], &ndim, shape);
    vit_model_free(&m);
    if (r != VIT_OK) return fail(r);
    for (i = 0; i < ndim; i++) printf(i ? " %d" : "%d", (int)shape[i]);
    printf("\n");
    return 0;
}

static int cmd_run(const char *model_path, const char *in_path, const char *out_path, int features, int tokens, const vit_load_opts *o) {
    vit_model m;
    vit_arena io, act;
    vit_tensor x, y;
    vit_forward_opts opts;
    size_t bytes;
    vit_result r;
    memset(&opts, 0, sizeof opts);
    opts.features = features;
    opts.tokens = tokens;
    if ((r = load_model(&m, model_path, o)) != VIT_OK) return fail(r);
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

#ifndef VIT_NO_IMAGE
/* "0.5" or "0.485,0.456,0.406" into v[3]; 0 when malformed. */
static int parse3(const char *s, float v[3]) {
    int i;
    for (i = 0; i < 3; i++) {
        char *end;
        v[i] = (float)strtod(s, &end);
        if (end == s) return 0;
        if (*end == ',') s = end + 1;
        else if (*end) return 0;
    }
    return 1;
}

static int cmd_classify(int argc, char **argv) {
    vit_model m;
    vit_arena a;
    vit_tensor img, x, logits;
    vit_preprocess pp;
    vit_load_opts o;
    vit_result r;
    const char *s, *mean = NULL, *std = NULL;
    float *prob;
    int i, k, top = 5, resize = 0, taken;
    char name[32];
    memset(&o, 0, sizeof o);
    for (i = 4; i < argc; i++) {
        if ((taken = load_arg(argc, argv, &i, &o)) < 0) return usage();
        if (taken) continue;
        if (i + 1 >= argc) return usage();
        if (!strcmp(argv[i], "--top")) top = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mean")) mean = argv[++i];
        else if (!strcmp(argv[i], "--std")) std = argv[++i];
        else if (!strcmp(argv[i], "--resize")) resize = atoi(argv[++i]);
        else return usage();
    }
    if (top < 1 || resize < 0) return usage();
    if ((r = load_model(&m, argv[2], &o)) != VIT_OK) return fail(r);
    if (m.kind != VIT_KIND_VIT || m.cfg.num_classes < 1) {
        fprintf(stderr, "vit: %s is not a ViT classifier (%s%s)\n", argv[2], vit_kind_name(m.kind),
                m.kind == VIT_KIND_VIT ? " without a head" : "");
        vit_model_free(&m);
        return 1;
    }
    /* Preprocessing: the options, else the file's numbers, else torchvision's ViT transform. */
    memset(&pp, 0, sizeof pp);
    pp.crop = m.cfg.image_size;
    if (!mean) mean = vit_model_meta(&m, "input_mean");
    if (!std) std = vit_model_meta(&m, "input_std");
    if ((mean && !parse3(mean, pp.mean)) || (std && !parse3(std, pp.std)) || (!mean != !std)) {
        fprintf(stderr, "vit: --mean and --std take one or three numbers each, and go together\n");
        vit_model_free(&m);
        return 2;
    }
    if (resize) pp.resize = resize;
    else if ((s = vit_model_meta(&m, "input_crop_pct")) && atof(s) > 0.0) pp.resize = (int32_t)(m.cfg.image_size / atof(s)); /* timm */
    else pp.resize = vit_model_meta(&m, "input_mean") ? m.cfg.image_size : m.cfg.image_size * 256 / 224;
    if (pp.resize < m.cfg.image_size) pp.resize = m.cfg.image_size;
    /* The decoded image's size from a counting load; resizing takes less
       than another copy of it (plus the small crop); then the forward's. */
    {
        vit_arena count;
        int32_t shape[4] = {1, 0, 0, 0};
        vit_tensor probe;
        size_t bytes = 0;
        vit_arena_init(&count, NULL, 0);
        shape[1] = m.cfg.in_channels;
        shape[2] = shape[3] = m.cfg.image_size;
        probe.ndim = 4;
        memcpy(probe.shape, shape, sizeof shape);
        probe.name = NULL;
        probe.data = NULL;
        if ((r = vit_image_load(&count, argv[3], m.cfg.in_channels, &img)) == VIT_OK && (r = vit_model_memory(&m, &probe, NULL, &bytes)) == VIT_OK)
            r = vit_arena_init_alloc(&a, 3 * count.peak + ((size_t)16 << 20) + bytes + (size_t)m.cfg.num_classes * sizeof(float));
        if (r != VIT_OK) { vit_model_free(&m); return fail(r); }
    }
    prob = (float *)vit_arena_alloc(&a, (size_t)m.cfg.num_classes * sizeof(float));
    if ((r = vit_image_load(&a, argv[3], m.cfg.in_channels, &img)) != VIT_OK || (r = vit_image_preprocess(&a, &img, &pp, &x)) != VIT_OK ||
        (r = vit_model_forward(&m, &a, &x, NULL, &logits)) != VIT_OK) {
        vit_arena_free(&a);
        vit_model_free(&m);
        return fail(r);
    }
    /* Softmax of the logits, then the top k. */
    vit_k_softmax(prob, logits.data, 1, m.cfg.num_classes);
    for (k = 0; k < top && k < m.cfg.num_classes; k++) {
        int best = 0;
        for (i = 1; i < m.cfg.num_classes; i++)
            if (prob[i] > prob[best]) best = i;
        snprintf(name, sizeof name, "class %d", best);
        printf("%6.2f%%  %4d  %s\n", 100.0f * prob[best], best, vit_model_label(&m, best) ? vit_model_label(&m, best) : name);
        prob[best] = -1.0f;
    }
    vit_arena_free(&a);
    vit_model_free(&m);
    return 0;
}
#endif

int main(int argc, char **argv) {
    int i, features = 0, tokens = 0, taken;
    vit_load_opts o;
    memset(&o, 0, sizeof o);
    if (argc >= 2 && !strcmp(argv[1], "version")) {
        printf("vit.h %s\n", vit_version());
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "input-shape")) return cmd_input_shape(argv[2], argc - 3, argv + 3, &o);
    if (argc >= 3 && !strcmp(argv[1], "info")) {
        for (i = 3; i < argc; i++)
            if (load_arg(argc, argv, &i, &o) != 1) return usage();
        return cmd_info(argv[2], &o);
    }
#ifndef VIT_NO_IMAGE
    if (argc >= 4 && !strcmp(argv[1], "classify")) return cmd_classify(argc, argv);
#endif
    if (argc >= 5 && !strcmp(argv[1], "run")) {
        for (i = 5; i < argc; i++) {
            if ((taken = load_arg(argc, argv, &i, &o)) < 0) return usage();
            else if (taken) continue;
            else if (!strcmp(argv[i], "--features")) features = 1;
            else if (!strcmp(argv[i], "--tokens")) tokens = 1;
            else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
                char *end;
                long n = strtol(argv[++i], &end, 10);
                if (*end || end == argv[i] || n < 1 || n > VIT_MAX_THREADS || vit_set_threads((int)n) != VIT_OK) {
                    fprintf(stderr, "vit: --threads %s: expected a count in 1..%d\n", argv[i], VIT_MAX_THREADS);
                    return 2;
                }
            } else return usage();
        }
        return cmd_run(argv[2], argv[3], argv[4], features, tokens, &o);
    }
    return usage();
}

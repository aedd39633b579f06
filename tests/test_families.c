/* The ViT families as timm and transformers save them (DINOv2 with and
   without registers and SwiGLU, CLIP, SigLIP, DeiT distilled, qk-norm, no
   class token; tools/families_reference.py writes them from the libraries'
   own classes): each loads from its own names and config.json, and gives
   the library's logits, pooled features and tokens at batch 1 and 3, within
   1e-4 relative to max(1, |ref|), with vit_model_memory exact; where
   MANIFEST gives a second size, the same at that size, the position
   embedding resampled as the library does it.
   Usage: test_families [DIR]   (default tests/fixtures/families). */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "check.h"

#include <string.h>

static int exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* One output of m on x (opts as given) against the file `want`. */
static void check_output(const vit_model *m, const vit_tensor *x, const vit_forward_opts *o, const char *want_path, const char *label) {
    vit_arena io, act;
    vit_tensor want, y;
    size_t bytes;
    char a[64], b[64];
    if (vit_arena_init_alloc(&io, 16u << 20) != VIT_OK) return;
    if (vit_npy_load(&io, want_path, &want) != VIT_OK) {
        expect(0, label);
        printf("  %s: %s\n", want_path, vit_last_error());
    } else if (vit_model_memory(m, x, o, &bytes) != VIT_OK || vit_arena_init_alloc(&act, bytes) != VIT_OK) {
        expect(0, label);
        printf("  memory: %s\n", vit_last_error());
    } else {
        if (vit_model_forward(m, &act, x, o, &y) != VIT_OK) {
            expect(0, label);
            printf("  forward: %s\n", vit_last_error());
        } else if (vit_tensor_numel(&y) != vit_tensor_numel(&want)) {
            expect(0, label);
            printf("  output %s, the library's %s\n", vit_tensor_shape_str(&y, a, sizeof a), vit_tensor_shape_str(&want, b, sizeof b));
        } else {
            expect(check_close(label, y.data, want.data, vit_tensor_numel(&y), 0.0, 1e-4), label);
            expect(act.peak + VIT_ALIGN == bytes, "vit_model_memory is exact");
        }
        vit_arena_free(&act);
    }
    vit_arena_free(&io);
}

/* At image size S (0: none), the position embedding resampled as the
   file's library does it (vit_model_set_image_size): features and tokens. */
static void run_resized(vit_model *m, const char *dir, const char *name, int S) {
    char path[1024], label[400];
    vit_arena io;
    vit_tensor x;
    vit_forward_opts o;
    if (!S) return;
    if (vit_model_set_image_size(m, S) != VIT_OK) {
        expect(0, name);
        printf("  set_image_size %d: %s\n", S, vit_last_error());
        return;
    }
    if (vit_arena_init_alloc(&io, 16u << 20) != VIT_OK) return;
    snprintf(path, sizeof path, "%s/%s.in_s%d.npy", dir, name, S);
    if (vit_npy_load(&io, path, &x) == VIT_OK) {
        memset(&o, 0, sizeof o);
        o.features = 1;
        snprintf(path, sizeof path, "%s/%s.feat_s%d.npy", dir, name, S);
        snprintf(label, sizeof label, "%s pooled features at %dx%d", name, S, S);
        check_output(m, &x, &o, path, label);
        o.features = 0;
        o.tokens = 1;
        snprintf(path, sizeof path, "%s/%s.tokens_s%d.npy", dir, name, S);
        snprintf(label, sizeof label, "%s tokens at %dx%d", name, S, S);
        check_output(m, &x, &o, path, label);
    } else
        expect(0, path);
    vit_arena_free(&io);
}

static void run_case(const char *dir, const char *name, int resize) {
    char path[1024], label[400];
    vit_model m;
    vit_arena io;
    vit_tensor x;
    vit_forward_opts o;
    int b;
    snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, name);
    if (vit_model_load_file(&m, path) != VIT_OK) {
        expect(0, name);
        printf("  load: %s\n", vit_last_error());
        return;
    }
    printf("  %s: %s\n", name, m.inferred ? m.inferred : "(metadata)");
    for (b = 1; b <= 3; b += 2) {
        if (vit_arena_init_alloc(&io, 16u << 20) != VIT_OK) break;
        snprintf(path, sizeof path, "%s/%s.in%d.npy", dir, name, b);
        if (vit_npy_load(&io, path, &x) != VIT_OK) {
            expect(0, path);
            vit_arena_free(&io);
            continue;
        }
        memset(&o, 0, sizeof o);
        snprintf(path, sizeof path, "%s/%s.logits%d.npy", dir, name, b);
        if (exists(path)) {
            snprintf(label, sizeof label, "%s logits, batch %d", name, b);
            check_output(&m, &x, &o, path, label);
        }
        o.features = 1;
        snprintf(path, sizeof path, "%s/%s.feat%d.npy", dir, name, b);
        if (exists(path)) {
            snprintf(label, sizeof label, "%s pooled features, batch %d", name, b);
            check_output(&m, &x, &o, path, label);
        }
        o.features = 0;
        o.tokens = 1;
        snprintf(path, sizeof path, "%s/%s.tokens%d.npy", dir, name, b);
        snprintf(label, sizeof label, "%s tokens, batch %d", name, b);
        check_output(&m, &x, &o, path, label);
        vit_arena_free(&io);
    }
    run_resized(&m, dir, name, resize);
    vit_model_free(&m);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "tests/fixtures/families";
    char path[1024], line[256], name[128];
    FILE *f;
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    if (!(f = fopen(path, "r"))) {
        printf("cannot open %s\n", path);
        return 1;
    }
    while (fgets(line, sizeof line, f)) {
        int size = 0;
        if (sscanf(line, "%127s %d", name, &size) >= 1) run_case(dir, name, size);
    }
    fclose(f);
    printf("test_families: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

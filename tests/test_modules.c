/* Every fixture in tests/fixtures/MANIFEST (written by tools/make_fixtures.py
   from the real PyTorch modules) through vit_model_forward: outputs within
   1e-5 (modules) or 1e-4 (whole ViTs) of PyTorch, relative to max(1, |ref|),
   and ViT features likewise; the files in FIXTURE_DIR/legacy, written
   before vit.h 0.2 renamed kinds, namings and keys, to the same outputs.
   Usage: test_modules [FIXTURE_DIR]. */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static int run_case(const char *dir, const char *name, const char *tol_class, int feat, const char *weights) {
    char path[1024], label[256];
    vit_model m;
    vit_arena io, act;
    vit_tensor x, want, y;
    vit_forward_opts opts;
    size_t bytes;
    vit_result r;
    double rtol = strcmp(tol_class, "model") ? 1e-5 : 1e-4;
    int ok = 1, pass;
    snprintf(path, sizeof path, "%s/%s", dir, weights);
    if ((r = vit_model_load_file(&m, path)) != VIT_OK) {
        printf("FAIL %s: load: %s\n", name, vit_last_error());
        return 0;
    }
    if (vit_arena_init_alloc(&io, 64u << 20) != VIT_OK) return 0;
    snprintf(path, sizeof path, "%s/%s.in.npy", dir, name);
    if ((r = vit_npy_load(&io, path, &x)) != VIT_OK) {
        printf("FAIL %s: %s\n", name, vit_last_error());
        ok = 0;
        goto done;
    }
    for (pass = 0; pass < 1 + feat; pass++) {
        memset(&opts, 0, sizeof opts);
        opts.features = pass;
        snprintf(path, sizeof path, "%s/%s.%s.npy", dir, name, pass ? "feat" : "out");
        if ((r = vit_npy_load(&io, path, &want)) != VIT_OK) {
            printf("FAIL %s: %s\n", name, vit_last_error());
            ok = 0;
            break;
        }
        if ((r = vit_model_memory(&m, &x, &opts, &bytes)) != VIT_OK ||
            (r = vit_arena_init_alloc(&act, bytes)) != VIT_OK) {
            printf("FAIL %s: memory: %s\n", name, vit_last_error());
            ok = 0;
            break;
        }
        r = vit_model_forward(&m, &act, &x, &opts, &y);
        snprintf(label, sizeof label, "%s%s", name, pass ? ".feat" : "");
        if (r != VIT_OK) {
            printf("FAIL %s: forward: %s\n", label, vit_last_error());
            ok = 0;
        } else if (vit_tensor_numel(&y) != vit_tensor_numel(&want)) {
            char a[64], b[64];
            printf("FAIL %s: output %s, PyTorch %s\n", label, vit_tensor_shape_str(&y, a, sizeof a),
                   vit_tensor_shape_str(&want, b, sizeof b));
            ok = 0;
        } else if (!check_close(label, y.data, want.data, vit_tensor_numel(&y), 0.0, rtol)) ok = 0;

        /* The counting pass must have sized the arena exactly. */
        if (act.peak + VIT_ALIGN != bytes) {
            printf("FAIL %s: vit_model_memory said %zu bytes, the forward used %zu\n", label, bytes, act.peak);
            ok = 0;
        }
        if (r == VIT_OK) {
            /* Same bits with the default threads (the pool's claims) as
               with 1, and 2 and 3 with its fixed split. */
            static const struct { int n, fixed; } runs[] = {{1, 0}, {2, 1}, {3, 1}};
            size_t n = vit_tensor_numel(&y);
            float *keep = (float *)malloc(n * sizeof(float));
            vit_tensor y1;
            int saved = vit_get_threads(), i;
            memcpy(keep, y.data, n * sizeof(float));
            for (i = 0; i < (int)(sizeof runs / sizeof runs[0]) && ok; i++) {
                vit_arena_reset(&act);
                SET_THREADS(runs[i].n, runs[i].fixed);
                r = vit_model_forward(&m, &act, &x, &opts, &y1);
                if (r != VIT_OK || memcmp(y1.data, keep, n * sizeof(float))) {
                    printf("FAIL %s: %d and %d threads give different bits\n", label, saved, runs[i].n);
                    ok = 0;
                }
            }
            /* An arena sized with one thread, run with three: attention
               takes fewer scratch slots, nothing else changes. */
            if (ok) {
                vit_arena small;
                size_t one = 0;
                SET_THREADS(1, 0);
                r = vit_model_memory(&m, &x, &opts, &one);
                SET_THREADS(3, 1);
                if (r == VIT_OK && (r = vit_arena_init_alloc(&small, one)) == VIT_OK) {
                    r = vit_model_forward(&m, &small, &x, &opts, &y1);
                    if (r != VIT_OK || memcmp(y1.data, keep, n * sizeof(float))) {
                        printf("FAIL %s: arena sized for 1 thread, run with 3: %s\n", label,
                               r ? vit_last_error() : "different bits");
                        ok = 0;
                    }
                    vit_arena_free(&small);
                }
            }
            SET_THREADS(saved, 0);
            free(keep);
        }
        vit_arena_free(&act);
    }
done:
    vit_arena_free(&io);
    vit_model_free(&m);
    return ok;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "tests/fixtures";
    char path[1024], line[512];
    int passed = 0, failed = 0;
    FILE *f, *g;
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    if (!(f = fopen(path, "r"))) {
        printf("cannot open %s\n", path);
        return 1;
    }
    while (fgets(line, sizeof line, f)) {
        char name[128], tol[32], extra[2][160], weights[200];
        int n = sscanf(line, "%127s %31s %159s %159s", name, tol, extra[0], extra[1]), i, feat = 0;
        if (n < 2) continue;
        snprintf(weights, sizeof weights, "%s.safetensors", name);
        for (i = 0; i + 2 < n; i++) {
            if (!strcmp(extra[i], "feat")) feat = 1;
            else if (!strncmp(extra[i], "weights=", 8)) snprintf(weights, sizeof weights, "%s", extra[i] + 8);
        }
        if (run_case(dir, name, tol, feat, weights)) passed++;
        else failed++;
        /* The same case from a file written before vit.h 0.2 (old kind,
           naming and key strings), where one is kept. */
        snprintf(path, sizeof path, "%s/legacy/%s", dir, weights);
        if ((g = fopen(path, "rb")) != NULL) {
            fclose(g);
            snprintf(path, sizeof path, "legacy/%s", weights);
            if (run_case(dir, name, tol, feat, path)) passed++;
            else {
                printf("FAIL %s: the file written before vit.h 0.2 (%s)\n", name, path);
                failed++;
            }
        }
    }
    fclose(f);
    printf("test_modules: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

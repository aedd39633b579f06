/* The cost of one explanation (vit_explain: a forward that keeps what the
   reverse pass reads, the reverse pass, the map) against a forward, per
   method, the two alternating in one run (the machine's noise hits both),
   best of R rounds; and the activation memory each needs beside the
   forward's. The bound: one explanation of ViT-B/16 at B = 1 at
   most 3x a forward.
   Usage: bench_explain MODEL [--threads T] [--rounds R] */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
    vit_model m;
    vit_arena in, fa, ea;
    vit_tensor x, y;
    vit_explain_params p;
    int32_t shape[4], ndim = 0;
    size_t fbytes = 0, ebytes = 0, i;
    int threads = 1, rounds = 3, k, r;
    float *map;
    if (argc < 2) {
        fprintf(stderr, "usage: bench_explain MODEL [--threads T] [--rounds R]\n");
        return 2;
    }
    for (k = 2; k + 1 < argc; k += 2) {
        if (!strcmp(argv[k], "--threads")) threads = atoi(argv[k + 1]);
        else if (!strcmp(argv[k], "--rounds")) rounds = atoi(argv[k + 1]);
    }
    vit_set_threads(threads);
    if (vit_model_load_file(&m, argv[1]) != VIT_OK || vit_model_input_shape(&m, 1, 1, 1, &ndim, shape) != VIT_OK ||
        vit_arena_init_alloc(&in, 1 << 24) != VIT_OK || vit_tensor_init(&in, &x, ndim, shape) != VIT_OK) {
        fprintf(stderr, "bench_explain: %s\n", vit_last_error());
        return 1;
    }
    for (i = 0; i < vit_tensor_numel(&x); i++) x.data[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    memset(&p, 0, sizeof p);
    map = (float *)malloc((size_t)m.cfg.image_size * m.cfg.image_size * sizeof(float));
    if (!map || vit_model_memory(&m, &x, NULL, &fbytes) != VIT_OK || vit_arena_init_alloc(&fa, fbytes) != VIT_OK) {
        fprintf(stderr, "bench_explain: %s\n", vit_last_error());
        return 1;
    }
    printf("%s, B = 1, %d thread%s, best of %d rounds, each explanation beside a forward\n\n", argv[1], threads,
           threads > 1 ? "s" : "", rounds);
    printf("| method | forward (s) | explanation (s) | explanation / forward | activations (MB) | forward's (MB) |\n");
    printf("|---|---|---|---|---|---|\n");
    for (k = 0; k < VIT_METHOD_COUNT; k++) {
        double tf = 1e30, te = 1e30;
        vit_method meth = (vit_method)k;
        p.discard_ratio = meth == VIT_METHOD_ROLLOUT || meth == VIT_METHOD_GRAD_ROLLOUT ? 0.9f : 0.0f;
        if (vit_explain_memory(&m, &x, meth, &p, &ebytes) != VIT_OK || vit_arena_init_alloc(&ea, ebytes) != VIT_OK) {
            fprintf(stderr, "bench_explain: %s\n", vit_last_error());
            return 1;
        }
        for (r = 0; r < rounds; r++) {
            double t0 = now(), t1, t2;
            vit_arena_reset(&fa);
            if (vit_model_forward(&m, &fa, &x, NULL, &y) != VIT_OK) return 1;
            t1 = now();
            if (vit_explain(&m, &ea, &x, meth, 0, NULL, &p, map) != VIT_OK) {
                fprintf(stderr, "bench_explain: %s\n", vit_last_error());
                return 1;
            }
            t2 = now();
            if (t1 - t0 < tf) tf = t1 - t0;
            if (t2 - t1 < te) te = t2 - t1;
        }
        printf("| %s%s | %.3f | %.3f | **%.2f** | %.0f | %.0f |\n", vit_method_name(meth),
               meth == VIT_METHOD_IG ? " (16 steps, 4 a batch)" : "", tf, te, te / tf, (double)ebytes / 1e6,
               (double)fbytes / 1e6);
        vit_arena_free(&ea);
    }
    free(map);
    vit_arena_free(&fa);
    vit_arena_free(&in);
    vit_model_free(&m);
    return 0;
}

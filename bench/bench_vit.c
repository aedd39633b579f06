/* vit.h half of the model bench (bench/compare.py runs it beside PyTorch):
   load time, forward latency (median and min over reps, after a warm-up),
   and peak RSS, for any file tools/export.py writes.
   Usage: bench_vit MODEL --batch B --threads T --reps R [--min-time S]
                    [--input IN.npy] [--output OUT.npy] [--json]
   --input runs on that float32 .npy (its shape is the input's; --batch is
   then ignored), else on a made-up input of the shape the kind takes.
   --min-time keeps timing past R reps until S seconds of forward passes
   have run (at most 100000 reps): a module that takes microseconds needs
   thousands of reps for a stable median. --output saves the last pass's
   output. --stepped runs one pass for each line read from stdin after a
   warm-up (it prints "ready" first), printing each pass's seconds, until
   end of input, then prints as usual over those passes: bench/compare.py
   alternates the engines pass by pass so, with each loaded once, and a
   slow phase of a shared machine lands on all of them alike. */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

int main(int argc, char **argv) {
    int B = 1, threads = 1, reps = 5, json = 0, i, n_done, cap, tokens = 197, stepped = 0;
    double t0, load, *times, min_time = 0.0, spent;
    const char *input = NULL, *output = NULL;
    vit_model m;
    vit_arena act, in;
    vit_tensor x, y;
    int32_t shape[4];
    int32_t ndim;
    size_t bytes, n;
    struct rusage ru;
    vit_result r;
    if (argc < 2) {
        fprintf(
            stderr,
            "usage: bench_vit MODEL [--batch B] [--threads T] [--reps R] [--min-time S] [--tokens N] [--input "
            "IN.npy] [--output OUT.npy] [--stepped] [--json]\n");
        return 2;
    }
    for (i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--stepped")) stepped = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--batch")) B = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--threads")) threads = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--tokens")) tokens = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--min-time")) min_time = atof(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--input")) input = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--output")) output = argv[++i];
        else { fprintf(stderr, "bench_vit: unknown argument %s\n", argv[i]); return 2; }
    }
    if (reps < 1 || reps > 100000 || B < 1 || threads < 1 || min_time < 0.0 || min_time > 600.0) return 2;
    cap = min_time > 0.0 || stepped ? 100000 : reps;
    times = (double *)malloc((size_t)cap * sizeof(double));
    if (!times) return 1;
    if (vit_set_threads(threads) != VIT_OK) {
        fprintf(stderr, "bench_vit: %s\n", vit_last_error());
        return 2;
    }
    t0 = now();
    if ((r = vit_model_load_file(&m, argv[1])) != VIT_OK) {
        fprintf(stderr, "bench_vit: %s\n", vit_last_error());
        return 1;
    }
    load = now() - t0;
    if (input) {
        /* Sized by a counting pass, then loaded for real. */
        vit_arena_init(&in, NULL, 0);
        if ((r = vit_npy_load(&in, input, &x)) != VIT_OK || (r = vit_arena_init_alloc(&in, in.peak)) != VIT_OK ||
            (r = vit_npy_load(&in, input, &x)) != VIT_OK) {
            fprintf(stderr, "bench_vit: %s\n", vit_last_error());
            return 1;
        }
        B = x.shape[0];
    } else {
        /* The input every kind takes: images for ViTs and patch embeddings,
           (B, N, C) token sequences for the rest. */
        shape[0] = B;
        if (m.kind == VIT_KIND_VIT || m.kind == VIT_KIND_PATCH) {
            const vit_patch_params *p = &m.patch;
            ndim = 4; shape[1] = p->in_channels; shape[2] = shape[3] = p->image_size;
        } else {
            ndim = 3; shape[1] = tokens;
            shape[2] = m.kind == VIT_KIND_MHA     ? m.mha.dim
                       : m.kind == VIT_KIND_MLP   ? m.mlp.in_dim
                       : m.kind == VIT_KIND_BLOCK ? m.block.dim
                                                  : 64;
        }
        vit_arena_init(&in, NULL, 0);
        vit_tensor_init(&in, &x, ndim, shape);
        if (vit_arena_init_alloc(&in, in.peak) != VIT_OK || vit_tensor_init(&in, &x, ndim, shape) != VIT_OK) return 1;
        n = vit_tensor_numel(&x);
        for (i = 0; (size_t)i < n; i++) x.data[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    }
    if ((r = vit_model_memory(&m, &x, NULL, &bytes)) != VIT_OK || (r = vit_arena_init_alloc(&act, bytes)) != VIT_OK) {
        fprintf(stderr, "bench_vit: %s\n", vit_last_error());
        return 1;
    }
    spent = 0.0;
    for (i = -1, n_done = 0; i < cap && (stepped || i < reps || spent < min_time); i++) { /* i = -1: the warm-up */
        double t;
        if (stepped && i >= 0) { /* a pass for each line, until end of input */
            char line[64];
            if (i == 0) {
                printf("ready\n");
                fflush(stdout);
            }
            if (!fgets(line, sizeof line, stdin)) break;
        }
        vit_arena_reset(&act);
        t0 = now();
        if ((r = vit_model_forward(&m, &act, &x, NULL, &y)) != VIT_OK) {
            fprintf(stderr, "bench_vit: %s\n", vit_last_error());
            return 1;
        }
        t = now() - t0;
        if (i >= 0) { times[n_done++] = t; spent += t; }
        if (stepped && i >= 0) {
            printf("%.9f\n", t);
            fflush(stdout);
        }
    }
    if (!(reps = n_done)) {
        fprintf(stderr, "bench_vit: --stepped: no line read, no pass timed\n");
        return 1;
    }
    if (output && vit_npy_save(output, &y) != VIT_OK) {
        fprintf(stderr, "bench_vit: %s\n", vit_last_error());
        return 1;
    }
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    getrusage(RUSAGE_SELF, &ru);
    if (json)
        printf(
            "{\"impl\": \"vit.h\", \"load_s\": %.6f, \"median_s\": %.9f, \"min_s\": %.9f, \"peak_rss_mb\": %.1f, "
            "\"act_mb\": %.1f, \"batch\": %d, \"threads\": %d, \"reps\": %d}\n",
            load, times[reps / 2], times[0], ru.ru_maxrss / 1024.0, bytes / 1048576.0, B, threads, reps);
    else
        printf("vit.h: load %.3f s, forward median %.4f s, min %.4f s, peak RSS %.1f MB (activations %.1f MB)\n", load,
               times[reps / 2], times[0], ru.ru_maxrss / 1024.0, bytes / 1048576.0);
    free(times);
    vit_arena_free(&act);
    vit_arena_free(&in);
    vit_model_free(&m);
    return 0;
}

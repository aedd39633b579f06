/* One loaded model shared by several threads, each with its own activation
   arena, gives results identical to a single-threaded run, and repeated
   runs give identical bits. Built with -fsanitize=thread by `make test`
   (without OpenMP, whose runtime ThreadSanitizer cannot see into).
   Usage: test_threads [FIXTURE_DIR] */
#define VIT_IMPLEMENTATION
#include "../vit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4

static vit_model model;
static vit_tensor input;
static float *expected;
static size_t nout;
static int mismatches;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
    vit_arena act;
    vit_tensor y;
    int rep, bad = 0;
    size_t bytes;
    (void)arg;
    if (vit_model_memory(&model, &input, NULL, &bytes) != VIT_OK || vit_arena_init_alloc(&act, bytes) != VIT_OK) bad = 1;
    for (rep = 0; rep < 3 && !bad; rep++) {
        vit_arena_reset(&act);
        if (vit_model_forward(&model, &act, &input, NULL, &y) != VIT_OK || vit_tensor_numel(&y) != nout ||
            memcmp(y.data, expected, nout * sizeof(float)) != 0)
            bad = 1;
    }
    vit_arena_free(&act);
    pthread_mutex_lock(&lock);
    mismatches += bad;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "tests/fixtures";
    static const char *cases[] = {"vit_tv", "vit_004", "block_tv", "emsa_r2", "outlook_s2", "aft_local_a"};
    char path[1024];
    int c, t, passed = 0, failed = 0;
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        vit_arena io, act;
        vit_tensor y;
        pthread_t th[NTHREADS];
        size_t bytes;
        snprintf(path, sizeof path, "%s/%s.safetensors", dir, cases[c]);
        if (vit_model_load_file(&model, path) != VIT_OK || vit_arena_init_alloc(&io, 8u << 20) != VIT_OK) {
            printf("FAIL %s: %s\n", cases[c], vit_last_error());
            failed++;
            continue;
        }
        snprintf(path, sizeof path, "%s/%s.in.npy", dir, cases[c]);
        vit_npy_load(&io, path, &input);
        vit_model_memory(&model, &input, NULL, &bytes);
        vit_arena_init_alloc(&act, bytes);
        vit_model_forward(&model, &act, &input, NULL, &y); /* the single-threaded reference */
        nout = vit_tensor_numel(&y);
        expected = (float *)vit_arena_alloc(&io, nout * sizeof(float));
        memcpy(expected, y.data, nout * sizeof(float));
        vit_arena_free(&act);
        mismatches = 0;
        for (t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, worker, NULL);
        for (t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
        if (mismatches) { printf("FAIL %s: %d threads differ from the single-threaded run\n", cases[c], mismatches); failed++; }
        else passed++;
        vit_arena_free(&io);
        vit_model_free(&model);
    }
    printf("test_threads: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

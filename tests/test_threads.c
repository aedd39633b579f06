/* One loaded model shared by several threads, each with its own activation
   arena and its own thread count (1, 2 or 3: they take turns with vit.h's
   pool, or run alone while another has it), gives results identical to a
   single-threaded run, and repeated runs give identical bits. The fixture
   models are small, so most of their loops stay on one thread; a product
   and an attention big enough to split then run the same way, with the
   pool's claims and its fixed split. Built with -fsanitize=thread by
   `make test`, which sees into the pool as well.
   Usage: test_threads [FIXTURE_DIR] */
#define VIT_IMPLEMENTATION
#include "../vit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    vit_set_threads(1 + (int)(intptr_t)arg % 3);
    if (vit_model_memory(&model, &input, NULL, &bytes) != VIT_OK || vit_arena_init_alloc(&act, bytes) != VIT_OK)
        bad = 1;
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

/* The kernels' inputs and 1-thread outputs, and one output pair per thread. */
enum { KM = 197, KK = 256, KN = 200, KB = 2, KNH = 3, KHS = 32 };
static float kx[KM * KK], kw[KN * KK], kqkv[KB * KM * 3 * KNH * KHS], ky1[KM * KN], ko1[KB * KM * KNH * KHS];
static float ky[NTHREADS][KM * KN], ko[NTHREADS][KB * KM * KNH * KHS];
static float *kscr[NTHREADS]; /* three of vit__att_slot's slots each: the size is the library's to say */
/* the reverse pass's attention kernel: probabilities, gradients and its scratch */
static float katt[KB * KNH * KM * KM], kg1[KB * KM * 3 * KNH * KHS], kg[NTHREADS][KB * KM * 3 * KNH * KHS];
static float kbscr[NTHREADS][KB * KNH * (KM * KM + 3 * KHS * KM)];

static void kernels(float *y, float *o, float *scr, float *g, float *bscr) {
    int C = KNH * KHS;
    vit_attn_shape sh = vit__attn_shape(KB, KM, KNH, KHS, 3 * C, 0.125f, 1.0f);
    vit__att a = vit__att_of(o, NULL, kqkv, kqkv + C, kqkv + 2 * C, &sh);
    vit_k_matmul(y, kx, kw, NULL, KM, KK, KN);
    vit__attention(&a, scr, 3);
    vit_k_attention_back(g, g + C, g + 2 * C, NULL, bscr, o, kqkv, kqkv + C, kqkv + 2 * C, katt, &sh);
}

/* The reverse pass of one model: each thread's explanation (Chefer's, the
   input gradient beneath) equals the single-threaded one. */
static float *expected_map;
static int map_n;
static void *explain_worker(void *arg) {
    vit_arena act;
    vit_explain_params p;
    size_t bytes;
    int rep, bad = 0;
    float *map = (float *)malloc((size_t)map_n * sizeof(float));
    memset(&p, 0, sizeof p);
    vit_set_threads(1 + (int)(intptr_t)arg % 3);
    if (!map || vit_explain_memory(&model, &input, VIT_METHOD_SALIENCY, &p, &bytes) != VIT_OK ||
        vit_arena_init_alloc(&act, bytes) != VIT_OK)
        bad = 1;
    for (rep = 0; rep < 2 && !bad; rep++)
        if (vit_explain(&model, &act, &input, VIT_METHOD_SALIENCY, 1, NULL, &p, map) != VIT_OK ||
            memcmp(map, expected_map, (size_t)map_n * sizeof(float)) != 0)
            bad = 1;
    if (!bad) vit_arena_free(&act);
    free(map);
    pthread_mutex_lock(&lock);
    mismatches += bad;
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void *kernel_worker(void *arg) {
    int t = (int)(intptr_t)arg, bad;
    vit_set_threads(2 + t % 2);
    kernels(ky[t], ko[t], kscr[t], kg[t], kbscr[t]);
    bad = memcmp(ky[t], ky1, sizeof ky1) != 0 || memcmp(ko[t], ko1, sizeof ko1) != 0 ||
          memcmp(kg[t], kg1, sizeof kg1) != 0;
    pthread_mutex_lock(&lock);
    mismatches += bad;
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* Short loops, one after another, on 2 to 4 threads: every iteration runs exactly once, whether a worker joins a
   loop, comes too late and finds it withdrawn, or joins the next one (the pool's states); a fault there would lose
   or repeat blocks, or hang. Most of these loops end before a worker wakes. */
static unsigned hits[509];
static void count_hits(const void *ctx, int i0, int i1, int thread) {
    int i;
    (void)ctx;
    (void)thread;
    for (i = i0; i < i1; i++) __atomic_fetch_add(&hits[i], 1u, __ATOMIC_RELAXED);
}

static int short_loops(void) {
    int loop, i, bad = 0;
    for (loop = 0; loop < 4000; loop++) {
        int n = 1 + loop * 37 % 509;
        memset(hits, 0, sizeof hits); /* every thread that ran the loop before is done with it */
        vit__parallel(n, 2 + loop % 3, count_hits, NULL);
        for (i = 0; i < (int)(sizeof hits / sizeof hits[0]); i++) bad += hits[i] != (i < n ? 1u : 0u);
    }
    return bad;
}

/* Thread 1's block of a loop outlasts the caller's spin (about 20 ms of the process's CPU time). */
static void slow_block(const void *ctx, int i0, int i1, int thread) {
    clock_t t0 = clock();
    (void)ctx; (void)i0; (void)i1;
    while (thread == 1 && clock() - t0 < CLOCKS_PER_SEC / 50) {
    }
}

/* A caller that sleeps waiting for a worker (here one whose block is slow, with the fixed split so that the caller
   waits for it) marks the pool contended; then loops under VIT__PAR_BUSY floats run on one thread for the next
   VIT__CONTENDED loops of the pool, larger ones as before, and the count falls by one a loop (vit__par_threads);
   0 if so. A model's bits are the same whatever the count (the forwards above, run with the pool contended or
   not as their turns fell). */
static int contended(void) {
    int i, bad = 0, n = vit__threads();
    vit__astore(&vit__pool.contended, 0u);
    vit__astore(&vit__pool.preempted, 0u); /* the forwards above may have set it (four threads on fewer cores), */
    vit__pool.switches = -1;               /* and the next look (vit__preempted) only counts: none sets it again here */
    vit__pool.fixed = 1;
    vit__parallel(2, 2, slow_block, NULL);
    vit__pool.fixed = 0;
    bad += vit__aload(&vit__pool.contended) != VIT__CONTENDED;
    vit__astore(&vit__pool.contended, 3u);
    bad += vit__par_threads(VIT__PAR_BUSY / 2) != 1;
    bad += vit__par_threads(VIT__PAR_BUSY * 4) != n;
    for (i = 0; i < 3; i++) {
        memset(hits, 0, sizeof hits);
        vit__parallel(64, 2, count_hits, NULL);
    }
    bad += vit__aload(&vit__pool.contended) != 0;
    bad += vit__par_threads(VIT__PAR_BUSY / 2) != (VIT__PAR_BUSY / 2 >= VIT__PAR_MIN ? n : 1);
    return bad;
}

/* One look of vit__preempted's (the next loop posted to the workers) with the last look's count `back` switches
   and `cpu` CPU seconds back: the stretch it left the pool preempted for (0: none), or ~0u where getrusage fails.
   The stretch's state (vit__pool.stretch, .was) carries over from look to look, as in a run. */
#ifdef VIT__RUSAGE
static unsigned look(long back, double cpu) {
    struct rusage u;
    unsigned n;
    if (getrusage(RUSAGE_SELF, &u) != 0) return ~0u;
    vit__pool.switches = u.ru_nivcsw - back;
    vit__pool.cpu = vit__cpu_seconds(&u) - cpu;
    vit__pool.loops = VIT__LOOKS - 1;
    memset(hits, 0, sizeof hits);
    vit__parallel(64, 2, count_hits, NULL);
    n = vit__aload(&vit__pool.preempted);
    vit__pool.switches = -1; /* the next look only counts */
    return n;
}
#endif

/* The process preempted at a high rate since the last look (vit__preempted, every VIT__LOOKS loops posted to the
   workers) marks the pool preempted, where the count is known (getrusage); not under the rate, nor with fewer than
   VIT__SWITCHES however fast. The stretch is VIT__PREEMPT_FIRST products and attentions at first, twice the last
   at each look that finds the process still preempted, up to VIT__CONTENDED; a look without, after a span with no
   stretch, brings it back to the first (a burst of another program's, not a busy core). During a stretch, products
   and attentions under their bounds run on one thread, larger ones as before, the count falling by one for each
   (vit__busy_threads); 0 if so. */
static int preempted(void) {
    int bad = 0, n = vit__threads();
#ifdef VIT__RUSAGE
    int i;
    unsigned got = 0;
    vit__astore(&vit__pool.preempted, 0u);
    vit__pool.stretch = vit__pool.was = 0;
    bad += look(1000, 1.0) != VIT__PREEMPT_FIRST;     /* 1000 a CPU second: preempted, a first stretch */
    bad += look(1000, 1.0) != 2 * VIT__PREEMPT_FIRST; /* still at the next look: twice as long */
    for (i = 0; i < 8; i++) got = look(1000, 1.0);
    bad += got != VIT__CONTENDED; /* and so on, up to VIT__CONTENDED */
    vit__astore(&vit__pool.preempted, 0u); /* the stretch run out */
    bad += look(0, 1.0) != 0 || vit__pool.stretch != VIT__CONTENDED; /* a look without, its span partly a stretch */
    bad += look(0, 1.0) != 0 || vit__pool.stretch != 0;              /* a whole span without: back to the first */
    bad += look(1000, 1.0) != VIT__PREEMPT_FIRST;
    vit__astore(&vit__pool.preempted, 0u);
    vit__pool.stretch = vit__pool.was = 0;
    bad += look((long)(VIT__SWITCH_RATE / 2), 1.0) != 0; /* under the rate: not */
    bad += look(VIT__SWITCHES / 2, 1e-6) != 0;           /* too few, however fast: not */
#endif
    vit__astore(&vit__pool.preempted, 2u);
    bad += vit__busy_threads(VIT__BUSY_MACS * 2, VIT__BUSY_MACS) != n;
    bad += vit__busy_threads(VIT__BUSY_MACS / 2, VIT__BUSY_MACS) != 1;
    bad += vit__par_threads(VIT__PAR_BUSY / 2) != 1;
    bad += vit__busy_threads(VIT__BUSY_ATT / 2, VIT__BUSY_ATT) != 1;
    bad += vit__aload(&vit__pool.preempted) != 0;
    bad += vit__busy_threads(VIT__BUSY_MACS / 2, VIT__BUSY_MACS) != n;
    return bad;
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
        vit_set_threads(1);
        vit_model_forward(&model, &act, &input, NULL, &y); /* the single-threaded reference */
        nout = vit_tensor_numel(&y);
        expected = (float *)vit_arena_alloc(&io, nout * sizeof(float));
        memcpy(expected, y.data, nout * sizeof(float));
        vit_arena_free(&act);
        mismatches = 0;
        for (t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
        for (t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
        if (mismatches) {
            printf("FAIL %s: %d threads differ from the single-threaded run\n", cases[c], mismatches);
            failed++;
        } else
            passed++;
        vit_arena_free(&io);
        vit_model_free(&model);
    }

    /* Kernels: four threads with 2 or 3 threads each, the pool's claims,
       then its fixed split; the same bits as one thread. */
    for (c = 0; c < (int)(sizeof kx / sizeof kx[0]); c++) kx[c] = (float)(c * 7 % 13) / 13.0f - 0.5f;
    for (c = 0; c < (int)(sizeof kw / sizeof kw[0]); c++) kw[c] = (float)(c * 5 % 11) / 11.0f - 0.5f;
    for (c = 0; c < (int)(sizeof kqkv / sizeof kqkv[0]); c++) kqkv[c] = (float)(c * 3 % 17) / 17.0f - 0.5f;
    for (c = 0; c < (int)(sizeof katt / sizeof katt[0]); c++) katt[c] = (float)(c * 7 % 19) / (19.0f * KM);
    for (t = 0; t < NTHREADS; t++)
        if (!(kscr[t] = (float *)malloc(3 * vit__att_slot(KM, KHS, 0, 0) * sizeof(float)))) return 1;
    vit_set_threads(1);
    kernels(ky1, ko1, kscr[0], kg1, kbscr[0]);
    for (c = 0; c < 2; c++) {
        pthread_t th[NTHREADS];
        vit__pool.fixed = c;
        mismatches = 0;
        for (t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, kernel_worker, (void *)(intptr_t)t);
        for (t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
        if (mismatches) {
            printf("FAIL kernels%s: %d threads differ from the single-threaded run\n", c ? " (fixed split)" : "",
                   mismatches);
            failed++;
        } else
            passed++;
    }
    for (t = 0; t < NTHREADS; t++) free(kscr[t]);

    /* The reverse pass: four threads explaining with one model */
    snprintf(path, sizeof path, "%s/explain/vit/model.safetensors", dir);
    {
        vit_arena io, act;
        vit_explain_params p;
        pthread_t th[NTHREADS];
        size_t bytes;
        int32_t shape[4], ndim = 0;
        memset(&p, 0, sizeof p);
        if (vit_model_load_file(&model, path) != VIT_OK || vit_arena_init_alloc(&io, 1 << 20) != VIT_OK ||
            vit_model_input_shape(&model, 1, 1, 1, &ndim, shape) != VIT_OK ||
            vit_tensor_init(&io, &input, ndim, shape) != VIT_OK) {
            printf("FAIL %s: %s\n", path, vit_last_error());
            failed++;
        } else {
            for (c = 0; c < (int)vit_tensor_numel(&input); c++) input.data[c] = (float)(c * 7 % 23) / 23.0f - 0.5f;
            map_n = vit_explain_size(&model, VIT_METHOD_SALIENCY);
            expected_map = (float *)vit_arena_alloc(&io, (size_t)map_n * sizeof(float));
            vit_set_threads(1);
            vit_explain_memory(&model, &input, VIT_METHOD_SALIENCY, &p, &bytes);
            vit_arena_init_alloc(&act, bytes);
            vit_explain(&model, &act, &input, VIT_METHOD_SALIENCY, 1, NULL, &p, expected_map);
            vit_arena_free(&act);
            mismatches = 0;
            for (t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, explain_worker, (void *)(intptr_t)t);
            for (t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
            if (mismatches) {
                printf("FAIL reverse pass: %d threads differ from the single-threaded run\n", mismatches);
                failed++;
            } else
                passed++;
            vit_arena_free(&io);
            vit_model_free(&model);
        }
    }
    for (c = 0; c < 2; c++) {
        vit__pool.fixed = c;
        if ((t = short_loops()) != 0) {
            printf("FAIL short loops%s: %d iterations ran other than once\n", c ? " (fixed split)" : "", t);
            failed++;
        } else
            passed++;
    }
    vit__pool.fixed = 0;
    vit_set_threads(2);
    if ((t = contended()) != 0) {
        printf("FAIL contended: %d checks of small loops on one thread after a caller's sleep\n", t);
        failed++;
    } else
        passed++;
    if ((t = preempted()) != 0) {
        printf("FAIL preempted: %d checks of small products on one thread after the system took a core\n", t);
        failed++;
    } else
        passed++;
    printf("test_threads: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

/* Kernel bench: each fast kernel is first checked against its _ref twin,
   then timed; matrix multiply is also timed against OpenBLAS's sgemm and
   reported as a fraction of an FMA peak measured in this same process.
   Prints ratios from one run, never asserts on time.
   Build: make bench (links -lopenblas when BENCH_OPENBLAS=1). */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "../tests/check.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef BENCH_OPENBLAS
#include <cblas.h>
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float *urandv(size_t n) {
    /* 64-byte aligned, as arena tensors and packed weights are: malloc's
       16 would split every other vector load across two cache lines. */
    float *p = NULL;
    if (posix_memalign((void **)&p, 64, n * sizeof(float) + 64) != 0) exit(1);
    size_t i;
    uint32_t s = 2463534242u;
    for (i = 0; i < n; i++) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; p[i] = (float)(s >> 8) / 16777216.0f - 0.5f; }
    return p;
}

/* var = the best of `reps` timings of stmt, in seconds. */
#define TIME_BEST(var, reps, stmt) do { int r_; (var) = 1e30; for (r_ = 0; r_ < (reps); r_++) { double t0_ = now(), t_; stmt; t_ = now() - t0_; if (t_ < (var)) (var) = t_; } } while (0)

#ifndef VIT_NO_SIMD
/* 16 independent FMA chains per iteration: enough to fill two FMA ports of
   4-cycle latency, so this is the core's FMA throughput for this vector
   width. */
static double fma_peak(void) {
    vit__vf m = vit__v_set1(0.999999f), c = vit__v_set1(1e-7f);
    vit__vf a0 = vit__v_set1(0.f), a1 = vit__v_set1(1.f), a2 = vit__v_set1(2.f), a3 = vit__v_set1(3.f), a4 = vit__v_set1(4.f), a5 = vit__v_set1(5.f);
    vit__vf a6 = vit__v_set1(6.f), a7 = vit__v_set1(7.f), a8 = vit__v_set1(8.f), a9 = vit__v_set1(9.f), a10 = vit__v_set1(10.f), a11 = vit__v_set1(11.f);
    long i, iters = 20000000;
    double t, best = 1e30;
    int rep;
    for (rep = 0; rep < 3; rep++) {
        t = now();
        for (i = 0; i < iters; i++) {
            a0 = vit__v_fma(a0, m, c); a1 = vit__v_fma(a1, m, c); a2 = vit__v_fma(a2, m, c); a3 = vit__v_fma(a3, m, c);
            a4 = vit__v_fma(a4, m, c); a5 = vit__v_fma(a5, m, c); a6 = vit__v_fma(a6, m, c); a7 = vit__v_fma(a7, m, c);
            a8 = vit__v_fma(a8, m, c); a9 = vit__v_fma(a9, m, c); a10 = vit__v_fma(a10, m, c); a11 = vit__v_fma(a11, m, c);
        }
        t = now() - t;
        if (t < best) best = t;
    }
    /* Keep the chains alive. */
    a0 = vit__v_add(vit__v_add(vit__v_add(a0, a1), vit__v_add(a2, a3)), vit__v_add(vit__v_add(a4, a5), vit__v_add(a6, a7)));
    a0 = vit__v_add(a0, vit__v_add(vit__v_add(a8, a9), vit__v_add(a10, a11)));
    if (vit__v_hsum(a0) == 12345.0f) printf(" ");
    return 2.0 * VIT__VW * 12.0 * (double)iters / best / 1e9;
}
#endif

static void bench_matmul(int M, int K, int N, double peak) {
    float *x = urandv((size_t)M * K), *w = urandv((size_t)N * K), *b = urandv((size_t)N);
    float *y1 = urandv((size_t)M * N), *y2 = urandv((size_t)M * N);
    double flop = 2.0 * M * K * N, tf, tr = 0.0;
    char label[64];
    snprintf(label, sizeof label, "matmul %dx%dx%d", M, K, N);
    vit_k_matmul(y1, x, w, b, M, K, N);
    vit_k_matmul_ref(y2, x, w, b, M, K, N);
    if (!check_close(label, y1, y2, (size_t)M * N, 1e-5 * K, 1e-5)) exit(1);
    TIME_BEST(tf, 5, vit_k_matmul(y1, x, w, b, M, K, N));
    if (flop < 2e9) TIME_BEST(tr, 1, vit_k_matmul_ref(y2, x, w, b, M, K, N));
    printf("%-26s fast %7.1f GFLOP/s (%5.1f%% of peak)", label, flop / tf / 1e9, 100.0 * flop / tf / 1e9 / peak);
    if (tr > 0) printf("  ref %6.2f GFLOP/s (fast x%.0f)", flop / tr / 1e9, tr / tf);
#ifndef VIT_NO_SIMD
    {
        /* Weights prepacked once (vit_model_pack), as a loaded model runs. */
        float *wp = urandv(vit__panels_floats(N, K));
        double tp;
        vit__pack_matrix(wp, w, N, K);
        vit__gemm_nt_p(y2, N, x, K, w, K, wp, b, M, K, N, 1.0f, 1);
        if (memcmp(y1, y2, (size_t)M * N * sizeof(float))) { printf("\n%s: packed weights change the result\n", label); exit(1); }
        TIME_BEST(tp, 5, vit__gemm_nt_p(y2, N, x, K, w, K, wp, b, M, K, N, 1.0f, 1));
        printf("  packed %7.1f GFLOP/s (%5.1f%% of peak)", flop / tp / 1e9, 100.0 * flop / tp / 1e9 / peak);
        free(wp);
    }
#endif
#ifdef BENCH_OPENBLAS
    {
        /* y = x . w^T: OpenBLAS row-major sgemm with B transposed. */
        double tb;
        TIME_BEST(tb, 5, cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, w, K, 0.0f, y2, N));
        printf("  openblas %7.1f GFLOP/s (vit.h/openblas %.2f)", flop / tb / 1e9, tb / tf);
    }
#endif
    printf("\n");
    free(x); free(w); free(b); free(y1); free(y2);
}

int main(int argc, char **argv) {
    double peak = 1.0;
    int threads = argc > 1 ? atoi(argv[1]) : 1;
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
#ifdef BENCH_OPENBLAS
    openblas_set_num_threads(threads);
#endif
#ifndef VIT_NO_SIMD
    peak = fma_peak() * threads;
    printf("FMA peak (%d-wide, %d thread%s): %.1f GFLOP/s\n", VIT__VW, threads, threads > 1 ? "s" : "", peak);
#endif
    bench_matmul(197, 768, 3072, peak);
    bench_matmul(197, 3072, 768, peak);
    bench_matmul(197, 768, 2304, peak);
    bench_matmul(1576, 768, 3072, peak);
    bench_matmul(197, 64, 197, peak);
    bench_matmul(1, 768, 1000, peak);
    return 0;
}

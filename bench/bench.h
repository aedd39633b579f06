/* What the bench programs share, after vit.h's implementation: the clock,
   doubles in order for qsort (medians), and one core's FMA peak that
   shares of peak are counted against. Static inline, so that a program
   that uses one of them compiles the others without a warning. */
#ifndef VIT_BENCH_H
#define VIT_BENCH_H

#include <stdio.h>
#include <time.h>

static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#ifndef VIT_NO_SIMD
/* 12 independent FMA chains per iteration: enough to fill two FMA ports of
   4-cycle latency, so this is the core's FMA throughput for this vector
   width, in GFLOP/s (the best of three runs). Named accumulators: an array
   could be left in memory, each FMA then waiting on a store. */
static inline double fma_peak(void) {
    vit__vf m = vit__v_set1(0.999999f), c = vit__v_set1(1e-7f);
    vit__vf a0 = vit__v_set1(0.f), a1 = vit__v_set1(1.f), a2 = vit__v_set1(2.f), a3 = vit__v_set1(3.f),
            a4 = vit__v_set1(4.f), a5 = vit__v_set1(5.f);
    vit__vf a6 = vit__v_set1(6.f), a7 = vit__v_set1(7.f), a8 = vit__v_set1(8.f), a9 = vit__v_set1(9.f),
            a10 = vit__v_set1(10.f), a11 = vit__v_set1(11.f);
    long i, iters = 20000000;
    double t, best = 1e30;
    int rep;
    for (rep = 0; rep < 3; rep++) {
        t = now();
        for (i = 0; i < iters; i++) {
            a0 = vit__v_fma(a0, m, c); a1 = vit__v_fma(a1, m, c); a2 = vit__v_fma(a2, m, c); a3 = vit__v_fma(a3, m, c);
            a4 = vit__v_fma(a4, m, c); a5 = vit__v_fma(a5, m, c); a6 = vit__v_fma(a6, m, c); a7 = vit__v_fma(a7, m, c);
            a8 = vit__v_fma(a8, m, c);
            a9 = vit__v_fma(a9, m, c);
            a10 = vit__v_fma(a10, m, c);
            a11 = vit__v_fma(a11, m, c);
        }
        t = now() - t;
        if (t < best) best = t;
    }
    /* Keep the chains alive. */
    a0 = vit__v_add(vit__v_add(vit__v_add(a0, a1), vit__v_add(a2, a3)),
                    vit__v_add(vit__v_add(a4, a5), vit__v_add(a6, a7)));
    a0 = vit__v_add(a0, vit__v_add(vit__v_add(a8, a9), vit__v_add(a10, a11)));
    if (vit__v_hsum(a0) == 12345.0f) printf(" ");
    return 2.0 * VIT__VW * 12.0 * (double)iters / best / 1e9;
}
#endif

#endif /* VIT_BENCH_H */

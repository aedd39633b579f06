/* Shared by the tests: the one comparison helper, llm.c's check_tensor. */
#ifndef VIT_TEST_CHECK_H
#define VIT_TEST_CHECK_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Not every test uses every helper (vit.h no longer leaves SIMDe's
   -Wunused-function setting off in the including file). */
#if defined(__GNUC__) || defined(__clang__)
#define CHECK_HELPER static __attribute__((unused))
#else
#define CHECK_HELPER static
#endif

/* Passes when max|got - want| <= atol + rtol * max(1, max|want|); prints the
   first mismatches and the largest difference either way. */
CHECK_HELPER int check_close(const char *label, const float *got, const float *want, size_t n, double atol, double rtol) {
    double maxref = 1.0, maxdiff = 0.0, tol;
    size_t i, worst = 0, shown = 0;
    for (i = 0; i < n; i++)
        if (fabs(want[i]) > maxref) maxref = fabs(want[i]);
    tol = atol + rtol * maxref;
    for (i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (!(d <= maxdiff)) { maxdiff = d; worst = i; }
        if (!(d <= tol) && shown < 5) {
            printf("  %s[%zu]: got %.9g want %.9g (|d| %.3g)\n", label, i, got[i], want[i], d);
            shown++;
        }
    }
    if (maxdiff > tol || maxdiff != maxdiff) {
        printf("FAIL %s: max|d| %.3g at %zu > tol %.3g\n", label, maxdiff, worst, tol);
        return 0;
    }
    return 1;
}
/* Under MemorySanitizer, reports (and stops at) the first uninitialised
   byte of p[0..n); elsewhere nothing. */
#if defined(__has_feature)
#if __has_feature(memory_sanitizer)
#include <sanitizer/msan_interface.h>
#define CHECK_INITIALISED(p, n) __msan_check_mem_is_initialized((p), (n))
#endif
#endif
#ifndef CHECK_INITIALISED
#define CHECK_INITIALISED(p, n) ((void)(p), (void)(n))
#endif

/* Pass/fail counters and expect(), shared by the test programs. */
static int passed, failed;
CHECK_HELPER void expect(int ok, const char *what) {
    if (ok) passed++;
    else { failed++; printf("FAIL %s\n", what); }
}

/* Deterministic N(0, s^2)-ish values: a sum of uniforms from an LCG. */
static uint32_t rng = 12345u;
CHECK_HELPER float frand(void) {
    float s = 0.0f;
    int i;
    for (i = 0; i < 4; i++) { rng = rng * 1664525u + 1013904223u; s += (float)(rng >> 8) / 16777216.0f - 0.5f; }
    return s * 1.7f;
}
CHECK_HELPER float *randv(size_t n, float scale) {
    float *p = (float *)malloc((n ? n : 1) * sizeof(float));
    size_t i;
    for (i = 0; i < n; i++) p[i] = frand() * scale;
    return p;
}

/* n threads for what follows (vit_set_threads). fixed: the pool's fixed
   split, thread t running blocks t, t + n, ... of each loop, so that every
   thread surely runs part of it (with the default claims a loaded machine
   can leave a thread with nothing, and 1 against 2 threads would then
   compare one thread with itself). */
#ifdef VIT__THREADS
#define SET_THREADS(n, f) do { vit__pool.fixed = (f); vit_set_threads(n); } while (0)
#else
#define SET_THREADS(n, f) do { (void)(f); vit_set_threads(n); } while (0)
#endif
#endif

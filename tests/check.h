/* Shared by the tests: the one comparison helper, llm.c's check_tensor. */
#ifndef VIT_TEST_CHECK_H
#define VIT_TEST_CHECK_H
#include <math.h>
#include <stdio.h>

/* Passes when max|got - want| <= atol + rtol * max(1, max|want|); prints the
   first mismatches and the largest difference either way. */
static int check_close(const char *label, const float *got, const float *want, size_t n, double atol, double rtol) {
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
#endif

/* The kernels of the seed modules (SE, ShuffleAttention, SGE, EMSA, AFT,
   OutlookAttention): every fast kernel against its scalar _ref twin on
   awkward sizes (1, 7, 8, 9, 65, ...: below, at and off the vector width),
   plus AFT's exponent handling at magnitudes where the seed's own formula
   underflows or overflows, and thread-count independence. */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static const int sizes[] = {1, 7, 8, 9, 65, 197};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define COUNT(a) ((int)(sizeof a / sizeof a[0]))



static void test_rowstats(void) {
    int a, r, v;
    char label[96];
    for (a = 0; a < NSIZES; a++)
        for (r = 1; r <= 3; r += 2)
            for (v = 0; v < 2; v++) {
                int n = sizes[a];
                size_t i, len = (size_t)r * n;
                float *x = randv(len, 3.0f), *m1 = randv((size_t)r, 0.0f), *m2 = randv((size_t)r, 0.0f);
                float *v1 = randv((size_t)r, 0.0f), *v2 = randv((size_t)r, 0.0f);
                if (v)
                    for (i = 0; i < len; i++) x[i] += 100.0f; /* |mean| >> std: the two passes must not cancel */
                vit_k_rowstats(m1, v1, x, r, n);
                vit_k_rowstats_ref(m2, v2, x, r, n);
                snprintf(label, sizeof label, "rowstats rows=%d n=%d%s", r, n, v ? " offset" : "");
                expect(check_close(label, m1, m2, (size_t)r, 1e-6, 1e-5) &&
                           check_close(label, v1, v2, (size_t)r, 1e-5, 1e-4),
                       label);
                vit_k_rowstats(m1, NULL, x, r, n);
                expect(check_close("rowstats mean only", m1, m2, (size_t)r, 1e-6, 1e-5), "rowstats mean only");
                free(x); free(m1); free(m2); free(v1); free(v2);
            }
}

static void test_rowaffine_mul(void) {
    int a, r;
    char label[96];
    for (a = 0; a < NSIZES; a++)
        for (r = 1; r <= 4; r += 3) {
            int n = sizes[a];
            size_t len = (size_t)r * n;
            float *x = randv(len, 2.0f), *s = randv((size_t)r, 1.0f), *b = randv((size_t)r, 1.0f);
            float *y1 = randv(len, 0.0f), *y2 = randv(len, 0.0f);
            vit_k_rowaffine(y1, x, s, b, r, n);
            vit_k_rowaffine_ref(y2, x, s, b, r, n);
            snprintf(label, sizeof label, "rowaffine rows=%d n=%d", r, n);
            expect(check_close(label, y1, y2, len, 1e-6, 1e-6), label);
            memcpy(y1, x, len * sizeof(float));
            vit_k_rowaffine(y1, y1, s, NULL, r, n); /* in place, no shift */
            vit_k_rowaffine_ref(y2, x, s, NULL, r, n);
            expect(check_close("rowaffine in place", y1, y2, len, 0.0, 0.0), "rowaffine in place, b = NULL");
            vit_k_mul(y1, x, y2, (int)len);
            vit_k_mul_ref(y2, x, y2, (int)len); /* y aliases b */
            snprintf(label, sizeof label, "mul n=%d", (int)len);
            expect(check_close(label, y1, y2, len, 0.0, 0.0), label);
            free(x); free(s); free(b); free(y1); free(y2);
        }
}

static void test_conv1x1(void) {
    static const int cin[] = {1, 7, 9}, cout[] = {1, 3, 8};
    int a, i, j, B;
    char label[96];
    for (a = 0; a < NSIZES - 1; a++)
        for (i = 0; i < COUNT(cin); i++)
            for (j = 0; j < COUNT(cout); j++) {
                int HW = sizes[a], Ci = cin[i], Co = cout[j];
                B = 1 + (i + j) % 2;
                {
                    float *x = randv((size_t)B * Ci * HW, 1.0f), *w = randv((size_t)Co * Ci, 1.0f),
                          *b = randv((size_t)Co, 1.0f);
                    float *y1 = randv((size_t)B * Co * HW, 0.0f), *y2 = randv((size_t)B * Co * HW, 0.0f);
                    vit_k_conv1x1(y1, x, w, j % 2 ? b : NULL, B, Ci, Co, HW);
                    vit_k_conv1x1_ref(y2, x, w, j % 2 ? b : NULL, B, Ci, Co, HW);
                    snprintf(label, sizeof label, "conv1x1 B=%d Cin=%d Cout=%d HW=%d", B, Ci, Co, HW);
                    expect(check_close(label, y1, y2, (size_t)B * Co * HW, 1e-6 * Ci, 1e-5), label);
                    free(x); free(w); free(b); free(y1); free(y2);
                }
            }
}

static void test_dwconv_pool(void) {
    /* B, H, W, C, K, stride, pad */
    static const int cfg[][7] = {{1, 1, 1, 1, 1, 1, 0}, {2, 5, 7, 10, 3, 2, 1}, {1, 7, 6, 9, 4, 3, 1},
                                 {2, 4, 5, 8, 3, 2, 1}, {1, 9, 9, 17, 5, 1, 2}, {1, 8, 8, 65, 2, 2, 1},
                                 {3, 3, 2, 7, 2, 1, 0}};
    int i;
    char label[128];
    for (i = 0; i < COUNT(cfg); i++) {
        int B = cfg[i][0], H = cfg[i][1], W = cfg[i][2], C = cfg[i][3], K = cfg[i][4], st = cfg[i][5], pad = cfg[i][6];
        /* pooling with S = stride + 1: 2, 3, 4 (wider than a 3x2 input) */
        int Ho = (H + 2 * pad - K) / st + 1, Wo = (W + 2 * pad - K) / st + 1, Hp = (H + st) / (st + 1),
            Wp = (W + st) / (st + 1);
        float *x = randv((size_t)B * H * W * C, 1.0f), *w = randv((size_t)C * K * K, 0.5f), *b = randv((size_t)C, 1.0f);
        float *wt = randv((size_t)K * K * C, 0.0f), *y1 = randv((size_t)B * Ho * Wo * C, 0.0f),
              *y2 = randv((size_t)B * Ho * Wo * C, 0.0f);
        float *p1 = randv((size_t)B * Hp * Wp * C, 0.0f), *p2 = randv((size_t)B * Hp * Wp * C, 0.0f);
        vit_conv_shape sh;
        sh.B = B; sh.H = H; sh.W = W; sh.C = C; sh.K = K; sh.stride = st; sh.pad = pad;
        vit_k_dwconv(y1, wt, x, w, i % 2 ? b : NULL, &sh);
        vit_k_dwconv_ref(y2, x, w, i % 2 ? b : NULL, &sh);
        snprintf(label, sizeof label, "dwconv B=%d %dx%d C=%d K=%d stride=%d pad=%d", B, H, W, C, K, st, pad);
        expect(check_close(label, y1, y2, (size_t)B * Ho * Wo * C, 1e-6 * K * K, 1e-5), label);
        vit_k_avgpool(p1, x, B, H, W, C, st + 1);
        vit_k_avgpool_ref(p2, x, B, H, W, C, st + 1);
        snprintf(label, sizeof label, "avgpool B=%d %dx%d C=%d S=%d", B, H, W, C, st + 1);
        expect(check_close(label, p1, p2, (size_t)B * Hp * Wp * C, 1e-6, 1e-6), label);
        free(x); free(w); free(b); free(wt); free(y1); free(y2); free(p1); free(p2);
    }
}

static void test_scores_attend(void) {
    /* B, NH, Nq, Nk, HS */
    static const int cfg[][5] = {{1, 1, 1, 1, 1},  {2, 3, 7, 9, 5},   {1, 2, 65, 8, 8},
                                 {2, 1, 9, 17, 7}, {1, 4, 16, 65, 9}, {1, 2, 197, 49, 16}};
    int i;
    char label[96];
    for (i = 0; i < COUNT(cfg); i++) {
        int B = cfg[i][0], NH = cfg[i][1], Nq = cfg[i][2], Nk = cfg[i][3], HS = cfg[i][4], ldq = NH * HS + 3,
            ldv = NH * HS + 1;
        size_t ns = (size_t)B * NH * Nq * Nk;
        float *q = randv((size_t)B * Nq * ldq, 1.0f), *k = randv((size_t)B * Nk * ldq, 1.0f),
              *v = randv((size_t)B * Nk * ldv, 1.0f);
        float *s1 = randv(ns, 0.0f), *s2 = randv(ns, 0.0f), *vt = randv((size_t)B * NH * HS * Nk, 0.0f);
        float *o1 = randv((size_t)B * Nq * NH * HS, 0.0f), *o2 = randv((size_t)B * Nq * NH * HS, 0.0f);
        vit_heads_shape sh;
        sh.B = B; sh.NH = NH; sh.Nq = Nq; sh.Nk = Nk; sh.HS = HS; sh.ldq = sh.ldk = ldq; sh.ldv = ldv; sh.scale = 0.37f;
        vit_k_scores(s1, q, k, &sh);
        vit_k_scores_ref(s2, q, k, &sh);
        snprintf(label, sizeof label, "scores B=%d NH=%d Nq=%d Nk=%d HS=%d", B, NH, Nq, Nk, HS);
        expect(check_close(label, s1, s2, ns, 1e-6 * HS, 1e-5), label);
        vit_k_softmax_ref(s2, s2, B * NH * Nq, Nk);
        vit_k_attend(o1, vt, s2, v, &sh);
        vit_k_attend_ref(o2, s2, v, &sh);
        snprintf(label, sizeof label, "attend B=%d NH=%d Nq=%d Nk=%d HS=%d", B, NH, Nq, Nk, HS);
        expect(check_close(label, o1, o2, (size_t)B * Nq * NH * HS, 1e-6, 1e-5), label);
        free(q); free(k); free(v); free(s1); free(s2); free(vt); free(o1); free(o2);
    }
}

/* The AFT kernels' sizes. */
static vit_aft_shape aft_shape(int B, int T, int D, int ldw, int s) {
    vit_aft_shape sh;
    sh.B = B; sh.T = T; sh.D = D; sh.ldw = ldw; sh.s = s;
    return sh;
}

/* vit_k_aft and _ref on (B, T, D, ldw, s); the weights have scale ws. */
static void aft_case(int B, int T, int D, int ldw, int s, float ws, float ks, float **keep_w, float **keep_k) {
    char label[128];
    size_t n = (size_t)B * T * D, na = (size_t)B * D * T * T;
    float *q = randv(n, 2.0f), *k = randv(n, ks), *v = randv(n, 1.0f), *w = randv((size_t)ldw * ldw, ws);
    float *scr = randv((size_t)T * T + 4 * (size_t)T * D + D, 0.0f), *y1 = randv(n, 0.0f), *y2 = randv(n, 0.0f);
    float *a1 = randv(na, 0.0f), *a2 = randv(na, 0.0f);
    vit_aft_shape sh = aft_shape(B, T, D, ldw, s);
    if (keep_w) { memcpy(w, *keep_w, (size_t)ldw * ldw * sizeof(float)); memcpy(k, *keep_k, n * sizeof(float)); }
    vit_k_aft(y1, a1, scr, q, k, v, w, &sh);
    vit_k_aft_ref(y2, a2, q, k, v, w, &sh);
    snprintf(label, sizeof label, "aft B=%d T=%d D=%d ldw=%d s=%d |w|~%g |k|~%g", B, T, D, ldw, s, (double)ws,
             (double)ks);
    expect(check_close(label, y1, y2, n, 1e-6, 2e-5) && check_close(label, a1, a2, na, 1e-6, 2e-5), label);
    vit_k_aft(y1, NULL, scr, q, k, v, w, &sh); /* no map */
    expect(check_close("aft without att", y1, y2, n, 1e-6, 2e-5), "aft without att");
    free(q); free(k); free(v); free(w); free(scr); free(y1); free(y2); free(a1); free(a2);
}

static void test_aft(void) {
    /* B, T, D, ldw, s */
    static const int cfg[][5] = {{1, 1, 1, 1, 1},    {2, 7, 9, 11, 3},   {1, 9, 8, 9, 1},
                                 {2, 13, 65, 20, 5}, {1, 65, 7, 65, 65}, {1, 8, 16, 8, 0}};
    int i, B = 2, T = 5, D = 3, t, u, d;
    float *w, *k, *q, *v, *y, *scr, *att;
    vit_aft_shape sh = aft_shape(B, T, D, T, T);
    for (i = 0; i < COUNT(cfg); i++)
        aft_case(cfg[i][0], cfg[i][1], cfg[i][2], cfg[i][3], cfg[i][4], 1.0f, 1.0f, NULL, NULL);
    aft_case(2, 9, 10, 9, 9, 30.0f, 30.0f, NULL, NULL); /* exponents far past expf's range: the seed overflows */
    /* Row max of w at t' = 0, column max of k at t' > 0, 100 apart: the
       separately shifted denominators underflow to 0, yet every exponent
       w + k is 20, so each output is sigmoid(q) times the mean of v. The
       seed computes e^60 e^-40 + ...: finite. */
    w = randv((size_t)T * T, 0.0f); k = randv((size_t)B * T * D, 0.0f);
    for (t = 0; t < T; t++)
        for (u = 0; u < T; u++) w[t * T + u] = u == 0 ? 60.0f : -40.0f;
    for (i = 0; i < B * T * D; i++) k[i] = (i / D) % T == 0 ? -40.0f : 60.0f;
    aft_case(B, T, D, T, T, 0.0f, 0.0f, &w, &k);
    q = randv((size_t)B * T * D, 1.0f); v = randv((size_t)B * T * D, 1.0f); y = randv((size_t)B * T * D, 0.0f);
    scr = randv((size_t)T * T + 4 * (size_t)T * D + D, 0.0f); att = randv((size_t)B * D * T * T, 0.0f);
    vit_k_aft(y, att, scr, q, k, v, w, &sh);
    {
        float want[2 * 5 * 3], wa[2 * 3 * 5 * 5];
        for (i = 0; i < B * T * D; i++) {
            int bi = i / (T * D);
            float mean = 0.0f;
            d = i % D;
            for (u = 0; u < T; u++) mean += v[((size_t)bi * T + u) * D + d];
            want[i] = 1.0f / (1.0f + expf(-q[i])) * (mean / (float)T);
        }
        for (i = 0; i < B * D * T * T; i++) wa[i] = 1.0f / (float)T;
        expect(check_close("aft underflowing shifts: output", y, want, (size_t)B * T * D, 1e-6, 1e-5),
               "aft underflowing shifts: output");
        expect(check_close("aft underflowing shifts: weights", att, wa, (size_t)B * D * T * T, 1e-6, 1e-5),
               "aft underflowing shifts: weights");
    }
    free(w); free(k); free(q); free(v); free(y); free(scr); free(att);
}

static void test_aft_simple(void) {
    static const int cfg[][3] = {{1, 1, 1}, {2, 7, 9}, {1, 65, 8}, {3, 13, 17}, {1, 197, 65}};
    int i, big;
    char label[96];
    for (i = 0; i < COUNT(cfg); i++)
        for (big = 0; big < 2; big++) {
            int B = cfg[i][0], T = cfg[i][1], D = cfg[i][2];
            size_t n = (size_t)B * T * D;
            float *q = randv(n, 2.0f), *k = randv(n, big ? 60.0f : 1.0f), *v = randv(n, 1.0f);
            float *y1 = randv(n, 0.0f), *y2 = randv(n, 0.0f), *a1 = randv(n, 0.0f), *a2 = randv(n, 0.0f);
            vit_k_aft_simple(y1, a1, q, k, v, B, T, D);
            vit_k_aft_simple_ref(y2, a2, q, k, v, B, T, D);
            snprintf(label, sizeof label, "aft_simple B=%d T=%d D=%d%s", B, T, D, big ? " |k|~60" : "");
            expect(check_close(label, y1, y2, n, 1e-6, 1e-5) && check_close(label, a1, a2, n, 1e-6, 1e-5), label);
            free(q); free(k); free(v); free(y1); free(y2); free(a1); free(a2);
        }
}

static void test_outlook(void) {
    /* B, H, W, C, NH, K, pad, stride */
    static const int cfg[][8] = {{1, 1, 1, 1, 1, 1, 0, 1},  {2, 5, 7, 12, 3, 3, 1, 1}, {2, 7, 9, 10, 2, 3, 1, 2},
                                 {1, 6, 8, 8, 1, 3, 1, 2},  {2, 6, 5, 6, 2, 5, 2, 1},  {1, 9, 9, 18, 2, 3, 1, 3},
                                 {1, 4, 4, 17, 1, 2, 0, 2}, {1, 3, 5, 65, 5, 3, 1, 1}};
    int i;
    char label[128];
    for (i = 0; i < COUNT(cfg); i++) {
        int B = cfg[i][0], H = cfg[i][1], W = cfg[i][2], C = cfg[i][3], NH = cfg[i][4], K = cfg[i][5], pad = cfg[i][6],
            st = cfg[i][7];
        int L = ((H + 2 * pad - K) / st + 1) * ((W + 2 * pad - K) / st + 1);
        size_t na = (size_t)B * NH * L * K * K * K * K, ny = (size_t)B * H * W * C;
        float *lg = randv(na, 2.0f), *v = randv(ny, 1.0f), *y1 = randv(ny, 0.0f), *y2 = randv(ny, 0.0f);
        float *a1 = randv(na, 0.0f), *a2 = randv(na, 0.0f);
        vit_outlook_params p = {0};
        p.dim = C; p.heads = NH; p.kernel_size = K; p.padding = pad; p.stride = st; p.scale = 0.4f;
        vit_k_outlook(y1, a1, lg, v, B, H, W, &p);
        vit_k_outlook_ref(y2, a2, lg, v, B, H, W, &p);
        snprintf(label, sizeof label, "outlook B=%d %dx%d C=%d NH=%d K=%d pad=%d stride=%d", B, H, W, C, NH, K, pad,
                 st);
        expect(check_close(label, y1, y2, ny, 1e-6, 1e-5) && check_close(label, a1, a2, na, 1e-7, 1e-5), label);
        free(lg); free(v); free(y1); free(y2); free(a1); free(a2);
    }
}

/* Outputs must not depend on the number of threads (sizes above the
   kernels' VIT__PAR_MIN, so that the loops do split): 1 thread against 2
   and 3 with the pool's fixed split, and 2 with its claims. */
static void test_threads(void) {
    static const struct { int n, fixed; } runs[] = {{2, 1}, {3, 1}, {2, 0}};
    int B = 2, T = 200, D = 170, saved = vit_get_threads(), r;
    int H = 13, W = 11, C = 24, NH = 3, K = 3, L = H * W;
    size_t n = (size_t)B * T * D, na = (size_t)B * NH * L * K * K * K * K, ny = (size_t)B * H * W * C;
    float *q = randv(n, 1.0f), *k = randv(n, 1.0f), *v = randv(n, 1.0f), *w = randv((size_t)T * T, 1.0f);
    float *scr = randv((size_t)T * T + 4 * (size_t)T * D + D, 0.0f), *y1 = randv(n, 0.0f), *y2 = randv(n, 0.0f);
    float *lg = randv(na, 1.0f), *ov = randv(ny, 1.0f), *o1 = randv(ny, 0.0f), *o2 = randv(ny, 0.0f),
          *a1 = randv(na, 0.0f), *a2 = randv(na, 0.0f);
    vit_outlook_params op = {0};
    vit_aft_shape sh = aft_shape(B, T, D, T, 9);
    char label[96];
    op.dim = C; op.heads = NH; op.kernel_size = K; op.padding = 1; op.stride = 1; op.scale = 0.5f;
    SET_THREADS(1, 0);
    vit_k_aft(y1, NULL, scr, q, k, v, w, &sh);
    vit_k_outlook(o1, a1, lg, ov, B, H, W, &op);
    for (r = 0; r < (int)(sizeof runs / sizeof runs[0]); r++) {
        SET_THREADS(runs[r].n, runs[r].fixed);
        vit_k_aft(y2, NULL, scr, q, k, v, w, &sh);
        vit_k_outlook(o2, a2, lg, ov, B, H, W, &op);
        snprintf(label, sizeof label, "aft bit-identical for 1 and %d threads%s", runs[r].n,
                 runs[r].fixed ? " (fixed split)" : "");
        expect(memcmp(y1, y2, n * sizeof(float)) == 0, label);
        snprintf(label, sizeof label, "outlook bit-identical for 1 and %d threads%s", runs[r].n,
                 runs[r].fixed ? " (fixed split)" : "");
        expect(memcmp(o1, o2, ny * sizeof(float)) == 0 && memcmp(a1, a2, na * sizeof(float)) == 0, label);
    }
    SET_THREADS(saved, 0);
    free(q); free(k); free(v); free(w); free(scr); free(y1); free(y2);
    free(lg); free(ov); free(o1); free(o2); free(a1); free(a2);
}

int main(void) {
    rng = 2024u; /* each program its own stream */
    test_rowstats();
    test_rowaffine_mul();
    test_conv1x1();
    test_dwconv_pool();
    test_scores_attend();
    test_aft();
    test_aft_simple();
    test_outlook();
    test_threads();
    printf("test_kernels_seed: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

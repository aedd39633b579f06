/* BF16 and I8 weights: the products' fast paths against their _ref on
   awkward sizes, the _ref against the definition written out here in
   double, and the bits the same for any thread count. */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "check.h"
#include <string.h>

/* w (N, K) as the file would hold it: bf16 bits, or int8 with row scales. */
static uint16_t *to_bf16(const float *w, size_t n) {
    uint16_t *h = (uint16_t *)malloc((n ? n : 1) * sizeof(uint16_t));
    size_t i;
    for (i = 0; i < n; i++) h[i] = vit__bf16_round(w[i]);
    return h;
}

static int8_t *to_i8(const float *w, int N, int K, float *scale) {
    int8_t *q = (int8_t *)malloc((size_t)N * K + 1);
    int n, k;
    for (n = 0; n < N; n++) {
        float amax = 0.0f;
        for (k = 0; k < K; k++) amax = fabsf(w[(size_t)n * K + k]) > amax ? fabsf(w[(size_t)n * K + k]) : amax;
        scale[n] = amax > 0.0f ? amax / 127.0f : 1.0f;
        for (k = 0; k < K; k++) q[(size_t)n * K + k] = (int8_t)nearbyintf(w[(size_t)n * K + k] / scale[n]);
    }
    return q;
}

/* The definition, independently: BF16 rounds x with the usual bit trick and
   sums in double; I8 quantises each row as vit.h's manual says. */
static void product_def(float *y, const float *x, const void *wq, const float *ws, int wt, const float *b, float alpha,
                        int M, int K, int N) {
    int m, n, k;
    for (m = 0; m < M; m++) {
        const float *xm = x + (size_t)m * K;
        float lo = 0.0f, hi = 0.0f, sx = 1.0f, inv = 1.0f;
        int zp = 0;
        for (k = 0; k < K; k++) {
            lo = fminf(lo, xm[k]);
            hi = fmaxf(hi, xm[k]);
        }
        if ((hi - lo) / 255.0f > 1e-30f) {
            sx = (hi - lo) / 255.0f;
            inv = 1.0f / sx;
            zp = (int)nearbyintf(-lo * inv);
        }
        for (n = 0; n < N; n++) {
            double s = 0.0;
            for (k = 0; k < K; k++) {
                if (wt == VIT_DTYPE_BF16) {
                    uint32_t u, h = ((const uint16_t *)wq)[(size_t)n * K + k];
                    float xr, wf;
                    memcpy(&u, &xm[k], 4);
                    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
                    memcpy(&xr, &u, 4);
                    h <<= 16;
                    memcpy(&wf, &h, 4);
                    s += (double)xr * wf;
                } else {
                    float r = nearbyintf(xm[k] * inv) + (float)zp;
                    r = r < 0.0f ? 0.0f : r > 255.0f ? 255.0f : r;
                    s += (double)(r - (float)zp) * ((const int8_t *)wq)[(size_t)n * K + k];
                }
            }
            if (wt == VIT_DTYPE_I8) s = (float)s * (sx * ws[n]);
            y[(size_t)m * N + n] = (float)(alpha * s + (b ? b[n] : 0.0f));
        }
    }
}

/* One product of each kind on (M, K, N): fast vs ref, ref vs definition. */
static int one(int wt, int M, int K, int N, float alpha, int bias) {
    float *x = randv((size_t)M * K, 1.0f), *w = randv((size_t)N * K, 0.1f), *b = randv((size_t)N, 0.5f);
    float *y1 = randv((size_t)M * N, 1.0f), *y2 = randv((size_t)M * N, 1.0f), *y3 = randv((size_t)M * N, 1.0f),
          *ws = randv((size_t)N, 1.0f);
    void *wq = wt == VIT_DTYPE_BF16 ? (void *)to_bf16(w, (size_t)N * K) : (void *)to_i8(w, N, K, ws);
    size_t xs_bytes = vit__mm_scratch(wt, M, K);
    unsigned char *xs = (unsigned char *)malloc(xs_bytes + 64);
    vit_tensor t;
    vit__mm p;
    char label[96];
    int ok = 1, i;
    if (K % 3 == 0) /* rows of zeros and of one sign: the scale's edge cases */
        for (i = 0; i < K; i++) { x[i] = 0.0f; if (M > 1) x[K + i] = fabsf(x[K + i]) + 0.5f; }
    memset(xs + xs_bytes, 0xA5, 64);
    memset(&t, 0, sizeof t);
    t.dtype = (vit_dtype)wt;
    t.q = wq;
    t.scale = wt == VIT_DTYPE_I8 ? ws : NULL;
    p = vit__mm_w(y1, x, &t, bias ? b : NULL, M, K, N, xs);
    p.alpha = alpha;
    vit__matmul(&p);
    p.y = y2;
    vit__matmul_ref(&p);
    product_def(y3, x, wq, ws, wt, bias ? b : NULL, alpha, M, K, N);
    /* BF16: rounding order only (K * 2^-24 of the sum of |x w|, about
       sqrt(K) here); I8: S is exact, the last multiply-add may round
       apart, or S itself past 2^24 without the dot-product kernel. */
    snprintf(label, sizeof label, "%s M=%d K=%d N=%d fast", wt == VIT_DTYPE_BF16 ? "bf16" : "i8", M, K, N);
    ok &= check_close(label, y1, y2, (size_t)M * N, wt == VIT_DTYPE_BF16 ? 4e-7 * K : 1e-6, 1e-6);
    snprintf(label, sizeof label, "%s M=%d K=%d N=%d ref vs definition", wt == VIT_DTYPE_BF16 ? "bf16" : "i8", M, K, N);
    ok &= check_close(label, y2, y3, (size_t)M * N, wt == VIT_DTYPE_BF16 ? 4e-7 * K : 1e-6, 1e-6);
    for (i = 0; i < 64; i++) ok &= xs[xs_bytes + i] == 0xA5;
    free(x); free(w); free(b); free(y1); free(y2); free(y3); free(ws); free(wq); free(xs);
    return ok;
}

static void test_sizes(void) {
    static const int Ks[] = {
        1,  2,  3,   4,   5,   7,    8,   17,
        33, 64, 129, 300, 517, 1025, 2100}; /* past a panel block: 1025 (BF16, I8 with AVX-512), 2100 */
    static const int Ns[] = {1, 3, 8, 16, 17, 31, 33, 64, 70};
    int wt, M, ki, ni, ok = 1, runs = 0;
    for (wt = VIT_DTYPE_BF16; wt <= VIT_DTYPE_I8; wt++)
        for (M = 1; M <= 17; M++)
            for (ki = 0; ki < (int)(sizeof Ks / sizeof Ks[0]); ki++)
                for (ni = 0; ni < (int)(sizeof Ns / sizeof Ns[0]); ni++) {
                    int K = Ks[ki], N = Ns[ni];
                    if ((M + ki + ni) % 3 && K > 600) continue; /* the long rows on a third of the shapes */
                    ok &= one(wt, M, K, N, (M + ni) % 4 ? 1.0f : 0.37f, (M + ki) % 2);
                    runs++;
                }
    ok &= one(VIT_DTYPE_BF16, 197, 768, 200, 1.0f, 1) & one(VIT_DTYPE_I8, 197, 768, 200, 1.0f, 1);
    printf("  %d shapes\n", runs + 2);
    expect(ok, "bf16 and i8 products: fast equals _ref, _ref equals the definition");
}

/* Quantised products stay near the f32 one: bf16 within a few 2^-9, int8
   within a few percent, on (197, 768) x (768, 256) with trained-like
   scales. This is the error budget the model-level tests build on. */
static void test_error(void) {
    int M = 197, K = 768, N = 256, wt;
    float *x = randv((size_t)M * K, 1.0f), *w = randv((size_t)N * K, 0.05f), *y0 = randv((size_t)M * N, 1.0f),
          *y1 = randv((size_t)M * N, 1.0f);
    float *ws = randv((size_t)N, 1.0f);
    size_t i;
    vit_k_matmul_ref(y0, x, w, NULL, M, K, N);
    for (wt = VIT_DTYPE_BF16; wt <= VIT_DTYPE_I8; wt++) {
        void *wq = wt == VIT_DTYPE_BF16 ? (void *)to_bf16(w, (size_t)N * K) : (void *)to_i8(w, N, K, ws);
        void *xs = malloc(vit__mm_scratch(wt, M, K) + 1);
        vit_tensor t;
        double num = 0.0, den = 0.0;
        char what[96];
        memset(&t, 0, sizeof t);
        t.dtype = (vit_dtype)wt;
        t.q = wq;
        t.scale = ws;
        vit__dense(y1, x, &t, NULL, M, K, N, xs);
        for (i = 0; i < (size_t)M * N; i++) {
            num += (double)(y1[i] - y0[i]) * (y1[i] - y0[i]);
            den += (double)y0[i] * y0[i];
        }
        printf("  %s product: relative L2 error %.3g against f32\n", wt == VIT_DTYPE_BF16 ? "bf16" : "i8",
               sqrt(num / den));
        snprintf(what, sizeof what, "%s product within %s of f32", wt == VIT_DTYPE_BF16 ? "bf16" : "i8",
                 wt == VIT_DTYPE_BF16 ? "5e-3" : "2e-2");
        expect(sqrt(num / den) < (wt == VIT_DTYPE_BF16 ? 5e-3 : 2e-2), what);
        free(wq);
        free(xs);
    }
    free(x); free(w); free(y0); free(y1); free(ws);
}

/* The fused epilogue on a quantised product equals the product then the
   kernels; and the bits do not depend on the thread count. */
static void test_epilogue_threads(void) {
    int M = 37, K = 300, N = 70, wt, act;
    float *x = randv((size_t)M * K, 1.0f), *w = randv((size_t)N * K, 0.1f), *b = randv((size_t)N, 0.5f),
          *r = randv((size_t)M * N, 1.0f);
    float *y1 = randv((size_t)M * N, 1.0f), *y2 = randv((size_t)M * N, 1.0f), *ws = randv((size_t)N, 1.0f);
    for (wt = VIT_DTYPE_BF16; wt <= VIT_DTYPE_I8; wt++) {
        void *wq = wt == VIT_DTYPE_BF16 ? (void *)to_bf16(w, (size_t)N * K) : (void *)to_i8(w, N, K, ws);
        void *xs = malloc(vit__mm_scratch(wt, M, K) + 1);
        vit_tensor t;
        memset(&t, 0, sizeof t);
        t.dtype = (vit_dtype)wt;
        t.q = wq;
        t.scale = ws;
        for (act = 0; act < 3; act++) {
            static const int acts[3] = {VIT__EPI_NONE, VIT_ACT_RELU, VIT_ACT_GELU};
            vit__epi e;
            vit__mm p = vit__mm_w(y1, x, &t, b, M, K, N, xs);
            int i;
            e.act = acts[act]; e.g = NULL; e.r = r; e.ldr = N;
            p.e = &e;
            vit__matmul(&p);
            vit__dense(y2, x, &t, b, M, K, N, xs);
            if (e.act == VIT_ACT_GELU) vit_k_gelu(y2, y2, M * N);
            if (e.act == VIT_ACT_RELU) vit_k_relu(y2, y2, M * N);
            for (i = 0; i < M * N; i++) y2[i] += r[i];
            expect(memcmp(y1, y2, (size_t)M * N * sizeof(float)) == 0,
                   "quantised product: fused epilogue equals the kernels");
        }
        {
            int nt = vit_get_threads();
            vit_set_threads(1);
            vit__dense(y1, x, &t, b, M, K, N, xs);
            vit_set_threads(2);
            vit__dense(y2, x, &t, b, M, K, N, xs);
            vit_set_threads(nt);
            expect(memcmp(y1, y2, (size_t)M * N * sizeof(float)) == 0,
                   "quantised product bit-identical for 1 and 2 threads");
        }
        free(wq);
        free(xs);
    }
    free(x); free(w); free(b); free(r); free(y1); free(y2); free(ws);
}

/* The extremes, where a product of u8 by s8 pairs could saturate int16
   (AVX2's vpmaddubsw) or a sign flip overflow: rows that quantise to 0 and
   255 (x - 128 = -128 and 127) against weights of +-127, in runs of the
   same and of alternating signs. The fast product must still equal _ref. */
static void test_extremes(void) {
    int M = 5, K = 72, N = 6, m, n, k;
    float x[5 * 72], y1[5 * 6], y2[5 * 6], ws[6], b[6] = {0};
    int8_t q[6 * 72];
    unsigned char xs[4096];
    vit_tensor t;
    vit__mm p;
    for (m = 0; m < M; m++)
        for (k = 0; k < K; k++) {
            float lo = -1.0f, hi = 2.0f; /* sx = 3 / 255, zp = 85: lo -> 0, hi -> 255 */
            int pick = m == 0 ? 0 : m == 1 ? 1 : m == 2 ? (k / 2) % 2 : m == 3 ? k % 2 : (k / 4) % 2;
            x[m * K + k] = pick ? hi : lo;
        }
    x[0] = 2.0f; /* row 0's range: lo and hi present */
    x[K] = -1.0f;
    for (n = 0; n < N; n++) {
        ws[n] = 0.01f;
        for (k = 0; k < K; k++) {
            int s = n == 0 ? 1 : n == 1 ? -1 : n == 2 ? ((k / 2) % 2 ? 1 : -1) : n == 3 ? (k % 2 ? 1 : -1)
                  : n == 4 ? ((k / 4) % 2 ? -1 : 1) : ((k * 7) % 3 ? 1 : -1);
            q[n * K + k] = (int8_t)(127 * s);
        }
    }
    memset(&t, 0, sizeof t);
    t.dtype = VIT_DTYPE_I8;
    t.q = q;
    t.scale = ws;
    expect(vit__mm_scratch(VIT_DTYPE_I8, M, K) <= sizeof xs, "the extremes' scratch fits");
    p = vit__mm_w(y1, x, &t, b, M, K, N, xs);
    vit__matmul(&p);
    p.y = y2;
    vit__matmul_ref(&p);
    expect(check_close("i8 extremes fast", y1, y2, (size_t)M * N, 1e-6, 1e-6),
           "i8 product at the extremes (x - 128 = -128, 127; w = +-127) equals _ref");
}

int main(void) {
    printf("dot-product kernels: bf16 %s, i8 %s\n", VIT__DOT_BF16 ? "yes" : "no (f32 tiles)",
           VIT__DOT_I8 ? "yes" : "no (f32 tiles)");
    test_sizes();
    test_extremes();
    test_error();
    test_epilogue_threads();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}

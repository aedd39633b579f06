/* BF16 and I8 weights: the products' fast paths against their _ref on
   awkward sizes, the _ref against the definition written out here in
   double, and the bits the same for any thread count. */
#ifndef VIT__MC_BYTES /* as tests/test_internal.c sets it */
#define VIT__MC_BYTES (64 * 1024)
#endif
#ifndef VIT__Y_STREAM_BYTES /* as tests/test_internal.c sets it */
#define VIT__Y_STREAM_BYTES 4194304.0
#endif
#ifndef VIT__MLP_CHUNK_BYTES /* as tests/test_internal.c sets it */
#define VIT__MLP_CHUNK_BYTES (64 * 1024.0)
#endif
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

static int act_bits = 8; /* the I8 weights' act_bits that weight_of makes and product_def follows: 8 or 7 */

/* The definition, independently: BF16 rounds x with the usual bit trick and
   sums in double; I8 quantises each row as vit.h's manual says (onto 0..255,
   or 0..127 for act_bits 7). */
static void product_def(float *y, const float *x, const void *wq, const float *ws, int wt, const float *b, float alpha,
                        int M, int K, int N) {
    int m, n, k;
    for (m = 0; m < M; m++) {
        const float *xm = x + (size_t)m * K;
        float lo = 0.0f, hi = 0.0f, sx = 1.0f, inv = 1.0f;
        int zp = 0, finite = 1;
        float q = act_bits == 7 ? 127.0f : 255.0f;
        for (k = 0; k < K; k++) {
            lo = fminf(lo, xm[k]);
            hi = fmaxf(hi, xm[k]);
            finite &= isfinite(xm[k]) != 0;
        }
        if (wt == VIT_DTYPE_I8 && !finite) { /* NaN outputs, as the manual says */
            for (n = 0; n < N; n++) y[(size_t)m * N + n] = NAN;
            continue;
        }
        /* a range past FLT_MAX divided first, as the manual says */
        sx = isfinite(hi - lo) ? (hi - lo) / q : hi / q - lo / q;
        if (sx > 1e-30f) {
            inv = 1.0f / sx;
            zp = (int)nearbyintf(-lo * inv);
        } else {
            sx = 1.0f;
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
                    r = r < 0.0f ? 0.0f : r > q ? q : r;
                    s += (double)(r - (float)zp) * ((const int8_t *)wq)[(size_t)n * K + k];
                }
            }
            if (wt == VIT_DTYPE_I8) s = (float)s * (sx * ws[n]);
            y[(size_t)m * N + n] = (float)(alpha * s + (b ? b[n] : 0.0f));
        }
    }
}

static int packed_runs; /* products test_sizes ran on packed weights too */

/* An (N, K) weight of type wt over v (F32: data; BF16, I8: q), with row scales (or NULL), row-major. */
static vit_tensor weight_of(int wt, void *v, const float *scale, int N, int K) {
    vit_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = (vit_dtype)wt;
    if (wt == VIT_DTYPE_F32) t.data = (float *)v;
    else t.q = v;
    t.scale = scale;
    t.act_bits = wt == VIT_DTYPE_I8 ? act_bits : 0;
    t.ndim = 2;
    t.shape[0] = N;
    t.shape[1] = K;
    return t;
}

/* Rows per panel of a weight packed at load, 0 for a row-major one. */
static int panel_of(const vit_tensor *t) { return t->pack ? t->pack->panel : 0; }

/* One product of each kind on (M, K, N): fast vs ref, ref vs definition
   (unless refs is 0: the scalar products of the largest shapes took 6 s
   under ASan), and where the build packs such weights at load, packed vs
   row-major. */
static int one_refs(int wt, int M, int K, int N, float alpha, int bias, int refs) {
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
    t = weight_of(wt, wq, wt == VIT_DTYPE_I8 ? ws : NULL, N, K);
    p = vit__mm_w(y1, x, &t, bias ? b : NULL, M, K, N, xs);
    p.alpha = alpha;
    vit__matmul(&p);
    p.y = y2;
    if (refs) vit__matmul_ref(&p);
    if (vit__pack_tmp(&t)) { /* a copy of the weight packed as a file's is at load: the same bits */
        size_t bytes = (size_t)N * K * (wt == VIT_DTYPE_BF16 ? 2 : 1), r, k;
        unsigned char *tmp = (unsigned char *)malloc(vit__pack_tmp(&t)), *wp = (unsigned char *)malloc(bytes);
        int32_t *sums = (int32_t *)malloc(vit__pack_sums(&t) * sizeof(int32_t) + 1);
        vit_tensor tp = t;
        struct vit__pack rec;
        memcpy(wp, wq, bytes);
        tp.q = wp;
        vit__pack_weight(&tp, tmp, sums, &rec);
        for (r = 0; r < (size_t)N; r++) /* every element where vit__q_at says */
            for (k = 0; k < (size_t)K; k++)
                if (vit__q_at(&tp, (int32_t)r, (int32_t)k) !=
                    (wt == VIT_DTYPE_BF16 ? ((const uint16_t *)wq)[r * K + k] : ((const uint8_t *)wq)[r * K + k]))
                    ok = 0;
        p = vit__mm_w(y3, x, &tp, bias ? b : NULL, M, K, N, xs);
        p.alpha = alpha;
        vit__matmul(&p);
        snprintf(label, sizeof label, "%s M=%d K=%d N=%d: packed weight, same bits",
                 wt == VIT_DTYPE_BF16 ? "bf16" : "i8", M, K, N);
        if (memcmp(y1, y3, (size_t)M * N * sizeof(float))) {
            printf("FAIL %s\n", label);
            ok = 0;
        }
        /* one group per row (K * es = 4) packs to the same bytes */
        if (panel_of(&tp) != vit__panel_rows(wt, K) ||
            !memcmp(wp, wq, bytes) != (K * (wt == VIT_DTYPE_BF16 ? 2 : 1) == 4)) {
            printf("FAIL %s: panel %d, bytes %s\n", label, panel_of(&tp),
                   memcmp(wp, wq, bytes) ? "moved" : "as they were");
            ok = 0;
        }
        packed_runs++;
        free(tmp);
        free(wp);
        free(sums);
    }
    if (!refs) goto done;
    product_def(y3, x, wq, ws, wt, bias ? b : NULL, alpha, M, K, N);
    /* BF16: rounding order only (K * 2^-24 of the sum of |x w|, about
       sqrt(K) here); I8: S is exact, the last multiply-add may round
       apart, or S itself past 2^24 without the dot-product kernel. */
    snprintf(label, sizeof label, "%s M=%d K=%d N=%d fast", wt == VIT_DTYPE_BF16 ? "bf16" : "i8", M, K, N);
    ok &= check_close(label, y1, y2, (size_t)M * N, wt == VIT_DTYPE_BF16 ? 4e-7 * K : 1e-6, 1e-6);
    snprintf(label, sizeof label, "%s M=%d K=%d N=%d ref vs definition", wt == VIT_DTYPE_BF16 ? "bf16" : "i8", M, K, N);
    ok &= check_close(label, y2, y3, (size_t)M * N, wt == VIT_DTYPE_BF16 ? 4e-7 * K : 1e-6, 1e-6);
done:
    for (i = 0; i < 64; i++) ok &= xs[xs_bytes + i] == 0xA5;
    free(x); free(w); free(b); free(y1); free(y2); free(y3); free(ws); free(wq); free(xs);
    return ok;
}

/* Under AddressSanitizer (make test's clang -O0 build) the scalar references of test_sizes' grid took most of the
   step's 36-49 s (perf: the definition in double, vit__matmul_ref and their per-element widening and copies, 65%;
   the fast products 15%). Every other build holds each shape's fast product to them; this one runs each shape's
   fast product, packed and row-major, under the sanitizer, and the references on a quarter of the grid; and one()
   the references of its shapes under 2^18 multiply-adds there (the larger ones' had taken the step 27 s of CPU, 17 s
   without them). */
#if defined(__SANITIZE_ADDRESS__)
#define QUANT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QUANT_ASAN 1
#endif
#endif
#ifndef QUANT_ASAN
#define QUANT_ASAN 0
#endif

static int one(int wt, int M, int K, int N, float alpha, int bias) {
    return one_refs(wt, M, K, N, alpha, bias, !QUANT_ASAN || (double)M * K * N < 262144.0);
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
                    ok &= one_refs(wt, M, K, N, (M + ni) % 4 ? 1.0f : 0.37f, (M + ki) % 2,
                                   !QUANT_ASAN || (M + ki + ni) % 4 == 0);
                    runs++;
                }
    ok &= one(VIT_DTYPE_BF16, 197, 768, 200, 1.0f, 1) & one(VIT_DTYPE_I8, 197, 768, 200, 1.0f, 1);
    /* three whole panels packed at load: a pair on the wide tiles (AVX-512), the third on the MR x NR ones */
    ok &= one(VIT_DTYPE_BF16, 23, 300, 96, 1.0f, 1) & one(VIT_DTYPE_I8, 23, 300, 96, 0.37f, 0);
    runs += 4;
    { /* where a build has AMX, its tiles of 16 and 32 rows, K past a panel block (BF16 512, I8 1024), a partial
         panel after the whole ones */
        static const int Ma[] = {16, 17, 31, 32, 33, 50}, Ka[] = {64, 576, 1088}, Na[] = {32, 40, 96};
        int a, b, c;
        for (wt = VIT_DTYPE_BF16; wt <= VIT_DTYPE_I8; wt++)
            for (a = 0; a < 6; a++)
                for (b = 0; b < 3; b++)
                    for (c = 0; c < 3; c++)
                        if ((a + b + c) % 3 == 0 || (b == 0 && c == 1)) { /* a third, and every M at K 64 */
                            ok &= one(wt, Ma[a], Ka[b], Na[c], c ? 1.0f : 0.37f, (a + c) % 2);
                            runs++;
                        }
    }
    /* converted x past 2 MiB: a weight packed at load runs blocks of rows against all its panels (vit__xs_row_blocks:
       3 or 4 blocks by the threads, their bounds spread evenly at multiples of 32 rows on the AMX tiles, of MR on
       the others), packed here all rows a panel: their bits */
    ok &= one_refs(VIT_DTYPE_BF16, 1100, 1088, 33, 1.0f, 1, 0) & one_refs(VIT_DTYPE_I8, 1100, 2048, 33, 0.37f, 0, 0);
    runs += 2;
    printf("  %d shapes, %d of them packed too (AMX tiles in this build: %s)\n", runs, packed_runs,
           VIT__AMX ? "yes" : "no");
    expect(ok, "bf16 and i8 products: fast equals _ref, _ref equals the definition");

    /* x rounded to 7 bits (a file's activation_bits 7): on AVX2 without VNNI its own tile (vit__x_narrow) */
    act_bits = 7;
    ok = 1;
    runs = 0;
    for (M = 1; M <= 17; M++)
        for (ki = 0; ki < (int)(sizeof Ks / sizeof Ks[0]); ki++)
            for (ni = 0; ni < (int)(sizeof Ns / sizeof Ns[0]); ni++)
                if ((M + ki + ni) % 7 == 0 && (Ks[ki] < 600 || (M + ki) % 2)) { /* a seventh of them */
                    ok &= one(VIT_DTYPE_I8, M, Ks[ki], Ns[ni], (M + ni) % 4 ? 1.0f : 0.37f, (M + ki) % 2);
                    runs++;
                }
    ok &= one(VIT_DTYPE_I8, 197, 768, 200, 1.0f, 1) & one(VIT_DTYPE_I8, 23, 300, 96, 0.37f, 0) &
          one_refs(VIT_DTYPE_I8, 1100, 2048, 33, 0.37f, 0, 0);
    act_bits = 8;
    printf("  %d shapes with x on 7 bits\n", runs + 3);
    expect(ok, "i8 products with x on 7 bits: fast equals _ref, _ref equals the definition");
}

/* F32 weights packed as a file's are at load (vit__pack_weight) give the
   bits of the row-major ones on every path: the tiles (a last partial
   panel, k blocks, both blockings of rows), the few-rows product
   and the dot products (which read a packed row NR floats apart), with
   alpha and bias, and on some shapes an epilogue (the wide tiles add a
   layer scale and residual as they store, others after the tile); each
   element lies where vit__q_off says, and rows copy out as they were. */
static void test_f32_packed(void) {
    /* 800 rows: past 2 VIT__MC; x's row blocks each run against every panel in turn, at K 33 two of 408 rows
       (from 64 KiB, VIT__MC_BYTES), at K 257 three of about VIT__MC rows (its rows too wide for 64 KiB); at 8
       threads those blocks would be thin, and each panel runs its k blocks over VIT__MC rows at a time */
    static const int Ms[] = {1, 2, 3, 4, 5, 12, 13, 16, 17, 40, 800, 7}, Ks[] = {1, 3, 16, 33, 256, 257, 600};
    /* 1210: x packed at K 600 (two k blocks, 17 rows), and at K 256 on the few-rows product (7 rows) */
    static const int Ns[] = {1, 31, 32, 33, 64, 100, 1210};
    int im, ik, in, ok = 1, runs = 0;
    for (im = 0; im < 12; im++)
        for (ik = 0; ik < 7; ik++)
            for (in = 0; in < 7; in++) {
                int M = Ms[im], K = Ks[ik], N = Ns[in], bad = 0;
                float *x = randv((size_t)M * K, 1.0f), *w = randv((size_t)N * K, 0.1f), *b = randv((size_t)N, 0.5f);
                float *wp = (float *)malloc((size_t)N * K * sizeof(float)), *y1 = randv((size_t)M * N, 1.0f);
                float *y2 = randv((size_t)M * N, 1.0f), row[600], *res = randv((size_t)M * N, 1.0f);
                float *gam = randv((size_t)N, 1.0f);
                vit__epi e;
                unsigned char *tmp;
                struct vit__pack rec;
                vit_tensor t, tp, d;
                vit__mm p;
                size_t r, k;
                void *xs;
                float *xl, *lnw, *lnb;
                vit__ln ln;
                /* the long rows on half the shapes; 800 rows at K 33 and 257 (past one k block) and N 33 and 100
                   (a partial panel after whole ones) only: under ASan at -O0 each such shape costs about a second */
                if (((im + ik + in) % 2 && K > 256) || (M > 40 && ((K != 33 && K != 257) || (N != 33 && N != 100))) ||
                    (N > 100 && !(K == 600 && M == 17) && !(K == 256 && M == 7))) {
                    free(x); free(w); free(b); free(wp); free(y1); free(y2); free(res); free(gam);
                    continue;
                }
                xs = vit__mm_scratch(VIT_DTYPE_F32, M, K) ? malloc(vit__mm_scratch(VIT_DTYPE_F32, M, K)) : NULL;
                xl = randv((size_t)M * K, 0.0f); lnw = randv((size_t)K, 1.0f); lnb = randv((size_t)K, 0.5f);
                t = weight_of(VIT_DTYPE_F32, w, NULL, N, K);
                tp = t;
                memcpy(wp, w, (size_t)N * K * sizeof(float));
                tp.data = wp;
                tmp = (unsigned char *)malloc(vit__pack_tmp(&t) + 1);
                vit__pack_weight(&tp, tmp, NULL, &rec);
                if (panel_of(&tp) != (N >= vit__panel_rows(VIT_DTYPE_F32, K) ? vit__panel_rows(VIT_DTYPE_F32, K) : 0))
                    bad |= 1;
                d = t;
                d.shape[0] = 1;
                d.data = row;
                for (r = 0; r < (size_t)N; r++) {
                    for (k = 0; k < (size_t)K; k++)
                        if (wp[vit__q_off(&tp, (int32_t)r, (int32_t)k) / 4] != w[r * K + k]) bad |= 2;
                    vit__row_copy(&d, 0, &tp, (int32_t)r);
                    if (memcmp(row, w + r * K, (size_t)K * sizeof(float))) bad |= 4;
                }
                e.act = ik % 3 == 2 ? VIT_ACT_GELU : VIT__EPI_NONE; e.g = in % 2 ? gam : NULL; e.r = res; e.ldr = N;
                p = vit__mm_w(y1, x, &t, (ik + in) % 2 ? b : NULL, M, K, N, NULL);
                p.alpha = im % 3 ? 1.0f : 0.37f;
                p.e = (im + in) % 2 ? &e : NULL;
                vit__matmul(&p);
                p = vit__mm_w(y2, x, &tp, (ik + in) % 2 ? b : NULL, M, K, N, NULL);
                p.alpha = im % 3 ? 1.0f : 0.37f;
                p.e = (im + in) % 2 ? &e : NULL;
                vit__matmul(&p);
                if (memcmp(y1, y2, (size_t)M * N * sizeof(float))) bad |= 8;
                if (xs) { /* x packed into the scratch for the tiles where N >= 2 K (vit__xp_use: AVX2), w packed
                             or not */
                    int pk;
                    for (pk = 0; pk < 2; pk++) {
                        vit__mm q = vit__mm_w(y1, x, pk ? &tp : &t, (ik + in) % 2 ? b : NULL, M, K, N, xs);
                        q.alpha = p.alpha;
                        q.e = p.e;
                        memset(y1, 0, (size_t)M * N * sizeof(float));
                        vit__matmul(&q);
                        if (memcmp(y1, y2, (size_t)M * N * sizeof(float))) bad |= 32;
                    }
                }
                if (xs && vit__ln_fuses(&t, K)) { /* LN(x) as x is packed (or, on the few-rows and dot-product
                                                     paths, into the scratch first): vit_k_layernorm's bits */
                    vit__mm q = p;
                    ln.w = lnw; ln.b = lnb; ln.eps = 1e-5f;
                    vit_k_layernorm(xl, x, lnw, lnb, M, K, ln.eps);
                    q.x = xl;
                    vit__matmul(&q);
                    q = p;
                    q.y = y1;
                    q.xs = xs;
                    q.ln = &ln;
                    vit__matmul(&q);
                    if (memcmp(y1, y2, (size_t)M * N * sizeof(float))) bad |= 64;
                    p = q; /* and below, LN(x) packed: every thread count */
                }
                if (M == 800) { /* threads take its blocks of rows or (8) its panels: the same bits for 1, 3, 8 */
                    static const int ths[] = {1, 3, 8};
                    int nt = vit_get_threads(), it;
                    p.y = y1;
                    for (it = 0; it < 3; it++) {
                        vit_set_threads(ths[it]);
                        memset(y1, 0, (size_t)M * N * sizeof(float));
                        vit__matmul(&p);
                        if (memcmp(y1, y2, (size_t)M * N * sizeof(float))) bad |= 16;
                    }
                    vit_set_threads(nt);
                }
                if (bad) printf("FAIL f32 packed M=%d K=%d N=%d: %s%s%s%s%s%s%s\n", M, K, N, bad & 1 ? "panel " : "",
                                bad & 2 ? "element " : "", bad & 4 ? "row " : "", bad & 8 ? "bits " : "",
                                bad & 16 ? "threads " : "", bad & 32 ? "x packed " : "", bad & 64 ? "layernorm" : "");
                ok &= !bad;
                runs++;
                free(x); free(w); free(b); free(wp); free(y1); free(y2); free(tmp); free(res); free(gam);
                free(xs); free(xl); free(lnw); free(lnb);
            }
    printf("  %d f32 shapes packed (%d rows a panel in this build)\n", runs, vit__panel_rows(VIT_DTYPE_F32, 8));
    expect(ok, "f32 products on packed weights: the bits of row-major ones");
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
        t = weight_of(wt, wq, ws, N, K);
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

/* The fused epilogue on a quantised product (layer scale and residual
   too; for I8 done inside the finish, and streamed when y is large; on a
   row-major weight and, where the build packs at load, a packed copy: the
   AMX tiles finish those rows in their own code) equals the product then
   the kernels; and the bits do not depend on the thread count. */
static void test_epilogue_threads(int M, int K, int N) {
    int wt, act;
    float *x = randv((size_t)M * K, 1.0f), *w = randv((size_t)N * K, 0.1f), *b = randv((size_t)N, 0.5f),
          *r = randv((size_t)M * N, 1.0f), *g = randv((size_t)N, 1.0f);
    /* y 64-byte aligned: a y of more than 4 MB is then streamed to memory (VIT__Y_STREAM_BYTES, set above) */
    float *y1a = randv((size_t)M * N + 16, 1.0f), *y2a = randv((size_t)M * N + 16, 1.0f), *ws = randv((size_t)N, 1.0f);
    float *y1 = y1a + (64 - (uintptr_t)y1a % 64) % 64 / 4, *y2 = y2a + (64 - (uintptr_t)y2a % 64) % 64 / 4;
    for (wt = VIT_DTYPE_BF16; wt <= VIT_DTYPE_I8; wt++) {
        void *wq = wt == VIT_DTYPE_BF16 ? (void *)to_bf16(w, (size_t)N * K) : (void *)to_i8(w, N, K, ws);
        void *xs = malloc(vit__mm_scratch(wt, M, K) + 1);
        vit_tensor t, tp;
        size_t bytes = (size_t)N * K * (wt == VIT_DTYPE_BF16 ? 2 : 1);
        unsigned char *wp = (unsigned char *)malloc(bytes), *tmp;
        int32_t *sums;
        struct vit__pack rec;
        t = weight_of(wt, wq, ws, N, K);
        tp = t;
        memcpy(wp, wq, bytes);
        tp.q = wp;
        tmp = (unsigned char *)malloc(vit__pack_tmp(&t) + 1);
        sums = (int32_t *)malloc(vit__pack_sums(&t) * sizeof(int32_t) + 1);
        vit__pack_weight(&tp, tmp, sums, &rec);
        for (act = 0; act < 8; act++) { /* and the GELU of an I8 fc1 (vit__mlp_core) */
            static const int acts[4] = {VIT__EPI_NONE, VIT_ACT_RELU, VIT_ACT_GELU, VIT__ACT_GELU_I8};
            vit__epi e;
            vit__mm p = vit__mm_w(y1, x, act < 4 ? &t : &tp, b, M, K, N, xs);
            int i;
            e.act = acts[act % 4]; e.g = act % 4 >= 2 || act == 4 ? g : NULL; e.r = r; e.ldr = N;
            p.e = &e;
            vit__matmul(&p);
            vit__dense(y2, x, &t, b, M, K, N, xs);
            if (e.act == VIT_ACT_GELU) vit_k_gelu(y2, y2, M * N);
            if (e.act == VIT__ACT_GELU_I8) vit_k_act(y2, y2, M * N, (vit_act)VIT__ACT_GELU_I8);
            if (e.act == VIT_ACT_RELU) vit_k_relu(y2, y2, M * N);
            for (i = 0; i < M * N; i++) y2[i] = (e.g ? y2[i] * g[i % N] : y2[i]) + r[i];
            expect(memcmp(y1, y2, (size_t)M * N * sizeof(float)) == 0,
                   act < 4 ? "quantised product: fused epilogue equals the kernels"
                           : "quantised product, packed weight: fused epilogue equals the kernels");
        }
        /* LayerNorm in the conversion of x (vit__mm.ln, where the SIMD kernels convert x): the bits of
           vit_k_layernorm then the product; packed or not (the small shapes: ASan's time) */
        if (vit__ln_fuses(&t, K) && M * N <= 65536) {
            float *lw = randv((size_t)K, 1.0f), *lb = randv((size_t)K, 0.5f), *xl = randv((size_t)M * K, 0.0f);
            vit__ln ln;
            int pk;
            ln.w = lw; ln.b = lb; ln.eps = 1e-6f;
            vit_k_layernorm(xl, x, lw, lb, M, K, ln.eps);
            for (pk = 0; pk < 2; pk++) {
                vit__mm p = vit__mm_w(y1, x, pk ? &tp : &t, b, M, K, N, xs);
                p.ln = &ln;
                vit__matmul(&p);
                vit__dense(y2, xl, pk ? &tp : &t, b, M, K, N, xs);
                expect(memcmp(y1, y2, (size_t)M * N * sizeof(float)) == 0,
                       "quantised product of LN(x), normalised as converted: the bits of vit_k_layernorm first");
            }
            free(lw); free(lb); free(xl);
        }
        {
            int nt = vit_get_threads(), pk;
            for (pk = 0; pk < 2; pk++) { /* packed: claims of pairs of panels on the wide tiles (AVX-512) */
                vit_set_threads(1);
                vit__dense(y1, x, pk ? &tp : &t, b, M, K, N, xs);
                vit_set_threads(2);
                vit__dense(y2, x, pk ? &tp : &t, b, M, K, N, xs);
                expect(memcmp(y1, y2, (size_t)M * N * sizeof(float)) == 0,
                       pk ? "quantised product, packed weight: bit-identical for 1 and 2 threads"
                          : "quantised product bit-identical for 1 and 2 threads");
            }
            vit_set_threads(nt);
        }
        free(wq); free(wp); free(tmp); free(sums);
        free(xs);
    }
    free(x); free(w); free(b); free(r); free(g); free(y1a); free(y2a); free(ws);
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
    t = weight_of(VIT_DTYPE_I8, q, ws, N, K);
    expect(vit__mm_scratch(VIT_DTYPE_I8, M, K) <= sizeof xs, "the extremes' scratch fits");
    p = vit__mm_w(y1, x, &t, b, M, K, N, xs);
    vit__matmul(&p);
    p.y = y2;
    vit__matmul_ref(&p);
    expect(check_close("i8 extremes fast", y1, y2, (size_t)M * N, 1e-6, 1e-6),
           "i8 product at the extremes (x - 128 = -128, 127; w = +-127) equals _ref");
}

/* Rows that are not finite, or whose range overflows float, never reach an
   int conversion (UBSan in every build of make test would stop here): a row
   holding a NaN or an Inf gives NaN outputs (F32's are not finite either),
   in the fast product and its _ref, on row-major and packed weights; a
   finite row of +-3e38 (hi - lo past FLT_MAX) gives finite outputs that
   equal _ref's and the definition's in double. Sizes take the tiles (M >=
   4), the dot products (M < 4) and vector tails (K % VW != 0). */
static void test_nonfinite_rows(void) {
    static const int Ms[2] = {9, 2}, Ks[2] = {77, 64};
    int im, ik, m, n, packed;
    for (im = 0; im < 2; im++)
        for (ik = 0; ik < 2; ik++)
            for (packed = 0; packed < 2; packed++) {
                int M = Ms[im], K = Ks[ik], N = 40, bad = 0, rows = packed ? vit__panel_rows(VIT_DTYPE_I8, K) : 0;
                float *x = randv((size_t)M * K, 1.0f), *w = randv((size_t)N * K, 0.1f), *ws = randv((size_t)N, 1.0f);
                float *y1 = randv((size_t)M * N, 1.0f), *y2 = randv((size_t)M * N, 1.0f);
                float *y3 = randv((size_t)M * N, 1.0f);
                int8_t *q = to_i8(w, N, K, ws);
                unsigned char *xs = (unsigned char *)malloc(vit__mm_scratch(VIT_DTYPE_I8, M, K) + 1);
                int32_t *sums = NULL;
                unsigned char *tmp = NULL;
                struct vit__pack rec;
                char label[128];
                vit_tensor t;
                vit__mm p;
                if (packed && !rows) { /* this build keeps I8 weights row-major */
                    free(x); free(w); free(ws); free(y1); free(y2); free(y3); free(q); free(xs);
                    continue;
                }
                /* row 0 NaN, row 1 +Inf, last -Inf (row M-1 = 1 when M = 2: Inf), row 2.. some +-3e38 */
                x[3] = NAN;
                x[(size_t)1 * K + K - 1] = INFINITY;
                x[(size_t)(M - 1) * K + K / 2] = M > 2 ? -INFINITY : INFINITY;
                for (m = 2; m < M - 1; m++) {
                    x[(size_t)m * K + m] = 3e38f;
                    if (m % 2) x[(size_t)m * K + K - 2] = -3e38f;
                }
                t = weight_of(VIT_DTYPE_I8, q, ws, N, K);
                p = vit__mm_w(y2, x, &t, NULL, M, K, N, xs);
                vit__matmul_ref(&p);
                product_def(y3, x, q, ws, VIT_DTYPE_I8, NULL, 1.0f, M, K, N);
                if (packed) {
                    sums = (int32_t *)malloc(vit__pack_sums(&t) * sizeof(int32_t) + 4);
                    tmp = (unsigned char *)malloc(vit__pack_tmp(&t));
                    vit__pack_weight(&t, tmp, sums, &rec);
                }
                p = vit__mm_w(y1, x, &t, NULL, M, K, N, xs);
                vit__matmul(&p);
                for (m = 0; m < M; m++) {
                    int want_nan = m == 0 || m == 1 || m == M - 1;
                    for (n = 0; n < N; n++) {
                        size_t i = (size_t)m * N + n;
                        if (want_nan ? !(isnan(y1[i]) && isnan(y2[i]))
                                     : !(isfinite(y1[i]) && isfinite(y2[i]) &&
                                         fabsf(y1[i] - y2[i]) <= 1e-6f * fabsf(y2[i]) &&
                                         fabs((double)y2[i] - y3[i]) <= 1e-5 * fabs((double)y3[i]) + 1e-30)) {
                            if (bad++ < 3)
                                printf("  row %d col %d: fast %g, ref %g, definition %g (%s)\n", m, n, y1[i], y2[i],
                                       y3[i], want_nan ? "want NaN" : "want finite and equal");
                        }
                    }
                }
                snprintf(label, sizeof label,
                         "i8 %dx%dx%d%s: NaN and Inf rows give NaN, rows of +-3e38 finite and equal to _ref", M, K,
                         N, packed ? " (packed)" : "");
                expect(bad == 0, label);
                free(x); free(w); free(ws); free(y1); free(y2); free(y3); free(q); free(xs); free(sums); free(tmp);
            }
}

/* Quantised weights a program builds by hand are checked where a module
   takes them: each incomplete one (I8 without scales, packed I8 without
   column sums, BF16 without bits, a panel this build does not pack, F32
   without data) is VIT_ERR_ARG naming the weight, never a crash; the
   complete ones run. */
static void test_handmade_weights(void) {
    enum { HM_IN = 64, HM_HID = 96, HM_OUT = 40 }; /* windows.h defines IN and OUT */
    float *w1 = randv((size_t)HM_HID * HM_IN, 0.1f), *w2 = randv((size_t)HM_OUT * HM_HID, 0.1f), s1[HM_HID], s2[HM_OUT];
    int8_t *q1 = to_i8(w1, HM_HID, HM_IN, s1), *q2 = to_i8(w2, HM_OUT, HM_HID, s2);
    int32_t sums[4096];
    int32_t shape[2] = {3, HM_IN}, s3[3] = {1, 3, 32};
    vit_mlp_params mp;
    vit_mlp_weights mw;
    vit_mha_params hp;
    vit_mha_weights hw;
    vit_arena a;
    vit_tensor x, y;
    int c;
    static const char *cases[8] = {"complete", "scale NULL", "a packing without sums", "q NULL",
                                   "a packing of panel 7", "F32 data NULL", "unknown dtype", "act_bits 6"};
    static const char *want[8] = {"", "is I8 with scale NULL", "is not this weight's", "is BF16 with q NULL",
                                  "is not this weight's", "is F32 with data NULL", "has an unknown dtype",
                                  "act_bits neither 8 nor 7"};
    /* a loaded weight's record copied onto others: only vit.h makes them, but a program can copy one */
    struct vit__pack nosums, p7;
    vit_arena_init_alloc(&a, 1 << 20);
    vit_tensor_init(&a, &x, 2, shape);
    memcpy(x.data, w1, sizeof(float) * 3 * HM_IN);
    memset(sums, 0, sizeof sums);
    memset(&mp, 0, sizeof mp);
    mp.in_dim = HM_IN; mp.hidden_dim = HM_HID; mp.out_dim = HM_OUT; mp.act = VIT_ACT_GELU;
    for (c = 0; c < 8; c++) {
        vit_result r;
        char label[160];
        memset(&mw, 0, sizeof mw);
        mw.fc1_w.ndim = 2; mw.fc1_w.shape[0] = HM_HID; mw.fc1_w.shape[1] = HM_IN;
        mw.fc1_w.dtype = VIT_DTYPE_I8; mw.fc1_w.q = q1; mw.fc1_w.scale = s1;
        mw.fc2_w.ndim = 2; mw.fc2_w.shape[0] = HM_OUT; mw.fc2_w.shape[1] = HM_HID;
        mw.fc2_w.dtype = VIT_DTYPE_I8; mw.fc2_w.q = q2; mw.fc2_w.scale = s2;
        if (c == 1) mw.fc2_w.scale = NULL;
        if (c == 2) { /* a packing as this build's would be, but no sums (where the build does not pack: any) */
            nosums.panel = vit__panel_rows(VIT_DTYPE_I8, HM_HID) ? vit__panel_rows(VIT_DTYPE_I8, HM_HID) : 32;
            nosums.sums = NULL;
            mw.fc2_w.pack = &nosums;
        }
        if (c == 3) { mw.fc1_w.dtype = VIT_DTYPE_BF16; mw.fc1_w.q = NULL; }
        if (c == 4) {
            p7.panel = 7;
            p7.sums = sums;
            mw.fc1_w.pack = &p7;
        }
        if (c == 5) { mw.fc2_w.dtype = VIT_DTYPE_F32; mw.fc2_w.q = NULL; }
        if (c == 6) mw.fc1_w.dtype = (vit_dtype)9;
        if (c == 7) mw.fc1_w.act_bits = 6;
        r = vit_mlp_forward(&a, &mp, &mw, &x, &y, NULL);
        snprintf(label, sizeof label, "mlp with hand-built I8 weights, %s: %s", cases[c],
                 c ? "VIT_ERR_ARG naming it" : "runs");
        if (c == 0) {
            expect(r == VIT_OK && y.ndim == 2 && isfinite(y.data[0]), label);
        } else {
            expect(r == VIT_ERR_ARG && strstr(vit_last_error(), want[c]) != NULL &&
                       strstr(vit_last_error(), c == 1 || c == 2 || c == 5 ? "fc2_w" : "fc1_w") != NULL,
                   label);
        }
        if (r != VIT_OK) printf("  %s\n", vit_last_error());
    }

    /* the same check in mha (its fused qkv) */
    memset(&hp, 0, sizeof hp);
    memset(&hw, 0, sizeof hw);
    hp.dim = 32; hp.heads = 4;
    hw.qkv_w.ndim = 2; hw.qkv_w.shape[0] = 96; hw.qkv_w.shape[1] = 32;
    hw.qkv_w.dtype = VIT_DTYPE_I8; hw.qkv_w.q = q1;
    hw.out_w.ndim = 2; hw.out_w.shape[0] = 32; hw.out_w.shape[1] = 32;
    hw.out_w.data = w1;
    vit_tensor_init(&a, &x, 3, s3);
    expect(vit_mha_forward(&a, &hp, &hw, &x, &y, NULL) == VIT_ERR_ARG &&
               strstr(vit_last_error(), "qkv_w is I8 with scale NULL") != NULL,
           "mha with a hand-built I8 qkv_w without scales: VIT_ERR_ARG naming it");
    vit_arena_free(&a);
    free(w1); free(w2); free(q1); free(q2);
}

/* A tensor of a hand-made file: (rows, cols), or (rows) when cols is 0. */
typedef struct file_tensor {
    char name[48];
    const char *dtype;
    int rows, cols;
    const void *data;
    int kh; /* > 0: the (rows, cols) values written as a conv kernel (rows, cols / kh^2, kh, kh) */
} file_tensor;

/* A safetensors file of n tensors into out (large enough), each at a
   64-byte aligned offset; its size. */
static size_t write_file(unsigned char *out, size_t cap, const char *meta, const file_tensor *t, int n) {
    char h[4096];
    size_t len = 0, at = 0, i, start;
    size_t off[16];
    int k;
    len += (size_t)snprintf(h + len, sizeof h - len, "{\"__metadata__\":{%s}", meta);
    for (k = 0; k < n; k++) {
        size_t es = t[k].dtype[0] == 'I' ? 1 : t[k].dtype[0] == 'B' ? 2 : 4;
        size_t bytes = (size_t)t[k].rows * (t[k].cols ? t[k].cols : 1) * es;
        char shape[32];
        if (t[k].kh)
            snprintf(shape, sizeof shape, "%d,%d,%d,%d", t[k].rows, t[k].cols / (t[k].kh * t[k].kh), t[k].kh, t[k].kh);
        else if (t[k].cols)
            snprintf(shape, sizeof shape, "%d,%d", t[k].rows, t[k].cols);
        else
            snprintf(shape, sizeof shape, "%d", t[k].rows);
        off[k] = at;
        len += (size_t)snprintf(h + len, sizeof h - len,
                                ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%s],\"data_offsets\":[%zu,%zu]}", t[k].name,
                                t[k].dtype, shape, at, at + bytes);
        at = (at + bytes + 63) / 64 * 64;
    }
    len += (size_t)snprintf(h + len, sizeof h - len, "}");
    while ((8 + len) % 64) h[len++] = ' ';
    start = 8 + len;
    if (start + at > cap) { /* a test's buffer too small for its file: its own fault, said at once */
        printf("FAIL write_file: %zu bytes into a buffer of %zu\n", start + at, cap);
        exit(1);
    }
    for (i = 0; i < 8; i++) out[i] = (unsigned char)((uint64_t)len >> (8 * i));
    memcpy(out + 8, h, len);
    memset(out + start, 0, at);
    for (k = 0; k < n; k++) {
        size_t es = t[k].dtype[0] == 'I' ? 1 : t[k].dtype[0] == 'B' ? 2 : 4;
        memcpy(out + start + off[k], t[k].data, (size_t)t[k].rows * (t[k].cols ? t[k].cols : 1) * es);
    }
    return start + at;
}

/* One dense layer of a hand-made file, weight (rows, cols) in type wt
   from random values, then its I8 scales and its F32 bias. */
static int add_dense(file_tensor *t, int n, const char *name, int wt, int rows, int cols, void **keep) {
    float *w = randv((size_t)rows * cols, 0.1f), *s = randv((size_t)rows, 1.0f), *b = randv((size_t)rows, 0.5f);
    memset(t + n, 0, (wt == VIT_DTYPE_I8 ? 3 : 2) * sizeof *t);
    snprintf(t[n].name, sizeof t[n].name, "%s.weight", name);
    t[n].dtype = wt == VIT_DTYPE_F32 ? "F32" : wt == VIT_DTYPE_BF16 ? "BF16" : "I8";
    t[n].rows = rows;
    t[n].cols = cols;
    t[n].data = wt == VIT_DTYPE_F32    ? (void *)w
                : wt == VIT_DTYPE_BF16 ? (void *)to_bf16(w, (size_t)rows * cols)
                                       : (void *)to_i8(w, rows, cols, s);
    keep[0] = (void *)(uintptr_t)t[n].data;
    n++;
    if (wt == VIT_DTYPE_I8) {
        snprintf(t[n].name, sizeof t[n].name, "%s.weight_scale", name);
        t[n].dtype = "F32";
        t[n].rows = rows;
        t[n].cols = 0;
        t[n].data = s;
        n++;
    }
    snprintf(t[n].name, sizeof t[n].name, "%s.bias", name);
    t[n].dtype = "F32";
    t[n].rows = rows;
    t[n].cols = 0;
    t[n].data = b;
    keep[1] = s;
    keep[2] = b;
    if (wt != VIT_DTYPE_F32) free(w);
    return n + 1;
}

/* The loader refuses I8 that would be silent garbage: a row scale whose
   scale * 127 overflows float (an infinite weight), and I8 anywhere but a
   dense layer's weight matrix (here a bias). And an I8 MLP given a finite
   input of +-3e38 (whose range overflows float) is not finite where the F32
   MLP of the same weights is not, and finite where it is. */
static void test_i8_file_extremes(void) {
    static unsigned char buf[1 << 16];
    static const char *meta = "\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seq_layers\",\"in_dim\":\"64\","
                              "\"hidden_dim\":\"100\",\"out_dim\":\"68\",\"act\":\"gelu\","
                              "\"quantization\":\"int8-per-channel-symmetric\"";
    file_tensor t[8], fbias;
    void *keep[6];
    int n = 0, i, bad = 0;
    size_t size;
    vit_model m, mf;
    int8_t bq[100];
    float bs[100];
    n = add_dense(t, n, "layers.0", VIT_DTYPE_I8, 100, 64, keep);
    n = add_dense(t, n, "layers.2", VIT_DTYPE_I8, 68, 100, keep + 3);

    /* scale 3e38 with q = 127: refused */
    ((float *)keep[1])[5] = 3e38f;
    size = write_file(buf, sizeof buf, meta, t, n);
    expect(vit_model_load_memory(&m, buf, size) == VIT_ERR_FORMAT && strstr(vit_last_error(), "FLT_MAX / 127") &&
               strstr(vit_last_error(), "layers.0.weight_scale"),
           "i8 load: a scale whose scale * 127 overflows float is refused");
    printf("  %s\n", vit_last_error());
    ((float *)keep[1])[5] = 0.01f;

    /* an I8 bias (with its scales): refused, naming it */
    for (i = 0; i < 100; i++) {
        bq[i] = (int8_t)(i % 50);
        bs[i] = 0.01f;
    }
    fbias = t[2]; /* the F32 bias, kept aside while an I8 one and its scales take its place */
    t[2].dtype = "I8";
    t[2].data = bq;
    t[n] = t[1];
    t[n].data = bs;
    strcpy(t[n].name, "layers.0.bias_scale");
    size = write_file(buf, sizeof buf, meta, t, n + 1);
    expect(vit_model_load_memory(&m, buf, size) == VIT_ERR_DTYPE && strstr(vit_last_error(), "'layers.0.bias' is I8"),
           "i8 load: an I8 tensor that is not a dense layer's weight is refused");
    printf("  %s\n", vit_last_error());
    t[2] = fbias;

    /* +-3e38 into the I8 MLP and the F32 MLP of its dequantised weights */
    size = write_file(buf, sizeof buf, meta, t, n);
    if (vit_model_load_memory(&m, buf, size) != VIT_OK) {
        printf("FAIL i8 mlp load: %s\n", vit_last_error());
        failed++;
    } else {
        static unsigned char fbuf[1 << 17];
        file_tensor ft[4];
        float *w0 = (float *)malloc(100 * 64 * sizeof(float)), *w2 = (float *)malloc(68 * 100 * sizeof(float));
        int32_t shape[3] = {1, 4, 64};
        size_t fsize, bytes = 0, k;
        vit_arena a1, a2;
        vit_tensor x, y1, y2;
        for (k = 0; k < 100 * 64; k++) w0[k] = ((float *)keep[1])[k / 64] * ((int8_t *)keep[0])[k];
        for (k = 0; k < 68 * 100; k++) w2[k] = ((float *)keep[4])[k / 100] * ((int8_t *)keep[3])[k];
        ft[0] = t[0]; ft[0].dtype = "F32"; ft[0].data = w0;
        ft[1] = t[2];
        ft[2] = t[3]; ft[2].dtype = "F32"; ft[2].data = w2;
        ft[3] = t[5];
        fsize = write_file(fbuf, sizeof fbuf,
                           "\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seq_layers\",\"in_dim\":\"64\","
                           "\"hidden_dim\":\"100\",\"out_dim\":\"68\",\"act\":\"gelu\"",
                           ft, 4);
        vit_arena_init_alloc(&a1, 1 << 16);
        vit_tensor_init(&a1, &x, 3, shape);
        for (k = 0; k < 4 * 64; k++) x.data[k] = (float)sin(0.37 * (double)k);
        for (k = 0; k < 64; k++) x.data[64 + k] = k % 3 ? 3e38f : -3e38f; /* row 1: hi - lo overflows */
        for (k = 0; k < 64; k++) x.data[128 + k] = 3e38f;                 /* row 2: one sign */
        x.data[192 + 7] = 1e30f;                                          /* row 3: large, finite after */
        if (vit_model_load_memory(&mf, fbuf, fsize) != VIT_OK || vit_model_memory(&m, &x, NULL, &bytes) != VIT_OK ||
            vit_arena_init_alloc(&a2, 4 * bytes) != VIT_OK || vit_model_forward(&m, &a2, &x, NULL, &y1) != VIT_OK ||
            vit_model_forward(&mf, &a2, &x, NULL, &y2) != VIT_OK) {
            printf("FAIL i8 mlp at +-3e38: %s\n", vit_last_error());
            failed++;
        } else {
            for (k = 0; k < 4 * 68; k++)
                if (!isfinite(y2.data[k]) != !isfinite(y1.data[k])) {
                    if (bad++ < 4)
                        printf("  row %d col %d: i8 %g, f32 %g\n", (int)(k / 68), (int)(k % 68), y1.data[k],
                               y2.data[k]);
                }
            expect(bad == 0, "i8 mlp at +-3e38: not finite exactly where the f32 mlp is not");
            vit_arena_free(&a2);
            vit_model_free(&mf);
        }
        vit_arena_free(&a1);
        free(w0); free(w2);
        vit_model_free(&m);
    }
    for (i = 0; i < 6; i++) free(keep[i]);
}


/* File bytes buf (size) loaded three ways: from a file written at path (packed: m[0]), from memory (row-major:
   m[1]) and from the file with keep_layout (m[2]); 0 after printing a failure. */
static int load3(vit_model *m, const unsigned char *buf, size_t size, const char *path, const char *label) {
    vit_load_opts kl;
    FILE *f;
    memset(&kl, 0, sizeof kl);
    kl.keep_layout = 1;
    if (!(f = fopen(path, "wb")) || fwrite(buf, 1, size, f) != size || fclose(f) ||
        vit_model_load_file(m, path) != VIT_OK || vit_model_load_memory(m + 1, buf, size) != VIT_OK ||
        vit_model_load_file_ex(m + 2, path, &kl) != VIT_OK) {
        printf("FAIL %s: %s\n", label, vit_last_error());
        failed++;
        return 0;
    }
    return 1;
}

/* The three models' forwards on x into y, in arena a (sized for m[0]'s; the caller frees it after a 1); 0 after
   printing a failure. */
static int forward3(vit_model *m, vit_arena *a, const vit_tensor *x, vit_tensor *y, const char *label) {
    size_t bytes = 0, most = 0;
    int i;
    for (i = 0; i < 3; i++) { /* the three may differ (a packed BF16 MLP's hidden features stay bf16) */
        if (vit_model_memory(m + i, x, NULL, &bytes) != VIT_OK) break;
        most = bytes > most ? bytes : most;
    }
    if (i < 3 || vit_arena_init_alloc(a, 3 * most) != VIT_OK) {
        printf("FAIL %s: %s\n", label, vit_last_error());
        failed++;
        return 0;
    }
    if (vit_model_forward(m, a, x, NULL, y) != VIT_OK || vit_model_forward(m + 1, a, x, NULL, y + 1) != VIT_OK ||
        vit_model_forward(m + 2, a, x, NULL, y + 2) != VIT_OK) {
        printf("FAIL %s: %s\n", label, vit_last_error());
        failed++;
        vit_arena_free(a);
        return 0;
    }
    return 1;
}

/* A model loaded from a file (its dense weights packed in place: F32 in
   every SIMD build, BF16 and I8 where the build has their dot-product
   kernels) gives the bits of the same bytes loaded from memory
   (row-major): an MLP whose layers are
   bound in place, and an MHA whose separate q, k and v are read from
   their packed panels into the fused matrix, which is then packed (from
   memory too: it is the arena's). Each has rows in a last partial panel; a second MLP, of 128 hidden features,
   whose BF16 fc1 writes fc2's x as bf16 from its tiles where the build has the wide tiles (vit__mlp_yb; loaded
   from memory, row-major, it runs through floats): the same bits; and a second MHA, 128 wide in two heads of 64
   (a scale of 1/8, folded into q), whose BF16 qkv product writes the attention's q, k and v as bf16 from its tiles
   (vit__mha_qb; from memory through floats), or whose I8 qkv product writes q and k in int8 on their scales and
   v as bf16 (vit__mha_q8, vit__tile2_i8_q8; from memory, the attention converts them from floats): the same bits. */
static void test_packed_load(const char *tmp_dir) {
    static unsigned char buf[1 << 19];
    static const char *metas[4] = {"\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seq_layers\",\"in_dim\":\"64\","
                                   "\"hidden_dim\":\"100\",\"out_dim\":\"68\",\"act\":\"gelu\"",
                                   "\"format\":\"vit.h\",\"kind\":\"mha\",\"naming\":\"proj_qkv\",\"embed_dim\":\"68\","
                                   "\"num_heads\":\"4\",\"scale_after_softmax\":\"0\"",
                                   "\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seq_layers\",\"in_dim\":\"64\","
                                   "\"hidden_dim\":\"128\",\"out_dim\":\"68\",\"act\":\"gelu\"",
                                   "\"format\":\"vit.h\",\"kind\":\"mha\",\"naming\":\"timm\",\"embed_dim\":\"128\","
                                   "\"num_heads\":\"2\",\"scale_after_softmax\":\"0\""};
    static const char *layers[4][4] = {{"layers.0", "layers.2"},
                                       {"proj_query", "proj_key", "proj_value", "final"},
                                       {"layers.0", "layers.2"},
                                       {"qkv", "proj"}};
    static const int dims[4][4][2] = {{{100, 64}, {68, 100}}, {{68, 68}, {68, 68}, {68, 68}, {68, 68}},
                                      {{128, 64}, {68, 128}}, {{384, 128}, {128, 128}}};
    static const char *names[4] = {"mlp", "mha", "mlp 128", "mha 128"};
    int kind, wt;
    for (kind = 0; kind < 4; kind++)
        for (wt = VIT_DTYPE_F32; wt <= VIT_DTYPE_I8; wt++) {
            file_tensor t[12];
            void *keep[12];
            char path[1024], label[96], meta[512];
            int mha = kind % 2, n = 0, i, nl = kind == 1 ? 4 : 2, in = kind == 1 ? 68 : kind == 3 ? 128 : 64, packs = 0;
            int32_t shape[3] = {2, 7, 0};
            size_t size, numel;
            vit_model m[3];
            vit_arena a1, a2;
            vit_tensor x, y[3];
            snprintf(meta, sizeof meta, "%s%s", metas[kind],
                     wt == VIT_DTYPE_I8 ? ",\"quantization\":\"int8-per-channel-symmetric\"" : "");
            for (i = 0; i < nl; i++)
                n = add_dense(t, n, layers[kind][i], wt, dims[kind][i][0], dims[kind][i][1], keep + 3 * i);
            size = write_file(buf, sizeof buf, meta, t, n);
            snprintf(path, sizeof path, "%s/packed_load.safetensors", tmp_dir);
            snprintf(label, sizeof label, "%s %s: file (packed) and memory (row-major) loads give the same bits",
                     names[kind],
                     wt == VIT_DTYPE_F32 ? "f32" : wt == VIT_DTYPE_BF16 ? "bf16" : "i8");
            if (!load3(m, buf, size, path, label)) continue;
            shape[2] = in;
            packs = mha ? panel_of(&m[0].mha_w.qkv_w) + panel_of(&m[0].mha_w.out_w)
                         : panel_of(&m[0].mlp_w.fc1_w) + panel_of(&m[0].mlp_w.fc2_w);
            vit_arena_init_alloc(&a1, 1 << 20);
            vit_tensor_init(&a1, &x, 3, shape);
            numel = vit_tensor_numel(&x);
            for (i = 0; i < (int)numel; i++) x.data[i] = (float)sin(0.37 * i) * 2.0f;
            if (forward3(m, &a2, &x, y, label)) {
                expect(y[0].ndim == 3 && memcmp(y[0].data, y[1].data, vit_tensor_numel(y) * sizeof(float)) == 0 &&
                           packs == 2 * vit__panel_rows(wt, 4) &&
                           panel_of(mha ? &m[1].mha_w.out_w : &m[1].mlp_w.fc1_w) == 0,
                       label);
                if (kind >= 2) {
#if VIT__WIDE && VIT__DOT_BF16 && !VIT__AMX_BUILD
                    int yb = wt == VIT_DTYPE_BF16; /* (macros a build without SIMD leaves undefined: 0 here) */
                    /* I8: q and k in int8, v bf16, where heads of 64 are the wide tile's 2 NR and q kᵀ is int8 */
                    int q8 = wt == VIT_DTYPE_I8 && VIT__DOT_I8 && 2 * VIT__NR == 64 && vit__att_mode(2) == 2;
#else
                    int yb = 0, q8 = 0;
#endif
                    snprintf(label, sizeof label, "%s %s: %s exactly where expected", names[kind],
                             wt == VIT_DTYPE_F32 ? "f32" : wt == VIT_DTYPE_BF16 ? "bf16" : "i8",
                             mha ? "qkv writes the attention's q, k, v as it reads them"
                                 : "fc1 writes fc2's x as bf16");
                    expect(mha ? vit__mha_qb(&m[0].mha, &m[0].mha_w, 14) == yb &&
                                     !vit__mha_qb(&m[1].mha, &m[1].mha_w, 14) &&
                                     vit__mha_q8(&m[0].mha, &m[0].mha_w, 14) == q8 &&
                                     !vit__mha_q8(&m[1].mha, &m[1].mha_w, 14)
                               : vit__mlp_yb(&m[0].mlp, &m[0].mlp_w, 14) == yb &&
                                     !vit__mlp_yb(&m[1].mlp, &m[1].mlp_w, 14),
                           label);
                }
                snprintf(label, sizeof label, "%s %s: a file loaded with keep_layout stays row-major, same bits",
                         names[kind],
                         wt == VIT_DTYPE_F32 ? "f32" : wt == VIT_DTYPE_BF16 ? "bf16" : "i8");
                expect(memcmp(y[0].data, y[2].data, vit_tensor_numel(y) * sizeof(float)) == 0 &&
                           panel_of(mha ? &m[2].mha_w.out_w : &m[2].mlp_w.fc1_w) == 0 &&
                           panel_of(&m[2].mlp_w.fc2_w) == 0, /* (MHA's fused qkv is made at load: packed) */
                       label);
                vit_arena_free(&a2);
            }
            vit_arena_free(&a1);
            for (i = 0; i < 3; i++) vit_model_free(m + i);
            for (i = 0; i < 3 * nl; i++) free(keep[i]);
            remove(path);
        }
}

/* An I8 MLP over 600 rows (4 x 150 tokens), its 600 KB of hidden features in chunks of rows (vit__mlp_chunks, from
   64 KiB here, VIT__MLP_CHUNK_BYTES set above), gives the bits of its two products over all the rows (fc1 with GELU
   fused, then fc2), on one, two and three threads (chunks on threads of their own); an MLP of 14 rows is not
   chunked. */
static void test_mlp_chunks(const char *tmp_dir) {
    static unsigned char buf[1 << 19];
    static const char *meta = "\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seq_layers\",\"in_dim\":\"64\","
                              "\"hidden_dim\":\"256\",\"out_dim\":\"68\",\"act\":\"gelu\","
                              "\"quantization\":\"int8-per-channel-symmetric\"";
    enum { CB = 4, CN = 150, CR = CB * CN, CIN = 64, CH = 256, COUT = 68 }; /* (windef.h defines IN and OUT) */
    file_tensor t[6];
    void *keep[6];
    char path[1024];
    int n = 0, i, k, th, ok = 1, okb = 1, chunked = 1, nt = vit_get_threads();
    float gam[COUT], lnw[CIN], lnb[CIN], *res = malloc((size_t)CR * COUT * sizeof(float));
    vit__ln ln;
    vit__epi e2;
    int32_t shape[3] = {CB, CN, CIN}, oshape[3] = {CB, CN, COUT};
    FILE *f;
    size_t size;
    vit_model m;
    vit_arena a;
    vit_tensor x, y;
    float *h = malloc((size_t)CR * CH * sizeof(float)), *ref = malloc((size_t)2 * CR * COUT * sizeof(float));
    void *xs;
    n = add_dense(t, n, "layers.0", VIT_DTYPE_I8, CH, CIN, keep);
    n = add_dense(t, n, "layers.2", VIT_DTYPE_I8, COUT, CH, keep + 3);
    size = write_file(buf, sizeof buf, meta, t, n);
    snprintf(path, sizeof path, "%s/mlp_chunks.safetensors", tmp_dir);
    f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, size, f) != size || fclose(f) || vit_model_load_file(&m, path) != VIT_OK) {
        printf("FAIL i8 mlp in chunks: %s\n", vit_last_error());
        failed++;
        for (i = 0; i < 6; i++) free(keep[i]);
        free(h);
        free(ref);
        free(res);
        return;
    }
    vit_arena_init_alloc(&a, (size_t)64 << 20);
    vit_tensor_init(&a, &x, 3, shape);
    for (i = 0; i < CR * CIN; i++) x.data[i] = (float)sin(0.37 * i) * 2.0f + (i % 7 == 0 ? 3.0f : 0.0f);
    for (i = 0; i < COUT; i++) gam[i] = 0.5f + 0.01f * (float)i;
    for (i = 0; i < CIN; i++) {
        lnw[i] = 1.0f + 0.02f * (float)(i % 5);
        lnb[i] = 0.1f * (float)(i % 3);
    }
    for (i = 0; i < CR * COUT; i++) res[i] = (float)cos(0.11 * i);
    ln.w = lnw; ln.b = lnb; ln.eps = 1e-6f;
    e2.act = VIT__EPI_NONE; e2.g = gam; e2.r = res; e2.ldr = COUT;
    xs = malloc(vit__mm_scratch(VIT_DTYPE_I8, CR, CH));
    for (k = 0; k < 2; k++) { /* the references: the two products over all the rows, as vit__mlp_core runs them
                                 unchunked; then with a LayerNorm on x and an encoder block's epilogue (layer
                                 scale, residual) in fc2 */
        vit__epi e1;
        vit__mm f1 = vit__mm_w(h, x.data, &m.mlp_w.fc1_w, m.mlp_w.fc1_b.data, CR, CIN, CH, xs),
                f2 = vit__mm_w(ref + (size_t)k * CR * COUT, h, &m.mlp_w.fc2_w, m.mlp_w.fc2_b.data, CR, CH, COUT, xs);
        e1.act = VIT__ACT_GELU_I8; /* vit__mlp_core's for an I8 fc1 */ e1.g = NULL; e1.r = NULL; e1.ldr = 0;
        f1.e = &e1;
        f1.ln = k ? &ln : NULL;
        f2.e = k ? &e2 : NULL;
        vit__matmul(&f1);
        vit__matmul(&f2);
    }
    free(xs);
    for (th = 1; th <= 3; th++) {
        size_t mark = vit_arena_mark(&a);
        vit_set_threads(th);
        chunked &= vit__mlp_chunks(&m.mlp, &m.mlp_w, CR, th) >= th && vit__mlp_chunks(&m.mlp, &m.mlp_w, 14, th) == 0;
        ok &= vit_model_forward(&m, &a, &x, NULL, &y) == VIT_OK && vit_tensor_numel(&y) == (size_t)CR * COUT &&
              memcmp(y.data, ref, (size_t)CR * COUT * sizeof(float)) == 0;
        vit_arena_rewind(&a, mark);
        okb &= vit_tensor_init(&a, &y, 3, oshape) == VIT_OK &&
               vit__mlp_core(&a, &m.mlp, &m.mlp_w, x.data, CIN, &ln, y.data, &e2, CR) == VIT_OK &&
               memcmp(y.data, ref + CR * COUT, (size_t)CR * COUT * sizeof(float)) == 0;
        vit_arena_rewind(&a, mark);
    }
    vit_set_threads(nt);
    expect(chunked, "i8 mlp: 600 rows in chunks, a multiple of the threads; 14 rows not");
    expect(ok, "i8 mlp in chunks: the bits of its products over all rows, on 1, 2 and 3 threads");
    expect(okb, "i8 mlp in chunks, x normalised, layer scale and residual: the bits of its products over all rows");
    vit_arena_free(&a);
    vit_model_free(&m);
    for (i = 0; i < 6; i++) free(keep[i]);
    free(h);
    free(ref);
    free(res);
    remove(path);
}

/* A patch embedding in a BF16 and an I8 file: its conv kernel kept as the (dim, in_channels P P) matrix of a dense
   weight, each patch's pixels (im2col, here by hand) one row of x through the definition of the product
   (product_def), with the same bits from the file (packed), from memory (row-major) and with keep_layout. */
static void test_patch_lowp(const char *tmp_dir) {
    enum { PB = 2, PC = 3, PS = 32, PP = 8, PD = 40, PK = PC * PP * PP, PG = PS / PP, PN = PG * PG };
    static unsigned char buf[1 << 17];
    int wt;
    for (wt = VIT_DTYPE_BF16; wt <= VIT_DTYPE_I8; wt++) {
        file_tensor t[4];
        void *keep[3];
        char meta[512], label[128], path[1024];
        int n = add_dense(t, 0, "conv_proj", wt, PD, PK, keep), b, c, g, k;
        int32_t shape[4] = {PB, PC, PS, PS};
        float *cols = randv((size_t)PB * PN * PK, 0.0f), *yd = randv((size_t)PB * PN * PD, 0.0f);
        size_t size, i, ny = (size_t)PB * PN * PD;
        vit_model m[3];
        vit_arena a1, a2;
        vit_tensor x, y[3];
        t[0].kh = PP;
        snprintf(meta, sizeof meta,
                 "\"format\":\"vit.h\",\"kind\":\"patch_embed\",\"naming\":\"conv_proj\",\"image_size\":\"%d\","
                 "\"patch_size\":\"%d\",\"in_channels\":\"%d\",\"hidden_dim\":\"%d\",\"class_token\":\"0\","
                 "\"pos_embed\":\"0\"%s",
                 PS, PP, PC, PD, wt == VIT_DTYPE_I8 ? ",\"quantization\":\"int8-per-channel-symmetric\"" : "");
        size = write_file(buf, sizeof buf, meta, t, n);
        snprintf(label, sizeof label, "%s patch embedding: the conv kept, its product the definition's, same bits "
                 "loaded three ways", wt == VIT_DTYPE_BF16 ? "bf16" : "i8");
        snprintf(path, sizeof path, "%s/patch_lowp.safetensors", tmp_dir);
        if (!load3(m, buf, size, path, label)) continue;
        vit_arena_init_alloc(&a1, 1 << 20);
        vit_tensor_init(&a1, &x, 4, shape);
        for (i = 0; i < vit_tensor_numel(&x); i++) x.data[i] = (float)sin(0.37 * (double)i) * 2.0f;
        for (b = 0; b < PB; b++) /* patch g of image b: row b PN + g, in the kernel's (c, ky, kx) order */
            for (g = 0; g < PN; g++)
                for (c = 0; c < PC; c++)
                    for (k = 0; k < PP * PP; k++)
                        cols[((size_t)b * PN + g) * PK + (size_t)c * PP * PP + k] =
                            x.data[(((size_t)b * PC + c) * PS + g / PG * PP + k / PP) * PS + g % PG * PP + k % PP];
        product_def(yd, cols, keep[0], wt == VIT_DTYPE_I8 ? (const float *)keep[1] : NULL, wt, (const float *)keep[2],
                    1.0f, PB * PN, PK, PD);
        if (forward3(m, &a2, &x, y, label)) {
            expect(m[0].patch_w.conv_w.dtype == (vit_dtype)wt && m[0].patch_w.conv_w.ndim == 2 &&
                       panel_of(&m[0].patch_w.conv_w) == vit__panel_rows(wt, PK) &&
                       panel_of(&m[1].patch_w.conv_w) == 0 && panel_of(&m[2].patch_w.conv_w) == 0 &&
                       vit_tensor_numel(y) == ny &&
                       check_close(label, y[0].data, yd, ny, wt == VIT_DTYPE_BF16 ? 4e-7 * PK : 1e-6, 1e-6) &&
                       memcmp(y[0].data, y[1].data, ny * sizeof(float)) == 0 &&
                       memcmp(y[0].data, y[2].data, ny * sizeof(float)) == 0,
                   label);
            { /* a program's BF16 or I8 kernel left in the conv's shape: refused, not read as a matrix */
                vit_patch_weights w = m[1].patch_w; /* row-major: m[0]'s packing would be refused first */
                w.conv_w.ndim = 4;
                w.conv_w.shape[1] = PC; w.conv_w.shape[2] = w.conv_w.shape[3] = PP;
                expect(vit_patch_forward(&a2, &m[0].patch, &w, &x, y + 1, NULL) == VIT_ERR_ARG &&
                           strstr(vit_last_error(), "must be the (40, 192) matrix"),
                       "patch embedding: a BF16 or I8 kernel in the conv's shape is refused");
                printf("  %s\n", vit_last_error());
            }
            vit_arena_free(&a2);
        }
        vit_arena_free(&a1);
        for (i = 0; i < 3; i++) {
            vit_model_free(m + i);
            free(keep[i]);
        }
        free(cols);
        free(yd);
        remove(path);
    }
}

/* A file's __metadata__ activation_bits: "7" makes its I8 products round x to 0..127 (the MLP's output equals the
   two products with weights of act_bits 7, and differs from the file without it), "8" changes nothing, anything
   else is refused. */
static void test_activation_bits(void) {
    static unsigned char buf[1 << 16];
    static const char *base = "\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seq_layers\",\"in_dim\":\"64\","
                              "\"hidden_dim\":\"100\",\"out_dim\":\"68\",\"act\":\"relu\","
                              "\"quantization\":\"int8-per-channel-symmetric\"";
    static const char *bits[4] = {"", ",\"activation_bits\":\"8\"", ",\"activation_bits\":\"7\"",
                                  ",\"activation_bits\":\"6\""};
    char meta[512];
    file_tensor t[8];
    void *keep[6];
    int n = 0, i, k, ok = 1, differ = 0;
    int32_t shape[2] = {5, 64};
    float *y[3], *h = (float *)malloc(5 * 100 * sizeof(float)), *yd = (float *)malloc(5 * 68 * sizeof(float));
    unsigned char *xs = (unsigned char *)malloc(vit__mm_scratch(VIT_DTYPE_I8, 5, 100));
    size_t bytes = 0;
    vit_arena a, ax;
    vit_tensor x, out, w0, w2;
    n = add_dense(t, n, "layers.0", VIT_DTYPE_I8, 100, 64, keep);
    n = add_dense(t, n, "layers.2", VIT_DTYPE_I8, 68, 100, keep + 3);
    vit_arena_init_alloc(&a, 1 << 20);
    vit_arena_init_alloc(&ax, 1 << 12);
    vit_tensor_init(&ax, &x, 2, shape);
    for (k = 0; k < 5 * 64; k++) x.data[k] = (float)sin(0.37 * (double)k) * (k % 7 ? 1.0f : 4.0f);
    for (i = 0; i < 4; i++) {
        vit_model m;
        size_t size;
        vit_result r;
        snprintf(meta, sizeof meta, "%s%s", base, bits[i]);
        size = write_file(buf, sizeof buf, meta, t, n);
        r = vit_model_load_memory(&m, buf, size);
        if (i == 3) {
            expect(r == VIT_ERR_FORMAT && strstr(vit_last_error(), "activation_bits is '6'"),
                   "i8 load: an activation_bits other than 8 or 7 is refused");
            printf("  %s\n", vit_last_error());
            if (r == VIT_OK) vit_model_free(&m);
            continue;
        }
        y[i] = (float *)malloc(5 * 68 * sizeof(float));
        if (r != VIT_OK || vit_model_memory(&m, &x, NULL, &bytes) != VIT_OK || bytes > (1 << 19) ||
            vit_model_forward(&m, &a, &x, NULL, &out) != VIT_OK) {
            printf("FAIL activation_bits %s: %s\n", bits[i], vit_last_error());
            ok = 0;
        } else {
            char d[1024];
            memcpy(y[i], out.data, 5 * 68 * sizeof(float));
            vit_model_describe(&m, d, sizeof d);
            ok &= strstr(d, i == 2 ? "per row as they run, to 7 bits" : "per row as they run, to 8 bits") != NULL;
        }
        vit_arena_reset(&a);
        if (r == VIT_OK) vit_model_free(&m);
    }
    /* the two products by hand, their weights' act_bits 8, then 7 */
    for (i = 0; i < 2; i++) {
        act_bits = i ? 7 : 8;
        w0 = weight_of(VIT_DTYPE_I8, keep[0], (const float *)keep[1], 100, 64);
        w2 = weight_of(VIT_DTYPE_I8, keep[3], (const float *)keep[4], 68, 100);
        act_bits = 8;
        vit__dense(h, x.data, &w0, (const float *)keep[2], 5, 64, 100, xs);
        for (k = 0; k < 5 * 100; k++) h[k] = h[k] > 0.0f ? h[k] : 0.0f;
        vit__dense(yd, h, &w2, (const float *)keep[5], 5, 100, 68, xs);
        ok &= check_close(i ? "activation_bits 7 mlp" : "activation_bits 8 mlp", y[2 * i], yd, 5 * 68, 1e-6, 1e-6);
    }
    for (k = 0; k < 5 * 68; k++) differ |= fabsf(y[2][k] - y[0][k]) > 1e-4f;
    expect(ok && !memcmp(y[0], y[1], 5 * 68 * sizeof(float)), "i8 load: activation_bits 8 is the default");
    expect(ok && differ, "i8 load: activation_bits 7 rounds the products' x to 7 bits");
    for (i = 0; i < 3; i++) free(y[i]);
    for (i = 0; i < 6; i++) free(keep[i]);
    free(h); free(yd); free(xs);
    vit_arena_free(&a);
    vit_arena_free(&ax);
}

int main(int argc, char **argv) {
    printf("dot-product kernels: bf16 %s, i8 %s\n", VIT__DOT_BF16 ? "yes" : "no (f32 tiles)",
           VIT__DOT_I8 ? "yes" : "no (f32 tiles)");
    test_sizes();
    test_f32_packed();
    test_extremes();
    test_nonfinite_rows();
    test_handmade_weights();
    test_error();
    test_epilogue_threads(37, 300, 70);
    test_epilogue_threads(50, 1088, 72); /* on AMX where the build has it, past I8's panel block */
    test_epilogue_threads(1100, 40, 1024); /* 4.5 MB of y: streamed where the I8 finish can */
    test_i8_file_extremes();
    test_activation_bits();
    test_packed_load(argc > 1 ? argv[1] : "build");
    test_patch_lowp(argc > 1 ? argv[1] : "build");
    test_mlp_chunks(argc > 1 ? argv[1] : "build");
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}

/* Every fast kernel against its scalar _ref twin on awkward sizes (1, 7, 8,
   9, 65, 197, 768: below, at, and off the vector width), plus arena and
   tensor basics and bit-identical results for any thread count. */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "check.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
/* test_fork: with POSIX threads, on x86 only (qemu-user, which runs the
   AArch64 build, cannot fork a process that has threads). */
#if defined(VIT__THREADS) && VIT__THREADS == 1 && defined(__x86_64__)
#define TEST_FORK 1
#include <sys/wait.h>
#include <unistd.h>
#endif

static const int sizes[] = {1, 7, 8, 9, 65, 197, 768};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))



static void test_matmul(void) {
    int a, b, c;
    char label[96];
    for (a = 0; a < NSIZES; a++)
        for (b = 0; b < NSIZES; b++)
            for (c = 0; c < NSIZES; c += 2) {
                int M = sizes[a], K = sizes[b], N = sizes[c];
                float *x, *w, *bias, *y1, *y2;
                if ((size_t)M * K * N > 30000000u) continue;
                x = randv((size_t)M * K, 1.0f); w = randv((size_t)N * K, 1.0f); bias = randv((size_t)N, 1.0f);
                y1 = randv((size_t)M * N, 0.0f); y2 = randv((size_t)M * N, 0.0f);
                vit_k_matmul(y1, x, w, (a + b) % 2 ? bias : NULL, M, K, N);
                vit_k_matmul_ref(y2, x, w, (a + b) % 2 ? bias : NULL, M, K, N);
                snprintf(label, sizeof label, "matmul M=%d K=%d N=%d", M, K, N);
                expect(check_close(label, y1, y2, (size_t)M * N, 1e-5 * K, 1e-5), label);
                free(x); free(w); free(bias); free(y1); free(y2);
            }
}

/* vit_k_matmul, the one product (the few-rows path where VIT__FEW_USE
   picks it, M from 3/4 of a vector to a vector, N and K >= 128), against
   its reference, K past one VIT__KF block, N off the column block; and the
   few-rows path itself wherever it applies. */
static void test_linear(void) {
    static const int ks[] = {1, 7, 65, 257, 784}, ns[] = {1, 7, 9, 65, 197};
    int M, a, c;
    char label[96];
    for (M = 1; M <= 17; M++)
        for (a = 0; a < (int)(sizeof ks / sizeof ks[0]); a++)
            for (c = 0; c < (int)(sizeof ns / sizeof ns[0]); c++) {
                int K = ks[a], N = ns[c];
                float *x = randv((size_t)M * K, 1.0f), *w = randv((size_t)N * K, 1.0f), *bias = randv((size_t)N, 1.0f);
                float *y1 = randv((size_t)M * N, 0.0f), *y2 = randv((size_t)M * N, 0.0f);
                vit_k_matmul(y1, x, w, (M + a + c) % 2 ? bias : NULL, M, K, N);
                vit_k_matmul_ref(y2, x, w, (M + a + c) % 2 ? bias : NULL, M, K, N);
                snprintf(label, sizeof label, "linear M=%d K=%d N=%d", M, K, N);
                expect(check_close(label, y1, y2, (size_t)M * N, 1e-5 * K, 1e-5), label);
#ifndef VIT_NO_SIMD
                if (M >= VIT__FEW_MIN && M <= VIT__VW) { /* the few-rows product itself, wherever it applies */
                    vit__mm mm = vit__mm_dense(y1, x, w, (M + a + c) % 2 ? bias : NULL, M, K, N);
                    vit__gemm_few(&mm);
                    snprintf(label, sizeof label, "few-rows M=%d K=%d N=%d", M, K, N);
                    expect(check_close(label, y1, y2, (size_t)M * N, 1e-5 * K, 1e-5), label);
                }
#endif
                free(x); free(w); free(bias); free(y1); free(y2);
            }
}

static void test_rowwise(void) {
    int a, r;
    char label[96];
    for (a = 0; a < NSIZES; a++)
        for (r = 1; r <= 3; r += 2) {
            int n = sizes[a];
            size_t len = (size_t)r * n;
            float *x = randv(len, 4.0f), *w = randv((size_t)n, 1.0f), *b = randv((size_t)n, 1.0f);
            float *y1 = randv(len, 0.0f), *y2 = randv(len, 0.0f);
            x[0] = 80.0f; /* a large logit: softmax must subtract the max */
            vit_k_softmax(y1, x, r, n);
            vit_k_softmax_ref(y2, x, r, n);
            snprintf(label, sizeof label, "softmax rows=%d n=%d", r, n);
            expect(check_close(label, y1, y2, len, 1e-7, 1e-6), label);
            memcpy(y1, x, len * sizeof(float));
            vit_k_softmax(y1, y1, r, n); /* in place */
            expect(check_close("softmax in place", y1, y2, len, 1e-7, 1e-6), "softmax in place");
            x[0] = 3.0f;
            vit_k_layernorm(y1, x, w, b, r, n, 1e-6f);
            vit_k_layernorm_ref(y2, x, w, b, r, n, 1e-6f);
            snprintf(label, sizeof label, "layernorm rows=%d C=%d", r, n);
            expect(check_close(label, y1, y2, len, 1e-5, 1e-5), label);
            free(x); free(w); free(b); free(y1); free(y2);
        }
}

/* Many short rows: blocks of rows shorter than a vector (outlook's 3x3
   windows give rows of 9). */
static void test_softmax_short(void) {
    static const int ns[] = {1, 2, 5, 9, 15};
    int a, rows = 130;
    char label[96];
    for (a = 0; a < (int)(sizeof ns / sizeof ns[0]); a++) {
        int n = ns[a];
        size_t len = (size_t)rows * n;
        float *x = randv(len, 4.0f), *y1 = randv(len, 0.0f), *y2 = randv(len, 0.0f);
        x[len - 1] = 80.0f;
        vit_k_softmax(y1, x, rows, n);
        vit_k_softmax_ref(y2, x, rows, n);
        snprintf(label, sizeof label, "softmax rows=%d n=%d", rows, n);
        expect(check_close(label, y1, y2, len, 1e-7, 1e-6), label);
        free(x); free(y1); free(y2);
    }
}

/* The lowp attention's exp (vit__v_exp_lo) against exp in double: within 6e-6 relative on [-16, 16] (with a fused
   fma or without), where a row's terms that matter lie (scores up to VIT__ATT_SLACK past its reference; a term
   under e^-16 of the largest, at least 1, is under 1e-7 of the sum), within 1.5e-5 on [-87.3, -16] (AVX-512's
   x log2(e) is rounded once: its error grows with |x|), and tiny (at most 2^-125) below, where vit__v_exp
   gives 0. */
static void test_exp_lo(void) {
#ifndef VIT_NO_SIMD
    double worst = 0.0, low = 0.0;
    int i, j, tiny = 1;
    for (i = 0; i < 200000; i += VIT__VW) {
        float xs[VIT__VW], ys[VIT__VW];
        for (j = 0; j < VIT__VW; j++) xs[j] = -87.3365f + 103.3365f * (float)(i + j) / 199999.0f;
        vit__v_store(ys, vit__v_exp_lo(vit__v_load(xs)));
        for (j = 0; j < VIT__VW; j++) {
            double e = exp((double)xs[j]), d = fabs((double)ys[j] - e) / e;
            if (xs[j] >= -16.0f) worst = d > worst ? d : worst;
            else low = d > low ? d : low;
        }
        for (j = 0; j < VIT__VW; j++) xs[j] = -87.34f - 0.37f * (float)(i + j);
        vit__v_store(ys, vit__v_exp_lo(vit__v_load(xs)));
        for (j = 0; j < VIT__VW; j++) tiny &= ys[j] >= 0.0f && ys[j] <= 2.4e-38f;
    }
    printf("exp_lo: worst relative error %.3g on [-16, 16], %.3g on [-87.3, -16]\n", worst, low);
    expect(worst <= 6e-6, "lowp exp within 6e-6 of exp on [-16, 16]");
    expect(low <= 1.5e-5, "lowp exp within 1.5e-5 of exp on [-87.3, -16]");
    expect(tiny, "lowp exp below -87.3: at most 2^-125");
#endif
}

/* I8's probabilities in u8 units (vit__v_exp2_255) against 255 2^u in double: on [-24, 0] (bytes from 255 down to
   1.5e-5, past the last that rounds to 1) within 6e-6 relative on AVX-512's polynomial, 1e-5 where it is
   vit__v_exp_lo's of u ln 2 (that product rounded once: 6.2e-6 measured, SIMDe's portable build being the one of
   those that runs it), exactly 255 at 0 (a row's largest score is a whole byte), and in [0, 0.5) on [-200, -24],
   where every weight rounds to the byte 0. */
static void test_exp2_255(void) {
#ifndef VIT_NO_SIMD
    double worst = 0.0;
    int i, j, low = 1;
    float at0[VIT__VW];
    for (i = 0; i < 200000; i += VIT__VW) {
        float us[VIT__VW], ys[VIT__VW];
        for (j = 0; j < VIT__VW; j++) us[j] = -24.0f * (float)(i + j) / 199999.0f;
        vit__v_store(ys, vit__v_exp2_255(vit__v_load(us)));
        for (j = 0; j < VIT__VW; j++) {
            double e = 255.0 * exp2((double)us[j]), d = fabs((double)ys[j] - e) / e;
            worst = d > worst ? d : worst;
        }
        for (j = 0; j < VIT__VW; j++) us[j] = -24.0f - 176.0f * (float)(i + j) / 199999.0f;
        vit__v_store(ys, vit__v_exp2_255(vit__v_load(us)));
        for (j = 0; j < VIT__VW; j++) low &= ys[j] >= 0.0f && ys[j] < 0.5f;
    }
    vit__v_store(at0, vit__v_exp2_255(vit__v_zero()));
    printf("exp2_255: worst relative error %.3g on [-24, 0]\n", worst);
    expect(worst <= (VIT__VW == 16 ? 6e-6 : 1e-5), "255 2^u within 6e-6 (AVX-512) or 1e-5 of it on [-24, 0]");
    expect(at0[0] == 255.0f, "255 2^0 is 255");
    expect(low, "255 2^u on [-200, -24] rounds to the byte 0");
#endif
}

/* vit__v_hred_rows, every group of rows at once, gives each row vit__v_hsum's and vit__v_hmax's bits (its pairs of
   lanes in their order: sums of values far apart in size differ otherwise), 1 to 37 rows (past 16 and 32 too),
   with NaN, infinities and signed zeros among them. */
static void test_hred_rows(void) {
#ifndef VIT_NO_SIMD
    static float v[37 * VIT__VW];
    float out[37];
    int rows, r, i, same = 1, order = 0;
    uint32_t s = 12345u;
    for (i = 0; i < 37 * VIT__VW; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = ldexpf((float)(s >> 8) / 16777216.0f - 0.5f, (int)(s % 48u) - 24);
    }
    v[3] = NAN; v[VIT__VW * 5 + 1] = INFINITY; v[VIT__VW * 5 + 2] = -INFINITY; v[VIT__VW * 9] = -0.0f;
    v[VIT__VW * 20 + 7] = NAN; v[VIT__VW * 33 + 4] = -INFINITY;
    for (rows = 1; rows <= 37; rows++) {
        int max;
        for (max = 0; max < 2; max++) {
            vit__v_hred_rows(out, v, rows, max);
            for (r = 0; r < rows; r++) {
                vit__vf x = vit__v_load(v + (size_t)r * VIT__VW);
                float want = max ? vit__v_hmax(x) : vit__v_hsum(x), lanes = 0.0f;
                same &= memcmp(&out[r], &want, sizeof want) == 0;
                for (i = 0; i < VIT__VW; i++) lanes += v[(size_t)r * VIT__VW + i];
                order |= !max && want == want && lanes != want; /* the order the test is about shows */
            }
        }
    }
    expect(same, "vit__v_hred_rows: vit__v_hsum's and vit__v_hmax's bits for 1 to 37 rows");
    expect(order, "vit__v_hred_rows: some row's sum in lane order differs from vit__v_hsum's (the test can fail)");
#endif
}

/* The f32 attention's 2^x (vit__v_exp2) against exp2 in double: within 2 ulp (2.4e-7 relative) on [-126, 24], every
   float between two integers met somewhere (x from a grid, and the integers themselves, where f = 0 and the result
   must be exact), and 2^-126 below. */
static void test_exp2(void) {
#ifndef VIT_NO_SIMD
    double worst = 0.0;
    int i, j, exact = 1, low = 1;
    for (i = 0; i < 300000; i += VIT__VW) {
        float xs[VIT__VW], ys[VIT__VW];
        for (j = 0; j < VIT__VW; j++) xs[j] = -126.0f + 150.0f * (float)(i + j) / 299999.0f;
        vit__v_store(ys, vit__v_exp2(vit__v_load(xs)));
        for (j = 0; j < VIT__VW; j++) {
            double e = exp2((double)xs[j]), d = fabs((double)ys[j] - e) / e;
            worst = d > worst ? d : worst;
        }
        for (j = 0; j < VIT__VW; j++) xs[j] = (float)((i / VIT__VW * VIT__VW + j) % 151 - 126);
        vit__v_store(ys, vit__v_exp2(vit__v_load(xs)));
        for (j = 0; j < VIT__VW; j++) exact &= ys[j] == (float)exp2((double)xs[j]);
        for (j = 0; j < VIT__VW; j++) xs[j] = -126.0f - 0.5f * (float)(i + j + 1);
        vit__v_store(ys, vit__v_exp2(vit__v_load(xs)));
        for (j = 0; j < VIT__VW; j++) low &= ys[j] == 0x1p-126f;
    }
    printf("exp2: worst relative error %.3g on [-126, 24]\n", worst);
    expect(worst <= 2.4e-7, "f32 exp2 within 2.4e-7 of exp2 on [-126, 24]");
    expect(exact, "f32 exp2 of an integer exact");
    expect(low, "f32 exp2 below -126: 2^-126");
#endif
}

typedef void (*unary_fn)(float *, const float *, int);

static void test_unary(const char *name, unary_fn fast, unary_fn ref, float scale, double atol, double rtol) {
    int a;
    char label[96];
    for (a = 0; a < NSIZES; a++) {
        int n = sizes[a] * 3;
        float *x = randv((size_t)n, scale), *y1 = randv((size_t)n, 0.0f), *y2 = randv((size_t)n, 0.0f);
        if (n > 2) { x[1] = -30.0f; x[2] = 30.0f; } /* saturated tails */
        fast(y1, x, n);
        ref(y2, x, n);
        snprintf(label, sizeof label, "%s n=%d", name, n);
        expect(check_close(label, y1, y2, (size_t)n, atol, rtol), label);
        free(x); free(y1); free(y2);
    }
}

static void add_fast(float *y, const float *x, int n) { vit_k_add(y, x, x + 0, n); }
static void add_ref(float *y, const float *x, int n) { vit_k_add_ref(y, x, x + 0, n); }

static void test_patch_conv(void) {
    static const int cfg[][5] = {
        {1, 3, 8, 8, 4}, {2, 3, 20, 20, 5}, {1, 1, 28, 28, 7}, {3, 2, 18, 12, 6}, {1, 3, 32, 32, 16}};
    int i;
    char label[96];
    for (i = 0; i < (int)(sizeof cfg / sizeof cfg[0]); i++) {
        int B = cfg[i][0], Cin = cfg[i][1], H = cfg[i][2], W = cfg[i][3], P = cfg[i][4], D = 9 + 8 * i;
        int N = (H / P) * (W / P);
        float *x = randv((size_t)B * Cin * H * W, 1.0f), *w = randv((size_t)D * Cin * P * P, 0.3f),
              *b = randv((size_t)D, 1.0f);
        float *cols = randv((size_t)B * N * Cin * P * P, 0.0f), *y1 = randv((size_t)B * N * D, 0.0f),
              *y2 = randv((size_t)B * N * D, 0.0f);
        vit_patch_shape sh;
        sh.B = B; sh.C = Cin; sh.H = H; sh.W = W; sh.P = P; sh.D = D;
        vit_k_patch_conv(y1, cols, x, w, b, &sh);
        vit_k_patch_conv_ref(y2, x, w, b, &sh);
        snprintf(label, sizeof label, "patch_conv B=%d Cin=%d %dx%d P=%d D=%d", B, Cin, H, W, P, D);
        expect(check_close(label, y1, y2, (size_t)B * N * D, 1e-5, 1e-5), label);
        free(x); free(w); free(b); free(cols); free(y1); free(y2);
    }
}

/* The lowp attention of BF16 (lowp 1) and I8 (lowp 2) models, where
   VIT__DOT_BF16 (elsewhere it runs in f32; vit__att_mode says which)
   against its reference, which rounds the same operands. BF16: q, k, the
   exponentials and v to bf16; the two sum P V in different orders, and
   each rounds the exponentials to bf16 against another reference (the
   row's max there, the max of its first keys here: vit__att_exp_row), so
   a weight can be exact in one and 2^-9 off in the other; where one key
   carries a row that is 2^-9 of the output from each side, hence 2^-8 of
   the largest output. I8: q kᵀ on q and k in int8, each row of a head on
   its own scale (the scores the same bits), and P V on e = exp(s - max)
   as round(255 e) (what that leaves out of 255 sum e on a key of V's
   column means) and v in int8 a column on its own scale (the sums exact);
   the fast path's exp (vit__v_exp2_255) can put a weight on the other
   side of a rounding step of 1/255, which moves an output by up to
   |v| / 255 over the row's sum of e (>= 1): here at most 2.2e-3. Mode 3
   (I8's q kᵀ with q on 7 bits, the softmax and P V in f32, where the int8
   dot product runs but not the BF16 one: AVX2, AVX-512 VNNI before BF16,
   NEON with sdot) takes the same scores and is held as the f32 attention
   is. With and without kept maps, the same bits. f32: the f32 reference's
   outputs, to show how far the low precision moves them (bf16 within 1e-2
   of the largest output, int8 within 3e-2 (at most 0.0164 here), q on 7
   bits within 8e-2), or NULL. Mode 3's q steps are twice mode 2's, and in the
   unscaled case (scale 1, post 1/sqrt(C): scores of std ~sqrt(HS)) a
   score's error is ~0.07, enough to move weight between two leading keys:
   over 200 draws of the one-head HS = 33, N = 40 case, mode 3's largest
   difference had a median of 0.020, a 99th percentile of 0.045 and a
   worst of 0.073 (mode 2: 0.013, 0.028, 0.029). */
static void test_attention_lowp1(const vit_attn_shape *sh, const float *qkv, const float *f32, int lowp) {
    int B = sh->B, N = sh->N, NH = sh->NH, HS = sh->HS, C = NH * HS, mode = vit__att_mode(lowp);
    size_t no = (size_t)B * N * C, na = (size_t)B * NH * N * N;
    float *o1, *o2, *o3, *a1, *a3, *scr;
    vit__att at;
    const char *what = mode == 3   ? "i8 q k (q on 7 bits) attention"
                       : mode == 2 ? "i8 q k attention"
                                   : "bf16 attention";
    char label[96];
    if (mode == 0) return; /* a build without this mode runs the f32 attention, which each caller holds to the ref */
    o1 = randv(no, 0.0f); o2 = randv(no, 0.0f); o3 = randv(no, 0.0f); a1 = randv(na, 0.0f); a3 = randv(na, 0.0f);
    scr = randv(2 * vit__att_slot(N, HS, 1, mode) + 2 * vit__att_slot(N, HS, 0, mode), 0.0f);
    at = vit__att_of(o1, NULL, qkv, qkv + C, qkv + 2 * C, sh);
    at.lowp = lowp;
    vit__attention(&at, scr, 2);
    at = vit__att_of(o2, a1, qkv, qkv + C, qkv + 2 * C, sh);
    at.lowp = lowp;
    vit__attention(&at, scr, 2);
    vit__attention_ref(o3, a3, qkv, qkv + C, qkv + 2 * C, sh, mode);
    snprintf(label, sizeof label, "%s B=%d N=%d NH=%d HS=%d post=%g", what, B, N, NH, HS, sh->post);
    expect(check_close(label, o1, o3, no, 0.0, mode == 3 ? 1e-5 : 1.0 / 256), label);
    expect(check_close(label, a1, a3, na, 1e-6, 1e-5), label);
    expect(memcmp(o1, o2, no * sizeof(float)) == 0, "lowp attention without maps: same bits as with");
    if (f32) expect(check_close(label, o1, f32, no, 0.0, mode == 3 ? 8e-2 : mode == 2 ? 3e-2 : 1e-2),
                          "lowp attention near f32's");
#if VIT__DOT_BF16
    if (mode == 1 && HS % 2 == 0) { /* rows straight to bf16 (vit__att.ob, the BF16 MHA's output projection's x) */
        uint16_t *b1 = (uint16_t *)malloc(no * 2), *b2 = (uint16_t *)malloc(no * 2);
        size_t r;
        for (r = 0; r < (size_t)B * N; r++) vit__bf16_row(b1 + r * C, o1 + r * C, C);
        at = vit__att_of(NULL, NULL, qkv, qkv + C, qkv + 2 * C, sh);
        at.lowp = lowp;
        at.ob = b2;
        at.ldob = C;
        vit__attention(&at, scr, 2);
        snprintf(label, sizeof label, "bf16 attention to bf16 rows B=%d N=%d NH=%d HS=%d: its f32 rows' bits", B, N,
                 NH, HS);
        expect(memcmp(b1, b2, no * 2) == 0, label);
        free(b1); free(b2);
    }
#endif
    free(o1); free(o2); free(o3); free(a1); free(a3); free(scr);
}

static void test_attention_lowp(const vit_attn_shape *sh, const float *qkv, const float *f32) {
    test_attention_lowp1(sh, qkv, f32, 1);
    test_attention_lowp1(sh, qkv, f32, 2);
}

/* Rows whose later keys score far above their first ones: the lowp
   attention takes each row's exponentials against the max of its first
   keys and moves that reference only when a later score passes it by 16
   (vit__att_exp_row), scaling down what it wrote before. Here every query
   meets key 40 about 18 over the first panel's scores (one move), key 100
   about 36 (a second), and key N - 1, in the last partial panel, a little
   over 37 (no move, e^1.5 against the reference): a move that left the
   earlier exponentials unscaled would weigh key 40 like key 100. */
static void test_attention_lowp_moves(void) {
    int B = 1, N = 197, NH = 2, HS = 16, C = NH * HS, ld = 3 * C, i, h;
    float *qkv = randv((size_t)B * N * ld, 1.0f), *o = randv((size_t)B * N * C, 0.0f),
          *a = randv((size_t)B * NH * N * N, 0.0f);
    vit_attn_shape sh = vit__attn_shape(B, N, NH, HS, ld, 0.25f, 1.0f);
    for (i = 0; i < N; i++)
        for (h = 0; h < NH; h++) qkv[(size_t)i * ld + h * HS] = 1.0f; /* q's first feature 1: scores 0.25 k[0] */
    for (h = 0; h < NH; h++) {
        qkv[(size_t)40 * ld + C + h * HS] = 72.0f;
        qkv[(size_t)100 * ld + C + h * HS] = 144.0f;
        qkv[(size_t)(N - 1) * ld + C + h * HS] = 150.0f;
    }
    vit_k_attention_ref(o, a, qkv, qkv + C, qkv + 2 * C, &sh);
    /* I8 against its reference only: a key whose first feature is 144 has its others in int8 steps of 1.1, so
       its scores move by about 0.3 from f32's, as they would in any int8 q kᵀ with a scale a row */
    test_attention_lowp1(&sh, qkv, o, 1);
    test_attention_lowp1(&sh, qkv, NULL, 2);
    { /* the f32 attention takes its exponentials the same way (vit__att_task), with and without maps */
        float *o1 = randv((size_t)B * N * C, 0.0f), *o2 = randv((size_t)B * N * C, 0.0f),
              *a1 = randv((size_t)B * NH * N * N, 0.0f), *vt = randv((size_t)B * C * N, 0.0f),
              *scr = randv(2 * vit__att_slot(N, HS, 0, 0), 0.0f);
        vit__att at = vit__att_of(o2, NULL, qkv, qkv + C, qkv + 2 * C, &sh);
        vit_k_attention(o1, a1, vt, qkv, qkv + C, qkv + 2 * C, &sh);
        vit__attention(&at, scr, 2);
        expect(check_close("f32 attention, moved references", o1, o, (size_t)B * N * C, 1e-6, 1e-5) &&
                   check_close("f32 attention maps, moved references", a1, a, (size_t)B * NH * N * N, 1e-7, 1e-5),
               "f32 attention with moved references equals the reference");
        expect(memcmp(o1, o2, (size_t)B * N * C * sizeof(float)) == 0, "f32 attention, moved: same bits without maps");
        /* key 100 about 100 over the first panel's scores, 144 in the f32 path's units of log2 e: 2^x past 127
           is not a float, so only a move keeps it right (whole panels' rows go together where none moves,
           vit__att_exp_rows: a test that missed one row's move would give Inf or garbage here) */
        for (h = 0; h < NH; h++) qkv[(size_t)100 * ld + C + h * HS] = 400.0f;
        vit_k_attention_ref(o, a, qkv, qkv + C, qkv + 2 * C, &sh);
        at = vit__att_of(o2, NULL, qkv, qkv + C, qkv + 2 * C, &sh);
        vit__attention(&at, scr, 2);
        expect(check_close("f32 attention, a key 100 over", o2, o, (size_t)B * N * C, 1e-6, 1e-5),
               "f32 attention with a key 100 over the first panel's equals the reference");
        test_attention_lowp1(&sh, qkv, NULL, 2); /* I8's mode 3 takes its exponentials as f32's (vit__att_exp_rows) */
        free(o1); free(o2); free(a1); free(vt); free(scr);
    }
    free(qkv); free(o); free(a);
}

static void test_attention(void) {
    /* HS = 80 (ViT-H/14): a last panel of 16 columns after two of 32; one head of 33 over 40 tokens:
       vit_k_attention's scratch then holds K's panels alone, and V is copied per block; HS = 520, past a k block
       of the tiles (VIT__KC) on every build, with 20 keys, one partial panel (vit__att_exp_f32 packs it a block
       at a time); 600 tokens, in blocks of rows (vit__att_tiles) */
    static const int cfg[][4] = {{1, 1, 1, 7},   {2, 7, 3, 8},    {1, 9, 2, 9},    {1, 65, 4, 16},
                                 {2, 197, 3, 64}, {1, 37, 2, 80}, {1, 40, 1, 33}, {1, 20, 1, 520},
                                 {1, 600, 2, 16}};
    int i, post;
    char label[96];
    for (i = 0; i < (int)(sizeof cfg / sizeof cfg[0]); i++)
        for (post = 0; post < 2; post++) {
            int B = cfg[i][0], N = cfg[i][1], NH = cfg[i][2], HS = cfg[i][3], C = NH * HS, ld = 3 * C;
            float *qkv = randv((size_t)B * N * ld, 1.0f), *o1 = randv((size_t)B * N * C, 0.0f),
                  *o2 = randv((size_t)B * N * C, 0.0f);
            float *a1 = randv((size_t)B * NH * N * N, 0.0f), *a2 = randv((size_t)B * NH * N * N, 0.0f),
                  *vt = randv((size_t)B * C * N, 0.0f);
            float scale = post ? 1.0f : 1.0f / sqrtf((float)HS), pst = post ? 1.0f / sqrtf((float)C) : 1.0f;
            vit_attn_shape sh = vit__attn_shape(B, N, NH, HS, ld, scale, pst);
            vit_k_attention(o1, a1, vt, qkv, qkv + C, qkv + 2 * C, &sh);
            vit_k_attention_ref(o2, a2, qkv, qkv + C, qkv + 2 * C, &sh);
            snprintf(label, sizeof label, "attention B=%d N=%d NH=%d HS=%d%s", B, N, NH, HS, post ? " quirk" : "");
            expect(check_close(label, o1, o2, (size_t)B * N * C, 1e-6, 1e-5), label);
            expect(check_close(label, a1, a2, (size_t)B * NH * N * N, 1e-7, 1e-5), label);
            /* Without kept maps (the models' path): per-thread score slots,
               the same bits. */
            {
                float *o3 = randv((size_t)B * N * C, 0.0f), *scr = randv(2 * vit__att_slot(N, HS, 0, 0), 0.0f);
                vit__att at = vit__att_of(o3, NULL, qkv, qkv + C, qkv + 2 * C, &sh);
                vit__attention(&at, scr, 2);
                expect(memcmp(o1, o3, (size_t)B * N * C * sizeof(float)) == 0,
                       "attention without maps: same bits as with");
                free(o3); free(scr);
            }
            test_attention_lowp(&sh, qkv, o2);
            free(qkv); free(o1); free(o2); free(a1); free(a2); free(vt);
        }
}

#ifndef VIT_NO_SIMD
#define TILE_ROWS VIT__MR
#else
#define TILE_ROWS 1
#endif

/* Query blocks: only when a head's scores pass 1 MiB, then whole tiles of
   rows within 512 KiB of scores (at least one tile); none under 4 rows
   (that would change the GEMM's summation order); blocks cover N. */
static void test_attention_tiles(void) {
    int N, nt, per, ok = 1, split = 0;
    for (N = 1; N <= 5000 && ok; N++) {
        int last, lp;
        vit__att_tiles(N, 0, &nt, &per);
        last = N - (nt - 1) * per;
        ok = nt >= 1 && per >= 1 && last >= 1 && last <= per + 3 && (N < 4 || last >= 4) &&
             (nt == 1) == (4.0 * N * N <= 1048576.0) &&
             (nt == 1 || (per % TILE_ROWS == 0 && (per == TILE_ROWS || 4.0 * per * N <= 524288.0)));
#ifdef VIT__ATT_ROWS
        /* the f32 block's row sums live on the stack (vit__att_task) */
        ok = ok && (per > last ? per : last) <= VIT__ATT_ROWS;
#endif
        if (nt > 1) split++;
        if (!ok) printf("  attention tiles: N=%d tiles=%d per=%d last=%d\n", N, nt, per, last);
        /* BF16 on AMX: whole 32-row tiles within 256 KiB of scores (at least one tile), once past 1 MiB */
        vit__att_tiles(N, 1, &nt, &lp);
        last = N - (nt - 1) * lp;
        ok = ok && nt >= 1 && last >= 1 && last <= lp + 3 && (N < 4 || last >= 4) &&
             (!VIT__AMX || 4.0 * N * N <= 1048576.0 ? lp == per :
              lp % 32 == 0 && (lp == 32 || 4.0 * lp * N <= 262144.0));
        if (!ok) printf("  attention tiles (bf16): N=%d tiles=%d per=%d last=%d\n", N, nt, lp, last);
    }
    expect(ok && split > 0, "attention query blocks cover N, none under 4 rows, each within the tile budget");
    /* A head split into blocks (N = 1030: eight of 120 and one of 70)
       equals the reference, and with maps kept the same bits. */
    {
        int B = 1, NH = 2, HS = 5, C = NH * HS, ld = 3 * C;
        float *qkv, *o1, *o2, *o3, *a2, *a3, *scr;
        N = 1030;
        vit__att_tiles(N, 0, &nt, &per);
        qkv = randv((size_t)B * N * ld, 1.0f); o1 = randv((size_t)B * N * C, 0.0f); o2 = randv((size_t)B * N * C, 0.0f);
        a2 = randv((size_t)B * NH * N * N, 0.0f); scr = randv(2 * vit__att_slot(N, HS, 0, 0), 0.0f);
        o3 = randv((size_t)B * N * C, 0.0f); a3 = randv((size_t)B * NH * N * N, 0.0f);
        {
            vit_attn_shape sh = vit__attn_shape(B, N, NH, HS, ld, 0.4f, 1.0f);
            vit__att at = vit__att_of(o1, NULL, qkv, qkv + C, qkv + 2 * C, &sh);
            vit__attention(&at, scr, 2);
            vit_k_attention_ref(o2, a2, qkv, qkv + C, qkv + 2 * C, &sh);
            at = vit__att_of(o3, a3, qkv, qkv + C, qkv + 2 * C, &sh);
            vit__attention(&at, scr, 2);
            expect(memcmp(o1, o3, (size_t)B * N * C * sizeof(float)) == 0,
                   "attention in query blocks without maps: same bits as with");
            /* BF16: past one k block of probabilities (515 pairs) */
            test_attention_lowp(&sh, qkv, o2);
        }
        expect(nt == 9 && check_close("attention in query blocks N=1030", o1, o2, (size_t)B * N * C, 1e-6, 1e-5),
               "attention in query blocks equals the reference");
        free(qkv); free(o1); free(o2); free(o3); free(a2); free(a3); free(scr);
    }
    /* A slot keeps the head whose K and V it packed from one claim to the next (vit__att_tasks), not from one
       call to the next: one head of 9 blocks, then other q, k and v in the same scratch, in f32, BF16 and I8
       (a slot that kept head 0 across the calls would run the second on the first's K and V). */
    {
        int B = 1, NH = 1, HS = 5, C = NH * HS, ld = 3 * C, lowp;
        size_t slot = 0;
        float *qkv1 = randv((size_t)B * 1030 * ld, 1.0f), *qkv2 = randv((size_t)B * 1030 * ld, 1.0f), *o1, *o2,
              *a2, *scr;
        vit_attn_shape sh = vit__attn_shape(B, 1030, NH, HS, ld, 0.4f, 1.0f);
        N = 1030;
        for (lowp = 0; lowp < 3; lowp++) {
            size_t sl = vit__att_slot(N, HS, 0, vit__att_mode(lowp));
            slot = sl > slot ? sl : slot;
        }
        o1 = randv((size_t)B * N * C, 0.0f); o2 = randv((size_t)B * N * C, 0.0f);
        a2 = randv((size_t)B * NH * N * N, 0.0f); scr = randv(2 * slot, 0.0f);
        for (lowp = 0; lowp < 3; lowp++) {
            vit__att at = vit__att_of(o1, NULL, qkv1, qkv1 + C, qkv1 + 2 * C, &sh);
            char label[64];
            if (lowp && vit__att_mode(lowp) == 0) continue; /* the f32 attention again */
            at.lowp = lowp;
            vit__attention(&at, scr, 2);
            at.q = qkv2; at.k = qkv2 + C; at.v = qkv2 + 2 * C; /* the same vit__att again */
            vit__attention(&at, scr, 2);
            vit__attention_ref(o2, a2, qkv2, qkv2 + C, qkv2 + 2 * C, &sh, vit__att_mode(lowp));
            snprintf(label, sizeof label, "attention after another, lowp %d", lowp);
            expect(check_close(label, o1, o2, (size_t)B * N * C, 1e-6, lowp ? 1.0 / 256 : 1e-5), label);
        }
        free(qkv1); free(qkv2); free(o1); free(o2); free(a2); free(scr);
    }
}

/* The GEMM's fused epilogue equals the separate passes bit for bit:
   act(x w^T + b) * g + r against vit_k_matmul, then vit_k_act, vit_k_mul
   and vit_k_add, for every activation, on every path the product takes
   (dot products below 4 rows, the few-rows product, the GEMM with a narrow
   last panel). */
static void test_epilogue(void) {
    static const int shapes[][3] = {{1, 65, 9},     {3, 768, 197}, {7, 9, 65},    {16, 784, 200},
                                    {13, 257, 129}, {29, 300, 40}, {197, 768, 65}};
    int i, act, m, gamma;
    char label[128];
    for (i = 0; i < (int)(sizeof shapes / sizeof shapes[0]); i++)
        for (act = VIT__EPI_NONE; act <= VIT_ACT_SILU + 1; act++)
            for (gamma = 0; gamma < 2; gamma++) {
                int M = shapes[i][0], K = shapes[i][1], N = shapes[i][2];
                float *x = randv((size_t)M * K, 1.0f), *w = randv((size_t)N * K, 1.0f), *b = randv((size_t)N, 1.0f);
                float *r = randv((size_t)M * N, 1.0f), *g = randv((size_t)N, 1.0f), *y1 = randv((size_t)M * N, 0.0f),
                      *y2 = randv((size_t)M * N, 0.0f);
                vit__epi e;
                vit__mm mm = vit__mm_dense(y1, x, w, b, M, K, N);
                e.act = act > VIT_ACT_SILU ? VIT__ACT_GELU_I8 : act; /* and the I8 products' GELU */
                e.g = gamma ? g : NULL; e.r = r; e.ldr = N;
                mm.e = &e;
                vit__matmul(&mm);
                vit_k_matmul(y2, x, w, b, M, K, N);
                if (act != VIT__EPI_NONE) vit_k_act(y2, y2, M * N, (vit_act)e.act);
                if (gamma)
                    for (m = 0; m < M; m++) vit_k_mul(y2 + (size_t)m * N, y2 + (size_t)m * N, g, N);
                vit_k_add(y2, r, y2, M * N);
                snprintf(label, sizeof label,
                         "fused epilogue act=%d gamma=%d M=%d K=%d N=%d: same bits as the separate passes", act, gamma,
                         M, K, N);
                expect(memcmp(y1, y2, (size_t)M * N * sizeof(float)) == 0, label);
                free(x); free(w); free(b); free(r); free(g); free(y1); free(y2);
            }
}

/* vit_k_act and vit_k_glu against their references, every activation, on
   lengths around the vector width; inputs over [-6, 6] reach both tails. */
static void test_act(void) {
    int a, act, rows;
    char label[96];
    for (act = VIT_ACT_GELU; act <= VIT_ACT_SILU; act++)
        for (a = 0; a < NSIZES; a++) {
            int n = sizes[a];
            float *x = randv((size_t)2 * n * 3, 3.0f), *y1 = randv((size_t)2 * n * 3, 0.0f),
                  *y2 = randv((size_t)2 * n * 3, 0.0f);
            vit_k_act(y1, x, n, (vit_act)act);
            vit_k_act_ref(y2, x, n, (vit_act)act);
            snprintf(label, sizeof label, "act %d n=%d", act, n);
            expect(check_close(label, y1, y2, (size_t)n, 1e-6, 1e-6), label);
            for (rows = 1; rows <= 3; rows += 2) {
                vit_k_glu(y1, x, rows, n, (vit_act)act);
                vit_k_glu_ref(y2, x, rows, n, (vit_act)act);
                snprintf(label, sizeof label, "glu act %d rows=%d H=%d", act, rows, n);
                expect(check_close(label, y1, y2, (size_t)rows * n, 1e-6, 1e-6), label);
            }
            free(x); free(y1); free(y2);
        }
}

/* The I8 products' GELU (VIT__ACT_GELU_I8, vit__v_gelu_i8) within tools/fit_gelu.py's bound of erff's GELU,
   2e-5 max(1, |x|) (1.45e-5 measured), on [-8, 8] in steps of 1/1024 plus odd offsets and at its pieces' edges
   (odd multiples of 1/8), and the ends as vit_k_gelu takes them (AVX-512: -inf and -1e30 give 0, +inf +inf, NaN
   NaN). */
static void test_gelu_i8(void) {
    enum { n = 16 * 1024 + 7 };
    static float x[n], y[n], r[n];
    static const float ends[] = {-1e30f, 1e30f, -7.75f, 7.75f, -7.6875f, 7.6875f, -6.0f, 6.0f, 0.0f, -0.0f,
                                 0.125f, -0.375f, 1.625f, 7.625f, -7.8125f, 7.8125f, 3.875f, -3.875f};
    double worst = 0.0;
    int i, bad = 0;
    for (i = 0; i < n; i++) x[i] = -8.0f + (float)i / 1024.0f + (i % 3) * 1.7e-4f;
    for (i = 0; i < (int)(sizeof ends / sizeof ends[0]); i++) x[i * 97] = ends[i];
    vit_k_act(y, x, n, (vit_act)VIT__ACT_GELU_I8);
    vit_k_gelu_ref(r, x, n);
    for (i = 0; i < n; i++) {
        double e = fabs((double)y[i] - r[i]) / (fabs(x[i]) > 1.0f ? fabs(x[i]) : 1.0);
        if (e > worst) worst = e;
        if (!(e <= 2e-5)) bad++;
    }
    expect(!bad, "I8 GELU within 2e-5 max(1, |x|) of erff's");
    x[0] = -INFINITY; x[1] = INFINITY; x[2] = NAN; x[3] = -1e30f;
    vit_k_act(y, x, 4, (vit_act)VIT__ACT_GELU_I8);
    vit_k_gelu(r, x, 4);
    for (i = 0; i < 4; i++) bad += !((y[i] != y[i] && r[i] != r[i]) || y[i] == r[i] || fabsf(y[i] - r[i]) <= 1e-6f);
    expect(!bad, "I8 GELU: -inf, +inf, NaN and -1e30 as the build's GELU takes them");
    if (bad) printf("  I8 GELU: worst %.3g, %d past the bound\n", worst, bad);
}

/* vit_k_relpos_add against its reference: rows of scores and of indices
   into a bias table of R entries (BEiT's (2G-1)^2 + 3), every index from
   first to last entry hit, lengths below, at and off the vector width;
   the same bits (one add per score). */
static void test_relpos_add(void) {
    static const int R[] = {1, 12, 84};
    int a, r, rows;
    char label[96];
    for (r = 0; r < 3; r++)
        for (a = 0; a < NSIZES; a++)
            for (rows = 1; rows <= 3; rows += 2) {
                int n = sizes[a];
                size_t k, total = (size_t)rows * n;
                float *tab = randv((size_t)R[r], 2.0f), *s1 = randv(total, 3.0f), *s2 = malloc(total * sizeof(float));
                int32_t *idx = malloc(total * sizeof(int32_t));
                for (k = 0; k < total; k++) idx[k] = (int32_t)((k * 7 + (size_t)rows) % (size_t)R[r]);
                idx[0] = 0;
                idx[total - 1] = R[r] - 1;
                memcpy(s2, s1, total * sizeof(float));
                vit_k_relpos_add(s1, tab, idx, rows, n);
                vit_k_relpos_add_ref(s2, tab, idx, rows, n);
                snprintf(label, sizeof label, "relpos_add R=%d rows=%d n=%d", R[r], rows, n);
                expect(check_close(label, s1, s2, total, 0.0, 0.0), label);
                free(tab); free(s1); free(s2); free(idx);
            }
}

/* vit_k_rope and vit_k_rope_half against their references: head sizes
   below, at and off the vector width (2 to 130, even; halves of 1 to 65),
   1 to 3 heads in rows wider than them (a fused qkv's q or k), angles of
   every quadrant; values up to 3 within 2e-6 (the fast path's FMA rounds
   once less). */
static void test_rope(void) {
    static const int hs[] = {2, 6, 8, 16, 18, 64, 130};
    int a, nh, rows, half;
    char label[96];
    for (half = 0; half <= 1; half++)
        for (a = 0; a < 7; a++)
            for (nh = 1; nh <= 3; nh++)
                for (rows = 1; rows <= 5; rows += 4) {
                    int HS = hs[a], ld = 3 * nh * HS + 1, r, d;
                    size_t n = (size_t)rows * ld;
                    float *x1 = randv(n, 3.0f), *x2 = malloc(n * sizeof(float));
                    float *cs = malloc((size_t)rows * 2 * HS * 4);
                    for (r = 0; r < rows; r++)
                        for (d = 0; d < HS / 2; d++) {
                            /* pair d: lanes (2d, 2d+1) interleaved, (d, d + HS/2) in halves */
                            float t = 0.37f * (float)(r * HS + 2 * d) - 2.0f, *C = cs + (size_t)r * 2 * HS, *S = C + HS;
                            int i0 = half ? d : 2 * d, i1 = half ? d + HS / 2 : 2 * d + 1;
                            C[i0] = C[i1] = cosf(t);
                            S[i0] = -sinf(t);
                            S[i1] = sinf(t);
                        }
                    memcpy(x2, x1, n * sizeof(float));
                    if (half) {
                        vit_k_rope_half(x1, cs, rows, nh, HS, ld);
                        vit_k_rope_half_ref(x2, cs, rows, nh, HS, ld);
                    } else {
                        vit_k_rope(x1, cs, rows, nh, HS, ld);
                        vit_k_rope_ref(x2, cs, rows, nh, HS, ld);
                    }
                    snprintf(label, sizeof label, "rope%s HS=%d NH=%d rows=%d", half ? "_half" : "", HS, nh, rows);
                    expect(check_close(label, x1, x2, n, 2e-6, 0.0), label);
                    free(x1); free(x2); free(cs);
                }
}

/* A column's bits do not depend on the panel it falls in: the narrow tile
   of a last panel with <= VIT__VW columns runs the same FMAs as the wide
   one (N = 40 ends in an 8-column panel, N = 64 does not). */
static void test_narrow_panel(void) {
    int M = 29, K = 300, m, ok = 1;
    float *x = randv((size_t)M * K, 1.0f), *w = randv((size_t)64 * K, 1.0f), *b = randv(64, 1.0f);
    float *y40 = randv((size_t)M * 40, 0.0f), *y64 = randv((size_t)M * 64, 0.0f);
    vit_k_matmul(y40, x, w, b, M, K, 40);
    vit_k_matmul(y64, x, w, b, M, K, 64);
    for (m = 0; m < M; m++) ok &= memcmp(y40 + (size_t)m * 40, y64 + (size_t)m * 64, 40 * sizeof(float)) == 0;
    expect(ok, "matmul: a narrow last panel gives the wide panel's bits");
    free(x); free(w); free(b); free(y40); free(y64);
}

/* Results must not depend on the number of threads (STYLE: parallel loops
   split only independent outputs, each computed the same way): 1 thread
   against 2 and 3 with the pool's fixed split, and 2 with its claims. */
static const struct { int n, fixed; } thread_runs[] = {{2, 1}, {3, 1}, {2, 0}};
#define NRUNS ((int)(sizeof thread_runs / sizeof thread_runs[0]))

/* "<what> bit-identical for 1 and <n> threads" for run r, into buf. */
static const char *runs_label(char *buf, size_t size, const char *what, int r) {
    snprintf(buf, size, "%s bit-identical for 1 and %d threads%s", what, thread_runs[r].n,
             thread_runs[r].fixed ? " (fixed split)" : "");
    return buf;
}

static void test_threads(void) {
    int M = 197, K = 768, N = 300, saved = vit_get_threads(), r;
    float *x = randv((size_t)M * K, 1.0f), *w = randv((size_t)N * K, 1.0f), *y1 = randv((size_t)M * N, 0.0f),
          *y2 = randv((size_t)M * N, 0.0f);
    char label[96];
    SET_THREADS(1, 0);
    vit_k_matmul(y1, x, w, NULL, M, K, N);
    for (r = 0; r < NRUNS; r++) {
        SET_THREADS(thread_runs[r].n, thread_runs[r].fixed);
        vit_k_matmul(y2, x, w, NULL, M, K, N);
        expect(memcmp(y1, y2, (size_t)M * N * sizeof(float)) == 0, runs_label(label, sizeof label, "matmul", r));
    }

    /* The count: 1..VIT_MAX_THREADS, a refusal changes nothing; the most
       threads a loop can use still give the same bits. */
    expect(vit_set_threads(0) == VIT_ERR_ARG && strstr(vit_last_error(), "0 is not in 1..") != NULL,
           "vit_set_threads refuses 0");
    expect(vit_set_threads(-2) == VIT_ERR_ARG && vit_set_threads(VIT_MAX_THREADS + 1) == VIT_ERR_ARG &&
               vit_set_threads(INT_MAX) == VIT_ERR_ARG && vit_set_threads(INT_MIN) == VIT_ERR_ARG,
           "vit_set_threads refuses negative and absurd counts");
    SET_THREADS(saved, 0);
    expect(vit_set_threads(1000000) == VIT_ERR_ARG && vit_get_threads() == saved,
           "a refused count leaves the count as it was");
    expect(vit_set_threads(VIT_MAX_THREADS) == VIT_OK, "vit_set_threads takes VIT_MAX_THREADS");
    vit_k_matmul(y2, x, w, NULL, M, K, N);
    expect(memcmp(y1, y2, (size_t)M * N * sizeof(float)) == 0,
           "matmul bit-identical for 1 and VIT_MAX_THREADS threads");
#ifndef VIT_NO_SIMD
    {
        vit__mm m1 = vit__mm_dense(y1, x, w, NULL, VIT__VW, K, N), m2 = vit__mm_dense(y2, x, w, NULL, VIT__VW, K, N);
        SET_THREADS(1, 0);
        vit__gemm_few(&m1);
        for (r = 0; r < NRUNS; r++) {
            SET_THREADS(thread_runs[r].n, thread_runs[r].fixed);
            vit__gemm_few(&m2);
            expect(memcmp(y1, y2, (size_t)VIT__VW * N * sizeof(float)) == 0,
                   runs_label(label, sizeof label, "few-rows product", r));
        }
    }
#endif
    free(x); free(w); free(y1); free(y2);
    /* ViT-B/16's 197 tokens (a head's rows in one block), and 520 in three blocks of rows, whose 6 heads two
       threads claim whole but for the last two (vit__att_units), three threads a block of rows at a time */
    for (r = 0; r < 2; r++) {
        int B = r ? 1 : 2, T = r ? 520 : 197, NH = r ? 6 : 3, HS = r ? 8 : 64, C = NH * HS;
        float *qkv = randv((size_t)B * T * 3 * C, 1.0f), *o1 = randv((size_t)B * T * C, 0.0f),
              *o2 = randv((size_t)B * T * C, 0.0f);
        size_t slot = 0;
        float *scr;
        vit_attn_shape sh = vit__attn_shape(B, T, NH, HS, 3 * C, r ? 0.35f : 0.125f, 1.0f);
        int lowp, run;
        for (lowp = 0; lowp < 3; lowp++) { /* the largest of the three modes' slots */
            size_t sl = vit__att_slot(T, HS, 0, vit__att_mode(lowp));
            slot = sl > slot ? sl : slot;
        }
        scr = randv(3 * slot, 0.0f);
        for (lowp = 0; lowp < 3; lowp++) {
            vit__att a1 = vit__att_of(o1, NULL, qkv, qkv + C, qkv + 2 * C, &sh),
                     a2 = vit__att_of(o2, NULL, qkv, qkv + C, qkv + 2 * C, &sh);
            a1.lowp = a2.lowp = lowp;
            SET_THREADS(1, 0);
            vit__attention(&a1, scr, 3);
            for (run = 0; run < NRUNS; run++) {
                char what[48];
                snprintf(what, sizeof what, "%s, %d tokens", lowp ? "lowp attention" : "attention", T);
                SET_THREADS(thread_runs[run].n, thread_runs[run].fixed);
                memset(o2, 0, (size_t)B * T * C * sizeof(float)); /* no row left from the run before */
                vit__attention(&a2, scr, 3);
                expect(memcmp(o1, o2, (size_t)B * T * C * sizeof(float)) == 0,
                       runs_label(label, sizeof label, what, run));
            }
        }
        free(qkv); free(o1); free(o2); free(scr);
    }
    SET_THREADS(saved, 0);
}

#ifdef TEST_FORK
/* A child forked after the pool started has none of its workers: its first
   loop that wants threads starts its own (alarm: a hang fails, too). */
static void test_fork(void) {
    int M = 197, K = 256, N = 200, status = 0, saved = vit_get_threads();
    float *x = randv((size_t)M * K, 1.0f), *w = randv((size_t)N * K, 1.0f), *y1 = randv((size_t)M * N, 0.0f),
          *y2 = randv((size_t)M * N, 0.0f);
    pid_t pid;
    SET_THREADS(2, 1);
    vit_k_matmul(y1, x, w, NULL, M, K, N);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        alarm(60);
        vit_k_matmul(y2, x, w, NULL, M, K, N);
        _exit(memcmp(y1, y2, (size_t)M * N * sizeof(float)) != 0);
    }
    expect(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "a forked child runs 2-thread loops, same bits");
    SET_THREADS(saved, 0);
    free(x); free(w); free(y1); free(y2);
}
#endif

static void test_arena(void) {
    vit_arena a, c;
    vit_tensor t;
    unsigned char buf[1000];
    int32_t big[4] = {65536, 65536, 65536, 65536}, ok[2] = {3, 5};
    void *p;
    vit_arena_init(&a, buf + 1, sizeof buf - 1);
    p = vit_arena_alloc(&a, 10);
    expect(p && (uintptr_t)p % VIT_ALIGN == 0, "arena aligns a caller buffer");
    expect(vit_arena_alloc(&a, 5000) == NULL && strstr(vit_last_error(), "needed 5000 bytes") != NULL,
           "arena full says how much");
    expect(vit_tensor_init(&a, &t, 4, big) == VIT_ERR_OVERFLOW, "tensor size overflow is caught");
    expect(vit_tensor_init(&a, &t, 2, ok) == VIT_OK && vit_tensor_numel(&t) == 15, "tensor init");
    vit_arena_init(&c, NULL, 0);
    expect(vit_arena_counting(&c) && vit_tensor_init(&c, &t, 2, ok) == VIT_OK && c.peak >= 60, "counting arena counts");
    expect(vit_arena_init_alloc(&c, (size_t)-1) != VIT_OK, "huge arena refused");
    expect(strcmp(vit_result_string(VIT_ERR_SHAPE), "shape mismatch") == 0, "result strings");
}

int main(void) {
    rng = 12345u; /* each program its own stream */
    test_arena();
    test_matmul();
    test_linear();
    test_rowwise();
    test_softmax_short();
    test_exp_lo();
    test_exp2_255();
    test_hred_rows();
    test_exp2();
    test_unary("gelu", vit_k_gelu, vit_k_gelu_ref, 3.0f, 1e-6, 1e-6);
    /* past |x| = 3 the rational erf's 3.8e-7 times |x| / 2, and the cut to 0 below -5.54 (tools/fit_erf.py) */
    test_unary("gelu wide", vit_k_gelu, vit_k_gelu_ref, 8.0f, 1.2e-6, 1e-6);
    test_gelu_i8();
    test_unary("relu", vit_k_relu, vit_k_relu_ref, 3.0f, 0.0, 0.0);
    test_unary("sigmoid", vit_k_sigmoid, vit_k_sigmoid_ref, 5.0f, 1e-7, 1e-6);
    test_unary("tanh", vit_k_tanh, vit_k_tanh_ref, 3.0f, 2e-7, 1e-6);
    test_unary("add", add_fast, add_ref, 3.0f, 0.0, 0.0);
    test_patch_conv();
    test_attention();
    test_attention_lowp_moves();
    test_attention_tiles();
    test_epilogue();
    test_act();
    test_relpos_add();
    test_rope();
    test_narrow_panel();
    test_threads();
#ifdef TEST_FORK
    test_fork();
#endif
    printf("test_kernels: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

/* Kernel bench: every fast kernel (every vit_k_* with a _ref twin) is first
   checked against its _ref twin with the tolerance the tests use, then
   both are timed, alternately, on ViT-B/16 and seed-module sizes: GFLOP/s
   and the fraction of an FMA peak measured in this same process for the
   kernels that multiply, GB/s for those that stream, and the fast/ref
   speedup. Products that are one GEMM (matmul, conv1x1, scores, attend)
   are also timed against OpenBLAS's sgemm. Prints ratios from one run,
   never asserts on time.
   Usage: bench_kernels [THREADS]   (make bench runs 1 and 2; builds with
   -DBENCH_OPENBLAS and -lopenblas)
          bench_kernels --peak       one core's FMA peak only, as one JSON
   line: bench/compare.py --peers divides each vit.h f32 row's GFLOP/s by it */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "../tests/check.h"
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef BENCH_OPENBLAS
#include <cblas.h>
#endif

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
#define TIME_BEST(var, reps, stmt)                                                                                     \
    do {                                                                                                               \
        int r_;                                                                                                        \
        (var) = 1e30;                                                                                                  \
        for (r_ = 0; r_ < (reps); r_++) {                                                                              \
            double t0_ = now(), t_;                                                                                    \
            stmt;                                                                                                      \
            t_ = now() - t0_;                                                                                          \
            if (t_ < (var)) (var) = t_;                                                                                \
        }                                                                                                              \
    } while (0)

#if VIT__DOT_BF16 || VIT__DOT_I8
/* The dot-product instructions' peaks, as fma_peak (bench.h): 12 independent chains.
   One vdpbf16ps is 2 VIT__VW products and sums, one vpdpbusd 4 VIT__VW: in
   GFLOP/s (GOP/s for int8) counting a multiply and an add as two. The I8
   step's weights are its own sums: with loop-invariant operands AVX2's
   form (vpsignb, vpmaddubsw, vpmaddwd, then the add) would be hoisted out
   of the loop, leaving only the adds. Its vpabsb of x is hoisted all the
   same (the tile does one per row and step, for two vectors of columns). */
static double dot_peak(int wt) {
    /* chains that start apart: twelve identical ones would be merged into one */
    vit__vf f0 = vit__v_set1(0.f), f1 = vit__v_set1(1.f), f2 = vit__v_set1(2.f), f3 = vit__v_set1(3.f),
            f4 = vit__v_set1(4.f), f5 = vit__v_set1(5.f), f6 = vit__v_set1(6.f), f7 = vit__v_set1(7.f),
            f8 = vit__v_set1(8.f), f9 = vit__v_set1(9.f), f10 = vit__v_set1(10.f), f11 = vit__v_set1(11.f);
    vit__vi i0 = vit__vi_set1(0), i1 = vit__vi_set1(1), i2 = vit__vi_set1(2), i3 = vit__vi_set1(3),
            i4 = vit__vi_set1(4), i5 = vit__vi_set1(5), i6 = vit__vi_set1(6), i7 = vit__vi_set1(7),
            i8 = vit__vi_set1(8), i9 = vit__vi_set1(9), i10 = vit__vi_set1(10), i11 = vit__vi_set1(11);
    vit__vi a = vit__vi_set1(0x3f803f80), b = vit__vi_set1(0x01010101);
    long i, iters = 20000000;
    double t, best = 1e30;
    int rep;
    float sink[VIT__VW];
    int32_t isink[VIT__VW];
    (void)a; (void)b;
    for (rep = 0; rep < 3; rep++) {
        t = now();
        if (wt == VIT_DTYPE_BF16) {
#if VIT__DOT_BF16
            for (i = 0; i < iters; i++) {
                f0 = vit__v_dpbf16(f0, a, a);
                f1 = vit__v_dpbf16(f1, a, a);
                f2 = vit__v_dpbf16(f2, a, a);
                f3 = vit__v_dpbf16(f3, a, a);
                f4 = vit__v_dpbf16(f4, a, a);
                f5 = vit__v_dpbf16(f5, a, a);
                f6 = vit__v_dpbf16(f6, a, a);
                f7 = vit__v_dpbf16(f7, a, a);
                f8 = vit__v_dpbf16(f8, a, a);
                f9 = vit__v_dpbf16(f9, a, a);
                f10 = vit__v_dpbf16(f10, a, a);
                f11 = vit__v_dpbf16(f11, a, a);
            }
#endif
        } else {
#if VIT__DOT_I8
            for (i = 0; i < iters; i++) {
                i0 = vit__vi_dot4(i0, b, i0);
                i1 = vit__vi_dot4(i1, b, i1);
                i2 = vit__vi_dot4(i2, b, i2);
                i3 = vit__vi_dot4(i3, b, i3);
                i4 = vit__vi_dot4(i4, b, i4);
                i5 = vit__vi_dot4(i5, b, i5);
                i6 = vit__vi_dot4(i6, b, i6);
                i7 = vit__vi_dot4(i7, b, i7);
                i8 = vit__vi_dot4(i8, b, i8);
                i9 = vit__vi_dot4(i9, b, i9);
                i10 = vit__vi_dot4(i10, b, i10);
                i11 = vit__vi_dot4(i11, b, i11);
            }
#endif
        }
        t = now() - t;
        if (t < best) best = t;
    }
    /* Keep the chains alive. */
    f0 = vit__v_add(vit__v_add(vit__v_add(f0, f1), vit__v_add(f2, f3)),
                    vit__v_add(vit__v_add(f4, f5), vit__v_add(f6, f7)));
    vit__v_store(sink, vit__v_add(f0, vit__v_add(vit__v_add(f8, f9), vit__v_add(f10, f11))));
    i0 = vit__vi_add(vit__vi_add(vit__vi_add(i0, i1), vit__vi_add(i2, i3)),
                     vit__vi_add(vit__vi_add(i4, i5), vit__vi_add(i6, i7)));
    vit__vi_store(isink, vit__vi_add(i0, vit__vi_add(vit__vi_add(i8, i9), vit__vi_add(i10, i11))));
    if (sink[0] == 12345.0f || isink[0] == 12345) printf(" ");
    return (wt == VIT_DTYPE_BF16 ? 4.0 : 8.0) * VIT__VW * 12.0 * (double)iters / best / 1e9;
}
#endif

#ifdef VIT__I8_MADDUBS
#define BENCH_I8_INSN "vpmaddubsw" /* AVX2 without VNNI: vit__vi_dot4's exact form */
#else
#define BENCH_I8_INSN "vpdpbusd"
#endif

/* A dense layer whose weights are BF16 or I8 (vit__dense, x converted into
   scratch as in a forward), checked against its _ref, then timed against
   the peak of the instruction its tiles run on. */
static void bench_matmul_q(int wt, int M, int K, int N, double peak) {
    float *x = urandv((size_t)M * K), *w = urandv((size_t)N * K), *b = urandv((size_t)N), *ws = urandv((size_t)N);
    float *y1 = urandv((size_t)M * N), *y2 = urandv((size_t)M * N);
    void *wq = malloc((size_t)N * K * 2), *xs = malloc(vit__mm_scratch(wt, M, K) + 1);
    double flop = 2.0 * M * K * N, tf;
    size_t i;
    char label[64];
    vit_tensor t;
    vit__mm p;
    memset(&t, 0, sizeof t);
    t.dtype = (vit_dtype)wt;
    t.q = wq;
    t.scale = ws;
    for (i = 0; i < (size_t)N * K; i++) {
        if (wt == VIT_DTYPE_BF16) ((uint16_t *)wq)[i] = vit__bf16_round(w[i]);
        else ((int8_t *)wq)[i] = (int8_t)(254.0f * w[i]);
    }
    for (i = 0; i < (size_t)N; i++) ws[i] = 0.004f + 0.001f * ws[i];
    snprintf(label, sizeof label, "matmul %s %dx%dx%d", wt == VIT_DTYPE_BF16 ? "bf16" : "i8", M, K, N);
    p = vit__mm_w(y1, x, &t, b, M, K, N, xs);
    vit__matmul(&p);
    p.y = y2;
    if (flop < 2e9) {
        vit__matmul_ref(&p);
        if (!check_close(label, y1, y2, (size_t)M * N, wt == VIT_DTYPE_BF16 ? 1e-5 * K : 1e-6, 1e-5)) exit(1);
    }
    TIME_BEST(tf, 5, vit__dense(y1, x, &t, b, M, K, N, xs));
    printf("%-30s fast %7.1f G%s/s (%5.1f%% of %s peak)\n", label, flop / tf / 1e9,
           wt == VIT_DTYPE_BF16 ? "FLOP" : "OP", 100.0 * flop / tf / 1e9 / peak,
           (wt == VIT_DTYPE_BF16 ? VIT__DOT_BF16 : VIT__DOT_I8)
               ? (wt == VIT_DTYPE_BF16 ? "the vdpbf16ps" : "the " BENCH_I8_INSN)
               : "the FMA");
    free(x); free(w); free(b); free(ws); free(y1); free(y2); free(wq); free(xs);
}

/* The attention of BF16 and I8 files (ViT-B/16's: 197 tokens, 12 heads of
   64, no maps kept), both products on vdpbf16ps where the build has it,
   against the BF16 reference and the dot-product peak. */
static void bench_attention_lowp(int B, double peak) {
    int N = 197, NH = 12, HS = 64, C = NH * HS, threads = vit_get_threads();
    size_t no = (size_t)B * N * C;
    float *qkv = urandv((size_t)B * N * 3 * C), *y1 = urandv(no), *y2 = urandv(no),
          *att = urandv((size_t)B * NH * N * N), *scr = urandv(vit__att_slot(N, HS, 0, 1) * (size_t)threads);
    double flop = 4.0 * B * NH * N * N * HS, tf;
    char label[64];
    vit_attn_shape s = vit__attn_shape(B, N, NH, HS, 3 * C, 1.0f / sqrtf((float)HS), 1.0f);
    vit__att a = vit__att_of(y1, NULL, qkv, qkv + C, qkv + 2 * C, &s);
    a.lowp = 1;
    snprintf(label, sizeof label, "attention bf16 B=%d N=%d NH=%d HS=%d", B, N, NH, HS);
    vit__attention(&a, scr, threads);
    vit__attention_ref(y2, att, qkv, qkv + C, qkv + 2 * C, &s, VIT__DOT_BF16);
    if (!check_close(label, y1, y2, no, 0.0, 2e-3)) exit(1);
    TIME_BEST(tf, 5, vit__attention(&a, scr, threads));
    printf("%-36s fast %7.1f GFLOP/s (%5.1f%% of %s peak)\n", label, flop / tf / 1e9, 100.0 * flop / tf / 1e9 / peak,
           VIT__DOT_BF16 ? "the vdpbf16ps" : "the FMA");
    free(qkv); free(y1); free(y2); free(att); free(scr);
}

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

/* ---- every other kernel: fast against _ref, alternating ---- */

/* One case: the same buffers for both versions, except that fast writes
   y/att and ref writes y2/att2, which are then compared. */
typedef struct kcase {
    float *x, *x2, *x3, *w, *b, *y, *y2, *att, *att2, *scr, *aux;
    int B, M, N, K, C, H, W, NH, HS, S, pad, ld, ld2;
    float scale, post;
} kcase;
typedef void (*kcase_fn)(kcase *);

/* Seconds per call of f, over enough calls to fill ~2 ms (at least one). */
static double per_call(kcase_fn f, kcase *c, long n) {
    double t = now();
    long i;
    for (i = 0; i < n; i++) f(c);
    return (now() - t) / (double)n;
}

/* Best seconds per call of fast and ref over 5 samples taken alternately,
   each sample ~2 ms of calls (one call when a call is longer): machine
   noise hits both alike. */
static void time_pair(kcase_fn fast, kcase_fn ref, kcase *c, double *tf, double *tr) {
    double f1 = per_call(fast, c, 1), r1 = per_call(ref, c, 1);
    long nf = f1 < 2e-3 ? (long)(2e-3 / (f1 + 1e-9)) + 1 : 1, nr = r1 < 2e-3 ? (long)(2e-3 / (r1 + 1e-9)) + 1 : 1;
    int s, samples = r1 > 0.2 ? 2 : 5;
    *tf = *tr = 1e30;
    for (s = 0; s < samples; s++) {
        double a = per_call(fast, c, nf), b = per_call(ref, c, nr);
        if (a < *tf) *tf = a;
        if (b < *tr) *tr = b;
    }
}

/* Check, time and print one kernel. flop > 0: GFLOP/s and % of the FMA
   peak; else GB/s of `bytes` moved. nout/natt: floats compared in y and
   att (tolerances as in tests/test_kernels*.c). blas, when set, times
   OpenBLAS doing the same products. */
static void bench_case(const char *label, kcase_fn fast, kcase_fn ref, kcase *c, size_t nout, double atol, double rtol,
                       size_t natt, double att_atol, double att_rtol, double flop, double bytes, double peak,
                       kcase_fn blas) {
    double tf, tr;
    fast(c);
    ref(c);
    if (!check_close(label, c->y, c->y2, nout, atol, rtol) ||
        (natt && !check_close(label, c->att, c->att2, natt, att_atol, att_rtol)))
        exit(1);
    time_pair(fast, ref, c, &tf, &tr);
    if (flop > 0)
        printf("%-36s fast %7.1f GFLOP/s (%5.1f%% of peak)  ref %6.2f GFLOP/s  fast x%.1f", label, flop / tf / 1e9,
               100.0 * flop / tf / 1e9 / peak, flop / tr / 1e9, tr / tf);
    else
        printf("%-36s fast %7.1f GB/s  ref %6.2f GB/s  fast x%.1f", label, bytes / tf / 1e9, bytes / tr / 1e9, tr / tf);
    printf("  (%.2f us)", tf * 1e6);
#ifdef BENCH_OPENBLAS
    if (blas) {
        double tb = 1e30, t;
        long nb = (long)(2e-3 / (per_call(blas, c, 1) + 1e-9)) + 1;
        int s;
        for (s = 0; s < 5; s++) {
            t = per_call(blas, c, nb);
            if (t < tb) tb = t;
        }
        printf("  openblas %7.1f GFLOP/s (vit.h/openblas %.2f)", flop / tb / 1e9, tb / tf);
    }
#else
    (void)blas;
#endif
    printf("\n");
}

static kcase *kcase_new(size_t nx, size_t nx2, size_t nx3, size_t nw, size_t nb, size_t ny, size_t natt, size_t nscr) {
    kcase *c = (kcase *)calloc(1, sizeof *c);
    c->x = urandv(nx ? nx : 1); c->x2 = urandv(nx2 ? nx2 : 1); c->x3 = urandv(nx3 ? nx3 : 1);
    c->w = urandv(nw ? nw : 1); c->b = urandv(nb ? nb : 1);
    c->y = urandv(ny ? ny : 1); c->y2 = urandv(ny ? ny : 1);
    c->att = urandv(natt ? natt : 1); c->att2 = urandv(natt ? natt : 1);
    c->scr = urandv(nscr ? nscr : 1); c->aux = urandv(nscr ? nscr : 1);
    return c;
}
static void kcase_free(kcase *c) {
    free(c->x); free(c->x2); free(c->x3); free(c->w); free(c->b); free(c->y); free(c->y2);
    free(c->att); free(c->att2); free(c->scr); free(c->aux); free(c);
}

static void f_softmax(kcase *c) { vit_k_softmax(c->y, c->x, c->M, c->N); }
static void r_softmax(kcase *c) { vit_k_softmax_ref(c->y2, c->x, c->M, c->N); }
static void f_layernorm(kcase *c) { vit_k_layernorm(c->y, c->x, c->w, c->b, c->M, c->N, 1e-6f); }
static void r_layernorm(kcase *c) { vit_k_layernorm_ref(c->y2, c->x, c->w, c->b, c->M, c->N, 1e-6f); }
static void f_gelu(kcase *c) { vit_k_gelu(c->y, c->x, c->N); }
static void r_gelu(kcase *c) { vit_k_gelu_ref(c->y2, c->x, c->N); }
static void f_relu(kcase *c) { vit_k_relu(c->y, c->x, c->N); }
static void r_relu(kcase *c) { vit_k_relu_ref(c->y2, c->x, c->N); }
static void f_sigmoid(kcase *c) { vit_k_sigmoid(c->y, c->x, c->N); }
static void r_sigmoid(kcase *c) { vit_k_sigmoid_ref(c->y2, c->x, c->N); }
static void f_tanh(kcase *c) { vit_k_tanh(c->y, c->x, c->N); }
static void r_tanh(kcase *c) { vit_k_tanh_ref(c->y2, c->x, c->N); }
static void f_add(kcase *c) { vit_k_add(c->y, c->x, c->x2, c->N); }
static void r_add(kcase *c) { vit_k_add_ref(c->y2, c->x, c->x2, c->N); }
static void f_mul(kcase *c) { vit_k_mul(c->y, c->x, c->x2, c->N); }
static void r_mul(kcase *c) { vit_k_mul_ref(c->y2, c->x, c->x2, c->N); }
/* patch conv: x (B, C, H, W), w (K=D, C, S, S) */
static vit_patch_shape patch_shape(const kcase *c) {
    vit_patch_shape s;
    s.B = c->B; s.C = c->C; s.H = c->H; s.W = c->W; s.P = c->S; s.D = c->K;
    return s;
}
static void f_patch(kcase *c) {
    vit_patch_shape s = patch_shape(c);
    vit_k_patch_conv(c->y, c->scr, c->x, c->w, c->b, &s);
}
static void r_patch(kcase *c) {
    vit_patch_shape s = patch_shape(c);
    vit_k_patch_conv_ref(c->y2, c->x, c->w, c->b, &s);
}
/* attention: q, k, v interleaved in x with row stride ld, as the MHA's qkv */
static void f_attention(kcase *c) {
    int C = c->NH * c->HS;
    vit_attn_shape s = vit__attn_shape(c->B, c->N, c->NH, c->HS, c->ld, c->scale, c->post);
    vit_k_attention(c->y, c->att, c->scr, c->x, c->x + C, c->x + 2 * C, &s);
}
static void r_attention(kcase *c) {
    int C = c->NH * c->HS;
    vit_attn_shape s = vit__attn_shape(c->B, c->N, c->NH, c->HS, c->ld, c->scale, c->post);
    vit_k_attention_ref(c->y2, c->att2, c->x, c->x + C, c->x + 2 * C, &s);
}
/* rowstats: means into y, variances into att */
static void f_rowstats(kcase *c) { vit_k_rowstats(c->y, c->att, c->x, c->M, c->N); }
static void r_rowstats(kcase *c) { vit_k_rowstats_ref(c->y2, c->att2, c->x, c->M, c->N); }
static void f_rowaffine(kcase *c) { vit_k_rowaffine(c->y, c->x, c->w, c->b, c->M, c->N); }
static void r_rowaffine(kcase *c) { vit_k_rowaffine_ref(c->y2, c->x, c->w, c->b, c->M, c->N); }
/* conv1x1: x (B, C, M), w (K, C): K output channels over M pixels */
static void f_conv1x1(kcase *c) { vit_k_conv1x1(c->y, c->x, c->w, c->b, c->B, c->C, c->K, c->M); }
static void r_conv1x1(kcase *c) { vit_k_conv1x1_ref(c->y2, c->x, c->w, c->b, c->B, c->C, c->K, c->M); }
/* dwconv: x (B, H, W, C), w (C, 1, K, K), stride S */
static vit_conv_shape conv_shape(const kcase *c) {
    vit_conv_shape s;
    s.B = c->B; s.H = c->H; s.W = c->W; s.C = c->C; s.K = c->K; s.stride = c->S; s.pad = c->pad;
    return s;
}
static void f_dwconv(kcase *c) {
    vit_conv_shape s = conv_shape(c);
    vit_k_dwconv(c->y, c->scr, c->x, c->w, c->b, &s);
}
static void r_dwconv(kcase *c) {
    vit_conv_shape s = conv_shape(c);
    vit_k_dwconv_ref(c->y2, c->x, c->w, c->b, &s);
}
static void f_avgpool(kcase *c) { vit_k_avgpool(c->y, c->x, c->B, c->H, c->W, c->C, c->S); }
static void r_avgpool(kcase *c) { vit_k_avgpool_ref(c->y2, c->x, c->B, c->H, c->W, c->C, c->S); }
/* scores / attend: q = x (B, M, ld), k = x2 (B, N, ld), v = x3 (B, N, ld2), p = w (B, NH, M, N) */
static vit_heads_shape heads_shape(const kcase *c) {
    vit_heads_shape s;
    s.B = c->B; s.NH = c->NH; s.Nq = c->M; s.Nk = c->N; s.HS = c->HS; s.ldq = s.ldk = c->ld; s.ldv = c->ld2;
    s.scale = c->scale;
    return s;
}
static void f_scores(kcase *c) {
    vit_heads_shape s = heads_shape(c);
    vit_k_scores(c->y, c->x, c->x2, &s);
}
static void r_scores(kcase *c) {
    vit_heads_shape s = heads_shape(c);
    vit_k_scores_ref(c->y2, c->x, c->x2, &s);
}
static void f_attend(kcase *c) {
    vit_heads_shape s = heads_shape(c);
    vit_k_attend(c->y, c->scr, c->w, c->x3, &s);
}
static void r_attend(kcase *c) {
    vit_heads_shape s = heads_shape(c);
    vit_k_attend_ref(c->y2, c->w, c->x3, &s);
}
/* aft: q, k, v = x, x2, x3 (B, N=T, C=D), w (M, M) with window S;
   without the optional weights map, as the module runs them */
static vit_aft_shape aft_shape(const kcase *c) {
    vit_aft_shape s;
    s.B = c->B; s.T = c->N; s.D = c->C; s.ldw = c->M; s.s = c->S;
    return s;
}
static void f_aft(kcase *c) {
    vit_aft_shape s = aft_shape(c);
    vit_k_aft(c->y, NULL, c->scr, c->x, c->x2, c->x3, c->w, &s);
}
static void r_aft(kcase *c) {
    vit_aft_shape s = aft_shape(c);
    vit_k_aft_ref(c->y2, NULL, c->x, c->x2, c->x3, c->w, &s);
}
static void f_aft_simple(kcase *c) { vit_k_aft_simple(c->y, NULL, c->x, c->x2, c->x3, c->B, c->N, c->C); }
static void r_aft_simple(kcase *c) { vit_k_aft_simple_ref(c->y2, NULL, c->x, c->x2, c->x3, c->B, c->N, c->C); }
/* outlook: logits x (B, L, NH, K^4), v x2 (B, H, W, C) */
static vit_outlook_params outlook_params(const kcase *c) {
    vit_outlook_params p;
    memset(&p, 0, sizeof p);
    p.dim = c->C; p.heads = c->NH; p.kernel_size = c->K; p.padding = c->pad; p.stride = c->S; p.scale = c->scale;
    return p;
}
static void f_outlook(kcase *c) {
    vit_outlook_params p = outlook_params(c);
    vit_k_outlook(c->y, c->att, c->x, c->x2, c->B, c->H, c->W, &p);
}
static void r_outlook(kcase *c) {
    vit_outlook_params p = outlook_params(c);
    vit_k_outlook_ref(c->y2, c->att2, c->x, c->x2, c->B, c->H, c->W, &p);
}

#ifdef BENCH_OPENBLAS
/* The same products through cblas_sgemm, one call per image or head. */
static void b_conv1x1(kcase *c) {
    int bi;
    for (bi = 0; bi < c->B; bi++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c->K, c->M, c->C, 1.0f, c->w, c->C,
                    c->x + (size_t)bi * c->C * c->M, c->M, 0.0f, c->aux + (size_t)bi * c->K * c->M, c->M);
}
static void b_scores(kcase *c) {
    int t;
    for (t = 0; t < c->B * c->NH; t++) {
        int bi = t / c->NH, h = t % c->NH;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c->M, c->N, c->HS, c->scale,
                    c->x + (size_t)bi * c->M * c->ld + h * c->HS, c->ld, c->x2 + (size_t)bi * c->N * c->ld + h * c->HS,
                    c->ld, 0.0f, c->aux + (size_t)t * c->M * c->N, c->N);
    }
}
static void b_attend(kcase *c) {
    int t, C = c->NH * c->HS;
    for (t = 0; t < c->B * c->NH; t++) {
        int bi = t / c->NH, h = t % c->NH;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c->M, c->HS, c->N, 1.0f, c->w + (size_t)t * c->M * c->N,
                    c->N, c->x3 + (size_t)bi * c->N * c->ld2 + h * c->HS, c->ld2, 0.0f,
                    c->aux + (size_t)bi * c->M * C + h * c->HS, C);
    }
}
#else
#define b_conv1x1 NULL
#define b_scores NULL
#define b_attend NULL
#endif

static void bench_rowwise(double peak) {
    /* rows, n: a ViT-B/16 attention map (12 heads x 197 rows of 197) and an EMSA one (8 heads x 49 x 49) */
    static const int soft[][2] = {{12 * 197, 197}, {8 * 49, 49}, {6 * 784 * 9, 9}};
    static const int ln[][2] = {{197, 768}, {8 * 197, 768}, {16, 512}};
    int i;
    char label[96];
    for (i = 0; i < 3; i++) {
        int M = soft[i][0], N = soft[i][1];
        kcase *c = kcase_new((size_t)M * N, 0, 0, 0, 0, (size_t)M * N, 0, 0);
        c->M = M; c->N = N;
        snprintf(label, sizeof label, "softmax %dx%d", M, N);
        bench_case(label, f_softmax, r_softmax, c, (size_t)M * N, 1e-7, 1e-6, 0, 0, 0, 0, 8.0 * M * N, peak, NULL);
        kcase_free(c);
    }
    for (i = 0; i < 3; i++) {
        int M = ln[i][0], N = ln[i][1];
        kcase *c = kcase_new((size_t)M * N, 0, 0, (size_t)N, (size_t)N, (size_t)M * N, 0, 0);
        c->M = M; c->N = N;
        snprintf(label, sizeof label, "layernorm %dx%d", M, N);
        bench_case(label, f_layernorm, r_layernorm, c, (size_t)M * N, 1e-5, 1e-5, 0, 0, 0, 0, 8.0 * M * N, peak, NULL);
        kcase_free(c);
    }
}

static void bench_unary(double peak) {
    /* n: ViT-B/16's MLP hidden layer (197 x 3072), an SE/SGE gate map (512 x 7 x 7), ViT-B's pre-logits (768) */
    static const struct { const char *name; kcase_fn f, r; int n; double atol, rtol;
    } u[] = {{"gelu", f_gelu, r_gelu, 197 * 3072, 1e-6, 1e-6},
             {"relu", f_relu, r_relu, 197 * 3072, 0.0, 0.0},
             {"sigmoid", f_sigmoid, r_sigmoid, 512 * 49, 1e-7, 1e-6},
             {"sigmoid", f_sigmoid, r_sigmoid, 8 * 512 * 49, 1e-7, 1e-6},
             {"tanh", f_tanh, r_tanh, 8 * 768, 2e-7, 1e-6},
             {"add", f_add, r_add, 197 * 768, 0.0, 0.0},
             {"mul", f_mul, r_mul, 512 * 49, 0.0, 0.0}};
    int i;
    char label[96];
    for (i = 0; i < (int)(sizeof u / sizeof u[0]); i++) {
        int n = u[i].n, two = u[i].f == f_add || u[i].f == f_mul;
        kcase *c = kcase_new((size_t)n, (size_t)n, 0, 0, 0, (size_t)n, 0, 0);
        size_t j;
        for (j = 0; j < (size_t)n; j++) c->x[j] *= 8.0f; /* [-4, 4): both tails of gelu, sigmoid, tanh */
        c->N = n;
        snprintf(label, sizeof label, "%s n=%d", u[i].name, n);
        bench_case(label, u[i].f, u[i].r, c, (size_t)n, u[i].atol, u[i].rtol, 0, 0, 0, 0, (two ? 12.0 : 8.0) * n, peak,
                   NULL);
        kcase_free(c);
    }
}

static void bench_vit_kernels(double peak) {
    char label[96];
    kcase *c;
    /* ViT-B/16's patch embedding: 224x224x3, P = 16, D = 768 */
    {
        int B = 1, C = 3, H = 224, P = 16, D = 768, N = (H / P) * (H / P), K = C * P * P;
        c = kcase_new((size_t)B * C * H * H, 0, 0, (size_t)D * K, (size_t)D, (size_t)B * N * D, 0, (size_t)B * N * K);
        c->B = B; c->C = C; c->H = c->W = H; c->S = P; c->K = D;
        snprintf(label, sizeof label, "patch_conv 3x224x224 P=16 D=768");
        bench_case(label, f_patch, r_patch, c, (size_t)B * N * D, 1e-5, 1e-5, 0, 0, 0, 2.0 * B * N * D * K, 0, peak,
                   NULL);
        kcase_free(c);
    }
    /* attention: ViT-B/16 (197 tokens, 12 heads of 64), seed 002's one head of 49 over 16 patches */
    {
        static const int cfg[][4] = {{1, 197, 12, 64}, {8, 197, 12, 64}, {1, 16, 1, 49}};
        int i;
        for (i = 0; i < 3; i++) {
            int B = cfg[i][0], N = cfg[i][1], NH = cfg[i][2], HS = cfg[i][3], C = NH * HS;
            c = kcase_new((size_t)B * N * 3 * C, 0, 0, 0, 0, (size_t)B * N * C, (size_t)B * NH * N * N,
                          (size_t)B * C * N);
            c->B = B;
            c->N = N;
            c->NH = NH;
            c->HS = HS;
            c->ld = 3 * C;
            c->scale = 1.0f / sqrtf((float)HS);
            c->post = 1.0f;
            snprintf(label, sizeof label, "attention B=%d N=%d NH=%d HS=%d", B, N, NH, HS);
            bench_case(label, f_attention, r_attention, c, (size_t)B * N * C, 1e-6, 1e-5, (size_t)B * NH * N * N, 1e-7,
                       1e-5, 4.0 * B * NH * N * N * HS, 0, peak, NULL);
            kcase_free(c);
        }
    }
}

static void bench_seed_kernels(double peak) {
    char label[96];
    kcase *c;
    int i;
    /* rowstats, rowaffine: SE/SGE/ShuffleAttention pooling and gating, C = 512 at 7x7, B = 1 and 8 */
    for (i = 1; i <= 8; i += 7) {
        int M = 512 * i, N = 49;
        c = kcase_new((size_t)M * N, 0, 0, (size_t)M, (size_t)M, (size_t)M * N, (size_t)M, 0);
        c->M = M; c->N = N;
        snprintf(label, sizeof label, "rowstats %dx%d", M, N);
        bench_case(label, f_rowstats, r_rowstats, c, (size_t)M, 1e-6, 1e-5, (size_t)M, 1e-5, 1e-4, 0, 4.0 * M * N, peak,
                   NULL);
        snprintf(label, sizeof label, "rowaffine %dx%d", M, N);
        bench_case(label, f_rowaffine, r_rowaffine, c, (size_t)M * N, 1e-6, 1e-6, 0, 0, 0, 0, 8.0 * M * N, peak, NULL);
        kcase_free(c);
    }
    /* conv1x1: EMSA's transform (8 heads mixed over 49 x 16 maps) and SGE's group sum (64 channels -> 1 over 7x7) */
    {
        static const int cfg[][4] = {{1, 8, 8, 49 * 16}, {8, 8, 8, 49 * 49}, {1, 64, 1, 49}};
        for (i = 0; i < 3; i++) {
            int B = cfg[i][0], Ci = cfg[i][1], Co = cfg[i][2], HW = cfg[i][3];
            c = kcase_new((size_t)B * Ci * HW, 0, 0, (size_t)Co * Ci, (size_t)Co, (size_t)B * Co * HW, 0,
                          (size_t)B * Co * HW);
            c->B = B; c->C = Ci; c->K = Co; c->M = HW;
            snprintf(label, sizeof label, "conv1x1 B=%d %d->%d HW=%d", B, Ci, Co, HW);
            bench_case(label, f_conv1x1, r_conv1x1, c, (size_t)B * Co * HW, 1e-6 * Ci, 1e-5, 0, 0, 0,
                       2.0 * B * Co * Ci * HW, 0, peak, b_conv1x1);
            kcase_free(c);
        }
    }
    /* dwconv: EMSA ratio 2 on 7x7x512 (kernel 3, stride 2, pad 1); ResT stage 1, ratio 8 on
       56x56x64 (kernel 9, stride 8, pad 4) */
    {
        static const int cfg[][7] = {{1, 7, 7, 512, 3, 2, 1}, {8, 7, 7, 512, 3, 2, 1}, {1, 56, 56, 64, 9, 8, 4}};
        for (i = 0; i < 3; i++) {
            int B = cfg[i][0], H = cfg[i][1], W = cfg[i][2], C = cfg[i][3], K = cfg[i][4], st = cfg[i][5],
                pad = cfg[i][6];
            int Ho = (H + 2 * pad - K) / st + 1, Wo = (W + 2 * pad - K) / st + 1;
            c = kcase_new((size_t)B * H * W * C, 0, 0, (size_t)C * K * K, (size_t)C, (size_t)B * Ho * Wo * C, 0,
                          (size_t)K * K * C);
            c->B = B; c->H = H; c->W = W; c->C = C; c->K = K; c->S = st; c->pad = pad;
            snprintf(label, sizeof label, "dwconv B=%d %dx%dx%d K=%d s=%d", B, H, W, C, K, st);
            bench_case(label, f_dwconv, r_dwconv, c, (size_t)B * Ho * Wo * C, 1e-6 * K * K, 1e-5, 0, 0, 0,
                       2.0 * B * Ho * Wo * C * K * K, 0, peak, NULL);
            kcase_free(c);
        }
    }
    /* avgpool: OutlookAttention stride 2 on VOLO's 28x28x192 */
    for (i = 1; i <= 8; i += 7) {
        int B = i, H = 28, C = 192, S = 2, Ho = H / S;
        c = kcase_new((size_t)B * H * H * C, 0, 0, 0, 0, (size_t)B * Ho * Ho * C, 0, 0);
        c->B = B; c->H = c->W = H; c->C = C; c->S = S;
        snprintf(label, sizeof label, "avgpool B=%d 28x28x192 S=2", B);
        bench_case(label, f_avgpool, r_avgpool, c, (size_t)B * Ho * Ho * C, 1e-6, 1e-6, 0, 0, 0, 0,
                   4.0 * B * H * H * C * 1.25, peak, NULL);
        kcase_free(c);
    }
    /* scores, attend: EMSA on 7x7 tokens, 8 heads of 64, keys from 7x7 (ratio 1) or 4x4 (ratio 2) */
    {
        static const int cfg[][5] = {{1, 8, 49, 49, 64}, {1, 8, 49, 16, 64}, {8, 8, 49, 49, 64}};
        for (i = 0; i < 3; i++) {
            int B = cfg[i][0], NH = cfg[i][1], Nq = cfg[i][2], Nk = cfg[i][3], HS = cfg[i][4], ld = NH * HS;
            size_t np = (size_t)B * NH * Nq * Nk, no = (size_t)B * Nq * ld, nvt = (size_t)B * NH * HS * Nk;
            size_t ny = np > no ? np : no, nscr = ny > nvt ? ny : nvt; /* scr: attend's vt, and OpenBLAS's outputs */
            c = kcase_new(no, (size_t)B * Nk * ld, (size_t)B * Nk * ld, np, 0, ny, 0, nscr);
            c->B = B; c->NH = NH; c->M = Nq; c->N = Nk; c->HS = HS; c->ld = ld; c->ld2 = ld; c->scale = 0.125f;
            vit_k_softmax_ref(c->w, c->w, B * NH * Nq, Nk); /* attend takes probabilities */
            snprintf(label, sizeof label, "scores B=%d NH=%d %dx%d HS=%d", B, NH, Nq, Nk, HS);
            bench_case(label, f_scores, r_scores, c, np, 1e-6 * HS, 1e-5, 0, 0, 0, 2.0 * np * HS, 0, peak, b_scores);
            snprintf(label, sizeof label, "attend B=%d NH=%d %dx%d HS=%d", B, NH, Nq, Nk, HS);
            bench_case(label, f_attend, r_attend, c, (size_t)B * Nq * ld, 1e-6, 1e-5, 0, 0, 0, 2.0 * np * HS, 0, peak,
                       b_attend);
            kcase_free(c);
        }
    }
    /* aft: seed 003's AFT on T = 49 steps of hidden_dim 64: full (s >= T), local (s = 7), simple */
    {
        static const int cfg[][3] = {{1, 49, 49}, {1, 49, 7}, {8, 49, 49}};
        for (i = 0; i < 3; i++) {
            int B = cfg[i][0], T = cfg[i][1], s = cfg[i][2], D = 64;
            size_t n = (size_t)B * T * D;
            c = kcase_new(n, n, n, (size_t)T * T, 0, n, 0, (size_t)T * T + 4 * (size_t)T * D + D);
            c->B = B; c->N = T; c->C = D; c->M = T; c->S = s;
            snprintf(label, sizeof label, "aft B=%d T=%d D=%d s=%d", B, T, D, s);
            bench_case(label, f_aft, r_aft, c, n, 1e-6, 2e-5, 0, 0, 0, 4.0 * B * T * T * D, 0, peak, NULL);
            kcase_free(c);
        }
        for (i = 1; i <= 8; i += 7) {
            int B = i, T = 49, D = 64;
            size_t n = (size_t)B * T * D;
            c = kcase_new(n, n, n, 0, 0, n, 0, 0);
            c->B = B; c->N = T; c->C = D;
            snprintf(label, sizeof label, "aft_simple B=%d T=%d D=%d", B, T, D);
            bench_case(label, f_aft_simple, r_aft_simple, c, n, 1e-6, 1e-5, 0, 0, 0, 0, 4.0 * 4.0 * n, peak, NULL);
            kcase_free(c);
        }
    }
    /* outlook: VOLO-D1 stage 1, 28x28x192, 6 heads, 3x3 windows, stride 1 and 2 */
    {
        static const int cfg[][2] = {{1, 1}, {1, 2}, {8, 1}};
        for (i = 0; i < 3; i++) {
            int B = cfg[i][0], st = cfg[i][1], H = 28, C = 192, NH = 6, K = 3, KK = 9,
                L = ((H + 2 - K) / st + 1) * ((H + 2 - K) / st + 1);
            size_t na = (size_t)B * NH * L * KK * KK, ny = (size_t)B * H * H * C;
            c = kcase_new(na, ny, 0, 0, 0, ny, na, 0);
            c->B = B;
            c->H = c->W = H;
            c->C = C;
            c->NH = NH;
            c->K = K;
            c->pad = 1;
            c->S = st;
            c->scale = 1.0f / sqrtf(32.0f);
            snprintf(label, sizeof label, "outlook B=%d 28x28x192 NH=6 K=3 s=%d", B, st);
            bench_case(label, f_outlook, r_outlook, c, ny, 1e-6, 1e-5, na, 1e-7, 1e-5, 2.0 * B * L * KK * KK * C, 0,
                       peak, NULL);
            kcase_free(c);
        }
    }
}

/* The few-rows product (SE and the MLP classifier at B = 12..16, where
   vit_k_matmul picks it with AVX-512; 6..8 with AVX2) against the packed
   tiles on the same shape, and OpenBLAS. M <= VIT__VW. */
static void bench_linear(int M, int K, int N, double peak) {
    float *x = urandv((size_t)M * K), *w = urandv((size_t)N * K), *b = urandv((size_t)N);
    float *y1 = urandv((size_t)M * N), *y2 = urandv((size_t)M * N);
    double flop = 2.0 * M * K * N, tf = 1e30, tg = 1e30, t;
    long n, i;
    int s;
    char label[64];
    snprintf(label, sizeof label, "linear %dx%dx%d (few rows)", M, K, N);
    if (M > VIT__VW) { /* the few-rows path takes at most a vector of rows */
        printf("%-36s skipped: more rows than the %d of a vector\n", label, VIT__VW);
        free(x); free(w); free(b); free(y1); free(y2);
        return;
    }
    vit__mm few = vit__mm_dense(y1, x, w, b, M, K, N), tiles = vit__mm_dense(y2, x, w, b, M, K, N);
    vit__gemm_few(&few);
    vit_k_matmul_ref(y2, x, w, b, M, K, N);
    if (!check_close(label, y1, y2, (size_t)M * N, 1e-5 * K, 1e-5)) exit(1);
    t = now(); vit__gemm_few(&few); t = now() - t;
    n = (long)(2e-3 / (t + 1e-9)) + 1;
    for (s = 0; s < 5; s++) { /* alternately */
        t = now(); for (i = 0; i < n; i++) vit__gemm_few(&few); t = (now() - t) / n; if (t < tf) tf = t;
        t = now(); for (i = 0; i < n; i++) vit__gemm_tiles(&tiles); t = (now() - t) / n; if (t < tg) tg = t;
    }
    printf("%-36s fast %7.1f GFLOP/s (%5.1f%% of peak)  tiles %6.1f GFLOP/s (fast x%.2f)", label, flop / tf / 1e9,
           100.0 * flop / tf / 1e9 / peak, flop / tg / 1e9, tg / tf);
#ifdef BENCH_OPENBLAS
    {
        double tb;
        TIME_BEST(tb, 5,
                  for (i = 0; i < n; i++)
                      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, x, K, w, K, 0.0f, y2, N));
        tb /= n;
        printf("  openblas %7.1f GFLOP/s (vit.h/openblas %.2f)", flop / tb / 1e9, tb / tf);
    }
#endif
    printf("\n");
    free(x); free(w); free(b); free(y1); free(y2);
}

int main(int argc, char **argv) {
    double peak = 1.0;
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    if (argc > 1 && !strcmp(argv[1], "--peak")) {
#ifndef VIT_NO_SIMD
        printf("{\"fma_peak_gflops\": %.2f, \"vector_width\": %d}\n", fma_peak(), VIT__VW);
        return 0;
#else
        fprintf(stderr, "bench_kernels: built with VIT_NO_SIMD: no FMA peak to measure\n");
        return 2;
#endif
    }
    if (vit_set_threads(threads) != VIT_OK) {
        fprintf(stderr, "bench_kernels: %s\n", vit_last_error());
        return 2;
    }
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
    {
        /* BF16 and I8 weights: against the dot-product peak where the
           tiles use vdpbf16ps or vpdpbusd, else the FMA peak (widened). */
        double pb = peak, pi = peak;
        int wt;
#if VIT__DOT_BF16
        pb = dot_peak(VIT_DTYPE_BF16) * threads;
        printf("vdpbf16ps peak (%d threads): %.1f GFLOP/s\n", threads, pb);
#endif
#if VIT__DOT_I8
        pi = dot_peak(VIT_DTYPE_I8) * threads;
        printf(BENCH_I8_INSN " peak (%d threads): %.1f GOP/s\n", threads, pi);
#endif
        for (wt = VIT_DTYPE_BF16; wt <= VIT_DTYPE_I8; wt++) {
            double pk = wt == VIT_DTYPE_BF16 ? pb : pi;
            bench_matmul_q(wt, 197, 768, 3072, pk);
            bench_matmul_q(wt, 197, 3072, 768, pk);
            bench_matmul_q(wt, 197, 768, 2304, pk);
            bench_matmul_q(wt, 1576, 768, 3072, pk);
        }
        bench_attention_lowp(1, pb);
        bench_attention_lowp(8, pb);
    }
    /* The few-rows product takes at most a vector of rows: 16 and 12 with
       AVX-512, 8 and 6 with AVX2 (16 there read past its transposed x). */
    bench_linear(VIT__VW, 784, 784, peak);
    bench_linear(3 * VIT__VW / 4, 512, 512, peak);
    bench_rowwise(peak);
    bench_unary(peak);
    bench_vit_kernels(peak);
    bench_seed_kernels(peak);
    return 0;
}

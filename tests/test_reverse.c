/* The reverse pass: each reverse kernel against its scalar _ref on awkward
   sizes (below, at and off the vector width), each _ref against central
   differences of its forward kernel (so the _ref is the chain rule, not
   just equal to itself), the bits the same for any thread count; then the
   whole ViT reverse pass against PyTorch autograd on timm's families
   (tests/fixtures/explain, made by tools/explain_reference.py). */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "check.h"

#include <string.h>

static const int rsizes[] = {1, 7, 8, 9, 17, 33, 65};
#define RNSIZES ((int)(sizeof rsizes / sizeof rsizes[0]))

/* sum(dy * f(x)) in double, f a forward kernel of n inputs and outputs. */
typedef void (*fwd_fn)(float *y, const float *x, const void *ctx);
static double dot_fwd(fwd_fn f, const float *x, const float *dy, float *y, size_t ny, const void *ctx) {
    double s = 0.0;
    size_t i;
    f(y, x, ctx);
    for (i = 0; i < ny; i++) s += (double)dy[i] * y[i];
    return s;
}

/* grad (nx) against central differences of sum(dy * f(x)), a few
   coordinates: within 2e-2 of the gradient's largest value (float
   forwards, step 1e-2). */
static int check_fd(const char *label, fwd_fn f, const float *x, size_t nx, const float *dy, size_t ny,
                    const float *grad, const void *ctx) {
    float *xp = (float *)malloc(nx * sizeof(float)), *y = (float *)malloc(ny * sizeof(float));
    double gmax = 0.0, worst = 0.0;
    size_t i, step = nx / 23 + 1;
    int ok;
    for (i = 0; i < nx; i++) gmax = fabs(grad[i]) > gmax ? fabs(grad[i]) : gmax;
    for (i = 0; i < nx; i += step) {
        double h = 1e-2, fd;
        memcpy(xp, x, nx * sizeof(float));
        xp[i] = x[i] + (float)h;
        fd = dot_fwd(f, xp, dy, y, ny, ctx);
        xp[i] = x[i] - (float)h;
        fd = (fd - dot_fwd(f, xp, dy, y, ny, ctx)) / (double)((x[i] + (float)h) - (x[i] - (float)h));
        if (fabs(fd - grad[i]) > worst) worst = fabs(fd - grad[i]);
    }
    ok = worst <= 2e-2 * (gmax > 1.0 ? gmax : 1.0);
    if (!ok) printf("  %s: |central difference - gradient| up to %g (largest gradient %g)\n", label, worst, gmax);
    expect(ok, label);
    free(xp);
    free(y);
    return ok;
}

typedef struct ln_ctx { const float *w, *b; int rows, C; } ln_ctx;
static void ln_fwd(float *y, const float *x, const void *ctx) {
    const ln_ctx *c = (const ln_ctx *)ctx;
    vit_k_layernorm_ref(y, x, c->w, c->b, c->rows, c->C, 1e-5f);
}

static void test_layernorm_back(void) {
    int a, b;
    char label[96];
    for (a = 0; a < RNSIZES; a++)
        for (b = 1; b < RNSIZES; b++) {
            int rows = rsizes[a], C = rsizes[b];
            size_t n = (size_t)rows * C;
            float *x = randv(n, 2.0f), *w = randv((size_t)C, 1.0f), *bb = randv((size_t)C, 1.0f), *dy = randv(n, 1.0f);
            float *d1 = randv(n, 1.0f), *d2 = (float *)malloc(n * sizeof(float));
            ln_ctx c;
            memcpy(d2, d1, n * sizeof(float)); /* both accumulate onto the same values */
            vit_k_layernorm_back(d1, x, w, dy, rows, C, 1e-5f);
            vit_k_layernorm_back_ref(d2, x, w, dy, rows, C, 1e-5f);
            snprintf(label, sizeof label, "layernorm_back %dx%d", rows, C);
            expect(check_close(label, d1, d2, n, 1e-5, 1e-4), label);
            if (rows <= 9 && C >= 7) {
                float *g = (float *)calloc(n, sizeof(float));
                c.w = w; c.b = bb; c.rows = rows; c.C = C;
                vit_k_layernorm_back_ref(g, x, w, dy, rows, C, 1e-5f);
                snprintf(label, sizeof label, "layernorm_back_ref %dx%d is the chain rule", rows, C);
                check_fd(label, ln_fwd, x, n, dy, n, g, &c);
                free(g);
            }
            free(x); free(w); free(bb); free(dy); free(d1); free(d2);
        }
}

typedef struct act_ctx { int n, act, rows, H; } act_ctx;
static void act_fwd(float *y, const float *x, const void *ctx) {
    const act_ctx *c = (const act_ctx *)ctx;
    vit_k_act_ref(y, x, c->n, (vit_act)c->act);
}
static void glu_fwd(float *y, const float *x, const void *ctx) {
    const act_ctx *c = (const act_ctx *)ctx;
    vit_k_glu_ref(y, x, c->rows, c->H, (vit_act)c->act);
}

static void test_act_back(void) {
    static const char *names[5] = {"gelu", "relu", "gelu_tanh", "quick_gelu", "silu"};
    int act, a;
    char label[96];
    for (act = 0; act < 5; act++)
        for (a = 0; a < RNSIZES; a++) {
            int n = rsizes[a] * 9, rows = rsizes[a], H = 13;
            float *x = randv((size_t)n, 4.0f), *dy = randv((size_t)n, 1.0f), *d1 = randv((size_t)n, 1.0f);
            float *d2 = randv((size_t)n, 1.0f), *gx = randv((size_t)rows * 2 * H, 3.0f);
            float *gdy = randv((size_t)rows * H, 1.0f);
            float *g1 = randv((size_t)rows * 2 * H, 1.0f), *g2 = randv((size_t)rows * 2 * H, 1.0f);
            act_ctx c;
            vit_k_act_back(d1, x, dy, n, (vit_act)act);
            vit_k_act_back_ref(d2, x, dy, n, (vit_act)act);
            snprintf(label, sizeof label, "act_back %s n=%d", names[act], n);
            expect(check_close(label, d1, d2, (size_t)n, 1e-6, 1e-5), label);
            vit_k_glu_back(g1, gx, gdy, rows, H, (vit_act)act);
            vit_k_glu_back_ref(g2, gx, gdy, rows, H, (vit_act)act);
            snprintf(label, sizeof label, "glu_back %s %dx%d", names[act], rows, H);
            expect(check_close(label, g1, g2, (size_t)rows * 2 * H, 1e-6, 1e-5), label);
            if (a == 2 && act != VIT_ACT_RELU) { /* ReLU's kink would meet the step */
                c.n = n; c.act = act; c.rows = rows; c.H = H;
                snprintf(label, sizeof label, "act_back_ref %s is the chain rule", names[act]);
                check_fd(label, act_fwd, x, (size_t)n, dy, (size_t)n, d2, &c);
                snprintf(label, sizeof label, "glu_back_ref %s is the chain rule", names[act]);
                check_fd(label, glu_fwd, gx, (size_t)rows * 2 * H, gdy, (size_t)rows * H, g2, &c);
            }
            free(x); free(dy); free(d1); free(d2); free(gx); free(gdy); free(g1); free(g2);
        }
}

static void sm_fwd(float *y, const float *x, const void *ctx) {
    const act_ctx *c = (const act_ctx *)ctx;
    vit_k_softmax_ref(y, x, c->rows, c->n);
}

static void test_softmax_back(void) {
    int a, b;
    char label[96];
    for (a = 0; a < RNSIZES; a++)
        for (b = 0; b < RNSIZES; b++) {
            int rows = rsizes[a], n = rsizes[b];
            size_t t = (size_t)rows * n;
            float *x = randv(t, 3.0f), *y = (float *)malloc(t * sizeof(float)), *dy = randv(t, 1.0f);
            float *d1 = (float *)malloc(t * sizeof(float)), *d2 = (float *)malloc(t * sizeof(float));
            act_ctx c;
            vit_k_softmax_ref(y, x, rows, n);
            vit_k_softmax_back(d1, y, dy, rows, n);
            vit_k_softmax_back_ref(d2, y, dy, rows, n);
            snprintf(label, sizeof label, "softmax_back %dx%d", rows, n);
            expect(check_close(label, d1, d2, t, 1e-6, 1e-5), label);
            if (a == 2 && n > 1) {
                c.rows = rows; c.n = n;
                snprintf(label, sizeof label, "softmax_back_ref %dx%d is the chain rule", rows, n);
                check_fd(label, sm_fwd, x, t, dy, t, d2, &c);
            }
            memcpy(d1, dy, t * sizeof(float));
            vit_k_softmax_back(d1, y, d1, rows, n); /* in place */
            snprintf(label, sizeof label, "softmax_back %dx%d in place", rows, n);
            expect(check_close(label, d1, d2, t, 1e-6, 1e-5), label);
            free(x); free(y); free(dy); free(d1); free(d2);
        }
}

/* The products with w laid out (K, N) (vit__mm.nn): the tiles against the
   specification, on edges of the panel and the k blocks. */
static void test_matmul_nn(void) {
    static const int ms[] = {1, 3, 7, 13, 64}, ks[] = {1, 9, 33, 300}, ns[] = {1, 8, 17, 40, 100};
    int a, b, c;
    char label[96];
    for (a = 0; a < 5; a++)
        for (b = 0; b < 4; b++)
            for (c = 0; c < 5; c++) {
                int M = ms[a], K = ks[b], N = ns[c], ldw = N + 3;
                float *x = randv((size_t)M * K, 1.0f), *w = randv((size_t)K * ldw, 1.0f);
                float *bias = randv((size_t)N, 1.0f);
                float *y1 = randv((size_t)M * N, 1.0f), *y2 = randv((size_t)M * N, 1.0f);
                vit__mm p = vit__mm_dense(y1, x, w, bias, M, K, N);
                p.nn = 1; p.ldw = ldw; p.alpha = 0.5f;
                vit__matmul(&p);
                p.y = y2;
                vit__matmul_ref(&p);
                snprintf(label, sizeof label, "matmul nn %dx%dx%d", M, K, N);
                expect(check_close(label, y1, y2, (size_t)M * N, 1e-5, 1e-4), label);
                free(x); free(w); free(bias); free(y1); free(y2);
            }
}

/* dx = dy W over a loaded F32 weight W (N, K) packed in panels
   (vit__mm.nnp: the reverse pass's vit__rev_linear) gives the bits of W
   row-major: k running across W's panels, into its last partial one. */
static void test_matmul_nn_packed(void) {
    static const int ms[] = {1, 5, 13, 40}, Ns[] = {1, 31, 32, 33, 70, 300}, Ks[] = {1, 8, 17, 40, 100};
    int a, b, c, ok = 1;
    for (a = 0; a < 4; a++)
        for (b = 0; b < 6; b++)
            for (c = 0; c < 5; c++) {
                int M = ms[a], N = Ns[b], K = Ks[c];
                float *dy = randv((size_t)M * N, 1.0f), *w = randv((size_t)N * K, 1.0f), *wp;
                float *d1 = randv((size_t)M * K, 1.0f), *d2 = randv((size_t)M * K, 1.0f);
                unsigned char *tmp;
                struct vit__pack rec;
                vit_tensor t;
                vit__mm p;
                memset(&t, 0, sizeof t);
                t.dtype = VIT_DTYPE_F32;
                t.ndim = 2;
                t.shape[0] = N;
                t.shape[1] = K;
                wp = (float *)malloc((size_t)N * K * sizeof(float));
                memcpy(wp, w, (size_t)N * K * sizeof(float));
                t.data = wp;
                tmp = (unsigned char *)malloc(vit__pack_tmp(&t) + 1);
                vit__pack_weight(&t, tmp, NULL, &rec);
                p = vit__mm_nn(d1, dy, w, M, N, K);
                vit__matmul(&p);
                p = vit__mm_nn(d2, dy, wp, M, N, K);
                p.nnp = t.pack ? t.pack->panel : 0;
                vit__matmul(&p);
                if (memcmp(d1, d2, (size_t)M * K * sizeof(float)) ||
                    (vit__panel_rows(VIT_DTYPE_F32, K) && N >= vit__panel_rows(VIT_DTYPE_F32, K)) != (t.pack != NULL)) {
                    printf("FAIL matmul nn over a packed weight %dx%dx%d\n", M, N, K);
                    ok = 0;
                }
                free(dy); free(w); free(wp); free(d1); free(d2); free(tmp);
            }
    expect(ok, "matmul nn over a packed F32 weight: the bits of the row-major one");
}

typedef struct att_ctx { const vit_attn_shape *s; const float *k, *v; float *att; } att_ctx;
/* out as a function of q alone (k, v fixed), for the differences */
static void att_fwd_q(float *y, const float *q, const void *ctx) {
    const att_ctx *c = (const att_ctx *)ctx;
    vit_k_attention_ref(y, c->att, q, c->k, c->v, c->s);
}

static void test_attention_back(void) {
    static const int Ns[] = {1, 5, 17, 40}, HSs[] = {1, 8, 13};
    int a, b, post, threads;
    char label[128];
    for (a = 0; a < 4; a++)
        for (b = 0; b < 3; b++)
            for (post = 0; post < 2; post++) {
                int N = Ns[a], HS = HSs[b], NH = 3, B = 2, C = NH * HS, ld = 3 * C + 2;
                vit_attn_shape s;
                size_t nq = (size_t)B * N * ld, nt = (size_t)B * NH * N * N;
                float *qkv = randv(nq, 1.0f), *att = (float *)malloc(nt * sizeof(float));
                float *out = (float *)malloc((size_t)B * N * C * sizeof(float)), *dout = randv((size_t)B * N * C, 1.0f);
                float *g1 = randv(nq, 1.0f), *g2 = (float *)malloc(nq * sizeof(float)), *g3;
                float *da1 = (float *)malloc(nt * sizeof(float)), *da2 = (float *)malloc(nt * sizeof(float));
                float *scratch = (float *)malloc((size_t)B * NH * ((size_t)N * N + 3 * (size_t)HS * N) * sizeof(float));
                s.B = B; s.N = N; s.NH = NH; s.HS = HS; s.ld = ld;
                s.scale = 1.0f / sqrtf((float)HS);
                s.post = post ? 0.25f : 1.0f; /* the einops ViT's probabilities scaled after the softmax */
                if (post) s.scale = 1.0f;
                memcpy(g2, g1, nq * sizeof(float)); /* columns not q, k, v stay as they were */
                vit_k_attention_ref(out, att, qkv, qkv + C, qkv + 2 * C, &s);
                vit_k_attention_back(g1, g1 + C, g1 + 2 * C, da1, scratch, dout, qkv, qkv + C, qkv + 2 * C, att, &s);
                vit_k_attention_back_ref(g2, g2 + C, g2 + 2 * C, da2, dout, qkv, qkv + C, qkv + 2 * C, att, &s);
                snprintf(label, sizeof label, "attention_back B=%d N=%d NH=%d HS=%d post=%g: dq dk dv", B, N, NH, HS,
                         (double)s.post);
                expect(check_close(label, g1, g2, nq, 1e-5, 1e-4), label);
                snprintf(label, sizeof label, "attention_back B=%d N=%d NH=%d HS=%d post=%g: datt", B, N, NH, HS,
                         (double)s.post);
                expect(check_close(label, da1, da2, nt, 1e-5, 1e-4), label);
                /* the bits do not depend on the thread count */
                g3 = (float *)malloc(nq * sizeof(float));
                for (threads = 1; threads <= 3; threads += 2) {
                    memcpy(g3, g2, nq * sizeof(float));
                    vit_set_threads(threads);
                    vit_k_attention_back(g3, g3 + C, g3 + 2 * C, NULL, scratch, dout, qkv, qkv + C, qkv + 2 * C, att,
                                         &s);
                    if (threads == 1) memcpy(g2, g3, nq * sizeof(float));
                }
                vit_set_threads(0);
                snprintf(label, sizeof label, "attention_back N=%d HS=%d: 1 and 3 threads, same bits", N, HS);
                expect(memcmp(g2, g3, nq * sizeof(float)) == 0, label);
                if (a == 2 && b == 1) { /* dq against differences: one batch item's q, through out */
                    att_ctx c;
                    float *gq = (float *)malloc(nq * sizeof(float));
                    vit_k_attention_back_ref(g2, g2 + C, g2 + 2 * C, NULL, dout, qkv, qkv + C, qkv + 2 * C, att, &s);
                    memcpy(gq, g2, nq * sizeof(float));
                    {
                        /* only q's columns vary: zero the others' gradient, perturb all (k, v columns of x move
                           too, so compare through a function of q where k and v are a fixed copy) */
                        float *kv = (float *)malloc(nq * sizeof(float));
                        size_t i;
                        memcpy(kv, qkv, nq * sizeof(float));
                        c.s = &s; c.k = kv + C; c.v = kv + 2 * C; c.att = att;
                        for (i = 0; i < nq; i++)
                            if ((int)(i % (size_t)ld) >= C) gq[i] = 0.0f;
                        snprintf(label, sizeof label, "attention_back_ref dq is the chain rule (post=%g)",
                                 (double)s.post);
                        check_fd(label, att_fwd_q, qkv, nq, dout, (size_t)B * N * C, gq, &c);
                        free(kv);
                    }
                    free(gq);
                }
                free(qkv); free(att); free(out); free(dout); free(g1); free(g2); free(g3); free(da1); free(da2);
                free(scratch);
            }
}

static void test_patch_conv_back(void) {
    static const int Hs[] = {8, 9, 14}, Ps[] = {2, 4, 7};
    int a, b;
    char label[96];
    for (a = 0; a < 3; a++)
        for (b = 0; b < 3; b++) {
            vit_patch_shape sh;
            size_t nx, ny, nc;
            float *w, *dy, *d1, *d2, *cols;
            sh.B = 2; sh.C = 3; sh.H = Hs[a]; sh.W = Hs[a] + 1; sh.P = Ps[b]; sh.D = 5;
            if (sh.H < sh.P) continue;
            nx = (size_t)sh.B * sh.C * sh.H * sh.W;
            ny = (size_t)sh.B * (sh.H / sh.P) * (sh.W / sh.P) * sh.D;
            nc = (size_t)sh.B * (sh.H / sh.P) * (sh.W / sh.P) * sh.C * sh.P * sh.P;
            w = randv((size_t)sh.D * sh.C * sh.P * sh.P, 1.0f);
            dy = randv(ny, 1.0f);
            d1 = randv(nx, 1.0f);
            d2 = randv(nx, 1.0f);
            cols = (float *)malloc(nc * sizeof(float));
            vit_k_patch_conv_back(d1, cols, dy, w, &sh);
            vit_k_patch_conv_back_ref(d2, dy, w, &sh);
            snprintf(label, sizeof label, "patch_conv_back %dx%d P=%d", sh.H, sh.W, sh.P);
            expect(check_close(label, d1, d2, nx, 1e-5, 1e-4), label);
            free(w); free(dy); free(d1); free(d2); free(cols);
        }
}

/* A whole ViT (the fixture path): out equals vit_model_forward's, and
   grad_input equals central differences of the forward's target at a few
   pixels; the bits do not depend on the thread count. */
static void test_model_fd(const char *path, int cls) {
    vit_model m;
    vit_arena a;
    vit_tensor x, y, seed, gin, *tok = NULL, *gt = NULL;
    vit_reverse rv;
    int32_t shape[4], ndim = 0, k;
    size_t n, i, bytes = 0, fbytes = 0;
    char label[1300];
    if (vit_model_load_file(&m, path) != VIT_OK) {
        printf("FAIL %s: %s\n", path, vit_last_error());
        failed++;
        return;
    }
    vit_model_input_shape(&m, 2, 1, 1, &ndim, shape);
    vit_arena_init_alloc(&a, 1 << 16);
    vit_tensor_init(&a, &x, ndim, shape);
    n = vit_tensor_numel(&x);
    for (i = 0; i < n; i++) x.data[i] = (float)sin(0.7 * (double)i) * 1.5f;
    memset(&rv, 0, sizeof rv);
    tok = (vit_tensor *)calloc((size_t)m.cfg.depth + 1, sizeof(vit_tensor));
    gt = (vit_tensor *)calloc((size_t)m.cfg.depth + 1, sizeof(vit_tensor));
    {
        int32_t ss[2];
        ss[0] = shape[0];
        ss[1] = m.cfg.num_classes ? m.cfg.num_classes : m.cfg.dim;
        vit_tensor_init(&a, &seed, 2, ss);
        for (k = 0; k < ss[0] * ss[1]; k++) seed.data[k] = (k % ss[1]) == cls ? 1.0f : 0.0f;
    }
    rv.seed = &seed;
    rv.grad_input = &gin;
    rv.tokens = tok;
    rv.grad_tokens = gt;
    if (vit_model_reverse_memory(&m, &x, &rv, &bytes) != VIT_OK || vit_model_memory(&m, &x, NULL, &fbytes) != VIT_OK) {
        printf("FAIL %s: %s\n", path, vit_last_error());
        failed++;
    } else {
        vit_arena act;
        printf("  %s: reverse pass %zu bytes, forward %zu\n", path, bytes, fbytes);
        vit_arena_init_alloc(&act, bytes);
        if (vit_model_reverse(&m, &act, &x, &rv) != VIT_OK) {
            printf("FAIL %s reverse: %s\n", path, vit_last_error());
            failed++;
        } else {
            vit_arena fa;
            float *g = (float *)malloc(n * sizeof(float)), *g1 = (float *)malloc(n * sizeof(float));
            double worst = 0.0, gmax = 0.0;
            size_t step = n / 17 + 1;
            memcpy(g, gin.data, n * sizeof(float));
            vit_arena_init_alloc(&fa, fbytes);
            snprintf(label, sizeof label, "%s: the reverse pass's out equals vit_model_forward's", path);
            expect(vit_model_forward(&m, &fa, &x, NULL, &y) == VIT_OK &&
                       check_close(label, rv.out.data, y.data, vit_tensor_numel(&y), 1e-6, 1e-5),
                   label);
            for (i = 0; i < n; i++) gmax = fabs(g[i]) > gmax ? fabs(g[i]) : gmax;
            for (i = 0; i < n; i += step) {
                float x0 = x.data[i];
                double f1 = 0.0, f2 = 0.0, h = 1e-2;
                x.data[i] = x0 + (float)h;
                vit_arena_reset(&fa);
                vit_model_forward(&m, &fa, &x, NULL, &y);
                for (k = 0; k < (int32_t)vit_tensor_numel(&y); k++) f1 += (double)y.data[k] * seed.data[k];
                x.data[i] = x0 - (float)h;
                vit_arena_reset(&fa);
                vit_model_forward(&m, &fa, &x, NULL, &y);
                for (k = 0; k < (int32_t)vit_tensor_numel(&y); k++) f2 += (double)y.data[k] * seed.data[k];
                x.data[i] = x0;
                if (fabs((f1 - f2) / (2 * h) - g[i]) > worst) worst = fabs((f1 - f2) / (2 * h) - g[i]);
            }
            snprintf(label, sizeof label, "%s: grad_input equals central differences (worst %.3g of %.3g)", path,
                     worst, gmax);
            expect(worst <= 2e-2 * (gmax > 1e-3 ? gmax : 1e-3), label);

            /* 1 and 3 threads, same bits (the arena sized at the default count: with more threads the
               attention takes the scratch slots that fit) */
            vit_set_threads(1);
            vit_arena_reset(&act);
            k = vit_model_reverse(&m, &act, &x, &rv) == VIT_OK;
            memcpy(g1, gin.data, n * sizeof(float));
            memset(gin.data, 0, n * sizeof(float));
            vit_set_threads(3);
            vit_arena_reset(&act);
            k = k && vit_model_reverse(&m, &act, &x, &rv) == VIT_OK;
            vit_set_threads(0);
            snprintf(label, sizeof label, "%s: the reverse pass at 1 and 3 threads, same bits", path);
            if (!k) printf("  %s\n", vit_last_error());
            expect(k && memcmp(g1, gin.data, n * sizeof(float)) == 0, label);

            /* the same bytes from memory: dense weights row-major, not packed as the file's are */
            {
                FILE *f = fopen(path, "rb");
                long fsize = 0;
                unsigned char *fb = NULL;
                vit_model mm;
                int same = 0;
                if (f && fseek(f, 0, SEEK_END) == 0 && (fsize = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
                    (fb = (unsigned char *)malloc((size_t)fsize)) && fread(fb, 1, (size_t)fsize, f) == (size_t)fsize &&
                    vit_model_load_memory(&mm, fb, (size_t)fsize) == VIT_OK) {
                    vit_arena_reset(&act);
                    same = vit_model_reverse(&mm, &act, &x, &rv) == VIT_OK &&
                           memcmp(g1, gin.data, n * sizeof(float)) == 0 &&
                           (m.blocks[0].mlp.fc1_w.pack != NULL) == (vit__panel_rows(VIT_DTYPE_F32, 8) != 0) &&
                           mm.blocks[0].mlp.fc1_w.pack == NULL;
                    vit_model_free(&mm);
                }
                if (f) fclose(f);
                free(fb);
                snprintf(label, sizeof label, "%s: the reverse pass, file (packed) and memory loads: same bits", path);
                expect(same, label);
            }
            vit_arena_free(&fa);
            free(g); free(g1);
        }
        vit_arena_free(&act);
    }
    free(tok); free(gt);
    vit_arena_free(&a);
    vit_model_free(&m);
}

/* meta.txt's value of key (a line "key value"), into val; 0 if absent. */
static int meta_get(const char *dir, const char *key, char *val, size_t size) {
    char path[1400], line[1024];
    size_t n = strlen(key);
    FILE *f;
    int found = 0;
    snprintf(path, sizeof path, "%s/meta.txt", dir);
    if (!(f = fopen(path, "r"))) return 0;
    while (!found && fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ' ') {
            line[strcspn(line, "\n")] = 0;
            snprintf(val, size, "%s", line + n + 1);
            found = 1;
        }
    fclose(f);
    return found;
}

/* got (n floats) against dir/name.npy, within 1e-4 of the reference's largest value (and 1e-4 relative) */
static void expect_npy(vit_arena *a, const char *dir, const char *name, const char *what, const float *got,
                       size_t n) {
    char path[1400], label[1400];
    size_t mark = vit_arena_mark(a);
    vit_tensor want;
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    snprintf(label, sizeof label, "%s: %s", dir, what);
    if (vit_npy_load(a, path, &want) != VIT_OK) {
        printf("FAIL %s: %s\n", label, vit_last_error());
        failed++;
        return;
    }
    if (vit_tensor_numel(&want) != n) {
        printf("FAIL %s: %zu values, the reference has %zu\n", label, n, vit_tensor_numel(&want));
        failed++;
    } else {
        double mx = 0.0;
        size_t i;
        for (i = 0; i < n; i++) mx = fabs(want.data[i]) > mx ? fabs(want.data[i]) : mx;
        expect(check_close(label, got, want.data, n, 1e-4 * mx, 1e-4), label);
    }
    vit_arena_rewind(a, mark);
}

/* One case of tests/fixtures/explain: the reverse pass's every output
   against autograd's, then each method's map against its authors' code. */
static void test_explain_case(const char *dir) {
    static const char *files[] = {"rollout", "grad_rollout", "grad_rollout_orig", "chefer", "legrad",
                                  "gradcam", "saliency",     "gxi",               "ig"};
    static const vit_method methods[] = {VIT_METHOD_ROLLOUT, VIT_METHOD_GRAD_ROLLOUT, VIT_METHOD_GRAD_ROLLOUT,
                                         VIT_METHOD_CHEFER,  VIT_METHOD_LEGRAD,       VIT_METHOD_GRADCAM,
                                         VIT_METHOD_SALIENCY, VIT_METHOD_GXI,         VIT_METHOD_IG};
    char path[1400], val[256], what[128];
    vit_model m;
    vit_arena a, act;
    vit_tensor x, seed, gin, *t;
    vit_reverse rv;
    size_t bytes = 0, per;
    int32_t L, l, k, cls = -1;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (vit_model_load_file(&m, path) != VIT_OK) {
        printf("FAIL %s: %s\n", dir, vit_last_error());
        failed++;
        return;
    }
    L = m.cfg.depth;
    vit_arena_init_alloc(&a, 8u << 20);
    t = (vit_tensor *)calloc((size_t)4 * (L + 1), sizeof(vit_tensor));
    snprintf(path, sizeof path, "%s/in.npy", dir);
    if (vit_npy_load(&a, path, &x) != VIT_OK) goto fail;
    snprintf(path, sizeof path, "%s/seed.npy", dir);
    if (vit_npy_load(&a, path, &seed) != VIT_OK) goto fail;
    if (meta_get(dir, "target", val, sizeof val) && strncmp(val, "class ", 6) == 0) cls = atoi(val + 6);

    /* the reverse pass against autograd */
    memset(&rv, 0, sizeof rv);
    rv.seed = &seed;
    rv.attn = t;
    rv.grad_attn = t + (L + 1);
    rv.tokens = t + 2 * (L + 1);
    rv.grad_tokens = t + 3 * (L + 1);
    rv.grad_input = &gin;
    if (vit_model_reverse_memory(&m, &x, &rv, &bytes) != VIT_OK || vit_arena_init_alloc(&act, bytes) != VIT_OK)
        goto fail;
    if (vit_model_reverse(&m, &act, &x, &rv) != VIT_OK) {
        vit_arena_free(&act);
        goto fail;
    }
    expect_npy(&a, dir, "out", "the reverse pass's forward output", rv.out.data, vit_tensor_numel(&rv.out));
    per = vit_tensor_numel(&rv.attn[0]);
    {
        /* the layers as one array, as the .npy has them */
        size_t pt = vit_tensor_numel(&rv.tokens[0]);
        float *all = (float *)malloc((size_t)(L + 1) * (per > pt ? per : pt) * sizeof(float));
        for (l = 0; l < L; l++) memcpy(all + (size_t)l * per, rv.attn[l].data, per * sizeof(float));
        expect_npy(&a, dir, "attn", "every block's probabilities", all, (size_t)L * per);
        for (l = 0; l < L; l++) memcpy(all + (size_t)l * per, rv.grad_attn[l].data, per * sizeof(float));
        expect_npy(&a, dir, "grad_attn", "d target / d probabilities (autograd)", all, (size_t)L * per);
        for (l = 0; l <= L; l++) memcpy(all + (size_t)l * pt, rv.tokens[l].data, pt * sizeof(float));
        expect_npy(&a, dir, "tokens", "every block's tokens", all, (size_t)(L + 1) * pt);
        for (l = 0; l <= L; l++) memcpy(all + (size_t)l * pt, rv.grad_tokens[l].data, pt * sizeof(float));
        expect_npy(&a, dir, "grad_tokens", "d target / d tokens (autograd)", all, (size_t)(L + 1) * pt);
        free(all);
    }
    expect_npy(&a, dir, "grad_input", "d target / d pixels (autograd)", gin.data, vit_tensor_numel(&gin));
    vit_arena_free(&act);

    /* each method against its authors' code */
    for (k = 0; k < (int32_t)(sizeof methods / sizeof methods[0]); k++) {
        vit_explain_params p;
        int32_t n = vit_explain_size(&m, methods[k]);
        float *map = (float *)malloc((size_t)n * sizeof(float));
        memset(&p, 0, sizeof p);
        p.discard_ratio = meta_get(dir, "discard_ratio", val, sizeof val) ? (float)atof(val) : 0.9f;
        p.ig_steps = meta_get(dir, "ig_steps", val, sizeof val) ? atoi(val) : 16;
        p.paper_pairing = strcmp(files[k], "grad_rollout_orig") == 0;
        if (methods[k] == VIT_METHOD_ROLLOUT || methods[k] == VIT_METHOD_GRAD_ROLLOUT) p.discard_ratio = 0.9f;
        snprintf(what, sizeof what, "%s (%s)", files[k], cls >= 0 ? "class" : "seed vector");
        if (vit_explain_memory(&m, &x, methods[k], &p, &bytes) != VIT_OK ||
            vit_arena_init_alloc(&act, bytes) != VIT_OK ||
            vit_explain(&m, &act, &x, methods[k], cls, cls >= 0 ? NULL : seed.data, &p, map) != VIT_OK) {
            printf("FAIL %s: %s: %s\n", dir, what, vit_last_error());
            failed++;
        } else {
            expect_npy(&a, dir, files[k], what, map, (size_t)n);
            vit_arena_free(&act);
        }
        free(map);
    }
    free(t);
    vit_arena_free(&a);
    vit_model_free(&m);
    return;
fail:
    printf("FAIL %s: %s\n", dir, vit_last_error());
    failed++;
    free(t);
    vit_arena_free(&a);
    vit_model_free(&m);
}

static void test_explain(const char *root) {
    char path[1024], name[256];
    FILE *f;
    snprintf(path, sizeof path, "%.700s/MANIFEST", root);
    if (!(f = fopen(path, "r"))) {
        printf("FAIL %s: cannot open\n", path);
        failed++;
        return;
    }
    while (fscanf(f, "%255s", name) == 1) {
        snprintf(path, sizeof path, "%.700s/%.255s", root, name);
        test_explain_case(path);
    }
    fclose(f);
}

int main(int argc, char **argv) {
    test_matmul_nn();
    test_matmul_nn_packed();
    test_layernorm_back();
    test_act_back();
    test_softmax_back();
    test_attention_back();
    test_patch_conv_back();
    if (argc > 1) {
        char path[1024];
        snprintf(path, sizeof path, "%s/vit_tv.safetensors", argv[1]);
        test_model_fd(path, 1);
        snprintf(path, sizeof path, "%s/vit_tv_rep.safetensors", argv[1]); /* pre_logits: Linear + tanh */
        test_model_fd(path, 2);
        snprintf(path, sizeof path, "%s/explain", argv[1]);
        test_explain(path);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}

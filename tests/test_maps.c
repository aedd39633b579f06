/* Attention maps, rollout, image preprocessing, position-embedding
   interpolation and the PNG writers, against tests/fixtures/maps (made by
   tools/maps_reference.py from torchvision and a numpy rollout).
   Usage: test_maps [FIXTURE_DIR] [OUT_DIR] */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static vit_arena A;
static char dir[512], out_dir[512];


static vit_tensor npy(const char *fmt, ...) {
    char name[256], path[1024];
    vit_tensor t;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    memset(&t, 0, sizeof t);
    if (vit_npy_load(&A, path, &t) != VIT_OK) {
        int32_t one = 64;
        printf("FAIL %s\n", vit_last_error());
        failed++;
        vit_tensor_init(&A, &t, 1, &one); /* zeros, so the comparisons fail cleanly */
        memset(t.data, 0, 64 * sizeof(float));
    }
    return t;
}

/* The raw float32 payload of a .npy of any rank (vit_npy_load stops at
   VIT_MAX_DIMS = 4; the attention fixture is (depth, B, NH, T, T)). */
static float *raw_npy(const char *name, size_t n) {
    char path[1024];
    unsigned char head[10];
    float *p = (float *)vit_arena_alloc(&A, n * sizeof(float));
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "rb");
    if (!p || !f || fread(head, 1, 10, f) != 10 || fseek(f, 10 + (head[8] | head[9] << 8), SEEK_SET) != 0 ||
        fread(p, sizeof(float), n, f) != n) {
        printf("FAIL cannot read %zu floats from %s\n", n, path);
        failed++;
        if (f) fclose(f);
        if (p) memset(p, 0, n * sizeof(float));
        return p;
    }
    fclose(f);
    return p;
}

static void test_maps(void) {
    char path[1024], label[128];
    vit_model m;
    vit_tensor x, y, att[2], want, fx;
    float *att_want;
    vit_forward_opts opts;
    float got[16];
    int l, h, f, d;
    static const char *fnames[3] = {"mean", "max", "min"};
    snprintf(path, sizeof path, "%s/../vit_tv.safetensors", dir);
    if (vit_model_load_file(&m, path) != VIT_OK) { failed++; printf("FAIL %s\n", vit_last_error()); return; }
    snprintf(path, sizeof path, "%s/../vit_tv.in.npy", dir);
    vit_npy_load(&A, path, &x);
    memset(&opts, 0, sizeof opts);
    opts.attn = att;
    expect(vit_model_forward(&m, &A, &x, &opts, &y) == VIT_OK, "forward keeping maps");
    att_want = raw_npy("vit_tv.att.npy", 2 * vit_tensor_numel(&att[0])); /* (depth, B, NH, T, T) */
    for (l = 0; l < 2; l++) {
        snprintf(label, sizeof label, "attention layer %d", l);
        expect(check_close(label, att[l].data, att_want + (size_t)l * vit_tensor_numel(&att[l]), vit_tensor_numel(&att[l]), 0, 1e-5), label);
        for (h = 0; h < 3; h++) {
            fx = npy("cls_head%d_layer%d.npy", h, l);
            vit_map_cls(&att[l], 1, h, VIT_FUSE_MEAN, got);
            snprintf(label, sizeof label, "cls map head %d layer %d", h, l);
            expect(check_close(label, got, fx.data, 16, 1e-6, 1e-5), label);
        }
        for (f = 0; f < 3; f++) {
            fx = npy("cls_%s_layer%d.npy", fnames[f], l);
            vit_map_cls(&att[l], 1, -1, (vit_fusion)f, got);
            snprintf(label, sizeof label, "cls map %s layer %d", fnames[f], l);
            expect(check_close(label, got, fx.data, 16, 1e-6, 1e-5), label);
        }
    }
    for (f = 0; f < 3; f++)
        for (d = 0; d < 2; d++) {
            vit_rollout_params p;
            p.fusion = (vit_fusion)f; p.discard_ratio = d ? 0.9f : 0.0f; p.explain_compat = 0;
            fx = npy("rollout_%s_d%d.npy", fnames[f], d ? 90 : 0);
            expect(vit_map_rollout(&A, att, 2, 1, &p, got) == VIT_OK, "rollout runs");
            snprintf(label, sizeof label, "rollout %s discard %d%%", fnames[f], d ? 90 : 0);
            expect(check_close(label, got, fx.data, 16, 1e-5, 1e-5), label);
            if (f < 2) {
                p.explain_compat = 1;
                fx = npy("rollout_explain_%s_d%d.npy", fnames[f], d ? 90 : 0);
                vit_map_rollout(&A, att, 2, 1, &p, got);
                snprintf(label, sizeof label, "rollout (vit-explain) %s discard %d%%", fnames[f], d ? 90 : 0);
                expect(check_close(label, got, fx.data, 16, 1e-5, 1e-5), label);
            }
        }
    {
        vit_rollout_params bad = {VIT_FUSE_MEAN, 1.5f, 0};
        expect(vit_map_rollout(&A, att, 2, 1, &bad, got) == VIT_ERR_ARG, "rollout refuses discard_ratio 1.5");
        expect(vit_map_cls(&att[0], 7, 0, VIT_FUSE_MEAN, got) == VIT_ERR_ARG, "cls map refuses batch item 7");
    }
    /* Position embedding resized for 48x48 inputs, as torchvision's interpolate_embeddings. */
    expect(vit_model_set_image_size(&m, 48) == VIT_OK, "set_image_size 48");
    fx = npy("pos48.npy");
    expect(check_close("pos48", m.patch_w.pos.data, fx.data, 37 * 48, 1e-6, 1e-5), "pos48");
    x = npy("pos48.in.npy");
    want = npy("pos48.out.npy");
    expect(vit_model_forward(&m, &A, &x, NULL, &y) == VIT_OK && check_close("pos48 logits", y.data, want.data, 20, 0, 1e-4), "pos48 logits");
    expect(vit_model_set_image_size(&m, 50) == VIT_ERR_ARG, "set_image_size refuses 50 (patch 8)");
    expect(vit_model_set_image_size_ex(&m, 48, (vit_pos_resize)7) == VIT_ERR_ARG, "set_image_size_ex refuses an unknown mode");
    vit_model_free(&m);
}

/* The attention tools/maps_reference.py's grid_attention makes for a g x g
   grid, (2 layers, 3 heads, T, T) with T = g*g + 1, from the same integers:
   a shuffle of the T*T positions per layer, row 0 moved to the top ranks,
   then each weight its position's rank times 200, give or take 60, times
   2^-22 (exact). */
static void grid_attention(int32_t g, float *att) {
    int32_t T = g * g + 1, n = T * T, l, h, i, j, t;
    int32_t *perm = (int32_t *)malloc((size_t)n * sizeof *perm);
    uint32_t s = (uint32_t)g;
    for (l = 0; l < 2; l++) {
        for (i = 0; i < n; i++) perm[i] = i;
        for (i = n - 1; i > 0; i--) {
            s = s * 1664525u + 1013904223u;
            j = (int32_t)(s % (uint32_t)(i + 1));
            t = perm[i]; perm[i] = perm[j]; perm[j] = t;
        }
        for (h = 0; h < 3; h++)
            for (i = 0; i < n; i++) {
                int32_t rank = perm[i] + (i < T ? n : 0);
                s = s * 1664525u + 1013904223u;
                att[((size_t)l * 3 + h) * n + i] = (float)(200 * (rank + 1) + (int32_t)(s % 121u) - 60) * (1.0f / 4194304.0f);
            }
    }
    free(perm);
}

/* The number of weights rollout drops is vit-explain's int(T*T * ratio) in
   double at ratios 0.39, 0.53, 0.78 (float arithmetic, or the float ratio's
   exact double, drops one fewer on some of these grids) and 0.9, for every
   fusion, against vit-explain's rollout() on the same attention. */
static void test_rollout_grids(void) {
    static const int32_t grids[] = {3, 7, 14};
    static const float ratios[] = {0.0f, 0.39f, 0.53f, 0.78f, 0.9f};
    static const char *fnames[3] = {"mean", "max", "min"};
    char label[128];
    int gi, f, r;
    for (gi = 0; gi < 3; gi++) {
        int32_t g = grids[gi], T = g * g + 1;
        size_t per = (size_t)3 * T * T;
        float *buf = (float *)malloc(2 * per * sizeof(float)), got[196];
        vit_tensor att[2], want = npy("rollout_grid%d.npy", (int)g);
        grid_attention(g, buf);
        if (g == 3) {
            vit_tensor fx = npy("rollout_grid3.att.npy");
            expect(vit_tensor_numel(&fx) == 2 * per && !memcmp(fx.data, buf, 2 * per * sizeof(float)),
                   "grid_attention makes maps_reference.py's 3x3 attention, bit for bit");
        }
        for (f = 0; f < 2; f++) {
            memset(&att[f], 0, sizeof att[f]);
            att[f].data = buf + f * per;
            att[f].ndim = 4; att[f].shape[0] = 1; att[f].shape[1] = 3; att[f].shape[2] = T; att[f].shape[3] = T;
        }
        for (f = 0; f < 3; f++)
            for (r = 0; r < 5; r++) {
                vit_rollout_params p;
                const float *fx = vit_tensor_numel(&want) == (size_t)15 * g * g ? want.data + ((size_t)f * 5 + r) * g * g : NULL;
                p.fusion = (vit_fusion)f; p.discard_ratio = ratios[r]; p.explain_compat = 1;
                snprintf(label, sizeof label, "rollout (vit-explain) %dx%d %s discard %g", (int)g, (int)g, fnames[f], (double)ratios[r]);
                expect(vit_map_rollout(&A, att, 2, 0, &p, got) == VIT_OK && fx && check_close(label, got, fx, (size_t)g * g, 1e-5, 1e-5),
                       label);
            }
        free(buf);
    }
}

/* The same 4 x 4 grid grown to 6 x 6 and shrunk to 3 x 3 as timm
   (antialiased bicubic) and transformers (align_corners=False) resize
   theirs, and AUTO following the file's naming. */
static void test_pos_modes(void) {
    static const struct { vit_pos_resize how; const char *name, *naming; } modes[] = {
        {VIT_POS_TIMM, "timm", "timm"}, {VIT_POS_HF, "hf", "transformers"}};
    static const int sizes[] = {48, 24};
    char path[1024], label[128];
    int i, k, a;
    for (i = 0; i < 2; i++)
        for (k = 0; k < 2; k++)
            for (a = 0; a < 2; a++) {
                vit_model m;
                vit_tensor fx;
                int G = sizes[k] / 8;
                snprintf(path, sizeof path, "%s/../vit_tv.safetensors", dir);
                if (vit_model_load_file(&m, path) != VIT_OK) { failed++; printf("FAIL %s\n", vit_last_error()); return; }
                if (a) strcpy(m.naming, modes[i].naming); /* as if loaded from that naming */
                fx = npy("pos%d_%s.npy", sizes[k], modes[i].name);
                snprintf(label, sizeof label, "pos%d %s%s", sizes[k], modes[i].name, a ? " (AUTO by naming)" : "");
                expect(vit_model_set_image_size_ex(&m, sizes[k], a ? VIT_POS_AUTO : modes[i].how) == VIT_OK &&
                           m.patch_w.pos.shape[0] == 1 + G * G &&
                           check_close(label, m.patch_w.pos.data, fx.data, (size_t)(1 + G * G) * 48, 1e-6, 1e-5), label);
                vit_model_free(&m);
            }
}

/* torchvision's ViT transform; fixtures are 8-bit PNGs of the un-normalised crop. */
static void test_preprocess(void) {
    static const struct { const char *src, *ref; float tol; } cases[] = {
        {"/usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg", "prep_china.png", 2.0f / 255},
        {"/usr/lib/python3/dist-packages/sklearn/datasets/images/flower.jpg", "prep_flower.png", 2.0f / 255},
        {"gray.png", "prep_gray.png", 1.0f / 255}, {"rgba.png", "prep_rgba.png", 1.0f / 255}, {"tiny.png", "prep_tiny.png", 1.0f / 255}};
    vit_preprocess pix;
    int i, c;
    size_t k, over;
    memset(&pix, 0, sizeof pix);
    pix.std[0] = pix.std[1] = pix.std[2] = 1.0f; /* mean 0, std 1: stay in pixel units */
    for (i = 0; i < 5; i++) {
        char path[1024], label[128];
        vit_tensor img, got, want;
        size_t mark = vit_arena_mark(&A);
        if (cases[i].src[0] == '/') snprintf(path, sizeof path, "%s", cases[i].src);
        else snprintf(path, sizeof path, "%s/%s", dir, cases[i].src);
        if (vit_image_load(&A, path, 3, &img) != VIT_OK) {
            printf("skip %s: %s (install python3-sklearn for the photos)\n", cases[i].ref, vit_last_error());
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", dir, cases[i].ref);
        expect(vit_image_load(&A, path, 3, &want) == VIT_OK, cases[i].ref);
        {
            /* A counting arena sizes the call without touching memory: an
               arena of exactly that size is enough, one line less is not. */
            vit_arena count, exact;
            vit_tensor t;
            vit_arena_init(&count, NULL, ~(size_t)0);
            expect(vit_image_preprocess(&count, &img, &pix, &t) == VIT_OK, "preprocess counts");
            expect(vit_arena_init_alloc(&exact, count.peak) == VIT_OK && vit_image_preprocess(&exact, &img, &pix, &t) == VIT_OK,
                   "preprocess fits the counted size");
            vit_arena_free(&exact);
            expect(vit_arena_init_alloc(&exact, count.peak - VIT_ALIGN) == VIT_OK &&
                       vit_image_preprocess(&exact, &img, &pix, &t) == VIT_ERR_OOM,
                   "preprocess refuses a smaller arena");
            vit_arena_free(&exact);
        }
        expect(vit_image_preprocess(&A, &img, &pix, &got) == VIT_OK, "preprocess runs");
        snprintf(label, sizeof label, "preprocess %s", cases[i].ref);
        expect(check_close(label, got.data, want.data, 3 * 224 * 224, cases[i].tol + 1e-6, 0), label);
        /* Past 1/255 only where JPEG decoders differ (stb_image vs PIL's
           libjpeg: the PNG cases hold 1/255 everywhere); per channel the
           mean difference stays far below one level. */
        for (c = 0; c < 3; c++) {
            double sum = 0.0;
            for (k = 0, over = 0; k < 224 * 224; k++) {
                float d = fabsf(got.data[(size_t)c * 224 * 224 + k] - want.data[(size_t)c * 224 * 224 + k]);
                sum += d;
                over += d > 1.0f / 255 + 1e-6f;
            }
            snprintf(label, sizeof label, "%s channel %d: mean |d| %.3f/255, %zu of %d beyond 1/255", cases[i].ref, c, sum / (224 * 224) * 255, over, 224 * 224);
            expect(sum / (224 * 224) <= 0.5 / 255 && over * 100 <= 224 * 224, label);
            printf("  %s\n", label);
        }
        vit_arena_rewind(&A, mark);
    }
}

static void test_png(void) {
    char path[1024];
    float map[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    unsigned char lo[3], hi[3];
    vit_tensor img, back;
    int32_t shape[3] = {3, 30, 40};
    size_t i;
    vit_tensor_init(&A, &img, 3, shape);
    for (i = 0; i < vit_tensor_numel(&img); i++) img.data[i] = (float)(i % 40) / 40.0f;
    snprintf(path, sizeof path, "%s/test_heat.png", out_dir);
    expect(vit_png_heatmap(path, map, 3, 4, 10) == VIT_OK, "heatmap written");
    expect(vit_image_load(&A, path, 3, &back) == VIT_OK && back.shape[1] == 30 && back.shape[2] == 40, "heatmap size");
    vit_colormap(0.0f, lo);
    vit_colormap(1.0f, hi);
    /* The corners hold the map's min and max: viridis' ends. */
    expect(back.data[0] * 255 + 0.5f >= lo[0] - 1 && back.data[0] * 255 - 0.5f <= lo[0] + 1, "heatmap min is viridis' dark end");
    expect(fabsf(back.data[(size_t)30 * 40 - 1] * 255 - hi[0]) <= 1.0f, "heatmap max is viridis' bright end");
    snprintf(path, sizeof path, "%s/test_overlay.png", out_dir);
    expect(vit_png_overlay(path, &img, map, 3, 4, 0.5f) == VIT_OK && vit_image_load(&A, path, 3, &back) == VIT_OK && back.shape[2] == 40,
           "overlay written at the image's size");
    snprintf(path, sizeof path, "%s/test_grid.png", out_dir);
    expect(vit_png_grid(path, &img, map, 3, 2, 2, 2, 16, 0.5f) == VIT_OK && vit_image_load(&A, path, 3, &back) == VIT_OK &&
               back.shape[1] == 34 && back.shape[2] == 34,
           "grid of 3 cells in 2 columns");
    expect(vit_png_overlay("/nonexistent/dir/x.png", &img, map, 3, 4, 0.5f) == VIT_ERR_IO, "unwritable PNG path");
    expect(vit_image_load(&A, "/nonexistent.png", 3, &back) == VIT_ERR_IO, "missing image");
    snprintf(path, sizeof path, "%s/../vit_tv.in.npy", dir);
    expect(vit_image_load(&A, path, 3, &back) == VIT_ERR_FORMAT, "not an image");
    {
        /* A 16-bit PGM (max value 1000, # comment in the header) is refused
           either way: stb_image 2.27 would read its samples byte-swapped,
           and overrun its buffer converting grey to RGB. An 8-bit one with
           the same header decodes. */
        static const unsigned char pgm16[] = "P5\n# c\n2 1\n1000\n\x12\x34\xab\xcd", pgm8[] = "P5\n# c\n2 1\n255\n\x12\xab";
        expect(vit_image_load_memory(&A, pgm16, sizeof pgm16 - 1, 1, &back) == VIT_ERR_UNSUPPORTED && strstr(vit_last_error(), "16-bit PNM"),
               "16-bit PGM as grey refused");
        expect(vit_image_load_memory(&A, pgm16, sizeof pgm16 - 1, 3, &back) == VIT_ERR_UNSUPPORTED, "16-bit PGM as RGB refused");
        static const unsigned char pgm_big[] = "P5\n5555555555555 1\n255\n\x12\xab", pgm_max[] = "P5\n2147483647 1\n255\n\x12\xab";
        /* A header number past INT_MAX (stb_image's int parser would
           overflow) is refused; INT_MAX itself reaches stb_image, which
           refuses the size. */
        expect(vit_image_load_memory(&A, pgm_big, sizeof pgm_big - 1, 1, &back) == VIT_ERR_FORMAT && strstr(vit_last_error(), "PNM header"),
               "PNM header number past INT_MAX refused");
        expect(vit_image_load_memory(&A, pgm_max, sizeof pgm_max - 1, 1, &back) == VIT_ERR_FORMAT && !strstr(vit_last_error(), "PNM header"),
               "PNM width INT_MAX left to stb_image");
        expect(vit_image_load_memory(&A, pgm8, sizeof pgm8 - 1, 3, &back) == VIT_OK && back.shape[2] == 2 &&
                   fabsf(back.data[1] * 255.0f - 0xab) < 1e-3f,
               "8-bit PGM decodes");
    }
    {
        /* A 2x1 grey PNG whose first IDAT chunk is empty is refused
           (stb_image 2.27 would offset a NULL buffer; fuzz/regressions/
           png-empty-first-idat); an empty IDAT after the data decodes. */
        static const unsigned char empty_first[] =
            "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x02\x00\x00\x00\x01\x08\x00\x00\x00\x00\xd1"
            "\x49\x20\x56\x00\x00\x00\x00\x49\x44\x41\x54\x35\xaf\x06\x1e\x00\x00\x00\x0b\x49\x44\x41\x54\x78\x9c\x63\x10\x5a\x0d\x00"
            "\x00\xd2\x00\xbe\x73\xe5\xb3\x2b\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";
        static const unsigned char empty_last[] =
            "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x02\x00\x00\x00\x01\x08\x00\x00\x00\x00\xd1"
            "\x49\x20\x56\x00\x00\x00\x0b\x49\x44\x41\x54\x78\x9c\x63\x10\x5a\x0d\x00\x00\xd2\x00\xbe\x73\xe5\xb3\x2b\x00\x00\x00\x00"
            "\x49\x44\x41\x54\x35\xaf\x06\x1e\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";
        expect(vit_image_load_memory(&A, empty_first, sizeof empty_first - 1, 3, &back) == VIT_ERR_UNSUPPORTED &&
                   strstr(vit_last_error(), "first IDAT chunk is empty"),
               "PNG with an empty first IDAT refused");
        expect(vit_image_load_memory(&A, empty_last, sizeof empty_last - 1, 1, &back) == VIT_OK && back.shape[2] == 2 &&
                   fabsf(back.data[1] * 255.0f - 0xab) < 1e-3f,
               "PNG with an empty IDAT after the data decodes");
    }
}

int main(int argc, char **argv) {
    snprintf(dir, sizeof dir, "%s", argc > 1 ? argv[1] : "tests/fixtures/maps");
    snprintf(out_dir, sizeof out_dir, "%s", argc > 2 ? argv[2] : "build");
    if (vit_arena_init_alloc(&A, 128u << 20) != VIT_OK) return 1;
    test_maps();
    test_rollout_grids();
    test_pos_modes();
    test_preprocess();
    test_png();
    vit_arena_free(&A);
    printf("test_maps: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

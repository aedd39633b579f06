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
        expect(check_close(label, att[l].data, att_want + (size_t)l * vit_tensor_numel(&att[l]),
                           vit_tensor_numel(&att[l]), 0, 1e-5),
               label);
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
    expect(vit_model_forward(&m, &A, &x, NULL, &y) == VIT_OK &&
               check_close("pos48 logits", y.data, want.data, 20, 0, 1e-4),
           "pos48 logits");
    expect(vit_model_set_image_size(&m, 50) == VIT_ERR_ARG, "set_image_size refuses 50 (patch 8)");
    expect(vit_model_set_image_size_ex(&m, 48, (vit_pos_resize)7) == VIT_ERR_ARG,
           "set_image_size_ex refuses an unknown mode");
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
                att[((size_t)l * 3 + h) * n + i] =
                    (float)(200 * (rank + 1) + (int32_t)(s % 121u) - 60) * (1.0f / 4194304.0f);
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
                const float *fx =
                    vit_tensor_numel(&want) == (size_t)15 * g * g ? want.data + ((size_t)f * 5 + r) * g * g : NULL;
                p.fusion = (vit_fusion)f; p.discard_ratio = ratios[r]; p.explain_compat = 1;
                snprintf(label, sizeof label, "rollout (vit-explain) %dx%d %s discard %g", (int)g, (int)g, fnames[f],
                         (double)ratios[r]);
                expect(vit_map_rollout(&A, att, 2, 0, &p, got) == VIT_OK && fx &&
                           check_close(label, got, fx, (size_t)g * g, 1e-5, 1e-5),
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
                if (vit_model_load_file(&m, path) != VIT_OK) {
                    failed++;
                    printf("FAIL %s\n", vit_last_error());
                    return;
                }
                if (a) strcpy(m.naming, modes[i].naming); /* as if loaded from that naming */
                fx = npy("pos%d_%s.npy", sizes[k], modes[i].name);
                snprintf(label, sizeof label, "pos%d %s%s", sizes[k], modes[i].name, a ? " (AUTO by naming)" : "");
                expect(vit_model_set_image_size_ex(&m, sizes[k], a ? VIT_POS_AUTO : modes[i].how) == VIT_OK &&
                           m.patch_w.pos.shape[0] == 1 + G * G &&
                           check_close(label, m.patch_w.pos.data, fx.data, (size_t)(1 + G * G) * 48, 1e-6, 1e-5),
                       label);
                vit_model_free(&m);
            }
}

/* torchvision's ViT transform; fixtures are 8-bit PNGs of the un-normalised crop. */
static void test_preprocess(void) {
    static const struct { const char *src, *ref; float tol;
    } cases[] = {{"/usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg", "prep_china.png", 2.0f / 255},
                 {"/usr/lib/python3/dist-packages/sklearn/datasets/images/flower.jpg", "prep_flower.png", 2.0f / 255},
                 {"gray.png", "prep_gray.png", 1.0f / 255},
                 {"rgba.png", "prep_rgba.png", 1.0f / 255},
                 {"tiny.png", "prep_tiny.png", 1.0f / 255}};
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
            expect(vit_arena_init_alloc(&exact, count.peak) == VIT_OK &&
                       vit_image_preprocess(&exact, &img, &pix, &t) == VIT_OK,
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
            snprintf(label, sizeof label, "%s channel %d: mean |d| %.3f/255, %zu of %d beyond 1/255", cases[i].ref, c,
                     sum / (224 * 224) * 255, over, 224 * 224);
            expect(sum / (224 * 224) <= 0.5 / 255 && over * 100 <= 224 * 224, label);
            printf("  %s\n", label);
        }
        vit_arena_rewind(&A, mark);
    }
}

/* Reads dir/images/name whole into a static buffer; the size, 0 on failure. */
static unsigned char file_buf[1 << 16];
static size_t image_file(const char *name) {
    char path[1024];
    size_t n = 0;
    FILE *f;
    snprintf(path, sizeof path, "%s/images/%s", dir, name);
    if ((f = fopen(path, "rb"))) {
        n = fread(file_buf, 1, sizeof file_buf, f);
        fclose(f);
    }
    if (!n) { printf("FAIL cannot read %s\n", path); failed++; }
    return n;
}

/* Decodes bytes b (n) as an image of `channels`; under MemorySanitizer
   every decoded value must be initialised. */
static vit_result decode(const unsigned char *b, size_t n, int channels, vit_tensor *t) {
    vit_result r = vit_image_load_memory(&A, b, n, channels, t);
    if (r == VIT_OK) CHECK_INITIALISED(t->data, vit_tensor_numel(t) * sizeof(float));
    return r;
}

static vit_tensor decode_file(const char *name, int channels) {
    vit_tensor t;
    size_t n = image_file(name);
    memset(&t, 0, sizeof t);
    if (n && decode(file_buf, n, channels, &t) != VIT_OK) { printf("FAIL %s: %s\n", name, vit_last_error()); failed++; }
    return t;
}

static int same_pixels(const vit_tensor *a, const vit_tensor *b) {
    return a->data && b->data && a->ndim == 3 && b->ndim == 3 && !memcmp(a->shape, b->shape, sizeof a->shape) &&
           !memcmp(a->data, b->data, vit_tensor_numel(a) * sizeof(float));
}

/* Files from untrusted hands (tests/fixtures/maps/images, made by
   tools/image_fixtures.py): what PIL refuses is refused with the problem
   named, what stb_image 2.27 would decode from zeros or uninitialised
   memory is refused, and every declared size must fit in the file. */
static void test_untrusted(void) {
    static const struct { const char *name, *what; int channels; } formats[] = {
        {"src.png", "truncated PNG", 3}, {"src.bmp", "truncated BMP", 3}, {"src.ppm", "truncated PPM", 3},
        {"src.pgm", "truncated PGM", 1}, {"base.jpg", "truncated JPEG", 3}, {"prog.jpg", "truncated JPEG", 3}};
    static const struct { const char *name, *what;
    } damaged[] = {{"prog_undef_dc.jpg", "DC Huffman table 3, which no DHT"},
                   {"prog_undef_ac.jpg", "AC Huffman table 2, which no DHT"},
                   {"base_undef_ac.jpg", "AC Huffman table 3, which no DHT"},
                   {"base_undef_dqt.jpg", "quantisation table 3, which no DQT"},
                   {"prog_refine_first.jpg", "scan 1 comes before the DC scan of component 1"}};
    static unsigned char copy[1 << 16];
    char label[160];
    vit_tensor png, t, want;
    size_t n, cut, bad, mark = vit_arena_mark(&A);
    int i, k;
    double d;
    /* The lossless formats decode to the same pixels, the JPEGs close to them. */
    png = decode_file("src.png", 3);
    expect(png.data && png.shape[1] == 12 && png.shape[2] == 16, "src.png decodes (16x12)");
    t = decode_file("src.bmp", 3);
    expect(same_pixels(&png, &t), "src.bmp decodes to src.png's pixels");
    t = decode_file("src.ppm", 3);
    expect(same_pixels(&png, &t), "src.ppm decodes to src.png's pixels");
    t = decode_file("src.pgm", 1);
    expect(t.data && t.shape[0] == 1 && t.shape[2] == 16, "src.pgm decodes");
    for (i = 0; i < 2; i++) {
        t = decode_file(i ? "prog.jpg" : "base.jpg", 3);
        for (d = 0.0, n = 0; t.data && png.data && n < 3 * 12 * 16; n++) d += fabsf(t.data[n] - png.data[n]);
        snprintf(label, sizeof label, "%s decodes near src.png (mean |d| %.2f/255)", i ? "prog.jpg" : "base.jpg",
                 d / (3 * 12 * 16) * 255);
        expect(t.data && d / (3 * 12 * 16) < 4.0 / 255, label);
    }
    /* Every cut is refused; the cut to 90% names the problem. */
    for (i = 0; i < (int)(sizeof formats / sizeof formats[0]); i++) {
        n = image_file(formats[i].name);
        memcpy(copy, file_buf, n);
        for (cut = 0, bad = 0; cut < n; cut++)
            if (vit_image_load_memory(&A, copy, cut, formats[i].channels, &t) == VIT_OK) bad++;
        snprintf(label, sizeof label, "%s: each of its %zu cuts refused (%zu decoded)", formats[i].name, n, bad);
        expect(n && !bad, label);
        snprintf(label, sizeof label, "%s cut to 90%% refused as '%s'", formats[i].name, formats[i].what);
        expect(vit_image_load_memory(&A, copy, n * 9 / 10, formats[i].channels, &t) == VIT_ERR_FORMAT &&
                   strstr(vit_last_error(), formats[i].what),
               label);
    }
    /* Formats left out, whole or cut. */
    for (k = 0; k < 2; k++) {
        n = image_file("src.gif");
        expect(vit_image_load_memory(&A, file_buf, k ? n * 9 / 10 : n, 3, &t) == VIT_ERR_UNSUPPORTED &&
                   strstr(vit_last_error(), "a GIF; vit.h reads PNG, JPEG"),
               k ? "GIF cut to 90% refused" : "GIF refused");
        n = image_file("src.tga");
        expect(vit_image_load_memory(&A, file_buf, k ? n * 9 / 10 : n, 3, &t) == VIT_ERR_FORMAT &&
                   strstr(vit_last_error(), "BMP or binary PPM/PGM"),
               k ? "TGA cut to 90% refused" : "TGA refused");
    }
    /* A scan or component naming a table no segment defines. */
    for (i = 0; i < (int)(sizeof damaged / sizeof damaged[0]); i++) {
        n = image_file(damaged[i].name);
        snprintf(label, sizeof label, "%s refused ('%s')", damaged[i].name, damaged[i].what);
        expect(vit_image_load_memory(&A, file_buf, n, 3, &t) == VIT_ERR_FORMAT &&
                   strstr(vit_last_error(), damaged[i].what),
               label);
    }
    /* A palette shorter than its indices: grey k past the end, as PIL; a
       PPM with max value 100 scaled as PIL scales it. */
    t = decode_file("pal_short.png", 3);
    want = decode_file("pal_short.want.ppm", 3);
    expect(same_pixels(&t, &want), "short-palette PNG decodes as PIL does");
    t = decode_file("max100.ppm", 3);
    want = decode_file("max100.want.ppm", 3);
    expect(same_pixels(&t, &want), "PPM with max value 100 decodes as PIL does");
    /* Sizes that do not fit in the file. */
    {
        uint32_t crc[256], c;
        n = image_file("src.png");
        memcpy(copy, file_buf, n);
        memcpy(copy + 16, "\x01\x00\x00\x00\x01\x00\x00\x00", 8); /* IHDR: 16777216 x 16777216 */
        vit__crc_table(crc);
        c = vit__crc32(crc, copy + 12, 17);
        copy[29] = (unsigned char)(c >> 24);
        copy[30] = (unsigned char)(c >> 16);
        copy[31] = (unsigned char)(c >> 8);
        copy[32] = (unsigned char)c;
        expect(vit_image_load_memory(&A, copy, n, 3, &t) == VIT_ERR_FORMAT &&
                   strstr(vit_last_error(), "cannot hold 16777216x16777216 pixels"),
               "PNG declaring 2^24 x 2^24 pixels in 86 bytes refused");
        copy[40] ^= 1;
        expect(vit_image_load_memory(&A, copy, n, 3, &t) == VIT_ERR_FORMAT && strstr(vit_last_error(), "fails its CRC"),
               "PNG with a bad CRC refused");
        n = image_file("base.jpg");
        memcpy(copy, file_buf, n);
        for (k = 2; k + 9 < (int)n && !(copy[k] == 0xff && copy[k + 1] == 0xc0); k++) {}
        memcpy(copy + k + 5, "\xff\xff\xff\xff", 4); /* SOF: 65535 x 65535 */
        expect(vit_image_load_memory(&A, copy, n, 3, &t) == VIT_ERR_FORMAT &&
                   strstr(vit_last_error(), "too few for its"),
               "JPEG declaring 65535x65535 pixels in 684 bytes refused");
        n = image_file("src.bmp");
        memcpy(copy, file_buf, n);
        memcpy(copy + 18, "\xa0\x86\x01\x00", 4); /* width 100000 */
        expect(vit_image_load_memory(&A, copy, n, 3, &t) == VIT_ERR_FORMAT &&
                   strstr(vit_last_error(), "truncated BMP: 100000x12 pixels need"),
               "BMP declaring 100000x12 pixels in 630 bytes refused");
        memcpy(copy + 18, "\x10\x00\x00\x00\x00\x00\x00\x80", 8); /* height INT32_MIN */
        expect(vit_image_load_memory(&A, copy, n, 3, &t) == VIT_ERR_UNSUPPORTED &&
                   strstr(vit_last_error(), "16777216 a side"),
               "BMP of height INT32_MIN refused");
        expect(vit_image_load_memory(&A, "P6 65535 65535 255\n\x01\x02\x03", 22, 3, &t) == VIT_ERR_FORMAT &&
                   strstr(vit_last_error(), "truncated PPM"),
               "PPM declaring 65535x65535 pixels in 22 bytes refused");
    }
    {
        /* An 8-bit BMP of 2x1 pixels with a 2-colour palette (black,
           white): index 1 is white, index 7 lies past the palette. */
        static unsigned char bmp[70] = {'B', 'M', 70, 0, 0, 0, 0, 0, 0, 0, 62, 0, 0, 0, 40,
                                        0,   0,   0,  2, 0, 0, 0, 1, 0, 0, 0,  1, 0, 8, 0};
        bmp[58] = bmp[59] = bmp[60] = 255; /* colour 1: white */
        bmp[63] = 1;
        expect(decode(bmp, sizeof bmp - 4, 3, &t) == VIT_OK && t.data[0] == 0.0f && t.data[1] == 1.0f,
               "8-bit BMP with a 2-colour palette decodes");
        bmp[63] = 7;
        expect(decode(bmp, sizeof bmp - 4, 3, &t) == VIT_ERR_FORMAT &&
                   strstr(vit_last_error(), "pixel (1, 0) is colour 7 of a 2-colour palette"),
               "BMP index past its palette refused");
    }
    expect(decode((const unsigned char *)"P5 2 1 255\n", 11, 7, &t) == VIT_ERR_ARG &&
               strstr(vit_last_error(), "7 channels asked for"),
           "channels 7 refused as the caller's mistake");
    {
        /* Extreme sizes: a 9000000x1 PNG of 8.8 KB decodes, and its
           preprocessing is refused with the real numbers, as is a resize
           of 2000000000 (no int overflow, no "-2147483648x256"). */
        vit_preprocess pp;
        vit_tensor x;
        memset(&pp, 0, sizeof pp);
        t = decode_file("wide.png", 1);
        expect(t.data && t.shape[1] == 1 && t.shape[2] == 9000000, "9000000x1 PNG decodes");
        expect(t.data && vit_image_preprocess(&A, &t, NULL, &x) == VIT_ERR_SHAPE &&
                   strstr(vit_last_error(),
                          "a 9000000x1 image resized to a short side of 256 would be 2304000000 pixels long"),
               "9000000x1 image: preprocessing refused with its size");
        pp.resize = 2000000000;
        expect(vit_image_preprocess(&A, &png, &pp, &x) == VIT_ERR_ARG &&
                   strstr(vit_last_error(), "resize 2000000000 is beyond 16777216"),
               "resize 2000000000 refused");
        pp.resize = 16777216;
        pp.crop = 4;
        expect(vit_image_preprocess(&A, &png, &pp, &x) == VIT_ERR_SHAPE &&
                   strstr(vit_last_error(), "would be 22369621 pixels long"),
               "16x12 image resized to a short side of 2^24 refused");
        pp.resize = 12582912; /* the long side becomes 2^24 exactly */
        expect(vit_image_preprocess(&A, &png, &pp, &x) == VIT_OK && x.shape[2] == 4,
               "16x12 image resized to 16777216x12582912, 4x4 crop");
    }
    vit_arena_rewind(&A, mark);
}

/* vit_preprocess' mean and std defaults, one rule: std all 0 is ImageNet's
   std; mean all 0 is ImageNet's mean only when std is all 0 too (else no
   shift); a mean given with std all 0 is kept. */
static void test_mean_std(void) {
    static const float im_mean[3] = {0.485f, 0.456f, 0.406f}, im_std[3] = {0.229f, 0.224f, 0.225f};
    static const struct { float mean, std; int imagenet_mean, imagenet_std; const char *what; } cases[] = {
        {0.0f, 0.0f, 1, 1, "mean and std all 0: ImageNet's"},
        {0.5f, 0.0f, 0, 1, "mean given, std all 0: the mean kept, ImageNet's std"},
        {0.0f, 0.5f, 0, 0, "mean all 0, std given: no shift"},
        {0.25f, 0.5f, 0, 0, "both given"}};
    vit_preprocess pp;
    vit_tensor img, px, x;
    size_t mark = vit_arena_mark(&A), k;
    int i, c;
    img = decode_file("src.png", 3);
    if (!img.data) return;
    memset(&pp, 0, sizeof pp);
    pp.resize = pp.crop = 12;
    pp.std[0] = pp.std[1] = pp.std[2] = 1.0f;
    expect(vit_image_preprocess(&A, &img, &pp, &px) == VIT_OK, "preprocess in pixel units");
    for (i = 0; i < 4; i++) {
        float want[3 * 144];
        memset(&pp, 0, sizeof pp);
        pp.resize = pp.crop = 12;
        for (c = 0; c < 3; c++) { pp.mean[c] = cases[i].mean; pp.std[c] = cases[i].std; }
        for (c = 0; c < 3; c++)
            for (k = 0; k < 144; k++)
                want[c * 144 + k] = (px.data[c * 144 + k] - (cases[i].imagenet_mean ? im_mean[c] : cases[i].mean)) /
                                    (cases[i].imagenet_std ? im_std[c] : cases[i].std);
        expect(vit_image_preprocess(&A, &img, &pp, &x) == VIT_OK &&
                   check_close(cases[i].what, x.data, want, 3 * 144, 1e-6, 1e-6),
               cases[i].what);
    }
    vit_arena_rewind(&A, mark);
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
    expect(back.data[0] * 255 + 0.5f >= lo[0] - 1 && back.data[0] * 255 - 0.5f <= lo[0] + 1,
           "heatmap min is viridis' dark end");
    expect(fabsf(back.data[(size_t)30 * 40 - 1] * 255 - hi[0]) <= 1.0f, "heatmap max is viridis' bright end");
    snprintf(path, sizeof path, "%s/test_overlay.png", out_dir);
    expect(vit_png_overlay(path, &img, map, 3, 4, 0.5f) == VIT_OK && vit_image_load(&A, path, 3, &back) == VIT_OK &&
               back.shape[2] == 40,
           "overlay written at the image's size");
    snprintf(path, sizeof path, "%s/test_grid.png", out_dir);
    expect(vit_png_grid(path, &img, map, 3, 2, 2, 2, 16, 0.5f) == VIT_OK &&
               vit_image_load(&A, path, 3, &back) == VIT_OK && back.shape[1] == 34 && back.shape[2] == 34,
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
        static const unsigned char pgm16[] = "P5\n# c\n2 1\n1000\n\x12\x34\xab\xcd",
                                   pgm8[] = "P5\n# c\n2 1\n255\n\x12\xab";
        expect(vit_image_load_memory(&A, pgm16, sizeof pgm16 - 1, 1, &back) == VIT_ERR_UNSUPPORTED &&
                   strstr(vit_last_error(), "16-bit PNM"),
               "16-bit PGM as grey refused");
        expect(vit_image_load_memory(&A, pgm16, sizeof pgm16 - 1, 3, &back) == VIT_ERR_UNSUPPORTED,
               "16-bit PGM as RGB refused");
        static const unsigned char pgm_big[] = "P5\n5555555555555 1\n255\n\x12\xab",
                                   pgm_max[] = "P5\n2147483647 1\n255\n\x12\xab";
        /* A header number past INT_MAX (stb_image's int parser would
           overflow) is refused; so is INT_MAX itself, past the 2^24 side
           vit.h reads. */
        expect(vit_image_load_memory(&A, pgm_big, sizeof pgm_big - 1, 1, &back) == VIT_ERR_FORMAT &&
                   strstr(vit_last_error(), "header number beyond"),
               "PNM header number past INT_MAX refused");
        expect(vit_image_load_memory(&A, pgm_max, sizeof pgm_max - 1, 1, &back) == VIT_ERR_UNSUPPORTED &&
                   strstr(vit_last_error(), "16777216 a side"),
               "PNM width INT_MAX refused");
        expect(vit_image_load_memory(&A, pgm8, sizeof pgm8 - 1, 3, &back) == VIT_OK && back.shape[2] == 2 &&
                   fabsf(back.data[1] * 255.0f - 0xab) < 1e-3f,
               "8-bit PGM decodes");
    }
    {
        /* A 2x1 grey PNG whose first IDAT chunk is empty is refused
           (stb_image 2.27 would offset a NULL buffer; fuzz/regressions/
           png-empty-first-idat); an empty IDAT after the data decodes. */
        static const unsigned char empty_first[] =
            "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x02\x00\x00\x00\x01"
            "\x08\x00\x00\x00\x00\xd1"
            "\x49\x20\x56\x00\x00\x00\x00\x49\x44\x41\x54\x35\xaf\x06\x1e\x00\x00\x00\x0b\x49\x44\x41\x54\x78"
            "\x9c\x63\x10\x5a\x0d\x00"
            "\x00\xd2\x00\xbe\x73\xe5\xb3\x2b\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";
        static const unsigned char empty_last[] =
            "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x02\x00\x00\x00\x01"
            "\x08\x00\x00\x00\x00\xd1"
            "\x49\x20\x56\x00\x00\x00\x0b\x49\x44\x41\x54\x78\x9c\x63\x10\x5a\x0d\x00\x00\xd2\x00\xbe\x73\xe5"
            "\xb3\x2b\x00\x00\x00\x00"
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
    test_untrusted();
    test_mean_std();
    vit_arena_free(&A);
    printf("test_maps: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

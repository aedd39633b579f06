/* Bad input gets a specific code and message, never a crash, and leaves
   outputs untouched: hostile safetensors headers (built here byte by byte),
   every truncation of a real model file, wrong shapes and dtypes, missing
   and extra tensors, non-finite inputs, tiny arenas, broken .npy files.
   Run under ASan+UBSan (and LeakSanitizer) by `make test`.
   Usage: test_errors [FIXTURE_DIR]. */
#define VIT_IMPLEMENTATION
#include "../vit.h"

#include <stdlib.h>
#include <string.h>

static int passed, failed;

static void expect_err(vit_result got, vit_result want, const char *needle, const char *what) {
    const char *msg = vit_last_error();
    if (got == want && (!needle || strstr(msg, needle))) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL %s: got %s \"%s\", want %s containing \"%s\"\n", what, vit_result_string(got), msg, vit_result_string(want),
           needle ? needle : "");
}

static void expect_true(int ok, const char *what) {
    if (ok) passed++;
    else { failed++; printf("FAIL %s (%s)\n", what, vit_last_error()); }
}

/* ---- a tiny safetensors writer for hand-made files ---- */

typedef struct { const char *name, *dtype, *shape; long begin, end; } spec;

static unsigned char file[1 << 17];

/* meta: the inside of __metadata__ (or NULL); data bytes filled with 0.25f. */
static size_t build(const char *meta, const spec *t, int n, long data_bytes) {
    char h[8192];
    size_t len = 0, i;
    int k;
    len += (size_t)snprintf(h + len, sizeof h - len, "{");
    if (meta) len += (size_t)snprintf(h + len, sizeof h - len, "\"__metadata__\":{%s}", meta);
    for (k = 0; k < n; k++)
        len += (size_t)snprintf(h + len, sizeof h - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%s],\"data_offsets\":[%ld,%ld]}",
                                (meta || k) ? "," : "", t[k].name, t[k].dtype, t[k].shape, t[k].begin, t[k].end);
    len += (size_t)snprintf(h + len, sizeof h - len, "}");
    while ((8 + len) % 8) h[len++] = ' ';
    for (i = 0; i < 8; i++) file[i] = (unsigned char)((uint64_t)len >> (8 * i));
    memcpy(file + 8, h, len);
    for (i = 0; i < (size_t)data_bytes; i += 4) { float v = 0.25f; memcpy(file + 8 + len + i, &v, 4); }
    return 8 + len + (size_t)data_bytes;
}

#define MLP_META "\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seed001\",\"in_dim\":\"3\",\"hidden_dim\":\"4\",\"out_dim\":\"2\",\"act\":\"relu\""
/* layers.0.weight [4,3] = 48 bytes, .bias [4] = 16, layers.2.weight [2,4] = 32, .bias [2] = 8 */
static const spec mlp_ok[] = {{"layers.0.weight", "F32", "4,3", 0, 48}, {"layers.0.bias", "F32", "4", 48, 64},
                              {"layers.2.weight", "F32", "2,4", 64, 96}, {"layers.2.bias", "F32", "2", 96, 104}};

static vit_result load(size_t n) {
    vit_model m;
    vit_result r = vit_model_load_memory(&m, file, n);
    if (r == VIT_OK) vit_model_free(&m);
    else if (m.arena.base || m.blocks) { failed++; printf("FAIL model not zeroed after a failed load\n"); }
    return r;
}

static void test_headers(void) {
    spec t[5];
    size_t n;
    memcpy(t, mlp_ok, sizeof mlp_ok);
    expect_err(load(build(MLP_META, t, 4, 104)), VIT_OK, NULL, "valid hand-made MLP");
    expect_err(load(build(MLP_META, t, 3, 104)), VIT_ERR_MISSING, "layers.2.bias", "missing tensor");
    t[4].name = "extra.weight"; t[4].dtype = "F32"; t[4].shape = "1"; t[4].begin = 104; t[4].end = 108;
    expect_err(load(build(MLP_META, t, 5, 108)), VIT_ERR_FORMAT, "extra.weight", "extra tensor");
    memcpy(t, mlp_ok, sizeof mlp_ok);
    t[0].shape = "4,5"; t[0].end = 80; t[1].begin = 80; t[1].end = 96; t[2].begin = 96; t[2].end = 128; t[3].begin = 128; t[3].end = 136;
    expect_err(load(build(MLP_META, t, 4, 136)), VIT_ERR_SHAPE, "'layers.0.weight' has shape [4,5], expected [4,3]", "wrong shape");
    memcpy(t, mlp_ok, sizeof mlp_ok);
    t[1].dtype = "I32";
    expect_err(load(build(MLP_META, t, 4, 104)), VIT_ERR_DTYPE, "layers.0.bias", "integer dtype");
    t[1].dtype = "Q4";
    expect_err(load(build(MLP_META, t, 4, 104)), VIT_ERR_DTYPE, "unknown dtype", "unknown dtype");
    t[1].dtype = "F64";
    expect_err(load(build(MLP_META, t, 4, 104)), VIT_ERR_FORMAT, "hold 16 bytes", "dtype size against offsets");
    memcpy(t, mlp_ok, sizeof mlp_ok);
    t[1].begin = 40; t[1].end = 56;
    expect_err(load(build(MLP_META, t, 4, 104)), VIT_ERR_FORMAT, "overlap", "overlapping tensors");
    memcpy(t, mlp_ok, sizeof mlp_ok);
    t[3].begin = 1000; t[3].end = 1008;
    expect_err(load(build(MLP_META, t, 4, 104)), VIT_ERR_FORMAT, "truncated", "offsets past the data");
    memcpy(t, mlp_ok, sizeof mlp_ok);
    t[0].shape = "2147483647,2147483647,2147483647";
    expect_err(load(build(MLP_META, t, 4, 104)), VIT_ERR_OVERFLOW, "overflows", "huge dimensions");
    t[0].shape = "0,3"; t[0].end = 0;
    expect_err(load(build(MLP_META, t, 4, 104)), VIT_ERR_SHAPE, "[0,3]", "zero dimension");
    memcpy(t, mlp_ok, sizeof mlp_ok);
    expect_err(load(build(NULL, t, 4, 104)), VIT_ERR_MISSING, "tools/export.py", "no metadata");
    expect_err(load(build("\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seed001\",\"in_dim\":\"3\",\"out_dim\":\"2\",\"act\":\"relu\"", t, 4, 104)),
               VIT_ERR_MISSING, "hidden_dim", "metadata key missing");
    expect_err(load(build("\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seed001\",\"in_dim\":\"x3\",\"hidden_dim\":\"4\",\"out_dim\":\"2\",\"act\":\"relu\"", t, 4, 104)),
               VIT_ERR_FORMAT, "in_dim", "metadata not an integer");
    expect_err(load(build("\"format\":\"vit.h\",\"kind\":\"resnet\"", t, 4, 104)), VIT_ERR_UNSUPPORTED, "resnet", "unknown kind");
    expect_err(load(build("\"format\":\"vit.h\",\"kind\":\"vit\",\"naming\":\"torchvision\",\"image_size\":\"8192\",\"patch_size\":\"1\","
                          "\"in_channels\":\"3\",\"hidden_dim\":\"8\",\"num_layers\":\"1\",\"num_heads\":\"1\",\"mlp_dim\":\"8\",\"num_classes\":\"1\","
                          "\"representation_size\":\"0\",\"ln_eps\":\"1e-6\",\"act\":\"gelu\",\"pool\":\"cls\",\"attn_quirk\":\"0\"", t, 4, 104)),
               VIT_ERR_UNSUPPORTED, "tokens", "too many tokens");
    /* Raw header damage. */
    n = build(MLP_META, t, 4, 104);
    file[8] = '[';
    expect_err(load(n), VIT_ERR_FORMAT, "not a JSON object", "header not an object");
    n = build(MLP_META, t, 4, 104);
    memset(file, 0xff, 8);
    expect_err(load(n), VIT_ERR_FORMAT, "header length", "header length beyond the file");
    n = build("\"format\":\"vit.h\",\"deep\":\"x\"", t, 0, 0);
    {
        /* An ignored field nested 10000 deep must not recurse that far. */
        char *p = (char *)file + 8;
        size_t len = 20000 + 16, i;
        for (i = 0; i < 8; i++) file[i] = (unsigned char)((uint64_t)len >> (8 * i));
        memcpy(p, "{\"t\":{\"x\":", 10);
        memset(p + 10, '[', 10000);
        memset(p + 10010, ']', 10000);
        memcpy(p + 20010, "}}    ", 6);
        expect_err(load(8 + len), VIT_ERR_FORMAT, NULL, "deep nesting");
    }
    n = build(MLP_META, t, 4, 104);
    memcpy(file + 8, "{\"__metadata__\":{\"format\":\"vit.h\\", 33);
    expect_err(load(n), VIT_ERR_FORMAT, NULL, "broken string escape");
    expect_err(load(4), VIT_ERR_FORMAT, "too short", "4-byte file");
}

/* F16 and BF16 are widened on load. */
static void test_half(void) {
    static const spec t[] = {{"layers.0.weight", "F16", "4,3", 0, 24}, {"layers.0.bias", "BF16", "4", 24, 32},
                             {"layers.2.weight", "F16", "2,4", 32, 48}, {"layers.2.bias", "F16", "2", 48, 52}};
    vit_model m;
    size_t n = build(MLP_META, t, 4, 52), hl = n - 52, i;
    for (i = 0; i < 52; i += 2) { file[hl + i] = 0x00; file[hl + i + 1] = 0x3c; } /* F16 1.0 */
    file[hl + 24] = 0x80; file[hl + 25] = 0x3f;                                  /* BF16 1.0 */
    file[hl + 26] = 0x00; file[hl + 27] = 0xc0;                                  /* BF16 -2.0 */
    file[hl + 48] = 0x01; file[hl + 49] = 0x00;                                  /* F16 smallest subnormal */
    if (vit_model_load_memory(&m, file, n) != VIT_OK) {
        failed++;
        printf("FAIL half load: %s\n", vit_last_error());
        return;
    }
    if (m.mlp_w.fc1_w.data[5] == 1.0f && m.mlp_w.fc1_b.data[0] == 1.0f && m.mlp_w.fc1_b.data[1] == -2.0f &&
        m.mlp_w.fc2_b.data[0] == 5.9604644775390625e-8f)
        passed++;
    else {
        failed++;
        printf("FAIL half conversion: %g %g %g %g\n", m.mlp_w.fc1_w.data[5], m.mlp_w.fc1_b.data[0], m.mlp_w.fc1_b.data[1], m.mlp_w.fc2_b.data[0]);
    }
    vit_model_free(&m);
}

/* BF16 and I8 dense weights stay as stored, in place; the rest is widened.
   I8 needs a good '<name>_scale'. */
static void test_low(void) {
    static const spec bf[] = {{"layers.0.weight", "BF16", "4,3", 0, 24}, {"layers.0.bias", "BF16", "4", 24, 32},
                              {"layers.2.weight", "F32", "2,4", 32, 64}, {"layers.2.bias", "F32", "2", 64, 72}};
    static const spec i8[] = {{"layers.0.weight", "I8", "4,3", 0, 12}, {"layers.0.weight_scale", "F32", "4", 12, 28},
                              {"layers.0.bias", "F32", "4", 28, 44}, {"layers.2.weight", "F32", "2,4", 44, 76}, {"layers.2.bias", "F32", "2", 76, 84}};
    static const spec noscale[] = {{"layers.0.weight", "I8", "4,3", 0, 12}, {"layers.0.bias", "F32", "4", 12, 28},
                                   {"layers.2.weight", "F32", "2,4", 28, 60}, {"layers.2.bias", "F32", "2", 60, 68}};
    static const spec badscale[] = {{"layers.0.weight", "I8", "4,3", 0, 12}, {"layers.0.weight_scale", "F16", "4", 12, 20},
                                    {"layers.0.bias", "F32", "4", 20, 36}, {"layers.2.weight", "F32", "2,4", 36, 68}, {"layers.2.bias", "F32", "2", 68, 76}};
    static const spec shortscale[] = {{"layers.0.weight", "I8", "4,3", 0, 12}, {"layers.0.weight_scale", "F32", "3", 12, 24},
                                      {"layers.0.bias", "F32", "4", 24, 40}, {"layers.2.weight", "F32", "2,4", 40, 72}, {"layers.2.bias", "F32", "2", 72, 80}};
    static const spec wide[] = {{"layers.0.weight", "I8", "1,65537", 0, 65537}, {"layers.0.weight_scale", "F32", "1", 65540, 65544},
                                {"layers.0.bias", "F32", "1", 65544, 65548}, {"layers.2.weight", "F32", "1,1", 65548, 65552},
                                {"layers.2.bias", "F32", "1", 65552, 65556}};
    vit_model m;
    size_t n = build(MLP_META, bf, 4, 72), hl = n - 72;
    float zero = 0.0f;
    if (vit_model_load_memory(&m, file, n) != VIT_OK) {
        failed++;
        printf("FAIL bf16 load: %s\n", vit_last_error());
    } else {
        vit_tensor *w = &m.mlp_w.fc1_w;
        expect_true(w->dtype == VIT_DTYPE_BF16 && !w->data && w->q == file + hl && m.mlp_w.fc1_b.dtype == VIT_DTYPE_F32 &&
                        m.mlp_w.fc1_b.data[1] == 0.25f && m.n_kept[VIT_DTYPE_BF16] == 12,
                    "a BF16 dense weight stays BF16 in place, its bias is widened");
        vit_model_free(&m);
    }
    n = build(MLP_META, i8, 5, 84);
    hl = n - 84;
    if (vit_model_load_memory(&m, file, n) != VIT_OK) {
        failed++;
        printf("FAIL i8 load: %s\n", vit_last_error());
    } else {
        vit_tensor *w = &m.mlp_w.fc1_w;
        expect_true(w->dtype == VIT_DTYPE_I8 && !w->data && w->q == file + hl && w->scale == (const float *)(const void *)(file + hl + 12) &&
                        m.n_kept[VIT_DTYPE_I8] == 12,
                    "an I8 dense weight and its scales stay in place");
        vit_model_free(&m);
    }
    expect_err(load(build(MLP_META, noscale, 4, 68)), VIT_ERR_MISSING, "no scale tensor 'layers.0.weight_scale'", "I8 without scales");
    expect_err(load(build(MLP_META, badscale, 5, 76)), VIT_ERR_FORMAT, "must be F32 of shape [4]", "F16 scales");
    expect_err(load(build(MLP_META, shortscale, 5, 80)), VIT_ERR_FORMAT, "must be F32 of shape [4]", "3 scales for 4 rows");
    n = build(MLP_META, i8, 5, 84);
    memcpy(file + n - 84 + 12 + 8, &zero, 4);
    expect_err(load(n), VIT_ERR_FORMAT, "finite and > 0", "a zero scale");
    expect_err(load(build("\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seed001\",\"in_dim\":\"65537\",\"hidden_dim\":\"1\","
                          "\"out_dim\":\"1\",\"act\":\"relu\"", wide, 5, 65556)),
               VIT_ERR_UNSUPPORTED, "at most 65536", "an I8 layer of 65537 inputs");
}

/* Inputs: wrong shape, NaN, Inf, an arena too small; *out stays untouched. */
static void test_inputs(void) {
    vit_model m;
    vit_arena act, small;
    vit_tensor x, y, sentinel;
    int32_t s3[3] = {2, 5, 3}, bad[3] = {2, 5, 4};
    size_t bytes;
    static unsigned char tiny[256];
    build(MLP_META, mlp_ok, 4, 104);
    if (vit_model_load_memory(&m, file, sizeof file) != VIT_OK || vit_arena_init_alloc(&act, 1 << 20) != VIT_OK) {
        failed++;
        printf("FAIL input setup: %s\n", vit_last_error());
        return;
    }
    memset(&sentinel, 0x5a, sizeof sentinel);
    vit_tensor_init(&act, &x, 3, bad);
    memset(x.data, 0, vit_tensor_numel(&x) * sizeof(float));
    y = sentinel;
    expect_err(vit_model_forward(&m, &act, &x, NULL, &y), VIT_ERR_SHAPE, "expected last dimension 3", "wrong input shape");
    expect_err(memcmp(&y, &sentinel, sizeof y) ? VIT_ERR_ARG : VIT_OK, VIT_OK, NULL, "out untouched on error");
    vit_tensor_init(&act, &x, 3, s3);
    memset(x.data, 0, vit_tensor_numel(&x) * sizeof(float));
    x.data[7] = NAN;
    expect_err(vit_model_forward(&m, &act, &x, NULL, &y), VIT_ERR_NONFINITE, "element 7 is NaN", "NaN input");
    x.data[7] = -INFINITY;
    expect_err(vit_model_forward(&m, &act, &x, NULL, &y), VIT_ERR_NONFINITE, "infinite", "Inf input");
    x.data[7] = 1.0f;
    /* The check runs whole vectors, then a scalar tail: a culprit in either. */
    x.data[12] = INFINITY;
    expect_err(vit_model_forward(&m, &act, &x, NULL, &y), VIT_ERR_NONFINITE, "element 12 is infinite", "Inf input in a vector");
    x.data[12] = 0.0f;
    x.data[29] = NAN;
    expect_err(vit_model_forward(&m, &act, &x, NULL, &y), VIT_ERR_NONFINITE, "element 29 is NaN", "NaN input in the tail");
    x.data[29] = 0.0f;
    vit_arena_init(&small, tiny, sizeof tiny);
    expect_err(vit_model_forward(&m, &small, &x, NULL, &y), VIT_ERR_OOM, "needed", "activation arena too small");
    expect_err(small.used == 0 ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL, "arena rewound after a failure");
    expect_err(vit_model_memory(&m, &x, NULL, &bytes), VIT_OK, NULL, "memory query");
    expect_err(vit_model_forward(&m, &act, &x, NULL, &y), VIT_OK, NULL, "valid forward");
    expect_err(y.ndim == 3 && y.shape[2] == 2 && y.data[0] == 0.25f * 0.25f * 4 + 0.25f /* x row 0 is zero */ ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL,
               "forward value");
    expect_err(vit_model_forward(&m, &act, NULL, NULL, &y), VIT_ERR_ARG, NULL, "NULL input");
    vit_arena_free(&act);
    vit_model_free(&m);
}

/* Where `s` starts in the npy header (the test edits it in place). */
static unsigned char *at(unsigned char *buf, const char *s) { return (unsigned char *)strstr((char *)buf + 10, s); }

static void test_npy(void) {
    static const char good[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    unsigned char buf[256];
    vit_arena a;
    vit_tensor t;
    size_t hl = sizeof good - 1, n;
    vit_arena_init_alloc(&a, 4096);
    memset(buf, ' ', sizeof buf);
    memcpy(buf, good, hl);
    buf[10 + 0x76 - 1] = '\n';
    n = 10 + 0x76 + 24;
    expect_err(vit_npy_load_memory(&a, buf, n, &t), VIT_OK, NULL, "valid npy");
    expect_err(t.ndim == 2 && t.shape[0] == 2 && t.shape[1] == 3 ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL, "npy shape");
    expect_err(vit_npy_load_memory(&a, buf, n - 1, &t), VIT_ERR_FORMAT, "truncated", "truncated npy");
    buf[0] = 'X';
    expect_err(vit_npy_load_memory(&a, buf, n, &t), VIT_ERR_FORMAT, "magic", "npy magic");
    buf[0] = 0x93;
    buf[sizeof good] = 0; /* lets strstr see the header only */
    memcpy(at(buf, "<f4"), "<i4", 3);
    expect_err(vit_npy_load_memory(&a, buf, n, &t), VIT_ERR_DTYPE, "<i4", "npy int dtype");
    memcpy(at(buf, "<i4"), "<f4", 3);
    memcpy(at(buf, "False"), "True ", 5);
    expect_err(vit_npy_load_memory(&a, buf, n, &t), VIT_ERR_FORMAT, "C-order", "npy fortran order");
    memcpy(at(buf, "True "), "False", 5);
    memcpy(at(buf, "(2, 3)"), "(0, 3)", 6);
    expect_err(vit_npy_load_memory(&a, buf, n, &t), VIT_ERR_SHAPE, "zero", "npy zero dimension");
    memcpy(at(buf, "(0, 3)"), "(1,1,1,1,1)", 11);
    expect_err(vit_npy_load_memory(&a, buf, n, &t), VIT_ERR_SHAPE, "dimensions", "npy too many dimensions");
    buf[8] = 0xff; buf[9] = 0xff;
    expect_err(vit_npy_load_memory(&a, buf, n, &t), VIT_ERR_FORMAT, "longer than the file", "npy header length");
    expect_err(vit_npy_load(&a, "/nonexistent/x.npy", &t), VIT_ERR_IO, "cannot open", "npy missing file");
    vit_arena_free(&a);
}

/* Every prefix of a real exported model is refused cleanly: every byte
   boundary of a small one (stride 1), every 61st byte of a ViT's data. */
static void test_truncation(const char *dir, const char *name, size_t data_stride) {
    char path[1024];
    FILE *f;
    size_t n, cut, step, bad = 0, header;
    unsigned char *buf;
    vit_model m;
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, name);
    expect_err(vit_model_load_file(&m, "/nonexistent/m.safetensors"), VIT_ERR_IO, "cannot open", "missing file");
    if (!(f = fopen(path, "rb"))) { failed++; printf("FAIL cannot open %s\n", path); return; }
    buf = (unsigned char *)malloc(1 << 22);
    n = fread(buf, 1, 1 << 22, f);
    fclose(f);
    header = 8 + ((size_t)buf[0] | (size_t)buf[1] << 8 | (size_t)buf[2] << 16);
    for (cut = 0; cut < n; cut += step) {
        /* Every byte through the header, then a stride through the data. */
        step = cut < header + 64 ? 1 : data_stride;
        if (vit_model_load_memory(&m, buf, cut) == VIT_OK) { bad++; vit_model_free(&m); }
    }
    expect_err(bad ? VIT_ERR_ARG : VIT_OK, VIT_OK, NULL, "every truncation refused");
    expect_err(vit_model_load_memory(&m, buf, n), VIT_OK, NULL, "the whole file loads");
    if (m.arena.base) vit_model_free(&m);
    /* Flip each header byte in turn: refused or loaded, never a crash. */
    for (cut = 8; cut < header; cut++) {
        buf[cut] ^= 0x5a;
        if (vit_model_load_memory(&m, buf, n) == VIT_OK) vit_model_free(&m);
        buf[cut] ^= 0x5a;
    }
    passed++;
    free(buf);
}

int main(int argc, char **argv) {
    test_headers();
    test_half();
    test_low();
    test_inputs();
    test_npy();
    test_truncation(argc > 1 ? argv[1] : "tests/fixtures", "mha_sep1", 1);
    test_truncation(argc > 1 ? argv[1] : "tests/fixtures", "vit_tv", 61);
    printf("test_errors: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

/* Bad input gets a specific code and message, never a crash, and leaves
   outputs untouched: hostile safetensors headers (built here byte by byte),
   every truncation of a real model file, wrong shapes and dtypes, missing
   and extra tensors, non-finite inputs, tiny arenas, broken .npy files.
   Run under ASan+UBSan (and LeakSanitizer) by `make test`.
   Usage: test_errors [FIXTURE_DIR [TMP_DIR]] (TMP_DIR default build), or
   test_errors FIXTURE_DIR --full-disk DIR on a small file system of its own. */
#if defined(__linux__) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* setrlimit, for the failed-write tests */
#endif
#include <stdlib.h>
#include <string.h>

/* Every tensor-name and metadata-key comparison the loader makes, counted
   (test_decoys). */
static unsigned long long name_cmps;
static int counted_strcmp(const char *a, const char *b) {
    name_cmps++;
    return strcmp(a, b);
}
#define VIT__NAME_CMP(a, b) counted_strcmp((a), (b))
#define VIT_IMPLEMENTATION
#include "../vit.h"
#ifdef __linux__
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

static int passed, failed;

static void expect_err(vit_result got, vit_result want, const char *needle, const char *what) {
    const char *msg = vit_last_error();
    if (got == want && (!needle || strstr(msg, needle))) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL %s: got %s \"%s\", want %s containing \"%s\"\n", what, vit_result_string(got), msg,
           vit_result_string(want), needle ? needle : "");
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
        len += (size_t)snprintf(h + len, sizeof h - len,
                                "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%s],\"data_offsets\":[%ld,%ld]}",
                                (meta || k) ? "," : "", t[k].name, t[k].dtype, t[k].shape, t[k].begin, t[k].end);
    len += (size_t)snprintf(h + len, sizeof h - len, "}");
    while ((8 + len) % 8) h[len++] = ' ';
    for (i = 0; i < 8; i++) file[i] = (unsigned char)((uint64_t)len >> (8 * i));
    memcpy(file + 8, h, len);
    for (i = 0; i < (size_t)data_bytes; i += 4) { float v = 0.25f; memcpy(file + 8 + len + i, &v, 4); }
    return 8 + len + (size_t)data_bytes;
}

#define MLP_META \
    "\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seed001\",\"in_dim\":\"3\",\"hidden_dim\":\"4\"," \
    "\"out_dim\":\"2\",\"act\":\"relu\""
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
    t[0].shape = "4,5";
    t[0].end = 80;
    t[1].begin = 80;
    t[1].end = 96;
    t[2].begin = 96;
    t[2].end = 128;
    t[3].begin = 128;
    t[3].end = 136;
    expect_err(load(build(MLP_META, t, 4, 136)), VIT_ERR_SHAPE, "'layers.0.weight' has shape [4,5], expected [4,3]",
               "wrong shape");
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
    expect_err(
        load(build(
            "\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seed001\",\"in_dim\":\"3\",\"out_dim\":\"2\","
            "\"act\":\"relu\"",
            t, 4, 104)),
        VIT_ERR_MISSING, "hidden_dim", "metadata key missing");
    expect_err(
        load(build(
            "\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seed001\",\"in_dim\":\"x3\","
            "\"hidden_dim\":\"4\",\"out_dim\":\"2\",\"act\":\"relu\"",
            t, 4, 104)),
        VIT_ERR_FORMAT, "in_dim", "metadata not an integer");
    expect_err(load(build("\"format\":\"vit.h\",\"kind\":\"resnet\"", t, 4, 104)), VIT_ERR_UNSUPPORTED, "resnet",
               "unknown kind");
    expect_err(
        load(build(
            "\"format\":\"vit.h\",\"kind\":\"vit\",\"naming\":\"torchvision\",\"image_size\":\"8192\","
            "\"patch_size\":\"1\","
            "\"in_channels\":\"3\",\"hidden_dim\":\"8\",\"num_layers\":\"1\",\"num_heads\":\"1\","
            "\"mlp_dim\":\"8\",\"num_classes\":\"1\","
            "\"representation_size\":\"0\",\"ln_eps\":\"1e-6\",\"act\":\"gelu\",\"pool\":\"cls\",\"attn_quirk\":\"0\"",
            t, 4, 104)),
        VIT_ERR_UNSUPPORTED, "tokens", "too many tokens");
    /* Raw header damage. */
    n = build(MLP_META, t, 4, 104);
    file[8] = '[';
    expect_err(load(n), VIT_ERR_FORMAT, "not a safetensors file (no JSON header", "header not an object");
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
    expect_err(load(4), VIT_ERR_FORMAT, "not a safetensors file", "4-byte file");
}

/* Duplicate keys, which Python's json resolves to the last (so a file
   could be GELU to vit.h and ReLU to Python), are refused and named. */
static void test_duplicates(void) {
    spec t[4];
    memcpy(t, mlp_ok, sizeof mlp_ok);
    expect_err(load(build(MLP_META ",\"act\":\"gelu\"", t, 4, 104)), VIT_ERR_FORMAT,
               "__metadata__ has the key 'act' twice", "duplicate metadata key");
    expect_err(
        load(build("\"format\":\"vit.h\",\"kind\":\"mlp\"},\"__metadata__\":{\"naming\":\"seed001\"", t, 4, 104)),
        VIT_ERR_FORMAT, "two __metadata__ objects", "two __metadata__ objects");
    t[1].shape = "4],\"shape\":[4";
    expect_err(load(build(MLP_META, t, 4, 104)), VIT_ERR_FORMAT, "tensor 'layers.0.bias': key 'shape' appears twice",
               "duplicate shape");
    memcpy(t, mlp_ok, sizeof mlp_ok);
    t[1].dtype = "F32\",\"dtype\":\"F16";
    expect_err(load(build(MLP_META, t, 4, 104)), VIT_ERR_FORMAT, "key 'dtype' appears twice", "duplicate dtype");
    memcpy(t, mlp_ok, sizeof mlp_ok);
    t[3].name = "layers.2.weight"; t[3].shape = "2";
    expect_err(load(build(MLP_META, t, 4, 104)), VIT_ERR_FORMAT, "tensor name 'layers.2.weight' appears twice",
               "duplicate tensor name");
    memcpy(t, mlp_ok, sizeof mlp_ok);
    t[3].begin = 104; t[3].end = 96;
    expect_err(load(build(MLP_META, t, 4, 104)), VIT_ERR_FORMAT, "data_offsets [104,96] end before they begin",
               "data_offsets backwards");
    {
        /* A JPEG given as a model. */
        static const unsigned char jpeg[] = "\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00";
        vit_model m;
        expect_err(vit_model_load_memory(&m, jpeg, sizeof jpeg - 1), VIT_ERR_FORMAT, "not a safetensors file",
                   "a JPEG as the model");
    }
}

/* A torchvision ViT (hidden 4, one 4x4 patch, mlp 4, 2 classes) of `depth`
   layers with LayerNorm epsilon ln_eps, then `decoys` zero-size tensors at
   data offset 0: in a malloc'd buffer (*n bytes). */
static unsigned char *build_vit(int depth, int decoys, size_t *n, const char *ln_eps) {
    static const char *const block[12] = {"ln_1.weight",
                                          "ln_1.bias",
                                          "self_attention.in_proj_weight",
                                          "self_attention.in_proj_bias",
                                          "self_attention.out_proj.weight",
                                          "self_attention.out_proj.bias",
                                          "ln_2.weight",
                                          "ln_2.bias",
                                          "mlp.0.weight",
                                          "mlp.0.bias",
                                          "mlp.3.weight",
                                          "mlp.3.bias"};
    static const char *const bshape[12] = {"4", "4", "12,4", "12", "4,4", "4", "4", "4", "4,4", "4", "4,4", "4"};
    static const int bsize[12] = {4, 4, 48, 12, 16, 4, 4, 4, 16, 4, 16, 4};
    size_t cap = 4096 + (size_t)depth * 12 * 140 + (size_t)decoys * 80, len = 0, data = 0, i;
    char *h = (char *)malloc(cap);
    unsigned char *out;
    int l, k;
#define ADD(name, shape, count)                                                                                        \
    do {                                                                                                               \
        len += (size_t)snprintf(h + len, cap - len,                                                                    \
                                ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%s],\"data_offsets\":[%zu,%zu]}", name, shape,  \
                                data, data + (size_t)(count)*4);                                                       \
        data += (size_t)(count)*4;                                                                                     \
    } while (0)
    len += (size_t)snprintf(
        h + len, cap - len,
        "{\"__metadata__\":{\"format\":\"vit.h\",\"kind\":\"vit\",\"naming\":\"torchvision\",\"image_size\":\"4\","
        "\"patch_size\":\"4\",\"in_channels\":\"1\",\"hidden_dim\":\"4\",\"num_layers\":\"%d\",\"num_heads\":\"1\","
        "\"mlp_dim\":\"4\",\"num_classes\":\"2\",\"representation_size\":\"0\",\"ln_eps\":\"%s\",\"act\":\"gelu\","
        "\"pool\":\"cls\",\"attn_quirk\":\"0\"}",
        depth, ln_eps);
    ADD("conv_proj.weight", "4,1,4,4", 64);
    ADD("conv_proj.bias", "4", 4);
    ADD("class_token", "1,1,4", 4);
    ADD("encoder.pos_embedding", "1,2,4", 8);
    for (l = 0; l < depth; l++)
        for (k = 0; k < 12; k++) {
            char name[128];
            snprintf(name, sizeof name, "encoder.layers.encoder_layer_%d.%s", l, block[k]);
            ADD(name, bshape[k], bsize[k]);
        }
    ADD("encoder.ln.weight", "4", 4);
    ADD("encoder.ln.bias", "4", 4);
    ADD("heads.head.weight", "2,4", 8);
    ADD("heads.head.bias", "2", 2);
    for (k = 0; k < decoys; k++) /* at offset 0: first in the data order */
        len += (size_t)snprintf(h + len, cap - len,
                                ",\"decoy.%06d\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}", k);
#undef ADD
    h[len++] = '}';
    while ((8 + len) % 8) h[len++] = ' ';
    *n = 8 + len + data;
    out = (unsigned char *)malloc(*n);
    for (i = 0; i < 8; i++) out[i] = (unsigned char)((uint64_t)len >> (8 * i));
    memcpy(out + 8, h, len);
    for (i = 0; i < data; i += 4) { float v = 0.25f; memcpy(out + 8 + len + i, &v, 4); }
    free(h);
    return out;
}

/* Loading looks every tensor up by name: a header of many zero-size decoy
   tensors must cost O(n log n) comparisons, not O(names * n) (a 50 MB
   header took 81 s). Counted, not timed. */
static void test_decoys(void) {
    const int depth = 64, decoys = 20000, tensors = 4 + 64 * 12 + 4 + 20000;
    size_t n;
    unsigned char *f = build_vit(depth, 0, &n, "1e-6");
    vit_model m;
    double bound = 4.0 * tensors * log2((double)tensors);
    char label[160];
    expect_err(vit_model_load_memory(&m, f, n), VIT_OK, NULL, "a 64-layer ViT loads");
    if (m.arena.base) vit_model_free(&m);
    free(f);
    f = build_vit(depth, decoys, &n, "1e-6");
    name_cmps = 0;
    expect_err(vit_model_load_memory(&m, f, n), VIT_ERR_FORMAT, "unexpected tensor 'decoy.000000'", "decoys refused");
    snprintf(label, sizeof label, "%d tensors: %llu name comparisons, at most 4 n log2 n = %.0f", tensors, name_cmps,
             bound);
    expect_err((double)name_cmps <= bound ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL, label);
    printf("  %s\n", label);
    free(f);
}

/* The loader's scans, word- and block-wise, against one value at a time: a NaN or Inf among F16 or BF16 values
   (vit__first_nonfinite) and -128 among I8 ones (vit__first_i8_min), at lengths and places either side of a word
   and of the 4,096-value blocks, with values that miss by one bit and signs that must not matter. */
static void test_scans(void) {
    static const size_t lens[] = {0, 1, 3, 4, 5, 7, 8, 9, 4095, 4096, 4097, 8200};
    static unsigned char buf[2 * 8200];
    unsigned seed = 12345u;
    size_t li, at, i, want, got;
    int dt, bad = 0;
    for (li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t n = lens[li], places[8];
        places[0] = 0; places[1] = n / 2; places[2] = n ? n - 1 : 0; places[3] = 3; places[4] = 4;
        places[5] = 4095; places[6] = 4096; places[7] = n; /* n: none */
        for (dt = 0; dt < 3; dt++) /* F16, BF16, I8 */
            for (at = 0; at < 8; at++) {
                unsigned exp = dt == 0 ? 0x7c00u : 0x7f80u;
                for (i = 0; i < n; i++) { /* finite values, some one exponent bit short of all ones; I8 -127..127 */
                    unsigned v;
                    seed = seed * 1103515245u + 12345u;
                    v = seed >> 8 & 0xffffu;
                    if (dt < 2) {
                        if ((v & exp) == exp) v &= ~(exp & (0u - exp)); /* the exponent's lowest bit cleared */
                        buf[2 * i] = (unsigned char)v; buf[2 * i + 1] = (unsigned char)(v >> 8);
                    } else buf[i] = (unsigned char)(v & 0xffu) == 0x80 ? 0x81 : (unsigned char)v;
                }
                if (places[at] < n) {
                    i = places[at];
                    if (dt < 2) { /* NaN, +Inf or -Inf */
                        unsigned v = exp | (at % 3 == 0 ? 1u : 0u) | (at % 3 == 2 ? 0x8000u : 0u);
                        buf[2 * i] = (unsigned char)v; buf[2 * i + 1] = (unsigned char)(v >> 8);
                    } else buf[i] = 0x80;
                }
                for (want = 0; want < n; want++)
                    if (dt < 2 ? ((buf[2 * want] | (unsigned)buf[2 * want + 1] << 8) & exp) == exp : buf[want] == 0x80)
                        break;
                got = dt < 2 ? vit__first_nonfinite(buf, n, dt == 0 ? VIT__F16 : VIT__BF16)
                             : vit__first_i8_min(buf, n);
                if (got != want && bad++ < 5)
                    printf("  scan of %zu %s values: %zu, expected %zu\n", n, dt == 0 ? "F16" : dt == 1 ? "BF16" : "I8",
                           got, want);
            }
    }
    expect_true(bad == 0, "the loader's F16, BF16 and I8 scans find the first bad value as one at a time does");
}

/* A NaN in a dense weight that a file's load packs is found once the weight's pages are the process's own, before
   the packing (vit__ld_pack_entry), not while counting: the same refusal from a file as from memory (not packed),
   F32 and BF16, the model zeroed after it; allowed, it loads. An I8 weight's -128 likewise, allowed or not. */
static void test_nonfinite_packed(const char *tmp_dir) {
    static const char meta[] = "\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seed001\",\"in_dim\":\"64\","
                               "\"hidden_dim\":\"64\",\"out_dim\":\"2\",\"act\":\"relu\"";
    static const spec f32[] = {{"layers.0.weight", "F32", "64,64", 0, 16384},
                               {"layers.0.bias", "F32", "64", 16384, 16640},
                               {"layers.2.weight", "F32", "2,64", 16640, 17152},
                               {"layers.2.bias", "F32", "2", 17152, 17160}};
    static const spec bf16[] = {{"layers.0.weight", "BF16", "64,64", 0, 8192},
                                {"layers.0.bias", "F32", "64", 8192, 8448},
                                {"layers.2.weight", "F32", "2,64", 8448, 8960},
                                {"layers.2.bias", "F32", "2", 8960, 8968}};
    static const spec i8[] = {{"layers.0.weight", "I8", "64,64", 0, 4096},
                              {"layers.0.weight_scale", "F32", "64", 4096, 4352},
                              {"layers.0.bias", "F32", "64", 4352, 4608},
                              {"layers.2.weight", "F32", "2,64", 4608, 5120},
                              {"layers.2.bias", "F32", "2", 5120, 5128}};
    static const char *const names[3] = {"F32", "BF16", "I8"};
    const char *want[3] = {"tensor 'layers.0.weight' holds a NaN or Inf (element 2567)", /* row 40, column 7 */
                           "tensor 'layers.0.weight' holds a NaN or Inf (element 2567)",
                           "I8 tensor 'layers.0.weight' holds -128 (element 2567)"};
    static const long bytes[3] = {17160, 8968, 5128};
    vit_result code[3] = {VIT_ERR_NONFINITE, VIT_ERR_NONFINITE, VIT_ERR_FORMAT};
    char path[1024], label[128];
    vit_load_opts o;
    vit_model m;
    vit_result r;
    FILE *f;
    int dt;
    snprintf(path, sizeof path, "%s/nonfinite_packed.safetensors", tmp_dir);
    for (dt = 0; dt < 3; dt++) {
        size_t n = build(meta, dt == 0 ? f32 : dt == 1 ? bf16 : i8, dt == 2 ? 5 : 4, bytes[dt]), data = n - bytes[dt];
        float nan = NAN;
        if (dt == 0) memcpy(file + data + 4 * 2567, &nan, 4);
        else if (dt == 1) { file[data + 2 * 2567] = 0xc0; file[data + 2 * 2567 + 1] = 0x7f; } /* BF16 NaN */
        else {
            memset(file + data, 0x01, 4096); /* 0.25f's bytes hold 0x80 */
            file[data + 2567] = 0x80;
        }
        if (!(f = fopen(path, "wb")) || fwrite(file, 1, n, f) != n || fclose(f)) {
            failed++;
            printf("FAIL cannot write %s\n", path);
            return;
        }
        snprintf(label, sizeof label, "%s: a bad value in a packed dense weight, from a file", names[dt]);
        if ((r = vit_model_load_file(&m, path)) == VIT_OK) vit_model_free(&m);
        else expect_true(!m.arena.base && !m.blocks, "the model zeroed after the refusal");
        expect_err(r, code[dt], want[dt], label);
        snprintf(label, sizeof label, "%s: a bad value in a dense weight, from memory", names[dt]);
        expect_err(load(n), code[dt], want[dt], label);
        memset(&o, 0, sizeof o);
        o.allow_nonfinite = 1;
        snprintf(label, sizeof label, "%s: a bad value in a packed dense weight, allow_nonfinite", names[dt]);
        if ((r = vit_model_load_file_ex(&m, path, &o)) == VIT_OK) vit_model_free(&m);
        expect_err(r, dt < 2 ? VIT_OK : code[dt], dt < 2 ? NULL : want[dt], label);
    }
    remove(path);
}

/* NaN or Inf weights (F32, F16, BF16) are refused with the tensor named,
   unless allowed; float metadata that is 0 as a float32 is refused. */
static void test_nonfinite(const char *fixtures) {
    static const spec half[] = {{"layers.0.weight", "F16", "4,3", 0, 24}, {"layers.0.bias", "BF16", "4", 24, 32},
                                {"layers.2.weight", "F16", "2,4", 32, 48}, {"layers.2.bias", "F16", "2", 48, 52}};
    vit_load_opts o;
    vit_model m;
    size_t n, hl, i;
    float nan = NAN;
    unsigned char *f;
    char path[1024];
    memset(&o, 0, sizeof o);
    n = build(MLP_META, mlp_ok, 4, 104);
    memcpy(file + n - 104 + 4 * 13, &nan, 4); /* layers.0.bias[1] */
    expect_err(load(n), VIT_ERR_NONFINITE, "tensor 'layers.0.bias' holds a NaN or Inf (element 1)", "F32 NaN weight");
    o.allow_nonfinite = 1;
    expect_err(vit_model_load_memory_ex(&m, file, n, &o), VIT_OK, NULL, "F32 NaN weight allowed");
    if (m.arena.base) {
        expect_err(m.mlp_w.fc1_b.data[1] != m.mlp_w.fc1_b.data[1] ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL,
                   "the NaN loaded as asked");
        vit_model_free(&m);
    }
    n = build(MLP_META, half, 4, 52);
    hl = n - 52;
    for (i = 0; i < 52; i += 2) { file[hl + i] = 0x00; file[hl + i + 1] = 0x3c; } /* 1.0 */
    file[hl + 44] = 0x00; file[hl + 45] = 0x7e;                                  /* F16 NaN: layers.2.weight[6] */
    expect_err(load(n), VIT_ERR_NONFINITE, "tensor 'layers.2.weight' holds a NaN or Inf (element 6)", "F16 NaN weight");
    file[hl + 44] = 0x00; file[hl + 45] = 0x7c;                                  /* F16 +Inf */
    expect_err(load(n), VIT_ERR_NONFINITE, "'layers.2.weight' holds a NaN or Inf (element 6)", "F16 Inf weight");
    file[hl + 44] = 0xff; file[hl + 45] = 0x7b;                                  /* F16 65504, the largest finite */
    file[hl + 30] = 0x80; file[hl + 31] = 0xff;                                  /* BF16 -Inf: layers.0.bias[3] */
    expect_err(load(n), VIT_ERR_NONFINITE, "tensor 'layers.0.bias' holds a NaN or Inf (element 3)", "BF16 -Inf weight");
    file[hl + 30] = 0x7f; file[hl + 31] = 0x7f;                                  /* BF16 3.39e38, finite */
    expect_err(load(n), VIT_OK, NULL, "largest finite F16 and BF16 load");
    /* ln_eps = 1e-50 is in (0, 1) but 0 as a float32 */
    f = build_vit(1, 0, &n, "1e-50");
    expect_err(vit_model_load_memory(&m, f, n), VIT_ERR_FORMAT, "'ln_eps' = \"1e-50\" is 0 as a float", "ln_eps 1e-50");
    free(f);
    snprintf(path, sizeof path, "%s/naming/hf_cls/model.safetensors", fixtures);
    memset(&o, 0, sizeof o);
    o.config_text = "{\"layer_norm_eps\": 1e-50}";
    o.config_size = strlen(o.config_text);
    expect_err(vit_model_load_file_ex(&m, path, &o), VIT_ERR_FORMAT,
               "'layer_norm_eps' is not a number in (0, 1) that a float32 holds", "config.json layer_norm_eps 1e-50");
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
        printf("FAIL half conversion: %g %g %g %g\n", m.mlp_w.fc1_w.data[5], m.mlp_w.fc1_b.data[0],
               m.mlp_w.fc1_b.data[1], m.mlp_w.fc2_b.data[0]);
    }
    vit_model_free(&m);
}

/* BF16 and I8 dense weights stay as stored, in place; the rest is widened.
   I8 needs a good '<name>_scale'. */
static void test_low(void) {
    static const spec bf[] = {{"layers.0.weight", "BF16", "4,3", 0, 24}, {"layers.0.bias", "BF16", "4", 24, 32},
                              {"layers.2.weight", "F32", "2,4", 32, 64}, {"layers.2.bias", "F32", "2", 64, 72}};
    static const spec i8[] = {{"layers.0.weight", "I8", "4,3", 0, 12},
                              {"layers.0.weight_scale", "F32", "4", 12, 28},
                              {"layers.0.bias", "F32", "4", 28, 44},
                              {"layers.2.weight", "F32", "2,4", 44, 76},
                              {"layers.2.bias", "F32", "2", 76, 84}};
    static const spec noscale[] = {{"layers.0.weight", "I8", "4,3", 0, 12}, {"layers.0.bias", "F32", "4", 12, 28},
                                   {"layers.2.weight", "F32", "2,4", 28, 60}, {"layers.2.bias", "F32", "2", 60, 68}};
    static const spec badscale[] = {{"layers.0.weight", "I8", "4,3", 0, 12},
                                    {"layers.0.weight_scale", "F16", "4", 12, 20},
                                    {"layers.0.bias", "F32", "4", 20, 36},
                                    {"layers.2.weight", "F32", "2,4", 36, 68},
                                    {"layers.2.bias", "F32", "2", 68, 76}};
    static const spec shortscale[] = {{"layers.0.weight", "I8", "4,3", 0, 12},
                                      {"layers.0.weight_scale", "F32", "3", 12, 24},
                                      {"layers.0.bias", "F32", "4", 24, 40},
                                      {"layers.2.weight", "F32", "2,4", 40, 72},
                                      {"layers.2.bias", "F32", "2", 72, 80}};
    static const spec wide[] = {{"layers.0.weight", "I8", "1,65537", 0, 65537},
                                {"layers.0.weight_scale", "F32", "1", 65540, 65544},
                                {"layers.0.bias", "F32", "1", 65544, 65548},
                                {"layers.2.weight", "F32", "1,1", 65548, 65552},
                                {"layers.2.bias", "F32", "1", 65552, 65556}};
    vit_model m;
    size_t n = build(MLP_META, bf, 4, 72), hl = n - 72;
    float zero = 0.0f;
    if (vit_model_load_memory(&m, file, n) != VIT_OK) {
        failed++;
        printf("FAIL bf16 load: %s\n", vit_last_error());
    } else {
        vit_tensor *w = &m.mlp_w.fc1_w;
        expect_true(w->dtype == VIT_DTYPE_BF16 && !w->data && w->q == file + hl &&
                        m.mlp_w.fc1_b.dtype == VIT_DTYPE_F32 && m.mlp_w.fc1_b.data[1] == 0.25f &&
                        m.n_kept[VIT_DTYPE_BF16] == 12,
                    "a BF16 dense weight stays BF16 in place, its bias is widened");
        vit_model_free(&m);
    }
    n = build(MLP_META, i8, 5, 84);
    hl = n - 84;
    memset(file + hl, 0x7f, 12); /* 0.25f's bytes hold 0x80, an I8 value of -128, which the loader refuses */
    if (vit_model_load_memory(&m, file, n) != VIT_OK) {
        failed++;
        printf("FAIL i8 load: %s\n", vit_last_error());
    } else {
        vit_tensor *w = &m.mlp_w.fc1_w;
        expect_true(w->dtype == VIT_DTYPE_I8 && !w->data && w->q == file + hl &&
                        w->scale == (const float *)(const void *)(file + hl + 12) && m.n_kept[VIT_DTYPE_I8] == 12,
                    "an I8 dense weight and its scales stay in place");
        vit_model_free(&m);
    }
    expect_err(load(build(MLP_META, noscale, 4, 68)), VIT_ERR_MISSING, "no scale tensor 'layers.0.weight_scale'",
               "I8 without scales");
    expect_err(load(build(MLP_META, badscale, 5, 76)), VIT_ERR_FORMAT, "must be F32 of shape [4]", "F16 scales");
    expect_err(load(build(MLP_META, shortscale, 5, 80)), VIT_ERR_FORMAT, "must be F32 of shape [4]",
               "3 scales for 4 rows");
    n = build(MLP_META, i8, 5, 84);
    memset(file + n - 84, 0x7f, 12);
    memcpy(file + n - 84 + 12 + 8, &zero, 4);
    expect_err(load(n), VIT_ERR_FORMAT, "must be > 0 and at most", "a zero scale");
    n = build(MLP_META, i8, 5, 84);
    memset(file + n - 84, 0x7f, 12);
    file[n - 84 + 5] = 0x80;
    expect_err(load(n), VIT_ERR_FORMAT, "holds -128 (element 5); I8 values are -127..127", "an I8 value of -128");
    expect_err(
        load(build(
            "\"format\":\"vit.h\",\"kind\":\"mlp\",\"naming\":\"seed001\",\"in_dim\":\"65537\",\"hidden_dim\":\"1\","
            "\"out_dim\":\"1\",\"act\":\"relu\"",
            wide, 5, 65556)),
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
    expect_err(vit_model_forward(&m, &act, &x, NULL, &y), VIT_ERR_SHAPE, "expected last dimension 3",
               "wrong input shape");
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
    expect_err(vit_model_forward(&m, &act, &x, NULL, &y), VIT_ERR_NONFINITE, "element 12 is infinite",
               "Inf input in a vector");
    x.data[12] = 0.0f;
    x.data[29] = NAN;
    expect_err(vit_model_forward(&m, &act, &x, NULL, &y), VIT_ERR_NONFINITE, "element 29 is NaN",
               "NaN input in the tail");
    x.data[29] = 0.0f;
    vit_arena_init(&small, tiny, sizeof tiny);
    expect_err(vit_model_forward(&m, &small, &x, NULL, &y), VIT_ERR_OOM, "needed", "activation arena too small");
    expect_err(small.used == 0 ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL, "arena rewound after a failure");
    expect_err(vit_model_memory(&m, &x, NULL, &bytes), VIT_OK, NULL, "memory query");
    expect_err(vit_model_forward(&m, &act, &x, NULL, &y), VIT_OK, NULL, "valid forward");
    expect_err(
        y.ndim == 3 && y.shape[2] == 2 && y.data[0] == 0.25f * 0.25f * 4 + 0.25f /* x row 0 is zero */ ? VIT_OK
                                                                                                       : VIT_ERR_ARG,
        VIT_OK, NULL, "forward value");
    expect_err(vit_model_forward(&m, &act, NULL, NULL, &y), VIT_ERR_ARG, NULL, "NULL input");
    {
        /* A counting arena has no memory to run in; a rank-5 input has no
           shape[4]; a bad view is empty, not an abort. */
        vit_arena count;
        vit_tensor x5 = x, v;
        vit_arena_init(&count, NULL, 0);
        expect_err(vit_model_forward(&m, &count, &x, NULL, &y), VIT_ERR_ARG, "counting arena",
                   "forward on a counting arena");
        x5.ndim = 5;
        expect_err(vit_model_memory(&m, &x5, NULL, &bytes), VIT_ERR_SHAPE, "input has 5 dimensions",
                   "memory of a rank-5 input");
        expect_err(vit_model_forward(&m, &act, &x5, NULL, &y), VIT_ERR_SHAPE, "input has 5 dimensions",
                   "forward of a rank-5 input");
        v = vit_tensor_view(&x, 2);
        expect_err(v.data == NULL && v.ndim == 0 ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL,
                   "view past the outermost dimension is empty");
        v = vit_tensor_view(&x, -1);
        expect_err(v.data == NULL && vit_model_forward(&m, &act, &v, NULL, &y) == VIT_ERR_ARG ? VIT_OK : VIT_ERR_ARG,
                   VIT_OK, NULL, "view at -1 is empty and refused");
        v = vit_tensor_view(&x, 1);
        expect_err(v.data == x.data + 15 && v.ndim == 2 && v.shape[0] == 5 ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL,
                   "view 1");
    }
    vit_model_free(&m);
    {
        /* A model zeroed by vit_model_free or a failed load has sizes 0:
           every call on it is refused, none divides by them. */
        vit_model z;
        int k;
        for (k = 0; k < 2; k++) {
            if (k) expect_err(vit_model_load_memory(&z, file, 4), VIT_ERR_FORMAT, NULL, "a failed load");
            else memcpy(&z, &m, sizeof z); /* freed above */
            expect_err(vit_model_forward(&z, &act, &x, NULL, &y), VIT_ERR_ARG, "not loaded",
                       "forward on a zeroed model");
            expect_err(vit_model_memory(&z, &x, NULL, &bytes), VIT_ERR_ARG, "not loaded", "memory of a zeroed model");
            expect_err(vit_model_set_image_size(&z, 32), VIT_ERR_ARG, "not loaded", "set_image_size on a zeroed model");
        }
    }
    vit_arena_free(&act);
}

/* Messages that state the problem plainly. */
static void test_messages(const char *fixtures) {
    static unsigned char buf[512];
    vit_arena a, count;
    vit_sdpa_params sp;
    vit_tensor x, y;
    vit_model m;
    vit_load_opts o;
    char path[1024];
    float one = 1.0f;
    /* An arena of 256 bytes holding 100: the next one starts at 128, so 128
       bytes are left for it, not 156. */
    vit_arena_init(&a, buf, sizeof buf);
    a.size = 256;
    vit_arena_alloc(&a, 100);
    expect_err(vit_arena_alloc(&a, 150) ? VIT_OK : VIT_ERR_OOM, VIT_ERR_OOM, "needed 150 bytes, 128 available",
               "arena-full message counts alignment");
    /* SDPA takes any C: it does not ask for (B, N, 0). */
    memset(&sp, 0, sizeof sp);
    memset(&x, 0, sizeof x);
    x.data = &one; x.ndim = 2; x.shape[0] = 1; x.shape[1] = 1;
    vit_arena_init(&count, NULL, 0);
    expect_err(vit_sdpa_forward(&count, &sp, &x, &y, NULL), VIT_ERR_SHAPE, "expected (B, N, C)", "SDPA shape message");
    /* Too large an input: a smaller batch is the hint only when B > 1. */
    x.ndim = 3; x.shape[0] = 1; x.shape[1] = 50000; x.shape[2] = 1;
    expect_err(vit_sdpa_forward(&count, &sp, &x, &y, NULL), VIT_ERR_OVERFLOW, "the input is too large even alone",
               "B = 1: no smaller batch");
    expect_err(strstr(vit_last_error(), "batch") ? VIT_ERR_ARG : VIT_OK, VIT_OK, NULL,
               "B = 1: the message does not say batch");
    x.shape[0] = 2;
    expect_err(vit_sdpa_forward(&count, &sp, &x, &y, NULL), VIT_ERR_OVERFLOW, "use a smaller batch",
               "B = 2: a smaller batch");
    /* An id2label key past any class count, as given. */
    snprintf(path, sizeof path, "%s/naming/hf_cls/model.safetensors", fixtures);
    memset(&o, 0, sizeof o);
    o.config_text = "{\"id2label\": {\"0\": \"a\", \"999999999\": \"b\"}}";
    o.config_size = strlen(o.config_text);
    expect_err(vit_model_load_file_ex(&m, path, &o), VIT_ERR_FORMAT, "'id2label' key \"999999999\" is out of range",
               "id2label key out of range");
    /* A 2-channel model asks for a 2-channel image: the caller's mistake,
       said before the file is read, not blamed on the image. */
    snprintf(path, sizeof path, "%s/maps/tiny.png", fixtures);
    vit_arena_init(&count, NULL, 0);
    expect_err(vit_image_load(&count, path, 2, &x), VIT_ERR_ARG,
               "image: 2 channels asked for; an image loads as 1 (grey) or 3 (RGB)", "2 channels asked of an image");
    expect_err(strstr(vit_last_error(), path) ? VIT_ERR_ARG : VIT_OK, VIT_OK, NULL,
               "the message does not blame the file");
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
    buf[8] = 0xff; buf[9] = 0x0f;
    expect_err(vit_npy_load_memory(&a, buf, n, &t), VIT_ERR_FORMAT, "longer than the file", "npy header length");
    expect_err(vit_npy_load(&a, "/nonexistent/x.npy", &t), VIT_ERR_IO, "cannot open", "npy missing file");
    vit_arena_free(&a);
}

/* A version-1 .npy whose header is `dict` (padded with spaces and '\n' as
   numpy pads it), then `values` floats 0.5, into buf; its size. */
static size_t npy_file(unsigned char *buf, const char *dict, size_t values) {
    size_t n = strlen(dict), hl = (10 + n + 1 + 63) / 64 * 64 - 10, i;
    float v = 0.5f;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(hl & 255);
    buf[9] = (unsigned char)(hl >> 8);
    memset(buf + 10, ' ', hl);
    memcpy(buf + 10, dict, n);
    buf[10 + hl - 1] = '\n';
    for (i = 0; i < values; i++) memcpy(buf + 10 + hl + 4 * i, &v, 4);
    return 10 + hl + 4 * values;
}

/* Headers numpy refuses are refused; the shape is read whole. */
static void test_npy_strict(const char *tmp_dir) {
    static const struct { const char *dict; vit_result r; const char *msg;
    } bad[] = {
        {"'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ", VIT_ERR_FORMAT, "not a Python dict"},
        {"{'descr': '<f4junk', 'fortran_order': False, 'shape': (2, 3), }", VIT_ERR_DTYPE, "dtype '<f4junk'"},
        {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2, 3), }", VIT_ERR_FORMAT, "not True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (12345678901, 3), }", VIT_ERR_SHAPE,
         "larger than 2147483647"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", VIT_ERR_FORMAT, "(6) is an integer, not a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (02, 3), }", VIT_ERR_FORMAT, "not a tuple of integers"},
        {"{'descr': '<f4', 'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", VIT_ERR_FORMAT,
         "'descr' appears twice"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", VIT_ERR_FORMAT, "key 'x'"},
        {"{'descr': '<f4', 'shape': (2, 3), }", VIT_ERR_FORMAT, "has no 'fortran_order'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } junk", VIT_ERR_FORMAT,
         "bytes after the header's dict"}};
    static const struct { const char *dict; int ndim, d0, d1; } good[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 2, 2, 3},
        {"{\"descr\":\"<f4\",\"shape\":(6,),\"fortran_order\":False}", 1, 6, 1},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 1, 1, 1}};
    static unsigned char buf[16384];
    char label[160], path[1024];
    vit_arena a, count;
    vit_tensor t;
    size_t n;
    int i;
    FILE *f;
    vit_arena_init_alloc(&a, 4096);
    for (i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        n = npy_file(buf, bad[i].dict, 6);
        snprintf(label, sizeof label, "npy header refused: %s", bad[i].dict);
        expect_err(vit_npy_load_memory(&a, buf, n, &t), bad[i].r, bad[i].msg, label);
    }
    for (i = 0; i < (int)(sizeof good / sizeof good[0]); i++) {
        n = npy_file(buf, good[i].dict, 6);
        snprintf(label, sizeof label, "npy header read: %s", good[i].dict);
        expect_err(vit_npy_load_memory(&a, buf, n, &t) == VIT_OK && t.ndim == good[i].ndim &&
                           t.shape[0] == good[i].d0 && t.shape[1] == good[i].d1 && t.data[0] == 0.5f
                       ? VIT_OK
                       : VIT_ERR_ARG,
                   VIT_OK, NULL, label);
    }
    /* numpy's header limit: a version-2 header of 20000 bytes */
    memcpy(buf, "\x93NUMPY\x02\x00\x20\x4e\x00\x00", 12);
    expect_err(vit_npy_load_memory(&a, buf, sizeof buf, &t), VIT_ERR_FORMAT, "numpy reads at most 10000",
               "npy header over 10000 bytes");
    /* From a file: the header alone with a counting arena; a header whose
       data the file does not hold is refused before anything is read. */
    snprintf(path, sizeof path, "%s/strict.npy", tmp_dir);
    n = npy_file(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 32, 32), }", 3 * 32 * 32);
    if ((f = fopen(path, "wb"))) { fwrite(buf, 1, n, f); fclose(f); }
    vit_arena_init(&count, NULL, 0);
    expect_err(vit_npy_load(&count, path, &t) == VIT_OK && t.ndim == 4 && t.shape[1] == 3 && t.shape[3] == 32 &&
                       count.used == 3 * 32 * 32 * 4
                   ? VIT_OK
                   : VIT_ERR_ARG,
               VIT_OK, NULL, "npy shape from the header alone (counting arena)");
    expect_err(vit_npy_load(&a, path, &t), VIT_ERR_OOM, "needed 12288 bytes",
               "npy too big for the arena: refused before reading");
    if ((f = fopen(path, "wb"))) { fwrite(buf, 1, n - 4, f); fclose(f); }
    expect_err(vit_npy_load(&count, path, &t), VIT_ERR_FORMAT, "shape needs 3072 values, the file holds 3071",
               "npy file shorter than its header says");
    remove(path);
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

/* ---- failed writes leave the previous file intact ---- */

#ifdef __linux__
/* 1 when path holds exactly the floats v[0..n) as a .npy. */
static int npy_holds(const char *path, const float *v, size_t n) {
    vit_arena a;
    vit_tensor t;
    int ok;
    if (vit_arena_init_alloc(&a, n * sizeof(float) + 4096) != VIT_OK) return 0;
    ok = vit_npy_load(&a, path, &t) == VIT_OK && vit_tensor_numel(&t) == n && !memcmp(t.data, v, n * sizeof(float));
    vit_arena_free(&a);
    return ok;
}

static int file_exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* Saves a good .npy and PNG in dir, then makes each write fail (`how`
   arranges it, `undo` ends it): the calls return VIT_ERR_IO with errno's
   text `why`, the good files survive, no temporary file is left. */
static void failed_writes(const char *dir, const char *why, void (*how)(void), void (*undo)(void)) {
    char npy[1024], png[1024], tmp[1100], label[256];
    static float good[8] = {1, 2, 3, 4, 5, 6, 7, 8}, map[4] = {0, 1, 2, 3};
    float *big = (float *)calloc(1 << 18, sizeof(float));
    int32_t shape[1] = {1 << 18};
    vit_tensor t, bt;
    unsigned char before[4096], after[4096];
    size_t nb = 0, na = 0;
    FILE *f;
    int k;
    snprintf(npy, sizeof npy, "%s/keep.npy", dir);
    snprintf(png, sizeof png, "%s/keep.png", dir);
    memset(&t, 0, sizeof t);
    t.data = good; t.ndim = 1; t.shape[0] = 8;
    memset(&bt, 0, sizeof bt);
    bt.data = big; bt.ndim = 1; bt.shape[0] = shape[0];
    expect_err(vit_npy_save(npy, &t), VIT_OK, NULL, "a good .npy saved");
    expect_err(vit_png_heatmap(png, map, 2, 2, 4), VIT_OK, NULL, "a good PNG saved");
    if ((f = fopen(png, "rb"))) { nb = fread(before, 1, sizeof before, f); fclose(f); }
    how();
    for (k = 0; k < 2; k++) { /* a small write fails at the flush or close, a big one in fwrite */
        snprintf(label, sizeof label, "%s .npy save fails (%s)", k ? "big" : "small", why);
        t.shape[0] = k ? 8 : 7;
        expect_err(vit_npy_save(npy, k ? &bt : &t), VIT_ERR_IO, why, label);
    }
    expect_err(vit_png_heatmap(png, map, 2, 2, 300), VIT_ERR_IO, why, "PNG save fails");
    undo();
    expect_err(npy_holds(npy, good, 8) ? VIT_OK : VIT_ERR_IO, VIT_OK, NULL, "the previous .npy is intact");
    if ((f = fopen(png, "rb"))) { na = fread(after, 1, sizeof after, f); fclose(f); }
    expect_err(nb && na == nb && !memcmp(before, after, nb) ? VIT_OK : VIT_ERR_IO, VIT_OK, NULL,
               "the previous PNG is intact");
    snprintf(tmp, sizeof tmp, "%s/.vit-%ld-0.tmp", dir, (long)getpid());
    expect_err(file_exists(tmp) ? VIT_ERR_IO : VIT_OK, VIT_OK, NULL, "no temporary file left");
    /* Over a good file, a save replaces it whole. */
    t.shape[0] = 7;
    expect_err(vit_npy_save(npy, &t) == VIT_OK && npy_holds(npy, good, 7) ? VIT_OK : VIT_ERR_IO, VIT_OK, NULL,
               "a save replaces the file");
    remove(npy);
    remove(png);
    free(big);
}

/* A file size limit makes writes past 100 bytes fail with EFBIG, as a
   full disk makes them fail with ENOSPC. */
static struct rlimit saved_limit;
static void limit_on(void) {
    struct rlimit l;
    getrlimit(RLIMIT_FSIZE, &saved_limit);
    l = saved_limit;
    l.rlim_cur = 100;
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &l);
}
static void limit_off(void) { setrlimit(RLIMIT_FSIZE, &saved_limit); }

/* A disk filled to the last byte: dir must be a small file system of its
   own (tests/run.sh mounts a tmpfs). */
static char filler[1100];
static void fill_disk(void) {
    static char zeros[4096];
    FILE *f = fopen(filler, "wb");
    while (f && fwrite(zeros, 1, sizeof zeros, f) == sizeof zeros) {}
    while (f && fwrite(zeros, 1, 1, f) == 1 && fflush(f) == 0) {}
    if (f) fclose(f);
}
static void empty_disk(void) { remove(filler); }

/* What a save replaces: through a symbolic link, the file it names (the
   link stays, a dangling one's file is created, a loop is refused); an
   existing file's mode is kept, a new one's is 0666 less the umask; a
   name of 250 bytes, and a path of nearly 4,096, are saved (the temporary
   file's name must stay within NAME_MAX, its path within PATH_MAX). */
static char long_path[4200];
static void test_write_targets(const char *dir) {
    static float v[3] = {1, 2, 3}, w[2] = {4, 5};
    char target[1100], link1[1100], link2[1100], abs1[2200], loop[1100], made[1100], name[256];
    vit_tensor t, u;
    struct stat sb;
    mode_t old_mask = umask(022);
    size_t n;
    int k;
    memset(&t, 0, sizeof t);
    t.data = v; t.ndim = 1; t.shape[0] = 3;
    u = t;
    u.data = w; u.shape[0] = 2;
    snprintf(target, sizeof target, "%s/target.npy", dir);
    snprintf(link1, sizeof link1, "%s/link1.npy", dir);
    snprintf(link2, sizeof link2, "%s/link2.npy", dir);
    remove(target); remove(link1); remove(link2);
    /* link2 -> link1 (absolute) -> target.npy (relative to the link's folder) */
    expect_err(vit_npy_save(target, &t), VIT_OK, NULL, "a file to link to");
    abs1[0] = 0;
    if (dir[0] != '/' && !getcwd(abs1, 1024)) abs1[0] = 0;
    snprintf(abs1 + strlen(abs1), sizeof abs1 - strlen(abs1), "%s%s", dir[0] != '/' ? "/" : "", link1);
    expect_true(symlink("target.npy", link1) == 0 && symlink(abs1, link2) == 0, "links made");
    expect_err(vit_npy_save(link2, &u), VIT_OK, NULL, "a save through two links");
    expect_true(lstat(link1, &sb) == 0 && S_ISLNK(sb.st_mode) && lstat(link2, &sb) == 0 && S_ISLNK(sb.st_mode),
                "the links are still links");
    expect_true(npy_holds(target, w, 2), "the file the links name holds the new data");
    remove(target);
    expect_err(vit_npy_save(link1, &t), VIT_OK, NULL, "a save through a dangling link");
    expect_true(lstat(link1, &sb) == 0 && S_ISLNK(sb.st_mode) && npy_holds(target, v, 3),
                "a dangling link: the file it names is created, the link stays");
    snprintf(loop, sizeof loop, "%s/loop.npy", dir);
    remove(loop);
    expect_true(symlink("loop.npy", loop) == 0, "a link to itself made");
    expect_err(vit_npy_save(loop, &t), VIT_ERR_IO, "symbolic links", "a link loop refused");
    remove(loop); remove(link1); remove(link2);

    /* modes: kept over a 0600 and a 0666 file; a new file's from the umask */
    for (k = 0; k < 2; k++) {
        mode_t want = k ? 0666 : 0600;
        chmod(target, want);
        expect_err(vit_npy_save(target, &u), VIT_OK, NULL, "a save over a file of another mode");
        expect_true(stat(target, &sb) == 0 && (sb.st_mode & 07777) == want, k ? "mode 0666 kept" : "mode 0600 kept");
    }
    remove(target);
    umask(027);
    expect_err(vit_npy_save(target, &u), VIT_OK, NULL, "a new file");
    expect_true(stat(target, &sb) == 0 && (sb.st_mode & 07777) == 0640, "a new file: 0666 less the umask 027");
    remove(target);
    umask(old_mask);

    /* a 250-byte name; a path of nearly 4,096 bytes made of 200-byte folder names */
    memset(name, 'n', 250);
    name[250] = 0;
    memcpy(name + 246, ".npy", 5);
    snprintf(made, sizeof made, "%s/%s", dir, name);
    expect_err(vit_npy_save(made, &t), VIT_OK, NULL, "a 250-byte file name");
    expect_true(npy_holds(made, v, 3), "a 250-byte file name: saved");
    remove(made);
    n = (size_t)snprintf(long_path, sizeof long_path, "%s", dir);
    memset(name, 'd', 200);
    name[200] = 0;
    while (n + 201 + 251 < 4090) {
        n += (size_t)snprintf(long_path + n, sizeof long_path - n, "/%s", name);
        mkdir(long_path, 0777);
    }
    memset(name, 'n', 250);
    memcpy(name + 246, ".npy", 5);
    snprintf(long_path + n, sizeof long_path - n, "/%s", name);
    expect_err(vit_npy_save(long_path, &t), VIT_OK, NULL, "a path of 3,890 to 4,090 bytes");
    expect_true(npy_holds(long_path, v, 3), "a long path: saved");
    remove(long_path);
    while (n > strlen(dir)) { /* the folders, innermost first */
        long_path[n] = 0;
        rmdir(long_path);
        while (n > 0 && long_path[n] != '/') n--;
    }
}

/* A checkpoint in a folder whose path is past 1,024 bytes: its config.json
   is still read (timm's crop_pct 0.9 reaches the metadata), its name not
   cut to a fixed buffer's size. */
static void test_long_config_path(const char *fixtures, const char *dir) {
    static const char *files[2] = {"model.safetensors", "config.json"};
    static unsigned char buf[1 << 17];
    char from[1100], *deep = long_path;
    size_t n = (size_t)snprintf(deep, sizeof long_path, "%s", dir), got;
    vit_model m;
    const char *crop;
    FILE *f, *g;
    int k, ok = 1;
    while (n < 1100) {
        n += (size_t)snprintf(deep + n, sizeof long_path - n, "/%0200d", 0);
        mkdir(deep, 0777);
    }
    for (k = 0; k < 2; k++) {
        snprintf(from, sizeof from, "%s/naming/timm_avg/%s", fixtures, files[k]);
        snprintf(deep + n, sizeof long_path - n, "/%s", files[k]);
        f = fopen(from, "rb");
        g = fopen(deep, "wb");
        got = f ? fread(buf, 1, sizeof buf, f) : 0;
        ok = ok && f && g && got > 0 && got < sizeof buf && fwrite(buf, 1, got, g) == got;
        if (f) fclose(f);
        if (g) fclose(g);
    }
    expect_true(ok, "a checkpoint copied into a folder of 1,100 bytes");
    snprintf(deep + n, sizeof long_path - n, "/model.safetensors");
    expect_err(vit_model_load_file(&m, deep), VIT_OK, NULL, "a checkpoint in a folder of 1,100 bytes");
    crop = vit_model_meta(&m, "input_crop_pct");
    expect_true(crop && !strcmp(crop, "0.9"), "its config.json read (crop_pct 0.9)");
    vit_model_free(&m);
    for (k = 0; k < 2; k++) {
        snprintf(deep + n, sizeof long_path - n, "/%s", files[k]);
        remove(deep);
    }
    while (n > strlen(dir)) {
        deep[n] = 0;
        rmdir(deep);
        while (n > 0 && deep[n] != '/') n--;
    }
}
#endif

/* ---- reading files: checked before they are read ---- */

/* A directory, a missing file, a file too large to read (a sparse 3 GB
   "PNG", Linux only) and a model read into memory rather than mapped:
   truncating the file after loading must not matter then. */
static void test_reads(const char *fixtures, const char *tmp_dir) {
    char path[1024], copy[1024];
    vit_model m, mm;
    vit_arena a;
    vit_tensor t, x, y, y2;
    vit_load_opts o;
    FILE *f, *g;
    size_t n;
    static unsigned char buf[1 << 20];
    vit_arena_init_alloc(&a, 1 << 20);
    expect_err(vit_model_load_file(&m, tmp_dir), VIT_ERR_IO, "is a directory", "model: a directory");
    expect_err(vit_npy_load(&a, tmp_dir, &t), VIT_ERR_IO, "is a directory", "npy: a directory");
    expect_err(vit_image_load(&a, tmp_dir, 3, &t), VIT_ERR_IO, "is a directory", "image: a directory");
    memset(&o, 0, sizeof o);
    o.config_path = tmp_dir;
    snprintf(path, sizeof path, "%s/naming/timm_avg/model.safetensors", fixtures);
    expect_err(vit_model_load_file_ex(&m, path, &o), VIT_ERR_IO, "is a directory", "config.json: a directory");
    expect_err(vit_model_load_file(&m, "/nonexistent/m.safetensors"), VIT_ERR_IO,
               "cannot open (No such file or directory)", "model: a missing file");
    expect_err(vit_npy_load(&a, "/nonexistent/x.npy", &t), VIT_ERR_IO, "cannot open (No such file or directory)",
               "npy: a missing file");
    expect_err(vit_image_load(&a, "/nonexistent/x.png", 3, &t), VIT_ERR_IO, "cannot open (No such file or directory)",
               "image: a missing file");
#ifdef __linux__
    snprintf(copy, sizeof copy, "%s/sparse.png", tmp_dir);
    if ((f = fopen(copy, "wb"))) {
        int ok = fseek(f, 3L << 30, SEEK_SET) == 0 && fputc(0, f) == 0;
        fclose(f);
        if (ok)
            expect_err(vit_image_load(&a, copy, 3, &t), VIT_ERR_UNSUPPORTED,
                       "3221225473 bytes is more than the 2147483647", "image: 3 GB refused unread");
        remove(copy);
    }
#endif
    /* read_whole: the weights are a copy, the file can change under them. */
    snprintf(path, sizeof path, "%s/mha_sep1.safetensors", fixtures);
    snprintf(copy, sizeof copy, "%s/read_whole.safetensors", tmp_dir);
    f = fopen(path, "rb");
    g = fopen(copy, "wb");
    n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (g) fwrite(buf, 1, n, g);
    if (f) fclose(f);
    if (g) fclose(g);
    o.config_path = NULL;
    o.read_whole = 1;
    expect_err(vit_model_load_file_ex(&m, copy, &o), VIT_OK, NULL, "read_whole load");
    expect_err(m.map == NULL && m.file_buf.base ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL, "read_whole: not mapped");
    expect_err(vit_model_load_file(&mm, path), VIT_OK, NULL, "mapped load");
    if ((g = fopen(copy, "wb"))) fclose(g); /* truncated to 0 bytes */
    {
        int32_t shape[3] = {2, 3, 0};
        size_t i;
        shape[2] = m.mha.dim;
        vit_tensor_init(&a, &x, 3, shape);
        for (i = 0; i < vit_tensor_numel(&x); i++) x.data[i] = (float)(i % 5) - 2.0f;
        expect_err(vit_model_forward(&m, &a, &x, NULL, &y), VIT_OK, NULL,
                   "read_whole: forward after the file is truncated");
        expect_err(vit_model_forward(&mm, &a, &x, NULL, &y2), VIT_OK, NULL, "mapped: forward");
        expect_err(!memcmp(y.data, y2.data, vit_tensor_numel(&y) * sizeof(float)) ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL,
                   "read_whole equals mapped");
    }
    vit_model_free(&m);
    vit_model_free(&mm);
    remove(copy);
    vit_arena_free(&a);
}

/* Saving into a missing folder or over a directory; then, on Linux,
   writes that fail (a file size limit, /dev/full, or with full_dir a file
   system filled to the last byte). */
static void test_writes(const char *tmp_dir, const char *full_dir) {
    static float v[2] = {1, 2};
    vit_tensor t;
    memset(&t, 0, sizeof t);
    t.data = v; t.ndim = 1; t.shape[0] = 2;
    expect_err(vit_npy_save("/nonexistent/dir/x.npy", &t), VIT_ERR_IO,
               "cannot create a file beside it (No such file or directory)", "save into a missing folder");
    expect_err(vit_npy_save(tmp_dir, &t), VIT_ERR_IO, "is a directory", "save over a directory");
#ifdef __linux__
    if (full_dir) {
        snprintf(filler, sizeof filler, "%s/filler", full_dir);
        failed_writes(full_dir, "No space left on device", fill_disk, empty_disk);
        return;
    }
    failed_writes(tmp_dir, "File too large", limit_on, limit_off);
    if (file_exists("/dev/full")) /* a device is written in place: there, every write fails */
        expect_err(vit_npy_save("/dev/full", &t), VIT_ERR_IO, "No space left on device", "save to /dev/full");
    test_write_targets(tmp_dir);
#else
    (void)full_dir;
#endif
}

int main(int argc, char **argv) {
    if (argc > 3 && !strcmp(argv[2], "--full-disk")) { /* tests/run.sh, on a small file system of its own */
        test_writes(argv[3], argv[3]);
        printf("test_errors --full-disk: %d passed, %d failed\n", passed, failed);
        return failed != 0 || passed == 0;
    }
    test_reads(argc > 1 ? argv[1] : "tests/fixtures", argc > 2 ? argv[2] : "build");
    test_writes(argc > 2 ? argv[2] : "build", NULL);
#ifdef __linux__
    test_long_config_path(argc > 1 ? argv[1] : "tests/fixtures", argc > 2 ? argv[2] : "build");
#endif
    test_headers();
    test_duplicates();
    test_decoys();
    test_scans();
    test_nonfinite(argc > 1 ? argv[1] : "tests/fixtures");
    test_nonfinite_packed(argc > 2 ? argv[2] : "build");
    test_half();
    test_low();
    test_inputs();
    test_messages(argc > 1 ? argv[1] : "tests/fixtures");
    test_npy();
    test_npy_strict(argc > 2 ? argv[2] : "build");
    test_truncation(argc > 1 ? argv[1] : "tests/fixtures", "mha_sep1", 1);
    test_truncation(argc > 1 ? argv[1] : "tests/fixtures", "vit_tv", 61);
    printf("test_errors: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

/* The kind registry: every kind has a name, a description and an input
   shape; files written before vit.h 0.2 (old kind, naming and key strings)
   load as today's names; metadata is checked against each kind's schema
   (range, type, the float it becomes), and an unknown naming is refused
   with the namings the kind has. Usage: test_registry [FIXTURE_DIR]. */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "check.h"

#include <string.h>

static char dir[1024];

static int load(vit_model *m, const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (vit_model_load_file(m, path) != VIT_OK) {
        printf("FAIL load %s: %s\n", path, vit_last_error());
        failed++;
        return 0;
    }
    return 1;
}

/* Loads `file`, checks its kind and naming, that describe() holds `text`,
   and that input_shape(B, n, w) is `want` (ndim sizes; ndim -1: not
   checked). */
static void check_kind(const char *file, vit_kind kind, const char *naming, const char *text, int32_t B, int32_t n,
                       int32_t w, int32_t ndim, const int32_t *want) {
    vit_model m;
    char buf[4096], label[256];
    int32_t shape[VIT_MAX_DIMS], nd = 0, i, same;
    size_t len;
    if (!load(&m, file)) return;
    snprintf(label, sizeof label, "%s: kind %s, naming %s", file, vit_kind_name(kind), naming);
    expect(m.kind == kind && !strcmp(m.naming, naming), label);
    len = vit_model_describe(&m, buf, sizeof buf);
    snprintf(label, sizeof label, "%s: describe has \"%s\"", file, text);
    expect(len == strlen(buf) && strstr(buf, text) != NULL, label);
    if (!strstr(buf, text)) printf("%s", buf);
    if (ndim >= 0) { /* -1: not checked */
        same = vit_model_input_shape(&m, B, n, w, &nd, shape) == VIT_OK && nd == ndim;
        for (i = 0; same && i < ndim; i++) same = shape[i] == want[i];
        snprintf(label, sizeof label, "%s: input shape for B %d, n %d, w %d", file, (int)B, (int)n, (int)w);
        expect(same, label);
    }
    vit_model_free(&m);
}

static void test_kinds(void) {
    static const int32_t vit_in[] = {2, 3, 32, 32}, mha_in[] = {1, 5, 24}, mlp_flat[] = {3, 784},
                         aft_in[] = {1, 11, 12}, emsa_in[] = {2, 35, 10}, sge_in[] = {1, 8, 4, 5},
                         outlook_in[] = {1, 4, 5, 12}, cls_in[] = {2, 16, 49}, sdpa_in[] = {1, 4, 9},
                         patch_in[] = {1, 3, 20, 20};
    check_kind("vit_tv.safetensors", VIT_KIND_VIT, "torchvision", "input (B, 3, 32, 32)", 2, 5, 7, 4, vit_in);
    check_kind("mha_004.safetensors", VIT_KIND_MHA, "einops", "scale_after_softmax=1", 1, 5, 7, 3, mha_in);
    check_kind("mlp002.safetensors", VIT_KIND_MLP, "seq_mlp", "input (B, 784)", 3, 5, 7, 2, mlp_flat);
    /* T is free, but AFT-local takes at most max_seqlen (11) tokens */
    check_kind("aft_local_a.safetensors", VIT_KIND_AFT, "default", "AFT-local", 1, 50, 7, 3, aft_in);
    /* EMSA with ratio > 1 takes its H x W grid, whatever n says */
    check_kind("emsa_r2.safetensors", VIT_KIND_EMSA, "default", "a 5x7 grid", 2, 3, 3, 3, emsa_in);
    check_kind("sge_a.safetensors", VIT_KIND_SGE, "default", "groups=4", 1, 4, 5, 4, sge_in);
    check_kind("outlook_s1.safetensors", VIT_KIND_OUTLOOK, "default", "input (B, H, W, 12)", 1, 4, 5, 4, outlook_in);
    check_kind("cls002_a.safetensors", VIT_KIND_SDSA_CLASSIFIER, "default", "sdsa_classifier (naming default)", 2, 5, 7,
               3, cls_in);
    check_kind("sdpa_a.safetensors", VIT_KIND_SDPA, "default", "no weights", 1, 4, 9, 3, sdpa_in);
    check_kind("patch_004.safetensors", VIT_KIND_PATCH, "einops", "class token first", 1, 4, 9, 4, patch_in);
    /* the same files as written before vit.h 0.2 */
    check_kind("legacy/mha_004.safetensors", VIT_KIND_MHA, "einops", "scale_after_softmax=1", 1, 5, 7, 3, mha_in);
    check_kind("legacy/mlp002.safetensors", VIT_KIND_MLP, "seq_mlp", "input (B, 784)", 3, 5, 7, 2, mlp_flat);
    check_kind("legacy/cls002_a.safetensors", VIT_KIND_SDSA_CLASSIFIER, "default", "sdsa_classifier", 2, 5, 7, 3,
               cls_in);
    check_kind("legacy/se_a.safetensors", VIT_KIND_SE, "torchvision", "squeeze_channels=", 1, 1, 1, -1, NULL);
    check_kind("legacy/vit_004.safetensors", VIT_KIND_VIT, "einops", "pool=mean", 1, 1, 1, -1, NULL);
    check_kind("legacy/vit_001.safetensors", VIT_KIND_VIT, "patchify", "act=relu", 1, 1, 1, -1, NULL);
    check_kind("legacy/patch_000.safetensors", VIT_KIND_PATCH, "conv_proj", "class_token=0", 1, 1, 1, -1, NULL);
}

static void test_names(void) {
    int k, j;
    for (k = 0; k < VIT_KIND_COUNT; k++) {
        const char *s = vit_kind_name((vit_kind)k);
        int unique = s && *s && strcmp(s, "unknown");
        for (j = 0; j < k; j++) unique = unique && strcmp(s, vit_kind_name((vit_kind)j));
        expect(unique, "every kind has its own name");
    }
    expect(!strcmp(vit_kind_name(VIT_KIND_COUNT), "unknown") && !strcmp(vit_kind_name((vit_kind)-1), "unknown"),
           "out-of-range kinds are unknown");
    expect(!strcmp(vit_kind_name(VIT_KIND_BLOCK), "encoder_block") &&
               !strcmp(vit_kind_name(VIT_KIND_SDSA_CLASSIFIER), "sdsa_classifier"),
           "kind names are the file strings");
}

static void test_describe_and_shape_args(void) {
    vit_model m;
    char small[16];
    int32_t shape[VIT_MAX_DIMS], nd;
    size_t need;
    if (!load(&m, "vit_tv.safetensors")) return;
    need = vit_model_describe(&m, NULL, 0);
    expect(need > 40 && vit_model_describe(&m, small, sizeof small) == need && strlen(small) == sizeof small - 1,
           "describe returns the whole length and cuts at the buffer");
    expect(vit_model_input_shape(&m, 0, 1, 1, &nd, shape) == VIT_ERR_ARG &&
               vit_model_input_shape(&m, 1, 0, 1, &nd, shape) == VIT_ERR_ARG &&
               vit_model_input_shape(NULL, 1, 1, 1, &nd, shape) == VIT_ERR_ARG,
           "input_shape refuses B, n, w below 1 and a NULL model");
    vit_model_free(&m);
}

/* A one-tensor SGE file with the given metadata, loaded from memory. */
static vit_result load_sge(const char *meta, vit_model *m) {
    static unsigned char file[1024];
    char h[600];
    size_t n;
    int i;
    uint64_t hl;
    n = (size_t)snprintf(
        h, sizeof h,
        "{\"__metadata__\":{%s},\"weight\":{\"dtype\":\"F32\",\"shape\":[1,2,1,1],\"data_offsets\":[0,8]},"
        "\"bias\":{\"dtype\":\"F32\",\"shape\":[1,2,1,1],\"data_offsets\":[8,16]}}",
        meta);
    while (n % 8) h[n++] = ' ';
    hl = n;
    for (i = 0; i < 8; i++) file[i] = (unsigned char)(hl >> (8 * i));
    memcpy(file + 8, h, n);
    memset(file + 8 + n, 0, 16);
    return vit_model_load_memory(m, file, 8 + n + 16);
}

static void expect_load(const char *meta, vit_result want, const char *needle, const char *what) {
    vit_model m;
    vit_result r = load_sge(meta, &m);
    int ok = r == want && (!needle || strstr(vit_last_error(), needle));
    expect(ok, what);
    if (!ok) printf("  got %s: %s\n", vit_result_string(r), vit_last_error());
    if (r == VIT_OK) vit_model_free(&m);
}

static void test_schema(void) {
    expect_load("\"format\":\"vit.h\",\"kind\":\"sge\",\"groups\":\"2\"", VIT_OK, NULL, "no naming: the kind's first");
    expect_load("\"format\":\"vit.h\",\"kind\":\"sge\",\"naming\":\"seed003\",\"groups\":\"2\"", VIT_OK, NULL,
                "an old naming read as today's");
    expect_load("\"format\":\"vit.h\",\"kind\":\"sge\",\"naming\":\"timm\",\"groups\":\"2\"", VIT_ERR_UNSUPPORTED,
                "unknown sge naming 'timm' (vit.h reads default)", "an unknown naming names the kind's namings");
    expect_load("\"format\":\"vit.h\",\"kind\":\"sge\",\"groups\":\"2.5\"", VIT_ERR_FORMAT,
                "'groups' = \"2.5\" is not an integer in 1..", "an integer key refuses a fraction");
    expect_load("\"format\":\"vit.h\",\"kind\":\"sge\",\"groups\":\"0\"", VIT_ERR_FORMAT, "is not an integer in 1..",
                "an integer key's range");
    expect_load("\"format\":\"vit.h\",\"kind\":\"sge\"", VIT_ERR_MISSING, "metadata lacks 'groups'", "a missing key");
    expect_load("\"format\":\"vit.h\",\"kind\":\"sge\",\"groups\":\"3\"", VIT_ERR_SHAPE,
                "tensor 'weight' has shape [1,2,1,1], expected [1,3,1,1]", "the schema's value shapes the tensors");
    expect_load("\"format\":\"vit.h\",\"kind\":\"nope\",\"groups\":\"2\"", VIT_ERR_UNSUPPORTED,
                "kind 'nope' is not one vit.h runs", "an unknown kind");
}

/* Float keys: range, and the float the value becomes (1e-50 is 0 as a
   float, 1e39 infinite); enum keys: one of their words. */
static void test_float_keys(void) {
    static const char *block_meta =
        "\"format\":\"vit.h\",\"kind\":\"encoder_block\",\"naming\":\"timm\",\"hidden_dim\":\"2\","
        "\"num_heads\":\"1\",\"mlp_dim\":\"2\","
        "\"act\":\"%s\",\"scale_after_softmax\":\"0\",\"ln_eps\":\"%s\"";
    static unsigned char file[256];
    char meta[512], h[800];
    /* 1e300: refused by the range before any conversion (a double past
       FLT_MAX converted to float is undefined: UBSan's float-cast-overflow) */
    const char *eps[] = {"1e-50", "1", "abc", "1e300", "1e-6"},
               *why[] = {"is 0 as a float", "is not a number in (0, 1)", "is not a number", "is not a number in (0, 1)",
                         NULL};
    vit_result want[] = {VIT_ERR_FORMAT, VIT_ERR_FORMAT, VIT_ERR_FORMAT, VIT_ERR_FORMAT, VIT_ERR_MISSING};
    int i, k;
    for (i = 0; i < 6; i++) {
        vit_model m;
        vit_result r;
        size_t n;
        uint64_t hl;
        snprintf(meta, sizeof meta, block_meta, i == 5 ? "swish" : "gelu", i == 5 ? "1e-6" : eps[i]);
        n = (size_t)snprintf(h, sizeof h, "{\"__metadata__\":{%s}}", meta);
        while (n % 8) h[n++] = ' ';
        hl = n;
        for (k = 0; k < 8; k++) file[k] = (unsigned char)(hl >> (8 * k));
        memcpy(file + 8, h, n);
        r = vit_model_load_memory(&m, file, 8 + n);
        if (i < 5) {
            /* 1e-6 reads; then the weights are missing */
            int ok = r == want[i] && (!why[i] || strstr(vit_last_error(), why[i])) &&
                     (why[i] || strstr(vit_last_error(), "missing tensor"));
            expect(ok, "ln_eps checked as the float it becomes");
            if (!ok) printf("  ln_eps %s: %s\n", eps[i], vit_last_error());
        } else
            expect(r == VIT_ERR_FORMAT && strstr(vit_last_error(), "'act' = \"swish\" is not one of gelu,relu"),
                   "an enum key's words");
    }
}

int main(int argc, char **argv) {
    snprintf(dir, sizeof dir, "%s", argc > 1 ? argv[1] : "tests/fixtures");
    test_names();
    test_kinds();
    test_describe_and_shape_args();
    test_schema();
    test_float_keys();
    printf("test_registry: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

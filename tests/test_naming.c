/* Checkpoints without vit.h metadata, as timm, transformers and torchvision
   save them (tools/naming_reference.py writes the cases from its own
   modules): every case of DIR/MANIFEST loads, says how its config was
   found, names its classes and computes what PyTorch did (outputs and
   features within 1e-4 relative to max(1, |ref|)); every refusal has its
   code and message. Then hostile config.json and labels text, the options
   against a file with vit.h metadata, and loads from memory.
   Usage: test_naming [DIR] [FIXTURES]   (defaults tests/fixtures/naming,
   tests/fixtures). Run under ASan+UBSan by `make test`. */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

static char logged[512];
static void on_log(void *user, const char *msg) {
    (void)user;
    snprintf(logged, sizeof logged, "%s", msg);
}

static void expect_err(vit_result got, vit_result want, const char *needle, const char *what) {
    const char *msg = got == VIT_OK ? "" : vit_last_error();
    if (got == want && (!needle || strstr(msg, needle))) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL %s: got %s \"%s\", want %s containing \"%s\"\n", what, vit_result_string(got), msg,
           vit_result_string(want), needle ? needle : "");
}

/* The whole of a small file into a malloc'd, NUL-terminated buffer. */
static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    char *buf;
    long len;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = (char *)malloc((size_t)len + 1);
    *n = fread(buf, 1, (size_t)len, f);
    buf[*n] = 0;
    fclose(f);
    return buf;
}

static const vit_result codes[] = {
    VIT_OK,        VIT_ERR_ARG,     VIT_ERR_OOM,         VIT_ERR_IO,        VIT_ERR_FORMAT,  VIT_ERR_SHAPE,
    VIT_ERR_DTYPE, VIT_ERR_MISSING, VIT_ERR_UNSUPPORTED, VIT_ERR_NONFINITE, VIT_ERR_OVERFLOW};
static const char *const code_names[] = {"OK",    "ARG",     "OOM",         "IO",        "FORMAT",  "SHAPE",
                                         "DTYPE", "MISSING", "UNSUPPORTED", "NONFINITE", "OVERFLOW"};

static vit_result code_of(const char *s) {
    size_t i;
    for (i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (!strcmp(s, code_names[i])) return codes[i];
    return (vit_result)-1;
}

/* Options from MANIFEST words heads=N config=FILE labels=FILE; paths into bufs. */
static void parse_opts(char **words, int n, const char *dir, vit_load_opts *o, char cfg[1024], char lab[1024]) {
    int i;
    memset(o, 0, sizeof *o);
    for (i = 0; i < n; i++) {
        if (!strncmp(words[i], "heads=", 6)) o->heads = atoi(words[i] + 6);
        else if (!strncmp(words[i], "config=", 7)) {
            snprintf(cfg, 1024, "%s/%s", dir, words[i] + 7);
            o->config_path = cfg;
        } else if (!strncmp(words[i], "labels=", 7)) {
            snprintf(lab, 1024, "%s/%s", dir, words[i] + 7);
            o->labels_path = lab;
        }
    }
}

/* m's output (and features) on NAME.in.npy against NAME.out.npy and NAME.feat.npy. */
static int run_outputs(const vit_model *m, const char *dir, const char *name) {
    char path[1024], label[256];
    vit_arena io, act;
    vit_tensor x, want, y;
    vit_forward_opts opts;
    size_t bytes;
    int pass, ok = 1;
    if (vit_arena_init_alloc(&io, 64u << 20) != VIT_OK) return 0;
    snprintf(path, sizeof path, "%s/%s.in.npy", dir, name);
    if (vit_npy_load(&io, path, &x) != VIT_OK) {
        printf("FAIL %s: %s\n", name, vit_last_error());
        vit_arena_free(&io);
        return 0;
    }
    for (pass = 0; pass < 2 && ok; pass++) {
        memset(&opts, 0, sizeof opts);
        opts.features = pass;
        snprintf(path, sizeof path, "%s/%s.%s.npy", dir, name, pass ? "feat" : "out");
        snprintf(label, sizeof label, "%s%s", name, pass ? ".feat" : "");
        if (vit_npy_load(&io, path, &want) != VIT_OK || vit_model_memory(m, &x, &opts, &bytes) != VIT_OK ||
            vit_arena_init_alloc(&act, bytes) != VIT_OK) {
            printf("FAIL %s: %s\n", label, vit_last_error());
            ok = 0;
            break;
        }
        if (vit_model_forward(m, &act, &x, &opts, &y) != VIT_OK) {
            printf("FAIL %s: forward: %s\n", label, vit_last_error());
            ok = 0;
        } else if (vit_tensor_numel(&y) != vit_tensor_numel(&want)) {
            char a[64], b[64];
            printf("FAIL %s: output %s, PyTorch %s\n", label, vit_tensor_shape_str(&y, a, sizeof a),
                   vit_tensor_shape_str(&want, b, sizeof b));
            ok = 0;
        } else if (!check_close(label, y.data, want.data, vit_tensor_numel(&y), 0.0, 1e-4)) ok = 0;
        if (act.peak + VIT_ALIGN != bytes) {
            printf("FAIL %s: vit_model_memory said %zu bytes, the forward used %zu\n", label, bytes, act.peak);
            ok = 0;
        }
        vit_arena_free(&act);
    }
    vit_arena_free(&io);
    return ok;
}

/* NAME.labels.txt lists the names vit_model_label must give (none: no labels). */
static int check_labels(const vit_model *m, const char *dir, const char *name) {
    char path[1024], *text, *p;
    size_t n;
    int32_t k = 0;
    snprintf(path, sizeof path, "%s/%s.labels.txt", dir, name);
    if (!(text = slurp(path, &n))) {
        if (m->n_labels == 0 && !vit_model_label(m, 0)) return 1;
        printf("FAIL %s: %d labels, none expected\n", name, (int)m->n_labels);
        return 0;
    }
    for (p = text; *p; k++) {
        char *e = strchr(p, '\n');
        const char *got = vit_model_label(m, k);
        *e = 0;
        if (!got || strcmp(got, p)) {
            printf("FAIL %s: label %d is \"%s\", want \"%s\"\n", name, (int)k, got ? got : "(null)", p);
            free(text);
            return 0;
        }
        p = e + 1;
    }
    free(text);
    if (m->n_labels != k || vit_model_label(m, k) || vit_model_label(m, -1)) {
        printf("FAIL %s: %d labels, want %d\n", name, (int)m->n_labels, (int)k);
        return 0;
    }
    return 1;
}

/* Every line of NAME.info.txt is in m->inferred, which the log got too. */
static int check_info(const vit_model *m, const char *dir, const char *name) {
    char path[1024], *text, *p;
    size_t n;
    int ok = 1;
    snprintf(path, sizeof path, "%s/%s.info.txt", dir, name);
    if (!m->inferred || strcmp(m->inferred, logged)) {
        printf("FAIL %s: inferred \"%s\", logged \"%s\"\n", name, m->inferred ? m->inferred : "(null)", logged);
        return 0;
    }
    if (!(text = slurp(path, &n))) return 1;
    for (p = text; *p;) {
        char *e = strchr(p, '\n');
        *e = 0;
        if (!strstr(m->inferred, p)) {
            printf("FAIL %s: inferred \"%s\" lacks \"%s\"\n", name, m->inferred, p);
            ok = 0;
        }
        p = e + 1;
    }
    free(text);
    return ok;
}

static void run_manifest(const char *dir) {
    char path[1024], line[1024], cfg[1024], lab[1024];
    FILE *f;
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    if (!(f = fopen(path, "r"))) {
        failed++;
        printf("FAIL cannot open %s\n", path);
        return;
    }
    while (fgets(line, sizeof line, f)) {
        char *words[16], *msg = strchr(line, '|'), *tok;
        int n = 0;
        vit_model m;
        vit_load_opts o;
        vit_result r;
        line[strcspn(line, "\n")] = 0;
        if (msg) { *msg = 0; msg += 2; }
        for (tok = strtok(line, " "); tok && n < 16; tok = strtok(NULL, " ")) words[n++] = tok;
        if (n < 3) continue;
        snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, words[2]);
        if (!strcmp(words[0], "case")) {
            parse_opts(words + 3, n - 3, dir, &o, cfg, lab);
            logged[0] = 0;
            if ((r = vit_model_load_file_ex(&m, path, &o)) != VIT_OK) {
                failed++;
                printf("FAIL %s: load: %s\n", words[1], vit_last_error());
                continue;
            }
            expect_err(m.kind == VIT_KIND_VIT && check_info(&m, dir, words[1]) ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL,
                       words[1]);
            expect_err(check_labels(&m, dir, words[1]) ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL, words[1]);
            expect_err(run_outputs(&m, dir, words[1]) ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL, words[1]);
            vit_model_free(&m);
        } else if (!strcmp(words[0], "refuse") && n >= 4 && msg) {
            parse_opts(words + 4, n - 4, dir, &o, cfg, lab);
            r = vit_model_load_file_ex(&m, path, &o);
            if (r == VIT_OK) vit_model_free(&m);
            else if (m.arena.base || m.blocks || m.labels) {
                failed++;
                printf("FAIL %s: model not zeroed after a failed load\n", words[1]);
            }
            expect_err(r, code_of(words[3]), msg, words[1]);
        }
    }
    fclose(f);
}

/* Hostile or inconsistent config.json text, labels text and options, on
   hf_cls (transformers, hidden 30: its heads come from the config only). */
static void test_hostile(const char *dir, const char *fixtures) {
    char path[1024], *deep;
    vit_model m;
    vit_load_opts o;
    vit_result r;
    size_t n, cut, i, bad = 0;
    char *cfg, *model;
    static const struct { const char *json; vit_result code; const char *needle;
    } cases[] = {
        {"{\"num_attention_heads\": 2.5}", VIT_ERR_FORMAT, "'num_attention_heads' is not an integer"},
        {"{\"num_attention_heads\": 1e999}", VIT_ERR_FORMAT, "'num_attention_heads' is not an integer"},
        {"{\"num_attention_heads\": -5}", VIT_ERR_FORMAT, "not an integer in 1..65536"},
        {"{\"num_attention_heads\": \"5\"}", VIT_ERR_FORMAT, "not an integer"},
        {"{\"num_attention_heads\": 5} x", VIT_ERR_FORMAT, "trailing bytes"},
        {"{\"num_attention_heads\": 5", VIT_ERR_FORMAT, "bad JSON"},
        {"[5]", VIT_ERR_FORMAT, "is not a JSON object"},
        {"", VIT_ERR_FORMAT, "is not a JSON object"},
        {"{\"num_attention_heads\": 5, \"layer_norm_eps\": 0}", VIT_ERR_FORMAT,
         "'layer_norm_eps' is not a number in (0, 1)"},
        {"{\"num_attention_heads\": 5, \"id2label\": {\"0x\": \"a\"}}", VIT_ERR_FORMAT,
         "key \"0x\" is not a class index"},
        {"{\"num_attention_heads\": 5, \"id2label\": {\"0\": \"a\", \"0\": \"b\"}}", VIT_ERR_FORMAT,
         "names class 0 twice"},
        {"{\"num_attention_heads\": 5, \"id2label\": {\"99999999999\": \"a\"}}", VIT_ERR_FORMAT,
         "is not a class index"},
        {"{\"num_attention_heads\": 5, \"id2label\": {\"0\": 7}}", VIT_ERR_FORMAT, "entry 0 is not a string"},
        {"{\"num_attention_heads\": 5, \"id2label\": {\"0\": \"a\\u0000\"}}", VIT_ERR_FORMAT,
         "'id2label' entry 0 is not a string"},
        {"{\"num_attention_heads\": 5, \"label_names\": 3}", VIT_ERR_FORMAT,
         "'label_names' is not an object or a list"},
        {"{\"num_attention_heads\": 5, \"architectures\": [1]}", VIT_ERR_FORMAT,
         "'architectures' is not a list of strings"},
        {"{\"num_attention_heads\": 5, \"hidden_act\": null, \"x\": [1, {\"y\": [true, false, null, -1.5e3]}]}", VIT_OK,
         NULL},
        {"{\"num_attention_heads\": 5, \"model_args\": {\"fc_norm\": 1}}", VIT_ERR_FORMAT,
         "'fc_norm' is not true, false or null"},
        {"{\"num_attention_heads\": 5, \"global_pool\": \"avg\"}", VIT_ERR_FORMAT, "global_pool is a timm setting"},
        {"{\"num_attention_heads\": 5, \"model_args\": {\"final_norm\": 3}}", VIT_ERR_FORMAT,
         "model_args 'final_norm' is not true, false, null or a string"},
        {"{\"num_attention_heads\": 5, \"model_args\": {\"final_norm\": false}}", VIT_ERR_UNSUPPORTED,
         "model_args 'final_norm' is false: no final LayerNorm, which vit.h does not run"},
        {"{\"num_attention_heads\": 5, \"model_args\": {\"norm_layer\": \"rmsnorm\", \"final_norm\": false}}",
         VIT_ERR_UNSUPPORTED, "model_args 'norm_layer' is rmsnorm: another norm than LayerNorm"},
        {"{\"num_attention_heads\": 5, \"model_args\": {\"final_norm\": true, \"reg_tokens\": null}}", VIT_OK, NULL},
        {"{\"num_attention_heads\": 5, \"pretrained_cfg\": {\"mean\": [1, 2, 3, 4]}}", VIT_ERR_FORMAT,
         "'mean' is not a number or a list of up to 3"},
        {"{\"num_attention_heads\": 5, \"num_channels\": 1}", VIT_ERR_FORMAT, "'num_channels' is 1, but"},
        {"\xef\xbb\xbf{\"num_attention_heads\": 5}", VIT_OK, NULL},
        {"{\"num_attention_heads\": 7}", VIT_ERR_FORMAT, "hidden size 30 is not a multiple of 7 heads"},
        {"{\"num_attention_heads\": 5, \"hidden_act\": \"relu\", \"layer_norm_eps\": 1e-5}", VIT_OK, NULL}};
    snprintf(path, sizeof path, "%s/hf_cls/model.safetensors", dir);
    if (!(model = slurp(path, &n))) { failed++; printf("FAIL cannot open %s\n", path); return; }
    memset(&o, 0, sizeof o);
    expect_err(vit_model_load_memory_ex(&m, model, n, &o), VIT_ERR_MISSING, "hidden size 30",
               "memory: no config.json beside");
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        o.config_text = cases[i].json;
        o.config_size = strlen(cases[i].json);
        r = vit_model_load_memory_ex(&m, model, n, &o);
        if (r == VIT_OK) {
            expect_err(m.cfg.heads == 5 && m.inferred && strstr(m.inferred, "5 heads (config.json)") ? VIT_OK
                                                                                                     : VIT_ERR_ARG,
                       VIT_OK, NULL, cases[i].json);
            vit_model_free(&m);
        }
        expect_err(r, cases[i].code, cases[i].needle, cases[i].json);
    }
    /* Nesting 100000 deep in an ignored key, and a NUL inside the text. */
    deep = (char *)malloc(200100);
    memcpy(deep, "{\"x\":", 5);
    memset(deep + 5, '[', 100000);
    memset(deep + 100005, ']', 100000);
    memcpy(deep + 200005, "}", 2);
    o.config_text = deep;
    o.config_size = strlen(deep);
    expect_err(vit_model_load_memory_ex(&m, model, n, &o), VIT_ERR_FORMAT, "bad JSON in 'x'", "deep nesting");
    o.config_text = "{\"num_attention_heads\": 5}\0";
    o.config_size = 27;
    expect_err(vit_model_load_memory_ex(&m, model, n, &o), VIT_ERR_FORMAT, "trailing bytes", "NUL after the object");
    free(deep);
    /* Every truncation of the real config.json: refused or loaded, never a crash. */
    snprintf(path, sizeof path, "%s/hf_cls/config.json", dir);
    if (!(cfg = slurp(path, &n))) { failed++; free(model); return; }
    {
        size_t mn;
        char *mdl = slurp(strcat(strcpy(path, dir), "/hf_cls/model.safetensors"), &mn);
        for (cut = 0; cut <= n; cut++) {
            o.config_text = cfg;
            o.config_size = cut;
            r = vit_model_load_memory_ex(&m, mdl, mn, &o);
            if (r == VIT_OK) vit_model_free(&m);
            else if (r != VIT_ERR_FORMAT) bad++;
            /* Flip a byte: refused or loaded, never a crash. */
            if (cut < n) {
                cfg[cut] ^= 0x21;
                o.config_size = n;
                if (vit_model_load_memory_ex(&m, mdl, mn, &o) == VIT_OK) vit_model_free(&m);
                cfg[cut] ^= 0x21;
            }
        }
        expect_err(bad ? VIT_ERR_ARG : VIT_OK, VIT_OK, NULL, "every truncated config.json is a format error or loads");
        /* From memory with the config and labels as text: same as from the files. */
        o.config_text = cfg;
        o.config_size = n;
        o.labels_text = "a\nb\nc\nd\ne";
        o.labels_size = 9;
        r = vit_model_load_memory_ex(&m, mdl, mn, &o);
        expect_err(r, VIT_OK, NULL, "memory: config and labels as text");
        if (r == VIT_OK) {
            expect_err(!strcmp(vit_model_label(&m, 4), "e") && run_outputs(&m, dir, "hf_cls") ? VIT_OK : VIT_ERR_ARG,
                       VIT_OK, NULL, "memory: labels and outputs");
            vit_model_free(&m);
        }
        /* Labels text: NUL, empty, a wrong count, one per line with a final newline. */
        o.labels_text = "a\nb\0\nc\nd\ne\n";
        o.labels_size = 11;
        expect_err(vit_model_load_memory_ex(&m, mdl, mn, &o), VIT_ERR_FORMAT, "line 2 holds a NUL byte",
                   "labels with a NUL");
        o.labels_size = 0;
        expect_err(vit_model_load_memory_ex(&m, mdl, mn, &o), VIT_ERR_FORMAT, "no labels", "empty labels");
        o.labels_text = "a\nb\nc\nd\ne\nf\n";
        o.labels_size = 12;
        expect_err(vit_model_load_memory_ex(&m, mdl, mn, &o), VIT_ERR_FORMAT, "6 labels (lines) for the 5 classes",
                   "too many labels");
        o.labels_text = NULL;
        o.labels_path = "/nonexistent/labels.txt";
        expect_err(vit_model_load_memory_ex(&m, mdl, mn, &o), VIT_ERR_IO, "cannot open", "missing labels file");
        memset(&o, 0, sizeof o);
        o.config_path = "/nonexistent/config.json";
        expect_err(vit_model_load_memory_ex(&m, mdl, mn, &o), VIT_ERR_IO, "/nonexistent/config.json: cannot open",
                   "missing config file");
        /* The file's own config.json beside it is ignored on request. */
        memset(&o, 0, sizeof o);
        o.no_config_search = 1;
        snprintf(path, sizeof path, "%s/hf_cls/model.safetensors", dir);
        expect_err(vit_model_load_file_ex(&m, path, &o), VIT_ERR_MISSING, "cannot tell the number of attention heads",
                   "no_config_search");
        o.heads = 5;
        r = vit_model_load_file_ex(&m, path, &o);
        expect_err(r, VIT_OK, NULL, "no_config_search with heads");
        if (r == VIT_OK) {
            expect_err(m.n_labels == 0 && m.cfg.ln_eps == 1e-12f ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL,
                       "defaults without config.json");
            vit_model_free(&m);
        }
        free(mdl);
    }
    free(cfg);
    free(model);
    /* A file with vit.h metadata: no config.json, heads only if they agree, labels yes. */
    snprintf(path, sizeof path, "%s/vit_tv.safetensors", fixtures);
    memset(&o, 0, sizeof o);
    o.config_text = "{}";
    o.config_size = 2;
    expect_err(vit_model_load_file_ex(&m, path, &o), VIT_ERR_ARG, "a config.json is only read for files without",
               "config with vit.h metadata");
    memset(&o, 0, sizeof o);
    o.heads = 4;
    expect_err(vit_model_load_file_ex(&m, path, &o), VIT_ERR_ARG, "metadata says num_heads=3, the caller 4",
               "heads against metadata");
    o.heads = 3;
    o.labels_text = "0\n1\n2\n3\n4\n5\n6\n7\n8\nnine\n";
    o.labels_size = strlen(o.labels_text);
    r = vit_model_load_file_ex(&m, path, &o);
    expect_err(r, VIT_OK, NULL, "labels for a vit.h file");
    if (r == VIT_OK) {
        expect_err(!m.inferred && vit_model_label(&m, 9) && !strcmp(vit_model_label(&m, 9), "nine") ? VIT_OK
                                                                                                    : VIT_ERR_ARG,
                   VIT_OK, NULL, "labels for a vit.h file: values");
        vit_model_free(&m);
    }
    snprintf(path, sizeof path, "%s/mha_sep.safetensors", fixtures);
    o.heads = 0;
    expect_err(vit_model_load_file_ex(&m, path, &o), VIT_ERR_ARG, "is not a ViT classifier", "labels for a module");
    snprintf(path, sizeof path, "%s/hf_model/model.safetensors", dir);
    expect_err(vit_model_load_file_ex(&m, path, &o), VIT_ERR_ARG, "is not a ViT classifier", "labels for a ViTModel");
    expect_err(vit_model_load_file_ex(NULL, path, NULL), VIT_ERR_ARG, "NULL", "NULL model");
    expect_err(vit_model_load_memory_ex(&m, NULL, 0, NULL), VIT_ERR_ARG, "NULL", "NULL data");
    expect_err(vit_model_label(NULL, 0) == NULL ? VIT_OK : VIT_ERR_ARG, VIT_OK, NULL, "label of NULL");
}

/* timm's pretrained_cfg reaches vit_model_meta; the old loader still works. */
static void test_meta(const char *dir) {
    char path[1024];
    vit_model m;
    const char *mean, *crop;
    snprintf(path, sizeof path, "%s/timm_avg/model.safetensors", dir);
    if (vit_model_load_file(&m, path) != VIT_OK) { failed++; printf("FAIL timm_avg: %s\n", vit_last_error()); return; }
    mean = vit_model_meta(&m, "input_mean");
    crop = vit_model_meta(&m, "input_crop_pct");
    expect_err(mean && !strcmp(mean, "0.5,0.5,0.5") && crop && !strcmp(crop, "0.9") && m.cfg.pool == VIT_POOL_AVG
                   ? VIT_OK
                   : VIT_ERR_ARG,
               VIT_OK, NULL, "timm pretrained_cfg as metadata");
    vit_model_free(&m);
}

/* A load that succeeded: right when ok, else a failure that shows what was inferred. */
static void loaded(int ok, const char *what, const char *inferred) {
    if (ok) {
        passed++;
        return;
    }
    failed++;
    printf("FAIL %s: loaded (%s)\n", what, inferred);
}

/* One name for each row of vit.h's table of timm architectures, in its
   order, on a timm-named file (bad/no_heads: hidden 12, 2 heads given in
   model_args): the names vit.h runs with their LayerNorm eps and
   activation, those it runs in another naming (runs -1: BEiT's, EVA-02's) refused as
   that naming's, the rest refused with what they are. Then transformers'
   model_type and architectures on hf_cls. */
static void test_archs(const char *dir) {
    static const struct { const char *name, *needle; int runs;
    } timm[] = {
        /* AttentionRope's names are timm's Attention's: read as Eva, whose rotary embedding wants 4 | 12/2 */
        {"vit_pe_core_tiny_patch16_384", "a rotary embedding needs a head size that is a multiple of 4", -1},
        {"vit_pe_core_small_patch16_384", "a rotary embedding needs a head size that is a multiple of 4", -1},
        {"vit_pe_core_base_patch16_224", "a rotary embedding needs a head size that is a multiple of 4", -1},
        {"vit_pe_core_large_patch14_336", "a rotary embedding needs a head size that is a multiple of 4", -1},
        {"vit_pe_core_gigantic_patch14_448", "a rotary embedding needs a head size that is a multiple of 4", -1},
        {"vit_pe_lang_large_patch14_448", "is a Perception Encoder language or spatial tower", 0},
        {"eva02_enormous_patch14_clip_224", "is an EVA-02-CLIP-E (timm's Eva class: post-norm blocks)", 0},
        {"eva02_tiny_patch14_224", "is an EVA-02 (timm's Eva class: rotary position embeddings) in eva naming", -1},
        {"eva02_base_patch16_clip_224", "is an EVA-02 (timm's Eva class: rotary position embeddings) in eva naming",
         -1},
        {"eva_large_patch14_196", "eps 1e-06, gelu, pool", 1},
        {"eva_giant_patch14_224", "is an EVA-01 giant (timm's Eva class: q and v biases, a GELU MLP) in eva naming",
         -1},
        {"eva_tiny_patch14_224", "is an EVA (timm's Eva class: a name vit.h does not know)", 0},
        {"vit_base_patch16_rope_reg1_gap_256", "is a ViT with rotary position embeddings (timm's Eva class: EVA-02's, "
         "register tokens) in eva naming, but the tensors of", -1},
        {"vit_base_patch16_rope_mixed_224", "a rotary embedding needs a head size that is a multiple of 4", -1},
        {"vit_base_patch16_rope_224", "a rotary embedding needs a head size that is a multiple of 4", -1},
        {"vit_base_patch32_rope_224", "is a ViT with rotary position embeddings (timm's Eva class: a name vit.h", 0},
        {"vit_base_patch16_dinov3", "is a DINOv3 (timm's Eva class: DINOv3's rotary position embeddings, register "
         "tokens, layer scale) in eva naming, but the tensors of", -1},
        {"vit_base_patch16_lingbot", "is a LingBot-Vision ViT (timm's Eva class: DINOv3's rotary position embeddings, "
         "register tokens) in eva naming, but the tensors of", -1},
        {"vit_base_patch14_dinov3", "is a DINOv3 (timm's Eva class: a name vit.h does not know)", 0},
        {"vit_base_patch16_sapiens2", "is a Sapiens2", 0},
        {"beit3_base_patch16_224", "is a BEiT-3", 0},
        {"beit_base_patch16_224", "is a BEiT (timm's Beit class) in beit naming, but the tensors of", -1},
        {"beitv2_base_patch16_224", "is a BEiT v2 (timm's Beit class) in beit naming, but the tensors of", -1},
        {"beitv3_base_patch16_224", "is a BEiT (timm's Beit class) vit.h does not know", 0},
        {"vit_relpos_base_patch16_224", "is a ViT with relative positions", 0},
        {"samvit_base_patch16", "is a SAM image encoder", 0},
        {"naflexvit_base_patch16_gap", "is a NaFlexViT", 0},
        {"vit_small_r26_s32_224", "is a hybrid ViT (a ResNet stem", 0},
        {"vit_base_r50_s16_384", "is a hybrid ViT (a ResNet stem", 0},
        {"vit_base_resnet50d_224", "is a hybrid ViT (a ResNet stem", 0},
        {"vit_tiny_r_s16_p8_224", "is a hybrid ViT (a ResNet stem", 0},
        {"vit_base_mci_224", "is a hybrid ViT (a MobileCLIP", 0},
        {"aimv2_large_patch14_224", "is an AIMv2", 0},
        {"vit_base_patch16_xp_224", "(timm's ParallelScalingBlock) and RmsNorm", 0},
        {"vit_pwee_patch16_reg1_gap_256", "(timm's ParallelScalingBlock):", 0},
        {"vit_base_patch16_18x2_224", "(timm's ParallelThingsBlock)", 0},
        {"vit_base_patch16_rpn_224", "(timm's ResPostBlock)", 0},
        {"vit_dpwee_patch16_reg1_gap_256", "parallel blocks with differential attention", 0},
        {"vit_dwee_patch16_reg1_gap_256", "differential attention (timm's attn_layer='diff')", 0},
        {"vit_base_patch16_radio_v3", "is a RADIO ViT", 0},
        {"vit_intern300m_patch14_448", "is an InternViT", 0},
        {"vit_base_patch16_clip_quickgelu_224", "eps 1e-05, quick_gelu, pool", 1},
        {"vit_base_patch16_clip_224", "eps 1e-05, gelu, pool", 1},
        {"vit_so400m_patch16_siglip_256", "eps 1e-06, gelu_tanh, pool", 1},
        {"vit_giantopt_patch16_siglip_384", "eps 1e-06, gelu_tanh, pool", 1},
        {"vit_base_patch32_siglip_256", "eps 1e-06, gelu_tanh, pool", 1},
        {"vit_large_patch16_siglip_512", "eps 1e-06, gelu_tanh, pool", 1},
        {"vit_large_patch16_siglip_gap_512", "eps 1e-06, gelu_tanh, pool", 1},
        {"vit_base_patch16_siglip_224", "eps 1e-06, gelu, pool", 1},
        {"deit_tiny_distilled_patch16_224", "eps 1e-06, gelu, pool", 1},
        {"deit3_small_patch16_224", "eps 1e-06, gelu, pool", 1},
        {"flexivit_small", "eps 1e-06, gelu, pool", 1},
        {"vit_base_patch16_224", "eps 1e-06, gelu, pool", 1},
        {"test_vit", "timm architecture 'test_vit' is not one vit.h knows", 0}};
    static const struct { const char *json, *needle; int runs;
    } hf[] = {
        {"{\"model_type\": \"vit\", \"num_attention_heads\": 5}", "transformers naming (ViTForImageClassification)", 1},
        {"{\"model_type\": \"vit\", \"architectures\": [\"ViTModel\"], \"num_attention_heads\": 5}", " ViTModel)", 1},
        {"{\"model_type\": \"vit_mae\", \"num_attention_heads\": 5}", "model_type 'vit_mae' is not one vit.h runs", 0},
        {"{\"model_type\": \"siglip_vision_model\", \"num_attention_heads\": 5}",
         "is SigLIP's image tower in hf_siglip naming, but the tensors of", 0},
        {"{\"model_type\": \"siglip\", \"architectures\": [\"SiglipForImageClassification\"]}",
         "transformers architecture 'SiglipForImageClassification' (model_type 'siglip') is not one vit.h runs", 0},
        {"{\"model_type\": \"vit\", \"architecture\": \"vit_base_patch16_224\"}",
         "names both a timm architecture ('vit_base_patch16_224') and a transformers model_type ('vit')", 0}};
    char path[1024], json[256];
    vit_model m;
    vit_load_opts o;
    vit_result r;
    size_t i;
    memset(&o, 0, sizeof o);
    snprintf(path, sizeof path, "%s/bad/no_heads/model.safetensors", dir);
    for (i = 0; i < sizeof timm / sizeof timm[0]; i++) {
        snprintf(json, sizeof json, "{\"architecture\": \"%s\", \"model_args\": {\"num_heads\": 2}}", timm[i].name);
        o.config_text = json;
        o.config_size = strlen(json);
        r = vit_model_load_file_ex(&m, path, &o);
        if (r == VIT_OK) {
            loaded(timm[i].runs > 0 && strstr(m.inferred, timm[i].needle), timm[i].name, m.inferred);
            vit_model_free(&m);
        } else
            expect_err(r, timm[i].runs > 0 ? VIT_OK : timm[i].runs ? VIT_ERR_FORMAT : VIT_ERR_UNSUPPORTED,
                       timm[i].needle, timm[i].name);
    }
    snprintf(path, sizeof path, "%s/hf_cls/model.safetensors", dir);
    for (i = 0; i < sizeof hf / sizeof hf[0]; i++) {
        o.config_text = hf[i].json;
        o.config_size = strlen(hf[i].json);
        r = vit_model_load_file_ex(&m, path, &o);
        if (r == VIT_OK) {
            loaded(hf[i].runs && strstr(m.inferred, hf[i].needle), hf[i].json, m.inferred);
            vit_model_free(&m);
        } else expect_err(r, hf[i].runs ? VIT_OK : r, hf[i].needle, hf[i].json);
    }
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "tests/fixtures/naming";
    vit_set_log(on_log, NULL);
    run_manifest(dir);
    if (argc <= 2 || strcmp(argv[2], "--cases-only")) {
        test_hostile(dir, argc > 2 ? argv[2] : "tests/fixtures");
        test_archs(dir);
        test_meta(dir);
    }
    printf("test_naming: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

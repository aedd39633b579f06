/* The ViT families as timm and transformers save them (DINOv2 with and
   without registers and SwiGLU, CLIP, SigLIP, DeiT distilled, qk-norm, no
   class token, BEiT with a relative position bias per block or shared,
   EVA-02 Ti, B and its CLIP tower with rotary position embeddings, EVA-01
   giant, DINOv3 (plain, _qkvb, SwiGLU), Perception Encoder core, NAVER's
   RoPE-Axial and RoPE-Mixed ViTs with and without an absolute position
   embedding, timm's RoPE ViT with a register token; transformers' BEiT
   and Data2Vec vision, with a relative position bias per layer or shared,
   a position embedding or none, layer scale or not, mean pooling or the
   class token;
   tools/families_reference.py writes them from the libraries' own
   classes): each loads from its own names and config.json, and gives
   the library's logits, pooled features and tokens at batch 1 and 3, within
   1e-4 relative to max(1, |ref|), with vit_model_memory exact; where
   MANIFEST gives a second size, the same at that size, the position
   embedding resampled as the library does it (the rotary tables made for
   the new grid). Where NAME.attnB.npy is there (BEiT, the RoPE models), the
   attention probabilities kept by the forward against
   the library's, with the logits (or pooled features) of that forward.
   Each model of REFUSED (real timm and transformers models whose
   config.json names an architecture vit.h does not run, or says what
   the file lacks) is refused with its code and message.
   Usage: test_families [DIR [--cases-only]]   (default
   tests/fixtures/families; --cases-only for the full-size models that
   families_reference.py --big writes: batch 1, no PREP tests). */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "check.h"

#include <string.h>

static int exists(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* One output of m on x (opts as given) against the file `want`. */
static void check_output(const vit_model *m, const vit_tensor *x, const vit_forward_opts *o, const char *want_path,
                         const char *label) {
    vit_arena io, act;
    vit_tensor want, y;
    size_t bytes;
    char a[64], b[64];
    if (vit_arena_init_alloc(&io, 16u << 20) != VIT_OK) return;
    if (vit_npy_load(&io, want_path, &want) != VIT_OK) {
        expect(0, label);
        printf("  %s: %s\n", want_path, vit_last_error());
    } else if (vit_model_memory(m, x, o, &bytes) != VIT_OK || vit_arena_init_alloc(&act, bytes) != VIT_OK) {
        expect(0, label);
        printf("  memory: %s\n", vit_last_error());
    } else {
        if (vit_model_forward(m, &act, x, o, &y) != VIT_OK) {
            expect(0, label);
            printf("  forward: %s\n", vit_last_error());
        } else if (vit_tensor_numel(&y) != vit_tensor_numel(&want)) {
            expect(0, label);
            printf("  output %s, the library's %s\n", vit_tensor_shape_str(&y, a, sizeof a),
                   vit_tensor_shape_str(&want, b, sizeof b));
        } else {
            expect(check_close(label, y.data, want.data, vit_tensor_numel(&y), 0.0, 1e-4), label);
            expect(act.peak + VIT_ALIGN == bytes, "vit_model_memory is exact");
        }
        vit_arena_free(&act);
    }
    vit_arena_free(&io);
}

/* The attention probabilities m keeps on x (vit_forward_opts.attn, every
   block's) against the library's, `want` (depth * B, NH, T, T); the logits
   (a model without a head: the pooled features) of that forward too, the
   maps kept (the attention's other path). */
static void check_maps(const vit_model *m, const vit_tensor *x, const char *want_path, const char *logits_path,
                       const char *label) {
    vit_arena io, act;
    vit_tensor want, y, att[64], lg;
    vit_forward_opts o;
    size_t bytes, per, l;
    int32_t depth = m->cfg.depth;
    if (depth > 64 || vit_arena_init_alloc(&io, 16u << 20) != VIT_OK) return;
    memset(&o, 0, sizeof o);
    o.attn = att;
    if (vit_npy_load(&io, want_path, &want) != VIT_OK || vit_npy_load(&io, logits_path, &lg) != VIT_OK ||
        vit_model_memory(m, x, &o, &bytes) != VIT_OK || vit_arena_init_alloc(&act, bytes) != VIT_OK) {
        expect(0, label);
        printf("  %s\n", vit_last_error());
        vit_arena_free(&io);
        return;
    }
    if (vit_model_forward(m, &act, x, &o, &y) != VIT_OK) {
        expect(0, label);
        printf("  forward: %s\n", vit_last_error());
    } else if (vit_tensor_numel(&want) != (size_t)depth * vit_tensor_numel(&att[0])) {
        expect(0, label);
        printf("  %zu probabilities kept, the library's %zu\n", (size_t)depth * vit_tensor_numel(&att[0]),
               vit_tensor_numel(&want));
    } else {
        per = vit_tensor_numel(&att[0]);
        for (l = 0; l < (size_t)depth; l++) {
            char what[440];
            snprintf(what, sizeof what, "%s, block %d", label, (int)l);
            expect(check_close(what, att[l].data, want.data + l * per, per, 1e-6, 1e-4), what);
        }
        expect(check_close(label, y.data, lg.data, vit_tensor_numel(&y), 0.0, 1e-4), "logits with the maps kept");
    }
    vit_arena_free(&act);
    vit_arena_free(&io);
}

/* At image size S (0: none), the position embedding resampled as the
   file's library does it (vit_model_set_image_size): features and tokens. */
static void run_resized(vit_model *m, const char *dir, const char *name, int S) {
    char path[1024], label[400];
    vit_arena io;
    vit_tensor x;
    vit_forward_opts o;
    if (!S) return;
    if (vit_model_set_image_size(m, S) != VIT_OK) {
        expect(0, name);
        printf("  set_image_size %d: %s\n", S, vit_last_error());
        return;
    }
    if (vit_arena_init_alloc(&io, 16u << 20) != VIT_OK) return;
    snprintf(path, sizeof path, "%s/%s.in_s%d.npy", dir, name, S);
    if (vit_npy_load(&io, path, &x) == VIT_OK) {
        memset(&o, 0, sizeof o);
        o.features = 1;
        snprintf(path, sizeof path, "%s/%s.feat_s%d.npy", dir, name, S);
        snprintf(label, sizeof label, "%s pooled features at %dx%d", name, S, S);
        check_output(m, &x, &o, path, label);
        o.features = 0;
        o.tokens = 1;
        snprintf(path, sizeof path, "%s/%s.tokens_s%d.npy", dir, name, S);
        snprintf(label, sizeof label, "%s tokens at %dx%d", name, S, S);
        check_output(m, &x, &o, path, label);
    } else
        expect(0, path);
    vit_arena_free(&io);
}

/* The photo as the file's configs say to prepare it (vit_model_preprocess:
   timm's pretrained_cfg, transformers' preprocessor_config.json) against
   what the library hands its model, NAME.pix.npy. Within 2/255 of a pixel
   (PIL rounds to bytes between passes, JPEG decoders differ), 2.5/255 after
   a bicubic resize (the decoders' differences pass through its negative
   lobes: PE core's 427 to 384 px has a pixel at 2.3/255), mean under half
   a level. */
static void check_pixels(const vit_model *m, const char *dir, const char *name, const char *photo) {
    char path[1024], label[400];
    vit_preprocess p;
    vit_arena a;
    vit_tensor img, want, got;
    float smin;
    double sum = 0.0;
    size_t k, n;
    snprintf(path, sizeof path, "%s/%s.pix.npy", dir, name);
    if (!exists(path)) return;
    if (vit_arena_init_alloc(&a, 64u << 20) != VIT_OK) return;
    snprintf(label, sizeof label, "%s: the photo prepared as its configs say", name);
    if (vit_model_preprocess(m, &p) != VIT_OK || vit_npy_load(&a, path, &want) != VIT_OK ||
        vit_image_load(&a, photo, 3, &img) != VIT_OK || vit_image_preprocess(&a, &img, &p, &got) != VIT_OK) {
        expect(0, label);
        printf("  %s\n", vit_last_error());
    } else if ((n = vit_tensor_numel(&got)) != vit_tensor_numel(&want)) {
        expect(0, label);
        printf("  %d x %d, the library's %d x %d (resize %d, crop %d)\n", (int)got.shape[3], (int)got.shape[2],
               (int)want.shape[3], (int)want.shape[2], (int)p.resize, (int)p.crop);
    } else {
        smin = p.std[0] < p.std[1] ? p.std[0] : p.std[1];
        smin = smin < p.std[2] ? smin : p.std[2];
        printf("  %s: resize %d%s, crop %d, %s, mean %.3f %.3f %.3f\n", name, (int)p.resize,
               p.squash ? " (squash)" : "", (int)p.crop, p.resample == VIT_RESAMPLE_BICUBIC ? "bicubic" : "bilinear",
               p.mean[0], p.mean[1], p.mean[2]);
        expect(check_close(label, got.data, want.data, n,
                           (p.resample == VIT_RESAMPLE_BICUBIC ? 2.5 : 2.0) / 255 / smin + 1e-5, 0),
               label);
        for (k = 0; k < n; k++) sum += fabs(got.data[k] - want.data[k]);
        snprintf(label, sizeof label, "%s: mean |d| %.3f/255", name, sum / n * smin * 255);
        expect(sum / n * smin <= 0.5 / 255, label);
    }
    vit_arena_free(&a);
}

static int cases_only; /* --cases-only: DIR has models only (--big), batch 1 enough */

static void run_case(const char *dir, const char *name, int resize, const char *photo) {
    char path[1024], label[400];
    vit_model m;
    vit_arena io;
    vit_tensor x;
    vit_forward_opts o;
    int b;
    snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, name);
    if (vit_model_load_file(&m, path) != VIT_OK) {
        expect(0, name);
        printf("  load: %s\n", vit_last_error());
        return;
    }
    printf("  %s: %s\n", name, m.inferred ? m.inferred : "(metadata)");
    for (b = 1; b <= 3; b += 2) {
        if (vit_arena_init_alloc(&io, 16u << 20) != VIT_OK) break;
        snprintf(path, sizeof path, "%s/%s.in%d.npy", dir, name, b);
        if (b > 1 && cases_only && !exists(path)) { /* the full-size models: batch 1 */
            vit_arena_free(&io);
            continue;
        }
        if (vit_npy_load(&io, path, &x) != VIT_OK) {
            expect(0, path);
            vit_arena_free(&io);
            continue;
        }
        memset(&o, 0, sizeof o);
        snprintf(path, sizeof path, "%s/%s.logits%d.npy", dir, name, b);
        if (exists(path)) {
            snprintf(label, sizeof label, "%s logits, batch %d", name, b);
            check_output(&m, &x, &o, path, label);
        }
        o.features = 1;
        snprintf(path, sizeof path, "%s/%s.feat%d.npy", dir, name, b);
        if (exists(path)) {
            snprintf(label, sizeof label, "%s pooled features, batch %d", name, b);
            check_output(&m, &x, &o, path, label);
        }
        o.features = 0;
        o.tokens = 1;
        snprintf(path, sizeof path, "%s/%s.tokens%d.npy", dir, name, b);
        snprintf(label, sizeof label, "%s tokens, batch %d", name, b);
        check_output(&m, &x, &o, path, label);
        snprintf(path, sizeof path, "%s/%s.attn%d.npy", dir, name, b);
        if (exists(path)) {
            char lpath[1024];
            snprintf(lpath, sizeof lpath, "%s/%s.logits%d.npy", dir, name, b);
            if (!exists(lpath)) snprintf(lpath, sizeof lpath, "%s/%s.feat%d.npy", dir, name, b); /* no head */
            snprintf(label, sizeof label, "%s attention probabilities, batch %d", name, b);
            check_maps(&m, &x, path, lpath, label);
        }
        vit_arena_free(&io);
    }
    if (photo) check_pixels(&m, dir, name, photo);
    run_resized(&m, dir, name, resize);
    vit_model_free(&m);
}

/* The families' preprocessing (bicubic, squash) against PIL's, from
   DIR/PREP: name, source image, resize, squash; prep_NAME.png holds PIL's
   224 x 224 crop. PIL rounds to bytes after each pass of its separable
   resize, vit.h computes in float: within 1.5/255, 2/255 for JPEG sources
   (the decoders), and a mean difference under half a level. */
static void test_preprocess(const char *dir) {
    char path[1024], line[1024], name[128], src[512], label[256];
    vit_arena a;
    int size, squash;
    FILE *f;
    snprintf(path, sizeof path, "%s/PREP", dir);
    if (!(f = fopen(path, "r")) || vit_arena_init_alloc(&a, 256u << 20) != VIT_OK) {
        expect(0, path);
        if (f) fclose(f);
        return;
    }
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "prep %127s %511s %d %d", name, src, &size, &squash) == 4) {
            vit_tensor img, want, got;
            vit_preprocess p;
            float tol = strstr(src, ".jpg") ? 2.0f / 255 : 1.5f / 255;
            double sum = 0.0;
            size_t k;
            memset(&p, 0, sizeof p);
            p.resize = size; p.crop = 224; p.resample = VIT_RESAMPLE_BICUBIC; p.squash = squash;
            p.std[0] = p.std[1] = p.std[2] = 1.0f; /* pixel units */
            vit_arena_reset(&a);
            if (vit_image_load(&a, src, 3, &img) != VIT_OK) {
                printf("skip %s: %s\n", name, vit_last_error());
                continue;
            }
            snprintf(path, sizeof path, "%s/prep_%s.png", dir, name);
            snprintf(label, sizeof label, "preprocess %s (bicubic, resize %d%s)", name, size, squash ? ", squash" : "");
            if (vit_image_load(&a, path, 3, &want) != VIT_OK || vit_image_preprocess(&a, &img, &p, &got) != VIT_OK) {
                expect(0, label);
                printf("  %s\n", vit_last_error());
                continue;
            }
            expect(check_close(label, got.data, want.data, 3 * 224 * 224, tol + 1e-6, 0), label);
            for (k = 0; k < 3 * 224 * 224; k++) sum += fabs(got.data[k] - want.data[k]);
            snprintf(label, sizeof label, "preprocess %s: mean |d| %.3f/255", name, sum / (3 * 224 * 224) * 255);
            expect(sum / (3 * 224 * 224) <= 0.5 / 255, label);
        }
    fclose(f);
    vit_arena_free(&a);
}

/* vit_model_preprocess on metadata of every shape: each key's rule and
   each refusal, on the clip case with its metadata swapped. */
static void test_model_preprocess(const char *dir) {
    static const struct {
        const char *k1, *v1, *k2, *v2;
        vit_result want;
        int resize, crop, bicubic, squash, floor_;
        float mean0, mean2;
    } T[] = {
        {NULL, NULL, NULL, NULL, VIT_OK, 36, 32, 0, 0, 0, 0.485f, 0.406f},               /* torchvision's 256/224 */
        {"input_mean", "0.5", "input_std", "0.25", VIT_OK, 32, 32, 0, 0, 0, 0.5f, 0.5f},   /* a model trained here */
        {"input_crop_pct", "0.9", "input_interpolation", "bicubic", VIT_OK, 35, 32, 1, 0, 0, 0.485f, 0.406f},
        {"input_resize", "40", "input_crop_mode", "squash", VIT_OK, 40, 32, 0, 1, 0, 0.485f, 0.406f},
        {"input_crop", "24", "input_crop_offset", "floor", VIT_OK, 27, 24, 0, 0, 1, 0.485f, 0.406f},
        {"input_mean", "0.1,0.2,0.3", "input_std", "1,2,3", VIT_OK, 32, 32, 0, 0, 0, 0.1f, 0.3f},
        {"input_mean", "0.1,0.2", "input_std", "1", VIT_ERR_FORMAT, 0, 0, 0, 0, 0, 0, 0},
        {"input_mean", "0.5x", "input_std", "1", VIT_ERR_FORMAT, 0, 0, 0, 0, 0, 0, 0},
        {"input_mean", "0.5", "input_std", "0.5,0,0.5", VIT_ERR_FORMAT, 0, 0, 0, 0, 0, 0, 0},
        {"input_mean", "0.5", NULL, NULL, VIT_ERR_FORMAT, 0, 0, 0, 0, 0, 0, 0},
        {"input_crop_pct", "1.5", NULL, NULL, VIT_ERR_FORMAT, 0, 0, 0, 0, 0, 0, 0},
        {"input_crop_pct", "0", NULL, NULL, VIT_ERR_FORMAT, 0, 0, 0, 0, 0, 0, 0},
        {"input_resize", "16", NULL, NULL, VIT_ERR_FORMAT, 0, 0, 0, 0, 0, 0, 0},
        {"input_resize", "40,48", NULL, NULL, VIT_ERR_UNSUPPORTED, 0, 0, 0, 0, 0, 0, 0},
        {"input_crop", "0", NULL, NULL, VIT_ERR_FORMAT, 0, 0, 0, 0, 0, 0, 0},
        {"input_interpolation", "lanczos", NULL, NULL, VIT_ERR_UNSUPPORTED, 0, 0, 0, 0, 0, 0, 0},
        {"input_crop_mode", "border", NULL, NULL, VIT_ERR_UNSUPPORTED, 0, 0, 0, 0, 0, 0, 0},
        {"input_crop_offset", "up", NULL, NULL, VIT_ERR_FORMAT, 0, 0, 0, 0, 0, 0, 0},
    };
    char path[1024], label[1024];
    vit_model m;
    vit_preprocess p;
    const char **saved, *meta[4];
    int32_t n_saved;
    size_t i;
    snprintf(path, sizeof path, "%s/clip/model.safetensors", dir);
    if (vit_model_load_file(&m, path) != VIT_OK) {
        expect(0, path);
        return;
    }
    saved = m.meta;
    n_saved = m.n_meta;
    for (i = 0; i < sizeof T / sizeof T[0]; i++) {
        vit_result r;
        meta[0] = T[i].k1; meta[1] = T[i].v1; meta[2] = T[i].k2; meta[3] = T[i].v2;
        m.meta = meta;
        m.n_meta = T[i].k2 ? 2 : T[i].k1 ? 1 : 0;
        r = vit_model_preprocess(&m, &p);
        snprintf(label, sizeof label, "vit_model_preprocess %s=%s %s=%s: %s", T[i].k1 ? T[i].k1 : "-",
                 T[i].v1 ? T[i].v1 : "", T[i].k2 ? T[i].k2 : "", T[i].v2 ? T[i].v2 : "",
                 r == VIT_OK ? "ok" : vit_last_error());
        if (T[i].want != VIT_OK) {
            expect(r == T[i].want, label);
            continue;
        }
        expect(r == VIT_OK && p.resize == T[i].resize && p.crop == T[i].crop &&
                   (p.resample == VIT_RESAMPLE_BICUBIC) == T[i].bicubic && p.squash == T[i].squash &&
                   p.crop_floor == T[i].floor_ && p.mean[0] == T[i].mean0 && p.mean[2] == T[i].mean2,
               label);
    }
    m.meta = saved;
    m.n_meta = n_saved;
    vit_model_free(&m);
}

/* vit info's family line, inferred from what each file holds. */
static void test_family(const char *dir) {
    static const char *const want[][2] = {
        {"dinov2", "DINOv2 (layer scale, patch 14)"}, {"dinov2_reg4", "DINOv2 with registers"},
        {"hf_dinov2_reg", "DINOv2 with registers"},   {"dinov2_swiglu", "DINOv2-giant (SwiGLU)"},
        {"clip", "CLIP (LayerNorm"},                  {"clip_quickgelu", "CLIP, OpenAI's"},
        {"hf_clip", "CLIP"},                          {"siglip", "SigLIP"},
        {"hf_siglip", "SigLIP"},                      {"deit_distilled", "DeiT distilled"},
        {"qk_norm", "ViT with qk-norm"},              {"no_cls_avg", "ViT without a class token"},
        {"beit", "BEiT (a relative position bias in every block)"},
        {"beitv2_shared", "BEiT (a relative position bias shared"},
        {"eva02", "EVA-02 (rotary position embeddings, SwiGLU)"},
        {"eva02_base", "EVA-02 (rotary position embeddings, SwiGLU with a LayerNorm inside)"},
        {"eva02_clip", "EVA-02 CLIP tower"},
        {"dinov3", "DINOv3 (rotary position embeddings in halves"},
        {"dinov3_swiglu", "DINOv3 (rotary position embeddings in halves"},
        {"pe_core", "Perception Encoder"},
        {"rope_axial", "RoPE-Axial ViT"},
        {"rope_ape", "RoPE-Axial ViT"},
        {"rope_mixed", "RoPE-Mixed ViT"},
        {"rope_reg_gap", "ViT with EVA-02's rotary position embeddings"},
        {"hf_beit", "BEiT (a relative position bias in every block)"},
        {"hf_beit_shared", "BEiT (a relative position bias shared"},
        {"hf_beit_abs", "BEiT (a position embedding, no relative position bias)"},
        {"hf_beit_nopos", "BEiT (no position embedding and no relative position bias)"},
        {"hf_data2vec", "BEiT (a relative position bias in every block)"}};
    size_t i;
    for (i = 0; i < sizeof want / sizeof want[0]; i++) {
        char path[1024], text[4096], what[160];
        vit_model m;
        snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, want[i][0]);
        snprintf(what, sizeof what, "%s: vit info says family %s", want[i][0], want[i][1]);
        if (vit_model_load_file(&m, path) != VIT_OK) {
            expect(0, what);
            continue;
        }
        vit_model_describe(&m, text, sizeof text);
        expect(strstr(text, "  family: ") && strstr(strstr(text, "  family: "), want[i][1]) ==
                                                  strstr(text, "  family: ") + strlen("  family: "), what);
        vit_model_free(&m);
    }
}

/* A REFUSED line's code. */
static vit_result want_code(const char *code) {
    return !strcmp(code, "UNSUPPORTED") ? VIT_ERR_UNSUPPORTED : !strcmp(code, "FORMAT") ? VIT_ERR_FORMAT : VIT_OK;
}

/* REFUSED: "NAME CODE | MESSAGE" a line; refuse/NAME/model.safetensors
   must fail to load with that code and a message containing MESSAGE. */
static void test_refused(const char *dir) {
    char path[1024], line[1024], name[128], code[32], what[256];
    FILE *f;
    snprintf(path, sizeof path, "%s/REFUSED", dir);
    if (!(f = fopen(path, "r"))) {
        expect(0, "REFUSED can be opened");
        return;
    }
    while (fgets(line, sizeof line, f)) {
        char *msg = strstr(line, " | ");
        vit_model m;
        vit_result r;
        if (!msg || sscanf(line, "%127s %31s", name, code) != 2) continue;
        msg += 3;
        msg[strcspn(msg, "\n")] = 0;
        snprintf(path, sizeof path, "%s/refuse/%s/model.safetensors", dir, name);
        r = vit_model_load_file(&m, path);
        if (r == VIT_OK) vit_model_free(&m);
        snprintf(what, sizeof what, "%s: refused (%s)", name, code);
        if (r != want_code(code) || !strstr(vit_last_error(), msg))
            printf("  %s: got %s \"%s\"\n", name, vit_result_string(r), r == VIT_OK ? "" : vit_last_error());
        expect(r == want_code(code) && strstr(vit_last_error(), msg) != NULL, what);
    }
    fclose(f);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "tests/fixtures/families";
    cases_only = argc > 2 && !strcmp(argv[2], "--cases-only");
    char path[1024], line[600], name[128], photo[512] = "";
    FILE *f;
    /* PREP's photo line: the picture every case's pixels were made from */
    snprintf(path, sizeof path, "%s/PREP", dir);
    if ((f = fopen(path, "r"))) {
        while (fgets(line, sizeof line, f)) sscanf(line, "photo %511s", photo);
        fclose(f);
    }
    if (photo[0] && !exists(photo)) {
        printf("skip the photo's preprocessing: no %s (apt-get install python3-sklearn)\n", photo);
        photo[0] = 0;
    }
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    if (!(f = fopen(path, "r"))) {
        printf("cannot open %s\n", path);
        return 1;
    }
    while (fgets(line, sizeof line, f)) {
        int size = 0;
        if (sscanf(line, "%127s %d", name, &size) >= 1) run_case(dir, name, size, photo[0] ? photo : NULL);
    }
    fclose(f);
    if (!cases_only) {
        test_family(dir);
        test_refused(dir);
        test_preprocess(dir);
        test_model_preprocess(dir);
    }
    printf("test_families: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

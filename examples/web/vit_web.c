/* The C side of the attention-map page (examples/web): a thin API over
   vit.h that `make web` compiles with emcc -msimd128 into
   build/web/vit_web.{js,wasm}, run by the page's worker (worker.js).

     web_model_load(bytes, n)     a .safetensors file; the old model stays on failure
     web_classify(bytes, n)       decode, preprocess as `vit classify` does, forward
     web_map_png(layer, head, px) one attention map over the crop, as /map.png
     web_explain_png(method, cls, px)
                                  one class's map by a vit_explain method, the same
     web_error()                  why the last call failed

   Every int-returning call gives 0 or a vit_result. One model and one image
   at a time; no threads (WebAssembly threads need cross-origin isolation). */
#define VIT_IMPLEMENTATION
#include "vit.h"

#include <emscripten/emscripten.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEB_MAP_PATH "/map.png" /* in Emscripten's in-memory file system */

static struct {
    vit_model m;          /* a ViT classifier when file != NULL */
    void *file;           /* the model file: F32 weights are used in place */
    vit_preprocess pp;    /* as cli/vit.c classify chooses it for m */
    vit_arena act;        /* the forward's activations, for one image */
    vit_arena img;        /* one image: see image_stage() */
    vit_tensor x;         /* (1, C, S, S) the model's input */
    vit_tensor seen;      /* (C, S, S) the crop in [0, 1], for drawing */
    vit_tensor *att;      /* depth tensors (1, NH, T, T), valid after web_classify */
    float *prob;          /* num_classes probabilities */
    float *map;           /* (G, G): one map for web_map_png */
    vit_arena ex;         /* vit_explain's scratch and its map: grown to the largest method asked for */
    float *ex_map;        /* (ex_side, ex_side): the last web_explain_png map, raw */
    int32_t ex_side;      /* G for the token maps, the crop's size for the pixel maps */
    double forward_ms;    /* wall time of the last vit_model_forward */
    unsigned char viridis[256 * 3]; /* vit_colormap at v = i / 255, for the page's legend */
    char err[640];        /* web_error() */
} W;

static int fail(vit_result r) {
    snprintf(W.err, sizeof W.err, "%s (%s)", vit_last_error(), vit_result_string(r));
    return (int)r;
}

static int fail_msg(vit_result r, const char *msg) {
    snprintf(W.err, sizeof W.err, "%s", msg);
    return (int)r;
}

EMSCRIPTEN_KEEPALIVE const char *web_error(void) { return W.err; }

/* Takes `data` (from malloc; freed here on failure or when replaced). */
EMSCRIPTEN_KEEPALIVE int web_model_load(void *data, size_t size) {
    vit_model m;
    vit_preprocess pp;
    vit_arena act;
    vit_tensor probe;
    vit_forward_opts opts;
    vit_result r;
    size_t bytes;
    if (!data) return fail_msg(VIT_ERR_OOM, "no memory for the model file");
    if ((r = vit_model_load_memory(&m, data, size)) != VIT_OK) {
        free(data);
        return fail(r);
    }
    if (m.kind != VIT_KIND_VIT || m.cfg.num_classes < 1 || (m.cfg.in_channels != 1 && m.cfg.in_channels != 3) ||
        !m.cfg.class_token) {
        snprintf(W.err, sizeof W.err,
                 "this page runs ViT classifiers with a class token on grey or RGB images; the file holds %s%s",
                 vit_kind_name(m.kind),
                 m.kind != VIT_KIND_VIT  ? ""
                 : m.cfg.num_classes < 1 ? " without a head"
                 : !m.cfg.class_token    ? " without a class token (its maps would have no row to show)"
                                         : " with an input that is neither grey nor RGB");
        vit_model_free(&m);
        free(data);
        return VIT_ERR_UNSUPPORTED;
    }
    /* the preprocessing the file asks for (vit_model_preprocess: its
       mean/std, timm's crop_pct, else torchvision's 256/224 resize); a
       crop other than the model's size, the position embedding resized */
    if ((r = vit_model_preprocess(&m, &pp)) != VIT_OK ||
        (pp.crop != m.cfg.image_size && (r = vit_model_set_image_size(&m, pp.crop)) != VIT_OK)) {
        vit_model_free(&m);
        free(data);
        return fail(r);
    }
    /* The activations of one forward with its attention maps. */
    memset(&probe, 0, sizeof probe);
    probe.ndim = 4;
    probe.shape[0] = 1;
    probe.shape[1] = m.cfg.in_channels;
    probe.shape[2] = probe.shape[3] = m.cfg.image_size;
    memset(&opts, 0, sizeof opts);
    opts.attn = &probe; /* vit_model_memory only looks at whether it is set */
    if ((r = vit_model_memory(&m, &probe, &opts, &bytes)) != VIT_OK ||
        (r = vit_arena_init_alloc(&act, bytes)) != VIT_OK) {
        vit_model_free(&m);
        free(data);
        return fail(r);
    }
    vit_arena_free(&W.ex);
    vit_arena_free(&W.img);
    vit_arena_free(&W.act);
    vit_model_free(&W.m);
    free(W.file);
    W.m = m;
    W.file = data;
    W.pp = pp;
    W.act = act;
    W.att = NULL;
    W.ex_map = NULL;
    return 0;
}

/* What the model is, for the page: {image_size, in_channels, patch_size,
   depth, heads, num_classes, grid side G, preprocess resize, crop}. */
EMSCRIPTEN_KEEPALIVE const int32_t *web_model_shape(void) {
    static int32_t s[9];
    const vit_config *c = &W.m.cfg;
    s[0] = c->image_size; s[1] = c->in_channels; s[2] = c->patch_size;
    s[3] = c->depth; s[4] = c->heads; s[5] = c->num_classes;
    s[6] = c->patch_size ? c->image_size / c->patch_size : 0;
    s[7] = W.pp.resize; s[8] = W.pp.crop;
    return s;
}
/* The preprocessing's mean[3], then std[3]. */
EMSCRIPTEN_KEEPALIVE const float *web_model_norm(void) {
    static float v[6];
    memcpy(v, W.pp.mean, sizeof W.pp.mean);
    memcpy(v + 3, W.pp.std, sizeof W.pp.std);
    return v;
}
EMSCRIPTEN_KEEPALIVE double web_model_params(void) { return (double)W.m.n_params; }
EMSCRIPTEN_KEEPALIVE const char *web_model_naming(void) { return W.m.naming; }
EMSCRIPTEN_KEEPALIVE const char *web_model_meta(const char *key) { return W.file ? vit_model_meta(&W.m, key) : NULL; }
/* Class k's name from the file (vit_model_label), else NULL. */
EMSCRIPTEN_KEEPALIVE const char *web_label(int32_t k) { return W.file ? vit_model_label(&W.m, k) : NULL; }

/* Everything one image needs besides the forward's activations, from a:
   the decoded image, the model's input, the crop as seen, the
   probabilities, the attention table, one map, and room for
   vit_map_rollout's scratch (three T x T matrices and T row sums, taken
   last and given back). With a counting arena it only sizes. */
static vit_result image_stage(vit_arena *a, const void *data, size_t size) {
    const vit_config *c = &W.m.cfg;
    int32_t G = c->image_size / c->patch_size, T = G * G + vit_model_prefix_tokens(&W.m), ch, i;
    size_t n, j, mark;
    vit_tensor img;
    vit_result r;
    if ((r = vit_image_load_memory(a, data, size, c->in_channels, &img)) != VIT_OK) return r;
    if ((r = vit_image_preprocess(a, &img, &W.pp, &W.x)) != VIT_OK) return r;
    if ((r = vit_tensor_init(a, &W.seen, 3, W.x.shape + 1)) != VIT_OK) return r;
    W.prob = (float *)vit_arena_alloc(a, (size_t)c->num_classes * sizeof(float));
    W.att = (vit_tensor *)vit_arena_alloc(a, (size_t)c->depth * sizeof(vit_tensor));
    W.map = (float *)vit_arena_alloc(a, (size_t)(T - 1) * sizeof(float)); /* every token's but the class token's */
    mark = vit_arena_mark(a);
    for (i = 0; i < 3; i++)
        if (!vit_arena_alloc(a, (size_t)T * T * sizeof(float))) return VIT_ERR_OOM;
    if (!W.prob || !W.att || !W.map || !vit_arena_alloc(a, (size_t)T * sizeof(float))) return VIT_ERR_OOM;
    vit_arena_rewind(a, mark);
    if (vit_arena_counting(a)) return VIT_OK;
    /* The crop as the model saw it, normalisation undone. */
    n = (size_t)W.x.shape[2] * W.x.shape[3];
    for (ch = 0; ch < c->in_channels; ch++)
        for (j = 0; j < n; j++) W.seen.data[ch * n + j] = W.x.data[ch * n + j] * W.pp.std[ch] + W.pp.mean[ch];
    return VIT_OK;
}

/* Decodes the image (PNG, JPEG, BMP, GIF, ...; grey and alpha converted as
   `vit classify` converts them), preprocesses it as `vit classify` does,
   runs the model with its attention maps, and keeps the probabilities. */
EMSCRIPTEN_KEEPALIVE int web_classify(const void *data, size_t size) {
    vit_arena count;
    vit_forward_opts opts;
    vit_tensor logits;
    vit_result r;
    double t0;
    if (!W.file) return fail_msg(VIT_ERR_ARG, "no model loaded");
    /* Size the image's arena with a counting pass, then fill it. */
    vit_arena_free(&W.img);
    vit_arena_init(&count, NULL, 0);
    if ((r = image_stage(&count, data, size)) == VIT_OK &&
        (r = vit_arena_init_alloc(&W.img, count.peak + VIT_ALIGN)) == VIT_OK &&
        (r = image_stage(&W.img, data, size)) == VIT_OK) {
        memset(&opts, 0, sizeof opts);
        opts.attn = W.att;
        vit_arena_reset(&W.act);
        t0 = emscripten_get_now();
        r = vit_model_forward(&W.m, &W.act, &W.x, &opts, &logits);
        W.forward_ms = emscripten_get_now() - t0;
    }
    W.ex_map = NULL; /* the last image's */
    if (r != VIT_OK) {
        W.att = NULL; /* no maps to draw */
        return fail(r);
    }
    vit_k_softmax(W.prob, logits.data, 1, W.m.cfg.num_classes);
    return 0;
}

EMSCRIPTEN_KEEPALIVE const float *web_probs(void) { return W.prob; }
EMSCRIPTEN_KEEPALIVE double web_forward_ms(void) { return W.forward_ms; }
/* The model's input of the last image: (1, C, S, S) floats. */
EMSCRIPTEN_KEEPALIVE const float *web_input(void) { return W.x.data; }

/* One map of the last image over its crop, as a px x px PNG at
   WEB_MAP_PATH: layer < 0: the rollout through all layers (mean of the
   heads); else the class token's attention in that layer, to one head, or
   the mean of the heads when head < 0. px == 0: the crop alone, its size. */
EMSCRIPTEN_KEEPALIVE int web_map_png(int32_t layer, int32_t head, int32_t px) {
    const vit_config *c = &W.m.cfg;
    int32_t G = c->image_size / c->patch_size;
    vit_rollout_params rp = {VIT_FUSE_MEAN, 0.0f, 0};
    vit_result r;
    if (!W.att) return fail_msg(VIT_ERR_ARG, "no image classified yet");
    if (layer >= c->depth || head >= c->heads || px < 0) return fail_msg(VIT_ERR_ARG, "no such layer, head or size");
    if (px == 0) r = vit_png_image(WEB_MAP_PATH, &W.seen);
    else if ((r = layer < 0 ? vit_map_rollout(&W.img, W.att, c->depth, 0, &rp, W.map)
                            : vit_map_cls(&W.att[layer], 0, head, VIT_FUSE_MEAN, W.map)) == VIT_OK)
        r = vit_png_grid(WEB_MAP_PATH, &W.seen, W.map + vit_model_prefix_tokens(&W.m) - 1, 1, G, G, 1, px,
                         0.55f); /* the patches' part */
    return r == VIT_OK ? 0 : fail(r);
}

/* vit_method_name(method) for 0 <= method < VIT_METHOD_COUNT, else NULL:
   the page's table of methods by name. */
EMSCRIPTEN_KEEPALIVE const char *web_method_name(int32_t method) {
    return method >= 0 && method < VIT_METHOD_COUNT ? vit_method_name((vit_method)method) : NULL;
}

/* Class cls's map by `method` (a vit_method) for the last image, over its
   crop, as a px x px PNG at WEB_MAP_PATH; the raw map stays at
   web_explain_map() until the next image. The parameters are `vit maps
   --method`'s defaults: vit-explain's discard ratio 0.9 for the rollouts,
   16 steps for integrated gradients. The arena is sized by
   vit_explain_memory and kept for the model, grown when a method needs
   more (integrated gradients the most). A BF16 or I8 file is refused by
   vit_explain_memory with its reason: the reverse pass is F32's. */
EMSCRIPTEN_KEEPALIVE int web_explain_png(int32_t method, int32_t cls, int32_t px) {
    const vit_config *c = &W.m.cfg;
    vit_explain_params ep;
    size_t bytes, need;
    int32_t n;
    float *map;
    vit_result r;
    if (!W.att) return fail_msg(VIT_ERR_ARG, "no image classified yet");
    if (method < 0 || method >= VIT_METHOD_COUNT || cls < 0 || cls >= c->num_classes || px < 1)
        return fail_msg(VIT_ERR_ARG, "no such method, class or size");
    memset(&ep, 0, sizeof ep);
    ep.discard_ratio = method == VIT_METHOD_ROLLOUT || method == VIT_METHOD_GRAD_ROLLOUT ? 0.9f : 0.0f;
    ep.ig_steps = 16;
    if ((r = vit_explain_memory(&W.m, &W.x, (vit_method)method, &ep, &bytes)) != VIT_OK) return fail(r);

    /* the map first, then the scratch vit_explain takes and gives back */
    n = vit_explain_size(&W.m, (vit_method)method);
    need = (size_t)n * sizeof(float) + VIT_ALIGN;
    if (bytes > SIZE_MAX - need) /* size_t is 32 bits here */
        return fail_msg(VIT_ERR_OOM, "this explanation needs more memory than WebAssembly addresses");
    need += bytes;
    W.ex_map = NULL;
    if (W.ex.size < need) {
        vit_arena_free(&W.ex);
        if ((r = vit_arena_init_alloc(&W.ex, need)) != VIT_OK) return fail(r);
    }
    vit_arena_reset(&W.ex);
    if (!(map = (float *)vit_arena_alloc(&W.ex, (size_t)n * sizeof(float)))) return fail(VIT_ERR_OOM);
    if ((r = vit_explain(&W.m, &W.ex, &W.x, (vit_method)method, cls, NULL, &ep, map)) != VIT_OK) return fail(r);
    W.ex_map = map;
    W.ex_side = method >= VIT_METHOD_SALIENCY ? c->image_size : c->image_size / c->patch_size;
    r = vit_png_grid(WEB_MAP_PATH, &W.seen, map, 1, W.ex_side, W.ex_side, 1, px, 0.55f);
    return r == VIT_OK ? 0 : fail(r);
}

/* The last web_explain_png map, web_explain_side() squared floats; NULL
   before one or after a new image. */
EMSCRIPTEN_KEEPALIVE const float *web_explain_map(void) { return W.ex_map; }
EMSCRIPTEN_KEEPALIVE int32_t web_explain_side(void) { return W.ex_side; }

/* 256 viridis colours (vit_colormap), RGB, for the page's colour bar. */
EMSCRIPTEN_KEEPALIVE const unsigned char *web_viridis(void) {
    int i;
    for (i = 0; i < 256; i++) vit_colormap(i / 255.0f, W.viridis + 3 * i);
    return W.viridis;
}

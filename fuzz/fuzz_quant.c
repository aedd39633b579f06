/* libFuzzer target, differential: a weights file (BF16 and I8 files are
   what it is for) loaded from a file, where vit.h packs dense BF16 and I8
   weights in place, against the same bytes loaded from memory, where they
   stay row-major. The two loads must agree (the same result code), and an
   accepted model's forward must give the same bits from both, on an input
   the first byte picks: small values, +-3e38 (a range past FLT_MAX, which
   an I8 product must not turn into an int conversion of a NaN), one 1e30
   among small values, or magnitudes from 1e-30 to 1e30. The rest of the
   input is the file. Any disagreement aborts, which libFuzzer reports. */
#define _POSIX_C_SOURCE 200809L
#define VIT_IMPLEMENTATION
#include "../vit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Input element i of mode (a finite float). */
static float input_value(int mode, size_t i) {
    uint32_t h = (uint32_t)i * 2654435761u;
    switch (mode) {
    case 1: return i % 3 ? 3e38f : -3e38f;
    case 2: return i == 5 ? 1e30f : (float)(i % 7) * 0.25f - 0.5f;
    case 3: return (h & 1 ? -1.0f : 1.0f) * powf(10.0f, (float)((h >> 8) % 61) - 30.0f);
    default: return (float)(i % 7) * 0.25f - 0.5f;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[512];
    vit_model mf, mm;
    vit_load_opts o;
    vit_result rf, rm;
    FILE *f;
    int mode;
    if (size < 1) return 0;
    mode = data[0] % 4;
    data++;
    size--;
    if (!path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/vit_fuzz_quant_%ld.safetensors", dir && dir[0] ? dir : "/tmp", (long)getpid());
    }
    if (!(f = fopen(path, "wb"))) abort();
    if ((size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) abort();

    /* no config.json beside it: a stray one in the temporary folder (a /tmp/config.json) would give the file
       load a config that the memory load never reads */
    memset(&o, 0, sizeof o);
    o.no_config_search = 1;
    rf = vit_model_load_file_ex(&mf, path, &o);
    rm = vit_model_load_memory(&mm, data, size);
    remove(path);
    if (rf != rm) {
        fprintf(stderr, "file load %s, memory load %s\n", vit_result_string(rf), vit_result_string(rm));
        abort();
    }
    if (rf == VIT_OK) {
        vit_arena a, a2;
        vit_tensor x, yf, ym;
        int32_t shape[VIT_MAX_DIMS], ndim = 0, d;
        double elems = 1.0;
        size_t n, i;
        memset(&a2, 0, sizeof a2);
        vit_model_input_shape(&mf, 1, 3, 4, &ndim, shape); /* 3 tokens, or 3 x 4 pixels, where free */
        for (d = 0; d < ndim; d++) elems *= shape[d];
        /* keep the forward cheap: skip configurations that would be slow */
        if (ndim > 0 && elems < 65536 && mf.n_params < 2000000 && vit_arena_init_alloc(&a, 64u << 20) == VIT_OK) {
            if (vit_arena_init_alloc(&a2, 64u << 20) == VIT_OK && vit_tensor_init(&a, &x, ndim, shape) == VIT_OK) {
                n = vit_tensor_numel(&x);
                for (i = 0; i < n; i++) x.data[i] = input_value(mode, i);
                rf = vit_model_forward(&mf, &a, &x, NULL, &yf);
                rm = vit_model_forward(&mm, &a2, &x, NULL, &ym);
                n = rf == VIT_OK ? vit_tensor_numel(&yf) : 0;
                if (rf != rm || (rf == VIT_OK && (yf.ndim != ym.ndim || n != vit_tensor_numel(&ym) ||
                                                  memcmp(yf.data, ym.data, n * sizeof(float))))) {
                    fprintf(stderr, "the file's (packed) and memory's (row-major) forwards differ\n");
                    abort();
                }
            }
            vit_arena_free(&a);
            vit_arena_free(&a2);
        }
        vit_model_free(&mf);
        vit_model_free(&mm);
    }
    return 0;
}

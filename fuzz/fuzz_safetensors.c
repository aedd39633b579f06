/* libFuzzer target: any bytes as a weights file. The loader must refuse or
   accept without touching memory it does not own; an accepted model must
   also survive a forward pass on a small input of the shape it expects. */
#define VIT_IMPLEMENTATION
#include "../vit.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vit_model m;
    if (vit_model_load_memory(&m, data, size) == VIT_OK) {
        vit_arena a;
        vit_tensor x, y;
        int32_t shape[VIT_MAX_DIMS], ndim = 0, d;
        double elems = 1.0;
        size_t n, i;
        vit_model_input_shape(&m, 1, 3, 4, &ndim, shape); /* 3 tokens, or 3 x 4 pixels, where free */
        for (d = 0; d < ndim; d++) elems *= shape[d];
        /* Keep the forward cheap: skip configurations that would be slow. */
        if (ndim > 0 && elems < 65536 && m.n_params < 2000000 && vit_arena_init_alloc(&a, 64u << 20) == VIT_OK) {
            if (vit_tensor_init(&a, &x, ndim, shape) == VIT_OK) {
                n = vit_tensor_numel(&x);
                for (i = 0; i < n; i++) x.data[i] = (float)(i % 7) * 0.25f - 0.5f;
                vit_model_forward(&m, &a, &x, NULL, &y);
            }
            vit_arena_free(&a);
        }
        vit_model_free(&m);
    }
    return 0;
}

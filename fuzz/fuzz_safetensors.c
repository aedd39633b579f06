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
        int32_t shape[4] = {1, 1, 1, 1}, ndim = 3;
        size_t n, i;
        switch (m.kind) {
        case VIT_KIND_VIT: case VIT_KIND_PATCH:
            ndim = 4; shape[1] = m.patch.in_channels; shape[2] = shape[3] = m.patch.image_size; break;
        case VIT_KIND_MHA: shape[1] = 3; shape[2] = m.mha.dim; break;
        case VIT_KIND_MLP: shape[1] = 2; shape[2] = m.mlp.in_dim; break;
        case VIT_KIND_BLOCK: shape[1] = 3; shape[2] = m.block.dim; break;
        default: shape[1] = 4; shape[2] = 4; break;
        }
        /* Keep the forward cheap: skip configurations that would be slow. */
        if ((double)shape[1] * shape[2] * shape[3] < 65536 && m.n_params < 2000000 && vit_arena_init_alloc(&a, 64u << 20) == VIT_OK) {
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

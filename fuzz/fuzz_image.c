/* libFuzzer target: any bytes as an image, then torchvision's preprocessing
   of whatever decodes. Images past 2^16 pixels are decoded but not
   preprocessed: the resize's cost grows with the pixels, not its paths
   (tests/test_maps.c covers extreme sizes). */
#define VIT_IMPLEMENTATION
#include "../vit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vit_arena a;
    vit_tensor img, x;
    vit_preprocess p = {0};
    if (size < 2 || vit_arena_init_alloc(&a, 64u << 20) != VIT_OK) return 0;
    p.resize = 40;
    p.crop = 32;
    if (vit_image_load_memory(&a, data + 1, size - 1, data[0] & 1 ? 3 : 1, &img) == VIT_OK &&
        (double)img.shape[1] * img.shape[2] <= 65536)
        vit_image_preprocess(&a, &img, &p, &x);
    vit_arena_free(&a);
    return 0;
}

/* libFuzzer target: any bytes as an image, then torchvision's preprocessing
   of whatever decodes. The first byte chooses the channels (bit 0) and the
   resize and crop (bits 1-3), extreme ones included; the rest is the file.
   Every decoded image is sized in a counting arena, which runs all the
   dimension checks and refusals but no pixel work, so that images of any
   size stay cheap; those up to 2^16 pixels are also preprocessed for real.
   Under MemorySanitizer, every decoded value must be initialised. */
#define VIT_IMPLEMENTATION
#include "../vit.h"
#include "../tests/check.h" /* CHECK_INITIALISED */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const int32_t sizes[8][2] = {{40, 32}, {256, 224}, {1, 1}, {2000000000, 224}, {16777216, 16777216},
                                        {64, 64}, {40, 40},   {33, 7}};
    static vit_arena a; /* made once: a fresh 64 MB a run would cost more than the run */
    vit_arena count;
    vit_tensor img, x;
    vit_preprocess p = {0};
    if (size < 2 || (!a.base && vit_arena_init_alloc(&a, 64u << 20) != VIT_OK)) return 0;
    vit_arena_reset(&a);
    p.resize = sizes[data[0] >> 1 & 7][0];
    p.crop = sizes[data[0] >> 1 & 7][1];
    if (vit_image_load_memory(&a, data + 1, size - 1, data[0] & 1 ? 3 : 1, &img) == VIT_OK) {
        CHECK_INITIALISED(img.data, vit_tensor_numel(&img) * sizeof(float));
        vit_arena_init(&count, NULL, ~(size_t)0);
        vit_image_preprocess(&count, &img, &p, &x);
        if ((double)img.shape[1] * img.shape[2] <= 65536 && vit_image_preprocess(&a, &img, &p, &x) == VIT_OK)
            CHECK_INITIALISED(x.data, vit_tensor_numel(&x) * sizeof(float));
    }
    return 0;
}

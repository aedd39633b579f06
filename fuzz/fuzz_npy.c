/* libFuzzer target: any bytes as a .npy file. */
#define VIT_IMPLEMENTATION
#include "../vit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vit_arena a;
    vit_tensor t;
    if (vit_arena_init_alloc(&a, 1u << 20) != VIT_OK) return 0;
    vit_npy_load_memory(&a, data, size, &t); /* an arena of 1 MiB bounds what it may allocate */
    vit_arena_free(&a);
    return 0;
}

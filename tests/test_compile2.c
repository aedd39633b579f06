/* Second translation unit of tests/test_compile.c: its own private copy. */
#define VIT_STATIC
#define VIT_IMPLEMENTATION
#include "vit.h"

int other_unit(void) {
    vit_arena a;
    vit_tensor t;
    int32_t shape[2] = {2, 3};
    vit_arena_init(&a, NULL, 0);
    return vit_tensor_init(&a, &t, 2, shape) == VIT_OK && vit_tensor_numel(&t) == 6 ? 0 : 1;
}

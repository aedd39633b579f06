/* Scaled dot-product attention on a hand-made sequence, no files needed:
   the smallest complete use of vit.h (an arena, a tensor, a module).
   Build: cc -O2 -I. examples/01_sdpa.c -o sdpa -lm */
#define VIT_IMPLEMENTATION
#include "vit.h"

#include <stdio.h>

int main(void) {
    static unsigned char memory[1 << 16]; /* all the memory this program uses */
    vit_arena a;
    vit_tensor x, y, att;
    vit_sdpa_params p = {0};              /* scale 0: 1/sqrt(C) */
    int32_t shape[3] = {1, 4, 3};         /* (B, N, C): 4 tokens of 3 features */
    int i, j;
    vit_arena_init(&a, memory, sizeof memory);
    if (vit_tensor_init(&a, &x, 3, shape) != VIT_OK) return 1;
    /* Tokens 0 and 2 point the same way, so they should attend to each other. */
    {
        static const float tokens[12] = {1, 0, 0, 0, 1, 0, 1, 0.1f, 0, 0, 0, 1};
        for (i = 0; i < 12; i++) x.data[i] = tokens[i] * 3.0f;
    }
    if (vit_sdpa_forward(&a, &p, &x, &y, &att) != VIT_OK) {
        fprintf(stderr, "01_sdpa: %s\n", vit_last_error()); /* the message starts "sdpa: " already */
        return 1;
    }
    printf("attention (row = query token, column = key token):\n");
    for (i = 0; i < 4; i++) {
        for (j = 0; j < 4; j++) printf(" %.3f", att.data[i * 4 + j]);
        printf("\n");
    }
    printf("output token 0: %.3f %.3f %.3f\n", y.data[0], y.data[1], y.data[2]);
    /* of the 64 KiB: a.size is less by however far the array starts from a 64-byte line, which is the linker's */
    printf("arena used %zu of %zu bytes\n", a.peak, sizeof memory);
    return 0;
}

/* The header compiles as C99 and as C++, twice in one translation unit, and
   with VIT_STATIC in two translation units of one program
   (tests/test_compile2.c is the other). */
#define VIT_STATIC
#define VIT_IMPLEMENTATION
#include "vit.h"
#include "vit.h"

#include <stdio.h>
#include <string.h>

int other_unit(void);

int main(void) {
    int ok = strcmp(vit_version(), VIT_VERSION_STRING) == 0 && other_unit() == 0;
    printf("test_compile: %d passed, %d failed\n", ok, !ok);
    return !ok;
}

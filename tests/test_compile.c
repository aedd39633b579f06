/* The header compiles as C99 and as C++, twice in one translation unit, and
   with VIT_STATIC in two translation units of one program
   (tests/test_compile2.c is the other); its version numbers match its string. */
#define VIT_STATIC
#define VIT_IMPLEMENTATION
#include "vit.h"
#include "vit.h"

#include <stdio.h>
#include <string.h>

int other_unit(void);

int main(void) {
    char parts[32]; /* the version's numbers say what its string says */
    int ok;
    snprintf(parts, sizeof parts, "%d.%d.%d", VIT_VERSION_MAJOR, VIT_VERSION_MINOR, VIT_VERSION_PATCH);
    ok = strcmp(vit_version(), VIT_VERSION_STRING) == 0 && strcmp(parts, VIT_VERSION_STRING) == 0 &&
         other_unit() == 0;
    printf("test_compile: %d passed, %d failed\n", ok, !ok);
    return !ok;
}

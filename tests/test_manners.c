/* vit.h's manners toward the program that includes it: vit_set_threads /
   vit_get_threads (the pool's count, 1 under VIT_NO_THREADS; refusals
   leave the count alone), and, with -DMANNERS_UNUSED, a static
   function after the implementation that the compiler must still report
   as unused (tests/run.sh's header-manners step greps for it).
   Usage: test_manners THREADS   (the count vit_set_threads(THREADS) should give) */
#define VIT_IMPLEMENTATION
#include "vit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MANNERS_UNUSED
static int unused_after_vit(void) { return 0; }
#endif

static int passed, failed;
static void expect(int ok, const char *what) {
    if (ok) passed++;
    else { failed++; printf("FAIL %s\n", what); }
}

int main(int argc, char **argv) {
    int want = argc > 1 ? atoi(argv[1]) : 1, before;
    expect(vit_set_threads(1) == VIT_OK && vit_get_threads() == 1, "vit_set_threads(1): one thread");
    before = vit_get_threads();
    expect(vit_set_threads(0) == VIT_ERR_ARG && strstr(vit_last_error(), "threads: 0 is not in 1..1024") != NULL,
           "vit_set_threads(0) refused, named");
    expect(vit_set_threads(-3) == VIT_ERR_ARG, "vit_set_threads(-3) refused");
    expect(vit_set_threads(VIT_MAX_THREADS + 1) == VIT_ERR_ARG, "vit_set_threads(VIT_MAX_THREADS + 1) refused");
    expect(vit_get_threads() == before, "refusals leave the count");
    expect(vit_set_threads(2) == VIT_OK && vit_get_threads() == want, "vit_set_threads(2): the build's count");
    printf("test_manners: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}

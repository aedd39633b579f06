/* The test programs that reach inside the implementation, in one translation
   unit with it: test_errors hooks vit.h's name comparison (VIT__NAME_CMP, so
   it comes first), test_kernels, test_quant, test_maps and test_reverse
   call private vit__ functions. tests/run.sh compiles this once per build and the other
   programs against that build's vit.o (in most builds this file without its main, below: the
   build's one compile of the implementation); each file still builds on its own.
   Usage: test_internal errors|kernels|quant|maps|reverse [that program's arguments]
   Compiled with -DTEST_INTERNAL_NO_MAIN it is an object without main (the MemorySanitizer build's one compile of
   the implementation, which its fuzzers link too, and tests/run.sh's ONE_OBJ builds' vit.o); with
   -DTEST_INTERNAL_MAIN_ONLY, the main that runs it. */
#ifdef TEST_INTERNAL_MAIN_ONLY
int test_internal_main(int argc, char **argv);
int main(int argc, char **argv) { return test_internal_main(argc, argv); }
#else
/* emcc's clang 14 inlines SIMDe's loops, marked for vectorisation, into
   these tests' mains and says it could not vectorise them there (vit.h keeps
   its own loops out of line, vit__parallel): a note about a hint, not a
   fault, that one translation unit of four programs makes likelier. */
#if defined(__clang__) && defined(__EMSCRIPTEN__)
#pragma clang diagnostic ignored "-Wpass-failed"
#endif
/* x's row blocks for packed F32 weights (vit__gemm_row_blocks) from 64 KiB, not 512: test_quant's 800-row products
   reach both of its blockings at sizes ASan runs in a second. */
#define VIT__MC_BYTES (64 * 1024)
/* I8 products' outputs streamed past the caches from 4 MiB, not 64: test_quant's 4.5 MB product takes that path */
#define VIT__Y_STREAM_BYTES 4194304.0
/* I8 MLPs in chunks of rows from 64 KiB of hidden features, not 2.5 MiB: test_quant's 600-row MLP runs in ten */
#define VIT__MLP_CHUNK_BYTES (64 * 1024.0)
/* every MLP's hidden features at a padded row stride (vit__ld_x), not only those a multiple of 512 floats: the
   models of test_reverse and test_maps (SwiGLU, EVA-02's and BEiT's LayerNorm before fc2) run that path */
#define VIT__LD_X_PAD 1
#define main test_errors_main
#include "test_errors.c"
#undef main
#define main test_kernels_main
#include "test_kernels.c"
#undef main
#define main test_quant_main
#include "test_quant.c"
#undef main
#define main test_maps_main
#include "test_maps.c"
#undef main
#define main test_reverse_main
#include "test_reverse.c"
#undef main

int test_internal_main(int argc, char **argv);
int test_internal_main(int argc, char **argv) {
    const char *t = argc > 1 ? argv[1] : "";
    if (!strcmp(t, "errors")) return test_errors_main(argc - 1, argv + 1);
    if (!strcmp(t, "kernels")) return test_kernels_main();
    if (!strcmp(t, "quant")) return test_quant_main(argc - 1, argv + 1);
    if (!strcmp(t, "maps")) return test_maps_main(argc - 1, argv + 1);
    if (!strcmp(t, "reverse")) return test_reverse_main(argc - 1, argv + 1);
    fprintf(stderr, "usage: test_internal errors|kernels|quant|maps|reverse [arguments]\n");
    return 2;
}
#ifndef TEST_INTERNAL_NO_MAIN
int main(int argc, char **argv) { return test_internal_main(argc, argv); }
#endif
#endif

// A separately compiled library with private state in ZA (za_lib_dot.h): a 4 x 4 int32
// accumulator of 4-way int8 dot products, kept across calls in rows and columns 0 to 3 of
// ZA0.S and updated by SMOPA (predicated to 16 bytes, so it works at every SVL).
//
// Its state is in a ZA context of its own (za_lib_context.h), so its callers' ZA and PSTATE.ZA
// are untouched. Built with -DZA_LIB_NO_CONTEXTS it is in the thread's one ZA: another user of
// ZA0.S corrupts it, and the functions return with PSTATE.ZA on, which the AAPCS64 forbids a
// private-ZA function.
#include "za_lib_dot.h"
#include "za_lib_context.h"

static _Thread_local int context;

// SMSTART ZA zeroes ZA only when PSTATE.ZA changes from 0 to 1: the state of earlier calls
// stays. (ACLE's ZA intrinsics need __arm_inout("za"), which a private-ZA function cannot
// call: hence inline assembly.)
__arm_locally_streaming static void tile_accumulate(const int8_t *a, const int8_t *b) {
    __asm__ volatile("smstart za\n\t"
                     "ptrue p0.b, vl16\n\t"
                     "ld1b {z0.b}, p0/z, [%0]\n\t"
                     "ld1b {z1.b}, p0/z, [%1]\n\t"
                     "smopa za0.s, p0/m, p0/m, z0.b, z1.b"
                     : : "r"(a), "r"(b) : "z0", "z1", "p0", "memory");
}

__arm_locally_streaming static void tile_get(int32_t *out) {
    __asm__ volatile("smstart za\n\t"
                     "ptrue p0.s, vl4\n\t"
                     "mov w12, #0\n\t"
                     "mova z0.s, p0/m, za0h.s[w12, 0]\n\t"
                     "st1w {z0.s}, p0, [%0]\n\t"
                     "mova z0.s, p0/m, za0h.s[w12, 1]\n\t"
                     "st1w {z0.s}, p0, [%1]\n\t"
                     "mova z0.s, p0/m, za0h.s[w12, 2]\n\t"
                     "st1w {z0.s}, p0, [%2]\n\t"
                     "mova z0.s, p0/m, za0h.s[w12, 3]\n\t"
                     "st1w {z0.s}, p0, [%3]"
                     : : "r"(out), "r"(out + 4), "r"(out + 8), "r"(out + 12)
                     : "z0", "p0", "w12", "memory");
}

__arm_locally_streaming static void tile_reset(void) {
    __asm__ volatile("smstart za\n\t"
                     "zero {za0.s}");
}

void dot_add(const int8_t a[16], const int8_t b[16]) {
    int previous = za_lib_enter(&context, "za_lib_dot");
    tile_accumulate(a, b);
    za_lib_leave(context, previous, "za_lib_dot");
}

void dot_get(int32_t out[16]) {
    int previous = za_lib_enter(&context, "za_lib_dot");
    tile_get(out);
    za_lib_leave(context, previous, "za_lib_dot");
}

void dot_reset(void) {
    int previous = za_lib_enter(&context, "za_lib_dot");
    tile_reset();
    za_lib_leave(context, previous, "za_lib_dot");
}

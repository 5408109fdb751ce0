// A separately compiled library with private state in ZA (za_lib_sum.h): a running sum of
// 4-element float vectors, kept across calls in elements 0 to 3 of ZA0.S horizontal slice 0.
// Read into Z0 with MOVA, added to with FADD, written back with MOVA; predicated to 4 lanes,
// so it works at every SVL.
//
// Its state is in a ZA context of its own (za_lib_context.h), so its callers' ZA and PSTATE.ZA
// are untouched. Built with -DZA_LIB_NO_CONTEXTS it is in the thread's one ZA: another user of
// ZA0.S corrupts it, and the functions return with PSTATE.ZA on, which the AAPCS64 forbids a
// private-ZA function.
#include "za_lib_sum.h"
#include "za_lib_context.h"

static _Thread_local int context;

// SMSTART ZA zeroes ZA only when PSTATE.ZA changes from 0 to 1: the state of earlier calls
// stays. (ACLE's ZA intrinsics need __arm_inout("za"), which a private-ZA function cannot
// call: hence inline assembly.)
__arm_locally_streaming static void slice_add(const float *v) {
    __asm__ volatile("smstart za\n\t"
                     "ptrue p0.s, vl4\n\t"
                     "mov w12, #0\n\t"
                     "ld1w {z1.s}, p0/z, [%0]\n\t"
                     "mova z0.s, p0/m, za0h.s[w12, 0]\n\t"
                     "fadd z0.s, p0/m, z0.s, z1.s\n\t"
                     "mova za0h.s[w12, 0], p0/m, z0.s"
                     : : "r"(v) : "z0", "z1", "p0", "w12", "memory");
}

__arm_locally_streaming static void slice_get(float *out) {
    __asm__ volatile("smstart za\n\t"
                     "ptrue p0.s, vl4\n\t"
                     "mov w12, #0\n\t"
                     "mova z0.s, p0/m, za0h.s[w12, 0]\n\t"
                     "st1w {z0.s}, p0, [%0]"
                     : : "r"(out) : "z0", "p0", "w12", "memory");
}

__arm_locally_streaming static void slice_reset(void) {
    __asm__ volatile("smstart za\n\t"
                     "ptrue p0.s, vl4\n\t"
                     "mov w12, #0\n\t"
                     "mov z0.s, #0\n\t"
                     "mova za0h.s[w12, 0], p0/m, z0.s"
                     : : : "z0", "p0", "w12");
}

void sum_add(const float v[4]) {
    int previous = za_lib_enter(&context, "za_lib_sum");
    slice_add(v);
    za_lib_leave(context, previous, "za_lib_sum");
}

void sum_get(float out[4]) {
    int previous = za_lib_enter(&context, "za_lib_sum");
    slice_get(out);
    za_lib_leave(context, previous, "za_lib_sum");
}

void sum_reset(void) {
    int previous = za_lib_enter(&context, "za_lib_sum");
    slice_reset();
    za_lib_leave(context, previous, "za_lib_sum");
}

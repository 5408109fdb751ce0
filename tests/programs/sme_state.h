// SME state helpers shared by the programs of the kernel model's features: fill ZA0.S with a
// pattern made from a seed, check it, read SVCR, and burn host instructions so that time slices
// end mid-way.
#include <arm_sme.h>
#include <stdint.h>

// 0, unknown to the compiler: with constant slice indices clang 21 -O2 addresses ZA from a W12
// it never sets (see kernel_caller.c).
static volatile uint32_t first_row;

static void fill_za(uint32_t seed) __arm_streaming __arm_inout("za") {
    svbool_t all = svptrue_b32();
    for (uint32_t row = first_row; row < svcntw(); row++)
        svwrite_hor_za32_u32_m(0, row, all, svindex_u32(seed + 100 * row, 3));
}

static int za_is(uint32_t seed) __arm_streaming __arm_inout("za") {
    svbool_t all = svptrue_b32();
    int same = 1;
    for (uint32_t row = first_row; row < svcntw(); row++) {
        svuint32_t slice = svread_hor_za32_u32_m(svdup_u32(0), all, 0, row);
        same &= !svptest_any(all, svcmpne_u32(all, slice, svindex_u32(seed + 100 * row, 3)));
    }
    return same;
}

__attribute__((noinline)) static uint64_t busy(uint64_t steps) {
    volatile uint64_t x = steps;
    for (uint64_t i = 0; i < steps; i++)
        x = x * 6364136223846793005ull + 1;
    return x;
}

// SVCR: bit 0 PSTATE.SM, bit 1 PSTATE.ZA.
static inline uint64_t read_svcr(void) __arm_streaming_compatible {
    uint64_t value;
    __asm__ volatile("mrs %0, svcr" : "=r"(value));
    return value;
}

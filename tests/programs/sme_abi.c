// The SME ABI through the compiler's lowering and zatile's runtime routines: the lazy-save
// scheme (committed by a callee that uses ZA, abandoned by one that does not), an agnostic-ZA
// function preserving ZA around private-ZA calls (__arm_sme_state_size/save/restore),
// locally streaming and streaming-compatible functions (__arm_sme_state), and direct calls of
// __arm_get_current_vg, __arm_sme_state_size and __arm_za_disable. Prints one line per check.
#include <arm_sme.h>
#include <stdint.h>
#include <stdio.h>

uint64_t __arm_get_current_vg(void) __arm_streaming_compatible;
uint64_t __arm_sme_state_size(void) __arm_streaming_compatible;

static volatile int plain_calls, clobber_calls;

// Every 32-bit element of tile za0.s: row * 1000 + column + seed.
static void fill_za(int32_t seed) __arm_streaming __arm_inout("za") {
    svbool_t all = svptrue_b32();
    svint32_t columns = svindex_s32(seed, 1);
    for (uint32_t row = 0; row < svcntw(); row++)
        svwrite_hor_za32_s32_m(0, row, all, svadd_n_s32_x(all, columns, (int32_t)row * 1000));
}

static int count_za_errors(int32_t seed) __arm_streaming __arm_in("za") {
    svbool_t all = svptrue_b32();
    svint32_t columns = svindex_s32(seed, 1);
    int errors = 0;
    for (uint32_t row = 0; row < svcntw(); row++) {
        svint32_t got = svread_hor_za32_s32_m(svdup_s32(0), all, 0, row);
        svint32_t want = svadd_n_s32_x(all, columns, (int32_t)row * 1000);
        errors += (int)svcntp_b32(all, svcmpne_s32(all, got, want));
    }
    return errors;
}

__attribute__((noinline)) void plain(void) { plain_calls++; }

// Private ZA with new ZA state: its prologue commits a caller's lazy save.
__arm_new("za") __attribute__((noinline)) void clobber(void) {
    clobber_calls++;
    fill_za(-7777);
}

__arm_new("za") __attribute__((noinline)) int lazy_save_committed(void) {
    fill_za(1);
    clobber();
    return count_za_errors(1);
}

__arm_new("za") __attribute__((noinline)) int lazy_save_abandoned(void) {
    fill_za(2);
    plain();
    return count_za_errors(2);
}

__attribute__((noinline)) void agnostic(int commit) __arm_agnostic("sme_za_state") {
    if (commit)
        clobber();
    else
        plain();
}

__arm_new("za") __attribute__((noinline)) int agnostic_preserves(int commit) {
    fill_za(3);
    agnostic(commit);
    return count_za_errors(3);
}

__arm_locally_streaming __attribute__((noinline)) uint64_t locally_streaming_lanes(void) {
    return svcntw() + (__arm_in_streaming_mode() ? 0 : 1000);
}

__attribute__((noinline)) int compatible(void) __arm_streaming_compatible {
    plain();                           // non-streaming callee: SMSTOP around it if streaming
    return __arm_in_streaming_mode();
}

__attribute__((noinline)) int compatible_from_streaming(void) __arm_streaming {
    return compatible();
}

__attribute__((noinline)) uint64_t vg_streaming(void) __arm_streaming {
    return __arm_get_current_vg() * 8 == svcntb();
}

// The streaming-compatible string routines (declared by arm_sme.h) in streaming mode.
__attribute__((noinline)) int string_routines(void) __arm_streaming {
    static char text[64] = "streaming-compatible string routines, zatile", copy[64], moved[64];
    int ok = __arm_sc_memcpy(copy, text, 45) == copy;
    for (int i = 0; i < 45; i++)
        ok &= copy[i] == text[i];
    __arm_sc_memset(copy + 3, 'x', 13);
    for (int i = 3; i < 16; i++)
        ok &= copy[i] == 'x';
    ok &= copy[2] == 'r' && copy[16] == text[16];
    __arm_sc_memcpy(moved, text, 45);
    __arm_sc_memmove(moved + 5, moved, 30);          // overlapping, destination above
    for (int i = 0; i < 30; i++)
        ok &= moved[i + 5] == text[i];
    __arm_sc_memmove(moved, moved + 7, 20);          // overlapping, destination below
    for (int i = 0; i < 20; i++)
        ok &= moved[i] == text[i + 2];
    ok &= __arm_sc_memchr(text, ',', 45) == text + 36 && __arm_sc_memchr(text, '!', 45) == 0;
    ok &= __arm_sc_memchr(text, 's' + 256, 45) == text;
    return ok;
}

static int check(const char *what, int ok) {
    printf("%-44s %s\n", what, ok ? "ok" : "FAILED");
    return !ok;
}

int main(void) {
    int failed = 0;
    failed += check("__arm_has_sme", __arm_has_sme());
    failed += check("not streaming in main", !__arm_in_streaming_mode());
    failed += check("lazy save committed by a new-ZA callee",
                    lazy_save_committed() == 0 && clobber_calls == 1);
    failed += check("lazy save abandoned by a plain callee",
                    lazy_save_abandoned() == 0 && plain_calls == 1);
    failed += check("agnostic-ZA callee, ZA left dormant", agnostic_preserves(0) == 0);
    failed += check("agnostic-ZA callee, lazy save committed",
                    agnostic_preserves(1) == 0 && clobber_calls == 2);
    failed += check("locally streaming", locally_streaming_lanes() == svcntsw());
    failed += check("streaming-compatible from non-streaming", compatible() == 0);
    failed += check("streaming-compatible from streaming", compatible_from_streaming() == 1);
    failed += check("__arm_get_current_vg non-streaming", __arm_get_current_vg() == 0);
    failed += check("__arm_get_current_vg streaming", vg_streaming() == 1);
    failed += check("__arm_sme_state_size with ZA off", __arm_sme_state_size() == 16);
    failed += check("__arm_sc_memcpy/memmove/memset/memchr", string_routines());
    __arm_za_disable();
    failed += check("__arm_za_disable with ZA off", !__arm_in_streaming_mode());
    printf("SME ABI: %s\n", failed ? "FAILED" : "ok");
    return failed;
}

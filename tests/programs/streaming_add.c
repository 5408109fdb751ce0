// An __arm_streaming function with ACLE SVE intrinsics (whilelt loops, svld1/svadd/svst1)
// called from non-streaming main; the result is checked by ordinary C code. Also: a float
// argument reaching the engine (V written by the CPU, read as Z), a float result coming back
// (Z read as V), and FPCR's rounding mode reaching the engine's FP arithmetic.
#include <arm_sme.h>
#include <fenv.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 77

static void add_arrays(const int32_t *a, const int32_t *b, int32_t *out, int n)
    __arm_streaming {
    for (int i = 0; i < n; i += (int)svcntw()) {
        svbool_t active = svwhilelt_b32_s32(i, n);
        svint32_t x = svld1_s32(active, a + i);
        svint32_t y = svld1_s32(active, b + i);
        svst1_s32(active, out + i, svadd_s32_x(active, x, y));
    }
}

static float sum_floats(const float *values, int n) __arm_streaming {
    svfloat32_t total = svdup_f32(0.0f);
    for (int i = 0; i < n; i += (int)svcntw()) {
        svbool_t active = svwhilelt_b32_s32(i, n);
        total = svadd_f32_m(active, total, svld1_f32(active, values + i));
    }
    return svaddv_f32(svptrue_b32(), total);
}

__attribute__((noinline)) static void add_vectors(const float *x, const float *y, float *out)
    __arm_streaming {
    svbool_t all = svptrue_b32();
    svst1_f32(all, out, svadd_f32_x(all, svld1_f32(all, x), svld1_f32(all, y)));
}

static float scaled_sum(const float *values, int n, float scale) __arm_streaming {
    svfloat32_t total = svdup_f32(0.0f);
    for (int i = 0; i < n; i += (int)svcntw()) {
        svbool_t active = svwhilelt_b32_s32(i, n);
        total = svmla_n_f32_m(active, total, svld1_f32(active, values + i), scale);
    }
    return svaddv_f32(svptrue_b32(), total);
}

// x + y on the engine, element 0's bits (FADD's rounding follows FPCR.RMode).
__attribute__((noinline)) static uint32_t add_bits(float x, float y) {
    static float xs[64], ys[64], sums[64];
    for (int i = 0; i < 64; i++) {
        xs[i] = x;
        ys[i] = y;
    }
    add_vectors(xs, ys, sums);
    uint32_t bits;
    memcpy(&bits, &sums[0], sizeof bits);
    return bits;
}

static uint64_t vector_bytes(void) __arm_streaming { return svcntb(); }

int main(void) {
    static int32_t a[N], b[N], out[N + 1];
    static float values[N];
    for (int i = 0; i < N; i++) {
        a[i] = i * 3 - 50;
        b[i] = 1000 - i * i;
        values[i] = (float)i * 0.5f;
    }
    out[N] = 12345;                       // the predicated tail must not write past the end
    add_arrays(a, b, out, N);
    int errors = 0;
    for (int i = 0; i < N; i++)
        if (out[i] != a[i] + b[i]) {
            printf("out[%d] = %d, expected %d\n", i, out[i], a[i] + b[i]);
            errors++;
        }
    if (out[N] != 12345) {
        printf("the store wrote past the end\n");
        errors++;
    }
    float sum = sum_floats(values, N);    // a float result across SMSTOP
    if (sum != 1463.0f) {
        printf("sum = %f, expected 1463\n", (double)sum);
        errors++;
    }
    float scaled = scaled_sum(values, N, 0.25f);   // a float argument across SMSTART
    if (scaled != 365.75f) {
        printf("scaled sum = %f, expected 365.75\n", (double)scaled);
        errors++;
    }
    // 1 + 3 * 2^-25 rounds to 1 + 2^-23 to nearest and to 1 towards zero.
    static volatile float one = 1.0f, tiny = 0x3p-25f;
    uint32_t nearest = add_bits(one, tiny);
    fesetround(FE_TOWARDZERO);
    uint32_t towards_zero = add_bits(one, tiny);
    fesetround(FE_TONEAREST);
    printf("rounding: nearest %08x, towards zero %08x\n", (unsigned)nearest,
           (unsigned)towards_zero);
    printf("streaming add: %d elements, %s\n", N, errors ? "FAILED" : "ok");
    printf("vector bytes: %s\n", vector_bytes() >= 16 ? "at least 16" : "too few");
    return errors ? 1 : 0;
}

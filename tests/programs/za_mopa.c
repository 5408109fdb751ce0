// __arm_new("za"): an outer product accumulated into ZA with svmopa, read back row by row
// with svread_hor_za32 and compared with the product computed in ordinary C.
#include <arm_sme.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_LANES 64                       // 32-bit lanes at SVL 2048

// out[i][j] = sum over k of a[k][i] * b[k][j], for a lanes-by-lanes tile, k < depth.
__arm_new("za") static void outer_products(const float *a, const float *b, float *out,
                                           int depth) __arm_streaming {
    uint64_t lanes = svcntw();
    svbool_t all = svptrue_b32();
    for (int k = 0; k < depth; k++) {
        svfloat32_t column = svld1_f32(all, a + k * lanes);
        svfloat32_t row = svld1_f32(all, b + k * lanes);
        svmopa_za32_f32_m(0, all, all, column, row);
    }
    for (uint32_t i = 0; i < lanes; i++) {
        svfloat32_t slice = svread_hor_za32_f32_m(svdup_f32(0.0f), all, 0, i);
        svst1_f32(all, out + i * lanes, slice);
    }
}

// Exported for the Python API (ElfProcess.call): a streaming dot product with predicated tails.
__attribute__((noinline, used)) int64_t dot_s32(const int32_t *a, const int32_t *b, int64_t n)
    __arm_streaming {
    svint32_t total = svdup_s32(0);
    for (int64_t i = 0; i < n; i += (int64_t)svcntw()) {
        svbool_t active = svwhilelt_b32_s64(i, n);
        total = svmla_s32_m(active, total, svld1_s32(active, a + i), svld1_s32(active, b + i));
    }
    return svaddv_s32(svptrue_b32(), total);
}

// Exported for the Python API: floating-point arguments and results across SMSTART/SMSTOP.
__attribute__((noinline, used)) float scaled_sum_f32(const float *x, int64_t n, float scale)
    __arm_streaming {
    svfloat32_t total = svdup_f32(0.0f);
    for (int64_t i = 0; i < n; i += (int64_t)svcntw()) {
        svbool_t active = svwhilelt_b32_s64(i, n);
        total = svadd_f32_m(active, total, svld1_f32(active, x + i));
    }
    return svaddv_f32(svptrue_b32(), total) * scale;
}

// Exported for the Python API: general and SIMD&FP arguments interleaved (AAPCS64 counts each
// register class on its own: a in W0, b in D0, c in S1, d in X1, e in H2).
__attribute__((noinline, used)) double mixed_arguments(int32_t a, double b, float c, int64_t d,
                                                       _Float16 e) {
    return (double)a * 1000.0 + b * 100.0 + (double)c * 10.0 + (double)d + (double)e / 8.0;
}

// Exported for the Python API: shared ZA. Adds value to every element of row `row` of ZA0.S.
__attribute__((noinline, used)) void za_add_to_row(uint32_t row, float value)
    __arm_streaming __arm_inout("za") {
    svbool_t all = svptrue_b32();
    svfloat32_t slice = svread_hor_za32_f32_m(svdup_f32(0.0f), all, 0, row);
    svwrite_hor_za32_f32_m(0, row, all, svadd_f32_x(all, slice, svdup_f32(value)));
}

static uint64_t lanes_of_32_bits(void) __arm_streaming { return svcntw(); }

int main(void) {
    enum { DEPTH = 5 };
    static float a[DEPTH * MAX_LANES], b[DEPTH * MAX_LANES], out[MAX_LANES * MAX_LANES];
    int lanes = (int)lanes_of_32_bits();
    for (int k = 0; k < DEPTH; k++)
        for (int i = 0; i < lanes; i++) {
            a[k * lanes + i] = (float)(i + k);
            b[k * lanes + i] = (float)(2 * i - k);
        }
    outer_products(a, b, out, DEPTH);
    int errors = 0;
    for (int i = 0; i < lanes; i++)
        for (int j = 0; j < lanes; j++) {
            float expected = 0.0f;
            for (int k = 0; k < DEPTH; k++)
                expected += a[k * lanes + i] * b[k * lanes + j];
            if (out[i * lanes + j] != expected) {
                if (errors < 5)
                    printf("za[%d][%d] = %f, expected %f\n", i, j, (double)out[i * lanes + j],
                           (double)expected);
                errors++;
            }
        }
    printf("svmopa into ZA: %s\n", errors ? "FAILED" : "ok");
    return errors ? 1 : 0;
}

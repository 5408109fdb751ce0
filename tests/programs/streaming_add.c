// An __arm_streaming function with ACLE SVE intrinsics (whilelt loops, svld1/svadd/svst1)
// called from non-streaming main; the result is checked by ordinary C code.
#include <arm_sme.h>
#include <stdint.h>
#include <stdio.h>

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
    printf("streaming add: %d elements, %s\n", N, errors ? "FAILED" : "ok");
    printf("vector bytes: %s\n", vector_bytes() >= 16 ? "at least 16" : "too few");
    return errors ? 1 : 0;
}

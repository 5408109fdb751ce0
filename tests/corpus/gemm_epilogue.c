// A GEMM epilogue as KleidiAI writes it: each ZA row is moved to a Z register (MOVA), a
// per-column bias is added, the result is clamped to [min, max] (ReLU6 when min=0, max=6), and
// stored with the column-edge predicate.
#include <arm_sme.h>
#include <stdint.h>

void epilogue_bias_clamp(float *c, const float *bias, float lo, float hi, uint64_t m,
                         uint64_t n) __arm_streaming __arm_in("za") {
    uint64_t vl = svcntw();
    svbool_t cols = svwhilelt_b32_u64(0, n);
    svfloat32_t b = svld1_f32(cols, bias);
    svfloat32_t vlo = svdup_f32(lo), vhi = svdup_f32(hi);
    for (uint32_t r = 0; r < vl && r < m; r++) {
        svfloat32_t row = svread_hor_za32_f32_m(svundef_f32(), cols, 0, r);
        row = svadd_f32_x(cols, row, b);
        row = svmax_f32_x(cols, row, vlo);
        row = svmin_f32_x(cols, row, vhi);
        svst1_f32(cols, c + r * n, row);
    }
}

// The same for an int32 accumulator tile, read column by column (vertical slices).
void epilogue_columns_s32(int32_t *c_t, const int32_t *bias, uint64_t n) __arm_streaming
        __arm_in("za") {
    uint64_t vl = svcntw();
    svbool_t all = svptrue_b32();
    for (uint32_t col = 0; col < vl && col < n; col++) {
        svint32_t v = svread_ver_za32_s32_m(svdup_s32(0), all, 2, col);
        v = svadd_n_s32_x(all, v, bias[col]);
        v = svmax_n_s32_x(all, v, 0);
        svst1_s32(all, c_t + col * vl, v);
    }
}

// Elementwise ML operators in streaming mode: bias add, ReLU, leaky ReLU, clamp, fused
// multiply-add, and their int32 counterparts. Each loop is vector-length agnostic.
#include <arm_sme.h>
#include <stdint.h>

void bias_add_f32(float *x, const float *bias, uint64_t rows, uint64_t cols) __arm_streaming {
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t j = 0; j < cols; j += svcntw()) {
            svbool_t pg = svwhilelt_b32_u64(j, cols);
            svfloat32_t v = svld1_f32(pg, x + r * cols + j);
            svst1_f32(pg, x + r * cols + j, svadd_f32_m(pg, v, svld1_f32(pg, bias + j)));
        }
}

void relu_f32(float *x, uint64_t n) __arm_streaming {
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        svfloat32_t v = svld1_f32(pg, x + i);
        svst1_f32(pg, x + i, svmax_n_f32_x(pg, v, 0.0f));
    }
}

void leaky_relu_f32(float *x, float slope, uint64_t n) __arm_streaming {
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        svfloat32_t v = svld1_f32(pg, x + i);
        svbool_t negative = svcmplt_n_f32(pg, v, 0.0f);
        svst1_f32(pg, x + i, svsel_f32(negative, svmul_n_f32_x(pg, v, slope), v));
    }
}

void clamp_f16(float16_t *x, float16_t lo, float16_t hi, uint64_t n) __arm_streaming {
    for (uint64_t i = 0; i < n; i += svcnth()) {
        svbool_t pg = svwhilelt_b16_u64(i, n);
        svfloat16_t v = svld1_f16(pg, x + i);
        v = svminnm_n_f16_x(pg, svmaxnm_n_f16_x(pg, v, lo), hi);
        svst1_f16(pg, x + i, v);
    }
}

void axpby_f32(float *y, const float *x, float a, float b, uint64_t n) __arm_streaming {
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        svfloat32_t vy = svmul_n_f32_x(pg, svld1_f32(pg, y + i), b);
        svst1_f32(pg, y + i, svmla_n_f32_x(pg, vy, svld1_f32(pg, x + i), a));
    }
}

void relu_s32(int32_t *x, uint64_t n) __arm_streaming {
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        svst1_s32(pg, x + i, svmax_n_s32_z(pg, svld1_s32(pg, x + i), 0));
    }
}

void abs_diff_u8(uint8_t *d, const uint8_t *a, const uint8_t *b, uint64_t n) __arm_streaming {
    for (uint64_t i = 0; i < n; i += svcntb()) {
        svbool_t pg = svwhilelt_b8_u64(i, n);
        svst1_u8(pg, d + i, svabd_u8_x(pg, svld1_u8(pg, a + i), svld1_u8(pg, b + i)));
    }
}

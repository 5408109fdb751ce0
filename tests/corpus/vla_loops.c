// Loops in the shape TVM's AArch64 SVE backend generates: the trip count is ceil(n / VL), every
// iteration builds its predicate with WHILELT from the element index, and there is no scalar
// tail. Element types int8..int64 and fp16..fp64, conversions between them, and index math.
#include <arm_sme.h>
#include <stdint.h>

void add_s64(int64_t *c, const int64_t *a, const int64_t *b, int64_t n) __arm_streaming {
    int64_t trips = (n + (int64_t)svcntd() - 1) / (int64_t)svcntd();
    for (int64_t t = 0; t < trips; t++) {
        int64_t i = t * (int64_t)svcntd();
        svbool_t pg = svwhilelt_b64_s64(i, n);
        svst1_s64(pg, c + i, svadd_s64_x(pg, svld1_s64(pg, a + i), svld1_s64(pg, b + i)));
    }
}

void mul_add_s16(int16_t *c, const int16_t *a, const int16_t *b, int32_t n) __arm_streaming {
    int32_t trips = (n + (int32_t)svcnth() - 1) / (int32_t)svcnth();
    for (int32_t t = 0; t < trips; t++) {
        int32_t i = t * (int32_t)svcnth();
        svbool_t pg = svwhilelt_b16_s32(i, n);
        svint16_t va = svld1_s16(pg, a + i), vb = svld1_s16(pg, b + i);
        svst1_s16(pg, c + i, svmla_s16_x(pg, svld1_s16(pg, c + i), va, vb));
    }
}

void cast_s32_to_f64(double *y, const int32_t *x, int64_t n) __arm_streaming {
    int64_t trips = (n + (int64_t)svcntd() - 1) / (int64_t)svcntd();
    for (int64_t t = 0; t < trips; t++) {
        int64_t i = t * (int64_t)svcntd();
        svbool_t pg = svwhilelt_b64_s64(i, n);
        svint64_t wide = svld1sw_s64(pg, x + i);
        svst1_f64(pg, y + i, svcvt_f64_s64_x(pg, wide));
    }
}

void cast_f32_to_f16(float16_t *y, const float *x, int64_t n) __arm_streaming {
    int64_t trips = (n + (int64_t)svcntw() - 1) / (int64_t)svcntw();
    for (int64_t t = 0; t < trips; t++) {
        int64_t i = t * (int64_t)svcntw();
        svbool_t pg = svwhilelt_b32_s64(i, n);
        svfloat16_t h = svcvt_f16_f32_x(pg, svld1_f32(pg, x + i));
        svst1h_u32(pg, (uint16_t *)y + i, svreinterpret_u32_f16(h));
    }
}

void iota_scale_u32(uint32_t *y, uint32_t start, uint32_t step, int64_t n) __arm_streaming {
    int64_t trips = (n + (int64_t)svcntw() - 1) / (int64_t)svcntw();
    for (int64_t t = 0; t < trips; t++) {
        int64_t i = t * (int64_t)svcntw();
        svbool_t pg = svwhilelt_b32_s64(i, n);
        svuint32_t idx = svindex_u32(start + (uint32_t)i * step, step);
        svst1_u32(pg, y + i, svlsr_n_u32_x(pg, svmul_n_u32_x(pg, idx, 3), 1));
    }
}

void where_f64(double *y, const double *x, const double *alt, int64_t n) __arm_streaming {
    int64_t trips = (n + (int64_t)svcntd() - 1) / (int64_t)svcntd();
    for (int64_t t = 0; t < trips; t++) {
        int64_t i = t * (int64_t)svcntd();
        svbool_t pg = svwhilelt_b64_s64(i, n);
        svfloat64_t vx = svld1_f64(pg, x + i);
        svbool_t keep = svcmpge_n_f64(pg, vx, 0.0);
        svst1_f64(pg, y + i, svsel_f64(keep, svsqrt_f64_x(pg, vx), svld1_f64(pg, alt + i)));
    }
}

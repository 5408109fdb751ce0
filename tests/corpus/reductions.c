// Reductions in streaming mode: fp32 sum (vector accumulator, then FADDV), max (FMAXV),
// int8 sum widened to int64 (SADDV), uint32 sum (UADDV), and an argmax over a row.
#include <arm_sme.h>
#include <stdint.h>

float sum_f32(const float *x, uint64_t n) __arm_streaming {
    svfloat32_t acc = svdup_f32(0.0f);
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        acc = svadd_f32_m(pg, acc, svld1_f32(pg, x + i));
    }
    return svaddv_f32(svptrue_b32(), acc);
}

float max_f32(const float *x, uint64_t n) __arm_streaming {
    svfloat32_t best = svdup_f32(-__builtin_inff());
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        best = svmax_f32_m(pg, best, svld1_f32(pg, x + i));
    }
    return svmaxv_f32(svptrue_b32(), best);
}

int64_t sum_s8(const int8_t *x, uint64_t n) __arm_streaming {
    int64_t total = 0;
    for (uint64_t i = 0; i < n; i += svcntb()) {
        svbool_t pg = svwhilelt_b8_u64(i, n);
        total += svaddv_s8(pg, svld1_s8(pg, x + i));
    }
    return total;
}

uint64_t sum_u32(const uint32_t *x, uint64_t n) __arm_streaming {
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        total += svaddv_u32(pg, svld1_u32(pg, x + i));
    }
    return total;
}

int32_t min_s16(const int16_t *x, uint64_t n) __arm_streaming {
    svint16_t lowest = svdup_s16(INT16_MAX);
    for (uint64_t i = 0; i < n; i += svcnth()) {
        svbool_t pg = svwhilelt_b16_u64(i, n);
        lowest = svmin_s16_m(pg, lowest, svld1_s16(pg, x + i));
    }
    return svminv_s16(svptrue_b16(), lowest);
}

uint64_t argmax_f32(const float *x, uint64_t n) __arm_streaming {
    float best = max_f32(x, n);
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        svbool_t hit = svcmpeq_n_f32(pg, svld1_f32(pg, x + i), best);
        if (svptest_any(pg, hit))
            return i + svcntp_b32(pg, svbrkb_b_z(pg, hit));
    }
    return n;
}

// Row softmax in streaming mode: max, exp(x - max) with a polynomial (no FEXPA: it is illegal in
// streaming mode), sum, scale by 1/sum. Two ways to build 2^n: FSCALE, and adding n to the
// exponent field of 1.0f with integer vector ops.
#include <arm_sme.h>
#include <stdint.h>

static svfloat32_t exp_poly(svbool_t pg, svfloat32_t x, svfloat32_t *n_out) __arm_streaming {
    const float log2e = 1.44269504f, ln2_hi = 0.693145752f, ln2_lo = 1.42860677e-6f;
    x = svmax_n_f32_x(pg, x, -87.3f);
    svfloat32_t n = svrintn_f32_x(pg, svmul_n_f32_x(pg, x, log2e));
    svfloat32_t r = svmls_n_f32_x(pg, x, n, ln2_hi);
    r = svmls_n_f32_x(pg, r, n, ln2_lo);
    svfloat32_t p = svdup_f32(1.0f / 120);
    p = svmad_n_f32_x(pg, p, r, 1.0f / 24);
    p = svmad_n_f32_x(pg, p, r, 1.0f / 6);
    p = svmad_n_f32_x(pg, p, r, 0.5f);
    p = svmad_n_f32_x(pg, p, r, 1.0f);
    p = svmad_n_f32_x(pg, p, r, 1.0f);
    *n_out = n;
    return p;
}

void softmax_f32(float *x, uint64_t n) __arm_streaming {
    svfloat32_t vmax = svdup_f32(-__builtin_inff());
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        vmax = svmax_f32_m(pg, vmax, svld1_f32(pg, x + i));
    }
    float row_max = svmaxv_f32(svptrue_b32(), vmax);
    svfloat32_t vsum = svdup_f32(0.0f);
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        svfloat32_t k;
        svfloat32_t p = exp_poly(pg, svsub_n_f32_x(pg, svld1_f32(pg, x + i), row_max), &k);
        svfloat32_t e = svscale_f32_x(pg, p, svcvt_s32_f32_x(pg, k));
        svst1_f32(pg, x + i, e);
        vsum = svadd_f32_m(pg, vsum, e);
    }
    float inv = 1.0f / svaddv_f32(svptrue_b32(), vsum);
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        svst1_f32(pg, x + i, svmul_n_f32_x(pg, svld1_f32(pg, x + i), inv));
    }
}

// exp with 2^n built in the exponent field, and the division done with FDIV.
void exp_normalize_f32(float *y, const float *x, float denom, uint64_t n) __arm_streaming {
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        svfloat32_t k;
        svfloat32_t p = exp_poly(pg, svld1_f32(pg, x + i), &k);
        svint32_t bits = svlsl_n_s32_x(pg, svcvt_s32_f32_x(pg, k), 23);
        svint32_t scaled = svadd_s32_x(pg, svreinterpret_s32_f32(p), bits);
        svfloat32_t e = svreinterpret_f32_s32(scaled);
        svst1_f32(pg, y + i, svdiv_n_f32_x(pg, e, denom));
    }
}

// fp16 softmax denominator: widen halves to fp32, sum.
float sum_exp_f16(const float16_t *x, uint64_t n) __arm_streaming {
    svfloat32_t acc = svdup_f32(0.0f);
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        svfloat16_t h = svreinterpret_f16_u32(svld1uh_u32(pg, (const uint16_t *)x + i));
        svfloat32_t k;
        svfloat32_t p = exp_poly(pg, svcvt_f32_f16_x(pg, h), &k);
        acc = svadd_f32_m(pg, acc, svscale_f32_x(pg, p, svcvt_s32_f32_x(pg, k)));
    }
    return svaddv_f32(svptrue_b32(), acc);
}

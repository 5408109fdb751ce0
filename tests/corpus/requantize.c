// Requantize int32 accumulators to int8 as quantized ML kernels do:
// * float path: SCVTF, multiply by the scale, round to nearest (FRINTN), add the zero point,
//   convert (FCVTZS), saturate with two saturating narrows (SQXTNB, SVE2; legal in streaming
//   mode) and pack the even elements (UZP1);
// * fixed-point path (gemmlowp): SQRDMULH by a Q31 multiplier, rounding shift right (SRSHL),
//   add the zero point, clamp with SMIN/SMAX and a truncating store (ST1B from .S).
#include <arm_sme.h>
#include <stdint.h>

void requantize_float(int8_t *out, const int32_t *acc, float scale, int32_t zero_point,
                      uint64_t n) __arm_streaming {
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        svfloat32_t f = svcvt_f32_s32_x(pg, svld1_s32(pg, acc + i));
        f = svrintn_f32_x(pg, svmul_n_f32_x(pg, f, scale));
        svint32_t q = svadd_n_s32_x(pg, svcvt_s32_f32_x(pg, f), zero_point);
        svint16_t h = svqxtnb_s32(q);
        svint8_t b = svqxtnb_s16(h);
        svint8_t packed = svuzp1_s8(svuzp1_s8(b, b), b);
        uint64_t left = n - i < svcntw() ? n - i : svcntw();
        svst1_s8(svwhilelt_b8_u64(0, left), out + i, packed);
    }
}

void requantize_fixed_point(int8_t *out, const int32_t *acc, int32_t multiplier, int32_t shift,
                            int32_t zero_point, uint64_t n) __arm_streaming {
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        svint32_t v = svqrdmulh_n_s32(svld1_s32(pg, acc + i), multiplier);
        v = svrshl_n_s32_x(pg, v, -shift);
        v = svadd_n_s32_x(pg, v, zero_point);
        v = svmax_n_s32_x(pg, svmin_n_s32_x(pg, v, 127), -128);
        svst1b_s32(pg, out + i, v);
    }
}

// uint8 output with a per-channel scale, rounding half away from zero (FRINTA), unsigned
// saturation (SQXTUNB twice) and a truncating byte store of each .S element.
void requantize_per_channel_u8(uint8_t *out, const int32_t *acc, const float *scales,
                               uint64_t n) __arm_streaming {
    for (uint64_t i = 0; i < n; i += svcntw()) {
        svbool_t pg = svwhilelt_b32_u64(i, n);
        svfloat32_t f = svmul_f32_x(pg, svcvt_f32_s32_x(pg, svld1_s32(pg, acc + i)),
                                    svld1_f32(pg, scales + i));
        svint32_t q = svcvt_s32_f32_x(pg, svrinta_f32_x(pg, f));
        svuint16_t h = svqxtunb_s32(q);
        svuint8_t b = svqxtunb_s16(svreinterpret_s16_u16(h));
        svst1b_u32(pg, out + i, svreinterpret_u32_u8(b));
    }
}

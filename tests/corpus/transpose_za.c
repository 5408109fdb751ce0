// Transposes through ZA: rows go in as horizontal tile slices and come out as vertical ones, the
// way TVM's fp32 transpose-interleave uses ZA (32-bit), and a 16-bit and an 8-bit variant
// with edge predicates for partial tiles.
#include <arm_sme.h>
#include <stdint.h>

__arm_new("za") void transpose_f32(float *dst, const float *src, uint64_t rows,
                                   uint64_t cols) __arm_streaming {
    uint64_t vl = svcntw();
    for (uint64_t r0 = 0; r0 < rows; r0 += vl)
        for (uint64_t c0 = 0; c0 < cols; c0 += vl) {
            svbool_t pc = svwhilelt_b32_u64(c0, cols), pr = svwhilelt_b32_u64(r0, rows);
            for (uint32_t r = 0; r < vl && r0 + r < rows; r++)
                svld1_hor_za32(0, r, pc, src + (r0 + r) * cols + c0);
            for (uint32_t c = 0; c < vl && c0 + c < cols; c++)
                svst1_ver_za32(0, c, pr, dst + (c0 + c) * rows + r0);
        }
}

__arm_new("za") void transpose_u16(uint16_t *dst, const uint16_t *src, uint64_t n) __arm_streaming {
    uint64_t vl = svcnth();
    svbool_t pg = svwhilelt_b16_u64(0, n);
    for (uint32_t r = 0; r < vl && r < n; r++)
        svld1_hor_za16(1, r, pg, src + r * n);
    for (uint32_t c = 0; c < vl && c < n; c++)
        svst1_ver_za16(1, c, pg, dst + c * n);
}

// 8-bit, through Z registers: MOVA a vertical slice out, then a plain vector store.
__arm_new("za") void transpose_u8(uint8_t *dst, const uint8_t *src) __arm_streaming {
    uint64_t vl = svcntb();
    svbool_t all = svptrue_b8();
    for (uint32_t r = 0; r < vl; r++)
        svwrite_hor_za8_u8_m(0, r, all, svld1_u8(all, src + r * vl));
    for (uint32_t c = 0; c < vl; c++)
        svst1_u8(all, dst + c * vl, svread_ver_za8_u8_m(svdup_u8(0), all, 0, c));
}

// 64-bit elements: vertical loads, horizontal stores (LDR/STR of the whole array in between to
// spill and refill it).
__arm_new("za") void transpose_f64_spill(double *dst, const double *src, uint8_t *spill)
        __arm_streaming {
    uint64_t vl = svcntd();
    svbool_t all = svptrue_b64();
    for (uint32_t c = 0; c < vl; c++)
        svld1_ver_za64(7, c, all, src + c * vl);
    for (uint32_t s = 0; s < svcntb(); s++)
        svstr_za(s, spill + s * svcntb());
    svzero_za();
    for (uint32_t s = 0; s < svcntb(); s++)
        svldr_za(s, spill + s * svcntb());
    for (uint32_t r = 0; r < vl; r++)
        svst1_hor_za64(7, r, all, dst + r * vl);
}

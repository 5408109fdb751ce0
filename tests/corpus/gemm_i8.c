// int8 x int8 -> int32 GEMM (4-way SMOPA/SMOPS, USMOPA for uint8 activations x int8 weights),
// with the zero-point correction quantized ML code needs: the column sums of B are added to
// every row with ADDVA.
#include <arm_sme.h>
#include <stdint.h>

__arm_new("za") void gemm_s8(const int8_t *a_packed, const int8_t *b_packed, int32_t *c,
                             uint64_t k_quads) __arm_streaming {
    uint64_t vl_s = svcntw(), vl_b = svcntb();
    svbool_t all = svptrue_b8();
    for (uint64_t p = 0; p < k_quads; p++) {
        svint8_t a = svld1_s8(all, a_packed + p * vl_b);
        svint8_t b = svld1_s8(all, b_packed + p * vl_b);
        svmopa_za32_s8_m(0, all, all, a, b);
    }
    svbool_t rows = svptrue_b32();
    for (uint32_t r = 0; r < vl_s; r++)
        svst1_hor_za32(0, r, rows, c + r * vl_s);
}

__arm_new("za") void gemm_u8s8_zero_point(const uint8_t *a_packed, const int8_t *b_packed,
                                          const int32_t *b_col_offsets, int32_t *c,
                                          uint64_t k_quads, uint64_t n) __arm_streaming {
    uint64_t vl_s = svcntw(), vl_b = svcntb();
    svbool_t all = svptrue_b8();
    svbool_t cols = svwhilelt_b32_u64(0, n);
    for (uint64_t p = 0; p < k_quads; p++) {
        svuint8_t a = svld1_u8(all, a_packed + p * vl_b);
        svint8_t b = svld1_s8(all, b_packed + p * vl_b);
        svusmopa_za32_u8_m(1, all, all, a, b);
        svmops_za32_s8_m(1, all, all, svreinterpret_s8_u8(a), svdup_s8(1));
    }
    svaddva_za32_s32_m(1, svptrue_b32(), cols, svld1_s32(cols, b_col_offsets));
    for (uint32_t r = 0; r < vl_s; r++)
        svst1_hor_za32(1, r, cols, c + r * n);
}

// Row sums of A for the other zero-point term, with ADDHA into a scratch tile.
void row_sums_s8(const int32_t *a_sums, int32_t *out) __arm_streaming __arm_inout("za") {
    uint64_t vl_s = svcntw();
    svbool_t all = svptrue_b32();
    svzero_mask_za(0x88);
    svaddha_za32_s32_m(3, all, all, svld1_s32(all, a_sums));
    for (uint32_t r = 0; r < vl_s; r++)
        svst1_hor_za32(3, r, all, out + r * vl_s);
}

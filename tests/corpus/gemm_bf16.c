// bf16 -> fp32 widening GEMM with BFMOPA and BFMOPS, and a bf16 epilogue (BFCVT).
#include <arm_sme.h>
#include <stdint.h>

__arm_new("za") void gemm_bf16(const bfloat16_t *a_packed, const bfloat16_t *b_packed,
                               const bfloat16_t *b_neg_packed, bfloat16_t *c,
                               uint64_t k_pairs) __arm_streaming {
    uint64_t vl_s = svcntw(), vl_h = svcnth();
    svbool_t all = svptrue_b16();
    for (uint64_t p = 0; p < k_pairs; p++) {
        svbfloat16_t a = svld1_bf16(all, a_packed + p * vl_h);
        svmopa_za32_bf16_m(1, all, all, a, svld1_bf16(all, b_packed + p * vl_h));
        svmops_za32_bf16_m(1, all, all, a, svld1_bf16(all, b_neg_packed + p * vl_h));
    }
    svbool_t rows = svptrue_b32();
    for (uint32_t r = 0; r < vl_s; r++) {
        svfloat32_t row = svread_hor_za32_f32_m(svdup_f32(0.0f), rows, 1, r);
        svbfloat16_t narrowed = svcvt_bf16_f32_x(rows, row);
        svst1h_u32(rows, (uint16_t *)(c + r * vl_s), svreinterpret_u32_bf16(narrowed));
    }
}

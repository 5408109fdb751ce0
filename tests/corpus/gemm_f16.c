// fp16 -> fp32 widening GEMM: each FMOPA consumes two K rows, so A and B are packed with pairs
// of K values interleaved (a[p][i][0..1] = A[2p][i], A[2p+1][i]), as TVM's fp16 schedule does.
// The K remainder (odd K) is zero-padded by the packer.
#include <arm_sme.h>
#include <stdint.h>

__arm_new("za") void gemm_f16_widening(const float16_t *a_packed, const float16_t *b_packed,
                                       float *c, uint64_t m, uint64_t n,
                                       uint64_t k_pairs) __arm_streaming {
    uint64_t vl_s = svcntw(), vl_h = svcnth();
    svbool_t pm = svwhilelt_b16_u64(0, 2 * m), pn = svwhilelt_b16_u64(0, 2 * n);
    for (uint64_t p = 0; p < k_pairs; p++) {
        svfloat16_t a = svld1_f16(pm, a_packed + p * vl_h);
        svfloat16_t b = svld1_f16(pn, b_packed + p * vl_h);
        svmopa_za32_f16_m(0, pm, pn, a, b);
    }
    svbool_t store = svwhilelt_b32_u64(0, n);
    for (uint32_t r = 0; r < vl_s && r < m; r++)
        svst1_hor_za32(0, r, store, c + r * n);
}

// The same with the result narrowed back to fp16 rows: read a ZA row into a Z register, convert
// fp32 -> fp16 and store the even halfwords.
void store_rows_f16(float16_t *c, uint64_t m, uint64_t n) __arm_streaming __arm_in("za") {
    uint64_t vl_s = svcntw();
    svbool_t pn = svwhilelt_b32_u64(0, n);
    for (uint32_t r = 0; r < vl_s && r < m; r++) {
        svfloat32_t row = svread_hor_za32_f32_m(svundef_f32(), pn, 0, r);
        svfloat16_t half = svcvt_f16_f32_x(pn, row);
        svst1h_u32(pn, (uint16_t *)(c + r * n), svreinterpret_u32_f16(half));
    }
}

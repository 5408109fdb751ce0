// fp32 GEMM C[m][n] = A^T[k][m] . B[k][n] the way TVM's SME schedule writes it: A is already
// transposed to (k, m); m and n are covered by 2 x 2 vector lengths; per k step, four
// predicated vector loads feed four FMOPAs into za0..za3; then one edge-predicated horizontal
// store per row of each tile.
#include <arm_sme.h>
#include <stdint.h>

__arm_new("za") void gemm_f32_2x2(const float *at, const float *b, float *c,
                                  uint64_t m, uint64_t n, uint64_t k) __arm_streaming {
    uint64_t vl = svcntw();
    for (uint64_t i0 = 0; i0 < m; i0 += 2 * vl) {
        for (uint64_t j0 = 0; j0 < n; j0 += 2 * vl) {
            svbool_t pa_lo = svwhilelt_b32_u64(i0, m), pa_hi = svwhilelt_b32_u64(i0 + vl, m);
            svbool_t pb_lo = svwhilelt_b32_u64(j0, n), pb_hi = svwhilelt_b32_u64(j0 + vl, n);
            svzero_za();
            for (uint64_t p = 0; p < k; p++) {
                svfloat32_t a_lo = svld1_f32(pa_lo, at + p * m + i0);
                svfloat32_t a_hi = svld1_f32(pa_hi, at + p * m + i0 + vl);
                svfloat32_t b_lo = svld1_f32(pb_lo, b + p * n + j0);
                svfloat32_t b_hi = svld1_f32(pb_hi, b + p * n + j0 + vl);
                svmopa_za32_f32_m(0, pa_lo, pb_lo, a_lo, b_lo);
                svmopa_za32_f32_m(1, pa_lo, pb_hi, a_lo, b_hi);
                svmopa_za32_f32_m(2, pa_hi, pb_lo, a_hi, b_lo);
                svmopa_za32_f32_m(3, pa_hi, pb_hi, a_hi, b_hi);
            }
            for (uint32_t r = 0; r < vl; r++) {
                if (i0 + r < m) {
                    svst1_hor_za32(0, r, pb_lo, c + (i0 + r) * n + j0);
                    svst1_hor_za32(1, r, pb_hi, c + (i0 + r) * n + j0 + vl);
                }
                if (i0 + vl + r < m) {
                    svst1_hor_za32(2, r, pb_lo, c + (i0 + vl + r) * n + j0);
                    svst1_hor_za32(3, r, pb_hi, c + (i0 + vl + r) * n + j0 + vl);
                }
            }
        }
    }
}

// Accumulate into an existing C: load each row into the tile first, then FMOPA / FMOPS
// (C += A.B - A.D), then store back.
void gemm_f32_accumulate(const float *at, const float *b, const float *d, float *c,
                         uint64_t k) __arm_streaming __arm_inout("za") {
    uint64_t vl = svcntw();
    svbool_t all = svptrue_b32();
    for (uint32_t r = 0; r < vl; r++)
        svld1_hor_za32(0, r, all, c + r * vl);
    for (uint64_t p = 0; p < k; p++) {
        svfloat32_t a = svld1_f32(all, at + p * vl);
        svmopa_za32_f32_m(0, all, all, a, svld1_f32(all, b + p * vl));
        svmops_za32_f32_m(0, all, all, a, svld1_f32(all, d + p * vl));
    }
    for (uint32_t r = 0; r < vl; r++)
        svst1_hor_za32(0, r, all, c + r * vl);
}

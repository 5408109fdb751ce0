// A vector-length-agnostic fp32 GEMM, C[m][n] = sum over p of At[p][m] * B[p][n], on 2 x 2 ZA
// tiles with predicated tails (TVM's SME schedule), checked against plain C; then a scalar
// loop of plain host code. Sizes from argv: m n k [scalar iterations] (default 19 23 7 1000).
// The benchmark (zatile exec --stats) runs it larger.
#include <arm_sme.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

__arm_new("za") static void gemm(const float *at, const float *b, float *c, uint64_t m,
                                 uint64_t n, uint64_t k) __arm_streaming {
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

int main(int argc, char **argv) {
    uint64_t m = argc > 1 ? strtoul(argv[1], 0, 0) : 19;
    uint64_t n = argc > 2 ? strtoul(argv[2], 0, 0) : 23;
    uint64_t k = argc > 3 ? strtoul(argv[3], 0, 0) : 7;
    uint64_t iterations = argc > 4 ? strtoul(argv[4], 0, 0) : 1000;
    float *at = malloc(k * m * sizeof *at), *b = malloc(k * n * sizeof *b);
    float *c = malloc((m * n + 1) * sizeof *c);
    if (!at || !b || !c)
        return 2;
    for (uint64_t i = 0; i < k * m; i++)
        at[i] = (float)((int)(i * 7 % 13) - 6);
    for (uint64_t i = 0; i < k * n; i++)
        b[i] = (float)((int)(i * 5 % 11) - 5) * 0.5f;
    c[m * n] = 4242.0f;                   // the tails must not store past C
    gemm(at, b, c, m, n, k);
    int errors = c[m * n] != 4242.0f;
    for (uint64_t i = 0; i < m; i++)
        for (uint64_t j = 0; j < n; j++) {
            float expected = 0.0f;
            for (uint64_t p = 0; p < k; p++)
                expected += at[p * m + i] * b[p * n + j];
            errors += c[i * n + j] != expected;
        }
    // Plain host work: an integer hash chain (no engine instruction).
    uint64_t hash = 1469598103934665603ull;
    for (uint64_t i = 0; i < iterations; i++)
        hash = (hash ^ (i & 0xff)) * 1099511628211ull;
    printf("gemm %lux%lux%lu: %s; hash %016lx\n", (unsigned long)m, (unsigned long)n,
           (unsigned long)k, errors ? "FAILED" : "ok", (unsigned long)hash);
    return errors != 0;
}

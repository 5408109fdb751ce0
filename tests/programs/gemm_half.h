// The VLA 16-bit GEMM of gemm_f16.c and gemm_bf16.c, C[m][n] (fp32) = sum over p of A[m][p] *
// B[p][n], with a 2-way widening outer product on one ZA tile and predicated tails in M, N and K
// (the packer zero-pads K to even), checked against plain C. The values are small integers and
// halves, so every product and sum is exact (in bf16's odd rounding too) and the check is exact.
// Sizes from argv: m n k (default 19 23 13). The including file defines ELEMENT (the C type),
// VECTOR (its SVE type), LOAD, MOPA and NAME.
#include <arm_sme.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// ap: for each pair of k, each row of A's two values; bp likewise for each column of B.
__arm_new("za") static void gemm(const ELEMENT *ap, const ELEMENT *bp, float *c, uint64_t m,
                                 uint64_t n, uint64_t pairs) __arm_streaming {
    uint64_t vl = svcntw();
    for (uint64_t i0 = 0; i0 < m; i0 += vl) {
        for (uint64_t j0 = 0; j0 < n; j0 += vl) {
            svbool_t pa = svwhilelt_b16_u64(2 * i0, 2 * m);
            svbool_t pb = svwhilelt_b16_u64(2 * j0, 2 * n);
            svbool_t columns = svwhilelt_b32_u64(j0, n);
            svzero_za();
            for (uint64_t p = 0; p < pairs; p++) {
                VECTOR a = LOAD(pa, ap + 2 * (p * m + i0));
                VECTOR b = LOAD(pb, bp + 2 * (p * n + j0));
                MOPA(0, pa, pb, a, b);
            }
            for (uint32_t r = 0; r < vl && i0 + r < m; r++)
                svst1_hor_za32(0, r, columns, c + (i0 + r) * n + j0);
        }
    }
}

static float a_value(uint64_t i, uint64_t p) { return (float)((int)((i * 7 + p * 3) % 13) - 6); }
static float b_value(uint64_t p, uint64_t j) {
    return (float)((int)((p * 5 + j) % 11) - 5) * 0.5f;
}

int main(int argc, char **argv) {
    uint64_t m = argc > 1 ? strtoul(argv[1], 0, 0) : 19;
    uint64_t n = argc > 2 ? strtoul(argv[2], 0, 0) : 23;
    uint64_t k = argc > 3 ? strtoul(argv[3], 0, 0) : 13;
    uint64_t pairs = (k + 1) / 2;
    ELEMENT *ap = calloc(pairs * m * 2, sizeof *ap), *bp = calloc(pairs * n * 2, sizeof *bp);
    float *c = malloc((m * n + 1) * sizeof *c);
    if (!ap || !bp || !c)
        return 2;
    for (uint64_t p = 0; p < k; p++) {
        for (uint64_t i = 0; i < m; i++)
            ap[(p / 2 * m + i) * 2 + p % 2] = (ELEMENT)a_value(i, p);
        for (uint64_t j = 0; j < n; j++)
            bp[(p / 2 * n + j) * 2 + p % 2] = (ELEMENT)b_value(p, j);
    }
    c[m * n] = 4242.0f;                   // the tails must not store past C
    gemm(ap, bp, c, m, n, pairs);
    int errors = c[m * n] != 4242.0f;
    for (uint64_t i = 0; i < m; i++)
        for (uint64_t j = 0; j < n; j++) {
            float expected = 0.0f;
            for (uint64_t p = 0; p < k; p++)
                expected += a_value(i, p) * b_value(p, j);
            errors += c[i * n + j] != expected;
        }
    printf(NAME " %lux%lux%lu: %s\n", (unsigned long)m, (unsigned long)n, (unsigned long)k,
           errors ? "FAILED" : "ok");
    return errors != 0;
}

// A vector-length-agnostic int8 GEMM, C[m][n] (int32) = sum over p of A[m][p] * B[p][n], with
// the 4-way SMOPA on one ZA tile and predicated tails in M, N and K (the packer zero-pads K to
// a multiple of four), checked against plain C. Sizes from argv: m n k (default 19 23 13).
#include <arm_sme.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// ap: for each quad of k, each row of A's four int8 values; bp likewise for each column of B.
__arm_new("za") static void gemm(const int8_t *ap, const int8_t *bp, int32_t *c, uint64_t m,
                                 uint64_t n, uint64_t quads) __arm_streaming {
    uint64_t vl = svcntw();
    for (uint64_t i0 = 0; i0 < m; i0 += vl) {
        for (uint64_t j0 = 0; j0 < n; j0 += vl) {
            svbool_t pa = svwhilelt_b8_u64(4 * i0, 4 * m), pb = svwhilelt_b8_u64(4 * j0, 4 * n);
            svbool_t columns = svwhilelt_b32_u64(j0, n);
            svzero_za();
            for (uint64_t p = 0; p < quads; p++) {
                svint8_t a = svld1_s8(pa, ap + 4 * (p * m + i0));
                svint8_t b = svld1_s8(pb, bp + 4 * (p * n + j0));
                svmopa_za32_s8_m(0, pa, pb, a, b);
            }
            for (uint32_t r = 0; r < vl && i0 + r < m; r++)
                svst1_hor_za32(0, r, columns, c + (i0 + r) * n + j0);
        }
    }
}

static int8_t a_value(uint64_t i, uint64_t p) { return (int8_t)((i * 37 + p * 11) % 256 - 128); }
static int8_t b_value(uint64_t p, uint64_t j) { return (int8_t)((p * 53 + j * 29) % 256 - 128); }

int main(int argc, char **argv) {
    uint64_t m = argc > 1 ? strtoul(argv[1], 0, 0) : 19;
    uint64_t n = argc > 2 ? strtoul(argv[2], 0, 0) : 23;
    uint64_t k = argc > 3 ? strtoul(argv[3], 0, 0) : 13;
    uint64_t quads = (k + 3) / 4;
    int8_t *ap = calloc(quads * m * 4, 1), *bp = calloc(quads * n * 4, 1);
    int32_t *c = malloc((m * n + 1) * sizeof *c);
    if (!ap || !bp || !c)
        return 2;
    for (uint64_t p = 0; p < k; p++) {
        for (uint64_t i = 0; i < m; i++)
            ap[(p / 4 * m + i) * 4 + p % 4] = a_value(i, p);
        for (uint64_t j = 0; j < n; j++)
            bp[(p / 4 * n + j) * 4 + p % 4] = b_value(p, j);
    }
    c[m * n] = 4242;                      // the tails must not store past C
    gemm(ap, bp, c, m, n, quads);
    int errors = c[m * n] != 4242;
    for (uint64_t i = 0; i < m; i++)
        for (uint64_t j = 0; j < n; j++) {
            int32_t expected = 0;
            for (uint64_t p = 0; p < k; p++)
                expected += a_value(i, p) * b_value(p, j);
            errors += c[i * n + j] != expected;
        }
    printf("gemm int8 %lux%lux%lu: %s\n", (unsigned long)m, (unsigned long)n, (unsigned long)k,
           errors ? "FAILED" : "ok");
    return errors != 0;
}

// The kernel library's command-line harness, for backends that run whole programs (QEMU):
//   harness FUNCTION M N K INPUT OUTPUT
// reads At (K x M floats), B (K x N) and, for an accumulating kernel, C (M x N) from INPUT,
// calls FUNCTION and writes C to OUTPUT. Exit status 2 on bad arguments or I/O errors.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void zatile_gemm_f32(const float *at, const float *b, float *c, uint64_t m, uint64_t n,
                     uint64_t k);
void zatile_gemm_acc_f32(const float *at, const float *b, float *c, uint64_t m, uint64_t n,
                         uint64_t k);

static int transfer(const char *path, const char *mode, void *data, size_t bytes) {
    FILE *file = fopen(path, mode);
    if (!file)
        return 0;
    size_t moved = mode[0] == 'r' ? fread(data, 1, bytes, file) : fwrite(data, 1, bytes, file);
    return !fclose(file) && moved == bytes;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s FUNCTION M N K INPUT OUTPUT\n", argv[0]);
        return 2;
    }
    int accumulate = !strcmp(argv[1], "zatile_gemm_acc_f32");
    if (!accumulate && strcmp(argv[1], "zatile_gemm_f32")) {
        fprintf(stderr, "unknown function %s\n", argv[1]);
        return 2;
    }
    uint64_t m = strtoull(argv[2], 0, 0), n = strtoull(argv[3], 0, 0), k = strtoull(argv[4], 0, 0);
    size_t a_bytes = k * m * 4, b_bytes = k * n * 4, c_bytes = m * n * 4;
    char *input = malloc(a_bytes + b_bytes + c_bytes + 1);
    float *c = malloc(c_bytes + 4);
    if (!input || !c ||
        !transfer(argv[5], "rb", input, a_bytes + b_bytes + (accumulate ? c_bytes : 0)))
        return 2;
    if (accumulate) {
        memcpy(c, input + a_bytes + b_bytes, c_bytes);
        zatile_gemm_acc_f32((float *)input, (float *)(input + a_bytes), c, m, n, k);
    } else {
        zatile_gemm_f32((float *)input, (float *)(input + a_bytes), c, m, n, k);
    }
    return transfer(argv[6], "wb", c, c_bytes) ? 0 : 2;
}

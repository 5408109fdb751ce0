// The kernel library's command-line harness, for backends that run whole programs (QEMU):
//   harness FUNCTION M N K_GROUPS INPUT OUTPUT
// reads the packed A (K_GROUPS x M x E bytes), the packed B (K_GROUPS x N x E bytes), C
// (M x N elements, read by the kernel only if it accumulates), and for an epilogue kernel its
// bias and clamp or quantization operands (harness.h) from INPUT, E being the kernel's result
// size, calls FUNCTION and writes C to
// OUTPUT. Exit status 2 on bad arguments or I/O errors.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int transfer(const char *path, const char *mode, void *data, size_t bytes) {
    FILE *file = fopen(path, mode);
    if (!file)
        return 0;
    size_t moved = mode[0] == 'r' ? fread(data, 1, bytes, file) : fwrite(data, 1, bytes, file);
    return !fclose(file) && moved == bytes;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s FUNCTION M N K_GROUPS INPUT OUTPUT\n", argv[0]);
        return 2;
    }
    const struct kernel *kernel = 0;
    for (int index = 0; index < KERNEL_COUNT; index++)
        if (!strcmp(argv[1], KERNELS[index].name))
            kernel = &KERNELS[index];
    if (!kernel) {
        fprintf(stderr, "unknown function %s\n", argv[1]);
        return 2;
    }
    uint64_t m = strtoull(argv[2], 0, 0), n = strtoull(argv[3], 0, 0);
    uint64_t groups = strtoull(argv[4], 0, 0);
    size_t size = kernel->element_bytes;
    size_t a_bytes = groups * m * size, b_bytes = groups * n * size;
    size_t c_bytes = m * n * kernel->c_bytes;
    size_t epilogue_bytes = kernel->epilogue == 1 ? (n + 2) * size
                            : kernel->epilogue == 2 ? n * size + 16 + n * 4 : 0;
    char *input = malloc(a_bytes + b_bytes + c_bytes + epilogue_bytes + 1);
    char *c = malloc(c_bytes + size);
    if (!input || !c ||
        !transfer(argv[5], "rb", input, a_bytes + b_bytes + c_bytes + epilogue_bytes))
        return 2;
    memcpy(c, input + a_bytes + b_bytes, c_bytes);
    const char *bias = input + a_bytes + b_bytes + c_bytes;
    kernel->function(input, input + a_bytes, c, m, n, groups, bias, bias + n * size);
    return transfer(argv[6], "wb", c, c_bytes) ? 0 : 2;
}

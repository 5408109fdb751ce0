// The kernel table the library's harness dispatches on (generated: zatile.sw.kernels).
#include <stdint.h>

/* The epilogue kernels take bias and clamp; the others ignore the two extra arguments. */
typedef void (*gemm_function)(const void *a, const void *b, void *c, uint64_t m, uint64_t n,
                              uint64_t k_groups, const void *bias, const void *clamp);

struct kernel {
    const char *name;
    gemm_function function;
    int accumulate;
    int element_bytes;  /* of the result, and of one row's k group of A and B */
    int c_bytes;        /* of one element of C in memory (1 after requantizing to int8) */
    int epilogue;       /* 0: none; 1: bias (N results), clamp (low, high); 2: bias (N int32),
                           quantization (low, high, zero point, 0: int32; N float32 scales) */
};

extern const struct kernel KERNELS[];
extern const int KERNEL_COUNT;

// The kernel table the library's harness dispatches on (generated: zatile.sw.kernels).
#include <stdint.h>

/* The epilogue kernels take bias and clamp; the others ignore the two extra arguments. */
typedef void (*gemm_function)(const void *a, const void *b, void *c, uint64_t m, uint64_t n,
                              uint64_t k_groups, const void *bias, const void *clamp);

struct kernel {
    const char *name;
    gemm_function function;
    int accumulate;
    int element_bytes;  /* of C, and of one row's k group of A and B */
    int epilogue;       /* takes bias (N elements) and clamp (2 elements) */
};

extern const struct kernel KERNELS[];
extern const int KERNEL_COUNT;

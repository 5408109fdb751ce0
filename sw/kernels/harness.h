// The kernel table the library's harness dispatches on (generated: zatile.sw.kernels).
#include <stdint.h>

// Every kernel takes at most 8 integer or pointer arguments (AAPCS64: X0-X7); the harness
// passes 8 and a kernel ignores those it does not take.
typedef void (*kernel_function)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                                uint64_t, uint64_t);

struct kernel {
    const char *name;
    kernel_function function;
};

extern const struct kernel KERNELS[];
extern const int KERNEL_COUNT;

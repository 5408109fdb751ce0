// The system calls a static musl program makes, as Linux answers them: memory (malloc through
// brk and mmap, munmap, mprotect), uname, clock_gettime, getrandom, prctl(PR_SME_GET_VL), and
// the errors of bad arguments. Prints one line per check.
#define _GNU_SOURCE
#include <arm_sme.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SME_GET_VL
#define PR_SME_GET_VL 64
#endif

static int check(const char *what, int ok) {
    printf("%-46s %s\n", what, ok ? "ok" : "FAILED");
    return !ok;
}

int main(void) {
    int failed = 0;
    struct utsname names;
    failed += check("uname", uname(&names) == 0 && !strcmp(names.sysname, "Linux")
                                 && !strcmp(names.machine, "aarch64"));
    char *small = malloc(100), *big = malloc(10 << 20);
    if (small && big) {
        memset(big, 0x5a, 10 << 20);
        strcpy(small, "malloc");
    }
    failed += check("malloc small and 10 MiB", small && big && big[(10 << 20) - 1] == 0x5a
                                                  && !strcmp(small, "malloc"));
    free(big);
    uintptr_t end = (uintptr_t)syscall(SYS_brk, 0);          // musl's sbrk only takes 0
    uintptr_t grown = (uintptr_t)syscall(SYS_brk, end + (1 << 16));
    if (grown == end + (1 << 16))
        ((volatile char *)end)[(1 << 16) - 1] = 1;
    failed += check("brk grows", grown == end + (1 << 16)
                                     && (uintptr_t)syscall(SYS_brk, 0) == grown);
    char *page = mmap(0, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    failed += check("mmap anonymous", page != MAP_FAILED && page[100] == 0);
    page[4096] = 7;
    failed += check("mprotect read-only", mprotect(page, 4096, PROT_READ) == 0 && page[4096] == 7);
    failed += check("munmap", munmap(page, 1 << 16) == 0);
    errno = 0;
    failed += check("mmap with a bad offset: EINVAL",
                    mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 123) == MAP_FAILED
                        && errno == EINVAL);
    errno = 0;
    failed += check("mmap of a file descriptor never opened: EBADF",
                    mmap(0, 4096, PROT_READ, MAP_PRIVATE, 77, 0) == MAP_FAILED && errno == EBADF);
    errno = 0;
    failed += check("mmap of 2^50 bytes: ENOMEM",
                    mmap(0, (size_t)1 << 50, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                            == MAP_FAILED && errno == ENOMEM);
    struct timespec first, second;
    failed += check("clock_gettime monotonic",
                    clock_gettime(CLOCK_MONOTONIC, &first) == 0
                        && clock_gettime(CLOCK_MONOTONIC, &second) == 0
                        && (second.tv_sec > first.tv_sec || (second.tv_sec == first.tv_sec
                                                             && second.tv_nsec >= first.tv_nsec)));
    unsigned char random_bytes[32];
    failed += check("getrandom", getrandom(random_bytes, sizeof random_bytes, 0) == 32);
    failed += check("prctl(PR_SME_GET_VL) is the streaming VL",
                    (prctl(PR_SME_GET_VL) & 0xffff) == (int)svcntsb());
    errno = 0;
    failed += check("open of a missing file: ENOENT",
                    fopen("/no/such/file", "r") == 0 && errno == ENOENT);
    failed += check("getpid == gettid", getpid() == gettid());
    printf("system calls: %s\n", failed ? "FAILED" : "ok");
    return failed;
}

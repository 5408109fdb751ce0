// TPIDR2_EL0 across signal delivery and clone, as Linux >= 6.16 defines them (docs/abi.md,
// "Signal frames", "fork and clone"): a handler runs with TPIDR2_EL0 = 0, and a child made
// without CLONE_VM gets its parent's TPIDR2_EL0 whether or not CLONE_SETTLS is given.
// QEMU 10 linux-user differs on both (docs/divergences.md, "QEMU linux-user").
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static _Alignas(16) uint8_t tpidr2_block[16];   // a TPIDR2 block with no lazy save pending

static uint64_t read_tpidr2(void) {
    uint64_t value;
    __asm__ volatile("mrs %0, tpidr2_el0" : "=r"(value));
    return value;
}

static void write_tpidr2(uint64_t value) { __asm__ volatile("msr tpidr2_el0, %0" ::"r"(value)); }

static volatile uint64_t in_handler = 1;

static void handler(int signal) {
    (void)signal;
    in_handler = read_tpidr2();
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    write_tpidr2((uint64_t)tpidr2_block);
    if (!strcmp(mode, "signal")) {
        signal(SIGUSR1, handler);
        raise(SIGUSR1);
        printf("TPIDR2_EL0 in the handler: %s, after it: %s\n",
               in_handler == 0 ? "zero" : "the interrupted value",
               read_tpidr2() == (uint64_t)tpidr2_block ? "restored" : "lost");
    } else if (!strcmp(mode, "fork-settls")) {
        uint64_t tls;
        __asm__ volatile("mrs %0, tpidr_el0" : "=r"(tls));
        long child = syscall(SYS_clone, SIGCHLD | CLONE_SETTLS, 0, 0, tls, 0);
        if (child == 0)
            _exit(read_tpidr2() == (uint64_t)tpidr2_block ? 10 : read_tpidr2() == 0 ? 11 : 12);
        int status = 0;
        waitpid((pid_t)child, &status, 0);
        printf("TPIDR2_EL0 in a fork child with CLONE_SETTLS: %s\n",
               WEXITSTATUS(status) == 10 ? "the parent's" : WEXITSTATUS(status) == 11 ? "zero"
                                                                                       : "other");
    } else {
        printf("usage: %s signal|fork-settls\n", argv[0]);
    }
    write_tpidr2(0);
    return 0;
}

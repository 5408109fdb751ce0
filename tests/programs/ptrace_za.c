// ptrace on a real process (Linux >= 6.16 rules, docs/abi.md "ptrace regsets"): a parent
// attaches to its child while the child's ZA is live, sees the attach stop with waitpid, reads
// the child's ZA through PTRACE_GETREGSET NT_ARM_ZA (header and contents), writes a different
// ZA back with PTRACE_SETREGSET and detaches; the child notices its ZA changed and exits.
// QEMU linux-user has no ptrace, so this program runs on the kernel model only.
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sme_state.h"

#define ZA_REGSET 0x40c                  // NT_ARM_ZA
#define ZA_HEADER 16                     // struct user_za_header
#define MAX_VL 256

struct za_header { uint32_t size, max_size; uint16_t vl, max_vl, flags, reserved; };

static volatile sig_atomic_t ready;

static void on_ready(int signal) {
    (void)signal;
    ready = 1;
}

__arm_new("za") static int child_work(void) {
    fill_za(21);
    kill(getppid(), SIGUSR1);
    while (za_is(21))                   // until the tracer rewrites ZA
        busy(1000);
    return za_is(22) ? 0 : 3;
}

static unsigned char regset[ZA_HEADER + MAX_VL * MAX_VL];

int main(void) {
    signal(SIGUSR1, on_ready);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0)
        exit(child_work());
    while (!ready)
        sched_yield();
    long attached = ptrace(PTRACE_ATTACH, child, 0, 0);
    int status = 0;
    waitpid(child, &status, 0);
    printf("attach: %s, waitpid: %s\n", attached == 0 ? "ok" : "failed",
           WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP ? "stopped by SIGSTOP" : "other");

    struct iovec iov = {regset, sizeof regset};
    long got = ptrace(PTRACE_GETREGSET, child, (void *)ZA_REGSET, &iov);
    struct za_header header;
    memcpy(&header, regset, sizeof header);
    unsigned vl = header.vl;
    int pattern = got == 0 && header.size == ZA_HEADER + vl * vl;
    for (unsigned row = 0; pattern && row < vl / 4; row++)       // ZA0.S row r: array row 4r
        for (unsigned lane = 0; lane < vl / 4; lane++) {
            uint32_t element;
            memcpy(&element, regset + ZA_HEADER + 4 * row * vl + 4 * lane, 4);
            pattern &= element == 21 + 100 * row + 3 * lane;
        }
    printf("GETREGSET NT_ARM_ZA: vl %s, ZA live, contents %s\n",
           vl == svcntsb() ? "the streaming VL" : "wrong", pattern ? "the child's" : "wrong");

    for (unsigned row = 0; row < vl / 4; row++)
        for (unsigned lane = 0; lane < vl / 4; lane++) {
            uint32_t element = 22 + 100 * row + 3 * lane;
            memcpy(regset + ZA_HEADER + 4 * row * vl + 4 * lane, &element, 4);
        }
    long set = ptrace(PTRACE_SETREGSET, child, (void *)ZA_REGSET, &iov);
    long detached = ptrace(PTRACE_DETACH, child, 0, 0);
    waitpid(child, &status, 0);
    printf("SETREGSET: %s, detach: %s, child exit status %d\n", set == 0 ? "ok" : "failed",
           detached == 0 ? "ok" : "failed", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

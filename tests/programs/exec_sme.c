// execve of a real program (docs/abi.md, "execve"): the program runs itself again with ZA
// live and a lazy save pending in the caller; the new image starts with SM=0, ZA=0,
// TPIDR2_EL0=0 and its arguments. With "onexec", PR_SME_SET_VL_ONEXEC first asks for a 32-byte
// vector length, which the new image has.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "sme_state.h"

#ifndef PR_SME_SET_VL
#define PR_SME_SET_VL 63
#define PR_SME_SET_VL_ONEXEC (1 << 18)
#endif

static uint64_t read_tpidr2(void) {
    uint64_t value;
    __asm__ volatile("mrs %0, tpidr2_el0" : "=r"(value));
    return value;
}

__arm_new("za") static void exec_with_za_live(char *self, char *mode) {
    fill_za(9);
    char *argv[] = {self, "after", mode, NULL};
    char *envp[] = {"ZATILE_EXEC=1", NULL};
    fflush(stdout);
    execve(self, argv, envp);
    printf("execve failed\n");
}

int main(int argc, char **argv) {
    if (argc > 2 && !strcmp(argv[1], "after")) {
        printf("after execve: argv[2] %s, environment %s, SM=%d ZA=%d TPIDR2 %s, VL %d\n",
               argv[2], getenv("ZATILE_EXEC") ? "passed" : "lost", (int)(read_svcr() & 1),
               (int)(read_svcr() >> 1 & 1), read_tpidr2() ? "set" : "zero", (int)svcntsb());
        return 5;
    }
    const char *mode = argc > 1 ? argv[1] : "plain";
    if (!strcmp(mode, "onexec"))
        printf("PR_SME_SET_VL_ONEXEC 32: %s\n",
               prctl(PR_SME_SET_VL, 32 | PR_SME_SET_VL_ONEXEC) < 0 ? "refused" : "accepted");
    exec_with_za_live(argv[0], (char *)mode);
    return 1;
}

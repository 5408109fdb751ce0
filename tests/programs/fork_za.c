// fork with ZA live (Linux >= 6.16, docs/abi.md "fork and clone"): the child starts with the
// parent's ZA contents and TPIDR2_EL0 (here: the caller's pending lazy save), and from then on
// each process has its own ZA — the parent's survives the child's changes while the two
// alternate on the one engine; wait4 collects the child's exit status.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sme_state.h"

__arm_new("za") static int parent_and_child(void) {
    fill_za(5);
    fflush(stdout);
    pid_t child = fork();                    // a private-ZA call: the lazy save is pending
    if (child == 0) {
        int inherited = za_is(5);
        fill_za(6);
        busy(300000);                        // the parent runs meanwhile
        int own = za_is(6);
        printf("child: inherited ZA %s, own ZA %s\n", inherited ? "yes" : "no",
               own ? "kept" : "lost");
        exit(inherited && own ? 42 : 1);
    }
    busy(200000);
    int kept = za_is(5);
    int status = 0;
    pid_t reaped = waitpid(child, &status, 0);
    printf("parent: ZA %s; child %s, exit status %d\n", kept ? "kept" : "lost",
           reaped == child ? "reaped" : "lost", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return kept;
}

int main(void) {
    int kept = parent_and_child();
    pid_t none = waitpid(-1, NULL, WNOHANG);
    printf("no child left: %s\n", none == -1 ? "ECHILD" : "wrong");
    return kept ? 0 : 1;
}

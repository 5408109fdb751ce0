// The smallest real program: stdio through writev, argv, and an exit status.
#include <stdio.h>

int main(int argc, char **argv) {
    printf("hello from %s with %d argument(s)\n", argc > 1 ? argv[1] : "nobody", argc - 1);
    return 7;
}

// The kernel library's command-line harness, for backends that run whole programs (QEMU):
//   harness FUNCTION INPUT OUTPUT OFFSET BYTES ARGUMENT...
// reads INPUT into one buffer, calls FUNCTION with up to 8 ARGUMENTs (an integer, or @K for
// the address of byte K of the buffer) and writes BYTES bytes of the buffer from byte OFFSET
// to OUTPUT. Exit status 2 on bad arguments or I/O errors.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum { MAX_ARGUMENTS = 8 };

int main(int argc, char **argv) {
    if (argc < 6 || argc > 6 + MAX_ARGUMENTS) {
        fprintf(stderr, "usage: %s FUNCTION INPUT OUTPUT OFFSET BYTES ARGUMENT...\n", argv[0]);
        return 2;
    }
    kernel_function function = 0;
    for (int index = 0; index < KERNEL_COUNT; index++)
        if (!strcmp(argv[1], KERNELS[index].name))
            function = KERNELS[index].function;
    if (!function) {
        fprintf(stderr, "unknown function %s\n", argv[1]);
        return 2;
    }
    FILE *input = fopen(argv[2], "rb");
    if (!input || fseek(input, 0, SEEK_END))
        return 2;
    long size = ftell(input);
    char *buffer = malloc(size + 16);
    if (size < 0 || !buffer || fseek(input, 0, SEEK_SET) ||
        fread(buffer, 1, size, input) != (size_t)size || fclose(input))
        return 2;
    uint64_t arguments[MAX_ARGUMENTS] = {0};
    for (int index = 6; index < argc; index++)
        arguments[index - 6] = argv[index][0] == '@'
            ? (uint64_t)(buffer + strtoull(argv[index] + 1, 0, 0))
            : strtoull(argv[index], 0, 0);
    function(arguments[0], arguments[1], arguments[2], arguments[3], arguments[4],
             arguments[5], arguments[6], arguments[7]);
    size_t offset = strtoull(argv[4], 0, 0), bytes = strtoull(argv[5], 0, 0);
    FILE *output = fopen(argv[3], "wb");
    if (offset + bytes > (size_t)size || !output ||
        fwrite(buffer + offset, 1, bytes, output) != bytes || fclose(output))
        return 2;
    return 0;
}

// The files the kernel model serves a real program: the SME default vector length sysctl (read,
// written, read back, a bad value refused, -1 for the largest) and /proc/cpuinfo's SME features;
// any other path is ENOENT and no host file is ever reachable. QEMU linux-user has no such sysctl
// (docs/divergences.md, "QEMU linux-user").
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char SYSCTL[] = "/proc/sys/abi/sme_default_vector_length";

static void show_sysctl(const char *label) {
    int fd = open(SYSCTL, O_RDONLY);
    if (fd < 0) {
        printf("%s: open: %s\n", label, strerror(errno));
        return;
    }
    char text[32] = {0};
    ssize_t length = read(fd, text, sizeof text - 1);
    ssize_t again = read(fd, text + 20, 8);       // a read past the start is end of file
    close(fd);
    printf("%s: %.*s (then %zd)\n", label, (int)(length > 0 ? length - 1 : 0), text, again);
}

static void write_sysctl(const char *value) {
    int fd = open(SYSCTL, O_WRONLY);
    if (fd < 0) {
        printf("write %s: open: %s\n", value, strerror(errno));
        return;
    }
    ssize_t written = write(fd, value, strlen(value));
    printf("write %s: %s\n", value, written < 0 ? strerror(errno) : "ok");
    close(fd);
}

int main(void) {
    show_sysctl("default vector length");
    write_sysctl("32");
    show_sysctl("after 32");
    write_sysctl("17");
    write_sysctl("-1");
    show_sysctl("after -1");

    FILE *cpuinfo = fopen("/proc/cpuinfo", "r");
    char line[1024];
    int sme = 0;
    while (cpuinfo && fgets(line, sizeof line, cpuinfo))
        if (!strncmp(line, "Features", 8) && strstr(line, " sme "))
            sme = 1;
    printf("/proc/cpuinfo: %s\n", !cpuinfo ? strerror(errno) : sme ? "sme listed" : "no sme");
    if (cpuinfo)
        fclose(cpuinfo);

    int fd = open("/proc/cpuinfo", O_RDONLY);
    printf("lseek to 10: %lld, SEEK_END: %s\n", (long long)lseek(fd, 10, SEEK_SET),
           lseek(fd, 0, SEEK_END) < 0 ? strerror(errno) : "ok");
    close(fd);
    printf("read of a closed descriptor: %s\n", read(fd, line, 1) < 0 ? strerror(errno) : "ok");
    printf("/etc/passwd: %s\n", open("/etc/passwd", O_RDONLY) < 0 ? strerror(errno) : "opened");
    return 0;
}

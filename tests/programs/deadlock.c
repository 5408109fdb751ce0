// A program that can never finish: main locks a normal mutex twice (the second lock sleeps on
// its futex for ever). zatile exec kills it with SIGKILL and says why, instead of hanging.
#include <pthread.h>
#include <stdio.h>

int main(void) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    printf("locking twice\n");
    fflush(stdout);
    pthread_mutex_lock(&lock);
    pthread_mutex_lock(&lock);
    printf("not reached\n");
    return 0;
}

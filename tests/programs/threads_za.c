// Threads sharing the engine: pthread_create (clone with CLONE_VM, CLONE_SETTLS,
// CLONE_PARENT_SETTID and CLONE_CHILD_CLEARTID), each thread and main with their own ZA
// contents across many time slices (the kernel saves and restores ZA when it switches them),
// taking turns in a fixed order with a mutex and a condition variable (futex wait, wake and
// requeue), then pthread_join (the futex the kernel wakes when a thread's TID is cleared).
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include "sme_state.h"

#define THREADS 3
#define ROUNDS 12

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int turn, turns_in_order = 1;
static long counter;

// One thread's part: ZA filled once, checked after every round of other threads' work.
__arm_new("za") static int rounds(int id) {
    int kept = 1;
    fill_za(1000u * (unsigned)id + 1);
    for (int round = 0; round < ROUNDS; round++) {
        busy(2000 + 500 * (unsigned)id);
        kept &= za_is(1000u * (unsigned)id + 1);
        pthread_mutex_lock(&lock);
        if (id < THREADS) {                     // the workers take turns: 0, 1, 2, 0, ...
            while (turn % THREADS != id)
                pthread_cond_wait(&turn_changed, &lock);
            turns_in_order &= turn == round * THREADS + id;
            turn++;
            pthread_cond_broadcast(&turn_changed);
        }
        counter++;
        pthread_mutex_unlock(&lock);
        if (round % 4 == id % 4)
            sched_yield();
    }
    return kept;
}

static void *worker(void *argument) {
    return (void *)(long)rounds((int)(long)argument);
}

int main(void) {
    pthread_t threads[THREADS];
    for (long id = 0; id < THREADS; id++)
        if (pthread_create(&threads[id], NULL, worker, (void *)id)) {
            printf("pthread_create failed\n");
            return 1;
        }
    int main_kept = rounds(THREADS);          // main works too, without taking turns
    for (int id = 0; id < THREADS; id++) {
        void *kept;
        pthread_join(threads[id], &kept);
        printf("thread %d: ZA %s over %d rounds\n", id, kept ? "kept" : "lost", ROUNDS);
    }
    printf("main: ZA %s; counter %ld of %d; %d turns, %s\n", main_kept ? "kept" : "lost",
           counter, (THREADS + 1) * ROUNDS, turn, turns_in_order ? "in order" : "out of order");
    return 0;
}

/* t_threads: two threads allocate at once, each at its own sites, while
 * main allocates too. */
#include <pthread.h>
#include <stdlib.h>

#include "rt_alloc.h"
#include "truth.h"

static int rounds;

static void *worker_a(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < rounds; i++)
        rt_free(ALLOC((size_t)(i % 50) + 8, 1));
    return NULL;
}

static void *worker_b(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < rounds; i++) {
        void *p = ALLOC(200, 2);
        rt_free(ALLOC((size_t)(i % 3) * 1000 + 1, 2));
        rt_free(p);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t a, b;
    int i;
    truth_init(argc, argv, NULL);
    rounds = argc > 1 ? atoi(argv[1]) : 5000;
    if (pthread_create(&a, NULL, worker_a, NULL) ||
        pthread_create(&b, NULL, worker_b, NULL))
        return 1;
    for (i = 0; i < rounds / 10; i++)
        rt_free(ALLOC(4096, 3));
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}

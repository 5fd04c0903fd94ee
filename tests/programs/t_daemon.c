/* t_daemon: a program that leaves a child behind, as a daemon does.
 *
 *   t_daemon N DONE_FILE
 *
 * The parent allocates 3 blocks, forks and exits at once; perf record,
 * which waits for the program it started, stops there. The child waits
 * until its parent is gone, allocates N blocks (none of them recorded),
 * frees them, and creates DONE_FILE when it ends, so that a test can wait
 * for it. allocsites must not call such a recording complete. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "rt_alloc.h"

int main(int argc, char **argv)
{
    struct timespec nap = { 0, 20 * 1000 * 1000 };
    int i, n, tries;
    pid_t parent = getpid();
    void **blocks;

    if (argc != 3) {
        fprintf(stderr, "usage: t_daemon N DONE_FILE\n");
        return 2;
    }
    n = atoi(argv[1]);
    for (i = 0; i < 3; i++)
        rt_free(rt_alloc(64, 1));
    fflush(NULL);
    if (fork() != 0)
        return 0;   /* the parent: perf record ends with it */
    for (tries = 0; getppid() == parent && tries < 250; tries++)
        nanosleep(&nap, NULL);
    nanosleep(&nap, NULL);   /* and perf record has seen it go */
    blocks = malloc(sizeof *blocks * (size_t)(n > 0 ? n : 1));
    if (!blocks)
        return 1;
    for (i = 0; i < n; i++)
        blocks[i] = rt_alloc(48, 2);
    for (i = 0; i < n; i++)
        rt_free(blocks[i]);
    free(blocks);
    i = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (i >= 0)
        close(i);
    return 0;
}

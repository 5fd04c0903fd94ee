/* t_forks - a parent that forks CHILDREN children, at most AT_ONCE of
 * them running side by side, each making ALLOCS allocations of 1 to 100
 * bytes through rt_alloc and freeing them, then exiting normally (its
 * rt:exit fires). The parent allocates nothing. Its truth, on stderr:
 *   t_forks: allocs=N bytes=B processes=P
 * (every child's allocations, the same in every run).
 *
 * For `record --system-wide`: on Linux 6.18 the probes of children that
 * run side by side stop firing in per-task recordings (docs/
 * limitations.md, its bullet on forked processes); a system-wide one gets them all.
 *
 * Usage: t_forks [CHILDREN [AT_ONCE [ALLOCS]]]   (default 40 8 500) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_alloc.h"

static void child(int allocs)
{
    void *held = NULL;   /* every 16th block lives until the next one */
    int i;
    for (i = 0; i < allocs; i++) {
        void *p = rt_alloc((size_t)(i % 100) + 1, 3);
        if (!p)
            _exit(2);
        if (i % 16 == 0) {
            if (held)
                rt_free(held);
            held = p;
        } else {
            rt_free(p);
        }
    }
    if (held)
        rt_free(held);
    exit(0);
}

int main(int argc, char **argv)
{
    int children = argc > 1 ? atoi(argv[1]) : 40;
    int at_once = argc > 2 ? atoi(argv[2]) : 8;
    int allocs = argc > 3 ? atoi(argv[3]) : 500;
    int started = 0, running = 0, failed = 0, status, i;
    unsigned long long per_child = 0;

    if (children < 0 || at_once < 1 || allocs < 0)
        return 2;
    for (i = 0; i < allocs; i++)
        per_child += (unsigned long long)(i % 100) + 1;
    fflush(NULL);
    while (started < children || running > 0) {
        if (started < children && running < at_once) {
            pid_t pid = fork();
            if (pid < 0)
                return 1;
            if (pid == 0)
                child(allocs);
            started++;
            running++;
            continue;
        }
        if (wait(&status) < 0)
            return 1;
        running--;
        failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    fprintf(stderr, "t_forks: allocs=%llu bytes=%llu processes=%d\n",
            (unsigned long long)children * (unsigned long long)allocs,
            (unsigned long long)children * per_child, children);
    return failed ? 1 : 0;
}

/* t_deep: stacks deeper than perf's defaults, and ways to end a process.
 *
 *   t_deep [DEPTH [END]]
 *
 * Recursion DEPTH levels deep (default 400) through a frame that keeps a
 * 1 KiB buffer on the stack every 50 levels (as an interpreter's string
 * buffer does), with an allocation at every level: the stacks of the
 * deepest allocations need tens of KiB of stack copy and hundreds of
 * frames to reach main. Then a fork: the child allocates FORKED blocks
 * of its own and exits, so the end-to-end count must tell the two
 * processes apart; it writes its own truth to $TRUTH_FILE.child. END:
 * "exit" (default, returns from main), "_exit" (ends without exit
 * handlers: no rt:exit event, no truth file), "rt_exit_then__exit"
 * (RT_EXIT(), then _exit: the count is fired by hand), "segv" and "abort" (killed
 * by SIGSEGV or SIGABRT: the exit status a shell would give is 139 and
 * 134). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_alloc.h"
#include "rt_probes.h"  /* RT_EXIT() */
#include "truth.h"

#define FORKED 7

static __attribute__((noinline)) void *down(int depth);

static __attribute__((noinline)) void *buffered(int depth)
{
    volatile char buf[1024];
    void *p;
    memset((char *)buf, depth, sizeof buf);
    p = down(depth);
    return buf[depth % 1024] == (char)depth ? p : NULL;
}

static __attribute__((noinline)) void *down(int depth)
{
    void *p = ALLOC(16 + (size_t)(depth % 8), 1);
    if (depth > 0) {
        void *q = depth % 50 == 0 ? buffered(depth - 1) : down(depth - 1);
        rt_free(q);
    }
    return p;
}

static void child(void)
{
    int i;
    const char *parent = getenv("TRUTH_FILE");
    static char path[4096];
    truth_n = 0; /* the parent's notes are the parent's */
    memset(truth_sites, 0, sizeof truth_sites);
    if (parent && strlen(parent) < sizeof path - 8) {
        strcpy(path, parent);
        strcat(path, ".child");
        setenv("TRUTH_FILE", path, 1);
    }
    for (i = 0; i < FORKED; i++)
        rt_free(ALLOC(100, 2));
    exit(0);
}

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 400;
    const char *end = argc > 2 ? argv[2] : "exit";
    pid_t pid;
    truth_init(argc, argv, NULL);
    rt_free(down(depth));
    pid = fork();
    if (pid == 0)
        child();
    if (pid > 0)
        waitpid(pid, NULL, 0);
    if (strcmp(end, "_exit") == 0)
        _exit(0);
    if (strcmp(end, "rt_exit_then__exit") == 0) {
        RT_EXIT();
        _exit(0);
    }
    if (strcmp(end, "segv") == 0) {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    }
    if (strcmp(end, "abort") == 0)
        abort();
    return 0;
}

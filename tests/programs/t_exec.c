/* t_exec: allocates, then replaces itself with another program.
 *
 *   t_exec PROGRAM [ARGS...]
 *
 * Three allocations of its own (recorded: t_exec is the program
 * allocsites probes), then execv(PROGRAM). The new program's probes were
 * never set, so its allocations are not in the recording, and allocsites
 * must say so. t_exec's own truth is never written (exec runs no exit
 * handlers); PROGRAM writes its own to $TRUTH_FILE. */
#include <stdio.h>
#include <unistd.h>

#include "rt_alloc.h"
#include "truth.h"

int main(int argc, char **argv)
{
    int i;
    if (argc < 2) {
        fprintf(stderr, "usage: t_exec PROGRAM [ARGS...]\n");
        return 2;
    }
    truth_init(argc, argv, NULL);
    for (i = 0; i < 3; i++)
        (void)ALLOC(32, 1);
    execv(argv[1], argv + 1);
    perror("t_exec: execv");
    return 1;
}

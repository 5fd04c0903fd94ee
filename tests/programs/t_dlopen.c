/* t_dlopen: allocates through its own allocator, then through one in a
 * library it loads with dlopen, as plugins and interpreters' extension
 * modules are loaded.
 *
 *   t_dlopen LIBRARY N
 *
 * 3 blocks of its own (rt_alloc.c linked in: the program has rt probes),
 * then N blocks from LIBRARY's rt_alloc (build/librtalloc.so), freed
 * again. ldd cannot name LIBRARY, so allocsites probes it only when told
 * with --lib; without that its N allocations are not in the recording
 * and allocsites must not call the recording complete. Writes the truth
 * of its own 3 to $TRUTH_FILE (the library's are N blocks of 48 bytes,
 * tag 2, allocated at the lib_alloc call). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt_alloc.h"
#include "truth.h"

int main(int argc, char **argv)
{
    void *lib, *(*lib_alloc)(size_t, int);
    void (*lib_free)(void *);
    int i, n;

    if (argc != 3) {
        fprintf(stderr, "usage: t_dlopen LIBRARY N\n");
        return 2;
    }
    truth_init(argc, argv, NULL);
    n = atoi(argv[2]);
    for (i = 0; i < 3; i++)
        FREE(ALLOC(32, 1));
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "t_dlopen: %s\n", dlerror());
        return 1;
    }
    *(void **)&lib_alloc = dlsym(lib, "rt_alloc");
    *(void **)&lib_free = dlsym(lib, "rt_free");
    if (!lib_alloc || !lib_free) {
        fprintf(stderr, "t_dlopen: no rt_alloc/rt_free in %s\n", argv[1]);
        return 1;
    }
    for (i = 0; i < n; i++)
        lib_free(lib_alloc(48, 2));
    return 0;
}

/* d_host.c - the shared-library and dlopen program of the differential
 * corpus (tests/integration/test_differential.py): the allocator lives
 * in libd_alloc.so (d_liballoc.c + rt_alloc.c, found through the rpath);
 * after a first round of allocations it loads libd_plug1.so with dlopen
 * (from its own directory), runs it (the plugin allocates and calls
 * back into the host, which allocates), closes it, loads libd_plug2.so
 * and runs that, then libd_plug3.so, which has an allocator of its own
 * (rt_alloc.c linked into it, bound to itself with -Bsymbolic: its own
 * probes, which allocsites record probes when told with --lib), then
 * allocates once more from the host alone.
 * No output; exit status 0 (1 if a plugin cannot be loaded). */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_alloc.h"

void *d_alloc_chain(int n, size_t size, unsigned tag);

static volatile unsigned long sink;

__attribute__((noinline)) static void host_round(int n)
{
    int i;

    for (i = 0; i < n; i++) {
        void *p = d_alloc_chain(i % 6, 16, 1);
        sink += (unsigned long)p;
        rt_free(p);
    }
}

/* called by the plugins */
__attribute__((noinline)) static void host_callback(int which)
{
    void *p = d_alloc_chain(3, 32, 20 + (unsigned)which);
    sink += (unsigned long)p;
    rt_free(p);
}

static int run_plugin(const char *dir, int which)
{
    char path[PATH_MAX];
    int (*run)(int, void (*)(int));
    void *lib;
    int i;

    snprintf(path, sizeof path, "%s/libd_plug%d.so", dir, which);
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "d_host: %s\n", dlerror());
        return 1;
    }
    *(void **)&run = dlsym(lib, "plug_run");
    if (!run) {
        fprintf(stderr, "d_host: no plug_run in %s\n", path);
        return 1;
    }
    for (i = 0; i < 12; i++)
        sink += (unsigned long)run(4 + i * 2, host_callback);
    dlclose(lib);
    return 0;
}

int main(void)
{
    char dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);

    if (n <= 0)
        return 1;
    dir[n] = 0;
    *strrchr(dir, '/') = 0;
    host_round(40);
    if (run_plugin(dir, 1) || run_plugin(dir, 2) || run_plugin(dir, 3))
        return 1;
    host_round(40);
    return 0;
}

/* d_plugin.c - a plugin of the differential corpus, built twice
 * (-DPLUGIN=1 and 2: libd_plug1.so, libd_plug2.so) and loaded by d_host
 * with dlopen after it has allocated: it recurses, allocates through
 * libd_alloc.so's rt_alloc and calls back into the host, which allocates
 * again. Plugin 2 is loaded after plugin 1 is closed, most likely at the
 * same address: a reader that keeps plugin 1's module there names the
 * wrong functions. Plugin 3 (-DPLUGIN=3) has rt_alloc.c linked in: its
 * allocations fire its own probes. */
#include <stddef.h>

#include "rt_alloc.h"

#ifndef PLUGIN
#define PLUGIN 1
#endif
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
/* distinct function names in each plugin */
#define REC CAT(plugin_recurse_, PLUGIN)
#define LEAF CAT(plugin_leaf_, PLUGIN)

int plug_run(int depth, void (*host_cb)(int));

static volatile unsigned long sink;

__attribute__((noinline)) static void LEAF(int n)
{
    void *p = rt_alloc((size_t)n * 8 + PLUGIN, 10 + PLUGIN);
    sink += (unsigned long)p;
    rt_free(p);
}

__attribute__((noinline)) static int REC(int n, void (*host_cb)(int))
{
    int r;

    if (n == 0) {
        host_cb(PLUGIN);
        LEAF(n + 1);
        return 1;
    }
    if (n % 3 == 0)
        LEAF(n);
    r = REC(n - 1, host_cb);
    sink += (unsigned long)r;
    return r + 1;
}

int plug_run(int depth, void (*host_cb)(int))
{
    int r = REC(depth, host_cb);
    sink += (unsigned long)r;
    return r;
}

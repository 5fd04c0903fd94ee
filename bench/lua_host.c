/* lua_host.c - a minimal Lua 5.4 host whose allocator fires allocsites'
 * probes: a real interpreter's allocations and call stacks, for
 * bench/lossless_runs.py (and, at commit 3f5d04f, bench/stack_depth.py:
 * docs/notes/2026-design-history.md, "Stack copy size for a real
 * interpreter").
 *
 *     lua_host SCRIPT [ARGS...]
 *
 * Like the `lua` standalone for one script: opens the standard libraries,
 * sets the global `arg` (arg[0] = SCRIPT, arg[1..] = ARGS, arg[-1] = the
 * host) and runs SCRIPT with ARGS as `...`. Errors print a traceback and
 * exit 1. At exit (also through os.exit) it prints its own count of allocation events on stderr:
 *
 *     lua_host: allocs=N bytes=B
 *
 * N and B are exactly what rt:alloc fires (the truth a recording is
 * compared with). With LUA_HOST_STACK=1 in the environment it also prints
 * how deep the C stack was at each allocation, as bytes from l_alloc's
 * stack pointer up to __libc_stack_end (the stack pointer _start got from
 * the kernel): the stack a DWARF unwinder must see to reach _start. One
 * line, a histogram in 256-byte steps ("UPPER:COUNT" for each non-empty
 * step, UPPER = the step's upper bound in bytes):
 *
 *     lua_host: stack-bytes 2304:1200 2560:50000 ...
 *
 * The lua_Alloc below is the only allocator of the Lua state. Lua's
 * contract (lua_Alloc in the manual) has realloc semantics:
 *   nsize == 0               free ptr (osize = its size)    -> RT_FREE
 *   ptr == NULL, nsize > 0   new block; osize is Lua's type
 *                            tag of the object (0: not an object,
 *                            4 string ... 10 function prototype) -> RT_ALLOC
 *   both                     resize: a move, old freed, new allocated
 *                            (also when realloc keeps the address)
 *                                                    -> RT_FREE + RT_ALLOC
 * A resized block keeps the tag of its first allocation, so that rt:free
 * always reports the tag the block was allocated with: the tag lives in a
 * 16-byte header before the block (which keeps malloc's 16-byte alignment).
 *
 * Build: linked statically with liblua5.4.a, so that perf and addr2line
 * see Lua's own functions (luaY_parser, luaM_malloc_, ...) in this one
 * binary. bench/lib/build.py's build_lua_host() does it; or by hand:
 *   gcc -O2 -g -Iinclude -I/usr/include/lua5.4 bench/lua_host.c \
 *       /usr/lib/x86_64-linux-gnu/liblua5.4.a -lm -ldl -o lua_host
 */
#ifdef LUA_HOST_FAULT_TRIGGER
#define _GNU_SOURCE /* memfd_create */
#endif
#include <stdio.h>
#include <stdlib.h>

#include "lauxlib.h"
#include "lua.h"
#include "lualib.h"
#include "rt_probes.h"

/* Lua's type tags as passed in osize for a new object (lua.h, and
 * LUA_TUPVAL / LUA_TPROTO from lobject.h, which is not installed). */
RT_TAG_NAME(0, "other");      /* arrays, buffers, hash parts, stacks */
RT_TAG_NAME(LUA_TSTRING, "string");
RT_TAG_NAME(LUA_TTABLE, "table");
RT_TAG_NAME(LUA_TFUNCTION, "closure");
RT_TAG_NAME(LUA_TUSERDATA, "userdata");
RT_TAG_NAME(LUA_TTHREAD, "thread");
RT_TAG_NAME(LUA_NUMTYPES, "upvalue");      /* LUA_TUPVAL */
RT_TAG_NAME(LUA_NUMTYPES + 1, "proto");    /* LUA_TPROTO */

struct hdr {
    size_t tag;
    size_t pad; /* keeps the block 16-byte aligned */
};

static unsigned long long n_allocs, n_bytes;

#ifdef LUA_HOST_FAULT_TRIGGER
/* A stand-in for the uprobe, for machines where uprobe events cannot be
 * created (bench/stack_depth.py --trigger pagefault, at 3f5d04f): every allocation
 * writes to a page it has not touched yet, so the write page-faults
 * exactly where rt:alloc's probe is, and perf records the software event
 * page-faults (period 1, fault address in the sample) with the same user
 * registers and the same stack copy a uprobe sample would have. The pages
 * are a region at a fixed address, TRIGGER_BASE, so that these faults can
 * be told from the program's other page faults; one madvise per
 * TRIGGER_PAGES allocations discards the region for reuse. */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#define TRIGGER_BASE 0x200000000000UL
#define TRIGGER_PAGES 4096
static volatile char *trigger;
static unsigned trigger_next;

static void trigger_init(void)
{
    /* Shared memory whose pages stay allocated: madvise(MADV_DONTNEED)
     * only drops the mappings, and the next write is a minor fault that
     * maps the page again (a write: reads would map 16 pages at a time,
     * fault-around), with no page to clear or to get from the
     * hypervisor (on a VM, fresh anonymous pages cost ~15 us a fault). */
    size_t len = (size_t)TRIGGER_PAGES * 4096;
    int fd = memfd_create("lua_host-trigger", 0);
    void *p;

    /* fallocate: the pages exist from here on, without a fault */
    if (fd < 0 || ftruncate(fd, (off_t)len) != 0 ||
        fallocate(fd, 0, 0, (off_t)len) != 0) {
        perror("lua_host: memfd for the trigger region");
        exit(1);
    }
    p = mmap((void *)TRIGGER_BASE, len, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
    if (p != (void *)TRIGGER_BASE) {
        perror("lua_host: mmap of the trigger region");
        exit(1);
    }
    close(fd);
    trigger = p;
}

#define FAULT_TRIGGER()                                                       \
    do {                                                                      \
        trigger[(size_t)trigger_next * 4096] = 1;                             \
        if (++trigger_next == TRIGGER_PAGES) {                                \
            madvise((void *)trigger, (size_t)TRIGGER_PAGES * 4096,           \
                    MADV_DONTNEED);                                           \
            trigger_next = 0;                                                 \
        }                                                                     \
    } while (0)
#else
#define FAULT_TRIGGER() ((void)0)
#endif

/* The stack depth histogram: STEP-byte steps; the last one takes all
 * deeper allocations. */
#define STEP 256
#define NSTEPS 1024
extern void *__libc_stack_end; /* glibc: where the stack started */
static unsigned long long depth_hist[NSTEPS];

static inline __attribute__((always_inline)) void count_depth(void)
{
    char *sp;
    size_t d;

    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
    d = (size_t)((char *)__libc_stack_end - sp);
    d = (d + STEP - 1) / STEP;
    depth_hist[d < NSTEPS ? d : NSTEPS - 1]++;
}

/* The new block n (header first) of nsize bytes: count it, fire rt:alloc
 * and return it. A macro, not a helper: the probe must sit in l_alloc
 * itself, since the report charges the first frame outside the function
 * that holds it (an inlined helper would make l_alloc the site). */
#define ALLOCATED(n, nsize, tag)                                              \
    do {                                                                      \
        count_depth();                                                        \
        n_allocs++;                                                           \
        n_bytes += (nsize);                                                   \
        RT_ALLOC((n) + 1, (nsize), (tag));                                    \
        FAULT_TRIGGER();                                                      \
        return (n) + 1;                                                       \
    } while (0)

static void *l_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct hdr *h = ptr ? (struct hdr *)ptr - 1 : NULL;
    struct hdr *n;
    unsigned tag;

    (void)ud;
    if (nsize == 0) {
        if (ptr) {
            RT_FREE(ptr, osize, (unsigned)h->tag);
            free(h);
        }
        return NULL;
    }
    if (!ptr) {
        /* osize: the type tag of a new object, 0 otherwise; anything
         * larger than a tag is not one (the manual allows any value). */
        tag = osize <= LUA_NUMTYPES + 1 ? (unsigned)osize : 0;
        n = malloc(sizeof *n + nsize);
        if (!n)
            return NULL;
        n->tag = tag;
        ALLOCATED(n, nsize, tag);
    }
    tag = (unsigned)h->tag;
    /* The free event comes before realloc: after it the old block may
     * already be someone else's. A failed realloc then fires a free of a
     * block that is still live; Lua raises a memory error and this host
     * exits, so the books do not matter. */
    RT_FREE(ptr, osize, tag);
    n = realloc(h, sizeof *n + nsize);
    if (!n)
        return NULL;
    ALLOCATED(n, nsize, tag);
}

/* At exit, also when the script ends with os.exit() (luacheck does). */
static void print_counts(void)
{
    fprintf(stderr, "lua_host: allocs=%llu bytes=%llu\n", n_allocs, n_bytes);
    if (getenv("LUA_HOST_STACK")) {
        fprintf(stderr, "lua_host: stack-bytes");
        for (int i = 0; i < NSTEPS; i++)
            if (depth_hist[i])
                fprintf(stderr, " %d:%llu", i * STEP, depth_hist[i]);
        fprintf(stderr, "\n");
    }
}

static int traceback(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (!msg)
        msg = lua_pushfstring(L, "(error object is a %s value)",
                              luaL_typename(L, 1));
    luaL_traceback(L, L, msg, 1);
    return 1;
}

/* In protected mode, so that out-of-memory in the libraries or in `arg`
 * is reported, not a panic. argv as light userdata: 1, argc: 2. */
static int pmain(lua_State *L)
{
    int argc = (int)lua_tointeger(L, 2);
    char **argv = (char **)lua_touserdata(L, 1);
    int i, base;

    luaL_openlibs(L);
    lua_createtable(L, argc - 2, 2);
    for (i = 0; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i - 1); /* argv[1] (the script) is arg[0] */
    }
    lua_setglobal(L, "arg");
    lua_pushcfunction(L, traceback);
    base = lua_gettop(L);
    if (luaL_loadfile(L, argv[1]) != LUA_OK)
        return lua_error(L);
    luaL_checkstack(L, argc, "too many arguments to the script");
    for (i = 2; i < argc; i++)
        lua_pushstring(L, argv[i]);
    if (lua_pcall(L, argc - 2, 0, base) != LUA_OK)
        return lua_error(L);
    return 0;
}

int main(int argc, char **argv)
{
    lua_State *L;
    int status;

    if (argc < 2) {
        fprintf(stderr, "usage: %s SCRIPT [ARGS...]\n", argv[0]);
        return 2;
    }
#ifdef LUA_HOST_FAULT_TRIGGER
    trigger_init();
#endif
    atexit(print_counts);
    L = lua_newstate(l_alloc, NULL);
    if (!L) {
        fprintf(stderr, "lua_host: cannot create the Lua state\n");
        return 1;
    }
    lua_pushcfunction(L, pmain);
    lua_pushlightuserdata(L, argv);
    lua_pushinteger(L, argc);
    status = lua_pcall(L, 2, 0, 0);
    if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        fprintf(stderr, "lua_host: %s\n", msg ? msg : "(error object)");
    }
    lua_close(L);
    return status == LUA_OK ? 0 : 1;
}

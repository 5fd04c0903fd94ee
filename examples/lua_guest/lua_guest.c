/* lua_guest.c - a Lua 5.4 host whose allocator tells allocsites where in
 * the Lua program each allocation was made (issue 32): guest locations,
 * RT_ALLOC_GUEST and RT_GUEST (docs/probes.md, include/rt_probes.h).
 *
 *     lua_guest SCRIPT [ARGS...]
 *
 * Like the `lua` standalone for one script (bench/lua_host.c, which it
 * started from): opens the standard libraries, sets the global `arg` and
 * runs SCRIPT with ARGS as `...`. Errors print a traceback and exit 1.
 *
 *     allocsites record -o lua.data -- build/lua_guest script.lua
 *     allocsites report -i lua.data --guest     the sites are Lua lines
 *
 * The allocator. lua_Alloc has realloc semantics (the manual):
 *   nsize == 0               free ptr (osize = its size)      -> RT_FREE
 *   ptr == NULL, nsize > 0   new block (osize: Lua's type tag)
 *                                                -> RT_ALLOC_GUEST
 *   both                     resize: old freed, new allocated
 *                                                -> RT_FREE + RT_ALLOC_GUEST
 * A 16-byte header before each block keeps its tag (the tag of its first
 * allocation, so that rt:free reports the tag the block was allocated
 * with) and the guest location id its truth charged it to.
 *
 * Guest locations. The allocator's ud is a struct whose `L` the host sets
 * right after lua_newstate (NULL before: the allocations of start-up have
 * no guest location, id 0, which the report calls [interpreter]). For an
 * allocation whose event fires, where() walks the Lua stack of that state
 * with lua_getstack and lua_getinfo(L, "Sln", ...) (never "f" or "L":
 * those push onto the Lua stack, which may allocate, from inside the
 * allocator) and interns each frame, outermost first, as (caller's id,
 * source, line, function) -> id in a hash table of the host's own (plain
 * malloc, not the Lua allocator): an id names the whole guest stack
 * through its callers, a calling-context tree like heaptrack's trace
 * tree. The first time an id is used while rt:guest is recorded, RT_GUEST
 * defines it (its callers first); ids made while nothing recorded are
 * defined lazily the same way, so attaching later works.
 *   - Frames: Lua functions only. A C function (string.rep, table.concat,
 *     setmetatable) is not a frame: what it allocates is charged to the
 *     Lua line that called it. An allocation with no Lua function on the
 *     stack (luaL_openlibs, loading the chunk, the collector run from the
 *     host) has id 0.
 *   - Names: "main chunk" for the script's chunk, the name lua_getinfo's
 *     'n' finds from the call site ("inner", "make"), else
 *     "function <file:line defined>", as Lua's tracebacks say. file is
 *     short_src ("tests/lua/x.lua", no '@').
 *   - Depth: the innermost MAX_FRAMES (64) Lua frames; a deeper stack's
 *     outer frames are dropped (the outermost kept frame has no caller).
 *   - Lines: ci->u.l.savedpc's line. The interpreter saves pc before
 *     calls and before most instructions that can allocate, but not all:
 *     Lua 5.4.4's OP_NEWTABLE (a table constructor, `{}`) does not, so a
 *     table is charged to the line of the last instruction that saved pc
 *     (in a loop on one line, that line; first thing in a function, the
 *     line the function is defined on; see tests/lua/guest_lines.lua).
 * Limitations:
 *   - Coroutines: lua_Alloc is given no lua_State, only ud, so where()
 *     always walks the main state: an allocation made while a coroutine
 *     runs is charged to the main state's stack at the coroutine.resume
 *     (or wrap) that runs it, not to the coroutine's own line.
 *   - Lua 5.4.4 (Debian 12's liblua5.4-dev) only, as built here: from
 *     5.4.5 on, luaD_reallocstack turns the CallInfo stack pointers into
 *     offsets around its allocation, and a walk at that moment would read
 *     them as pointers.
 *   - Sampled mode computes where() for the sampled allocations only; the
 *     host's truth (below) computes it for all of them.
 *
 * Truth (tests/integration/test_guest.py): with TRUTH_FILE set in the
 * environment, the host charges every allocation it reports (every
 * RT_ALLOC_GUEST with a non-NULL block, with the size it passes) to its
 * guest location (computed for every allocation, whatever is recorded),
 * follows every block to its free, and at exit (also through os.exit,
 * which does not close the state: what is live then is leaked) writes
 * JSON, named as allocsites report --guest --json names its sites:
 *   {"argv": [...], "pid": N,
 *    "sites": [{"function", "file", "line", "count", "bytes",
 *               "peak_bytes", "peak_count", "leaked_bytes",
 *               "leaked_count", "temporary", "ids"}],
 *    "interpreter": {the same figures for id 0},
 *    "stacks": [{"count", "bytes", "frames": [[function, file, line],
 *                ... innermost first]}]: the same per id (guest stack),
 *    "totals": {"count", "bytes", "peak_bytes", "frees", "freed_bytes",
 *               "inv_size_sum": the sum of 1 / size over allocations},
 *    "ids": ids made, "defined": ids RT_GUEST defined (fired rt:guest),
 *    "max_depth": the deepest guest stack (frames)}
 * A site is an innermost frame (function, file, line): the ids (stacks)
 * that end there are summed, as the report does. peak: live at the first
 * moment the total live bytes was highest; temporary: freed by the very
 * next allocation or free (heaptrack's definition, docs/output-formats.md).
 *
 * Build (examples/Makefile.inc, target $(BUILD)/lua_guest):
 *   gcc -O2 -g -Iinclude -I/usr/include/lua5.4 \
 *       examples/lua_guest/lua_guest.c \
 *       /usr/lib/x86_64-linux-gnu/liblua5.4.a -lm -ldl -Wl,-E -o lua_guest
 * Linked statically with Lua, so that the dispatch loop luaV_execute is
 * in this binary: RT_GUEST_DISPATCH below names it, and report --guest
 * puts the guest frames in its place in spliced stacks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lauxlib.h"
#include "lua.h"
#include "lualib.h"
#include "rt_probes.h"

RT_GUEST_DISPATCH("^luaV_execute$");

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

#define MAX_FRAMES 64

/* the allocator's ud: the state where() walks, NULL during start-up */
struct host {
    lua_State *L;
};

struct hdr {
    size_t tag;
    unsigned long long gid; /* the truth's id; keeps 16-byte alignment */
};

/* ---- interned strings ------------------------------------------------ */

static char **str_tab;
static size_t str_cap, str_n;

static uint64_t hash_bytes(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

static void *xmalloc(size_t n)
{
    void *p = calloc(1, n);
    if (!p) {
        fprintf(stderr, "lua_guest: out of memory (host tables)\n");
        abort();
    }
    return p;
}

/* the one copy of s */
static const char *intern_str(const char *s)
{
    size_t i, mask;
    if (str_n * 2 >= str_cap) {
        size_t ncap = str_cap ? str_cap * 2 : 256, j;
        char **nt = xmalloc(ncap * sizeof *nt);
        for (j = 0; j < str_cap; j++)
            if (str_tab[j]) {
                i = hash_bytes(str_tab[j], 0xcbf29ce484222325ULL) & (ncap - 1);
                while (nt[i])
                    i = (i + 1) & (ncap - 1);
                nt[i] = str_tab[j];
            }
        free(str_tab);
        str_tab = nt;
        str_cap = ncap;
    }
    mask = str_cap - 1;
    i = hash_bytes(s, 0xcbf29ce484222325ULL) & mask;
    while (str_tab[i]) {
        if (strcmp(str_tab[i], s) == 0)
            return str_tab[i];
        i = (i + 1) & mask;
    }
    str_tab[i] = xmalloc(strlen(s) + 1);
    strcpy(str_tab[i], s);
    str_n++;
    return str_tab[i];
}

/* ---- guest location ids ---------------------------------------------- */

/* Node id (1..) is nodes[id]; nodes[0] stands for id 0 (its figures are
 * [interpreter]'s). The truth's figures live here too. */
struct node {
    unsigned long long parent;
    unsigned long long line;
    const char *source, *function; /* interned */
    int defined;                   /* rt:guest fired for it */
    unsigned depth;                /* frames, itself included */
    /* truth */
    unsigned long long count, bytes, temporary;
    unsigned long long live_bytes, live_count;
    unsigned long long mod_ev;     /* last event that changed live */
    unsigned long long at_peak_bytes, at_peak_count, at_peak_for;
};

static struct node *nodes;
static size_t n_nodes = 1, nodes_cap; /* nodes[0]: id 0 */
static unsigned long long *node_tab;  /* open addressing: ids, 0 empty */
static size_t node_tab_cap;

static uint64_t node_hash(unsigned long long parent, unsigned long long line,
                          const char *source, const char *function)
{
    uint64_t h = parent * 0x9e3779b97f4a7c15ULL;
    h ^= line * 0xc2b2ae3d27d4eb4fULL;
    h ^= (uint64_t)(uintptr_t)source * 0x165667b19e3779f9ULL;
    h ^= (uint64_t)(uintptr_t)function * 0x27d4eb2f165667c5ULL;
    return h ^ (h >> 29);
}

static void nodes_grow(void)
{
    size_t ncap = nodes_cap ? nodes_cap * 2 : 256;
    struct node *nn = realloc(nodes, ncap * sizeof *nn);
    if (!nn) {
        fprintf(stderr, "lua_guest: out of memory (host tables)\n");
        abort();
    }
    memset(nn + nodes_cap, 0, (ncap - nodes_cap) * sizeof *nn);
    nodes = nn;
    nodes_cap = ncap;
}

static unsigned long long intern_node(unsigned long long parent,
                                      unsigned long long line,
                                      const char *source,
                                      const char *function)
{
    size_t i, mask;
    unsigned long long id;
    if (n_nodes * 2 >= node_tab_cap) {
        size_t ncap = node_tab_cap ? node_tab_cap * 2 : 512, j;
        unsigned long long *nt = xmalloc(ncap * sizeof *nt);
        for (j = 0; j < node_tab_cap; j++) {
            struct node *n;
            if (!node_tab[j])
                continue;
            n = &nodes[node_tab[j]];
            i = node_hash(n->parent, n->line, n->source, n->function) &
                (ncap - 1);
            while (nt[i])
                i = (i + 1) & (ncap - 1);
            nt[i] = node_tab[j];
        }
        free(node_tab);
        node_tab = nt;
        node_tab_cap = ncap;
    }
    mask = node_tab_cap - 1;
    i = node_hash(parent, line, source, function) & mask;
    while ((id = node_tab[i]) != 0) {
        struct node *n = &nodes[id];
        if (n->parent == parent && n->line == line && n->source == source &&
            n->function == function)
            return id;
        i = (i + 1) & mask;
    }
    while (n_nodes >= nodes_cap)
        nodes_grow();
    id = n_nodes++;
    nodes[id].parent = parent;
    nodes[id].line = line;
    nodes[id].source = source;
    nodes[id].function = function;
    nodes[id].depth = parent ? nodes[parent].depth + 1 : 1;
    node_tab[i] = id;
    return id;
}

/* The guest location of the allocation being made: the id of the Lua
 * stack of the main state, 0 outside any Lua function. Interns, never
 * fires. Not inlined: its frames stay out of l_alloc's stack frame, which
 * every recorded stack copies. */
static __attribute__((noinline)) unsigned long long
guest_id(struct host *host)
{
    struct frame {
        unsigned long long line;
        const char *source, *function;
    } fr[MAX_FRAMES];
    int n = 0, level;
    lua_Debug ar;
    unsigned long long id = 0;
    char name[LUA_IDSIZE + 48];

    if (!host || !host->L)
        return 0;
    for (level = 0; n < MAX_FRAMES && lua_getstack(host->L, level, &ar);
         level++) {
        if (!lua_getinfo(host->L, "Sln", &ar) || ar.what[0] == 'C')
            continue;
        fr[n].line = ar.currentline > 0 ? (unsigned long long)ar.currentline
                                        : 0;
        fr[n].source = intern_str(ar.short_src);
        if (ar.what[0] == 'm')
            fr[n].function = intern_str("main chunk");
        else if (ar.name)
            fr[n].function = intern_str(ar.name);
        else {
            snprintf(name, sizeof name, "function <%s:%d>", ar.short_src,
                     ar.linedefined);
            fr[n].function = intern_str(name);
        }
        n++;
    }
    while (n-- > 0)
        id = intern_node(id, fr[n].line, fr[n].source, fr[n].function);
    return id;
}

/* id, defined (callers first) if rt:guest is recorded and it was not */
static unsigned long long defined(unsigned long long id)
{
    if (id && !nodes[id].defined && RT_GUEST_ENABLED()) {
        struct node *n;
        defined(nodes[id].parent);
        n = &nodes[id];
        RT_GUEST(id, n->parent, n->line, n->source, n->function);
        n->defined = 1;
    }
    return id;
}

/* ---- the truth --------------------------------------------------------- */

static int truth_on;
static unsigned long long ev, peak_ev, total_live, max_live;
static unsigned long long n_frees, n_freed_bytes;
static double inv_size_sum; /* sum of 1 / size: sampled counts' variance */
static void *last_alloc; /* the previous event's block if it was an
                            allocation, else NULL */

/* before id's live figures change at event ev: keep their value at the
 * peak if this is their first change since it */
static void touch(struct node *n)
{
    if (n->mod_ev <= peak_ev && peak_ev < ev) {
        n->at_peak_bytes = n->live_bytes;
        n->at_peak_count = n->live_count;
        n->at_peak_for = peak_ev;
    }
    n->mod_ev = ev;
}

static void noted_alloc(void *p, unsigned long long id, size_t size)
{
    struct node *n = &nodes[id];
    ev++;
    touch(n);
    n->count++;
    n->bytes += size;
    n->live_bytes += size;
    n->live_count++;
    inv_size_sum += 1.0 / (double)size;
    total_live += size;
    if (total_live > max_live) {
        max_live = total_live;
        peak_ev = ev;
    }
    last_alloc = p;
}

static void noted_free(void *p, unsigned long long id, size_t size)
{
    struct node *n = &nodes[id];
    ev++;
    touch(n);
    if (p == last_alloc)
        n->temporary++;
    n->live_bytes -= size;
    n->live_count--;
    total_live -= size;
    n_frees++;
    n_freed_bytes += size;
    last_alloc = NULL;
}

static unsigned long long peak_bytes(const struct node *n)
{
    return n->mod_ev > peak_ev && n->at_peak_for == peak_ev
               ? n->at_peak_bytes : n->live_bytes;
}

static unsigned long long peak_count(const struct node *n)
{
    return n->mod_ev > peak_ev && n->at_peak_for == peak_ev
               ? n->at_peak_count : n->live_count;
}

/* ---- the allocator ---------------------------------------------------- */

/* The new block n (header first) of nsize bytes: note it, fire rt:alloc
 * (and rt:sample) and return it. A macro, not a helper: the probe must
 * sit in l_alloc itself, since the report charges the first frame
 * outside the function that holds it. The truth has its id already; the
 * probe alone computes it only when its event fires. */
#define ALLOCATED(n, nsize, tag)                                              \
    do {                                                                      \
        unsigned long long gid_ = 0;                                          \
        if (truth_on) {                                                       \
            gid_ = guest_id(host);                                            \
            noted_alloc((n) + 1, gid_, (nsize));                              \
        }                                                                     \
        (n)->gid = gid_;                                                      \
        RT_ALLOC_GUEST((n) + 1, (nsize), (tag),                               \
                       defined(truth_on ? gid_ : guest_id(host)));            \
        return (n) + 1;                                                       \
    } while (0)

static void *l_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct host *host = ud;
    struct hdr *h = ptr ? (struct hdr *)ptr - 1 : NULL;
    struct hdr *n;
    unsigned tag;

    if (nsize == 0) {
        if (ptr) {
            if (truth_on)
                noted_free(ptr, h->gid, osize);
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
     * already be someone else's. (A failed realloc then fired the free of
     * a block still live; Lua raises a memory error and this host exits.) */
    if (truth_on)
        noted_free(ptr, h->gid, osize);
    RT_FREE(ptr, osize, tag);
    n = realloc(h, sizeof *n + nsize);
    if (!n)
        return NULL;
    ALLOCATED(n, nsize, tag);
}

/* ---- writing the truth ------------------------------------------------- */

static int main_argc;
static char **main_argv;

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

struct site {
    const struct node *key; /* the first node with this innermost frame */
    unsigned long long count, bytes, peak_bytes, peak_count, leaked_bytes,
        leaked_count, temporary, ids;
};

static void figures(FILE *f, const struct site *s)
{
    fprintf(f, "\"count\": %llu, \"bytes\": %llu, \"peak_bytes\": %llu, "
               "\"peak_count\": %llu, \"leaked_bytes\": %llu, "
               "\"leaked_count\": %llu, \"temporary\": %llu, \"ids\": %llu",
            s->count, s->bytes, s->peak_bytes, s->peak_count,
            s->leaked_bytes, s->leaked_count, s->temporary, s->ids);
}

static void add(struct site *s, const struct node *n)
{
    s->count += n->count;
    s->bytes += n->bytes;
    s->peak_bytes += peak_bytes(n);
    s->peak_count += peak_count(n);
    s->leaked_bytes += n->live_bytes;
    s->leaked_count += n->live_count;
    s->temporary += n->temporary;
    s->ids++;
}

static void write_truth(void)
{
    const char *path = getenv("TRUTH_FILE");
    struct site *sites, interp;
    size_t n_sites = 0, i, j;
    unsigned long long total_count = 0, total_bytes = 0;
    unsigned max_depth = 0;
    unsigned long long n_defined;
    FILE *f;
    int k;

    if (!truth_on || !path || !*path)
        return;
    truth_on = 0;
    /* sites: ids by innermost frame (few: a quadratic merge is fine) */
    sites = xmalloc(n_nodes * sizeof *sites);
    for (i = 1; i < n_nodes; i++) {
        const struct node *n = &nodes[i];
        if (n->depth > max_depth)
            max_depth = n->depth;
        if (!n->count)
            continue;
        for (j = 0; j < n_sites; j++)
            if (sites[j].key->line == n->line &&
                sites[j].key->source == n->source &&
                sites[j].key->function == n->function)
                break;
        if (j == n_sites)
            sites[n_sites++].key = n;
        add(&sites[j], n);
    }
    memset(&interp, 0, sizeof interp);
    interp.key = &nodes[0];
    add(&interp, &nodes[0]);
    f = fopen(path, "w");
    if (!f) {
        perror(path);
        return;
    }
    fprintf(f, "{\"argv\": [");
    for (k = 0; k < main_argc; k++) {
        if (k)
            fprintf(f, ", ");
        json_str(f, main_argv[k]);
    }
    fprintf(f, "], \"pid\": %d,\n \"sites\": [", (int)getpid());
    for (j = 0; j < n_sites; j++) {
        fprintf(f, "%s\n  {\"function\": ", j ? "," : "");
        json_str(f, sites[j].key->function);
        fprintf(f, ", \"file\": ");
        json_str(f, sites[j].key->source);
        fprintf(f, ", \"line\": %llu, ", sites[j].key->line);
        figures(f, &sites[j]);
        fprintf(f, "}");
        total_count += sites[j].count;
        total_bytes += sites[j].bytes;
    }
    fprintf(f, "],\n \"interpreter\": {");
    figures(f, &interp);
    total_count += interp.count;
    total_bytes += interp.bytes;
    fprintf(f, "},\n \"stacks\": [");
    for (i = 1, k = 0; i < n_nodes; i++) {
        unsigned long long at;
        if (!nodes[i].count)
            continue;
        fprintf(f, "%s\n  {\"count\": %llu, \"bytes\": %llu, \"frames\": [",
                k++ ? "," : "", nodes[i].count, nodes[i].bytes);
        for (at = i; at; at = nodes[at].parent) {
            fprintf(f, "%s[", at == i ? "" : ", ");
            json_str(f, nodes[at].function);
            fprintf(f, ", ");
            json_str(f, nodes[at].source);
            fprintf(f, ", %llu]", nodes[at].line);
        }
        fprintf(f, "]}");
    }
    for (i = 1, n_defined = 0; i < n_nodes; i++)
        n_defined += nodes[i].defined != 0;
    fprintf(f, "],\n \"totals\": {\"count\": %llu, \"bytes\": %llu, "
               "\"peak_bytes\": %llu, \"frees\": %llu, "
               "\"freed_bytes\": %llu, \"inv_size_sum\": %.17g},\n"
               " \"ids\": %llu, \"defined\": %llu, \"max_depth\": %u}\n",
            total_count, total_bytes, max_live, n_frees, n_freed_bytes,
            inv_size_sum, (unsigned long long)(n_nodes - 1), n_defined,
            max_depth);
    fclose(f);
    free(sites);
}

/* ---- the host --------------------------------------------------------- */

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
    static struct host host; /* L: NULL until lua_newstate returns */
    lua_State *L;
    int status;

    if (argc < 2) {
        fprintf(stderr, "usage: %s SCRIPT [ARGS...]\n", argv[0]);
        return 2;
    }
    main_argc = argc;
    main_argv = argv;
    nodes_grow(); /* nodes[0]: id 0 */
    if (getenv("TRUTH_FILE") && *getenv("TRUTH_FILE")) {
        truth_on = 1;
        atexit(write_truth);
    }
    L = lua_newstate(l_alloc, &host);
    if (!L) {
        fprintf(stderr, "lua_guest: cannot create the Lua state\n");
        return 1;
    }
    host.L = L;
    lua_pushcfunction(L, pmain);
    lua_pushlightuserdata(L, argv);
    lua_pushinteger(L, argc);
    status = lua_pcall(L, 2, 0, 0);
    if (status != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        fprintf(stderr, "lua_guest: %s\n", msg ? msg : "(error object)");
    }
    lua_close(L);
    return status == LUA_OK ? 0 : 1;
}

/* d_edge.c - the differential corpus's program of unusual stacks
 * (tests/integration/test_differential.py): it allocates through rt_alloc
 * (examples/rtalloc) from stacks a runtime has and plain calls do not:
 *   a signal handler               (raise: the stack passes through the
 *                                   kernel's signal frame and libc's
 *                                   __restore_rt trampoline, where the
 *                                   pc is not a return address)
 *   a signal handler on sigaltstack (the handler's stack is heap memory:
 *                                   the interrupted frames are not in
 *                                   the stack copy, both readers must
 *                                   stop at the same frame)
 *   a coroutine                    (makecontext/swapcontext on a heap
 *                                   stack: the stack ends in libc's
 *                                   __start_context)
 *   alloca                         (frames of varying size, whose CFA
 *                                   comes from the frame pointer)
 *   setjmp/longjmp                 (allocations after a longjmp
 *                                   abandoned frames)
 *   threads                        (three, from start_thread)
 *   a call on a stack of its own   (on_other_stack, as Go's
 *                                   runtime.asmcgocall moves a cgo call
 *                                   onto the system stack: its CFI does
 *                                   not follow the switch, and the
 *                                   return address it leads to is a
 *                                   stack address, no code: the native
 *                                   reader ends the stack switched there,
 *                                   perf 6.1 adds that address unnamed)
 * Every block is freed. No output; exit status 0. */
#define _GNU_SOURCE
#include <alloca.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "rt_alloc.h"

#define NOINLINE __attribute__((noinline))
#define KEEP 1024

static volatile unsigned long sink;
static void *kept[KEEP];
static int nkept;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static NOINLINE void take(size_t n, unsigned tag)
{
    char *p = rt_alloc(n, tag);
    p[0] = 1;
    sink += (unsigned long)p[0];
    pthread_mutex_lock(&kept_lock);
    if (nkept < KEEP)
        kept[nkept++] = p;
    else
        rt_free(p);
    pthread_mutex_unlock(&kept_lock);
}

/* --- signal handlers ------------------------------------------------ */

static NOINLINE void in_handler(int depth)
{
    if (depth) {
        in_handler(depth - 1);
        sink++;
    } else {
        take(40, 1);
    }
}

static void handler(int sig)
{
    (void)sig;
    in_handler(3);
}

static NOINLINE void signals(int n)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigaction(SIGUSR1, &sa, NULL);
    for (int i = 0; i < n; i++) {
        raise(SIGUSR1);
        sink += (unsigned long)i;
    }
}

static NOINLINE void signals_on_altstack(int n)
{
    stack_t ss;
    struct sigaction sa;
    ss.ss_size = 64 * 1024;
    ss.ss_sp = malloc(ss.ss_size);
    ss.ss_flags = 0;
    sigaltstack(&ss, NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR2, &sa, NULL);
    for (int i = 0; i < n; i++)
        raise(SIGUSR2);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    free(ss.ss_sp);
}

/* --- a coroutine ---------------------------------------------------- */

static ucontext_t main_ctx, co_ctx;

static NOINLINE void co_work(int depth)
{
    if (depth) {
        co_work(depth - 1);
        sink++;
    } else {
        take(24, 2);
        swapcontext(&co_ctx, &main_ctx);
        take(32, 2);
    }
}

static void co_entry(void)
{
    for (int i = 0; i < 20; i++)
        co_work(i % 5);
}

static NOINLINE void coroutine(void)
{
    void *stack = malloc(64 * 1024);
    getcontext(&co_ctx);
    co_ctx.uc_stack.ss_sp = stack;
    co_ctx.uc_stack.ss_size = 64 * 1024;
    co_ctx.uc_link = &main_ctx;
    makecontext(&co_ctx, co_entry, 0);
    for (int i = 0; i < 21; i++)
        swapcontext(&main_ctx, &co_ctx);
    free(stack);
}

/* --- alloca, longjmp ------------------------------------------------ */

static NOINLINE void with_alloca(int n)
{
    char *b = alloca((size_t)n * 64 + 16);
    memset(b, n, (size_t)n * 64 + 16);
    sink += (unsigned long)b[n];
    if (n)
        with_alloca(n - 1);
    else
        take(56, 3);
}

static jmp_buf jump;

static NOINLINE void jumper(int depth)
{
    if (depth < 0)   /* never: a way out, for the compiler's sake */
        return;
    take(16, 4);
    if (depth)
        jumper(depth - 1);
    else
        longjmp(jump, 1);
}

static NOINLINE void jumps(int n)
{
    for (volatile int i = 0; i < n; i++)
        if (!setjmp(jump))
            jumper(i % 4);
    take(8, 4);   /* after the last longjmp */
}

/* --- threads -------------------------------------------------------- */

static void *thread_main(void *arg)
{
    (void)arg;
    for (int i = 0; i < 30; i++) {
        with_alloca(i % 6);
        take(8, 5);
    }
    return NULL;
}

/* on_other_stack(fn, arg, top): fn(arg) on the stack below top, the
 * old stack pointer kept there (where the CFI, which still describes the
 * old stack, has the return address); x86-64, as the corpus */
void on_other_stack(void (*fn)(void *), void *arg, void *top);
__asm__(".text\n"
        ".globl on_other_stack\n"
        ".type on_other_stack, @function\n"
        "on_other_stack:\n"
        "  .cfi_startproc\n"
        "  push %rbp\n"
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset %rbp, -16\n"
        "  mov %rsp, %rbp\n"
        "  mov %rdx, %rsp\n"        /* the other stack */
        "  push %rbp\n"             /* the old sp: no code */
        "  sub $8, %rsp\n"
        "  mov %rdi, %rax\n"
        "  mov %rsi, %rdi\n"
        "  call *%rax\n"
        "  mov %rbp, %rsp\n"
        "  pop %rbp\n"
        "  .cfi_def_cfa_offset 8\n"
        "  ret\n"
        "  .cfi_endproc\n"
        "  .size on_other_stack, .-on_other_stack\n");

static NOINLINE void on_the_other_stack(void *arg)
{
    take((size_t)arg, 8);
    sink++;
}

static void other_stacks(int n)
{
    static char stack[1 << 16] __attribute__((aligned(16)));
    for (int i = 0; i < n; i++)
        on_other_stack(on_the_other_stack, (void *)(size_t)(24 + i),
                       stack + sizeof stack);
}

int main(void)
{
    pthread_t t[3];

    signals(20);
    coroutine();
    for (int i = 0; i < 20; i++)
        with_alloca(i % 7);
    jumps(10);
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, thread_main, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    signals_on_altstack(10);
    other_stacks(10);
    for (int i = 0; i < nkept; i++)
        rt_free(kept[i]);
    return 0;
}

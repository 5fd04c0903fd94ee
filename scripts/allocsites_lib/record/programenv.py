"""The recorded program's environment: the stack pad, RT_SAMPLE_BYTES.

The environment the recorded program runs with: the stack pad that
keeps the main thread's stack copies whole, and RT_SAMPLE_BYTES.
"""

# perf copies --stack-size bytes of stack from the stack pointer and stops
# at the end of the stack mapping; the rest of the record keeps stale ring
# bytes that do not compress (twice the file size for the demo). The
# environment strings sit at the very top of the main thread's stack, so
# a variable of one stack copy's length puts the top at least that far
# above main, and every copy from the main thread is whole. Its bytes are
# all the same, so they compress to nothing in each copy that reaches
# them. include/rt_stack_top.h maps the hole the kernel leaves below the
# strings; docs/design.md, "Whole stack copies", says why, and
# docs/notes/2026-design-history.md, "Whole stack copies", measured it.
STACK_PAD_VARIABLE = "ALLOCSITES_STACK_PAD"


def program_environment(base, stack_size, sample=None):
    """The environment perf passes on to the program it starts: base plus
    RT_SAMPLE_BYTES in sampled mode and the stack pad."""
    env = dict(base)
    if sample:
        env["RT_SAMPLE_BYTES"] = str(sample)
    # A value the caller set (even empty) is kept: that is how
    # docs/notes/2026-design-history.md, "Whole stack copies", recorded
    # without the pad.
    env.setdefault(STACK_PAD_VARIABLE, "." * stack_size)
    return env

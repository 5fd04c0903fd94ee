/* truth.h - ground truth for the integration tests.
 *
 * A test program allocates through ALLOC(size, tag) or REALLOC(p, size,
 * tag). Each expands, on ONE source line, to a note of (file, line,
 * function, tag, size) and the allocator call, so the line the program
 * notes is exactly the call site the profile must report. At exit the
 * notes are written as JSON to $TRUTH_FILE, with the program's argv, one
 * record per (site, tag):
 *   {"argv": [...], "records": [{"file", "function", "line",
 *    "tag": "<tag name or number>", "count", "bytes"}]}
 * Header-only; thread-safe; uses no allocator of its own. */
#ifndef TRUTH_H
#define TRUTH_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRUTH_MAX 512

struct truth_site {
    const char *file, *function;
    int line;
    unsigned tag;
    unsigned long long count, bytes;
};

static struct truth_site truth_sites[TRUTH_MAX];
static int truth_n;
static pthread_mutex_t truth_lock = PTHREAD_MUTEX_INITIALIZER;
static int truth_argc;
static char **truth_argv;
static const char *(*truth_tag_name)(unsigned tag);

static void truth_note(const char *file, int line, const char *function,
                       unsigned tag, size_t size)
{
    int i;
    pthread_mutex_lock(&truth_lock);
    for (i = 0; i < truth_n; i++)
        if (truth_sites[i].line == line && truth_sites[i].tag == tag &&
            strcmp(truth_sites[i].file, file) == 0)
            break;
    if (i == truth_n) {
        if (truth_n == TRUTH_MAX) {
            fprintf(stderr, "truth.h: too many sites\n");
            abort();
        }
        truth_sites[i].file = file;
        truth_sites[i].line = line;
        truth_sites[i].function = function;
        truth_sites[i].tag = tag;
        truth_n++;
    }
    truth_sites[i].count++;
    truth_sites[i].bytes += size;
    pthread_mutex_unlock(&truth_lock);
}

#define ALLOC(size, tag)                                                      \
    (truth_note(__FILE__, __LINE__, __func__, (tag), (size)),                 \
     rt_alloc((size), (tag)))
#define REALLOC(p, size, tag)                                                 \
    (truth_note(__FILE__, __LINE__, __func__, (tag), (size)),                 \
     rt_realloc((p), (size), (tag)))

static void truth_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void truth_write(void)
{
    const char *path = getenv("TRUTH_FILE");
    FILE *f;
    int i;
    if (!path || !(f = fopen(path, "w")))
        return;
    fputs("{\"argv\": [", f);
    for (i = 0; i < truth_argc; i++) {
        if (i)
            fputs(", ", f);
        truth_json_string(f, truth_argv[i]);
    }
    fputs("], \"records\": [", f);
    for (i = 0; i < truth_n; i++) {
        const char *name = truth_tag_name ? truth_tag_name(truth_sites[i].tag)
                                          : NULL;
        char num[16];
        if (!name) {
            snprintf(num, sizeof num, "%u", truth_sites[i].tag);
            name = num;
        }
        fputs(i ? ",\n {" : "\n {", f);
        fputs("\"file\": ", f);
        truth_json_string(f, truth_sites[i].file);
        fputs(", \"function\": ", f);
        truth_json_string(f, truth_sites[i].function);
        fprintf(f, ", \"line\": %d, \"tag\": ", truth_sites[i].line);
        truth_json_string(f, name);
        fprintf(f, ", \"count\": %llu, \"bytes\": %llu}",
                truth_sites[i].count, truth_sites[i].bytes);
    }
    fputs("]}\n", f);
    fclose(f);
}

/* Call first in main. tag_name: tag -> name as RT_TAG_NAME gives it. */
static void truth_init(int argc, char **argv, const char *(*tag_name)(unsigned))
{
    truth_argc = argc;
    truth_argv = argv;
    truth_tag_name = tag_name;
    atexit(truth_write);
}

#endif

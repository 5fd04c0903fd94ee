/* tracefmt.c - the tracepoint formats perf saved in the file (feature
 * TRACING_DATA, written by perf's trace-event-info.c): for each event
 * its id and the fields after the common ones, which is what perf
 * script hands a Python handler as the event's field dict. */
#define _GNU_SOURCE
#include "reader.h"

#include <stdlib.h>
#include <string.h>

struct cursor {
	const u8 *p, *end;
	int bad;
};

static const void *take(struct cursor *c, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return NULL;
	}
	const void *r = c->p;
	c->p += n;
	return r;
}

static u64 get_u64(struct cursor *c)
{
	const void *p = take(c, 8);
	u64 v = 0;
	if (p)
		memcpy(&v, p, 8);
	return v;
}

static u32 get_u32(struct cursor *c)
{
	const void *p = take(c, 4);
	u32 v = 0;
	if (p)
		memcpy(&v, p, 4);
	return v;
}

static const char *get_str(struct cursor *c)
{
	const u8 *z = c->bad ? NULL : memchr(c->p, 0, (size_t)(c->end - c->p));
	if (!z) {
		c->bad = 1;
		return NULL;
	}
	const char *s = (const char *)c->p;
	c->p = z + 1;
	return s;
}

/* "\tfield:unsigned long arg1;\toffset:16;\tsize:8;\tsigned:0;" */
static int parse_field(const char *line, size_t len, struct field *f)
{
	char buf[512];
	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, line, len);
	buf[len] = 0;
	char *decl = strstr(buf, "field:");
	char *semi = decl ? strchr(decl, ';') : NULL;
	char *off = strstr(buf, "offset:"), *size = strstr(buf, "size:"),
	     *sgn = strstr(buf, "signed:");
	if (!decl || !semi || !off || !size)
		return -1;
	*semi = 0;
	/* a dynamic string (a uprobe's :string fetch) is "__data_loc
	 * char[] name": its value is a u32, the string's offset in the raw
	 * data and its length above */
	f->is_string = strstr(decl, "__data_loc") != NULL;
	char *br = strchr(decl, '[');
	if (br && f->is_string) {
		char *close = strchr(br, ']');
		if (!close)
			return -1;
		memmove(br, close + 1, strlen(close + 1) + 1);
	} else if (br) {
		*br = 0;
	}
	char *end = decl + strlen(decl);
	while (end > decl && end[-1] == ' ')
		*--end = 0;
	char *name = strrchr(decl, ' ');
	name = name ? name + 1 : decl + 6;
	if (strlen(name) >= sizeof(f->name))
		return -1;
	strcpy(f->name, name);
	f->offset = (u32)strtoul(off + 7, NULL, 10);
	f->size = (u32)strtoul(size + 5, NULL, 10);
	f->is_signed = sgn ? atoi(sgn + 7) : 0;
	return 0;
}

static struct tpformat *parse_format(const char *text, size_t n)
{
	struct tpformat *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	const char *p = text, *end = text + n;
	int have_id = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (len > 6 && !strncmp(p, "name: ", 6)) {
			size_t k = len - 6 < sizeof(t->name) - 1 ? len - 6 :
				sizeof(t->name) - 1;
			memcpy(t->name, p + 6, k);
		} else if (len > 4 && !strncmp(p, "ID: ", 4)) {
			/* the text need not end in a NUL: a copy that does */
			char num[32] = { 0 };
			memcpy(num, p + 4, len - 4 < 31 ? len - 4 : 31);
			t->id = strtoull(num, NULL, 10);
			have_id = 1;
		} else if (len > 7 && memmem(p, len, "field:", 6)) {
			struct field f;
			if (!parse_field(p, len, &f) &&
			    strncmp(f.name, "common_", 7) != 0 &&
			    t->nfields < MAX_FIELDS) {
				t->fields[t->nfields++] = f;
				if ((u64)f.offset + f.size > t->end)
					t->end = (u64)f.offset + f.size;
			}
		}
		p += len + 1;
	}
	if (!have_id) {
		free(t);
		return NULL;
	}
	return t;
}

/* Only the formats of events in the file are kept: the section can hold
 * a million tiny ones, 13 bytes of file each and 1 KB of memory. */
static int wanted(u64 id, const u64 *ids, size_t nids)
{
	for (size_t i = 0; i < nids; i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

struct tpformat *tracefmt_parse(const u8 *data, size_t size, const u64 *ids,
				size_t nids)
{
	struct cursor c = { data, data + size, 0 };
	struct tpformat *list = NULL;
	const u8 *magic = take(&c, 10);
	if (!magic || memcmp(magic + 3, "tracing", 7))
		return NULL;
	get_str(&c);            /* version */
	const u8 *flags = take(&c, 2);  /* big endian, long size */
	if (!flags || flags[0])
		return NULL;    /* big-endian tracing data: not read */
	take(&c, 4);            /* page size */
	for (int i = 0; i < 2; i++) {   /* header_page, header_event */
		get_str(&c);
		take(&c, (size_t)get_u64(&c));
	}
	u32 nftrace = get_u32(&c);
	for (u32 i = 0; i < nftrace && !c.bad; i++)
		take(&c, (size_t)get_u64(&c));
	u32 nsys = get_u32(&c);
	for (u32 s = 0; s < nsys && !c.bad; s++) {
		get_str(&c);
		u32 count = get_u32(&c);
		for (u32 i = 0; i < count && !c.bad; i++) {
			u64 n = get_u64(&c);
			const char *text = take(&c, (size_t)n);
			if (!text)
				break;
			struct tpformat *t = parse_format(text, (size_t)n);
			if (t && !wanted(t->id, ids, nids)) {
				free(t);
			} else if (t) {
				t->next = list;
				list = t;
			}
		}
	}
	return list;
}

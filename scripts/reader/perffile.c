/* perffile.c - perf.data as perf record 6.1 writes it: the header, the
 * attributes with their ids and names, the tracepoint formats, and the
 * data section's records, PERF_RECORD_COMPRESSED ones streamed through
 * libzstd. Memory: two fixed buffers, whatever the file's size (perf
 * script 6.1 keeps every decompressed record until it exits).
 *
 * Only the little-endian format (PERFILE2) is read, as a file perf
 * wrote (an attribute table and feature sections around the data) or as
 * a stream (perf record -o -, "pipe mode": the same things as records
 * ahead of the data, open_pipe); big-endian files and other compressors
 * are refused with a message, and the report then falls back to perf
 * script. */
#include "reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define FEAT_TRACING_DATA 1
#define FEAT_ARCH 6
#define FEAT_EVENT_DESC 12
#define FEAT_COMPRESSED 27
#define COMP_ZSTD 1

/* The records of a pipe-mode stream that stand for the file's header */
#define REC_HEADER_ATTR 64
#define REC_HEADER_EVENT_TYPE 65
#define REC_HEADER_TRACING_DATA 66
#define REC_HEADER_BUILD_ID 67
#define REC_EVENT_UPDATE 78
#define REC_HEADER_FEATURE 80
#define REC_FINISHED_INIT 82
#define EVENT_UPDATE_NAME 2
#define MAX_ATTRS 4096

#define IN_SIZE (1u << 20)
/* Decompressed records are walked in a buffer this size: a record is at
 * most 64 KiB (its size is a u16), so one always fits after a partial
 * one is moved to the front. */
#define OUT_SIZE BUF_SIZE

static int fail(char *err, size_t errlen, const char *fmt, const char *a)
{
	snprintf(err, errlen, fmt, a);
	return -1;
}

static int read_at(FILE *f, u64 off, void *buf, size_t n)
{
	if (fseeko(f, (off_t)off, SEEK_SET) != 0)
		return -1;
	return fread(buf, 1, n, f) == n ? 0 : -1;
}

static u64 le64(const u8 *p) { u64 v; memcpy(&v, p, 8); return v; }
static u32 le32(const u8 *p) { u32 v; memcpy(&v, p, 4); return v; }

/* [off, off + size) lies within [0, total): written so that nothing
 * wraps, whatever the file says. */
static int inside(u64 off, u64 size, u64 total)
{
	return off <= total && size <= total - off;
}

/* The bytes of the sample_id_all trailer a record of this attr carries:
 * TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER. */
static int trailer_size(u64 st)
{
	int n = 0;
	if (st & ST_TID) n += 8;
	if (st & ST_TIME) n += 8;
	if (st & ST_ID) n += 8;
	if (st & ST_STREAM_ID) n += 8;
	if (st & ST_CPU) n += 8;
	if (st & ST_IDENTIFIER) n += 8;
	return n;
}

/* The first of pf->ids with this id (they are sorted by id, then by
 * attr), or pf->ids + pf->nids. A file can hold millions of ids: a
 * linear search for each of them (EVENT_DESC) or each record took
 * minutes. */
static const struct idref *first_id(const struct perffile *pf, u64 id)
{
	size_t lo = 0, hi = pf->nids;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pf->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return pf->ids + lo;
}

static int idref_cmp(const void *a, const void *b)
{
	const struct idref *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->attr > y->attr) - (x->attr < y->attr);
}

/* pf->ids from every attr's ids; -1: out of memory. */
static int index_ids(struct perffile *pf)
{
	size_t n = 0;
	for (int a = 0; a < pf->nattrs; a++)
		n += pf->attrs[a].nids;
	pf->ids = malloc((n ? n : 1) * sizeof(*pf->ids));
	if (!pf->ids)
		return -1;
	for (int a = 0; a < pf->nattrs; a++)
		for (size_t j = 0; j < pf->attrs[a].nids; j++)
			pf->ids[pf->nids++] = (struct idref){
				pf->attrs[a].ids[j], a };
	if (pf->nids)
		qsort(pf->ids, pf->nids, sizeof(*pf->ids), idref_cmp);
	return 0;
}

/* name (at most 255 bytes and its NUL) to every attr with this id. */
static void name_attrs(struct perffile *pf, u64 id, const char *name)
{
	for (const struct idref *r = first_id(pf, id);
	     r < pf->ids + pf->nids && r->id == id; r++)
		strcpy(pf->attrs[r->attr].name, name);
}

static void read_event_desc(struct perffile *pf, const u8 *d, u64 size)
{
	if (size < 8)
		return;
	u32 nr = le32(d), sz = le32(d + 4);
	u64 pos = 8;
	for (u32 i = 0; i < nr; i++) {
		if (pos + sz + 8 > size)
			return;
		pos += sz;
		u32 nids = le32(d + pos), slen = le32(d + pos + 4);
		pos += 8;
		if (pos + slen + 8ull * nids > size)
			return;
		char name[256];
		size_t n = slen < sizeof(name) - 1 ? slen : sizeof(name) - 1;
		memcpy(name, d + pos, n);
		name[n] = 0;
		pos += slen;
		for (u32 k = 0; k < nids; k++)
			name_attrs(pf, le64(d + pos + 8ull * k), name);
		pos += 8ull * nids;
	}
}

int perffile_feature(const struct perffile *pf, int feat, u64 *off,
		     u64 *size)
{
	if (feat < 0 || feat >= FEAT_MAX || !(pf->feat_bits >> feat & 1))
		return -1;
	*off = pf->feat_off[feat];
	*size = pf->feat_size[feat];
	return 0;
}

int perffile_has_names(const struct perffile *pf)
{
	for (int a = 0; a < pf->nattrs; a++)
		if (pf->attrs[a].name[0])
			return 1;
	return 0;
}

static void set_feature(struct perffile *pf, u64 feat, u64 off, u64 size)
{
	if (feat < FEAT_MAX) {
		pf->feat_bits |= 1ull << feat;
		pf->feat_off[feat] = off;
		pf->feat_size[feat] = size;
	}
}

/* The feature table after the data: where each section lies. */
static int table_features(struct perffile *pf, u64 bits[4], u64 file_size,
			  char *err, size_t errlen)
{
	u64 pos = pf->data_offset + pf->data_size;
	for (int feat = 0; feat < 256; feat++) {
		if (!(bits[feat / 64] >> (feat % 64) & 1))
			continue;
		u8 sec[16];
		if (!inside(pos, 16, file_size) || read_at(pf->f, pos, sec, 16))
			return fail(err, errlen, "%s: file is truncated: feature "
				    "table past the end", pf->path);
		pos += 16;
		set_feature(pf, (u64)feat, le64(sec), le64(sec + 8));
	}
	return 0;
}

/* HEADER_ARCH (uname's machine: u32 length, the string padded with
 * NULs): a recording of another machine's registers is refused, as the
 * unwinder takes them for x86-64's (perf's own reports read such a file
 * with that architecture's unwinder, when perf has one). 0, or -1 with
 * err set. */
static int check_arch(struct perffile *pf, const u8 *d, u64 size, char *err,
		      size_t errlen)
{
	char arch[32];
	u64 n = size >= 4 ? le32(d) : 0, i;
	if (n > size - 4 || n == 0)
		return 0;   /* no string: nothing says another machine */
	for (i = 0; i < n && i < sizeof(arch) - 1 && d[4 + i]; i++) {
		if (d[4 + i] < 0x20 || d[4 + i] > 0x7e)
			break;
		arch[i] = (char)d[4 + i];
	}
	arch[i] = 0;
	if (!strcmp(arch, "x86_64"))
		return 0;
	if (i == 0 || (i < n && d[4 + i]))   /* not printable text */
		strcpy(arch, "another architecture");
	snprintf(err, errlen, "%s: recorded on %s: allocsites reads x86-64 "
		 "recordings (it unwinds their stacks with x86-64's registers)",
		 pf->path, arch);
	return -1;
}

/* The features the reader uses: the machine, the tracepoint formats,
 * the events' names, the compressor. */
static int read_features(struct perffile *pf, u64 file_size, char *err,
			 size_t errlen)
{
	static const int used[] = { FEAT_ARCH, FEAT_TRACING_DATA,
				    FEAT_EVENT_DESC, FEAT_COMPRESSED };
	for (size_t k = 0; k < sizeof(used) / sizeof(used[0]); k++) {
		int feat = used[k];
		u64 off, size;
		if (perffile_feature(pf, feat, &off, &size))
			continue;
		if (!inside(off, size, file_size) || size > (1u << 30))
			return fail(err, errlen, "%s: a feature section lies "
				    "outside the file", pf->path);
		u8 *d = malloc(size ? size : 1);
		if (!d || read_at(pf->f, off, d, size)) {
			free(d);
			return fail(err, errlen, "%s: cannot read its feature "
				    "sections", pf->path);
		}
		if (feat == FEAT_TRACING_DATA) {
			u64 *ids = malloc(((size_t)pf->nattrs + 1) * 8);
			size_t n = 0;
			for (int a = 0; ids && a < pf->nattrs; a++)
				if (pf->attrs[a].type == PERF_TYPE_TRACEPOINT)
					ids[n++] = pf->attrs[a].config;
			if (!ids) {
				free(d);
				return fail(err, errlen, "%s: out of memory",
					    pf->path);
			}
			pf->formats = tracefmt_parse(d, size, ids, n);
			free(ids);
		}
		else if (feat == FEAT_EVENT_DESC)
			read_event_desc(pf, d, size);
		else if (feat == FEAT_ARCH) {
			if (check_arch(pf, d, size, err, errlen)) {
				free(d);
				return -1;
			}
		}
		else if (size >= 8) {
			/* u32 version, u32 type, u32 level, ratio, mmap_len */
			if (le32(d + 4) != COMP_ZSTD) {
				free(d);
				return fail(err, errlen, "%s: compressed with "
					    "something other than zstd",
					    pf->path);
			}
			pf->compressed = 1;
		}
		free(d);
	}
	return 0;
}

/* The fields of a perf_event_attr (asz bytes at a) the reader uses. */
static void set_attr(struct attr *at, const u8 *a)
{
	at->type = le32(a);
	at->config = le64(a + 8);
	at->sample_type = le64(a + 24);
	at->sample_id_all = (le64(a + 40) >> 18) & 1;
	at->regs_mask = le64(a + 80);
	at->stack_user = le32(a + 88);
	at->trailer = at->sample_id_all ? trailer_size(at->sample_type) : 0;
}

static int refuse_sample_type(struct perffile *pf, const struct attr *at,
			      char *err, size_t errlen)
{
	if (at->sample_type & (ST_READ | ST_BRANCH_STACK))
		return fail(err, errlen, "%s: samples carry read values or "
			    "branch stacks (not recorded by allocsites)",
			    pf->path);
	return 0;
}

/* Pipe mode (perf record -o -): the stream after the 16-byte header
 * carries what a file's header points at, as records: HEADER_ATTR (an
 * attr, then its ids, to the record's end), HEADER_FEATURE (u64 feature
 * number, then the section), HEADER_TRACING_DATA (u32 size: that many
 * bytes follow the record, outside its size) and EVENT_UPDATE (u64
 * type, u64 id, then for a name a NUL-terminated string). perf 6.1
 * writes the attrs, features and tracing data first, then kernel
 * records, the names and FINISHED_INIT, then the samples. They are read
 * up to FINISHED_INIT or the first sample; the data walk begins after
 * the leading run of header records (walk skips a later tracing data's
 * bytes). */
static int open_pipe(struct perffile *pf, u64 file_size, char *err,
		     size_t errlen)
{
	struct name { u64 id; char name[256]; } *names = NULL;
	size_t nnames = 0, names_cap = 0;
	int cap = 0, rc = -1;
	u8 *rec = malloc(1u << 16);
	u64 pos = 16, data_start = 0;
	pf->pipe = 1;
	if (!rec) {
		fail(err, errlen, "%s: out of memory", pf->path);
		goto out;
	}
	while (pos + 8 <= file_size) {
		if (read_at(pf->f, pos, rec, 8)) {
			fail(err, errlen, "%s: cannot read its records", pf->path);
			goto out;
		}
		u32 type = le32(rec);
		u16 size;
		memcpy(&size, rec + 6, 2);
		if (size < 8) {
			snprintf(err, errlen, "%s: a record of size %u at offset "
				 "%llu: the file is damaged", pf->path, size,
				 (unsigned long long)pos);
			goto out;
		}
		if (type == REC_SAMPLE || type == REC_COMPRESSED ||
		    type == REC_COMPRESSED2 || type == REC_FINISHED_INIT)
			break;
		if (!inside(pos, size, file_size) ||
		    read_at(pf->f, pos, rec, size)) {
			fail(err, errlen, "%s: file is truncated", pf->path);
			goto out;
		}
		u64 total = size;
		if (type == REC_HEADER_TRACING_DATA) {
			if (size < 16) {
				fail(err, errlen, "%s: a tracing data record too "
				     "short", pf->path);
				goto out;
			}
			total += le32(rec + 8);
			if (!inside(pos, total, file_size)) {
				fail(err, errlen, "%s: file is truncated (in its "
				     "tracing data)", pf->path);
				goto out;
			}
			set_feature(pf, FEAT_TRACING_DATA, pos + size,
				    le32(rec + 8));
		} else if (type == REC_HEADER_ATTR) {
			u32 asz = size >= 16 ? le32(rec + 12) : 0;
			if (asz < 96 || asz > size - 8u || (size - 8u - asz) % 8) {
				fail(err, errlen, "%s: a bad attribute record",
				     pf->path);
				goto out;
			}
			if (pf->nattrs == MAX_ATTRS) {
				fail(err, errlen, "%s: more attributes than any "
				     "recording has", pf->path);
				goto out;
			}
			if (pf->nattrs == cap) {
				int ncap = cap ? cap * 2 : 8;
				struct attr *n = realloc(pf->attrs,
							 ncap * sizeof(*n));
				if (!n) {
					fail(err, errlen, "%s: out of memory",
					     pf->path);
					goto out;
				}
				pf->attrs = n;
				cap = ncap;
			}
			struct attr *at = &pf->attrs[pf->nattrs];
			memset(at, 0, sizeof(*at));
			at->index = pf->nattrs++;
			set_attr(at, rec + 8);
			at->nids = (size - 8u - asz) / 8;
			at->ids = calloc(at->nids ? at->nids : 1, 8);
			if (!at->ids) {
				fail(err, errlen, "%s: out of memory", pf->path);
				goto out;
			}
			memcpy(at->ids, rec + 8 + asz, at->nids * 8);
			if (refuse_sample_type(pf, at, err, errlen))
				goto out;
		} else if (type == REC_HEADER_FEATURE) {
			if (size < 16) {
				fail(err, errlen, "%s: a feature record too short",
				     pf->path);
				goto out;
			}
			set_feature(pf, le64(rec + 8), pos + 16, size - 16u);
		} else if (type == REC_EVENT_UPDATE && size >= 24 &&
			   le64(rec + 8) == EVENT_UPDATE_NAME) {
			if (nnames == names_cap) {
				size_t ncap = names_cap ? names_cap * 2 : 8;
				struct name *n = ncap > MAX_ATTRS ? NULL :
					realloc(names, ncap * sizeof(*n));
				if (!n) {
					fail(err, errlen, "%s: more event names "
					     "than any recording has", pf->path);
					goto out;
				}
				names = n;
				names_cap = ncap;
			}
			struct name *nm = &names[nnames++];
			nm->id = le64(rec + 16);
			size_t len = size - 24u;
			const u8 *nul = memchr(rec + 24, 0, len);
			if (nul)
				len = (size_t)(nul - (rec + 24));
			if (len > sizeof(nm->name) - 1)
				len = sizeof(nm->name) - 1;
			memcpy(nm->name, rec + 24, len);
			nm->name[len] = 0;
		}
		if (!data_start && type != REC_HEADER_ATTR &&
		    type != REC_HEADER_FEATURE &&
		    type != REC_HEADER_TRACING_DATA &&
		    type != REC_HEADER_EVENT_TYPE &&
		    type != REC_HEADER_BUILD_ID)
			data_start = pos;
		pos += total;
	}
	if (!data_start)
		data_start = pos;
	if (pf->nattrs == 0) {
		fail(err, errlen, "%s: a pipe-mode recording without its "
		     "attributes", pf->path);
		goto out;
	}
	pf->data_offset = data_start;
	pf->data_size = file_size - data_start;
	if (index_ids(pf)) {
		fail(err, errlen, "%s: out of memory", pf->path);
		goto out;
	}
	for (size_t i = 0; i < nnames; i++)
		name_attrs(pf, names[i].id, names[i].name);
	rc = 0;
out:
	free(rec);
	free(names);
	return rc;
}

int perffile_open(struct perffile *pf, const char *path, char *err,
		  size_t errlen)
{
	memset(pf, 0, sizeof(*pf));
	pf->path = path;
	pf->f = fopen(path, "rb");
	if (!pf->f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	fseeko(pf->f, 0, SEEK_END);
	u64 file_size = (u64)ftello(pf->f);
	u8 h[104];
	if (file_size < sizeof(h) || read_at(pf->f, 0, h, sizeof(h)))
		return fail(err, errlen, "%s: too short for a perf.data "
			    "header", path);
	if (memcmp(h, "PERFILE2", 8) != 0)
		return fail(err, errlen, "%s: not a little-endian perf.data "
			    "file", path);
	if (le64(h + 8) == 16) {
		if (open_pipe(pf, file_size, err, errlen) ||
		    read_features(pf, file_size, err, errlen))
			return -1;
		goto formats;
	}
	if (le64(h + 8) != 104)
		return fail(err, errlen, "%s: not a perf.data header (its "
			    "size is neither a file's nor a stream's)", path);
	u64 attr_size = le64(h + 16), attrs_off = le64(h + 24),
	    attrs_size = le64(h + 32);
	pf->data_offset = le64(h + 40);
	pf->data_size = le64(h + 48);
	u64 bits[4];
	memcpy(bits, h + 72, 32);
	if (pf->data_size == 0)
		return fail(err, errlen, "%s: the header has no data size: perf "
			    "did not finish writing it", path);
	if (!inside(pf->data_offset, pf->data_size, file_size) ||
	    !inside(attrs_off, attrs_size, file_size))
		return fail(err, errlen, "%s: file is truncated", path);
	/* perf_event_attr is about 136 bytes, then its ids' file section */
	if (attr_size <= 16 + 96 || attr_size > 4096 || attrs_size == 0 ||
	    attrs_size % attr_size || attrs_size / attr_size > 4096)
		return fail(err, errlen, "%s: bad attribute table (header at "
			    "offset 16)", path);
	pf->nattrs = (int)(attrs_size / attr_size);
	pf->attrs = calloc(pf->nattrs, sizeof(*pf->attrs));
	u8 *a = malloc(attr_size);
	if (!pf->attrs || !a) {
		free(a);
		return fail(err, errlen, "%s: out of memory", path);
	}
	for (int i = 0; i < pf->nattrs; i++) {
		struct attr *at = &pf->attrs[i];
		if (read_at(pf->f, attrs_off + i * attr_size, a, attr_size)) {
			free(a);
			return fail(err, errlen, "%s: cannot read attributes",
				    path);
		}
		at->index = i;
		set_attr(at, a);
		u64 ids_off = le64(a + attr_size - 16),
		    ids_size = le64(a + attr_size - 8);
		if (!inside(ids_off, ids_size, file_size) || ids_size % 8 ||
		    ids_size > (64u << 20)) {
			free(a);
			return fail(err, errlen, "%s: attribute ids outside "
				    "the file", path);
		}
		at->nids = ids_size / 8;
		at->ids = calloc(at->nids ? at->nids : 1, 8);
		if (!at->ids) {
			free(a);
			return fail(err, errlen, "%s: out of memory", path);
		}
		if (at->nids && read_at(pf->f, ids_off, at->ids, ids_size)) {
			free(a);
			return fail(err, errlen, "%s: cannot read attribute "
				    "ids", path);
		}
		if (refuse_sample_type(pf, at, err, errlen)) {
			free(a);
			return -1;
		}
	}
	free(a);
	if (index_ids(pf))
		return fail(err, errlen, "%s: out of memory", path);
	if (table_features(pf, bits, file_size, err, errlen) ||
	    read_features(pf, file_size, err, errlen))
		return -1;
formats:
	for (int i = 0; i < pf->nattrs; i++) {
		struct attr *at = &pf->attrs[i];
		if (at->type != PERF_TYPE_TRACEPOINT)
			continue;
		for (const struct tpformat *t = pf->formats; t; t = t->next)
			if (t->id == at->config)
				at->fmt = t;
	}
	return 0;
}

const struct attr *perffile_attr_by_id(const struct perffile *pf, u64 id)
{
	const struct idref *r = first_id(pf, id);
	return r < pf->ids + pf->nids && r->id == id ? &pf->attrs[r->attr] :
		NULL;
}

/* perf's evlist__id2evsel: the only attr, or the one whose id the record
 * carries: IDENTIFIER is the first u64 of a sample and the last of a
 * sample_id_all trailer; without it (all events alike) perf finds ID at a
 * place the sample_type gives (evsel__calc_id_pos). */
const struct attr *perffile_attr_of(const struct perffile *pf, const u8 *rec,
				    u32 size)
{
	if (pf->nattrs == 1)
		return &pf->attrs[0];
	const struct attr *first = &pf->attrs[0];
	u64 st = first->sample_type;
	u16 type;
	memcpy(&type, rec, 2);
	u64 id;
	if (type == REC_SAMPLE) {
		u32 pos = 8;
		if (!(st & ST_IDENTIFIER)) {
			if (!(st & ST_ID))
				return first;
			if (st & ST_IP) pos += 8;
			if (st & ST_TID) pos += 8;
			if (st & ST_TIME) pos += 8;
			if (st & ST_ADDR) pos += 8;
		}
		if (pos + 8 > size)
			return NULL;
		id = le64(rec + pos);
	} else {
		if (!first->sample_id_all)
			return first;
		u32 back = 8;
		if (!(st & ST_IDENTIFIER)) {
			if (!(st & ST_ID))
				return first;
			if (st & ST_CPU) back += 8;
			if (st & ST_STREAM_ID) back += 8;
		}
		if (back + 8 > size)
			return first;
		id = le64(rec + size - back);
	}
	if (id == 0)
		return first;
	static u64 last_id;
	static const struct attr *last_attr;
	if (last_attr && id == last_id)
		return last_attr;
	const struct attr *at = perffile_attr_by_id(pf, id);
	if (at) {
		last_id = id;
		last_attr = at;
	}
	return at;
}

int record_time(const struct perffile *pf, const u8 *rec, u32 size, u64 *time)
{
	u16 type;
	memcpy(&type, rec, 2);
	const struct attr *at = perffile_attr_of(pf, rec, size);
	if (!at || !(at->sample_type & ST_TIME))
		return -1;
	if (type == REC_SAMPLE) {
		u32 pos = 8;
		if (at->sample_type & ST_IDENTIFIER) pos += 8;
		if (at->sample_type & ST_IP) pos += 8;
		if (at->sample_type & ST_TID) pos += 8;
		if (pos + 8 > size)
			return -1;
		*time = le64(rec + pos);
		return 0;
	}
	if (!at->sample_id_all || (u32)at->trailer + 8 > size)
		return -1;
	u32 pos = size - at->trailer;
	if (at->sample_type & ST_TID) pos += 8;
	*time = le64(rec + pos);
	return 0;
}

int parse_sample(const struct perffile *pf, const u8 *rec, u32 size,
		 struct sample *s)
{
	memset(s, 0, sizeof(*s));
	const struct attr *at = perffile_attr_of(pf, rec, size);
	if (!at)
		return -1;
	s->attr = at;
	u64 st = at->sample_type;
	u32 pos = 8, end = size;
	/* n bytes left in the record: no wrap-around in 32 or 64 bits */
#define NEED(n) do { if ((u64)(n) > (u64)(end - pos)) return -1; } while (0)
	if (st & ST_IDENTIFIER) { NEED(8); pos += 8; }
	if (st & ST_IP) { NEED(8); s->ip = le64(rec + pos); pos += 8; }
	if (st & ST_TID) {
		NEED(8);
		s->pid = le32(rec + pos);
		s->tid = le32(rec + pos + 4);
		pos += 8;
	}
	if (st & ST_TIME) { NEED(8); s->time = le64(rec + pos); pos += 8; }
	if (st & ST_ADDR) { NEED(8); pos += 8; }
	if (st & ST_ID) { NEED(8); pos += 8; }
	if (st & ST_STREAM_ID) { NEED(8); pos += 8; }
	if (st & ST_CPU) { NEED(8); pos += 8; }
	if (st & ST_PERIOD) { NEED(8); pos += 8; }
	if (st & ST_CALLCHAIN) {
		NEED(8);
		u64 nr = le64(rec + pos);
		pos += 8;
		if (nr > (end - pos) / 8)
			return -1;
		s->callchain = rec + pos;
		s->nr_callchain = nr;
		pos += 8 * nr;
	}
	if (st & ST_RAW) {
		NEED(4);
		s->raw_size = le32(rec + pos);
		pos += 4;
		NEED(s->raw_size);
		s->raw = rec + pos;
		pos += s->raw_size;
	}
	if (st & ST_REGS_USER) {
		NEED(8);
		s->regs_abi = le64(rec + pos);
		pos += 8;
		if (s->regs_abi) {
			u32 n = (u32)__builtin_popcountll(at->regs_mask);
			NEED(8 * n);
			s->regs = rec + pos;
			pos += 8 * n;
		}
	}
	if (st & ST_STACK_USER) {
		NEED(8);
		u64 sz = le64(rec + pos);
		pos += 8;
		if (sz) {
			NEED(sz);
			if (end - pos - sz < 8)
				return -1;
			s->stack = rec + pos;
			u64 dyn = le64(rec + pos + sz);
			s->stack_size = dyn < sz ? dyn : sz;
			pos += (u32)sz + 8;
		}
	}
#undef NEED
	return 0;
}

/* The decompressed records not yet walked: buf[start, fill) of cur. */
struct zout {
	struct buf *cur;
	u8 *buf;
	size_t start, fill;
};

/* Walks records in buf[0, n); returns the bytes consumed (whole records),
 * or -1 after a record too small to be one. */
static long walk(struct perffile *pf, const u8 *buf, size_t n,
		 record_fn fn, void *ctx, ZSTD_DCtx *dctx, struct zout *z,
		 char *err, size_t errlen);

static int decompress(struct perffile *pf, const u8 *src, size_t n,
		      ZSTD_DCtx *dctx, struct zout *z, record_fn fn,
		      void *ctx, char *err, size_t errlen)
{
	ZSTD_inBuffer in = { src, n, 0 };
	while (in.pos < in.size) {
		/* A new buffer only when the end is near (zstd writes a
		 * block at a time): the partial record at the end moves. */
		if (OUT_SIZE - z->fill < (256u << 10)) {
			/* a fresh buffer: records queued in this one keep
			 * it until they are delivered (buf.c) */
			struct buf *next = buf_get();
			if (!next)
				return fail(err, errlen, "%s: out of memory",
					    pf->path);
			memcpy(buf_data(next), z->buf + z->start,
			       z->fill - z->start);
			z->fill -= z->start;
			z->start = 0;
			buf_release(z->cur);
			z->cur = next;
			z->buf = buf_data(next);
		}
		ZSTD_outBuffer o = { z->buf, OUT_SIZE, z->fill };
		size_t r = ZSTD_decompressStream(dctx, &o, &in);
		if (ZSTD_isError(r)) {
			snprintf(err, errlen, "%s: the compressed record at "
				 "offset %llu does not decompress (the file is "
				 "damaged)", pf->path,
				 (unsigned long long)pf->at);
			return -1;
		}
		pf->decompressed += o.pos - z->fill;
		z->fill = o.pos;
		long used = walk(pf, z->buf + z->start, z->fill - z->start, fn,
				 ctx, NULL, z, err, errlen);
		if (used < 0)
			return -1;
		z->start += (size_t)used;
		if (o.pos == o.size && used == 0 && z->start == 0)
			return fail(err, errlen, "%s: a decompressed record "
				    "is larger than any perf writes", pf->path);
	}
	return 0;
}

static long walk(struct perffile *pf, const u8 *buf, size_t n,
		 record_fn fn, void *ctx, ZSTD_DCtx *dctx, struct zout *z,
		 char *err, size_t errlen)
{
	size_t pos = 0;
	while (pos + 8 <= n) {
		if (dctx)   /* the file's own records: where one starts */
			pf->at = pf->walk_base + pos;
		u32 type = le32(buf + pos);
		u16 size;
		memcpy(&size, buf + pos + 6, 2);
		if (size < 8) {
			snprintf(err, errlen, "%s: a record of size %u at "
				 "offset %llu: the file is damaged", pf->path,
				 size, (unsigned long long)pf->at);
			return -1;
		}
		if (type == REC_HEADER_TRACING_DATA && dctx && pf->pipe) {
			/* a stream's tracing data, after the data began:
			 * its bytes follow the record, outside its size */
			if (size < 16 || pos + 16 > n)
				break;
			u64 total = size + (u64)le32(buf + pos + 8);
			if (total > IN_SIZE / 2) {
				snprintf(err, errlen, "%s: tracing data of %llu "
					 "bytes at offset %llu, amid the records",
					 pf->path, (unsigned long long)total,
					 (unsigned long long)pf->at);
				return -1;
			}
			if (pos + total > n)
				break;
			pos += (size_t)total;
			continue;
		}
		if (pos + size > n)
			break;
		if (type == REC_COMPRESSED2 && dctx) {
			/* a newer perf's: the compressed bytes' own size,
			 * then the bytes; the rest is padding */
			u64 data_size = size >= 16 ? le64(buf + pos + 8) : ~0ull;
			if (data_size > size - 16u) {
				snprintf(err, errlen, "%s: a COMPRESSED2 record at "
					 "offset %llu says more than it holds: the "
					 "file is damaged", pf->path,
					 (unsigned long long)pf->at);
				return -1;
			}
			if (decompress(pf, buf + pos + 16, (size_t)data_size,
				       dctx, z, fn, ctx, err, errlen))
				return -1;
		} else if (type == REC_COMPRESSED && dctx) {
			if (decompress(pf, buf + pos + 8, size - 8u, dctx, z,
				       fn, ctx, err, errlen))
				return -1;
		} else {
			struct buf *b = dctx ? NULL : z->cur;
			int kept = fn(ctx, buf + pos, size, b);
			if (kept < 0)
				return -1;
			if (kept > 0 && b)   /* the reference fn now owns */
				buf_retain(b);
		}
		pos += size;
	}
	return (long)pos;
}

int perffile_records(struct perffile *pf, record_fn fn, void *ctx,
		     char *err, size_t errlen)
{
	u8 *in = malloc(IN_SIZE);
	struct zout z = { buf_get(), NULL, 0, 0 };
	z.buf = z.cur ? buf_data(z.cur) : NULL;
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	size_t fill = 0;
	u64 left = pf->data_size;
	pf->walk_base = pf->data_offset;
	int rc = 0;
	if (!in || !z.buf || !dctx || fseeko(pf->f, (off_t)pf->data_offset,
					   SEEK_SET)) {
		rc = fail(err, errlen, "%s: cannot read its data", pf->path);
		goto done;
	}
	while (left || fill) {
		size_t want = IN_SIZE - fill;
		if (want > left)
			want = (size_t)left;
		if (want) {
			size_t got = fread(in + fill, 1, want, pf->f);
			if (got != want) {
				rc = fail(err, errlen, "%s: read error or file "
					  "cut short", pf->path);
				goto done;
			}
			fill += got;
			left -= got;
		}
		long used = walk(pf, in, fill, fn, ctx, dctx, &z, err,
				 errlen);
		if (used < 0) {
			rc = -1;
			goto done;
		}
		if (used == 0 && (left == 0 || fill == IN_SIZE)) {
			/* a last record cut short (perf -z at a hard stop) */
			pf->tail_cut = fill;
			break;
		}
		memmove(in, in + used, fill - (size_t)used);
		fill -= (size_t)used;
		pf->walk_base += (u64)used;
	}
done:
	pf->stream_tail = z.fill - z.start;
	ZSTD_freeDCtx(dctx);
	free(in);
	buf_release(z.cur);
	return rc;
}

/*
 * error.c -- error codes, their names, and the per-thread failure message.
 *
 * The code returned by a function says what kind of failure happened; the
 * message recorded by ts__fail says which row, column or file, and why.
 * Messages live in a thread-local buffer so that threads reading and
 * writing the same database never see each other's messages; ts_errmsg()
 * returns the calling thread's last one.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "tslimits.h"

static _Thread_local char last_message[TS_ERRMSG_MAX];

struct code_info {
	int code;
	const char *name;
	const char *text;
};

static const struct code_info codes[] = {
	{TS_OK, "OK", "success"},
	{TS_EINVAL, "EINVAL", "invalid argument"},
	{TS_ENOMEM, "ENOMEM", "out of memory"},
	{TS_EIO, "EIO", "input/output error"},
	{TS_ENOSPC, "ENOSPC", "no space left on device"},
	{TS_ENOENT, "ENOENT", "no such database, table or column"},
	{TS_EEXIST, "EEXIST", "already exists"},
	{TS_ELOCKED, "ELOCKED", "database is locked by another writer"},
	{TS_EREADONLY, "EREADONLY", "database is open read-only"},
	{TS_ECORRUPT, "ECORRUPT", "file is damaged"},
	{TS_EVERSION, "EVERSION", "unsupported file format version"},
	{TS_ESCHEMA, "ESCHEMA", "invalid schema"},
	{TS_ETYPE, "ETYPE", "value has the wrong type"},
	{TS_ERANGE, "ERANGE", "value out of range"},
	{TS_EDUPKEY, "EDUPKEY", "duplicate primary key"},
	{TS_EFUTURE, "EFUTURE", "timestamp too far in the future"},
	{TS_EEXPIRED, "EEXPIRED", "timestamp older than the TTL"},
	{TS_ENOTSUP, "ENOTSUP", "operation not supported"},
	{TS_EBUSY, "EBUSY", "resource busy"},
	{TS_EPROTO, "EPROTO", "protocol error"},
	{TS_ETOOBIG, "ETOOBIG", "too big"},
	{TS_ECLOSED, "ECLOSED", "handle is closed"},
};

static const struct code_info *lookup(int code)
{
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (codes[i].code == code)
			return &codes[i];
	return NULL;
}

const char *ts_strerror(int code)
{
	const struct code_info *c = lookup(code);
	return c ? c->text : "unknown error";
}

const char *ts_errname(int code)
{
	const struct code_info *c = lookup(code);
	return c ? c->name : "EUNKNOWN";
}

const char *ts_errmsg(const struct ts_db *db)
{
	(void)db;
	return last_message;
}

/* last_message = a + ": " + b, cut to fit (a message may be truncated,
 * never overrun). */
static void set_joined(const char *a, const char *b)
{
	char tmp[TS_ERRMSG_MAX];
	size_t na = strnlen(a, sizeof tmp - 3), nb = strnlen(b, sizeof tmp - 3 - na);
	memcpy(tmp, a, na);
	memcpy(tmp + na, ": ", 2);
	memcpy(tmp + na + 2, b, nb);
	tmp[na + 2 + nb] = '\0';
	memcpy(last_message, tmp, na + 3 + nb);
}

int ts__fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_message, sizeof last_message, fmt, ap);
	va_end(ap);
	return code;
}

static int code_for_errno(int err)
{
	switch (err) {
	case ENOSPC: case EDQUOT: return TS_ENOSPC;
	case ENOMEM: return TS_ENOMEM;
	case ENOENT: case ENOTDIR: return TS_ENOENT;
	case EEXIST: return TS_EEXIST;
	case EROFS: case EACCES: case EPERM: return TS_EREADONLY;
	case EWOULDBLOCK: return TS_ELOCKED;
	case EINVAL: return TS_EINVAL;
	default: return TS_EIO;
	}
}

int ts__fail_errno(int err, const char *fmt, ...)
{
	char what[TS_ERRMSG_MAX / 2];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	set_joined(what, strerror(err));
	return code_for_errno(err);
}

int ts__context(int code, const char *fmt, ...)
{
	char prefix[TS_ERRMSG_MAX / 2];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	set_joined(prefix, last_message);
	return code;
}

void ts__clear_error(void)
{
	last_message[0] = '\0';
}

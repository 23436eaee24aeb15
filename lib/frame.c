/*
 * frame.c -- the follow stream's frames on the wire (docs/standby.md
 * section 2): a header naming the table and saying where the payload
 * goes, the payload, and a CRC-32C over both, so that a damaged byte
 * anywhere -- an offset too -- is refused rather than written into a
 * standby's files.
 *
 * The codec is pure (bytes in, bytes out), shared by the primary, which
 * writes the frames ts_ship_next gives (tsstored), and the standby, which
 * reads them.  The layout is docs/standby.md's table:
 *
 *   type u8 | flags u8 | name length u16 | name | id u64 | offset u64 |
 *   length u32 | crc u32 | payload
 */
#include <string.h>

#include "buf.h"
#include "crc32c.h"
#include "error.h"
#include "tsstore.h"

#define FRAME_FIXED 28 /* the header without the name */

static int known_type(int type)
{
	return type == TS_FRAME_TABLET || type == TS_FRAME_DESCRIPTOR || type == TS_FRAME_LOG ||
	       type == TS_FRAME_HEARTBEAT || type == TS_FRAME_END;
}

int ts_frame_header(const char *table, const ts_frame *f, void *out, size_t size, size_t *n)
{
	unsigned char *p = out;
	size_t len = table ? strlen(table) : 0;
	if (!table || !f || !out || !n)
		return ts__fail(TS_EINVAL, "ts_frame_header: NULL argument");
	if (!known_type(f->type) || (f->flags & ~TS_FRAME_LAST) ||
	    f->length > TS_FRAME_PAYLOAD_MAX || (f->length && !f->payload) || !ts_name_valid(table))
		return ts__fail(TS_EINVAL, "ts_frame_header: not a frame (type %d, flags 0x%x, "
		                "%u bytes, table \"%.64s\")", f->type, f->flags, f->length, table);
	if (size < FRAME_FIXED + len)
		return ts__fail(TS_ETOOBIG, "ts_frame_header: %zu bytes of room, the header takes %zu",
		                size, FRAME_FIXED + len);
	p[0] = (unsigned char)f->type;
	p[1] = (unsigned char)f->flags;
	p[2] = (unsigned char)(len & 0xff);
	p[3] = (unsigned char)(len >> 8);
	memcpy(p + 4, table, len);
	ts__store_u64(p + 4 + len, f->id);
	ts__store_u64(p + 12 + len, f->offset);
	ts__store_u32(p + 20 + len, f->length);
	uint32_t crc = ts__crc32c(0, p, 24 + len);
	ts__store_u32(p + 24 + len, ts__crc32c(crc, f->payload, f->length));
	*n = FRAME_FIXED + len;
	return 0;
}

int ts_frame_decode(const void *in, size_t size, ts_frame *f, char *table, size_t *used)
{
	const unsigned char *p = in;
	if (!in || !f || !table || !used)
		return ts__fail(TS_EINVAL, "ts_frame_decode: NULL argument");
	*used = 0;
	if (size < 4)
		return 0;
	size_t len = (size_t)p[2] | (size_t)p[3] << 8;
	if (!known_type(p[0]) || (p[1] & ~TS_FRAME_LAST) || len == 0 || len > TS_NAME_MAX)
		return ts__fail(TS_ECORRUPT, "frame: bad header (type 0x%02x, flags 0x%02x, name of "
		                "%zu bytes)", p[0], p[1], len);
	if (size < FRAME_FIXED + len)
		return 0;
	uint32_t length = ts__load_u32(p + 20 + len);
	if (length > TS_FRAME_PAYLOAD_MAX)
		return ts__fail(TS_ECORRUPT, "frame: %u bytes of payload, at most %u", length,
		                TS_FRAME_PAYLOAD_MAX);
	if (size < FRAME_FIXED + len + length)
		return 0;
	uint32_t crc = ts__crc32c(0, p, 24 + len);
	if (ts__crc32c(crc, p + FRAME_FIXED + len, length) != ts__load_u32(p + 24 + len))
		return ts__fail(TS_ECORRUPT, "frame: checksum mismatch");
	memcpy(table, p + 4, len);
	table[len] = '\0';
	if (!ts_name_valid(table))
		return ts__fail(TS_ECORRUPT, "frame: bad table name");
	memset(f, 0, sizeof *f);
	f->type = p[0];
	f->flags = p[1];
	f->id = ts__load_u64(p + 4 + len);
	f->offset = ts__load_u64(p + 12 + len);
	f->length = length;
	f->payload = p + FRAME_FIXED + len;
	*used = FRAME_FIXED + len + length;
	return 1;
}

/*
 * fuzz_request.c -- libFuzzer target for tsstored's request path: each
 * input is one request line, run by tsd_request_step to the end of its
 * response against a real database (a temporary directory, opened once,
 * with a table of every column type), exactly as a worker thread runs it.
 *
 * What it finds: crashes, leaks (ASan), undefined behaviour (UBSan), and
 * responses that are not well-formed JSON lines with a final "ok" (each
 * output line is parsed back with jansson; a bad one aborts).  A
 * "follow" answered ok ends after its answer line (frames follow it).
 * Built and run by `make fuzz` (tests/fuzz/README.md); the seed corpus is
 * tests/fuzz/request/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tsd.h"

static ts_db *db;
static struct tsd_config cfg;

static void setup(void)
{
	static const char create[] =
		"{\"op\":\"create\",\"table\":\"t\",\"key\":[\"host\",\"ts\"],\"columns\":["
		"{\"name\":\"host\",\"type\":\"string\"},{\"name\":\"ts\",\"type\":\"timestamp\"},"
		"{\"name\":\"i\",\"type\":\"int32\"},{\"name\":\"l\",\"type\":\"int64\"},"
		"{\"name\":\"d\",\"type\":\"double\"},{\"name\":\"b\",\"type\":\"blob\"}]}";
	char dir[] = "/tmp/tsstore-fuzz-XXXXXX";
	struct tsd_context ctx = {0};
	int authed = 0;
	if (!mkdtemp(dir) || ts_open(dir, NULL, &db) < 0)
		abort();
	tsd_config_init(&cfg);
	cfg.chunk_rows = 3; /* several rows lines per response */
	cfg.loopback_access = TSD_ACCESS_WRITE; /* as tsd_config_finish leaves it */
	ctx.db = db;
	ctx.cfg = &cfg;
	ctx.ingest = NULL;
	struct tsd_request *r = tsd_request_new(create, strlen(create), 0);
	tsd_request_step(r, &ctx, &authed, TSD_PEER_UNIX);
	tsd_request_free(r);
}

/* Every line of out must be a JSON object; the last must hold "ok". */
static void check_output(const char *p, size_t len, int done)
{
	const char *end = p + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		json_error_t err;
		if (!nl)
			abort(); /* a response line without its '\n' */
		json_t *j = json_loadb(p, (size_t)(nl - p), JSON_ALLOW_NUL, &err);
		if (!j || !json_is_object(j))
			abort();
		if (done && nl + 1 == end && !json_object_get(j, "ok"))
			abort();
		json_decref(j);
		p = nl + 1;
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct tsd_context ctx = {0};
	int authed = 0, steps = 0;
	if (!db)
		setup();
	ctx.db = db;
	ctx.cfg = &cfg;
	ctx.ingest = NULL;
	struct tsd_request *r = tsd_request_new((const char *)data, size, 0);
	if (!r)
		return 0;
	while (!tsd_request_done(r) && steps++ < 100000) {
		char *out;
		size_t len;
		/* unix, loopback or remote: every access path */
		tsd_request_step(r, &ctx, &authed, (enum tsd_peer)(size % 3));
		tsd_request_output(r, &out, &len);
		/* a follow that was answered goes on in binary frames, for ever:
		 * its answer line is the whole JSON of it */
		int streaming = tsd_request_op(r) == TSD_OP_FOLLOW && !tsd_request_done(r);
		check_output(out, len, tsd_request_done(r) || streaming);
		free(out);
		if (streaming)
			break;
	}
	tsd_request_free(r);
	return 0;
}

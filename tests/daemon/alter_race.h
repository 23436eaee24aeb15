/*
 * alter_race.h -- inserts racing alters through tsstored (issue 24 item
 * 1), shared by test_daemon_alter.c (short, in make check) and the soak
 * (long: round after round on fresh tables).
 *
 * ar_run creates a table of alter_model.h's version 1, then runs
 * `writers` connections inserting self-describing rows built from the
 * schema each last read with the schema op (read again every
 * AR_REFETCH batches, so often stale on purpose), alternating rows as
 * arrays and as objects, while one more connection makes every alter of
 * the model -- each after the writers acknowledged `writers` more
 * batches, so that alters and inserts interleave however things are
 * scheduled.  An array row of a stale width is refused (EINVAL "row 0:
 * N values, the table has M columns"): the writer reads the schema again
 * and sends the batch anew.  Afterwards the table is read back with a
 * query and every value checked by am_check_row; the row count must be
 * the rows acknowledged.
 */
#ifndef TS_TEST_ALTER_RACE_H
#define TS_TEST_ALTER_RACE_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "alter_model.h"
#include "support_client.h"

enum { AR_BATCH = 16, AR_REFETCH = 3, AR_AHEAD = 4, AR_WRITERS_MAX = 16, AR_WAIT_MS = 60000 };

struct ar_run {
	/* in */
	const struct tsd_test_daemon *d;
	char table[32];
	int writers;            /* at most AR_WRITERS_MAX */
	int rounds;             /* batches each writer makes at least */
	/* out */
	long rows;              /* acknowledged and read back */
	long refused;           /* array batches of a stale width, sent again */
	char error[512];
	/* state */
	struct am_model m;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	long batches;
	int alters, alters_done, failed;
};

struct ar_writer {
	struct ar_run *r;
	pthread_t th;
	int index;
	long rows, refused;
	char error[400];
};

/* One request; the parsed last line (the "ok" one), or NULL. */
static inline json_t *ar_call(struct tsd_test_conn *c, const char *req, json_t **all)
{
	json_t *lines = NULL, *last;
	if (tsd_test_send_line(c, req) < 0 || tsd_test_read_response(c, AR_WAIT_MS, &lines, NULL) < 0)
		return NULL;
	last = json_incref(json_array_get(lines, json_array_size(lines) - 1));
	if (all)
		*all = lines;
	else
		json_decref(lines);
	return last;
}

static inline int ar_ok(const json_t *resp)
{
	return resp && json_is_true(json_object_get(resp, "ok"));
}

static inline const char *ar_errtext(const json_t *resp)
{
	const json_t *e = json_object_get(resp, "error");
	const char *m = json_string_value(json_object_get(e, "message"));
	return m ? m : "no response";
}

/* The table's schema version now (the schema op), or -1. */
static inline int ar_version(struct tsd_test_conn *c, const char *table)
{
	char req[128];
	snprintf(req, sizeof req, "{\"op\":\"schema\",\"table\":\"%s\"}", table);
	json_t *resp = ar_call(c, req, NULL);
	int v = ar_ok(resp) ? (int)json_integer_value(json_object_get(resp, "version")) : -1;
	json_decref(resp);
	return v;
}

static inline void ar_put_value(FILE *f, const ts_value *v)
{
	switch (v->type) {
	case TS_DOUBLE: fprintf(f, "%.17g", v->v.d); break;
	case TS_STRING: fprintf(f, "\"%.*s\"", (int)v->v.s.len, (const char *)v->v.s.ptr); break;
	default: fprintf(f, "%" PRId64, v->v.i);
	}
}

/* An insert request of AR_BATCH rows from seq on, built at version v. */
static inline char *ar_insert_request(const struct ar_run *r, int index, int v, long seq,
                                      int objects)
{
	char *text = NULL, bufs[AM_COLS_MAX][AM_STR_MAX];
	size_t len = 0;
	ts_value row[AM_COLS_MAX];
	FILE *f = open_memstream(&text, &len);
	fprintf(f, "{\"op\":\"insert\",\"table\":\"%s\",\"rows\":[", r->table);
	for (int i = 0; i < AR_BATCH; i++) {
		am_row(&r->m, v, index, INT64_C(1735689600000000000) + (seq + i) * 1000, row, bufs);
		fputs(i ? (objects ? ",{" : ",[") : (objects ? "{" : "["), f);
		for (int c = 0; c < r->m.ncols[v]; c++) {
			if (c)
				fputc(',', f);
			if (objects)
				fprintf(f, "\"%s\":", r->m.name[c]);
			ar_put_value(f, &row[c]);
		}
		fputc(objects ? '}' : ']', f);
	}
	fputs("]}", f);
	fclose(f);
	return text;
}

static inline void ar_batch_done(struct ar_run *r, int failed)
{
	pthread_mutex_lock(&r->mu);
	r->batches++;
	r->failed |= failed;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Whether the racer is done; first, while it is not, wait until batch b
 * is at most AR_AHEAD batches per alter ahead of it (bounded work). */
static inline int ar_racer_done(struct ar_run *r, long b)
{
	pthread_mutex_lock(&r->mu);
	while (!r->alters_done && !r->failed && b >= (long)(r->alters + 1) * AR_AHEAD)
		pthread_cond_wait(&r->cv, &r->mu);
	int done = r->alters_done || r->failed;
	pthread_mutex_unlock(&r->mu);
	return done;
}

/* Insert one batch built at version *v; a stale array batch is refused,
 * and sent again at the version read then.  0, or -1 with w->error. */
static inline int ar_insert_batch(struct ar_writer *w, struct tsd_test_conn *c, int *v, long seq,
                                  int objects)
{
	for (int tries = 0; tries <= AM_VERSIONS; tries++) {
		char *req = ar_insert_request(w->r, w->index, *v, seq, objects);
		json_t *resp = ar_call(c, req, NULL);
		int ok = ar_ok(resp), stale = 0;
		if (!ok && resp && !objects && strstr(ar_errtext(resp), " values, the table has "))
			stale = 1;
		if (!ok && !stale)
			snprintf(w->error, sizeof w->error, "insert at version %d: %s", *v,
			         ar_errtext(resp));
		json_decref(resp);
		free(req);
		if (ok) {
			w->rows += AR_BATCH;
			return 0;
		}
		if (!stale)
			return -1;
		w->refused++;
		if ((*v = ar_version(c, w->r->table)) < 1) {
			snprintf(w->error, sizeof w->error, "schema: no answer");
			return -1;
		}
	}
	snprintf(w->error, sizeof w->error, "insert: refused at every version");
	return -1;
}

static inline void *ar_writer_main(void *arg)
{
	struct ar_writer *w = arg;
	struct tsd_test_conn *c = tsd_test_connect(w->r->d, w->index % 2 ? TSD_TEST_TCP : TSD_TEST_UNIX);
	int v = 0;
	long seq = 0;
	if (!c)
		snprintf(w->error, sizeof w->error, "cannot connect");
	for (long b = 0; c && !w->error[0] && (!ar_racer_done(w->r, b) || b < w->r->rounds); b++) {
		if (b % AR_REFETCH == 0 && (v = ar_version(c, w->r->table)) < 1) {
			snprintf(w->error, sizeof w->error, "schema: no answer");
			break;
		}
		if (ar_insert_batch(w, c, &v, seq, (int)(b % 2)) == 0)
			seq += AR_BATCH;
		ar_batch_done(w->r, w->error[0] != 0);
	}
	if (w->error[0])
		ar_batch_done(w->r, 1);
	tsd_test_close(c);
	return NULL;
}

static inline int ar_alter(struct ar_run *r, struct tsd_test_conn *c, int k)
{
	char req[256], buf[AM_STR_MAX];
	if (r->m.widen[k] >= 0) {
		snprintf(req, sizeof req, "{\"op\":\"alter\",\"table\":\"%s\",\"widen\":[\"%s\"]}",
		         r->table, r->m.name[r->m.widen[k]]);
	} else {
		ts_column col = am_added(&r->m, k, buf);
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		ar_put_value(f, &col.dflt);
		fclose(f);
		snprintf(req, sizeof req, "{\"op\":\"alter\",\"table\":\"%s\",\"add\":[{\"name\":\"%s\","
		         "\"type\":\"%s\",\"default\":%s}]}", r->table, col.name, ts_type_name(col.type), text);
		free(text);
	}
	json_t *resp = ar_call(c, req, NULL);
	int ok = ar_ok(resp);
	if (!ok)
		snprintf(r->error, sizeof r->error, "alter %d: %s", k, ar_errtext(resp));
	json_decref(resp);
	return ok ? 0 : -1;
}

static inline int ar_racer(struct ar_run *r, struct tsd_test_conn *c)
{
	long seen = 0;
	int rc = 0;
	for (int k = 1; rc == 0 && k <= AM_ALTERS; k++) {
		pthread_mutex_lock(&r->mu);
		while (r->batches < seen + r->writers && !r->failed)
			pthread_cond_wait(&r->cv, &r->mu);
		seen = r->batches;
		rc = r->failed ? -1 : 0;
		pthread_mutex_unlock(&r->mu);
		if (rc == 0)
			rc = ar_alter(r, c, k);
		pthread_mutex_lock(&r->mu);
		r->alters = k;
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
	}
	pthread_mutex_lock(&r->mu);
	pthread_cond_broadcast(&r->cv);
	r->alters_done = 1;
	r->failed |= rc < 0;
	pthread_mutex_unlock(&r->mu);
	return rc;
}

/* A JSON value as a value of a column of type t. */
static inline ts_value ar_json_value(const json_t *j, ts_type t)
{
	switch (t) {
	case TS_DOUBLE: return ts_double(json_number_value(j));
	case TS_STRING: return ts_stringn(json_string_value(j) ? json_string_value(j) : "",
		                          json_string_length(j));
	case TS_INT32: return ts_int32((int32_t)json_integer_value(j));
	case TS_TIMESTAMP: return ts_timestamp(json_integer_value(j));
	default: return ts_int64(json_integer_value(j));
	}
}

/* Read the table back and check every row. */
static inline int ar_check(struct ar_run *r, struct tsd_test_conn *c)
{
	char req[128], why[300];
	json_t *lines = NULL, *line, *row;
	size_t i, j;
	ts_value vals[AM_COLS_MAX];
	long n = 0;
	snprintf(req, sizeof req, "{\"op\":\"query\",\"table\":\"%s\"}", r->table);
	json_t *last = ar_call(c, req, &lines);
	int rc = ar_ok(last) ? 0 : -1;
	if (rc < 0)
		snprintf(r->error, sizeof r->error, "query: %s", ar_errtext(last));
	json_array_foreach(lines, i, line)
		json_array_foreach(json_object_get(line, "rows"), j, row) {
			if (rc < 0)
				break;
			int nv = (int)json_array_size(row);
			for (int k = 0; k < nv && k < AM_COLS_MAX; k++)
				vals[k] = ar_json_value(json_array_get(row, (size_t)k),
				                        r->m.type[AM_VERSIONS][k]);
			if (am_check_row(&r->m, AM_VERSIONS, vals, nv > AM_COLS_MAX ? AM_COLS_MAX : nv, why,
			                 sizeof why) < 0) {
				snprintf(r->error, sizeof r->error, "row %ld: %s", n, why);
				rc = -1;
			}
			n++;
		}
	if (rc == 0 && n != r->rows) {
		snprintf(r->error, sizeof r->error, "%ld rows read back, %ld acknowledged", n, r->rows);
		rc = -1;
	}
	json_decref(last);
	json_decref(lines);
	return rc;
}

static inline int ar_create(struct ar_run *r, struct tsd_test_conn *c)
{
	char *text = NULL, buf[AM_STR_MAX];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	fprintf(f, "{\"op\":\"create\",\"table\":\"%s\",\"key\":[\"host\",\"ts\"],\"columns\":[", r->table);
	for (int i = 0; i < r->m.ncols[1]; i++) {
		fprintf(f, "%s{\"name\":\"%s\",\"type\":\"%s\"", i ? "," : "", r->m.name[i],
		        ts_type_name(r->m.type[1][i]));
		if (i >= AM_FIXED) {
			ts_value d = am_default(&r->m, 1, i, buf);
			fputs(",\"default\":", f);
			ar_put_value(f, &d);
		}
		fputc('}', f);
	}
	fputs("]}", f);
	fclose(f);
	json_t *resp = ar_call(c, text, NULL);
	int ok = ar_ok(resp);
	if (!ok)
		snprintf(r->error, sizeof r->error, "create: %s", ar_errtext(resp));
	json_decref(resp);
	free(text);
	return ok ? 0 : -1;
}

/* Drop r->table (the soak's rounds would otherwise each keep a table and
 * its log); 0, or -1 with r->error. */
static inline int ar_drop(struct ar_run *r)
{
	char req[128];
	struct tsd_test_conn *c = tsd_test_connect(r->d, TSD_TEST_UNIX);
	snprintf(req, sizeof req, "{\"op\":\"drop\",\"table\":\"%s\"}", r->table);
	json_t *resp = c ? ar_call(c, req, NULL) : NULL;
	int ok = ar_ok(resp);
	if (!ok)
		snprintf(r->error, sizeof r->error, "drop: %s", ar_errtext(resp));
	json_decref(resp);
	tsd_test_close(c);
	return ok ? 0 : -1;
}

/* Run the race on r->table (created here); 0, or -1 with r->error. */
static inline int ar_run(struct ar_run *r)
{
	struct ar_writer w[AR_WRITERS_MAX];
	struct tsd_test_conn *c = tsd_test_connect(r->d, TSD_TEST_UNIX);
	int rc = c ? 0 : -1;
	am_init(&r->m);
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->batches = r->alters = r->alters_done = r->failed = 0;
	r->rows = r->refused = 0;
	r->error[0] = 0;
	if (!c)
		snprintf(r->error, sizeof r->error, "cannot connect");
	if (rc == 0 && (rc = ar_create(r, c)) == 0) {
		for (int i = 0; i < r->writers; i++) {
			w[i] = (struct ar_writer){.r = r, .index = i};
			pthread_create(&w[i].th, NULL, ar_writer_main, &w[i]);
		}
		rc = ar_racer(r, c);
		for (int i = 0; i < r->writers; i++) {
			pthread_join(w[i].th, NULL);
			r->rows += w[i].rows;
			r->refused += w[i].refused;
			if (w[i].error[0] && !r->error[0])
				snprintf(r->error, sizeof r->error, "writer %d: %s", i, w[i].error);
		}
		rc = r->error[0] ? -1 : ar_check(r, c);
	}
	tsd_test_close(c);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	return rc;
}

#endif /* TS_TEST_ALTER_RACE_H */

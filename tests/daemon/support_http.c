/*
 * support_http.c -- HTTP/1.1 requests and responses over a test
 * connection (support_http.h).  A response is read line by line with
 * tsd_test_read_line (so the bytes of a next, pipelined response stay in
 * the connection's buffer), its head kept as sent but for the Date
 * header, whose value changes every second; the body is Content-Length
 * bytes (tsstored sends no chunked response).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "support_http.h"

int tsd_test_post(struct tsd_test_conn *c, const char *path, const char *extra,
                  const void *body, size_t n)
{
	char *head = tsd_test_fmt("POST %s HTTP/1.1\r\nHost: t\r\n%sContent-Length: %zu\r\n\r\n",
	                          path, extra, n);
	int rc = tsd_test_send(c, head, strlen(head));
	free(head);
	return rc < 0 ? -1 : tsd_test_send(c, body, n);
}

void tsd_test_response_free(struct tsd_test_response *r)
{
	free(r->head);
	free(r->body);
	memset(r, 0, sizeof *r);
}

/* Append line[0..n) and '\n' to r's head of *hlen bytes.  Returns 0 or
 * -1 (out of memory). */
static int append_head(struct tsd_test_response *r, size_t *hlen, const char *line, size_t n)
{
	char *p = realloc(r->head, *hlen + n + 2);
	if (!p)
		return -1;
	r->head = p;
	memcpy(r->head + *hlen, line, n);
	*hlen += n;
	r->head[(*hlen)++] = '\n';
	r->head[*hlen] = '\0';
	return 0;
}

int tsd_test_read_http(struct tsd_test_conn *c, int timeout_ms, int no_body,
                       struct tsd_test_response *r)
{
	size_t hlen = 0, clen = 0, n;
	char *line = NULL;
	int rc = TSD_TEST_LINE;
	memset(r, 0, sizeof *r);
	if (!(r->head = calloc(1, 1)))
		return TSD_TEST_ERROR;
	for (;;) {
		if ((rc = tsd_test_read_line(c, timeout_ms, &line, &n)) != TSD_TEST_LINE)
			goto fail;
		if (n == 0 || line[n - 1] != '\r')
			r->bare_lf = 1;
		if (hlen == 0 && sscanf(line, "HTTP/1.1 %d ", &r->status) != 1) {
			rc = TSD_TEST_ERROR;
			goto fail;
		}
		if (strncmp(line, "Date: ", 6) == 0) {
			r->dated = 1;
		} else {
			if (strncasecmp(line, "Content-Length: ", 16) == 0)
				clen = strtoul(line + 16, NULL, 10);
			if (append_head(r, &hlen, line, n) < 0) {
				rc = TSD_TEST_ERROR;
				goto fail;
			}
		}
		free(line);
		line = NULL;
		if (n <= 1)
			break;
	}
	if (no_body)
		clen = 0;
	if ((rc = tsd_test_read_bytes(c, clen, timeout_ms, &r->body)) != TSD_TEST_LINE)
		goto fail;
	r->len = clen;
	return TSD_TEST_LINE;
fail:
	free(line);
	tsd_test_response_free(r);
	return rc;
}

char *tsd_test_response_header(const struct tsd_test_response *r, const char *name)
{
	size_t k = strlen(name);
	for (const char *p = r->head; p && *p;) {
		const char *end = strchr(p, '\n');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n > k + 1 && strncasecmp(p, name, k) == 0 && p[k] == ':' && p[k + 1] == ' ') {
			size_t v = n - k - 2;
			if (v && p[k + 2 + v - 1] == '\r')
				v--;
			return tsd_test_fmt("%.*s", (int)v, p + k + 2);
		}
		p += n + (end != NULL);
	}
	return tsd_test_fmt("%s", "");
}

struct tsd_test_http *tsd_test_http_up(const char *const *args, int json)
{
	struct tsd_test_http *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	if (!(t->d = tsd_test_daemon_up(1, args)))
		goto fail;
	if (!(t->http = tsd_test_connect(t->d, TSD_TEST_HTTP)) ||
	    (json && !(t->json = tsd_test_connect(t->d, TSD_TEST_TCP)))) {
		tsd_test_daemon_dump_log(t->d);
		goto fail;
	}
	return t;
fail:
	tsd_test_http_down(t);
	return NULL;
}

void tsd_test_http_down(struct tsd_test_http *t)
{
	if (!t)
		return;
	tsd_test_close(t->http);
	tsd_test_close(t->json);
	tsd_test_daemon_free(t->d);
	free(t);
}

/*
 * client.c -- the one client of tsstored: an address to a ready
 * connection (client.h).
 *
 * jconn.c owns the connection itself (addresses, lines, timeouts); this
 * file adds what a client of a remote daemon needs besides: the token.
 * On TCP, tsstored runs only what the connection's access level allows
 * (daemon/access.c: on a loopback listener, its loopback-access, write
 * by default; nothing elsewhere) until {"op":"auth","token":…}
 * (daemon/request.c, op_auth) gives it every level; a wrong token is
 * refused with EAUTH and the connection closed, and so is a token sent
 * to a daemon that has none (the connection kept).  So the
 * token is found once, before connecting (an unreadable file is the
 * caller's error, not the daemon's), and sent as the first request; the
 * caller gets the connection only once the daemon has said ok, and a
 * refusal as one message naming where the token came from.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client.h"
#include "json.h"

/* Read the token from the first line of path into tok (of toksz bytes),
 * as tsstored reads its own (daemon/config.c, read_token).  A file that
 * others may read (mode o+r) is refused before it is read: the token
 * gives admin, and such a file has likely been shared by mistake (the
 * owner and a group, for a group of operators, may read it). */
static int token_from_file(const char *path, char *tok, size_t toksz, char *why, size_t whysz)
{
	FILE *f = fopen(path, "r");
	struct stat st;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = -1;
	if (!f) {
		snprintf(why, whysz, "token file %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & S_IROTH)) {
		snprintf(why, whysz, "token file %s: others may read it (mode %04o): refused; "
		         "chmod o-r %s", path, (unsigned)(st.st_mode & 07777), path);
		fclose(f);
		return -1;
	}
	n = getline(&line, &cap, f);
	fclose(f);
	/* A NUL would end the token early, as tsstored refuses it too. */
	int bad = n <= 0 || memchr(line, '\0', (size_t)n) != NULL;
	if (!bad) {
		line[strcspn(line, "\r\n")] = '\0';
		bad = !line[0] || strlen(line) > CLIENT_TOKEN_MAX || strlen(line) >= toksz;
	}
	if (bad)
		snprintf(why, whysz, "token file %s: the first line must hold the token (1 to %d bytes)",
		         path, CLIENT_TOKEN_MAX);
	else {
		snprintf(tok, toksz, "%s", line);
		rc = 0;
	}
	free(line);
	return rc;
}

/* The token to send, into tok ("" for none), and where it came from
 * into src.  Returns 0, or -1 with why set (a token file unreadable). */
static int find_token(const char *token_file, char *tok, size_t toksz, char *src, size_t srcsz,
                      char *why, size_t whysz)
{
	const char *env = getenv(CLIENT_TOKEN_ENV), *fenv = getenv(CLIENT_TOKEN_FILE_ENV);
	tok[0] = '\0';
	if (token_file) {
		snprintf(src, srcsz, "of the file %s", token_file);
		return token_from_file(token_file, tok, toksz, why, whysz);
	}
	if (env && *env) {
		if (strlen(env) >= toksz) {
			snprintf(why, whysz, "$%s: longer than %d bytes", CLIENT_TOKEN_ENV, CLIENT_TOKEN_MAX);
			return -1;
		}
		snprintf(src, srcsz, "of $%s", CLIENT_TOKEN_ENV);
		snprintf(tok, toksz, "%s", env);
		return 0;
	}
	if (fenv && *fenv) {
		snprintf(src, srcsz, "of $%s (%s)", CLIENT_TOKEN_FILE_ENV, fenv);
		return token_from_file(fenv, tok, toksz, why, whysz);
	}
	return 0;
}

/* Send the auth request with tok on c and wait for its ok. */
static int authenticate(struct jconn *c, const char *tok, const char *src, char *why,
                        size_t whysz)
{
	struct jbuf req = {0};
	char msg[512];
	int rc;
	jbuf_puts(&req, "{\"op\":\"auth\",\"token\":");
	jbuf_string(&req, tok, strlen(tok));
	jbuf_putc(&req, '}');
	rc = jconn_call(c, &req, NULL, NULL, NULL, msg, sizeof msg);
	jbuf_free(&req);
	if (rc != 0) /* msg: "ADDR: wrong token; ..." for EAUTH, else why the call failed */
		snprintf(why, whysz, "tsstored refused the token %s: %s", src, msg);
	return rc == 0 ? 0 : -1;
}

int client_connect(const char *addr, const char *token_file, int64_t timeout,
                   struct jconn **out, char *why, size_t whysz)
{
	char tok[CLIENT_TOKEN_MAX + 2], src[512];
	struct jconn *c = NULL;
	int rc = -1;
	*out = NULL;
	if (find_token(token_file, tok, sizeof tok, src, sizeof src, why, whysz) < 0)
		goto out;
	if (jconn_connect(addr, timeout, &c, why, whysz) < 0)
		goto out;
	if (jconn_is_tcp(c) && tok[0] && authenticate(c, tok, src, why, whysz) < 0)
		goto out;
	if (jconn_is_tcp(c) && !tok[0])
		jconn_set_auth_hint(c, "no token was sent: give it in $" CLIENT_TOKEN_ENV
		                       " or in a file named by $" CLIENT_TOKEN_FILE_ENV);
	rc = 0;
out:
	if (rc < 0)
		jconn_close(c);
	else
		*out = c;
	memset(tok, 0, sizeof tok);
	return rc;
}

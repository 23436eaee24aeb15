/*
 * device.c -- the bounds a flush and a cold scan are measured against:
 * the sequential write and read bandwidths of the device under the
 * bench's data directory, and memory copy bandwidth.
 *
 * Sequential write: c->device_bytes of incompressible bytes written in
 * 1 MiB write() calls to one new file in a scratch directory beside the
 * engines' (same file system), fdatasync every 64 MiB and at the end, so
 * the page cache cannot hide the device; the clock runs from open to the
 * last fdatasync.  That is what a flush does too (write a tablet, fsync
 * it), without any encoding or compression.  Measured c->repeat times,
 * best kept, once per run: the flush workload reuses the figure so its
 * ratio is against the device *in the same run*.
 *
 * Sequential read: such a file, written the same way (off the clock), is
 * evicted from the page cache (bench_drop_caches) and read front to back
 * in 1 MiB read() calls with the kernel's default readahead; the clock
 * runs from open to the last read.  That is the bound of a cold full scan
 * (query.c), which reads tablet files from a cold cache the same way.
 * Best of c->repeat evictions and reads of the one file, once per run.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define WRITE_CHUNK ((size_t)1 << 20)       /* one write() */
#define READ_CHUNK ((size_t)1 << 20)        /* one read() */
#define SEQ_FILE "seq"                      /* the file, in a scratch directory */
#define SYNC_EVERY ((size_t)64 << 20)       /* fdatasync this often */
#define MEMCPY_BYTES ((size_t)64 << 20)     /* far beyond any cache */
#define MEMCPY_ROUNDS 8

static double device_mbps = -1; /* measured in this run, or -1 */
static double device_read = -1; /* measured in this run, or -1 */

static void fill_random(unsigned char *p, size_t n)
{
	uint64_t x = UINT64_C(0x2545F4914F6CDD1D);
	for (size_t i = 0; i + 8 <= n; i += 8) {
		bench_xorshift(&x);
		memcpy(p + i, &x, 8);
	}
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Write bytes to the new file path; returns MB/s, or -1 on failure. */
static double write_file(const char *path, size_t bytes, const unsigned char *chunk)
{
	double t0, rate = -1;
	size_t done = 0;
	int fd = -1;
	t0 = bench_seconds();
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
		goto out;
	while (done < bytes) {
		if (write_all(fd, chunk, WRITE_CHUNK) < 0)
			goto out;
		done += WRITE_CHUNK;
		if ((done % SYNC_EVERY == 0 || done >= bytes) && fdatasync(fd) < 0)
			goto out;
	}
	rate = (double)done / BENCH_MB / (bench_seconds() - t0);
out:
	if (rate < 0)
		perror("tsstore-bench: device write");
	if (fd >= 0)
		close(fd);
	return rate;
}

/* Write bytes to a new file in dir and remove it; returns MB/s, or -1. */
static double seq_write(const char *dir, size_t bytes, const unsigned char *chunk)
{
	char path[512];
	snprintf(path, sizeof path, "%s/" SEQ_FILE, dir);
	double rate = write_file(path, bytes, chunk);
	unlink(path);
	return rate;
}

/* Read path to its end; returns MB/s, or -1 on failure. */
static double read_file(const char *path, unsigned char *chunk)
{
	double t0 = bench_seconds(), rate = -1;
	size_t done = 0;
	ssize_t k = 0;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		goto out;
	while ((k = read(fd, chunk, READ_CHUNK)) > 0)
		done += (size_t)k;
	if (k == 0)
		rate = (double)done / BENCH_MB / (bench_seconds() - t0);
out:
	if (rate < 0)
		perror("tsstore-bench: device read");
	if (fd >= 0)
		close(fd);
	return rate;
}

/* Memory copy bandwidth, MB/s copied. */
static double memcpy_mbps(void)
{
	unsigned char *a = malloc(MEMCPY_BYTES), *b = malloc(MEMCPY_BYTES);
	double t0, rate = -1;
	if (!a || !b)
		goto out;
	fill_random(a, MEMCPY_BYTES);
	memset(b, 0, MEMCPY_BYTES); /* fault both in before the clock starts */
	t0 = bench_seconds();
	for (int i = 0; i < MEMCPY_ROUNDS; i++) {
		memcpy(b, a, MEMCPY_BYTES);
		a[i] = b[MEMCPY_BYTES - 1 - (size_t)i]; /* each copy feeds the next */
	}
	rate = (double)MEMCPY_BYTES * MEMCPY_ROUNDS / BENCH_MB / (bench_seconds() - t0);
out:
	free(a);
	free(b);
	return rate;
}

static unsigned char *random_chunk(void)
{
	unsigned char *chunk = malloc(WRITE_CHUNK > READ_CHUNK ? WRITE_CHUNK : READ_CHUNK);
	if (!chunk) {
		fprintf(stderr, "tsstore-bench: out of memory\n");
		exit(1);
	}
	fill_random(chunk, WRITE_CHUNK);
	return chunk;
}

static void params(char *buf, size_t size, const bench_config *c)
{
	snprintf(buf, size, "\"bytes\":%zu,\"write\":%zu,\"fdatasync_every\":%zu,\"repeat\":%d",
	         c->device_bytes, WRITE_CHUNK, SYNC_EVERY, c->repeat);
}

double bench_device_write_mbps(const bench_config *c)
{
	unsigned char *chunk;
	char *dir, p[160];
	if (device_mbps >= 0)
		return device_mbps;
	chunk = random_chunk();
	dir = bench_tmpdir();
	for (int i = 0; i < c->repeat; i++) {
		bench_settle();
		double r = seq_write(dir, c->device_bytes, chunk);
		device_mbps = r > device_mbps ? r : device_mbps;
	}
	bench_rmdir(dir);
	free(chunk);
	if (device_mbps <= 0) {
		fprintf(stderr, "tsstore-bench: could not measure the device\n");
		exit(1);
	}
	params(p, sizeof p, c);
	bench_result("device", "device", "seq_write_mb_per_sec", device_mbps, "MB/s", p);
	return device_mbps;
}

double bench_device_read_mbps(const bench_config *c)
{
	unsigned char *chunk;
	char *dir, path[512], p[192];
	const char *how = "";
	if (device_read >= 0)
		return device_read;
	chunk = random_chunk();
	dir = bench_tmpdir();
	snprintf(path, sizeof path, "%s/" SEQ_FILE, dir);
	bench_settle();
	if (write_file(path, c->device_bytes, chunk) >= 0)
		for (int i = 0; i < c->repeat; i++) {
			how = bench_drop_caches(dir, "/" SEQ_FILE);
			double r = read_file(path, chunk);
			device_read = r > device_read ? r : device_read;
		}
	unlink(path);
	bench_rmdir(dir);
	free(chunk);
	if (device_read <= 0) {
		fprintf(stderr, "tsstore-bench: could not measure the device's reads\n");
		exit(1);
	}
	snprintf(p, sizeof p, "\"bytes\":%zu,\"read\":%zu,\"cache_drop\":\"%s\",\"repeat\":%d",
	         c->device_bytes, READ_CHUNK, how, c->repeat);
	bench_result("device", "device", "seq_read_mb_per_sec", device_read, "MB/s", p);
	return device_read;
}

void bench_workload_device(const bench_config *c)
{
	char p[96];
	double best = 0;
	bench_device_write_mbps(c);
	bench_device_read_mbps(c);
	for (int i = 0; i < c->repeat; i++) {
		double r = memcpy_mbps();
		best = r > best ? r : best;
	}
	snprintf(p, sizeof p, "\"bytes\":%zu,\"rounds\":%d", MEMCPY_BYTES, MEMCPY_ROUNDS);
	bench_result("device", "memory", "memcpy_mb_per_sec", best, "MB/s", p);
}

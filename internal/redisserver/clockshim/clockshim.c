/* clockshim: an LD_PRELOAD library that shifts a process's wall clock
 * (CLOCK_REALTIME, gettimeofday, time) by an offset in microseconds, read
 * through a shared mapping of the file named by REDISYNC_CLOCK_FILE (8 bytes,
 * little-endian), so that a test can step it while the process runs. The
 * monotonic clock is left alone, as an NTP step leaves it. Written for
 * redis-server, whose jemalloc clashes with libfaketime; system calls only,
 * so that it needs nothing initialised. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *offset_us;
static int64_t no_offset;

static int64_t offset(void) {
	if (!offset_us) {
		const char *path = getenv("REDISYNC_CLOCK_FILE");
		long fd = path ? syscall(SYS_open, path, O_RDONLY) : -1;
		void *p = fd >= 0 ? (void *)syscall(SYS_mmap, NULL, 8, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
		offset_us = p == MAP_FAILED ? &no_offset : (volatile int64_t *)p;
	}
	return *offset_us;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	long r = syscall(SYS_clock_gettime, id, ts);
	if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
		int64_t us = (int64_t)ts->tv_sec * 1000000 + ts->tv_nsec / 1000 + offset();
		ts->tv_sec = us / 1000000;
		ts->tv_nsec = (us % 1000000) * 1000;
	}
	return (int)r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	(void)tz;
	struct timespec ts;
	int r = clock_gettime(CLOCK_REALTIME, &ts);
	if (r == 0) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return r;
}

time_t time(time_t *t) {
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t) {
		*t = ts.tv_sec;
	}
	return ts.tv_sec;
}

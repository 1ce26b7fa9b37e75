/*-------------------------------------------------------------------------
 *
 * clock.h
 *	  The two clocks the extension reads: the wall clock ids are made of,
 *	  and the monotonic clock lease validity is judged on.
 *
 * Locking: none; no shared state.  Both are a vDSO call on Linux, cheap
 * enough for the common path, but they are system calls for PostgreSQL's
 * lock README: read them before taking a spinlock, never under one.
 *
 * Inline, header only: the common path reads the wall clock once per id,
 * and a call into another file would cost it more than the read.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_CLOCK_H
#define SNOWFLAKE_CLOCK_H

#include <time.h>

/* The wall clock, Unix ms. */
static inline int64
ClockNowMs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The monotonic clock, us: for deadlines that a clock step must not move. */
static inline int64
ClockMonotonicUs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#endif							/* SNOWFLAKE_CLOCK_H */

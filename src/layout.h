/*-------------------------------------------------------------------------
 *
 * layout.h
 *	  The bit layout of a Snowflake id and the arithmetic on it.
 *
 * Everything here is a pure function of its arguments: no shared memory,
 * no GUCs, no errors thrown.  The generator and every SQL decoder go through
 * these functions, so there is one place that knows where the bits are.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_LAYOUT_H
#define SNOWFLAKE_LAYOUT_H

#include "datatype/timestamp.h"

/*
 * Field widths, most significant first: a zero sign bit, then time, worker
 * and sequence.  They add up to 63 so that every id is a positive bigint.
 */
typedef struct SnowflakeLayout
{
	int			time_bits;
	int			worker_bits;
	int			sequence_bits;
	int64		epoch_ms;		/* Unix time in ms at which tick 0 begins */
} SnowflakeLayout;

/* The default layout: 41 bits of ms, 10 bits of worker, 12 of sequence. */
#define SNOWFLAKE_TIME_BITS			41
#define SNOWFLAKE_WORKER_BITS		10
#define SNOWFLAKE_SEQUENCE_BITS		12

/* 2025-01-01 00:00:00 UTC, the default epoch */
#define SNOWFLAKE_DEFAULT_EPOCH		"2025-01-01 00:00:00+00"
#define SNOWFLAKE_DEFAULT_EPOCH_MS	INT64CONST(1735689600000)

/* One id's fields, with the time in absolute Unix milliseconds. */
typedef struct SnowflakeFields
{
	int64		unix_ms;
	int32		worker;
	int32		sequence;
} SnowflakeFields;

static inline int64
SnowflakeMaxTicks(const SnowflakeLayout *layout)
{
	return (INT64CONST(1) << layout->time_bits) - 1;
}

static inline int32
SnowflakeMaxWorker(const SnowflakeLayout *layout)
{
	return (1 << layout->worker_bits) - 1;
}

static inline int32
SnowflakeMaxSequence(const SnowflakeLayout *layout)
{
	return (1 << layout->sequence_bits) - 1;
}

/*
 * Is unix_ms a time at which this layout can issue ids (not before the
 * epoch, not past the last tick)?
 */
static inline bool
SnowflakeTimeInRange(const SnowflakeLayout *layout, int64 unix_ms)
{
	return unix_ms >= layout->epoch_ms &&
		unix_ms - layout->epoch_ms <= SnowflakeMaxTicks(layout);
}

/*
 * The id for a time, worker and sequence.  The caller guarantees that all
 * three are in range (SnowflakeTimeInRange and the Max functions above).
 */
static inline int64
SnowflakeCompose(const SnowflakeLayout *layout, int64 unix_ms,
				 int32 worker, int32 sequence)
{
	return ((unix_ms - layout->epoch_ms) <<
			(layout->worker_bits + layout->sequence_bits)) |
		((int64) worker << layout->sequence_bits) |
		(int64) sequence;
}

/* Unix ms since 1970 to PostgreSQL's timestamptz (us since 2000) and back. */
#define SNOWFLAKE_UNIX_TO_PG_MS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000)

static inline TimestampTz
SnowflakeMsToTimestamptz(int64 unix_ms)
{
	return (unix_ms - SNOWFLAKE_UNIX_TO_PG_MS) * 1000;
}

/* Rounds down: the millisecond that contains the timestamp. */
static inline int64
SnowflakeTimestamptzToMs(TimestampTz ts)
{
	int64		pg_ms = ts / 1000 - (ts % 1000 < 0 ? 1 : 0);

	return pg_ms + SNOWFLAKE_UNIX_TO_PG_MS;
}

/*
 * A Unix ms as text for messages, in a fresh palloc'd string (several can
 * appear in one message, unlike timestamptz_to_str's static buffer).
 */
extern char *SnowflakeFormatMs(int64 unix_ms);

/* Split a non-negative id into its fields. */
extern void SnowflakeDecompose(const SnowflakeLayout *layout, int64 id,
							   SnowflakeFields *fields);

/* The last Unix ms at which the layout can issue an id. */
extern int64 SnowflakeLastMs(const SnowflakeLayout *layout);

/*
 * Parse an epoch: an integer count of ms since 1970-01-01 UTC, or an ISO
 * 8601 date or timestamp ("2025-01-01", "2025-01-01 00:00:00.000+00",
 * "2025-01-01T00:00:00Z"), read as UTC when it has no offset.  Returns false
 * and a static message in *error when the text is not one of those.
 */
extern bool SnowflakeParseEpoch(const char *text, int64 *unix_ms,
								const char **error);

/*
 * Can a generator run with this layout at now_ms?  Returns NULL when it can,
 * otherwise a static message saying why not (epoch in the future, or so far
 * back that the time field is already exhausted).
 */
extern const char *SnowflakeCheckEpoch(const SnowflakeLayout *layout,
									   int64 now_ms);

#endif							/* SNOWFLAKE_LAYOUT_H */

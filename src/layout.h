/*-------------------------------------------------------------------------
 *
 * layout.h
 *	  The bit layout of a Snowflake id and the arithmetic on it.
 *
 * Everything here is a pure function of its arguments: no shared memory,
 * no GUCs, no errors thrown.  The generator and every SQL decoder go through
 * these functions, so there is one place that knows where the bits are.
 *
 * A layout has three fields: time (a count of ticks since the epoch, always
 * the most significant), node (the worker, shard or machine id, maybe split
 * into named parts such as datacenter and worker) and sequence, in the
 * order time-node-sequence or time-sequence-node.  Their widths add up to 63
 * (every id a positive bigint) or 64 (the top bit is time's: ids stay
 * positive until that bit is needed, which ends the layout's lifetime).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_LAYOUT_H
#define SNOWFLAKE_LAYOUT_H

#include "datatype/timestamp.h"

#define SNOWFLAKE_MAX_PARTS		4
#define SNOWFLAKE_NAME_LEN		32

typedef struct SnowflakeLayout
{
	char		name[SNOWFLAKE_NAME_LEN];	/* preset name, or "custom" */
	int			time_bits;
	int			node_bits;		/* all parts of the node field */
	int			sequence_bits;
	bool		sequence_last;	/* time|node|sequence, else time|sequence|node */
	int			tick_ms;		/* length of one tick of the time field */
	int64		epoch_ms;		/* Unix time in ms at which tick 0 begins */
	bool		own_epoch;		/* the layout names its epoch (else the
								 * "snowflake.epoch" setting applies) */
	/* the node field's parts, most significant first */
	int			nparts;
	char		part_names[SNOWFLAKE_MAX_PARTS][SNOWFLAKE_NAME_LEN];
	int			part_bits[SNOWFLAKE_MAX_PARTS];
} SnowflakeLayout;

/* 2025-01-01 00:00:00 UTC, the default epoch */
#define SNOWFLAKE_DEFAULT_EPOCH		"2025-01-01 00:00:00+00"
#define SNOWFLAKE_DEFAULT_EPOCH_MS	INT64CONST(1735689600000)
#define SNOWFLAKE_DEFAULT_LAYOUT	"snowflake"

/* One id's fields, with the time in absolute Unix milliseconds. */
typedef struct SnowflakeFields
{
	int64		tick;
	int64		unix_ms;		/* start of the tick */
	int32		node;
	int32		sequence;
	int32		parts[SNOWFLAKE_MAX_PARTS];
} SnowflakeFields;

static inline int
SnowflakeTimeShift(const SnowflakeLayout *layout)
{
	return layout->node_bits + layout->sequence_bits;
}

/* The last tick whose ids are still positive bigints. */
static inline int64
SnowflakeMaxTick(const SnowflakeLayout *layout)
{
	int			usable = Min(layout->time_bits, 63 - SnowflakeTimeShift(layout));

	return (INT64CONST(1) << usable) - 1;
}

static inline int32
SnowflakeMaxNode(const SnowflakeLayout *layout)
{
	return (int32) ((INT64CONST(1) << layout->node_bits) - 1);
}

static inline int32
SnowflakeMaxSequence(const SnowflakeLayout *layout)
{
	return (int32) ((INT64CONST(1) << layout->sequence_bits) - 1);
}

/* The tick containing unix_ms; meaningful only from the epoch on. */
static inline int64
SnowflakeTickOf(const SnowflakeLayout *layout, int64 unix_ms)
{
	int64		since = unix_ms - layout->epoch_ms;

	if (likely(layout->tick_ms == 1))
		return since;
	return since >= 0 ? since / layout->tick_ms :
		-((-since + layout->tick_ms - 1) / layout->tick_ms);
}

static inline int64
SnowflakeTickStart(const SnowflakeLayout *layout, int64 tick)
{
	return layout->epoch_ms + tick * layout->tick_ms;
}

/*
 * The id for a tick, node and sequence.  The caller guarantees that all
 * three are in range (0..SnowflakeMaxTick and the Max functions above).
 */
static inline int64
SnowflakeCompose(const SnowflakeLayout *layout, int64 tick, int32 node,
				 int32 sequence)
{
	int			node_shift = layout->sequence_last ? layout->sequence_bits : 0;
	int			sequence_shift = layout->sequence_last ? 0 : layout->node_bits;

	return (int64) (((uint64) tick << SnowflakeTimeShift(layout)) |
					((uint64) node << node_shift) |
					((uint64) sequence << sequence_shift));
}

/* The last Unix ms at which the layout can issue an id. */
static inline int64
SnowflakeLastMs(const SnowflakeLayout *layout)
{
	return SnowflakeTickStart(layout, SnowflakeMaxTick(layout) + 1) - 1;
}

/* What adding one to the sequence adds to an id. */
static inline int64
SnowflakeSequenceStep(const SnowflakeLayout *layout)
{
	return layout->sequence_last ? 1 : INT64CONST(1) << layout->node_bits;
}

/* Unix ms since 1970 to PostgreSQL's timestamptz (us since 2000) and back. */
#define SNOWFLAKE_UNIX_TO_PG_MS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000)

/* The Unix ms timestamptz can hold: from 4714-11-24 BC to before 294277 */
#define SNOWFLAKE_MIN_MS	(MIN_TIMESTAMP / 1000 + SNOWFLAKE_UNIX_TO_PG_MS)
#define SNOWFLAKE_END_MS	(END_TIMESTAMP / 1000 + SNOWFLAKE_UNIX_TO_PG_MS)

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


/*
 * Parse an epoch: an integer count of ms since 1970-01-01 UTC, or an ISO
 * 8601 date or timestamp ("2025-01-01", "2025-01-01 00:00:00.000+00",
 * "2025-01-01T00:00:00Z"), read as UTC when it has no offset.  Returns false
 * and a static message in *error when the text is not one of those.
 */
extern bool SnowflakeParseEpoch(const char *text, int64 *unix_ms,
								const char **error);

/*
 * Parse a layout: a preset name (snowflake, twitter, discord, instagram,
 * sonyflake) or a custom specification such as
 * "time:41 worker:10 sequence:12 tick:1ms epoch:2025-01-01".  default_epoch
 * serves layouts that name none.  Returns false with a palloc'd sentence in
 * *error when the text is not a valid layout.
 */
extern bool SnowflakeParseLayout(const char *text, int64 default_epoch_ms,
								 SnowflakeLayout *layout, char **error);

/*
 * What makes a layout impossible, as a palloc'd sentence, or NULL: widths,
 * tick, and an epoch and lifetime inside PostgreSQL's timestamps.  The
 * parser and the high-water mark's loader both apply it.
 */
extern char *SnowflakeLayoutProblem(const SnowflakeLayout *layout);

/* The specification of a layout in the custom syntax, palloc'd. */
extern char *SnowflakeLayoutSpec(const SnowflakeLayout *layout);

#endif							/* SNOWFLAKE_LAYOUT_H */

/*-------------------------------------------------------------------------
 *
 * decision.h
 *	  The generator's state machine as pure functions: what a node's next id
 *	  is, and what a call must do when the common path cannot issue it.
 *
 * A node's whole issuing state is one 64-bit word, "next": the id it would
 * issue next if the clock allowed, node field included.  Ids are issued at
 * next or above, and next only grows.  When a tick's sequence is used up,
 * next becomes sequence 0 of the following tick.
 *
 * Nothing here reads the clock, shared memory or a setting, and nothing
 * takes a lock: the generator (generator.c) gathers a GenSituation under
 * its node's lock, and the unit test (test/unit/decision_test.c) builds
 * them by the million.  The tick, mark and limit helpers below are the
 * generator's own rules, shared with the unit test and the lease client so
 * that each is written once.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_DECISION_H
#define SNOWFLAKE_DECISION_H

#include "layout.h"

/* What a call that cannot take the common path must do */
typedef enum GenOutcome
{
	GEN_ISSUE,					/* issue from d->first, in d->tick */
	GEN_WAIT_TICK,				/* the clock's tick is used up: wait for the
								 * next one */
	GEN_WAIT_CLOCK,				/* the next id lies ahead of the clock, by no
								 * more than the tolerance: wait for it */
	GEN_NEED_HORIZON,			/* d->tick is not below the lease's horizon:
								 * the lease client must extend it first */
	GEN_NEED_MARK,				/* d->tick is below the horizon but not below
								 * the high-water mark: extend the mark first */
	GEN_REFUSE_ROLLBACK,		/* the clock moved back beyond the tolerance */
	GEN_REFUSE_RANGE			/* the clock or the tick lies outside the
								 * layout's lifetime */
} GenOutcome;

typedef struct GenSituation
{
	const SnowflakeLayout *layout;
	int64		now_ms;			/* the clock, Unix ms */
	uint64		next;			/* the node's next id */
	int64		clock_then_ms;	/* the clock read at least this when the last
								 * id (or the floor) was issued */
	bool		restarted;		/* next is the floor found at start-up, and
								 * nothing was issued since */
	int64		mark_tick;		/* ids are issued only in ticks below it */
	int64		horizon_tick;	/* and below this one (a lease's horizon;
								 * past the last tick without a lease) */
	int64		max_borrow_ms;	/* how far ahead of the clock a tick may be */
	int64		tolerance_ms;	/* how far back a clock step is waited out */
} GenSituation;

typedef struct GenDecision
{
	GenOutcome	outcome;
	int64		tick;			/* GEN_ISSUE, GEN_NEED_*: the tick */
	uint64		first;			/* GEN_ISSUE: the first id to issue */
	bool		borrowed;		/* GEN_ISSUE: the tick is ahead of the clock */
	int64		wait_until_ms;	/* GEN_WAIT_*: until the clock reads this */

	/*
	 * GEN_WAIT_CLOCK and GEN_REFUSE_ROLLBACK: how far the clock is behind
	 * clock_then_ms.  Above the tolerance it refuses; above 0 the wait is a
	 * rollback waited out (the generator counts it); 0 or less, the clock
	 * is behind a floor or a borrowed tick, not behind itself.
	 */
	int64		behind_ms;
} GenDecision;

extern void GenDecide(const GenSituation *s, GenDecision *d);

/* The tick, node and sequence of a next word (or an id). */
static inline int64
GenTickOf(const SnowflakeLayout *layout, uint64 word)
{
	return (int64) (word >> SnowflakeTimeShift(layout));
}

static inline int64
GenSequenceOf(const SnowflakeLayout *layout, uint64 word)
{
	int			shift = layout->sequence_last ? 0 : layout->node_bits;

	return (int64) ((word >> shift) & (uint64) SnowflakeMaxSequence(layout));
}

/* The word with its time field set to tick and its sequence to 0. */
static inline uint64
GenStartOfTick(const SnowflakeLayout *layout, uint64 word, int64 tick)
{
	int			node_shift = layout->sequence_last ? layout->sequence_bits : 0;
	uint64		node_bits = (uint64) SnowflakeMaxNode(layout) << node_shift;

	return ((uint64) tick << SnowflakeTimeShift(layout)) | (word & node_bits);
}

/* How many ids are left in the tick of first, first included. */
static inline int64
GenRoomAt(const SnowflakeLayout *layout, uint64 first)
{
	return (int64) SnowflakeMaxSequence(layout) + 1 - GenSequenceOf(layout, first);
}

/*
 * The next word once count ids (count <= GenRoomAt) are issued from
 * first: the id after the last one, or sequence 0 of the following tick
 * when they use the tick up.
 */
static inline uint64
GenAfter(const SnowflakeLayout *layout, uint64 first, int64 count)
{
	if (count == GenRoomAt(layout, first))
		return GenStartOfTick(layout, first, GenTickOf(layout, first) + 1);
	return first + (uint64) count * (uint64) SnowflakeSequenceStep(layout);
}

/*
 * The ids issued by moving a node's next word from old to after with count
 * ids: count, less what moves into the count of earlier ticks (old's
 * sequence, when after leaves its tick).  What a call adds to the node's
 * count of ids of earlier ticks.
 */
static inline int64
GenCountedBefore(const SnowflakeLayout *layout, uint64 old, uint64 after, int64 count)
{
	return count + GenSequenceOf(layout, old) - GenSequenceOf(layout, after);
}

/* The tick of the last id issued before next: next's own, or the one before. */
static inline int64
GenLastTick(const SnowflakeLayout *layout, uint64 next)
{
	return GenTickOf(layout, next) - (GenSequenceOf(layout, next) == 0 ? 1 : 0);
}

/* The first tick no id before next lies in: next's, or the one after. */
static inline int64
GenEndTick(const SnowflakeLayout *layout, uint64 next)
{
	return GenTickOf(layout, next) + (GenSequenceOf(layout, next) > 0 ? 1 : 0);
}

/*
 * A new mark: a reservation of interval_ms from the clock, and at least the
 * end of need_tick, the tick a call waits to issue in.
 */
static inline int64
GenMarkTargetMs(const SnowflakeLayout *layout, int64 now_ms, int64 interval_ms, int64 need_tick)
{
	return Max(now_ms + interval_ms, SnowflakeTickStart(layout, need_tick + 1));
}

/*
 * The common path stops this share of snowflake.mark_interval_ms short of
 * a limit (the mark, a lease's horizon), so that at full load the limit is
 * extended before any call gets there.
 */
#define GEN_FAST_MARGIN_DIVISOR	4

static inline int64
GenFastLimitMs(int64 limit_ms, int64 interval_ms)
{
	return limit_ms - interval_ms / GEN_FAST_MARGIN_DIVISOR;
}

/* The first tick that starts at or after unix_ms. */
static inline int64
GenFirstTickAt(const SnowflakeLayout *layout, int64 unix_ms)
{
	int64		tick = SnowflakeTickOf(layout, unix_ms);

	return SnowflakeTickStart(layout, tick) < unix_ms ? tick + 1 : tick;
}

/*
 * The first tick at or after unix_ms, within 0 .. the layout's last tick + 1:
 * a tick past the end is never below a mark, so no id past the end is
 * issued without the range check of GenDecide.
 */
static inline int64
GenLimitTick(const SnowflakeLayout *layout, int64 unix_ms)
{
	int64		tick = GenFirstTickAt(layout, unix_ms);

	return Min(Max(tick, 0), SnowflakeMaxTick(layout) + 1);
}

/*
 * Would ids issued from mark_ms on under layout new sort above every id
 * layout old issued below it?
 */
extern bool GenLayoutFollows(const SnowflakeLayout *old, const SnowflakeLayout *new,
							 int64 mark_ms);

#endif							/* SNOWFLAKE_DECISION_H */

/*-------------------------------------------------------------------------
 *
 * generator.c
 *	  The id generator: its state in shared memory, the lock guarding it,
 *	  the clock, and the state machine for clock rollbacks and sequence
 *	  exhaustion.
 *
 * One generator serves the whole server: every backend and parallel worker
 * draws from the same (last_ms, sequence) pair under one LWLock, so ids are
 * unique and strictly increasing across sessions.  The lock is held only to
 * read the clock and advance the pair; every wait (for the next millisecond
 * when the sequence is exhausted, or for the clock to catch up after a small
 * rollback) happens with the lock released, and the state is re-examined
 * afterwards.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
#if PG_VERSION_NUM >= 140000
#include "utils/wait_event.h"
#else
#include "pgstat.h"
#endif

#include "snowflake.h"

typedef struct GeneratorState
{
	LWLock	   *lock;
	/* the generator proper */
	int64		last_ms;		/* Unix ms of the last id issued, 0 if none */
	int32		sequence;		/* sequence of that id */
	/* statistics, all protected by the lock */
	int64		ids_issued;
	int64		sequence_waits;
	int64		rollbacks_waited;
	int64		rollbacks_refused;
	TimestampTz started_at;
} GeneratorState;

static GeneratorState *gen = NULL;

void
GeneratorShmemRequest(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(GeneratorState)));
	RequestNamedLWLockTranche("snowflake", 1);
}

void
GeneratorShmemStartup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	gen = ShmemInitStruct("snowflake generator", sizeof(GeneratorState),
						  &found);
	if (!found)
	{
		memset(gen, 0, sizeof(GeneratorState));
		gen->lock = &(GetNamedLWLockTranche("snowflake"))->lock;
		gen->started_at = GetCurrentTimestamp();
	}
	LWLockRelease(AddinShmemInitLock);
}

int64
GeneratorClockMs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
gen_require_state(void)
{
	if (unlikely(gen == NULL))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("snowflake must be loaded via \"shared_preload_libraries\""),
				 errhint("Add \"snowflake\" to \"shared_preload_libraries\" in postgresql.conf and restart the server.")));
}

/*
 * Wait, without the lock, until the clock leaves millisecond "last".  At
 * most a millisecond, so spinning beats a sleep whose wake-up latency would
 * cost a good part of the next millisecond's ids.
 */
static void
gen_wait_next_ms(int64 last)
{
	while (GeneratorClockMs() == last)
	{
		CHECK_FOR_INTERRUPTS();
		SPIN_DELAY();
	}
}

/*
 * Sleep, without the lock, while the clock catches up after a rollback
 * within the tolerance.  The latch wakes us for query cancel and
 * statement_timeout.
 */
static void
gen_sleep_ms(int64 ms)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 (long) ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

static void
gen_report_out_of_range(int64 now)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("current time is outside the range of snowflake ids"),
			 errdetail("The clock reads %s; ids can be issued from %s to %s.",
					   SnowflakeFormatMs(now),
					   SnowflakeFormatMs(snowflake_layout.epoch_ms),
					   SnowflakeFormatMs(SnowflakeLastMs(&snowflake_layout))),
			 errhint("Check the server's clock and \"snowflake.epoch\".")));
}

static void
gen_report_rollback(int64 now, int64 last)
{
	ereport(ERROR,
			(errcode(ERRCODE_SNOWFLAKE_CLOCK_ROLLBACK),
			 errmsg("clock moved backwards by " INT64_FORMAT " ms", last - now),
			 errdetail("The last id was issued at %s, more than \"snowflake.rollback_tolerance_ms\" (%d ms) after the clock's current time %s.",
					   SnowflakeFormatMs(last),
					   snowflake_rollback_tolerance_ms,
					   SnowflakeFormatMs(now)),
			 errhint("Ids are issued again once the clock passes the time of the last id; check the server's time synchronisation.")));
}

/*
 * Reserve up to count (> 0) consecutive ids, all of one millisecond, and
 * return the first; *reserved says how many.  The ids are first ..
 * first + *reserved - 1: within a millisecond only the sequence differs.
 *
 * This is the algorithm of the design, with the waits moved out of the
 * lock: a backend that must wait releases the lock, waits, and starts over,
 * so other backends are not queued behind its wait.
 */
int64
GeneratorReserve(int32 count, int32 *reserved)
{
	const SnowflakeLayout *layout = &snowflake_layout;
	int32		max_sequence = SnowflakeMaxSequence(layout);
	bool		counted_rollback = false;

	Assert(count > 0);
	gen_require_state();

	for (;;)
	{
		int64		now;
		int64		last;
		int32		first;

		LWLockAcquire(gen->lock, LW_EXCLUSIVE);
		now = GeneratorClockMs();
		last = gen->last_ms;

		if (likely(now > last))
		{
			if (unlikely(!SnowflakeTimeInRange(layout, now)))
			{
				LWLockRelease(gen->lock);
				gen_report_out_of_range(now);
			}
			first = 0;
		}
		else if (now == last && gen->sequence < max_sequence)
			first = gen->sequence + 1;
		else if (now == last)
		{
			/* all ids of this millisecond are issued */
			gen->sequence_waits++;
			LWLockRelease(gen->lock);
			gen_wait_next_ms(last);
			continue;
		}
		else if (last - now > snowflake_rollback_tolerance_ms)
		{
			/* refused; the state stays as it was */
			gen->rollbacks_refused++;
			LWLockRelease(gen->lock);
			gen_report_rollback(now, last);
		}
		else
		{
			if (!counted_rollback)
				gen->rollbacks_waited++;
			counted_rollback = true;
			LWLockRelease(gen->lock);
			gen_sleep_ms(last - now);
			continue;
		}

		*reserved = Min(count, max_sequence - first + 1);
		gen->last_ms = now;
		gen->sequence = first + *reserved - 1;
		gen->ids_issued += *reserved;
		LWLockRelease(gen->lock);

		return SnowflakeCompose(layout, now, snowflake_worker_id, first);
	}
}

void
GeneratorGetStats(SnowflakeStats *stats)
{
	gen_require_state();

	LWLockAcquire(gen->lock, LW_SHARED);
	stats->last_ms = gen->last_ms;
	stats->ids_issued = gen->ids_issued;
	stats->sequence_waits = gen->sequence_waits;
	stats->rollbacks_waited = gen->rollbacks_waited;
	stats->rollbacks_refused = gen->rollbacks_refused;
	stats->started_at = gen->started_at;
	LWLockRelease(gen->lock);
}

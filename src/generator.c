/*-------------------------------------------------------------------------
 *
 * generator.c
 *	  The id generator: its state in shared memory, the locks guarding it,
 *	  the clock, the state machine for clock rollbacks and sequence
 *	  exhaustion, and the high-water mark that keeps ids from repeating
 *	  across restarts and crashes.
 *
 * One generator serves the whole server: every backend and parallel worker
 * draws from the same (last_ms, sequence) pair under one LWLock, so ids are
 * unique and strictly increasing across sessions.  The lock is held only to
 * read the clock and advance the pair; every wait (for the next millisecond
 * when the sequence is exhausted, for the clock to catch up after a small
 * rollback, for the mark to reach the disk) happens with the lock released,
 * and the state is examined again afterwards.
 *
 * Ids are issued only below the durable high-water mark (mark.c), a time
 * some snowflake.mark_interval_ms ahead of the clock.  The backend that
 * first finds the clock in the second half of the reservation writes a new
 * mark, under a second lock that only writers take; issuing goes on
 * meanwhile, and waits for the writer only if the clock reaches the mark
 * before the write is done.  At start-up the mark found on disk becomes the
 * floor of the ids; a clean shutdown records the exact last millisecond.
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

#include "mark.h"
#include "snowflake.h"

/* Why the generator refuses to issue ids, decided when the mark is loaded */
typedef enum GeneratorProblem
{
	PROBLEM_NONE,
	PROBLEM_MARK_INVALID,		/* the file is unreadable or corrupt */
	PROBLEM_EPOCH_LATER,		/* new ids would sort below issued ones */
	PROBLEM_LAYOUT_CHANGED
} GeneratorProblem;

typedef struct GeneratorState
{
	LWLock	   *lock;			/* guards everything below */
	LWLock	   *mark_lock;		/* held by the backend writing the mark */

	/* the generator proper */
	int64		last_ms;		/* Unix ms of the last id issued */
	int32		sequence;		/* sequence of that id */

	/* the high-water mark */
	int64		mark_ms;		/* on disk: ids may be issued below this ms */
	int64		refresh_ms;		/* from this ms on, the mark is extended */
	bool		restarted;		/* last_ms is the mark found at start-up, and
								 * no id was issued since */
	int64		restart_slack_ms;	/* how far that mark was ahead of the
									 * clock when written (crash reserve) */
	GeneratorProblem problem;
	SnowflakeMark loaded;		/* the mark found at start-up */
	char		problem_detail[256];

	/* statistics */
	int64		ids_issued;
	int64		sequence_waits;
	int64		rollbacks_waited;
	int64		rollbacks_refused;
	int64		mark_writes;
	int64		startup_wait_ms;
	TimestampTz started_at;
} GeneratorState;

static GeneratorState *gen = NULL;

void
GeneratorShmemRequest(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(GeneratorState)));
	RequestNamedLWLockTranche("snowflake", 2);
}

int64
GeneratorClockMs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Set up the state from the mark on disk.  Runs in the postmaster (at
 * start-up and after a crash), so nothing here may throw: problems are
 * logged and kept for the calls to report.
 */
static void
gen_load_mark(void)
{
	SnowflakeMark *m = &gen->loaded;
	int64		now = GeneratorClockMs();

	/* With no mark yet, the first call writes one before issuing. */
	gen->last_ms = 0;
	gen->sequence = SnowflakeMaxSequence(&snowflake_layout);
	gen->mark_ms = 0;
	gen->refresh_ms = 0;

	switch (MarkLoad(m, gen->problem_detail, sizeof(gen->problem_detail)))
	{
		case MARK_ABSENT:
			return;
		case MARK_INVALID:
			gen->problem = PROBLEM_MARK_INVALID;
			ereport(WARNING,
					(errmsg("snowflake ids cannot be issued: the high-water mark file \"%s\" is invalid",
							SNOWFLAKE_MARK_FILE),
					 errdetail_internal("%s", gen->problem_detail)));
			return;
		case MARK_LOADED:
			break;
	}

	/*
	 * A data directory copied to another server (a standby made by
	 * pg_basebackup) carries the mark of the worker it was copied from,
	 * which says nothing about this worker's ids.
	 */
	if (m->worker_id != snowflake_worker_id)
	{
		ereport(LOG,
				(errmsg("ignoring the snowflake high-water mark of worker id %d; this server is worker id %d",
						m->worker_id, snowflake_worker_id)));
		return;
	}

	if (m->layout.time_bits != snowflake_layout.time_bits ||
		m->layout.worker_bits != snowflake_layout.worker_bits ||
		m->layout.sequence_bits != snowflake_layout.sequence_bits)
		gen->problem = PROBLEM_LAYOUT_CHANGED;
	else if (snowflake_layout.epoch_ms > m->layout.epoch_ms)
		gen->problem = PROBLEM_EPOCH_LATER;
	if (gen->problem != PROBLEM_NONE)
	{
		ereport(WARNING,
				(errmsg("snowflake ids cannot be issued: the layout or epoch changed since ids were last issued")));
		return;
	}

	/*
	 * Every earlier id lies below the mark: issue from the mark on.  A
	 * clock behind it by more than the tolerance is a rollback, except for
	 * the reserve the mark held ahead of the clock when it was written,
	 * which after a crash is merely waited out.
	 */
	gen->last_ms = m->mark_ms - 1;
	gen->mark_ms = m->mark_ms;
	gen->refresh_ms = m->mark_ms;
	gen->restarted = true;
	gen->restart_slack_ms = Max(0, m->mark_ms - 1 - m->written_ms);
	gen->startup_wait_ms = Max(0, m->mark_ms - now);
}

/* Write the exact last millisecond at a clean shutdown of the postmaster. */
static void
gen_shmem_shutdown(int code, Datum arg)
{
	SnowflakeMark m;

	/* after a crash the state in shared memory cannot be trusted */
	if (code != 0 || gen == NULL || gen->problem != PROBLEM_NONE ||
		gen->mark_writes == 0)
		return;

	m.mark_ms = gen->last_ms + 1;
	m.written_ms = GeneratorClockMs();
	m.clean = true;
	m.worker_id = snowflake_worker_id;
	m.layout = snowflake_layout;
	(void) MarkWrite(&m, LOG);
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
		LWLockPadded *locks = GetNamedLWLockTranche("snowflake");

		memset(gen, 0, sizeof(GeneratorState));
		gen->lock = &locks[0].lock;
		gen->mark_lock = &locks[1].lock;
		gen->started_at = GetCurrentTimestamp();
		gen_load_mark();
	}
	LWLockRelease(AddinShmemInitLock);

	if (!IsUnderPostmaster)
		on_shmem_exit(gen_shmem_shutdown, (Datum) 0);
}

void
SnowflakeReportNotPreloaded(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowflake must be loaded via \"shared_preload_libraries\""),
			 errhint("Add \"snowflake\" to \"shared_preload_libraries\" in postgresql.conf and restart the server.")));
	pg_unreachable();
}

static void
gen_require_state(void)
{
	if (unlikely(gen == NULL))
		SnowflakeReportNotPreloaded();
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
 * Sleep, without the lock, while the clock catches up.  The latch wakes us
 * for query cancel and statement_timeout.
 */
static void
gen_sleep_ms(int64 ms)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 (long) ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * Extend the mark to the clock plus snowflake.mark_interval_ms, if the
 * clock has reached the refresh point.  With wait, block until whoever is
 * writing is done and throw on failure; without, leave it to a writer
 * already at work and only warn on failure: the caller's id is issued
 * already, and the next caller tries again.
 */
static void
gen_extend_mark(bool wait)
{
	SnowflakeMark m;
	bool		needed;
	int64		current_mark;

	if (wait)
		LWLockAcquire(gen->mark_lock, LW_EXCLUSIVE);
	else if (!LWLockConditionalAcquire(gen->mark_lock, LW_EXCLUSIVE))
		return;

	m.written_ms = GeneratorClockMs();
	LWLockAcquire(gen->lock, LW_SHARED);
	needed = m.written_ms >= gen->refresh_ms;
	current_mark = gen->mark_ms;
	LWLockRelease(gen->lock);

	if (needed)
	{
		/*
		 * Never below the mark in force: ids may have been issued up to it,
		 * even if this backend's snowflake.mark_interval_ms (reloaded at its
		 * own pace) is shorter than the writer's before.
		 */
		m.mark_ms = Max(m.written_ms + snowflake_mark_interval_ms, current_mark);
		m.clean = false;
		m.worker_id = snowflake_worker_id;
		m.layout = snowflake_layout;
		if (MarkWrite(&m, wait ? ERROR : WARNING))
		{
			LWLockAcquire(gen->lock, LW_EXCLUSIVE);
			gen->mark_ms = m.mark_ms;
			gen->refresh_ms = m.mark_ms - snowflake_mark_interval_ms / 2;
			gen->mark_writes++;
			LWLockRelease(gen->lock);
		}
	}
	LWLockRelease(gen->mark_lock);
}

static void
gen_report_problem(void)
{
	const SnowflakeMark *m = &gen->loaded;

	if (gen->problem == PROBLEM_MARK_INVALID)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("high-water mark file \"%s\" is invalid", SNOWFLAKE_MARK_FILE),
				 errdetail_internal("%s", gen->problem_detail),
				 errhint("Without the mark, ids could repeat ids issued before. Once the clock is past every id this server can have issued (past the file's modification time plus \"snowflake.mark_interval_ms\", and past snowflake_timestamp(max(id)) over its tables), remove the file from the data directory and restart the server.")));
	if (gen->problem == PROBLEM_LAYOUT_CHANGED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the id layout differs from the one the issued ids have"),
				 errdetail("Ids were issued with %d bits of time, %d of worker and %d of sequence, up to %s.",
						   m->layout.time_bits, m->layout.worker_bits,
						   m->layout.sequence_bits, SnowflakeFormatMs(m->mark_ms)),
				 errhint("Go back to that layout, or remove the file \"%s\" from the data directory if new ids may sort below the old ones.",
						 SNOWFLAKE_MARK_FILE)));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("\"snowflake.epoch\" is later than the epoch of the ids already issued"),
			 errdetail("Ids were issued under epoch %s up to %s; under epoch %s new ids would sort below them.",
					   SnowflakeFormatMs(m->layout.epoch_ms),
					   SnowflakeFormatMs(m->mark_ms),
					   SnowflakeFormatMs(snowflake_layout.epoch_ms)),
			 errhint("Set \"snowflake.epoch\" back, or remove the file \"%s\" from the data directory if new ids may sort below the old ones.",
					 SNOWFLAKE_MARK_FILE)));
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
gen_report_rollback(int64 now, int64 last, bool restarted)
{
	if (restarted)
		ereport(ERROR,
				(errcode(ERRCODE_SNOWFLAKE_CLOCK_ROLLBACK),
				 errmsg("clock is " INT64_FORMAT " ms behind the high-water mark", last + 1 - now),
				 errdetail("Before the server started, ids were issued up to %s; the clock reads %s and will pass that at %s of its time.",
						   SnowflakeFormatMs(last),
						   SnowflakeFormatMs(now),
						   SnowflakeFormatMs(last + 1)),
				 errhint("Ids are issued again once the clock passes the mark; check the server's time synchronisation.")));
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
		bool		extend = false;

		LWLockAcquire(gen->lock, LW_EXCLUSIVE);
		now = GeneratorClockMs();
		last = gen->last_ms;

		if (likely(now > last && now < gen->refresh_ms))
			first = 0;			/* a new millisecond, well below the mark */
		else if (likely(now == last && gen->sequence < max_sequence))
			first = gen->sequence + 1;
		else if (gen->problem != PROBLEM_NONE)
		{
			LWLockRelease(gen->lock);
			gen_report_problem();
		}
		else if (now == last)
		{
			/* all ids of this millisecond are issued (or, right after a
			 * start-up, it is the millisecond below the mark) */
			if (!gen->restarted)
				gen->sequence_waits++;
			LWLockRelease(gen->lock);
			gen_wait_next_ms(last);
			continue;
		}
		else if (now < last)
		{
			/*
			 * The clock is behind.  Right after a start-up that found a
			 * crash's mark, the reserve the mark held is waited out too.
			 */
			int64		allowed = snowflake_rollback_tolerance_ms +
				(gen->restarted ? gen->restart_slack_ms : 0);
			bool		restarted = gen->restarted;

			if (last - now > allowed)
			{
				/* refused; the state stays as it was */
				gen->rollbacks_refused++;
				LWLockRelease(gen->lock);
				gen_report_rollback(now, last, restarted);
			}
			if (!counted_rollback && !restarted)
				gen->rollbacks_waited++;
			counted_rollback = true;
			LWLockRelease(gen->lock);
			gen_sleep_ms(last - now);
			continue;
		}
		else if (now >= gen->mark_ms)
		{
			/* ids of this millisecond need a mark on disk first */
			LWLockRelease(gen->lock);
			gen_extend_mark(true);
			continue;
		}
		else
		{
			/* a new millisecond, in the second half of the reservation */
			first = 0;
			extend = true;
		}

		if (unlikely(first == 0 && !SnowflakeTimeInRange(layout, now)))
		{
			LWLockRelease(gen->lock);
			gen_report_out_of_range(now);
		}

		*reserved = Min(count, max_sequence - first + 1);
		gen->last_ms = now;
		gen->sequence = first + *reserved - 1;
		gen->restarted = false;
		gen->ids_issued += *reserved;
		LWLockRelease(gen->lock);

		if (unlikely(extend))
			gen_extend_mark(false);

		return SnowflakeCompose(layout, now, snowflake_worker_id, first);
	}
}

void
GeneratorGetStats(SnowflakeStats *stats)
{
	gen_require_state();

	LWLockAcquire(gen->lock, LW_SHARED);
	stats->last_ms = gen->ids_issued > 0 ? gen->last_ms : 0;
	stats->mark_ms = gen->mark_ms;
	stats->ids_issued = gen->ids_issued;
	stats->sequence_waits = gen->sequence_waits;
	stats->rollbacks_waited = gen->rollbacks_waited;
	stats->rollbacks_refused = gen->rollbacks_refused;
	stats->mark_writes = gen->mark_writes;
	stats->startup_wait_ms = gen->startup_wait_ms;
	stats->started_at = gen->started_at;
	LWLockRelease(gen->lock);
}

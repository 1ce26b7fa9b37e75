/*-------------------------------------------------------------------------
 *
 * generator.c
 *	  The id generator: its state in shared memory, the locks guarding it,
 *	  the clock, the state machine for clock rollbacks, sequence exhaustion
 *	  and borrowed ticks, and the high-water mark that keeps ids from
 *	  repeating across restarts and crashes.
 *
 * A server issues ids for its own worker id and for any logical shards
 * configured in snowflake.shards: each such node value has its own
 * (last_tick, sequence) pair, shared by every backend and parallel worker
 * under an LWLock, so each node's ids are unique and strictly increasing
 * across sessions.  The lock is held only to read the clock and advance the
 * pair; every wait (for the next tick when the sequence is exhausted, for
 * the clock to catch up after a small rollback, for the mark to reach the
 * disk) happens with the lock released, and the state is examined again
 * afterwards.
 *
 * Ids are issued only below the durable high-water mark (mark.c), a time
 * some snowflake.mark_interval_ms ahead of the clock, one for all nodes.
 * The backend that first finds the clock in the second half of the
 * reservation writes a new mark, under a lock that only writers take;
 * issuing goes on meanwhile, and waits for the writer only if the clock
 * reaches the mark before the write is done.  Readers see the mark through
 * atomics: a stale value is an older, lower mark, which is only
 * conservative.  At start-up the mark found on disk becomes the floor of
 * every node; a clean shutdown records the exact last tick.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "compat.h"
#include SNOWFLAKE_WAIT_EVENT_HEADER
#include "mark.h"
#include "snowflake.h"

/* Why the generator refuses to issue ids, decided when the mark is loaded */
typedef enum GeneratorProblem
{
	PROBLEM_NONE,
	PROBLEM_MARK_INVALID,		/* the file is unreadable or corrupt */
	PROBLEM_LAYOUT_CHANGED		/* new ids would sort below issued ones */
} GeneratorProblem;

/* One node value's generator, padded so that neighbours share no cache line */
typedef struct NodeState
{
	LWLock	   *lock;			/* guards everything below */
	int64		last_tick;		/* tick of the last id issued */
	int32		sequence;		/* sequence of that id */
	int64		clock_ms;		/* the clock when last_tick was taken: a
								 * clock behind it has moved backwards */
	bool		restarted;		/* last_tick is below the mark found at
								 * start-up, and no id was issued since */
	/* statistics */
	int64		ids_issued;
	int64		sequence_waits;
	int64		rollbacks_waited;
	int64		rollbacks_refused;
	int64		borrowed_ticks;
} NodeState;

typedef union NodeStatePadded
{
	NodeState	state;
	char		pad[PG_CACHE_LINE_SIZE * 2];
} NodeStatePadded;

typedef struct GeneratorState
{
	LWLock	   *mark_lock;		/* held by the backend writing the mark */

	/* the high-water mark; written under mark_lock, read without */
	pg_atomic_uint64 mark_ms;	/* on disk: ids issued below this ms */
	pg_atomic_uint64 mark_tick; /* first tick starting at or after it */
	pg_atomic_uint64 refresh_tick;	/* from this tick on, extend the mark */
	pg_atomic_uint64 mark_writes;

	int64		last_ms_floor;	/* the mark found at start-up, 0 if none */
	int64		startup_wait_ms;
	GeneratorProblem problem;
	SnowflakeMark loaded;		/* the mark found at start-up */
	char		problem_detail[256];
	TimestampTz started_at;

	/* one per entry of snowflake_nodes, in the same order */
	NodeStatePadded nodes[FLEXIBLE_ARRAY_MEMBER];
} GeneratorState;

static GeneratorState *gen = NULL;

#define GEN_NODE_LOCKS	Min(snowflake_nnodes, 64)

static Size
gen_shmem_size(void)
{
	return add_size(offsetof(GeneratorState, nodes),
					mul_size(snowflake_nnodes, sizeof(NodeStatePadded)));
}

void
GeneratorShmemRequest(void)
{
	RequestAddinShmemSpace(gen_shmem_size());
	RequestNamedLWLockTranche("snowflake", 1);
	RequestNamedLWLockTranche("snowflake_nodes", GEN_NODE_LOCKS);
}

int64
GeneratorClockMs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The first tick that starts at or after unix_ms. */
static int64
gen_first_tick_at(const SnowflakeLayout *layout, int64 unix_ms)
{
	int64		tick = SnowflakeTickOf(layout, unix_ms);

	return SnowflakeTickStart(layout, tick) < unix_ms ? tick + 1 : tick;
}

/*
 * The first tick at or after unix_ms, within 0 .. the layout's last tick + 1:
 * a tick past the end is never below a mark, so no id past the end is
 * issued without the range check of the slow path.
 */
static int64
gen_mark_tick(int64 unix_ms)
{
	int64		tick = gen_first_tick_at(&snowflake_layout, unix_ms);

	return Min(Max(tick, 0), SnowflakeMaxTick(&snowflake_layout) + 1);
}

/* Publish a mark that is on disk. */
static void
gen_set_mark(int64 mark_ms, int64 refresh_ms)
{
	pg_atomic_write_u64(&gen->mark_ms, (uint64) mark_ms);
	pg_atomic_write_u64(&gen->mark_tick, (uint64) gen_mark_tick(mark_ms));
	pg_atomic_write_u64(&gen->refresh_tick, (uint64) gen_mark_tick(refresh_ms));
}

/*
 * Would ids issued from mark_ms on under the configured layout sort above
 * every id the mark's own layout issued below it?
 */
static bool
gen_layout_follows(const SnowflakeMark *m)
{
	const SnowflakeLayout *old = &m->layout;
	const SnowflakeLayout *new = &snowflake_layout;
	int64		old_last = gen_first_tick_at(old, m->mark_ms) - 1;
	int64		new_first = gen_first_tick_at(new, m->mark_ms);

	if (old_last < 0)
		return true;			/* nothing was issued under the old one */
	if (old_last > SnowflakeMaxTick(old) || new_first < 0 ||
		new_first > SnowflakeMaxTick(new))
		return false;
	return SnowflakeCompose(new, new_first, 0, 0) >
		SnowflakeCompose(old, old_last, SnowflakeMaxNode(old),
						 SnowflakeMaxSequence(old));
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
	int64		floor_tick;

	/* With no mark yet, the first call writes one before issuing. */
	gen_set_mark(0, 0);

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

	if (!gen_layout_follows(m))
	{
		gen->problem = PROBLEM_LAYOUT_CHANGED;
		ereport(WARNING,
				(errmsg("snowflake ids cannot be issued: under the configured layout and epoch they would sort below the ids already issued")));
		return;
	}

	/*
	 * Every earlier id lies below the mark: issue from the mark on.  The
	 * clock read written_ms when the mark was written; behind that by more
	 * than the tolerance it has moved backwards, but the reserve the mark
	 * held ahead of it (after a crash) is merely waited out.
	 */
	floor_tick = gen_first_tick_at(&snowflake_layout, m->mark_ms);
	for (int i = 0; i < snowflake_nnodes; i++)
	{
		NodeState  *node = &gen->nodes[i].state;

		node->last_tick = floor_tick - 1;
		node->clock_ms = Min(m->written_ms, m->mark_ms);
		node->restarted = true;
	}
	gen_set_mark(m->mark_ms, m->mark_ms);
	gen->last_ms_floor = m->mark_ms;
	gen->startup_wait_ms = Max(0, m->mark_ms - now);
}

/* Write the exact last tick at a clean shutdown of the postmaster. */
static void
gen_shmem_shutdown(int code, Datum arg)
{
	SnowflakeMark m;
	int64		last_tick = -1;

	/* after a crash the state in shared memory cannot be trusted */
	if (code != 0 || gen == NULL || gen->problem != PROBLEM_NONE ||
		pg_atomic_read_u64(&gen->mark_writes) == 0)
		return;

	for (int i = 0; i < snowflake_nnodes; i++)
		last_tick = Max(last_tick, gen->nodes[i].state.last_tick);
	m.mark_ms = Max(SnowflakeTickStart(&snowflake_layout, last_tick) + 1,
					gen->last_ms_floor);
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
	gen = ShmemInitStruct("snowflake generator", gen_shmem_size(), &found);
	if (!found)
	{
		LWLockPadded *node_locks = GetNamedLWLockTranche("snowflake_nodes");

		memset(gen, 0, gen_shmem_size());
		gen->mark_lock = &(GetNamedLWLockTranche("snowflake"))->lock;
		pg_atomic_init_u64(&gen->mark_ms, 0);
		pg_atomic_init_u64(&gen->mark_tick, 0);
		pg_atomic_init_u64(&gen->refresh_tick, 0);
		pg_atomic_init_u64(&gen->mark_writes, 0);
		gen->started_at = GetCurrentTimestamp();
		for (int i = 0; i < snowflake_nnodes; i++)
		{
			NodeState  *node = &gen->nodes[i].state;

			node->lock = &node_locks[i % GEN_NODE_LOCKS].lock;
			node->last_tick = -1;
			node->sequence = SnowflakeMaxSequence(&snowflake_layout);
		}
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
 * Wait, without the lock, until the clock leaves tick "last".  Sleep for
 * all but the last millisecond of a long tick, then spin: a sleep's wake-up
 * latency would cost a good part of the next tick's ids.
 */
static void
gen_wait_next_tick(int64 last)
{
	const SnowflakeLayout *layout = &snowflake_layout;
	int64		next_start = SnowflakeTickStart(layout, last + 1);
	int64		now;

	while ((now = GeneratorClockMs()) < next_start &&
		   SnowflakeTickOf(layout, now) == last)
	{
		if (next_start - now > 1)
			gen_sleep_ms(next_start - now - 1);
		else
		{
			CHECK_FOR_INTERRUPTS();
			SPIN_DELAY();
		}
	}
}

/*
 * Extend the mark past the clock plus snowflake.mark_interval_ms, and past
 * tick need_tick, if it is due.  With wait, block until whoever is writing
 * is done and throw on failure; without, leave it to a writer already at
 * work and only warn on failure: the caller's id is issued already, and the
 * next caller tries again.
 */
static void
gen_extend_mark(bool wait, int64 need_tick)
{
	const SnowflakeLayout *layout = &snowflake_layout;
	SnowflakeMark m;
	int64		current_mark;

	if (wait)
		LWLockAcquire(gen->mark_lock, LW_EXCLUSIVE);
	else if (!LWLockConditionalAcquire(gen->mark_lock, LW_EXCLUSIVE))
		return;

	m.written_ms = GeneratorClockMs();
	current_mark = (int64) pg_atomic_read_u64(&gen->mark_ms);
	if (Max(SnowflakeTickOf(layout, m.written_ms), need_tick) >=
		(int64) pg_atomic_read_u64(&gen->refresh_tick))
	{
		/*
		 * Never below the mark in force: ids may have been issued up to it,
		 * even if this backend's snowflake.mark_interval_ms (reloaded at its
		 * own pace) is shorter than the writer's before.
		 */
		m.mark_ms = Max(m.written_ms + snowflake_mark_interval_ms,
						SnowflakeTickStart(layout, need_tick + 1));
		m.mark_ms = Max(m.mark_ms, current_mark);
		m.clean = false;
		m.worker_id = snowflake_worker_id;
		m.layout = *layout;
		if (MarkWrite(&m, wait ? ERROR : WARNING))
		{
			gen_set_mark(m.mark_ms, m.mark_ms - snowflake_mark_interval_ms / 2);
			pg_atomic_fetch_add_u64(&gen->mark_writes, 1);
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
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("under the configured layout and epoch, ids would sort below the ids already issued"),
			 errdetail("Ids were issued up to %s with %d bits of time in ticks of %d ms since %s, %d of node and %d of sequence; the configured layout is \"%s\" (%s).",
					   SnowflakeFormatMs(m->mark_ms), m->layout.time_bits,
					   m->layout.tick_ms, SnowflakeFormatMs(m->layout.epoch_ms),
					   m->layout.node_bits, m->layout.sequence_bits,
					   snowflake_layout.name, SnowflakeLayoutSpec(&snowflake_layout)),
			 errhint("Go back to the earlier \"snowflake.layout\" and \"snowflake.epoch\", or remove the file \"%s\" from the data directory if new ids may sort below the old ones.",
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
			 errhint("Check the server's clock, \"snowflake.epoch\" and \"snowflake.layout\".")));
}

static void
gen_report_rollback(int64 now, int64 clock_then, bool restarted)
{
	if (restarted)
		ereport(ERROR,
				(errcode(ERRCODE_SNOWFLAKE_CLOCK_ROLLBACK),
				 errmsg("clock is " INT64_FORMAT " ms behind the high-water mark",
						gen->last_ms_floor - now),
				 errdetail("Before the server started, ids were issued up to %s; the clock reads %s and will pass that at %s of its time.",
						   SnowflakeFormatMs(gen->last_ms_floor - 1),
						   SnowflakeFormatMs(now),
						   SnowflakeFormatMs(gen->last_ms_floor)),
				 errhint("Ids are issued again once the clock passes the mark; check the server's time synchronisation.")));
	ereport(ERROR,
			(errcode(ERRCODE_SNOWFLAKE_CLOCK_ROLLBACK),
			 errmsg("clock moved backwards by " INT64_FORMAT " ms", clock_then - now),
			 errdetail("The clock read %s when ids were last issued, more than \"snowflake.rollback_tolerance_ms\" (%d ms) after its current time %s.",
					   SnowflakeFormatMs(clock_then),
					   snowflake_rollback_tolerance_ms,
					   SnowflakeFormatMs(now)),
			 errhint("Ids are issued again once the clock passes the time of the last id; check the server's time synchronisation.")));
}

/* The index of a node value in gen->nodes, or -1. */
static int
gen_node_index(int32 node)
{
	int			low = 0;
	int			high = snowflake_nnodes - 1;

	while (low <= high)
	{
		int			mid = (low + high) / 2;

		if (snowflake_nodes[mid] == node)
			return mid;
		if (snowflake_nodes[mid] < node)
			low = mid + 1;
		else
			high = mid - 1;
	}
	return -1;
}

/*
 * Reserve up to count (> 0) consecutive ids of node node_value (-1: this
 * server's worker id), all of one tick, and return the first; *reserved
 * says how many.  The ids are first .. first + *reserved - 1 when the
 * sequence is the last field; in every layout they increase and only their
 * sequence differs.
 *
 * This is the algorithm of the design, with the waits moved out of the
 * lock: a backend that must wait releases the lock, waits, and starts over,
 * so other backends are not queued behind its wait.
 */
int64
GeneratorReserve(int32 node_value, int32 count, int32 *reserved)
{
	const SnowflakeLayout *layout = &snowflake_layout;
	int32		max_sequence = SnowflakeMaxSequence(layout);
	bool		counted_rollback = false;
	NodeState  *node;

	Assert(count > 0);
	gen_require_state();
	if (node_value < 0)
	{
		node = &gen->nodes[snowflake_worker_index].state;
		node_value = snowflake_worker_id;
	}
	else
	{
		int			index = gen_node_index(node_value);

		if (index < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("this server does not issue ids for shard %d", node_value),
					 errdetail("It issues ids for worker id %d and for the shards in \"snowflake.shards\" (%s).",
							   snowflake_worker_id, snowflake_shards),
					 errhint("Add the shard to \"snowflake.shards\" on one server only, and restart it.")));
		node = &gen->nodes[index].state;
	}

	for (;;)
	{
		int64		now_ms;
		int64		now;
		int64		last;
		int64		tick;
		int32		first;
		bool		extend = false;

		LWLockAcquire(node->lock, LW_EXCLUSIVE);
		now_ms = GeneratorClockMs();
		now = SnowflakeTickOf(layout, now_ms);
		last = node->last_tick;

		if (likely(now > last &&
				   now < (int64) pg_atomic_read_u64(&gen->refresh_tick)))
		{
			/* a new tick, well below the mark */
			tick = now;
			first = 0;
		}
		else if (likely(now == last && node->sequence < max_sequence))
		{
			tick = now;
			first = node->sequence + 1;
		}
		else if (gen->problem != PROBLEM_NONE)
		{
			LWLockRelease(node->lock);
			gen_report_problem();
		}
		else if (now < last && !node->restarted &&
				 SnowflakeTickStart(layout, last) - now_ms <= snowflake_max_borrow_ms &&
				 node->sequence < max_sequence)
		{
			/* the clock is inside a tick borrowed earlier: go on in it */
			tick = last;
			first = node->sequence + 1;
		}
		else if (now <= last &&
				 SnowflakeTickStart(layout, last + 1) - now_ms <= snowflake_max_borrow_ms &&
				 !node->restarted)
		{
			/* sequence exhausted: borrow the next tick instead of waiting */
			tick = last + 1;
			first = 0;
			extend = true;
		}
		else if (now == last)
		{
			/*
			 * All ids of this tick are issued (or, right after a start-up,
			 * it is the tick below the mark).
			 */
			if (!node->restarted)
				node->sequence_waits++;
			LWLockRelease(node->lock);
			gen_wait_next_tick(last);
			continue;
		}
		else if (now < last)
		{
			/*
			 * The last tick lies ahead of the clock: borrowed, or the floor
			 * a restart found, or the clock moved backwards since it read
			 * clock_ms.  Only the last is refused beyond the tolerance;
			 * otherwise wait for the clock to reach the tick.
			 */
			int64		clock_then = node->clock_ms;
			int64		behind = clock_then - now_ms;
			int64		wait = SnowflakeTickStart(layout, node->restarted ? last + 1 : last) - now_ms;
			bool		restarted = node->restarted;

			if (now < 0)
			{
				LWLockRelease(node->lock);
				gen_report_out_of_range(now_ms);
			}

			if (behind > snowflake_rollback_tolerance_ms)
			{
				/* refused; the state stays as it was */
				node->rollbacks_refused++;
				LWLockRelease(node->lock);
				gen_report_rollback(now_ms, clock_then, restarted);
			}
			if (!counted_rollback && !restarted && behind > 0)
				node->rollbacks_waited++;
			counted_rollback = true;
			LWLockRelease(node->lock);
			gen_sleep_ms(Max(wait, 1));
			continue;
		}
		else
		{
			/* a new tick, in the second half of the reservation or past it */
			tick = now;
			first = 0;
			extend = true;
		}

		if (unlikely(extend))
		{
			/* a new tick: the fast path's marks never reach past the end */
			if (unlikely(tick < 0 || tick > SnowflakeMaxTick(layout)))
			{
				LWLockRelease(node->lock);
				gen_report_out_of_range(now_ms);
			}
			if (tick >= (int64) pg_atomic_read_u64(&gen->mark_tick))
			{
				/* ids of this tick need a mark on disk first */
				LWLockRelease(node->lock);
				gen_extend_mark(true, tick);
				continue;
			}
		}

		*reserved = Min(count, max_sequence - first + 1);
		if (tick != last)
		{
			node->clock_ms = now_ms;
			if (tick > now)
				node->borrowed_ticks++;
		}
		node->last_tick = tick;
		node->sequence = first + *reserved - 1;
		node->restarted = false;
		node->ids_issued += *reserved;
		LWLockRelease(node->lock);

		if (unlikely(extend))
			gen_extend_mark(false, tick);

		return SnowflakeCompose(layout, tick, node_value, first);
	}
}

void
GeneratorGetStats(SnowflakeStats *stats)
{
	int64		last_tick = -1;

	gen_require_state();

	memset(stats, 0, sizeof(SnowflakeStats));
	for (int i = 0; i < snowflake_nnodes; i++)
	{
		NodeState  *node = &gen->nodes[i].state;

		LWLockAcquire(node->lock, LW_SHARED);
		if (node->ids_issued > 0)
			last_tick = Max(last_tick, node->last_tick);
		stats->ids_issued += node->ids_issued;
		stats->sequence_waits += node->sequence_waits;
		stats->rollbacks_waited += node->rollbacks_waited;
		stats->rollbacks_refused += node->rollbacks_refused;
		stats->borrowed_ticks += node->borrowed_ticks;
		LWLockRelease(node->lock);
	}
	stats->last_ms = last_tick >= 0 ? SnowflakeTickStart(&snowflake_layout, last_tick) : 0;
	stats->mark_ms = (int64) pg_atomic_read_u64(&gen->mark_ms);
	stats->mark_writes = (int64) pg_atomic_read_u64(&gen->mark_writes);
	stats->startup_wait_ms = gen->startup_wait_ms;
	stats->started_at = gen->started_at;
}

/*-------------------------------------------------------------------------
 *
 * generator.c
 *	  The id generator: its state in shared memory, the common path that
 *	  issues ids with one compare-and-swap, the slow path that acts on the
 *	  state machine of decision.c under a lock, the waits, and the
 *	  high-water mark that keeps ids from repeating across restarts and
 *	  crashes.
 *
 * A server issues ids for its own worker id and for any logical shards
 * configured in snowflake.shards.  Each such node value has one 64-bit word
 * in shared memory, "next": the id it would issue next (decision.h).  The
 * common path reads the clock and moves next past its ids with a single
 * compare-and-swap, when the clock has reached next's tick and that tick is
 * well below the mark; a lost race retries.  Everything else (the sequence
 * used up, the clock behind, borrowed ticks, a tick near or past the mark,
 * a problem found at start-up) goes to the slow path: it takes the node's
 * LWLock, reads next again, lets GenDecide choose, moves next with the same
 * compare-and-swap when the choice is to issue, releases the lock, and
 * then acts on the choice (wait, write the mark, refuse, or tell the
 * caller).  Every wait happens with nothing held.
 *
 * Ids are issued only below the durable high-water mark (mark.c), a time
 * some snowflake.mark_interval_ms ahead of the clock, one for all nodes.
 * The mark writer (markwriter.c, a background worker) extends it ahead of the
 * clock while ids are being issued, so the common path never waits for a
 * disk.  A call that gets near the mark wakes the writer; a call that
 * reaches it waits for a write on a condition variable (cancellable), or
 * writes the mark itself when no one else is writing.  Without the writer,
 * the call that first crosses the refresh point writes it, after issuing.
 * At start-up the mark found on disk becomes the floor of every node; a
 * clean shutdown records the exact last tick.
 *
 * With a lease, the worker id's node carries limits the lease client
 * publishes (generator.h): ids are issued only while the lease is valid on
 * the monotonic clock, and below its horizon.  The generator checks them on
 * the slow path and answers GENERATOR_CLOSED or GENERATOR_NEEDS_HORIZON;
 * it never calls the lease client.
 *
 * Statistics cost the common path nothing it does not already do: the ids
 * of a node are those counted when its next left a tick, plus the sequence
 * of next.  Everything else is counted on the slow path.  A reader sums
 * them without stopping the calls, so a count read during a call may lack
 * that call's ids (at most a tick's worth per node).
 *
 * Locks (generator.h has the summary): a node's LWLock guards the
 * slow-path fields of GenNode; retained_lock guards the retained marks;
 * mutex guards the mark writer's latch only.  Locks are taken in the order
 * node, then retained_lock; mutex is never held with another.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "compat.h"
#include SNOWFLAKE_WAIT_EVENT_HEADER
#include SNOWFLAKE_XLOG_RECOVERY_HEADER
#include "clock.h"
#include "common.h"
#include "config.h"
#include "decision.h"
#include "generator.h"
#include "mark.h"

static int	snowflake_rollback_tolerance_ms = GEN_ROLLBACK_TOLERANCE_DEFAULT_MS;
int			snowflake_mark_interval_ms = GEN_MARK_INTERVAL_DEFAULT_MS;
static int	snowflake_max_borrow_ms = 0;

/* Why the generator refuses to issue ids, decided when the mark is loaded */
typedef enum GeneratorProblem
{
	PROBLEM_NONE,
	PROBLEM_MARK_INVALID,		/* the file is unreadable or corrupt */
	PROBLEM_LAYOUT_CHANGED		/* new ids would sort below issued ones */
} GeneratorProblem;

/*
 * next of a node that issues nothing: the worker id while no lease is
 * held.  Never an id (every id is a positive bigint; this word is -1 as
 * one), and its tick lies past every layout's last tick, ahead of every
 * clock, so the common path leaves the node to the slow path.
 */
#define GEN_CLOSED	PG_UINT64_MAX

/* One node value's generator */
typedef struct GenNode
{
	/* read by every call, and written by it: a cache line of their own */
	pg_atomic_uint64 next;		/* the next id (decision.h), or GEN_CLOSED */
	pg_atomic_uint64 ids_before;	/* ids issued in ticks before next's */
	pg_atomic_uint64 fast_limit_tick;	/* with a lease, the common path
										 * issues below this tick only */
	char		hot_end[PG_CACHE_LINE_SIZE - 3 * sizeof(pg_atomic_uint64)];

	/* with a lease: ids are issued below this tick only (the horizon) */
	pg_atomic_uint64 hard_tick;
	/* and while the monotonic clock (us) is below this; else PG_UINT64_MAX */
	pg_atomic_uint64 valid_until_us;

	/* the slow path's, under lock */
	LWLock	   *lock;
	int32		value;			/* the node value, -1 while closed */
	uint64		closed_next;	/* next when it was last closed */
	uint64		slow_next;		/* next as the slow path last set it */
	int64		slow_clock_ms;	/* and the clock it read then */
	uint64		floor;			/* next as start-up (or the end of recovery)
								 * set it */
	bool		has_floor;
	int64		floor_ms;		/* the mark that floor came from */
	int64		ids_reset;		/* ids issued when the counters were reset */
	int64		sequence_waits;
	int64		rollbacks_waited;
	int64		rollbacks_refused;
	int64		borrowed_ticks;
} GenNode;

typedef union GenNodePadded
{
	GenNode		node;
	char		pad[PG_CACHE_LINE_SIZE * 2];
} GenNodePadded;

StaticAssertDecl(sizeof(GenNode) <= sizeof(GenNodePadded),
				 "GenNode outgrew its padding");

typedef struct GeneratorState
{
	/* read by every call: the common path issues in ticks below it */
	pg_atomic_uint64 fast_limit_tick;
	char		fast_end[PG_CACHE_LINE_SIZE - sizeof(pg_atomic_uint64)];

	/* the high-water mark, published once it is on disk */
	pg_atomic_uint64 mark_ms;	/* ids are issued below this Unix ms */
	pg_atomic_uint64 mark_tick; /* first tick starting at or after it */
	pg_atomic_uint64 need_tick; /* the largest tick a call waited to see
								 * below the mark */
	pg_atomic_uint32 writer;	/* pid of the process writing a mark, or 0 */
	pg_atomic_uint32 wanted;	/* a call asks the mark writer for a mark */
	ConditionVariable mark_cv;	/* broadcast when a write ends */
	pg_atomic_uint64 mark_writes;
	pg_atomic_uint64 backend_mark_writes;	/* of those, by calls */
	pg_atomic_uint32 wrote_mark;	/* since start-up (not reset with the
									 * counters) */
	pg_atomic_uint64 mark_waits;

	slock_t		mutex;			/* guards the two fields below */
	Latch	   *writer_latch;	/* the mark writer's, while it runs */
	bool		logged_no_writer;

	/* set once recovery is over and every node's floor raised past it */
	pg_atomic_uint32 recovery_floor_done;

	/* set at start-up, read-only afterwards */
	int64		startup_wait_ms;
	GeneratorProblem problem;
	MarkProblemInfo mark_problem;	/* PROBLEM_MARK_INVALID */
	SnowflakeLayout loaded_layout;	/* PROBLEM_LAYOUT_CHANGED: of the file */
	int64		loaded_mark_ms; /* and its highest mark */
	pg_atomic_uint64 stats_since;	/* start-up, or the last reset */

	/* the worker id of the mark found at start-up, -1 if none */
	int32		mark_worker_node;
	/* the floor recovery set (gen_end_recovery), for nodes opened later */
	int64		recovery_floor_ms;

	/*
	 * Marks of node values this server no longer issues for, kept; under
	 * retained_lock once the server runs (a lease moving to another value
	 * adds one)
	 */
	LWLock	   *retained_lock;
	int			nretained;
	SnowflakeMarkEntry retained[SNOWFLAKE_MARK_MAX_RETAINED];
} GeneratorState;

static GeneratorState *gen = NULL;
static GenNode *gen_nodes = NULL;

#define GEN_NODE_LOCKS	Min(snowflake_nnodes, 64)

/* what the waits show in pg_stat_activity */
typedef enum GenWait
{
	GEN_WAIT_NEXT_TICK,
	GEN_WAIT_CLOCK_CATCH_UP,
	GEN_WAIT_MARK_WRITE
} GenWait;

static uint32
gen_wait_event(GenWait which)
{
	static const char *const names[] = {
		"SnowflakeNextTick", "SnowflakeClockCatchUp", "SnowflakeMarkWrite"
	};
	static uint32 events[lengthof(names)];

	if (events[which] == 0)
		events[which] = SnowflakeWaitEvent(names[which]);
	return events[which];
}

static Size
gen_shmem_size(void)
{
	return add_size(CACHELINEALIGN(sizeof(GeneratorState)),
					mul_size(snowflake_nnodes, sizeof(GenNodePadded)));
}

void
GeneratorShmemRequest(void)
{
	RequestAddinShmemSpace(gen_shmem_size());
	RequestNamedLWLockTranche("snowflake_nodes", GEN_NODE_LOCKS);
	RequestNamedLWLockTranche("snowflake_retained", 1);
}

static inline GenNode *
gen_node(int index)
{
	return &((GenNodePadded *) gen_nodes)[index].node;
}

/* The first tick at or after unix_ms, as a limit (decision.h). */
static inline int64
gen_limit_tick(int64 unix_ms)
{
	return GenLimitTick(&snowflake_layout, unix_ms);
}

/*
 * Publish a mark that is on disk.  The common path stops a margin short of
 * it (GenFastLimitMs), so that at full load the writer extends the mark
 * before any call gets there.
 */
static void
gen_publish_mark(int64 mark_ms, bool open_fast_path)
{
	pg_atomic_write_u64(&gen->mark_ms, (uint64) mark_ms);
	pg_atomic_write_u64(&gen->mark_tick, (uint64) gen_limit_tick(mark_ms));
	pg_write_barrier();
	pg_atomic_write_u64(&gen->fast_limit_tick,
						gen->problem != PROBLEM_NONE || !open_fast_path ? 0 :
						(uint64) gen_limit_tick(GenFastLimitMs(mark_ms, snowflake_mark_interval_ms)));
}

/*
 * The node's ids: those of the ticks before next's, and next's sequence.
 * ids_before first: a call adds to it only after moving next, so next read
 * afterwards is at least that far, and a count read under load can only
 * lack the ids of calls between their compare-and-swap and their add, never
 * count a tick's sequence twice.
 */
static int64
gen_ids_issued(GenNode *node)
{
	int64		before = (int64) pg_atomic_read_u64(&node->ids_before);
	uint64		next;

	pg_read_barrier();
	next = pg_atomic_read_u64(&node->next);
	return before + (next == GEN_CLOSED ? 0 : GenSequenceOf(&snowflake_layout, next));
}

/*
 * Move next from *old to after, having issued count ids: only when next
 * leaves a tick does the count of earlier ticks change, by the sequence it
 * had there.  Returns false if another call moved next first, with *old set
 * to what it left.
 */
static inline bool
gen_advance(GenNode *node, uint64 *old, uint64 after, int64 count)
{
	const SnowflakeLayout *layout = &snowflake_layout;
	int64		counted;

	if (!pg_atomic_compare_exchange_u64(&node->next, old, after))
		return false;
	counted = GenCountedBefore(layout, *old, after, count);
	if (counted != 0)
		pg_atomic_fetch_add_u64(&node->ids_before, counted);
	return true;
}

static int
gen_entry_cmp(const void *a, const void *b)
{
	int32		x = ((const SnowflakeMarkEntry *) a)->node;
	int32		y = ((const SnowflakeMarkEntry *) b)->node;

	return (x > y) - (x < y);
}

/* The index of a shard in snowflake_nodes, or -1. */
static int
gen_node_index(int32 node_value)
{
	int			low = 0;
	int			high = snowflake_worker_index - 1;

	while (low <= high)
	{
		int			mid = (low + high) / 2;

		if (snowflake_nodes[mid] == node_value)
			return mid;
		if (snowflake_nodes[mid] < node_value)
			low = mid + 1;
		else
			high = mid - 1;
	}
	return -1;
}

/*
 * Keep the mark of a node value this server no longer issues for (under
 * retained_lock once the server runs); when full, the oldest mark gives way.
 */
static void
gen_retain(int32 value, int64 mark_ms)
{
	int			k = gen->nretained;

	for (int i = 0; i < gen->nretained; i++)
		if (gen->retained[i].node == value)
		{
			gen->retained[i].mark_ms = Max(gen->retained[i].mark_ms, mark_ms);
			return;
		}
	if (k == SNOWFLAKE_MARK_MAX_RETAINED)
	{
		k = 0;
		for (int j = 1; j < gen->nretained; j++)
			if (gen->retained[j].mark_ms < gen->retained[k].mark_ms)
				k = j;
		if (gen->retained[k].mark_ms >= mark_ms)
			return;
	}
	else
		gen->nretained++;
	gen->retained[k].node = value;
	gen->retained[k].mark_ms = mark_ms;
}

/* Set a node's floor: it issues from the first tick at or after floor_ms. */
static void
gen_set_floor(GenNode *node, int64 floor_ms, int64 clock_then_ms)
{
	uint64		old = pg_atomic_read_u64(&node->next);
	uint64		floor = GenStartOfTick(&snowflake_layout, old, gen_limit_tick(floor_ms));

	while (old < floor && !gen_advance(node, &old, floor, 0))
		;
	if (old >= floor)
		return;					/* it issues above the floor already */
	node->floor = node->slow_next = floor;
	node->has_floor = true;
	node->floor_ms = floor_ms;
	node->slow_clock_ms = clock_then_ms;
}

/* The entry of node value in a mark, or NULL. */
static const SnowflakeMarkEntry *
gen_mark_entry(const SnowflakeMark *m, int32 node_value)
{
	for (int i = 0; i < m->nentries; i++)
		if (m->entries[i].node == node_value || m->entries[i].node == -1)
			return &m->entries[i];
	return NULL;
}

/*
 * Set up the state from the mark on disk.  Runs in the postmaster (at
 * start-up and after a crash), so nothing here may throw: problems are
 * logged and kept for the calls to report.
 */
static void
gen_load_mark(void)
{
	SnowflakeMark m;
	int64		now = ClockNowMs();
	int64		highest = 0;
	bool		worker_covered = false;

	if (!MarkLoad(&m, &gen->mark_problem))
	{
		if (gen->mark_problem.problem == MARK_ABSENT)
			return;
		gen->problem = PROBLEM_MARK_INVALID;
		ereport(WARNING,
				(errmsg("snowflake ids cannot be issued: the high-water mark file \"%s\" is invalid",
						SNOWFLAKE_MARK_FILE),
				 errdetail_internal("%s", MarkDescribeProblem(&gen->mark_problem))));
		return;
	}

	for (int i = 0; i < m.nentries; i++)
		highest = Max(highest, m.entries[i].mark_ms);
	if (!GenLayoutFollows(&m.layout, &snowflake_layout, highest))
	{
		gen->problem = PROBLEM_LAYOUT_CHANGED;
		gen->loaded_layout = m.layout;
		gen->loaded_mark_ms = highest;
		ereport(WARNING,
				(errmsg("snowflake ids cannot be issued: under the configured layout and epoch they would sort below the ids already issued")));
		return;
	}

	/*
	 * Every earlier id of a node lies below its mark: issue from there on.
	 * The clock read written_ms when the mark was written; behind that by
	 * more than the tolerance it has moved backwards, but the reserve the
	 * mark held ahead of it (after a crash) is merely waited out.
	 */
	gen->mark_worker_node = m.worker_node;
	for (int i = 0; i < snowflake_nnodes; i++)
	{
		const SnowflakeMarkEntry *e;

		if (snowflake_nodes[i] < 0)
			continue;			/* the worker id of a lease: when it comes */
		e = gen_mark_entry(&m, snowflake_nodes[i]);
		if (e == NULL)
			continue;
		gen_set_floor(gen_node(i), e->mark_ms, Min(m.written_ms, e->mark_ms));
		gen->startup_wait_ms = Max(gen->startup_wait_ms, e->mark_ms - now);
		if (i == snowflake_worker_index)
			worker_covered = true;
	}
	if (!worker_covered && !ConfigLeasedWorkerId())
		ereport(LOG,
				(errmsg("the snowflake high-water mark has no entry for worker id %d: its ids start from the clock",
						snowflake_worker_id)));

	/* the node values this server no longer issues for keep their marks */
	for (int i = 0; i < m.nentries; i++)
		if (m.entries[i].node >= 0 && gen_node_index(m.entries[i].node) < 0 &&
			m.entries[i].node != snowflake_nodes[snowflake_worker_index])
			gen_retain(m.entries[i].node, m.entries[i].mark_ms);

	/*
	 * Calls take the slow path until a mark is written: that is where they
	 * refuse during recovery, and raise the floors once it is over.
	 */
	gen_publish_mark(highest, false);
}

/*
 * Copy the retained marks into dest (room for SNOWFLAKE_MARK_MAX_RETAINED);
 * returns their count.  The postmaster, at shutdown, and a single-user
 * server have no one to share them with, and the postmaster cannot wait
 * for an LWLock.
 */
static int
gen_copy_retained(SnowflakeMarkEntry *dest)
{
	int			n;

	if (IsUnderPostmaster)
		LWLockAcquire(gen->retained_lock, LW_SHARED);
	n = gen->nretained;
	memcpy(dest, gen->retained, sizeof(SnowflakeMarkEntry) * n);
	if (IsUnderPostmaster)
		LWLockRelease(gen->retained_lock);
	return n;
}

/*
 * The entries of a mark: every open node of this server at node_mark_ms (or
 * each at its own, from mark_of), and the retained ones at theirs,
 * ascending by node.  palloc'd.
 */
static void
gen_mark_entries(SnowflakeMark *m, int64 node_mark_ms, int64 (*mark_of) (int index))
{
	int			n = 0;
	int			kept = 0;
	int32		worker = gen_node(snowflake_worker_index)->value;

	m->worker_node = worker;
	m->entries = palloc(sizeof(SnowflakeMarkEntry) *
						(snowflake_nnodes + SNOWFLAKE_MARK_MAX_RETAINED));
	for (int i = 0; i < snowflake_nnodes; i++)
	{
		int32		value = i == snowflake_worker_index ? worker : snowflake_nodes[i];

		if (value < 0)
			continue;
		m->entries[n].node = value;
		m->entries[n++].mark_ms = mark_of ? mark_of(i) : node_mark_ms;
	}
	n += gen_copy_retained(m->entries + n);

	/* ascending; a value both current and retained keeps the higher mark */
	qsort(m->entries, n, sizeof(SnowflakeMarkEntry), gen_entry_cmp);
	for (int i = 0; i < n; i++)
	{
		if (kept > 0 && m->entries[kept - 1].node == m->entries[i].node)
			m->entries[kept - 1].mark_ms = Max(m->entries[kept - 1].mark_ms,
											   m->entries[i].mark_ms);
		else
			m->entries[kept++] = m->entries[i];
	}
	m->nentries = kept;
}

/* Every id of a next word lies below the start of its tick, or the next. */
static int64
gen_end_of(GenNode *node, uint64 next)
{
	const SnowflakeLayout *layout = &snowflake_layout;

	return Max(node->has_floor ? node->floor_ms : 0,
			   SnowflakeTickStart(layout, GenEndTick(layout, next)));
}

static int64
gen_exact_mark(int index)
{
	GenNode    *node = gen_node(index);
	uint64		next = pg_atomic_read_u64(&node->next);

	return gen_end_of(node, next == GEN_CLOSED ? node->closed_next : next);
}

/* Write the exact last tick of each node at a clean shutdown of the postmaster. */
static void
gen_shmem_shutdown(int code, Datum arg)
{
	SnowflakeMark m;

	/*
	 * After a crash the state in shared memory cannot be trusted; with no
	 * mark written, nothing was issued (a standby never writes one).
	 */
	if (code != 0 || gen == NULL || gen->problem != PROBLEM_NONE ||
		pg_atomic_read_u32(&gen->wrote_mark) == 0)
		return;

	m.written_ms = ClockNowMs();
	m.clean = true;
	m.layout = snowflake_layout;
	gen_mark_entries(&m, 0, gen_exact_mark);
	(void) MarkWrite(&m, LOG);
}

void
GeneratorShmemStartup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	gen = ShmemInitStruct("snowflake generator", gen_shmem_size(), &found);
	gen_nodes = (GenNode *) ((char *) gen + CACHELINEALIGN(sizeof(GeneratorState)));
	if (!found)
	{
		LWLockPadded *node_locks = GetNamedLWLockTranche("snowflake_nodes");

		memset(gen, 0, gen_shmem_size());
		pg_atomic_init_u64(&gen->fast_limit_tick, 0);
		pg_atomic_init_u64(&gen->mark_ms, 0);
		pg_atomic_init_u64(&gen->mark_tick, 0);
		pg_atomic_init_u64(&gen->need_tick, 0);
		pg_atomic_init_u32(&gen->writer, 0);
		pg_atomic_init_u32(&gen->wanted, 0);
		ConditionVariableInit(&gen->mark_cv);
		pg_atomic_init_u64(&gen->mark_writes, 0);
		pg_atomic_init_u64(&gen->backend_mark_writes, 0);
		pg_atomic_init_u32(&gen->wrote_mark, 0);
		pg_atomic_init_u64(&gen->mark_waits, 0);
		SpinLockInit(&gen->mutex);
		gen->retained_lock = &GetNamedLWLockTranche("snowflake_retained")->lock;
		gen->mark_worker_node = -1;
		pg_atomic_init_u64(&gen->stats_since, (uint64) GetCurrentTimestamp());
		for (int i = 0; i < snowflake_nnodes; i++)
		{
			GenNode    *node = gen_node(i);

			/*
			 * Sequence 0 of tick 0: the clock's tick is never below it.  The
			 * worker id of a lease waits for it, closed.
			 */
			node->value = snowflake_nodes[i];
			pg_atomic_init_u64(&node->next, node->value < 0 ? GEN_CLOSED :
							   (uint64) SnowflakeCompose(&snowflake_layout, 0,
														 node->value, 0));
			node->closed_next = (uint64) SnowflakeCompose(&snowflake_layout, 0, 0, 0);
			pg_atomic_init_u64(&node->ids_before, 0);
			pg_atomic_init_u64(&node->fast_limit_tick, PG_INT64_MAX);
			pg_atomic_init_u64(&node->hard_tick, PG_INT64_MAX);
			pg_atomic_init_u64(&node->valid_until_us,
							   node->value < 0 ? 0 : PG_UINT64_MAX);
			node->lock = &node_locks[i % GEN_NODE_LOCKS].lock;
		}
		/* with no mark yet, the first call writes one before issuing */
		gen_load_mark();
	}
	LWLockRelease(AddinShmemInitLock);

	if (!IsUnderPostmaster)
		on_shmem_exit(gen_shmem_shutdown, (Datum) 0);
}

static void
gen_require_state(void)
{
	if (unlikely(gen == NULL))
		SnowflakeReportNotPreloaded();
}

/*
 * Sleep on the latch, nothing held, while the clock catches up.  Query
 * cancel and statement_timeout end the wait.
 */
static void
gen_sleep_ms(int64 ms, GenWait which)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 (long) ms, gen_wait_event(which));
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/*
 * Wait until the clock reads until_ms.  For the next tick, sleep for all but
 * the last millisecond, then spin: a sleep's wake-up latency would cost a
 * good part of the next tick's ids.  A clock that steps back meanwhile sends
 * the caller back to the decision, which knows what to make of it.
 */
static void
gen_wait_until(int64 until_ms, GenWait which)
{
	int64		now;
	int64		started = ClockNowMs();

	while ((now = ClockNowMs()) < until_ms && now >= started)
	{
		/* a second at most: a clock stepped forward ends the wait too */
		if (until_ms - now > 1 || which != GEN_WAIT_NEXT_TICK)
			gen_sleep_ms(Min(Max(until_ms - now - (which == GEN_WAIT_NEXT_TICK ? 1 : 0), 1),
							 1000),
						 which);
		else
		{
			CHECK_FOR_INTERRUPTS();
			SPIN_DELAY();
		}
	}
}

/* Release the writer's role if this process dies holding it. */
static void
gen_writer_exit(int code, Datum arg)
{
	uint32		self = (uint32) MyProcPid;

	if (gen != NULL && pg_atomic_compare_exchange_u32(&gen->writer, &self, 0))
		ConditionVariableBroadcast(&gen->mark_cv);
}

/*
 * Once recovery is over, and before any id is issued or the common path
 * opened: raise every node's floor past what the WAL replayed says the
 * server issued, and say that it is done.  A promoted standby has only the
 * mark of its base backup; the primary it follows committed ids up to its
 * last transaction, whose commit time the standby replayed, and may have
 * borrowed up to snowflake.max_borrow_ms ahead of that.  What the standby
 * never received it cannot know.  Harmless after crash recovery, or with
 * no recovery at all (no transaction replayed).
 */
static void
gen_end_recovery(void)
{
	TimestampTz latest;

	if (likely(pg_atomic_read_u32(&gen->recovery_floor_done) != 0))
		return;
	latest = GetLatestXTime();
	if (latest != 0)
	{
		int64		commit_ms = SnowflakeTimestamptzToMs(latest);
		int64		floor_ms = commit_ms + 1 + snowflake_max_borrow_ms;

		gen->recovery_floor_ms = floor_ms;
		for (int i = 0; i < snowflake_nnodes; i++)
		{
			GenNode    *node = gen_node(i);

			LWLockAcquire(node->lock, LW_EXCLUSIVE);
			gen_set_floor(node, floor_ms, commit_ms);
			LWLockRelease(node->lock);
		}
	}
	pg_atomic_write_u32(&gen->recovery_floor_done, 1);
}

typedef enum GenWriteResult
{
	GEN_WRITE_BUSY,				/* another process is writing */
	GEN_WRITE_FAILED,			/* reported at elevel < ERROR */
	GEN_WRITE_DONE
} GenWriteResult;

/*
 * Write a mark reaching snowflake.mark_interval_ms past the clock and past
 * every tick a call waits for, unless another process is writing one: then
 * return at once.  File errors are reported at elevel; the role of writer
 * is given up in every case, and the waiters woken.  by_call: a call writes
 * it, not the mark writer.
 */
static GenWriteResult
gen_write_mark(int elevel, bool by_call)
{
	static bool exit_callback = false;
	uint32		none = 0;
	volatile GenWriteResult result = GEN_WRITE_FAILED;

	/* a standby issues no ids, and writes no mark */
	if (RecoveryInProgress())
		return GEN_WRITE_FAILED;
	gen_end_recovery();
	if (!pg_atomic_compare_exchange_u32(&gen->writer, &none, (uint32) MyProcPid))
		return GEN_WRITE_BUSY;
	if (!exit_callback)
	{
		before_shmem_exit(gen_writer_exit, (Datum) 0);
		exit_callback = true;
	}

	PG_TRY();
	{
		const SnowflakeLayout *layout = &snowflake_layout;
		SnowflakeMark m;
		int64		need = (int64) pg_atomic_read_u64(&gen->need_tick);
		int64		mark_ms;

		/* never below the mark in force: ids may have been issued up to it */
		m.written_ms = ClockNowMs();
		mark_ms = GenMarkTargetMs(layout, m.written_ms, snowflake_mark_interval_ms, need);
		mark_ms = Max(mark_ms, (int64) pg_atomic_read_u64(&gen->mark_ms));
		m.clean = false;
		m.layout = *layout;
		gen_mark_entries(&m, mark_ms, NULL);
		if (MarkWrite(&m, elevel))
		{
			gen_publish_mark(mark_ms, true);
			pg_atomic_write_u32(&gen->wrote_mark, 1);
			pg_atomic_fetch_add_u64(&gen->mark_writes, 1);
			if (by_call)
				pg_atomic_fetch_add_u64(&gen->backend_mark_writes, 1);
			result = GEN_WRITE_DONE;
		}
		pfree(m.entries);
	}
	PG_FINALLY();
	{
		pg_atomic_write_u32(&gen->writer, 0);
		ConditionVariableBroadcast(&gen->mark_cv);
	}
	PG_END_TRY();
	return result;
}

/* Raise need_tick to tick, for the writer to cover. */
static void
gen_need_tick(int64 tick)
{
	uint64		seen = pg_atomic_read_u64(&gen->need_tick);

	while ((int64) seen < tick &&
		   !pg_atomic_compare_exchange_u64(&gen->need_tick, &seen, (uint64) tick))
		;
}

/*
 * An id was issued in a tick past the refresh point: the mark must be
 * extended soon.  Wake the mark writer; without one, write it here (as a
 * warning on failure: the id is issued already, and the next call tries
 * again).
 */
static void
gen_mark_due(void)
{
	Latch	   *latch;
	bool		log_no_writer;

	SpinLockAcquire(&gen->mutex);
	latch = gen->writer_latch;
	log_no_writer = latch == NULL && !gen->logged_no_writer;
	if (log_no_writer)
		gen->logged_no_writer = true;
	SpinLockRelease(&gen->mutex);

	if (latch != NULL)
	{
		pg_atomic_write_u32(&gen->wanted, 1);
		SetLatch(latch);
		return;
	}
	if (log_no_writer)
		ereport(LOG,
				(errmsg("the snowflake mark writer is not running: backends write the high-water mark themselves"),
				 errhint("Check the server log for why it did not start, such as \"max_worker_processes\" being too low.")));
	(void) gen_write_mark(WARNING, true);
}

/*
 * Wait, nothing held, until tick lies below the mark: for the process
 * writing one, on a condition variable (query cancel and statement_timeout
 * end the wait), or by writing it here when no one is.  A write that fails
 * throws: the call cannot issue its id.
 */
static void
gen_await_mark(int64 tick)
{
	pg_atomic_fetch_add_u64(&gen->mark_waits, 1);
	gen_need_tick(tick);
	ConditionVariablePrepareToSleep(&gen->mark_cv);
	while (tick >= (int64) pg_atomic_read_u64(&gen->mark_tick))
	{
		if (gen_write_mark(ERROR, true) == GEN_WRITE_BUSY)
			(void) ConditionVariableTimedSleep(&gen->mark_cv, 1000,
											   gen_wait_event(GEN_WAIT_MARK_WRITE));
	}
	ConditionVariableCancelSleep();
}

static void
gen_report_problem(void)
{
	const SnowflakeLayout *old = &gen->loaded_layout;

	if (gen->problem == PROBLEM_MARK_INVALID)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("high-water mark file \"%s\" is invalid", SNOWFLAKE_MARK_FILE),
				 errdetail_internal("%s", MarkDescribeProblem(&gen->mark_problem)),
				 errhint("Without the mark, ids could repeat ids issued before. Once the clock is past every id this server can have issued (past the file's modification time plus \"snowflake.mark_interval_ms\", and past snowflake_timestamp(max(id)) over its tables), remove the file from the data directory and restart the server.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("under the configured layout and epoch, ids would sort below the ids already issued"),
			 errdetail("Ids were issued up to %s with %d bits of time in ticks of %d ms since %s, %d of node and %d of sequence; the configured layout is \"%s\" (%s).",
					   SnowflakeFormatMs(gen->loaded_mark_ms), old->time_bits,
					   old->tick_ms, SnowflakeFormatMs(old->epoch_ms),
					   old->node_bits, old->sequence_bits,
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
gen_report_rollback(int64 now, int64 clock_then, int64 floor_ms, bool restarted)
{
	if (restarted)
		ereport(ERROR,
				(errcode(ERRCODE_SNOWFLAKE_CLOCK_ROLLBACK),
				 errmsg("clock is " INT64_FORMAT " ms behind the high-water mark",
						floor_ms - now),
				 errdetail("Ids were issued up to %s before the server started (or, on a promoted standby, by the primary it followed); the clock reads %s and will pass that at %s of its time.",
						   SnowflakeFormatMs(floor_ms - 1),
						   SnowflakeFormatMs(now),
						   SnowflakeFormatMs(floor_ms)),
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

/* The node of a node value (-1: this server's worker id). */
static GenNode *
gen_node_of(int32 node_value)
{
	int			index;

	if (node_value < 0 || (!ConfigLeasedWorkerId() && node_value == snowflake_worker_id))
		return gen_node(snowflake_worker_index);
	index = gen_node_index(node_value);
	if (index < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("this server does not issue ids for shard %d", node_value),
				 ConfigLeasedWorkerId() ?
				 errdetail("It issues ids for the worker id it leases and for the shards in \"snowflake.shards\" (%s).",
						   snowflake_shards) :
				 errdetail("It issues ids for worker id %d and for the shards in \"snowflake.shards\" (%s).",
						   snowflake_worker_id, snowflake_shards),
				 errhint("Add the shard to \"snowflake.shards\" on one server only, and restart it.")));
	return gen_node(index);
}

/*
 * The common path: the clock in next's tick or later, and well below the
 * mark.  Returns false, having changed nothing, when it does not apply.
 */
static inline bool
gen_reserve_fast(GenNode *node, int64 count, uint64 *first, int64 *reserved)
{
	const SnowflakeLayout *layout = &snowflake_layout;
	int64		now = SnowflakeTickOf(layout, ClockNowMs());
	int64		limit = Min((int64) pg_atomic_read_u64(&gen->fast_limit_tick),
							(int64) pg_atomic_read_u64(&node->fast_limit_tick));
	uint64		next = pg_atomic_read_u64(&node->next);

	for (;;)
	{
		int64		next_tick = GenTickOf(layout, next);
		uint64		at;
		int64		n;

		if (now < next_tick || now >= limit)
			return false;
		at = now > next_tick ? GenStartOfTick(layout, next, now) : next;
		n = Min(count, GenRoomAt(layout, at));
		/* on failure next is what another call left: try again from there */
		if (gen_advance(node, &next, GenAfter(layout, at, n), n))
		{
			*first = at;
			*reserved = n;
			return true;
		}
	}
}

/* What the slow path does once it has released the node's lock */
typedef enum GenStep
{
	STEP_ISSUED,				/* ids reserved */
	STEP_RETRY,					/* the common path moved next: decide again */
	STEP_WAIT_TICK,
	STEP_WAIT_CLOCK,
	STEP_WRITE_MARK,			/* wait for a mark past d.tick */
	STEP_CLOSED,				/* no worker id, or its lease lapsed */
	STEP_NEED_HORIZON,
	STEP_PROBLEM,				/* the mark found at start-up forbids ids */
	STEP_REFUSE_ROLLBACK,
	STEP_REFUSE_RANGE
} GenStep;

/* A node's limits from a lease: a closed node, or a validity lapsed */
static inline bool
gen_node_closed(GenNode *node, uint64 next)
{
	uint64		valid_until_us = pg_atomic_read_u64(&node->valid_until_us);

	return next == GEN_CLOSED ||
		(valid_until_us != PG_UINT64_MAX && (uint64) ClockMonotonicUs() >= valid_until_us);
}

/* The situation GenDecide decides on, read under the node's lock. */
static void
gen_situation(GenNode *node, uint64 next, bool may_borrow, GenSituation *s)
{
	const SnowflakeLayout *layout = &snowflake_layout;
	int64		last_tick;

	s->layout = layout;
	s->next = next;
	s->now_ms = ClockNowMs();
	s->restarted = node->has_floor && next == node->floor;

	/*
	 * The clock when the last id's tick was taken: the slow path kept it;
	 * the common path takes only the clock's own tick, so then the tick's
	 * start is a bound.
	 */
	last_tick = GenLastTick(layout, next);
	s->clock_then_ms = next == node->slow_next ? node->slow_clock_ms :
		SnowflakeTickStart(layout, last_tick);
	s->mark_tick = (int64) pg_atomic_read_u64(&gen->mark_tick);
	s->horizon_tick = (int64) pg_atomic_read_u64(&node->hard_tick);
	s->max_borrow_ms = may_borrow ? snowflake_max_borrow_ms : 0;
	s->tolerance_ms = snowflake_rollback_tolerance_ms;
}

/*
 * Under the node's lock: decide, and when the decision is to issue, move
 * next past the ids; count what the decision means.  Nothing here waits,
 * throws or allocates.  *waited_rollback: this call counted a rollback
 * waited out already.
 */
static GenStep
gen_slow_step(GenNode *node, int64 count, bool may_borrow, bool *waited_rollback,
			  GenSituation *s, GenDecision *d, int64 *reserved)
{
	const SnowflakeLayout *layout = &snowflake_layout;
	uint64		next = pg_atomic_read_u64(&node->next);

	if (unlikely(gen->problem != PROBLEM_NONE))
		return STEP_PROBLEM;
	if (gen_node_closed(node, next))
		return STEP_CLOSED;
	gen_situation(node, next, may_borrow, s);
	GenDecide(s, d);

	switch (d->outcome)
	{
		case GEN_ISSUE:
			{
				int64		n = Min(count, GenRoomAt(layout, d->first));
				uint64		after = GenAfter(layout, d->first, n);

				if (!gen_advance(node, &next, after, n))
					return STEP_RETRY;
				node->slow_next = after;
				node->slow_clock_ms = s->now_ms;
				if (d->borrowed && GenSequenceOf(layout, d->first) == 0)
					node->borrowed_ticks++;
				*reserved = n;
				return STEP_ISSUED;
			}
		case GEN_WAIT_TICK:
			if (!s->restarted)
				node->sequence_waits++;
			return STEP_WAIT_TICK;
		case GEN_WAIT_CLOCK:
			/* behind_ms > 0: the clock is behind itself (decision.h) */
			if (!*waited_rollback && !s->restarted && d->behind_ms > 0)
				node->rollbacks_waited++;
			*waited_rollback = true;
			return STEP_WAIT_CLOCK;
		case GEN_NEED_HORIZON:
			return STEP_NEED_HORIZON;
		case GEN_NEED_MARK:
			return STEP_WRITE_MARK;
		case GEN_REFUSE_ROLLBACK:
			node->rollbacks_refused++;	/* the state stays as it was */
			return STEP_REFUSE_ROLLBACK;
		case GEN_REFUSE_RANGE:
			break;
	}
	return STEP_REFUSE_RANGE;
}

/*
 * The slow path: take the node's lock, decide (gen_slow_step), release it,
 * then act on the decision.  Waits start over with a fresh decision.
 */
static int64
gen_reserve_slow(GenNode *node, int64 count, bool may_borrow, const char *caller,
				 int64 *reserved, int64 *until_ms)
{
	bool		waited_rollback = false;

	/*
	 * A standby has the primary's configuration, worker id included: the
	 * ids it would issue are the primary's.  As nextval() does, refuse.
	 */
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute %s during recovery", caller),
				 errhint("Snowflake ids are issued by the primary: call %s there.", caller)));
	gen_end_recovery();

	for (;;)
	{
		GenSituation s;
		GenDecision d;
		GenStep		step;

		LWLockAcquire(node->lock, LW_EXCLUSIVE);
		step = gen_slow_step(node, count, may_borrow, &waited_rollback, &s, &d, reserved);
		LWLockRelease(node->lock);

		switch (step)
		{
			case STEP_ISSUED:
				if (d.tick >= (int64) pg_atomic_read_u64(&gen->fast_limit_tick))
					gen_mark_due();
				return (int64) d.first;
			case STEP_RETRY:
				break;
			case STEP_WAIT_TICK:
				gen_wait_until(d.wait_until_ms, GEN_WAIT_NEXT_TICK);
				break;
			case STEP_WAIT_CLOCK:
				gen_wait_until(d.wait_until_ms, GEN_WAIT_CLOCK_CATCH_UP);
				break;
			case STEP_WRITE_MARK:
				gen_await_mark(d.tick);
				break;
			case STEP_CLOSED:
				return GENERATOR_CLOSED;
			case STEP_NEED_HORIZON:
				*until_ms = SnowflakeTickStart(&snowflake_layout, d.tick + 1);
				return GENERATOR_NEEDS_HORIZON;
			case STEP_PROBLEM:
				gen_report_problem();
				break;			/* not reached */
			case STEP_REFUSE_ROLLBACK:
				gen_report_rollback(s.now_ms, s.clock_then_ms, node->floor_ms, s.restarted);
				break;			/* not reached */
			case STEP_REFUSE_RANGE:
				gen_report_out_of_range(s.now_ms);
				break;			/* not reached */
		}
	}
}

int64
GeneratorReserve(int32 node_value, int64 count, bool may_borrow, const char *caller,
				 int64 *reserved, int64 *until_ms)
{
	GenNode    *node;
	uint64		first;

	Assert(count > 0);
	gen_require_state();
	node = gen_node_of(node_value);
	if (likely(gen_reserve_fast(node, count, &first, reserved)))
		return (int64) first;
	return gen_reserve_slow(node, count, may_borrow, caller, reserved, until_ms);
}

/*
 * One turn of the mark writer (markwriter.c): extend the mark when calls ask
 * for it, or when ids were issued since the last turn (seen holds each
 * node's next as of then) and less than half the reservation is left.  An
 * idle server writes nothing.  Returns how long to sleep before the next
 * turn, in ms: an eighth of the reservation, or all of it after a failed
 * write, so that a broken disk is not retried (and logged) eight times a
 * reservation; calls that reach the mark meanwhile try for themselves.
 */
long
GeneratorMarkWriterTurn(uint64 *seen)
{
	int64		interval = snowflake_mark_interval_ms;
	bool		active = false;

	if (gen->problem != PROBLEM_NONE)
		return 60000;
	for (int i = 0; i < snowflake_nnodes; i++)
	{
		uint64		next = pg_atomic_read_u64(&gen_node(i)->next);

		if (next != seen[i])
			active = true;
		seen[i] = next;
	}
	if ((pg_atomic_exchange_u32(&gen->wanted, 0) != 0 ||
		 (active && (int64) pg_atomic_read_u64(&gen->mark_ms) - ClockNowMs() <= interval / 2)) &&
		gen_write_mark(WARNING, false) == GEN_WRITE_FAILED)
		return (long) interval;
	return (long) Max(interval / 8, 1);
}

/* Each node's next, for the mark writer's first turn, allocated in cxt. */
uint64 *
GeneratorNodeWords(MemoryContext cxt)
{
	uint64	   *words = MemoryContextAlloc(cxt, sizeof(uint64) * snowflake_nnodes);

	for (int i = 0; i < snowflake_nnodes; i++)
		words[i] = pg_atomic_read_u64(&gen_node(i)->next);
	return words;
}

/* The mark writer announces itself, and leaves. */
void
GeneratorSetMarkWriter(Latch *latch)
{
	SpinLockAcquire(&gen->mutex);
	gen->writer_latch = latch;
	if (latch != NULL)
		gen->logged_no_writer = false;
	SpinLockRelease(&gen->mutex);
}

/* Start every counter from zero, now. */
void
GeneratorResetStats(void)
{
	gen_require_state();
	for (int i = 0; i < snowflake_nnodes; i++)
	{
		GenNode    *node = gen_node(i);

		LWLockAcquire(node->lock, LW_EXCLUSIVE);
		node->ids_reset = gen_ids_issued(node);
		node->sequence_waits = node->rollbacks_waited = 0;
		node->rollbacks_refused = node->borrowed_ticks = 0;
		LWLockRelease(node->lock);
	}
	pg_atomic_write_u64(&gen->mark_writes, 0);
	pg_atomic_write_u64(&gen->backend_mark_writes, 0);
	pg_atomic_write_u64(&gen->mark_waits, 0);
	pg_atomic_write_u64(&gen->stats_since, (uint64) GetCurrentTimestamp());
}

/* The mark this server keeps for a node value it issued for before, or 0. */
static int64
gen_local_mark(int32 value)
{
	int64		mark_ms = 0;

	LWLockAcquire(gen->retained_lock, LW_SHARED);
	for (int i = 0; i < gen->nretained; i++)
		if (gen->retained[i].node == value)
			mark_ms = gen->retained[i].mark_ms;
	LWLockRelease(gen->retained_lock);
	return mark_ms;
}

/*
 * The worker id of a lease (lease.c).  Open: issue ids of node value from
 * floor_ms on (raised to what this server's own mark and the end of
 * recovery say), within the lease's limits (GeneratorSetLeaseLimits).
 * clock_then_ms: the clock the floor's holder had (a clock further behind
 * than the tolerance is refused).  Returns the floor used.
 */
int64
GeneratorOpenWorker(int32 value, int64 floor_ms, int64 clock_then_ms,
					int64 valid_until_us, int64 valid_until_ms, int64 horizon_ms)
{
	GenNode    *node = gen_node(snowflake_worker_index);
	uint64		start;

	gen_end_recovery();
	floor_ms = Max(floor_ms, gen_local_mark(value));
	floor_ms = Max(floor_ms, gen->recovery_floor_ms);
	LWLockAcquire(node->lock, LW_EXCLUSIVE);
	Assert(pg_atomic_read_u64(&node->next) == GEN_CLOSED);
	node->value = value;
	GeneratorSetLeaseLimits(valid_until_us, valid_until_ms, horizon_ms);
	start = GenStartOfTick(&snowflake_layout,
						   (uint64) SnowflakeCompose(&snowflake_layout, 0, value, 0),
						   gen_limit_tick(floor_ms));
	node->floor = node->slow_next = start;
	node->has_floor = true;
	node->floor_ms = floor_ms;
	node->slow_clock_ms = Min(clock_then_ms, floor_ms);
	pg_write_barrier();			/* the limits before the word that opens it */
	pg_atomic_write_u64(&node->next, start);
	LWLockRelease(node->lock);
	return floor_ms;
}

/*
 * A lease's limits: ids while the monotonic clock is below valid_until_us,
 * below horizon_ms; the common path stops where validity would end
 * (valid_until_ms, the same on the wall clock), and a margin short of the
 * horizon, so that a renewal moves it before calls get there.
 */
void
GeneratorSetLeaseLimits(int64 valid_until_us, int64 valid_until_ms, int64 horizon_ms)
{
	GenNode    *node = gen_node(snowflake_worker_index);
	int64		fast_until_ms = Min(valid_until_ms,
									GenFastLimitMs(horizon_ms, snowflake_mark_interval_ms));

	pg_atomic_write_u64(&node->valid_until_us, (uint64) valid_until_us);
	pg_atomic_write_u64(&node->hard_tick, (uint64) gen_limit_tick(horizon_ms));
	pg_atomic_write_u64(&node->fast_limit_tick,
						(uint64) Min(gen_limit_tick(fast_until_ms), gen_limit_tick(horizon_ms)));
}

/*
 * Close the worker id: no id is issued under it from now on, by any call.
 * Its value keeps a mark among the retained ones.  Returns the exact end of
 * its ids (every one lies below it), or 0 if it was closed already.
 */
int64
GeneratorCloseWorker(void)
{
	GenNode    *node = gen_node(snowflake_worker_index);
	uint64		old;
	int64		end = 0;

	LWLockAcquire(node->lock, LW_EXCLUSIVE);
	pg_atomic_write_u64(&node->valid_until_us, 0);
	old = pg_atomic_read_u64(&node->next);
	while (old != GEN_CLOSED &&
		   !pg_atomic_compare_exchange_u64(&node->next, &old, GEN_CLOSED))
		;
	if (old != GEN_CLOSED)
	{
		int64		kept_ms;

		pg_atomic_fetch_add_u64(&node->ids_before, GenSequenceOf(&snowflake_layout, old));
		node->closed_next = old;
		end = gen_end_of(node, old);

		/* until the mark is written again, the mark in force covers it */
		kept_ms = Max(end, (int64) pg_atomic_read_u64(&gen->mark_ms));
		LWLockAcquire(gen->retained_lock, LW_EXCLUSIVE);
		gen_retain(node->value, kept_ms);
		LWLockRelease(gen->retained_lock);
		node->value = -1;
		pg_atomic_write_u64(&node->hard_tick, 0);
		pg_atomic_write_u64(&node->fast_limit_tick, 0);
	}
	LWLockRelease(node->lock);
	return end;
}

/* Is the worker id open, and its lease (if any) valid on the monotonic clock? */
bool
GeneratorWorkerValid(void)
{
	GenNode    *node = gen_node(snowflake_worker_index);

	return !gen_node_closed(node, pg_atomic_read_u64(&node->next));
}

/* The worker id of the mark found at start-up, to take its lease back. */
int32
GeneratorMarkWorkerNode(void)
{
	return gen->mark_worker_node;
}

/* The worker id issued for now, -1 if none. */
int32
GeneratorWorkerValue(void)
{
	return pg_atomic_read_u64(&gen_node(snowflake_worker_index)->next) == GEN_CLOSED ?
		-1 : gen_node(snowflake_worker_index)->value;
}

void
GeneratorGetStats(SnowflakeStats *stats)
{
	const SnowflakeLayout *layout = &snowflake_layout;
	int64		end_tick = -1;

	gen_require_state();

	memset(stats, 0, sizeof(SnowflakeStats));
	for (int i = 0; i < snowflake_nnodes; i++)
	{
		GenNode    *node = gen_node(i);
		int64		issued = gen_ids_issued(node);
		uint64		next = pg_atomic_read_u64(&node->next);

		/* the last id lies in next's tick, or in the one before */
		if (next == GEN_CLOSED)
			next = node->closed_next;
		if (issued > 0)
			end_tick = Max(end_tick, GenLastTick(layout, next));
		LWLockAcquire(node->lock, LW_SHARED);
		stats->ids_issued += issued - node->ids_reset;
		stats->sequence_waits += node->sequence_waits;
		stats->rollbacks_waited += node->rollbacks_waited;
		stats->rollbacks_refused += node->rollbacks_refused;
		stats->borrowed_ticks += node->borrowed_ticks;
		LWLockRelease(node->lock);
	}
	stats->last_ms = end_tick >= 0 ? SnowflakeTickStart(layout, end_tick) : 0;
	stats->mark_ms = (int64) pg_atomic_read_u64(&gen->mark_ms);
	stats->mark_writes = (int64) pg_atomic_read_u64(&gen->mark_writes);
	stats->backend_mark_writes = (int64) pg_atomic_read_u64(&gen->backend_mark_writes);
	stats->mark_waits = (int64) pg_atomic_read_u64(&gen->mark_waits);
	stats->startup_wait_ms = Max(gen->startup_wait_ms, 0);
	stats->stats_since = (TimestampTz) pg_atomic_read_u64(&gen->stats_since);
}

/* The generator's settings: SIGHUP tunables, read by the calls. */
void
GeneratorInit(void)
{
	DefineCustomIntVariable("snowflake.rollback_tolerance_ms",
							"Largest backward clock step that is waited out rather than refused.",
							NULL,
							&snowflake_rollback_tolerance_ms,
							GEN_ROLLBACK_TOLERANCE_DEFAULT_MS,
							0,
							GEN_ROLLBACK_TOLERANCE_MAX_MS,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	/*
	 * A second of reserve: after a crash the first id waits at most that
	 * long (about what crash recovery takes anyway), and under full load
	 * the mark is written about twice a second, against thousands of ids a
	 * millisecond.
	 */
	DefineCustomIntVariable("snowflake.mark_interval_ms",
							"How far ahead of the clock the durable high-water mark reserves ids.",
							NULL,
							&snowflake_mark_interval_ms,
							GEN_MARK_INTERVAL_DEFAULT_MS,
							GEN_MARK_INTERVAL_MIN_MS,
							GEN_MARK_INTERVAL_MAX_MS,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("snowflake.max_borrow_ms",
							"How far ahead of the clock ids may be issued when a tick's sequence is exhausted, instead of waiting.",
							"0 waits for the next tick.",
							&snowflake_max_borrow_ms,
							0,
							0,
							GEN_MAX_BORROW_MAX_MS,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}

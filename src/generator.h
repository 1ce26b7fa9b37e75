/*-------------------------------------------------------------------------
 *
 * generator.h
 *	  The id generator: its settings, its state in shared memory, the
 *	  reservation of ids, the high-water mark, and the node API through
 *	  which the lease client opens, limits and closes the worker id.
 *
 * Locking (generator.c holds the details):
 * - each node's "next" word and its counters of issued ids are atomics:
 *   the common path moves next with one compare-and-swap, no lock;
 * - the rest of a node (its value, floor, limits' bookkeeping, slow-path
 *   counters) is under the node's LWLock (tranche "snowflake_nodes");
 * - the marks kept for node values no longer issued for are under one
 *   LWLock (tranche "snowflake_retained");
 * - the mark writer's latch is under a spinlock, held for a few
 *   instructions: nothing that can throw, allocate or call the kernel runs
 *   under it;
 * - the mark in force and the writer's role are atomics; a condition
 *   variable wakes the calls that wait for a mark.
 * Every wait (the next tick, the clock, a mark) happens with nothing held.
 *
 * The generator knows nothing of leases: the lease client publishes a
 * validity deadline, a horizon and a common-path limit into the worker
 * id's node, and the generator enforces them, answering "closed" or "needs
 * the horizon" for the caller to act on.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_GENERATOR_H
#define SNOWFLAKE_GENERATOR_H

#include "datatype/timestamp.h"

#include "layout.h"

/*
 * The generator's settings (generator.c), all SIGHUP.  The mark interval is
 * the one the lease client reads too (a horizon covers a reservation); the
 * coordinator's bound on a horizon, the TTL plus 5 minutes, leaves room for
 * the largest interval and borrow.
 */
#define GEN_ROLLBACK_TOLERANCE_DEFAULT_MS	5
#define GEN_ROLLBACK_TOLERANCE_MAX_MS		10000
#define GEN_MARK_INTERVAL_DEFAULT_MS		1000
#define GEN_MARK_INTERVAL_MIN_MS			10
#define GEN_MARK_INTERVAL_MAX_MS			60000
#define GEN_MAX_BORROW_MAX_MS				60000

extern int	snowflake_mark_interval_ms;

/* Counters and state shown by snowflake_stats() */
typedef struct SnowflakeStats
{
	int64		last_ms;		/* Unix ms of the last id issued, 0 if none */
	int64		mark_ms;		/* high-water mark, 0 if none yet */
	int64		ids_issued;
	int64		sequence_waits; /* waits for the next ms, sequence exhausted */
	int64		rollbacks_waited;	/* calls that waited out a rollback */
	int64		rollbacks_refused;	/* calls refused for a rollback */
	int64		borrowed_ticks; /* ticks taken ahead of the clock */
	int64		mark_writes;	/* high-water marks written */
	int64		backend_mark_writes;	/* of those, written by calls, the
										 * mark writer not keeping up or not
										 * running */
	int64		mark_waits;		/* calls that waited for a mark write */
	int64		startup_wait_ms;	/* how far the mark found at start-up was
									 * ahead of the clock */
	TimestampTz stats_since;	/* start-up, or the last reset */
} SnowflakeStats;

/*
 * What GeneratorReserve answers instead of an id (ids are never negative):
 * the caller waits for a lease (lease.c), then asks again.
 */
typedef enum GeneratorWait
{
	GENERATOR_CLOSED = -1,		/* the worker id is closed, or its lease's
								 * validity lapsed: wait for a lease */
	GENERATOR_NEEDS_HORIZON = -2	/* the ids lie at or past the lease's
									 * horizon (*until_ms): wait for it */
} GeneratorWait;

struct Latch;

extern void GeneratorInit(void);
extern void GeneratorShmemRequest(void);
extern void GeneratorShmemStartup(void);

/*
 * Reserve up to count (> 0) consecutive ids of node node_value (-1: this
 * server's worker id), all of one tick, and return the first; *reserved
 * says how many.  Or return a GeneratorWait (negative), with *until_ms set
 * for GENERATOR_NEEDS_HORIZON.  Errors (a clock rollback, a standby, a bad
 * mark, out of range) are thrown; caller names the SQL function.  Six
 * arguments, so that all travel in registers: this is the common path.
 */
extern int64 GeneratorReserve(int32 node_value, int64 count, bool may_borrow,
							  const char *caller, int64 *reserved, int64 *until_ms);
extern void GeneratorGetStats(SnowflakeStats *stats);
extern void GeneratorResetStats(void);

/* The mark writer (markwriter.c) */
extern long GeneratorMarkWriterTurn(uint64 *seen);
extern uint64 *GeneratorNodeWords(MemoryContext cxt);
extern void GeneratorSetMarkWriter(struct Latch *latch);

/*
 * The worker id's node, for the lease client (lease.c).  Limits: ids are
 * issued while the monotonic clock is below valid_until_us, and below
 * horizon_ms; the common path stops at valid_until_ms (the same deadline on
 * the wall clock) and a margin short of the horizon.
 */
extern int64 GeneratorOpenWorker(int32 value, int64 floor_ms, int64 clock_then_ms,
								 int64 valid_until_us, int64 valid_until_ms,
								 int64 horizon_ms);
extern void GeneratorSetLeaseLimits(int64 valid_until_us, int64 valid_until_ms,
									int64 horizon_ms);
extern int64 GeneratorCloseWorker(void);
extern bool GeneratorWorkerValid(void);
extern int32 GeneratorMarkWorkerNode(void);
extern int32 GeneratorWorkerValue(void);

#endif							/* SNOWFLAKE_GENERATOR_H */

/*-------------------------------------------------------------------------
 *
 * snowflake.h
 *	  Configuration shared by the modules of the snowflake extension, and
 *	  the generator's interface.
 *
 * The module entry (snowflake.c) owns the GUCs and the hooks; the
 * generator (generator.c) owns the shared-memory state and the clock; the
 * SQL-callable functions (functions.c) are thin wrappers over both.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_H
#define SNOWFLAKE_H

#include "datatype/timestamp.h"

#include "compat.h"
#include "layout.h"

/* GUCs (snowflake.c) */
extern int	snowflake_worker_id;
extern int	snowflake_rollback_tolerance_ms;
extern int	snowflake_mark_interval_ms;
extern int	snowflake_max_borrow_ms;
extern char *snowflake_shards;

/*
 * The layout in force ("snowflake.layout", with the epoch of
 * "snowflake.epoch" unless the layout names its own), and the node values
 * this server issues ids for (snowflake.c): snowflake_nnodes of them, its
 * shards ascending, then the worker id at snowflake_worker_index, the last
 * (-1 with leases: its value comes from the lease).
 */
extern SnowflakeLayout snowflake_layout;
extern int *snowflake_nodes;
extern int	snowflake_nnodes;
extern int	snowflake_worker_index;

/* Leases of worker ids (lease.c): on when "snowflake.lease_conninfo" is set */
extern char *snowflake_lease_conninfo;
extern int	snowflake_lease_ttl_ms;
extern char *snowflake_lease_worker_ids;
extern int	SnowflakeLeaseRanges(int **lows, int **highs);
#define SnowflakeLeases() (snowflake_lease_conninfo != NULL && snowflake_lease_conninfo[0] != '\0')

/* SQLSTATE of a refused clock rollback: an error external to PostgreSQL */
#define ERRCODE_SNOWFLAKE_CLOCK_ROLLBACK	ERRCODE_SYSTEM_ERROR

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
										 * worker not keeping up or not
										 * running */
	int64		mark_waits;		/* calls that waited for a mark write */
	int64		startup_wait_ms;	/* how far the mark found at start-up was
									 * ahead of the clock */
	TimestampTz started_at;		/* when the counters started */
} SnowflakeStats;

struct Latch;

/* generator.c */
extern void GeneratorShmemRequest(void);
extern void GeneratorShmemStartup(void);
extern int64 GeneratorReserve(int32 node, int64 count, bool may_borrow,
							   const char *caller, int64 *reserved);
extern void GeneratorGetStats(SnowflakeStats *stats);
extern void GeneratorResetStats(void);
extern int64 GeneratorClockMs(void);
extern long GeneratorMarkWriterTurn(uint64 *seen);
extern void GeneratorNodeWords(uint64 *words);
extern void GeneratorSetMarkWriter(struct Latch *latch);
extern uint32 GeneratorMarkWriterWaitEvent(void);
extern int64 GeneratorOpenWorker(int32 value, int64 floor_ms, int64 clock_then_ms,
								 int64 horizon_ms, int64 fast_until_ms);
extern void GeneratorSetLeaseLimits(int64 horizon_ms, int64 fast_until_ms);
extern int64 GeneratorCloseWorker(void);
extern int64 GeneratorLocalMark(int32 value);
extern int32 GeneratorMarkWorkerNode(void);
extern int32 GeneratorWorkerValue(void);

/* worker.c */
extern void WorkerRegister(void);
extern void WorkerRegisterBackground(const char *name, const char *function);
SNOWFLAKE_NORETURN_BEFORE extern void SnowflakeReportNotPreloaded(void) SNOWFLAKE_NORETURN_AFTER;

#endif							/* SNOWFLAKE_H */

/*-------------------------------------------------------------------------
 *
 * lease.h
 *	  Worker ids from fenced leases: the lease settings, the state of this
 *	  server's lease in shared memory, the background worker that claims
 *	  and renews it on the coordinator, and the waits of calls that find
 *	  the worker id closed or short of a horizon.
 *
 * Locking: the shared state is under one LWLock (tranche
 * "snowflake_lease"), never held across libpq, a wait or a message; the
 * horizon calls wait for is an atomic, and a condition variable wakes them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_LEASE_H
#define SNOWFLAKE_LEASE_H

#include "datatype/timestamp.h"

/* What a server with leases knows of its own, shown by snowflake_stats */
typedef struct LeaseInfo
{
	const char *state;			/* off, starting, held, no free worker id,
								 * unreachable, expired, lost, refused */
	int32		node;			/* the worker id held, -1 if none */
	int64		generation;		/* of the lease held (or last held), 0 if none */
	TimestampTz valid_until;	/* until when it is valid, as this server
								 * sees it; 0 if none */
	int64		horizon_ms;		/* ids are issued below it; 0 if none */
	TimestampTz renewed_at;		/* the last claim or renewal that succeeded */
	char	   *coordinator;	/* host, port and database, palloc'd */
	int64		requests;		/* claims, renewals and releases sent */
} LeaseInfo;

/* The lease settings (lease.c); the SQL-callable layer reads the conninfo */
extern char *snowflake_lease_conninfo;

/* Leases are on when "snowflake.lease_conninfo" is set */
#define LeaseOn() (snowflake_lease_conninfo != NULL && snowflake_lease_conninfo[0] != '\0')

extern void LeaseInit(void);
extern void LeaseShmemRequest(void);
extern void LeaseShmemStartup(void);
extern void LeaseGetInfo(LeaseInfo *info);
extern void LeaseResetStats(void);

/*
 * The generator answered GENERATOR_CLOSED: the worker id is closed, or its
 * lease no longer valid.  Wait (a bounded, cancellable wait) while the
 * first lease is being claimed, and return once one is held; otherwise
 * throw the reason.
 */
extern void LeaseAwaitWorker(const char *caller);

/*
 * The generator answered GENERATOR_NEEDS_HORIZON: an id needs the horizon
 * at or past until_ms.  Ask the lease client for it and wait (bounded,
 * cancellable); return to try again, or throw.
 */
extern void LeaseAwaitHorizon(int64 until_ms, const char *caller);

#endif							/* SNOWFLAKE_LEASE_H */

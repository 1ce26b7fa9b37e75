/*-------------------------------------------------------------------------
 *
 * lease.h
 *	  Worker ids from fenced leases: the state of this server's lease in
 *	  shared memory, the background worker that claims and renews it on the
 *	  coordinator, and what the generator asks of it.
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

extern void LeaseShmemRequest(void);
extern void LeaseShmemStartup(void);
extern void LeaseRegisterWorker(void);
extern void LeaseGetInfo(LeaseInfo *info);
extern void LeaseResetStats(void);

/* Is the lease held still valid, on this server's monotonic clock? */
extern bool LeaseValidNow(void);

/*
 * The worker id is closed, or its lease no longer valid: close it, wait (a
 * bounded, cancellable wait) while the first lease is being claimed, and
 * return once one is held; otherwise throw the reason.
 */
extern void LeaseAwaitWorker(const char *caller);

/*
 * An id needs the horizon at or past until_ms: ask the lease client for it
 * and wait (bounded, cancellable); return to decide again, or throw.
 */
extern void LeaseAwaitHorizon(int64 until_ms, const char *caller);

#endif							/* SNOWFLAKE_LEASE_H */

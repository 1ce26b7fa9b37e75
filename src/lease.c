/*-------------------------------------------------------------------------
 *
 * lease.c
 *	  Worker ids from fenced leases: the lease client, a background worker
 *	  that claims a worker id on the coordinator, renews it and releases
 *	  it; the state of the lease in shared memory; and what calls do when
 *	  no valid lease is held.
 *
 * A lease is a row of the coordinator's snowflake_lease table (see the
 * install script): a worker id, the generation of its holder (raised at
 * every claim: the fencing token), an expiry on the coordinator's clock and
 * a horizon.  The horizon is the fence: this server issues ids of its worker
 * id only below the horizon recorded in the row, and a new holder issues
 * only above it, so two holders of one worker id use disjoint times whatever
 * their clocks and pauses do.  Each claim and renewal records a horizon of
 * the clock plus snowflake.lease_ttl_ms plus snowflake.mark_interval_ms.
 * The TTL only decides when a worker id may move to another server.
 *
 * Validity is judged here on the monotonic clock, from the moment each
 * renewal was sent, less a margin; renewals go out three times per TTL.
 * When validity lapses, or the coordinator says another generation holds
 * the row, the worker id is closed (generator.c) and calls fail until a
 * lease is held again, maybe of another worker id.  At a clean shutdown the
 * worker id is closed and released with the exact end of its ids, so a
 * restart takes it back at once.
 *
 * The client talks to the coordinator with libpq, non-blocking, waiting on
 * its latch and the socket, so that shutdown and reload are never held up
 * by the network.  No lock is held across any of it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>
#include <unistd.h>

#include "access/xlog.h"
#include "libpq-fe.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "compat.h"
#include SNOWFLAKE_WAIT_EVENT_HEADER
#include "lease.h"
#include "snowflake.h"

typedef enum LeaseStatus
{
	LEASE_OFF,					/* "snowflake.lease_conninfo" is not set */
	LEASE_STARTING,				/* no answer from the coordinator yet */
	LEASE_HELD,
	LEASE_NONE_FREE,			/* every worker id of the range is leased */
	LEASE_UNREACHABLE,			/* no connection, or no answer */
	LEASE_EXPIRED,				/* validity lapsed without a renewal */
	LEASE_LOST,					/* another generation holds the row */
	LEASE_REFUSED				/* the coordinator answered with an error */
} LeaseStatus;

static const char *const lease_status_names[] = {
	"off", "starting", "held", "no free worker id", "unreachable", "expired",
	"lost", "refused"
};

typedef struct LeaseShared
{
	slock_t		mutex;			/* guards everything but the atomics */
	LeaseStatus status;
	int32		node;			/* held, or last held (-1 if never) */
	int64		generation;
	int64		horizon_ms;
	TimestampTz valid_until;	/* the monotonic deadline, as wall time */
	TimestampTz renewed_at;
	TimestampTz trouble_since;	/* when the coordinator stopped answering */
	int64		requests;
	char		reason[512];	/* the coordinator's last error */
	char		holder_now[256];	/* LEASE_LOST: who holds it now */
	char		coordinator[256];
	Latch	   *client_latch;

	pg_atomic_uint64 valid_until_us;	/* monotonic us; 0: no lease */
	pg_atomic_uint64 need_horizon_ms;	/* a call waits for this horizon */
	ConditionVariable cv;		/* broadcast when the lease changes */
} LeaseShared;

static LeaseShared *lease = NULL;

/* Validity ends this much before the TTL after a renewal was sent. */
#define LEASE_MARGIN_MS(ttl)	Max((ttl) / 20, 50)
/* A query to the coordinator that takes longer is given up. */
#define LEASE_QUERY_TIMEOUT_MS(ttl)	Min(Max((ttl) / 3, 200), 5000)

PGDLLEXPORT void SnowflakeLeaseClientMain(Datum arg);

static int64
lease_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Copy a message into a fixed buffer, cut at a character boundary. */
static void
lease_copy_text(char *dest, size_t size, const char *text)
{
	int			len = pg_mbcliplen(text, strlen(text), size - 1);

	memcpy(dest, text, len);
	dest[len] = '\0';
}

void
LeaseShmemRequest(void)
{
	RequestAddinShmemSpace(MAXALIGN(sizeof(LeaseShared)));
}

void
LeaseShmemStartup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	lease = ShmemInitStruct("snowflake lease", sizeof(LeaseShared), &found);
	if (!found)
	{
		memset(lease, 0, sizeof(LeaseShared));
		SpinLockInit(&lease->mutex);
		lease->status = SnowflakeLeases() ? LEASE_STARTING : LEASE_OFF;
		lease->node = -1;
		pg_atomic_init_u64(&lease->valid_until_us, 0);
		pg_atomic_init_u64(&lease->need_horizon_ms, 0);
		ConditionVariableInit(&lease->cv);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* A standby claims no lease: the client starts at promotion, and claims one. */
void
LeaseRegisterWorker(void)
{
	if (SnowflakeLeases())
		WorkerRegisterBackground("snowflake lease client", "SnowflakeLeaseClientMain");
}

void
LeaseGetInfo(LeaseInfo *info)
{
	memset(info, 0, sizeof(LeaseInfo));
	if (lease == NULL)
	{
		info->state = lease_status_names[LEASE_OFF];
		info->node = -1;
		info->coordinator = pstrdup("");
		return;
	}
	SpinLockAcquire(&lease->mutex);
	info->state = lease_status_names[lease->status];
	info->node = lease->status == LEASE_HELD ? lease->node : -1;
	info->generation = lease->generation;
	info->valid_until = lease->status == LEASE_HELD ? lease->valid_until : 0;
	info->horizon_ms = lease->horizon_ms;
	info->renewed_at = lease->renewed_at;
	info->requests = lease->requests;
	info->coordinator = pstrdup(lease->coordinator);
	SpinLockRelease(&lease->mutex);
}

void
LeaseResetStats(void)
{
	if (lease == NULL)
		return;
	SpinLockAcquire(&lease->mutex);
	lease->requests = 0;
	SpinLockRelease(&lease->mutex);
}

bool
LeaseValidNow(void)
{
	return lease_mono_us() < (int64) pg_atomic_read_u64(&lease->valid_until_us);
}

/* ---- what calls do ----------------------------------------------------- */

static void
lease_report(const char *caller)
{
	LeaseShared copy;

	SpinLockAcquire(&lease->mutex);
	memcpy(&copy, lease, offsetof(LeaseShared, client_latch));
	SpinLockRelease(&lease->mutex);

#define LEASE_HINT errhint("Calls issue ids again by themselves once this server holds a lease; check the coordinator (%s) and \"snowflake.lease_conninfo\".", copy.coordinator)
	switch (copy.status)
	{
		case LEASE_STARTING:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s has no worker id yet: the first lease has not come from the coordinator", caller),
					 LEASE_HINT));
			break;
		case LEASE_NONE_FREE:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s has no worker id: every worker id of \"snowflake.lease_worker_ids\" is leased to another server", caller),
					 errdetail("The coordinator has no free worker id among %s.",
							   snowflake_lease_worker_ids[0] ? snowflake_lease_worker_ids :
							   psprintf("0-%d", SnowflakeMaxNode(&snowflake_layout))),
					 LEASE_HINT));
			break;
		case LEASE_LOST:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s has no worker id: the lease of worker id %d is now held by %s", caller,
							copy.node, copy.holder_now),
					 errdetail("This server's lease (generation " INT64_FORMAT ") lapsed and another server claimed it.",
							   copy.generation),
					 LEASE_HINT));
			break;
		case LEASE_EXPIRED:
		case LEASE_HELD:		/* its validity just lapsed */
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s has no worker id: the lease of worker id %d expired at %s", caller,
							copy.node, timestamptz_to_str(copy.valid_until)),
					 copy.trouble_since != 0 ?
					 errdetail("The coordinator has not answered since %s: %s",
							   timestamptz_to_str(copy.trouble_since), copy.reason) :
					 errdetail("It was not renewed in time."),
					 LEASE_HINT));
			break;
		case LEASE_UNREACHABLE:
		case LEASE_REFUSED:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s has no worker id: the lease coordinator %s", caller,
							copy.status == LEASE_REFUSED ? "refused the claim" : "is unreachable"),
					 errdetail("Since %s: %s", timestamptz_to_str(copy.trouble_since), copy.reason),
					 LEASE_HINT));
			break;
		case LEASE_OFF:
			break;
	}
	elog(ERROR, "snowflake lease in state %d", (int) copy.status);
}

/* Wait on the lease's condition variable for up to ms, or until it changes. */
static void
lease_wait(int64 ms)
{
	static uint32 event = 0;

	if (event == 0)
		event = SnowflakeWaitEvent("SnowflakeLease");
	(void) ConditionVariableTimedSleep(&lease->cv, (long) Max(ms, 1), event);
}

static LeaseStatus
lease_status(void)
{
	LeaseStatus status;

	SpinLockAcquire(&lease->mutex);
	status = lease->status;
	SpinLockRelease(&lease->mutex);
	return status;
}

void
LeaseAwaitWorker(const char *caller)
{
	int64		deadline = lease_mono_us() + (int64) snowflake_lease_ttl_ms * 1000;

	/*
	 * A lapsed lease issues nothing more, from this call on (the client
	 * closes the worker id when it sees it).
	 */
	ConditionVariablePrepareToSleep(&lease->cv);
	for (;;)
	{
		if (GeneratorWorkerValue() >= 0 && LeaseValidNow())
			break;
		/* at start-up, the first claim is on its way: wait for it, bounded */
		if (lease_status() != LEASE_STARTING || lease_mono_us() >= deadline)
		{
			ConditionVariableCancelSleep();
			lease_report(caller);
		}
		lease_wait((deadline - lease_mono_us()) / 1000);
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();
}

void
LeaseAwaitHorizon(int64 until_ms, const char *caller)
{
	int64		deadline = lease_mono_us() + (int64) snowflake_lease_ttl_ms * 1000 / 3;
	uint64		seen = pg_atomic_read_u64(&lease->need_horizon_ms);
	Latch	   *latch;

	while ((int64) seen < until_ms &&
		   !pg_atomic_compare_exchange_u64(&lease->need_horizon_ms, &seen, (uint64) until_ms))
		;
	SpinLockAcquire(&lease->mutex);
	latch = lease->client_latch;
	SpinLockRelease(&lease->mutex);
	if (latch != NULL)
		SetLatch(latch);

	ConditionVariablePrepareToSleep(&lease->cv);
	for (;;)
	{
		int64		horizon;

		SpinLockAcquire(&lease->mutex);
		horizon = lease->status == LEASE_HELD ? lease->horizon_ms : 0;
		SpinLockRelease(&lease->mutex);
		if (horizon >= until_ms || !LeaseValidNow())
			break;				/* decide again */
		if (lease_mono_us() >= deadline)
		{
			ConditionVariableCancelSleep();
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s cannot issue ids up to %s: the lease's horizon is not that far yet", caller,
							SnowflakeFormatMs(until_ms)),
					 errdetail("Ids are issued only below the horizon recorded on the coordinator, %s; its extension has not come back.",
							   SnowflakeFormatMs(horizon)),
					 errhint("Borrowed ticks far ahead of the clock need the horizon first; check the coordinator.")));
		}
		lease_wait((deadline - lease_mono_us()) / 1000);
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();
}

/* ---- the client ---------------------------------------------------------- */

/* The client's own view of the lease it holds */
typedef struct LeaseHeld
{
	bool		held;
	int32		node;
	int64		generation;
	int64		horizon_ms;
	int64		valid_until_us;
	int64		renew_at_us;	/* when to send the next renewal */
} LeaseHeld;

static PGconn *lease_conn = NULL;
static bool trouble_logged;		/* the current trouble is in the log */
static LeaseHeld held;
static char *lease_holder;		/* this server, for the coordinator */
static char *lease_lows;		/* the range of worker ids, as arrays */
static char *lease_highs;

/*
 * Trouble talking to the coordinator (unreachable, refused) is the state
 * only when there is nothing more to say: a lease still held stays held
 * while renewals fail, and one that expired or was lost stays so; the
 * trouble is kept as the reason.
 */
static void
lease_set_status(LeaseStatus status, const char *reason)
{
	SpinLockAcquire(&lease->mutex);
	if ((status != LEASE_UNREACHABLE && status != LEASE_REFUSED) ||
		(lease->status != LEASE_HELD && lease->status != LEASE_EXPIRED &&
		 lease->status != LEASE_LOST))
		lease->status = status;
	if (reason != NULL)
		lease_copy_text(lease->reason, sizeof(lease->reason), reason);
	if (status == LEASE_HELD)
		lease->trouble_since = 0;
	else if (reason != NULL && lease->trouble_since == 0)
		lease->trouble_since = GetCurrentTimestamp();
	SpinLockRelease(&lease->mutex);
	ConditionVariableBroadcast(&lease->cv);
}

/* Wait for the socket (or only the latch when sock < 0) until deadline. */
static bool
lease_wait_socket(int sock, int events, int64 deadline_us)
{
	static uint32 event = 0;
	int			rc;
	int64		left_ms = (deadline_us - lease_mono_us()) / 1000;

	if (event == 0)
		event = SnowflakeWaitEvent("SnowflakeLeaseCoordinator");
	if (left_ms <= 0)
		return false;
	rc = WaitLatchOrSocket(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH |
						   (sock >= 0 ? events : 0),
						   sock, (long) left_ms, event);
	if (rc & WL_LATCH_SET)
	{
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return !ShutdownRequestPending;
}

static void
lease_disconnect(void)
{
	if (lease_conn != NULL)
		PQfinish(lease_conn);
	lease_conn = NULL;
}

/* Connect, without blocking; false with the reason set on failure. */
static bool
lease_connect(int64 deadline_us)
{
	PostgresPollingStatusType poll = PGRES_POLLING_WRITING;
	const char *keys[] = {"dbname", "fallback_application_name", NULL};
	const char *values[] = {snowflake_lease_conninfo, "snowflake lease client", NULL};

	lease_conn = PQconnectStartParams(keys, values, true);
	if (lease_conn == NULL)
	{
		lease_set_status(LEASE_UNREACHABLE, "out of memory");
		return false;
	}
	while (PQstatus(lease_conn) != CONNECTION_BAD && poll != PGRES_POLLING_OK)
	{
		if (!lease_wait_socket(PQsocket(lease_conn),
							   poll == PGRES_POLLING_READING ? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE,
							   deadline_us))
			break;
		poll = PQconnectPoll(lease_conn);
		if (poll == PGRES_POLLING_FAILED)
			break;
	}
	if (PQstatus(lease_conn) != CONNECTION_OK)
	{
		char	   *reason = pstrdup(PQstatus(lease_conn) == CONNECTION_BAD ?
									 PQerrorMessage(lease_conn) : "the connection timed out");

		lease_disconnect();
		/* libpq's messages end with a newline */
		if (reason[0] != '\0' && reason[strlen(reason) - 1] == '\n')
			reason[strlen(reason) - 1] = '\0';
		lease_set_status(LEASE_UNREACHABLE, reason);
		return false;
	}
	return true;
}

/*
 * Run a query with parameters, without blocking; returns its result (to be
 * PQclear'd), or NULL with the status and reason set.
 */
static PGresult *
lease_query(const char *sql, int nparams, const char *const *params)
{
	int64		deadline = lease_mono_us() +
		(int64) LEASE_QUERY_TIMEOUT_MS(snowflake_lease_ttl_ms) * 1000;
	PGresult   *result = NULL;
	PGresult   *next;
	int			flushed;

	if (lease_conn == NULL && !lease_connect(deadline))
		return NULL;
	SpinLockAcquire(&lease->mutex);
	lease->requests++;
	SpinLockRelease(&lease->mutex);

	if (!PQsendQueryParams(lease_conn, sql, nparams, NULL, params, NULL, NULL, 0))
		goto broken;
	while ((flushed = PQflush(lease_conn)) == 1)
		if (!lease_wait_socket(PQsocket(lease_conn), WL_SOCKET_WRITEABLE, deadline))
			goto broken;
	if (flushed < 0)
		goto broken;
	for (;;)
	{
		while (PQisBusy(lease_conn))
		{
			if (!lease_wait_socket(PQsocket(lease_conn), WL_SOCKET_READABLE, deadline) ||
				!PQconsumeInput(lease_conn))
				goto broken;
		}
		next = PQgetResult(lease_conn);
		if (next == NULL)
			break;
		if (result != NULL)
			PQclear(result);
		result = next;
	}
	if (result != NULL && PQresultStatus(result) == PGRES_TUPLES_OK)
		return result;
	{
		char	   *reason = pstrdup(result != NULL ? PQresultErrorMessage(result) : "no result");

		if (reason[0] != '\0' && reason[strlen(reason) - 1] == '\n')
			reason[strlen(reason) - 1] = '\0';
		if (result != NULL)
			PQclear(result);
		lease_set_status(LEASE_REFUSED, reason);
		return NULL;
	}

broken:
	{
		char	   *reason = pstrdup(PQstatus(lease_conn) == CONNECTION_BAD ?
									 PQerrorMessage(lease_conn) :
									 "the coordinator did not answer in time");

		if (reason[0] != '\0' && reason[strlen(reason) - 1] == '\n')
			reason[strlen(reason) - 1] = '\0';
		if (result != NULL)
			PQclear(result);
		lease_disconnect();
		lease_set_status(LEASE_UNREACHABLE, reason);
		return NULL;
	}
}

/* The horizon to record now: the clock, a TTL and a mark interval ahead. */
static int64
lease_wanted_horizon(void)
{
	return Max(GeneratorClockMs() + snowflake_lease_ttl_ms + snowflake_mark_interval_ms,
			   (int64) pg_atomic_read_u64(&lease->need_horizon_ms));
}

/* Publish the lease held: validity, limits for the calls, what stats show. */
static void
lease_publish(int64 sent_us)
{
	int64		now_us = lease_mono_us();
	int64		valid_ms;

	held.valid_until_us = sent_us +
		(int64) (snowflake_lease_ttl_ms - LEASE_MARGIN_MS(snowflake_lease_ttl_ms)) * 1000;
	held.renew_at_us = sent_us + (int64) snowflake_lease_ttl_ms * 1000 / 3;
	valid_ms = GeneratorClockMs() + (held.valid_until_us - now_us) / 1000;

	pg_atomic_write_u64(&lease->valid_until_us, (uint64) held.valid_until_us);
	SpinLockAcquire(&lease->mutex);
	lease->node = held.node;
	lease->generation = held.generation;
	lease->horizon_ms = held.horizon_ms;
	lease->valid_until = SnowflakeMsToTimestamptz(valid_ms);
	lease->renewed_at = GetCurrentTimestamp();
	SpinLockRelease(&lease->mutex);

	/* the common path stops where validity would end, a quarter short of the horizon */
	GeneratorSetLeaseLimits(held.horizon_ms,
							Min(valid_ms, held.horizon_ms - snowflake_mark_interval_ms / 4));
	lease_set_status(LEASE_HELD, NULL);
}

/* Close the worker id: the lease is gone, or about to be. */
static int64
lease_drop(LeaseStatus status, const char *reason)
{
	int64		end = GeneratorCloseWorker();

	pg_atomic_write_u64(&lease->valid_until_us, 0);
	held.held = false;
	lease_set_status(status, reason);
	return end;
}

/* Claim a worker id; returns whether the coordinator answered. */
static bool
lease_claim(void)
{
	char		prefer[16];
	char		ttl[16];
	char		horizon[32];
	const char *params[6];
	int64		sent_us = lease_mono_us();
	int32		last = held.node >= 0 ? held.node : GeneratorMarkWorkerNode();
	PGresult   *res;

	snprintf(prefer, sizeof(prefer), "%d", last);
	snprintf(ttl, sizeof(ttl), "%d", snowflake_lease_ttl_ms);
	snprintf(horizon, sizeof(horizon), INT64_FORMAT, lease_wanted_horizon());
	params[0] = lease_holder;
	params[1] = lease_lows;
	params[2] = lease_highs;
	params[3] = last >= 0 ? prefer : NULL;
	params[4] = ttl;
	params[5] = horizon;
	res = lease_query("SELECT node, generation, previous_horizon_ms, horizon_ms "
					  "FROM snowflake_lease_claim($1, $2::integer[], $3::integer[], $4::integer, $5::integer, $6::bigint)",
					  6, params);
	if (res == NULL)
		return false;
	if (PQntuples(res) == 0)
	{
		PQclear(res);
		held.renew_at_us = sent_us + (int64) snowflake_lease_ttl_ms * 1000 / 3;
		lease_set_status(LEASE_NONE_FREE, "every worker id of the range is leased");
		return true;
	}
	held.held = true;
	held.node = atoi(PQgetvalue(res, 0, 0));
	held.generation = strtoi64(PQgetvalue(res, 0, 1), NULL, 10);
	held.horizon_ms = strtoi64(PQgetvalue(res, 0, 3), NULL, 10);
	{
		int64		previous = strtoi64(PQgetvalue(res, 0, 2), NULL, 10);
		int64		floor_ms;

		PQclear(res);

		/*
		 * The previous holder issued below previous; its clock was about a
		 * TTL and a mark interval behind that.
		 */
		/* valid before it opens: a call must not find it open and lapsed */
		held.valid_until_us = sent_us +
			(int64) (snowflake_lease_ttl_ms - LEASE_MARGIN_MS(snowflake_lease_ttl_ms)) * 1000;
		pg_atomic_write_u64(&lease->valid_until_us, (uint64) held.valid_until_us);
		floor_ms = GeneratorOpenWorker(held.node, previous,
									   previous - snowflake_lease_ttl_ms - snowflake_mark_interval_ms,
									   held.horizon_ms, held.horizon_ms);
		ereport(LOG,
				(errmsg("snowflake worker id %d leased (generation " INT64_FORMAT "), issuing from %s",
						held.node, held.generation, SnowflakeFormatMs(floor_ms))));
	}
	lease_publish(sent_us);
	return true;
}

/* Renew the lease held; returns whether the coordinator answered. */
static bool
lease_renew(void)
{
	char		node[16];
	char		generation[32];
	char		ttl[16];
	char		horizon[32];
	const char *params[4];
	int64		sent_us = lease_mono_us();
	PGresult   *res;

	snprintf(node, sizeof(node), "%d", held.node);
	snprintf(generation, sizeof(generation), INT64_FORMAT, held.generation);
	snprintf(ttl, sizeof(ttl), "%d", snowflake_lease_ttl_ms);
	snprintf(horizon, sizeof(horizon), INT64_FORMAT, lease_wanted_horizon());
	params[0] = node;
	params[1] = generation;
	params[2] = ttl;
	params[3] = horizon;
	res = lease_query("SELECT renewed, holder, holder_generation, horizon_ms "
					  "FROM snowflake_lease_renew($1::integer, $2::bigint, $3::integer, $4::bigint)",
					  4, params);
	if (res == NULL)
		return false;
	if (PQntuples(res) != 1 || strcmp(PQgetvalue(res, 0, 0), "t") != 0)
	{
		SpinLockAcquire(&lease->mutex);
		lease_copy_text(lease->holder_now, sizeof(lease->holder_now),
						PQntuples(res) == 1 && !PQgetisnull(res, 0, 1) ?
						psprintf("%s (generation %s)", PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2)) :
						"nobody");
		SpinLockRelease(&lease->mutex);
		PQclear(res);
		(void) lease_drop(LEASE_LOST, "another server holds the lease");
		ereport(LOG,
				(errmsg("snowflake worker id %d lost: the coordinator gives its lease to another generation",
						held.node)));
		held.renew_at_us = 0;	/* claim another at once */
		return true;
	}
	held.horizon_ms = strtoi64(PQgetvalue(res, 0, 3), NULL, 10);
	PQclear(res);
	lease_publish(sent_us);
	return true;
}

/* At a clean shutdown: close the worker id, give it back with its exact end. */
static void
lease_release(void)
{
	char		node[16];
	char		generation[32];
	char		horizon[32];
	const char *params[3];
	int64		end;
	PGresult   *res;

	end = lease_drop(LEASE_EXPIRED, NULL);
	snprintf(node, sizeof(node), "%d", held.node);
	snprintf(generation, sizeof(generation), INT64_FORMAT, held.generation);
	snprintf(horizon, sizeof(horizon), INT64_FORMAT, end);
	params[0] = node;
	params[1] = generation;
	params[2] = horizon;
	ShutdownRequestPending = false; /* let the query run, within its timeout */
	res = lease_query("SELECT snowflake_lease_release($1::integer, $2::bigint, $3::bigint)",
					  3, params);
	if (res != NULL)
	{
		ereport(LOG,
				(errmsg("snowflake worker id %d released, its ids ending at %s",
						held.node, SnowflakeFormatMs(end))));
		PQclear(res);
	}
}

/* "host:port/dbname" of the coordinator, without a password. */
static char *
lease_describe_coordinator(void)
{
	PQconninfoOption *options = PQconninfoParse(snowflake_lease_conninfo, NULL);
	const char *host = NULL;
	const char *port = NULL;
	const char *dbname = NULL;
	char	   *text;

	for (PQconninfoOption *o = options; o != NULL && o->keyword != NULL; o++)
	{
		if (o->val == NULL)
			continue;
		if (strcmp(o->keyword, "host") == 0 || (host == NULL && strcmp(o->keyword, "hostaddr") == 0))
			host = o->val;
		else if (strcmp(o->keyword, "port") == 0)
			port = o->val;
		else if (strcmp(o->keyword, "dbname") == 0)
			dbname = o->val;
	}
	text = psprintf("%s:%s/%s", host ? host : "localhost", port ? port : "5432",
					dbname ? dbname : "");
	if (options != NULL)
		PQconninfoFree(options);
	return text;
}

void
SnowflakeLeaseClientMain(Datum arg)
{
	char		hostname[256];
	MemoryContext turn;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	if (gethostname(hostname, sizeof(hostname)) != 0)
		strlcpy(hostname, "?", sizeof(hostname));
	hostname[sizeof(hostname) - 1] = '\0';
	lease_holder = MemoryContextStrdup(TopMemoryContext,
									   psprintf("%llu %s:%d %s",
												(unsigned long long) GetSystemIdentifier(),
												hostname, PostPortNumber,
												cluster_name[0] ? cluster_name : "-"));
	SnowflakeLeaseRangeArrays(&lease_lows, &lease_highs);
	SpinLockAcquire(&lease->mutex);
	lease_copy_text(lease->coordinator, sizeof(lease->coordinator), lease_describe_coordinator());
	lease->client_latch = MyLatch;
	SpinLockRelease(&lease->mutex);

	memset(&held, 0, sizeof(held));
	held.node = -1;
	trouble_logged = false;
	turn = AllocSetContextCreate(TopMemoryContext, "snowflake lease client",
								 ALLOCSET_DEFAULT_SIZES);
	while (!ShutdownRequestPending)
	{
		int64		now_us;
		int64		wake_us;
		MemoryContext old = MemoryContextSwitchTo(turn);

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		/* a lease whose validity lapsed issues nothing more */
		now_us = lease_mono_us();
		if (held.held && now_us >= held.valid_until_us)
		{
			(void) lease_drop(LEASE_EXPIRED, NULL);
			ereport(LOG,
					(errmsg("snowflake worker id %d: its lease expired before it could be renewed",
							held.node)));
		}

		if (now_us >= held.renew_at_us ||
			(held.held && (int64) pg_atomic_read_u64(&lease->need_horizon_ms) > held.horizon_ms))
		{
			bool		answered = held.held ? lease_renew() : lease_claim();

			/* the first failure after an answer is logged; retried soon */
			if (!answered)
			{
				if (!trouble_logged)
				{
					char		reason[sizeof(lease->reason)];

					SpinLockAcquire(&lease->mutex);
					strlcpy(reason, lease->reason, sizeof(reason));
					SpinLockRelease(&lease->mutex);
					ereport(LOG,
							(errmsg("the snowflake lease coordinator did not answer: %s", reason)));
					trouble_logged = true;
				}
				held.renew_at_us = lease_mono_us() +
					(int64) Min(1000, snowflake_lease_ttl_ms / 10) * 1000;
			}
			else
				trouble_logged = false;
		}

		wake_us = held.renew_at_us;
		if (held.held)
			wake_us = Min(wake_us, held.valid_until_us);
		MemoryContextSwitchTo(old);
		MemoryContextReset(turn);
		(void) lease_wait_socket(-1, 0, Max(wake_us, lease_mono_us() + 1000));
	}

	if (held.held)
		lease_release();
	lease_disconnect();
	SpinLockAcquire(&lease->mutex);
	lease->client_latch = NULL;
	SpinLockRelease(&lease->mutex);
	proc_exit(1);
}

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
 * every claim), an expiry on the coordinator's clock and a horizon.  The
 * horizon is the fence: this server issues ids of its worker id only below
 * the horizon recorded in the row, and a new holder issues only above it,
 * so two holders of one worker id use disjoint times whatever their clocks
 * and pauses do.  Each claim and renewal records a horizon of the clock
 * plus snowflake.lease_ttl_ms plus snowflake.mark_interval_ms.  The TTL
 * only decides when a worker id may move to another server.
 *
 * A lease belongs to this server by a secret: 128 random bits drawn when
 * the client starts, sent with every claim, renewal and release, and kept
 * nowhere else (the coordinator keeps a hash).  A claim carrying the
 * secret of a lease the coordinator still holds for us gets that lease
 * back: a claim of ours that committed after we gave up on its answer, or
 * our own lease that lapsed here while a late renewal kept it alive there.
 * Neither locks us out of our worker id for a TTL; we issued nothing under
 * the first, and the local high-water mark of the worker id keeps us above
 * what we issued under the second.
 *
 * Nothing the coordinator answers is believed unchecked: a worker id
 * outside the ranges asked for or the layout, a generation that is not
 * positive, or a horizon short of the one asked for is refused, logged,
 * and issues nothing.  The calls name the extension's schema on the
 * coordinator, looked up with search_path set to pg_catalog at each
 * connection, so no search_path there can redirect them.
 *
 * Validity is judged here on the monotonic clock, from the moment each
 * renewal was sent, less a margin; renewals go out three times per TTL.
 * When validity lapses, or the coordinator no longer knows our secret, the
 * worker id is closed (generator.c) and calls fail until a lease is held
 * again, maybe of another worker id.  At a clean shutdown the worker id is
 * closed and released with the exact end of its ids, so a restart takes it
 * back at once.
 *
 * The client talks to the coordinator with libpq, non-blocking, waiting on
 * its latch and the socket, so that shutdown and reload are never held up
 * by the network; no lock is held across any of it.  Each session on the
 * coordinator runs with a statement_timeout and a lock_timeout shorter than
 * the client's own wait, so that a call ends there before the client gives
 * up on it; a call the client gave up on all the same (a network stall) is
 * terminated on the coordinator by the next session, before its first call.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>
#include <unistd.h>

#include "access/xlog.h"
#include "lib/stringinfo.h"
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
#include "utils/builtins.h"
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
	LEASE_LOST,					/* the coordinator renews it no more */
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
	char		coordinator[256];
	Latch	   *client_latch;

	pg_atomic_uint64 valid_until_us;	/* monotonic us; 0: no lease */
	pg_atomic_uint64 need_horizon_ms;	/* a call waits for this horizon */
	ConditionVariable cv;		/* broadcast when the lease changes */
} LeaseShared;

static LeaseShared *lease = NULL;

/* Validity ends this much before the TTL after a renewal was sent. */
#define LEASE_MARGIN_MS(ttl)	Max((ttl) / 20, 50)

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
	char		coordinator[sizeof(lease->coordinator)];

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
	memcpy(coordinator, lease->coordinator, sizeof(coordinator));
	SpinLockRelease(&lease->mutex);
	info->coordinator = pstrdup(coordinator);
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
					 errmsg("%s has no worker id: the lease of worker id %d is no longer this server's", caller,
							copy.node),
					 errdetail("The coordinator no longer renews this server's lease (generation " INT64_FORMAT "): it lapsed and another server claimed the worker id.",
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

/*
 * A query to the coordinator that takes longer is given up; the
 * coordinator's own timeouts for it are shorter, so that it ends there
 * first, and the lock it may wait for is given up sooner still.
 */
#define LEASE_QUERY_TIMEOUT_MS(ttl)	Min(Max((ttl) / 3, 200), 5000)
#define LEASE_STATEMENT_TIMEOUT_MS(ttl)	(LEASE_QUERY_TIMEOUT_MS(ttl) * 3 / 4)
#define LEASE_LOCK_TIMEOUT_MS(ttl)	(LEASE_QUERY_TIMEOUT_MS(ttl) / 2)

/* A lease's secret: 128 random bits as 32 hexadecimal digits */
#define LEASE_TOKEN_BYTES	16

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

/* A backend of the coordinator, as its pid and start time */
typedef struct LeaseBackend
{
	int32		pid;			/* 0: none */
	int64		started_us;
} LeaseBackend;

static PGconn *lease_conn = NULL;
static int	lease_conn_ttl;		/* the TTL its timeouts were set for */
static char *lease_schema;		/* the extension's schema there, quoted */
static LeaseBackend lease_backend;	/* the coordinator's end of lease_conn */
static LeaseBackend lease_abandoned;	/* one left running by a timeout */
static bool trouble_logged;		/* the current trouble is in the log */
static LeaseHeld held;
static char lease_token[LEASE_TOKEN_BYTES * 2 + 1];
static char *lease_holder;		/* this server, for the coordinator */
static int	lease_nranges;		/* the range of worker ids */
static int *lease_lows;
static int *lease_highs;
static char *lease_lows_text;	/* the same, as array literals */
static char *lease_highs_text;
static char *lease_coordinator_text;	/* host:port/dbname */

/* This client's secret, drawn once */
static void
lease_new_token(void)
{
	uint8		bytes[LEASE_TOKEN_BYTES];

	if (!pg_strong_random(bytes, sizeof(bytes)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random lease token")));
	for (int i = 0; i < LEASE_TOKEN_BYTES; i++)
		snprintf(lease_token + 2 * i, 3, "%02x", bytes[i]);
}

/*
 * Trouble talking to the coordinator (unreachable, refused) is the state
 * only when there is nothing more to say: a lease still held stays held
 * while renewals fail, and one that expired or was lost stays so; the
 * trouble is kept as the reason.
 */
static void
lease_set_status(LeaseStatus status, const char *reason)
{
	TimestampTz now = GetCurrentTimestamp();

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
		lease->trouble_since = now;
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
	lease_backend.pid = 0;
}

/* libpq's message, without its final newline */
static char *
lease_libpq_message(const char *message)
{
	char	   *text = pstrdup(message);
	size_t		len = strlen(text);

	if (len > 0 && text[len - 1] == '\n')
		text[len - 1] = '\0';
	return text;
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
		char	   *reason = PQstatus(lease_conn) == CONNECTION_BAD ?
			lease_libpq_message(PQerrorMessage(lease_conn)) : "the connection timed out";

		lease_disconnect();
		lease_set_status(LEASE_UNREACHABLE, reason);
		return false;
	}
	return true;
}

/*
 * Run one statement with parameters on lease_conn, without blocking, until
 * deadline; returns its rows (to be PQclear'd), or NULL with the status and
 * reason set.  A statement given up on is left to be terminated by the next
 * session.
 */
static PGresult *
lease_exec(const char *sql, int nparams, const char *const *params, int64 deadline)
{
	PGresult   *result = NULL;
	PGresult   *next;
	int			flushed;
	char	   *reason;

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
	reason = lease_libpq_message(result != NULL ? PQresultErrorMessage(result) : "no result");
	if (result != NULL)
		PQclear(result);
	lease_set_status(LEASE_REFUSED, reason);
	return NULL;

broken:
	reason = PQstatus(lease_conn) == CONNECTION_BAD ?
		lease_libpq_message(PQerrorMessage(lease_conn)) :
		"the coordinator did not answer in time";
	if (result != NULL)
		PQclear(result);
	if (PQstatus(lease_conn) != CONNECTION_BAD)
		lease_abandoned = lease_backend;
	lease_disconnect();
	lease_set_status(LEASE_UNREACHABLE, reason);
	return NULL;
}

/* A whole number from min to max written by the coordinator, or false. */
static bool
lease_parse_int(const char *text, int64 min, int64 max, int64 *value)
{
	char	   *end;

	if (text == NULL || text[0] == '\0' || strlen(text) > 20)
		return false;
	errno = 0;
	*value = strtoi64(text, &end, 10);
	return errno == 0 && *end == '\0' && *value >= min && *value <= max;
}

/*
 * A session with the coordinator: connect; pin search_path to pg_catalog
 * and set the timeouts for this TTL; then, in one statement, look up the
 * extension's schema, who we are there, and terminate the backend a call
 * given up on left running, if any.
 */
static bool
lease_session_start(int64 deadline)
{
	char		statement_ms[16];
	char		lock_ms[16];
	char		pid[16];
	char		started[32];
	const char *params[2];
	PGresult   *res;
	int64		value;

	if (!lease_connect(deadline))
		return false;
	lease_conn_ttl = snowflake_lease_ttl_ms;
	snprintf(statement_ms, sizeof(statement_ms), "%d", LEASE_STATEMENT_TIMEOUT_MS(lease_conn_ttl));
	snprintf(lock_ms, sizeof(lock_ms), "%d", LEASE_LOCK_TIMEOUT_MS(lease_conn_ttl));
	params[0] = statement_ms;
	params[1] = lock_ms;
	res = lease_exec("SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false), "
					 "pg_catalog.set_config('statement_timeout', $1, false), "
					 "pg_catalog.set_config('lock_timeout', $2, false)",
					 2, params, deadline);
	if (res == NULL)
	{
		lease_disconnect();		/* no half-set-up session */
		return false;
	}
	PQclear(res);

	/*
	 * (OFFSET 0 keeps the backend's identity checked before anything is
	 * terminated.)  One try: a failure is not repeated at every connection.
	 */
	snprintf(pid, sizeof(pid), "%d", lease_abandoned.pid);
	snprintf(started, sizeof(started), INT64_FORMAT, lease_abandoned.started_us);
	params[0] = lease_abandoned.pid != 0 ? pid : NULL;
	params[1] = lease_abandoned.pid != 0 ? started : NULL;
	lease_abandoned.pid = 0;
	res = lease_exec("SELECT (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
					 "         WHERE e.extname = 'snowflake'), "
					 "       pg_backend_pid(), "
					 "       (SELECT (extract(epoch FROM a.backend_start) * 1000000)::bigint "
					 "          FROM pg_stat_activity a WHERE a.pid = pg_backend_pid()), "
					 "       (SELECT count(pg_terminate_backend(left_running.pid)) "
					 "          FROM (SELECT a.pid FROM pg_stat_activity a "
					 "                 WHERE a.pid = $1::integer "
					 "                   AND (extract(epoch FROM a.backend_start) * 1000000)::bigint = $2::bigint "
					 "                OFFSET 0) left_running)",
					 2, params, deadline);
	if (res == NULL)
	{
		lease_disconnect();
		return false;
	}
	if (PQntuples(res) != 1 || PQnfields(res) != 4 || PQgetisnull(res, 0, 0))
	{
		PQclear(res);
		lease_disconnect();
		lease_set_status(LEASE_REFUSED, "the coordinator's database has no snowflake extension");
		return false;
	}
	if (lease_schema != NULL)
		pfree(lease_schema);
	lease_schema = MemoryContextStrdup(TopMemoryContext, quote_identifier(PQgetvalue(res, 0, 0)));
	lease_backend.pid = lease_parse_int(PQgetvalue(res, 0, 1), 1, PG_INT32_MAX, &value) ? (int32) value : 0;
	if (!lease_parse_int(PQgetvalue(res, 0, 2), PG_INT64_MIN, PG_INT64_MAX, &lease_backend.started_us))
		lease_backend.pid = 0;
	PQclear(res);
	return true;
}

/*
 * Run a lease call, whose SQL names the extension's schema with %s;
 * returns its rows (to be PQclear'd), or NULL with the status and reason
 * set.
 */
static PGresult *
lease_query(const char *sql, int nparams, const char *const *params)
{
	int64		timeout_us = (int64) LEASE_QUERY_TIMEOUT_MS(snowflake_lease_ttl_ms) * 1000;

	/*
	 * The session's timeouts follow the TTL.  Starting a session and the
	 * call each get the whole timeout: on a busy coordinator, a connection
	 * and the call together may take longer than either alone.
	 */
	if (lease_conn != NULL && lease_conn_ttl != snowflake_lease_ttl_ms)
		lease_disconnect();
	if (lease_conn == NULL && !lease_session_start(lease_mono_us() + timeout_us))
		return NULL;
	SpinLockAcquire(&lease->mutex);
	lease->requests++;
	SpinLockRelease(&lease->mutex);
	return lease_exec(psprintf(sql, lease_schema), nparams, params, lease_mono_us() + timeout_us);
}

/*
 * An answer the coordinator should not have given: refuse it, say so in
 * the log, and let the status say why.
 */
static void
lease_refuse_answer(const char *call, const char *problem)
{
	char	   *reason = psprintf("its answer to %s was refused: %s", call, problem);

	ereport(LOG,
			(errmsg("the snowflake lease coordinator %s gave a wrong answer to %s: %s",
					lease_coordinator_text, call, problem),
			 errdetail("No id is issued under it.")));
	lease_set_status(LEASE_REFUSED, reason);
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
	TimestampTz now = GetCurrentTimestamp();

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
	lease->renewed_at = now;
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

/* The worker ids asked for, for messages: "0-99, 200" */
static char *
lease_describe_ranges(void)
{
	StringInfoData text;

	initStringInfo(&text);
	for (int i = 0; i < lease_nranges; i++)
	{
		appendStringInfo(&text, "%s%d", i ? ", " : "", lease_lows[i]);
		if (lease_highs[i] != lease_lows[i])
			appendStringInfo(&text, "-%d", lease_highs[i]);
	}
	return text.data;
}

/* Is node one of the worker ids asked for, and one the layout can hold? */
static bool
lease_node_asked(int64 node)
{
	if (node < 0 || node > SnowflakeMaxNode(&snowflake_layout))
		return false;
	for (int i = 0; i < lease_nranges; i++)
		if (node >= lease_lows[i] && node <= lease_highs[i])
			return true;
	return false;
}

/*
 * Check a claim's answer (one row of node, generation, previous horizon,
 * horizon); returns NULL if it is right, else what is wrong.
 */
static char *
lease_claim_problem(PGresult *res, int64 wanted, int64 *node, int64 *generation,
					int64 *previous, int64 *horizon)
{
	if (PQntuples(res) != 1 || PQnfields(res) != 5)
		return psprintf("%d rows of %d columns, not one row of five", PQntuples(res), PQnfields(res));
	if (!lease_parse_int(PQgetvalue(res, 0, 0), PG_INT32_MIN, PG_INT32_MAX, node) ||
		!lease_node_asked(*node))
		return psprintf("worker id \"%s\" is not among %s (\"snowflake.lease_worker_ids\") or beyond layout \"%s\"",
						PQgetvalue(res, 0, 0), lease_describe_ranges(), snowflake_layout.name);
	if (!lease_parse_int(PQgetvalue(res, 0, 1), 1, PG_INT64_MAX, generation))
		return psprintf("generation \"%s\" is not a positive number", PQgetvalue(res, 0, 1));
	if (!lease_parse_int(PQgetvalue(res, 0, 3), wanted, PG_INT64_MAX, horizon))
		return psprintf("horizon \"%s\" is short of the " INT64_FORMAT " asked for",
						PQgetvalue(res, 0, 3), wanted);
	if (!lease_parse_int(PQgetvalue(res, 0, 2), 0, *horizon, previous))
		return psprintf("previous horizon \"%s\" is not between 0 and the horizon", PQgetvalue(res, 0, 2));
	return NULL;
}

/* Claim a worker id; returns whether the coordinator answered. */
static bool
lease_claim(void)
{
	char		prefer[16];
	char		ttl[16];
	char		horizon[32];
	const char *params[7];
	int64		sent_us = lease_mono_us();
	int64		wanted = lease_wanted_horizon();
	int32		last = held.node >= 0 ? held.node : GeneratorMarkWorkerNode();
	int64		node;
	int64		previous;
	int64		floor_ms;
	char	   *problem;
	PGresult   *res;

	snprintf(prefer, sizeof(prefer), "%d", last);
	snprintf(ttl, sizeof(ttl), "%d", snowflake_lease_ttl_ms);
	snprintf(horizon, sizeof(horizon), INT64_FORMAT, wanted);
	params[0] = lease_holder;
	params[1] = lease_token;
	params[2] = lease_lows_text;
	params[3] = lease_highs_text;
	params[4] = last >= 0 ? prefer : NULL;
	params[5] = ttl;
	params[6] = horizon;
	res = lease_query("SELECT node, generation, previous_horizon_ms, horizon_ms, expires_at "
					  "FROM %s.snowflake_lease_claim($1, $2, $3::integer[], $4::integer[], $5::integer, $6::integer, $7::bigint)",
					  7, params);
	if (res == NULL)
		return false;
	held.renew_at_us = sent_us + (int64) snowflake_lease_ttl_ms * 1000 / 3;
	if (PQntuples(res) == 0 && PQnfields(res) == 5)
	{
		PQclear(res);
		lease_set_status(LEASE_NONE_FREE, "every worker id of the range is leased");
		return true;
	}
	problem = lease_claim_problem(res, wanted, &node, &held.generation, &previous, &held.horizon_ms);
	PQclear(res);
	if (problem != NULL)
	{
		lease_refuse_answer("a claim", problem);
		return true;
	}
	held.held = true;
	held.node = (int32) node;

	/*
	 * The previous holder issued below previous; its clock was about a TTL
	 * and a mark interval behind that.  Valid before it opens: a call must
	 * not find it open and lapsed.
	 */
	held.valid_until_us = sent_us +
		(int64) (snowflake_lease_ttl_ms - LEASE_MARGIN_MS(snowflake_lease_ttl_ms)) * 1000;
	pg_atomic_write_u64(&lease->valid_until_us, (uint64) held.valid_until_us);
	floor_ms = GeneratorOpenWorker(held.node, previous,
								   previous - snowflake_lease_ttl_ms - snowflake_mark_interval_ms,
								   held.horizon_ms, held.horizon_ms);
	ereport(LOG,
			(errmsg("snowflake worker id %d leased (generation " INT64_FORMAT "), issuing from %s",
					held.node, held.generation, SnowflakeFormatMs(floor_ms))));
	lease_publish(sent_us);
	return true;
}

/* Renew the lease held; returns whether the coordinator answered. */
static bool
lease_renew(void)
{
	char		node[16];
	char		ttl[16];
	char		horizon[32];
	const char *params[4];
	int64		sent_us = lease_mono_us();
	int64		wanted = lease_wanted_horizon();
	int64		renewed_horizon;
	PGresult   *res;

	snprintf(node, sizeof(node), "%d", held.node);
	snprintf(ttl, sizeof(ttl), "%d", snowflake_lease_ttl_ms);
	snprintf(horizon, sizeof(horizon), INT64_FORMAT, wanted);
	params[0] = node;
	params[1] = lease_token;
	params[2] = ttl;
	params[3] = horizon;
	res = lease_query("SELECT renewed, horizon_ms, expires_at "
					  "FROM %s.snowflake_lease_renew($1::integer, $2, $3::integer, $4::bigint)",
					  4, params);
	if (res == NULL)
		return false;
	if (PQntuples(res) != 1 || PQnfields(res) != 3 ||
		(strcmp(PQgetvalue(res, 0, 0), "t") != 0 && strcmp(PQgetvalue(res, 0, 0), "f") != 0))
	{
		PQclear(res);
		/* not renewed: it lapses by itself */
		held.renew_at_us = lease_mono_us() + (int64) Min(1000, snowflake_lease_ttl_ms / 10) * 1000;
		lease_refuse_answer("a renewal", "not one row of renewed, horizon_ms, expires_at");
		return true;
	}
	if (strcmp(PQgetvalue(res, 0, 0), "f") == 0)
	{
		PQclear(res);
		(void) lease_drop(LEASE_LOST, "the coordinator no longer renews this server's lease");
		ereport(LOG,
				(errmsg("snowflake worker id %d lost: the coordinator no longer renews its lease (generation " INT64_FORMAT ")",
						held.node, held.generation)));
		held.renew_at_us = 0;	/* claim another at once */
		return true;
	}
	if (!lease_parse_int(PQgetvalue(res, 0, 1), wanted, PG_INT64_MAX, &renewed_horizon))
	{
		char	   *problem = psprintf("horizon \"%s\" is short of the " INT64_FORMAT " asked for",
									   PQgetvalue(res, 0, 1), wanted);

		PQclear(res);
		held.renew_at_us = lease_mono_us() + (int64) Min(1000, snowflake_lease_ttl_ms / 10) * 1000;
		lease_refuse_answer("a renewal", problem);
		return true;
	}
	PQclear(res);
	held.horizon_ms = renewed_horizon;
	lease_publish(sent_us);
	return true;
}

/* At a clean shutdown: close the worker id, give it back with its exact end. */
static void
lease_release(void)
{
	char		node[16];
	char		end_text[32];
	const char *params[3];
	int64		end;
	PGresult   *res;

	end = lease_drop(LEASE_EXPIRED, NULL);
	snprintf(node, sizeof(node), "%d", held.node);
	snprintf(end_text, sizeof(end_text), INT64_FORMAT, end);
	params[0] = node;
	params[1] = lease_token;
	params[2] = end_text;
	ShutdownRequestPending = false; /* let the query run, within its timeout */
	res = lease_query("SELECT %s.snowflake_lease_release($1::integer, $2, $3::bigint)",
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

/* The worker ids asked for, as the coordinator's two array arguments */
static void
lease_prepare_ranges(void)
{
	StringInfoData l;
	StringInfoData h;

	lease_nranges = SnowflakeLeaseRanges(&lease_lows, &lease_highs);
	initStringInfo(&l);
	initStringInfo(&h);
	for (int i = 0; i < lease_nranges; i++)
	{
		appendStringInfo(&l, "%s%d", i ? "," : "{", lease_lows[i]);
		appendStringInfo(&h, "%s%d", i ? "," : "{", lease_highs[i]);
	}
	appendStringInfoChar(&l, '}');
	appendStringInfoChar(&h, '}');
	lease_lows_text = l.data;
	lease_highs_text = h.data;
}

void
SnowflakeLeaseClientMain(Datum arg)
{
	char		hostname[256];
	MemoryContext turn;
	MemoryContext old;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	if (gethostname(hostname, sizeof(hostname)) != 0)
		strlcpy(hostname, "?", sizeof(hostname));
	hostname[sizeof(hostname) - 1] = '\0';
	old = MemoryContextSwitchTo(TopMemoryContext);
	lease_holder = psprintf("%llu %s:%d %s", (unsigned long long) GetSystemIdentifier(),
							hostname, PostPortNumber, cluster_name[0] ? cluster_name : "-");
	lease_prepare_ranges();
	lease_coordinator_text = lease_describe_coordinator();
	MemoryContextSwitchTo(old);
	SpinLockAcquire(&lease->mutex);
	lease_copy_text(lease->coordinator, sizeof(lease->coordinator), lease_coordinator_text);
	lease->client_latch = MyLatch;
	SpinLockRelease(&lease->mutex);

	memset(&held, 0, sizeof(held));
	held.node = -1;
	lease_new_token();
	trouble_logged = false;
	turn = AllocSetContextCreate(TopMemoryContext, "snowflake lease client",
								 ALLOCSET_DEFAULT_SIZES);
	while (!ShutdownRequestPending)
	{
		int64		now_us;
		int64		wake_us;

		old = MemoryContextSwitchTo(turn);
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

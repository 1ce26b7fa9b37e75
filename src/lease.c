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
 * A lease belongs to this server by a chain of secrets (leasechain.h):
 * each claim and renewal proves a secret and registers the hash of the
 * next one, drawn for it and kept nowhere else, so a secret seen on its
 * way (a log, a packet capture) is spent once its call commits.  Each call
 * offers the last few secrets, so that a call whose answer was lost, or a
 * coordinator that lost its last commits (failover to an asynchronous
 * standby), does not cost the lease.  A claim
 * offering a secret of a lease the coordinator still holds for us gets
 * that lease back: a claim of ours that committed after we gave up on its
 * answer, or our own lease that lapsed here while a late renewal kept it
 * alive there.  Neither locks us out of our worker id for a TTL; we issued
 * nothing under the first, and the local high-water mark of the worker id
 * keeps us above what we issued under the second.
 *
 * Nothing the coordinator answers is believed unchecked: a worker id
 * outside the ranges asked for or the layout, a generation that is not
 * positive, or a horizon short of the one asked for is refused, logged,
 * and issues nothing.  The calls name the extension's schema on the
 * coordinator, looked up with search_path set to pg_catalog at each
 * connection, so no search_path there can redirect them, and cast every
 * argument to its parameter's type, so that no overload another role
 * planted in that schema can take them.
 *
 * Validity is reckoned on the monotonic clock, from the moment each
 * renewal was sent, less a margin; renewals go out three times per TTL.
 * The client publishes the lease's limits (the validity deadline, the
 * horizon, the common path's limit) into the generator's node, and the
 * generator enforces them: a call past one is told so, and the
 * SQL-callable layer (functions.c) waits here (LeaseAwaitWorker,
 * LeaseAwaitHorizon).  When validity lapses, or the coordinator no longer
 * knows our secret, the worker id is closed (generator.c) and calls fail
 * until a lease is held again, maybe of another worker id.  At a clean
 * shutdown the worker id is closed and released with the exact end of its
 * ids, so a restart takes it back at once.
 *
 * The client talks to the coordinator with libpq, non-blocking, waiting on
 * its latch and the socket, so that shutdown and reload are never held up
 * by the network; no lock is held across any of it.  Each call is one
 * transaction on the coordinator, which sets what it needs for itself
 * (SET LOCAL: search_path, a statement_timeout and a lock_timeout shorter
 * than the client's own wait, an idle_in_transaction_session_timeout) and
 * checks the session's logging before the call's secrets are sent, so a
 * transaction-pooling pgbouncer may stand between: a session state of the
 * coordinator's is never relied on.  The client commits only once the
 * call's answer is in: a call it gave up on (a stall, a timeout) never
 * commits, and ends on the coordinator by those timeouts, or as soon as
 * its backend finds the connection gone.
 *
 * Locking: the lease's shared state (LeaseShared) is under one LWLock
 * (tranche "snowflake_lease"): its reason and coordinator are formatted
 * text, copied in and out under it.  Nothing under it calls libpq or
 * waits; messages are formatted and logged after it is released.  The
 * horizon calls wait for is an atomic; a condition variable wakes calls
 * when the lease changes.
 *
 * The lease settings ("snowflake.lease_*") live here, with their checks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
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
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "compat.h"
#include SNOWFLAKE_WAIT_EVENT_HEADER
#include "clock.h"
#include "common.h"
#include "config.h"
#include "generator.h"
#include "lease.h"
#include "leasechain.h"
#include "leaselog.h"

/*
 * The TTL's bounds are also the coordinator's: _snowflake_lease_check()
 * refuses a TTL outside them.
 */
#define LEASE_TTL_DEFAULT_MS	10000
#define LEASE_TTL_MIN_MS		500
#define LEASE_TTL_MAX_MS		600000

char	   *snowflake_lease_conninfo = NULL;
static int	snowflake_lease_ttl_ms = LEASE_TTL_DEFAULT_MS;
static char *snowflake_lease_worker_ids = NULL;

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
	LWLock	   *lock;			/* guards everything but the atomics */
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

	pg_atomic_uint64 need_horizon_ms;	/* a call waits for this horizon */
	ConditionVariable cv;		/* broadcast when the lease changes */
} LeaseShared;

static LeaseShared *lease = NULL;

/* Validity ends this much before the TTL after a renewal was sent. */
#define LEASE_MARGIN_MS(ttl)	Max((ttl) / 20, 50)

/*
 * Renewals go out three times per TTL; a call waits for a horizon (and a
 * query for its answer) no longer than one renewal's time.
 */
#define LEASE_RENEW_EVERY_MS(ttl)	((ttl) / 3)

/* After an unanswered or refused request, try again this much later. */
#define LEASE_RETRY_MS(ttl)		Min(1000, (ttl) / 10)

PGDLLEXPORT void SnowflakeLeaseClientMain(Datum arg);

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
	RequestNamedLWLockTranche("snowflake_lease", 1);
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
		lease->lock = &GetNamedLWLockTranche("snowflake_lease")->lock;
		lease->status = LeaseOn() ? LEASE_STARTING : LEASE_OFF;
		lease->node = -1;
		pg_atomic_init_u64(&lease->need_horizon_ms, 0);
		ConditionVariableInit(&lease->cv);
	}
	LWLockRelease(AddinShmemInitLock);
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
	LWLockAcquire(lease->lock, LW_SHARED);
	info->state = lease_status_names[lease->status];
	info->node = lease->status == LEASE_HELD ? lease->node : -1;
	info->generation = lease->generation;
	info->valid_until = lease->status == LEASE_HELD ? lease->valid_until : 0;
	info->horizon_ms = lease->horizon_ms;
	info->renewed_at = lease->renewed_at;
	info->requests = lease->requests;
	memcpy(coordinator, lease->coordinator, sizeof(coordinator));
	LWLockRelease(lease->lock);
	info->coordinator = pstrdup(coordinator);
}

void
LeaseResetStats(void)
{
	if (lease == NULL)
		return;
	LWLockAcquire(lease->lock, LW_EXCLUSIVE);
	lease->requests = 0;
	LWLockRelease(lease->lock);
}

/* ---- the settings ------------------------------------------------------ */

/*
 * What is wrong with a coordinator's connection string, or NULL.  It must
 * parse, and hold no secret: members of pg_read_all_settings (pg_monitor
 * among them) read GUC_SUPERUSER_ONLY settings too.  Syntax only, with no
 * I/O: this serves the check hook.
 */
static char *
lease_conninfo_problem(const char *conninfo)
{
	char	   *libpq_error = NULL;
	PQconninfoOption *options;
	char	   *problem = NULL;

	if (conninfo == NULL || conninfo[0] == '\0')
		return NULL;
	options = PQconninfoParse(conninfo, &libpq_error);
	if (options == NULL)
	{
		problem = libpq_error ?
			psprintf("It is not a connection string libpq can read: %s", libpq_error) :
			psprintf("It is not a connection string libpq can read (out of memory).");
		/* libpq's messages end with a newline */
		if (problem[strlen(problem) - 1] == '\n')
			problem[strlen(problem) - 1] = '\0';
		if (libpq_error)
			PQfreemem(libpq_error);
		return problem;
	}
	for (PQconninfoOption *o = options; o->keyword != NULL; o++)
		if (o->val != NULL && o->val[0] != '\0' &&
			(strcmp(o->keyword, "password") == 0 || strcmp(o->keyword, "sslpassword") == 0))
			problem = psprintf("It holds a %s, which members of pg_read_all_settings, pg_monitor among them, could read.",
							   o->keyword);
	PQconninfoFree(options);
	return problem;
}

#define LEASE_CONNINFO_HINT \
	"Put the password in a password file (passfile=, or ~/.pgpass of the operating-system user the server runs as), or use client certificates."

/* The message names no value: the refused one may hold a password. */
static bool
check_lease_conninfo(char **newval, void **extra, GucSource source)
{
	char	   *problem = lease_conninfo_problem(*newval);

	if (problem == NULL)
		return true;
	GUC_check_errmsg("invalid value for parameter \"snowflake.lease_conninfo\"");
	GUC_check_errdetail("%s", problem);
	GUC_check_errhint(LEASE_CONNINFO_HINT);
	return false;
}

static bool
check_lease_worker_ids(char **newval, void **extra, GucSource source)
{
	char	   *problem;
	int64		nvalues;

	if (ConfigParseRanges(*newval, PG_INT32_MAX, "worker id", NULL, NULL,
						  &nvalues, &problem) < 0)
	{
		GUC_check_errdetail("%s", problem);
		return false;
	}
	return true;
}

/*
 * The worker ids a lease may take, as ranges of which lows and highs
 * (palloc'd) hold the ends, none above max: every value of the layout by
 * default.  Returns their count, or -1 with a sentence in *problem.
 */
static int
lease_ranges(int64 max, int **lows, int **highs, char **problem)
{
	int64		nvalues;
	int			n = ConfigParseRanges(snowflake_lease_worker_ids, max, "worker id",
									  NULL, NULL, &nvalues, problem);

	if (n < 0)
		return -1;
	*lows = palloc(sizeof(int) * (n + 1));
	*highs = palloc(sizeof(int) * (n + 1));
	(void) ConfigParseRanges(snowflake_lease_worker_ids, max, "worker id", *lows, *highs,
							 &nvalues, problem);
	if (n == 0)
	{
		(*lows)[0] = 0;
		(*highs)[0] = SnowflakeMaxNode(&snowflake_layout);
		n = 1;
	}
	return n;
}

/*
 * Once the configuration is final (config.c explains why): the configured
 * values the check hooks only warned about, then, with leases, the worker
 * id's settings against the layout and the shards.
 */
static void
lease_check_final(const char *worker_ids, const char *conninfo)
{
	int32		max_node = SnowflakeMaxNode(&snowflake_layout);
	char	   *problem;
	int64		ignored;
	int			nranges;
	int		   *lows;
	int		   *highs;

	if (worker_ids != NULL &&
		ConfigParseRanges(worker_ids, PG_INT32_MAX, "worker id", NULL, NULL, &ignored, &problem) < 0)
		ConfigRefuse("snowflake.lease_worker_ids", worker_ids, problem);
	if (conninfo != NULL && (problem = lease_conninfo_problem(conninfo)) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for parameter \"%s\"", "snowflake.lease_conninfo"),
				 errdetail("%s", problem),
				 errhint(LEASE_CONNINFO_HINT)));
	if (!LeaseOn())
		return;

	/* with leases the worker id comes from them, in their range */
	if (ConfigWorkerIdConfigured())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"snowflake.worker_id\" and \"snowflake.lease_conninfo\" cannot both be set"),
				 errdetail("With \"snowflake.lease_conninfo\" the worker id comes from a lease."),
				 errhint("Remove \"snowflake.worker_id\", or \"snowflake.lease_conninfo\".")));
	nranges = lease_ranges(max_node, &lows, &highs, &problem);
	if (nranges < 0)
		ConfigRefuse("snowflake.lease_worker_ids", snowflake_lease_worker_ids, problem);
	ConfigUseLeasedWorkerId();
	for (int i = 0; i < snowflake_worker_index; i++)
		for (int r = 0; r < nranges; r++)
			if (snowflake_nodes[i] >= lows[r] && snowflake_nodes[i] <= highs[r])
				ConfigRefuse("snowflake.lease_worker_ids", snowflake_lease_worker_ids,
							 psprintf("Shard %d of \"snowflake.shards\" is in the range: a worker id from a lease would share its ids.",
									  snowflake_nodes[i]));
}

/*
 * Define the lease settings; when preloading, check them once final and,
 * with leases, register the client.  A standby claims no lease: the client
 * starts at promotion, and claims one.
 */
void
LeaseInit(void)
{
	char	   *worker_ids = ConfigConfiguredValue("snowflake.lease_worker_ids");
	char	   *conninfo = ConfigConfiguredValue("snowflake.lease_conninfo");

	/*
	 * GUC_SUPERUSER_ONLY keeps it from ordinary roles, but members of
	 * pg_read_all_settings read it too: it must hold no password, and the
	 * check refuses one (a passfile, ~/.pgpass or a client certificate
	 * serves instead).
	 */
	DefineCustomStringVariable("snowflake.lease_conninfo",
							   "Connection string of the coordinator this server leases its worker id from; empty: the worker id is \"snowflake.worker_id\".",
							   "It may hold no password: use a password file or a client certificate.",
							   &snowflake_lease_conninfo,
							   "",
							   CONFIG_STARTUP_CONTEXT,
							   GUC_SUPERUSER_ONLY,
							   check_lease_conninfo, NULL, NULL);

	/*
	 * Ten seconds: a worker id whose server died moves to another server
	 * ten seconds later; three renewals per TTL are a handful of tiny
	 * transactions; and a coordinator may be away for most of ten seconds (a
	 * failover of a Patroni-managed primary takes a few) before calls fail.
	 */
	DefineCustomIntVariable("snowflake.lease_ttl_ms",
							"How long a worker id lease lasts without a renewal.",
							NULL,
							&snowflake_lease_ttl_ms,
							LEASE_TTL_DEFAULT_MS,
							LEASE_TTL_MIN_MS,
							LEASE_TTL_MAX_MS,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomStringVariable("snowflake.lease_worker_ids",
							   "Worker ids this server may lease, as numbers and ranges; empty: every worker id of the layout.",
							   NULL,
							   &snowflake_lease_worker_ids,
							   "",
							   CONFIG_STARTUP_CONTEXT,
							   0,
							   check_lease_worker_ids, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress)
		return;
	lease_check_final(worker_ids, conninfo);
	if (LeaseOn())
		SnowflakeRegisterBackground("snowflake lease client", "SnowflakeLeaseClientMain");
}

/* ---- what calls do ----------------------------------------------------- */

static void
lease_report(const char *caller)
{
	LeaseShared copy;

	LWLockAcquire(lease->lock, LW_SHARED);
	memcpy(&copy, lease, offsetof(LeaseShared, client_latch));
	LWLockRelease(lease->lock);

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
					 errdetail("The coordinator no longer renews this server's lease (generation " INT64_FORMAT "): it lapsed there, was released, or was taken by another server.",
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

	LWLockAcquire(lease->lock, LW_SHARED);
	status = lease->status;
	LWLockRelease(lease->lock);
	return status;
}

void
LeaseAwaitWorker(const char *caller)
{
	int64		deadline = ClockMonotonicUs() + (int64) snowflake_lease_ttl_ms * 1000;

	/*
	 * A lapsed lease issues nothing more, from this call on (the client
	 * closes the worker id when it sees it).
	 */
	ConditionVariablePrepareToSleep(&lease->cv);
	for (;;)
	{
		if (GeneratorWorkerValid())
			break;
		/* at start-up, the first claim is on its way: wait for it, bounded */
		if (lease_status() != LEASE_STARTING || ClockMonotonicUs() >= deadline)
		{
			ConditionVariableCancelSleep();
			lease_report(caller);
		}
		lease_wait((deadline - ClockMonotonicUs()) / 1000);
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();
}

void
LeaseAwaitHorizon(int64 until_ms, const char *caller)
{
	int64		deadline = ClockMonotonicUs() +
		(int64) LEASE_RENEW_EVERY_MS(snowflake_lease_ttl_ms) * 1000;
	uint64		seen = pg_atomic_read_u64(&lease->need_horizon_ms);
	Latch	   *latch;

	while ((int64) seen < until_ms &&
		   !pg_atomic_compare_exchange_u64(&lease->need_horizon_ms, &seen, (uint64) until_ms))
		;
	LWLockAcquire(lease->lock, LW_SHARED);
	latch = lease->client_latch;
	LWLockRelease(lease->lock);
	if (latch != NULL)
		SetLatch(latch);

	ConditionVariablePrepareToSleep(&lease->cv);
	for (;;)
	{
		int64		horizon;

		LWLockAcquire(lease->lock, LW_SHARED);
		horizon = lease->status == LEASE_HELD ? lease->horizon_ms : 0;
		LWLockRelease(lease->lock);
		if (horizon >= until_ms || !GeneratorWorkerValid())
			break;				/* decide again */
		if (ClockMonotonicUs() >= deadline)
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
		lease_wait((deadline - ClockMonotonicUs()) / 1000);
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
#define LEASE_QUERY_TIMEOUT_MS(ttl)	Min(Max(LEASE_RENEW_EVERY_MS(ttl), 200), 5000)
#define LEASE_STATEMENT_TIMEOUT_MS(ttl)	(LEASE_QUERY_TIMEOUT_MS(ttl) * 3 / 4)
#define LEASE_LOCK_TIMEOUT_MS(ttl)	(LEASE_QUERY_TIMEOUT_MS(ttl) / 2)

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
static char *lease_schema;		/* the extension's schema there, quoted */
static bool trouble_logged;		/* the current trouble is in the log */
static bool lease_releasing;	/* at shutdown, releasing the lease */
static char *refusal_logged;	/* the last refused answer logged, or NULL */
static char *logging_logged;	/* the last logging refusal logged, or NULL */
static LeaseHeld held;
static LeaseChain lease_chain;	/* the secrets of our lease */
static bool lease_answer_lost;	/* the last call was sent, and not answered */
static char *lease_holder;		/* this server, for the coordinator */
static int	lease_nranges;		/* the range of worker ids */
static int *lease_lows;
static int *lease_highs;
static char *lease_lows_text;	/* the same, as array literals */
static char *lease_highs_text;
static char *lease_coordinator_text;	/* host:port/dbname */

/* The next request: a renewal's time after one sent at sent_us. */
static void
lease_renew_from(int64 sent_us)
{
	held.renew_at_us = sent_us + (int64) LEASE_RENEW_EVERY_MS(snowflake_lease_ttl_ms) * 1000;
}

/* The next request after one unanswered or refused. */
static void
lease_retry_later(void)
{
	held.renew_at_us = ClockMonotonicUs() + (int64) LEASE_RETRY_MS(snowflake_lease_ttl_ms) * 1000;
}

/* The next secret, before a claim or a renewal */
static void
lease_draw_secret(void)
{
	if (!LeaseChainDraw(&lease_chain))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random lease secret")));
}

/*
 * After a claim or a renewal that was answered (rows, checked or not),
 * the coordinator keeps the next secret's hash; after one sent and not
 * answered, it may; after an error, it does not.
 */
static void
lease_chain_after(bool answered)
{
	if (answered || lease_answer_lost)
		LeaseChainSent(&lease_chain);
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

	LWLockAcquire(lease->lock, LW_EXCLUSIVE);
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
	LWLockRelease(lease->lock);
	ConditionVariableBroadcast(&lease->cv);
}

/*
 * Wait for the socket (or only the latch when sock < 0) until deadline;
 * false at the deadline, or at a shutdown request, but for the release's
 * calls: they are made after one, and a fast shutdown may signal again
 * while they run.
 */
static bool
lease_wait_socket(int sock, int events, int64 deadline_us)
{
	static uint32 event = 0;
	int			rc;
	int64		left_ms = (deadline_us - ClockMonotonicUs()) / 1000;

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
	return lease_releasing || !ShutdownRequestPending;
}

static void
lease_disconnect(void)
{
	if (lease_conn != NULL)
		PQfinish(lease_conn);
	lease_conn = NULL;
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
 * deadline (nparams -1: statements without parameters, in the simple
 * protocol); returns the last one's answer, rows or a command's (to be
 * PQclear'd), or NULL with the status and reason set.  A statement given
 * up on is left to the coordinator's timeouts: the connection is closed.
 */
static PGresult *
lease_exec(const char *sql, int nparams, const char *const *params, int64 deadline)
{
	PGresult   *result = NULL;
	PGresult   *next;
	int			flushed;
	char	   *reason;

	lease_answer_lost = false;
	if (!(nparams < 0 ? PQsendQuery(lease_conn, sql) :
		  PQsendQueryParams(lease_conn, sql, nparams, NULL, params, NULL, NULL, 0)))
		goto broken;
	lease_answer_lost = true;	/* until an answer comes */
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
	if (result != NULL &&
		(PQresultStatus(result) == PGRES_TUPLES_OK || PQresultStatus(result) == PGRES_COMMAND_OK))
	{
		lease_answer_lost = false;
		return result;
	}

	/*
	 * An error rolled the call back, unless the connection broke with it:
	 * a backend terminated once the call committed ends with an error too.
	 */
	lease_answer_lost = PQstatus(lease_conn) == CONNECTION_BAD;
	reason = lease_libpq_message(result != NULL ? PQresultErrorMessage(result) : "no result");

	/* a coordinator of 0.3.0 has none of the calls of the chain of secrets */
	if (result != NULL && PQresultErrorField(result, PG_DIAG_SQLSTATE) != NULL &&
		strcmp(PQresultErrorField(result, PG_DIAG_SQLSTATE), "42883") == 0)
		reason = psprintf("its snowflake extension is older than this server's %s; update it first "
						  "(ALTER EXTENSION snowflake UPDATE): %s", SNOWFLAKE_VERSION, reason);
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
 * A session with the coordinator: connect, and look up the extension's
 * schema there.  Nothing is set for the session: through a transaction
 * pooler, the next statement may run in another of the coordinator's
 * backends, and a setting made for this one would stay with it, for the
 * pooler's other clients.
 */
static bool
lease_session_start(int64 deadline)
{
	PGresult   *res;

	if (!lease_connect(deadline))
		return false;
	res = lease_exec("SELECT n.nspname FROM pg_catalog.pg_extension e "
					 "JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace "
					 "WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake'",
					 0, NULL, deadline);
	if (res == NULL)
	{
		lease_disconnect();
		return false;
	}
	if (PQntuples(res) != 1 || PQnfields(res) != 1 || PQgetisnull(res, 0, 0))
	{
		PQclear(res);
		lease_disconnect();
		lease_set_status(LEASE_REFUSED, "the coordinator's database has no snowflake extension");
		return false;
	}
	if (lease_schema != NULL)
		pfree(lease_schema);
	lease_schema = MemoryContextStrdup(TopMemoryContext, quote_identifier(PQgetvalue(res, 0, 0)));
	PQclear(res);
	return true;
}

/*
 * Open a call's transaction: BEGIN; its settings, SET LOCAL (search_path
 * pinned to pg_catalog; the timeouts for this TTL, so that a call ends on
 * the coordinator before the client gives up on it, and a transaction left
 * idle longer than the client waits for an answer, which the client has
 * given up on, ends there too); and whether this session would write
 * our secret to the coordinator's log.
 *
 * A statement is logged before it runs, so no refusal on the
 * coordinator's side could take a logged secret back: the client asks,
 * in the call's transaction (the session the call will run in, pooler or
 * not), and sends no secret to a session that would log its parameters
 * (log_statement, log_min_duration_statement and the like; see
 * leaselog.c).  current_setting() of each, a few microseconds: nothing is
 * kept from one call to the next, as a pooler's next transaction may be
 * another backend's, started under other settings.  A refusal is logged
 * once per setting, with the statement that turns it off for the lease
 * role alone.  Nothing here is secret: the simple protocol, one round trip.
 */
static bool
lease_begin(int64 deadline)
{
	const char **names;
	const char **values;
	const char *fix = NULL;
	char	   *problem;
	char	   *role;
	PGresult   *res;
	int			n;
	int			ttl = snowflake_lease_ttl_ms;

	res = lease_exec(psprintf("BEGIN; "
							  "SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true), "
							  "pg_catalog.set_config('statement_timeout', '%d', true), "
							  "pg_catalog.set_config('lock_timeout', '%d', true), "
							  "pg_catalog.set_config('idle_in_transaction_session_timeout', '%d', true); "
							  "SELECT s.name, pg_catalog.current_setting(s.name, true), current_user "
							  "FROM pg_catalog.unnest('%s'::pg_catalog.text[]) AS s(name) "
							  "WHERE pg_catalog.current_setting(s.name, true) IS NOT NULL",
							  LEASE_STATEMENT_TIMEOUT_MS(ttl), LEASE_LOCK_TIMEOUT_MS(ttl),
							  LEASE_QUERY_TIMEOUT_MS(ttl), LEASE_LOGGING_SETTINGS),
					 -1, NULL, deadline);
	if (res == NULL)
	{
		lease_disconnect();		/* (the transaction, if begun, with it) */
		return false;
	}
	n = PQnfields(res) == 3 ? PQntuples(res) : 0;
	names = palloc0(sizeof(char *) * (n + 1));
	values = palloc0(sizeof(char *) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		names[i] = PQgetvalue(res, i, 0);
		values[i] = PQgetvalue(res, i, 1);
	}
	/* a session that shows none of them is not believed to keep secrets */
	problem = n == 0 ? pstrdup("its logging settings could not be read") :
		LeaseLoggingProblem(n, names, values, &fix);
	role = n > 0 ? pstrdup(quote_identifier(PQgetvalue(res, 0, 2))) : NULL;
	PQclear(res);
	pfree(names);
	pfree(values);
	if (problem == NULL)
	{
		if (logging_logged != NULL)
			pfree(logging_logged);
		logging_logged = NULL;
		return true;
	}

	lease_disconnect();
	if (logging_logged == NULL || strcmp(logging_logged, problem) != 0)
	{
		ereport(LOG,
				(errmsg("the snowflake lease coordinator %s would log the lease secret: %s",
						lease_coordinator_text, problem),
				 errdetail("No secret is sent to it, so no lease is claimed, renewed or released there."),
				 fix != NULL && role != NULL ?
				 errhint("As a superuser on the coordinator, run ALTER ROLE %s SET %s; the lease client's next session takes it.",
						 role, fix) : 0));
		if (logging_logged != NULL)
			pfree(logging_logged);
		logging_logged = MemoryContextStrdup(TopMemoryContext, problem);
	}
	trouble_logged = true;		/* (said here, not as "did not answer") */
	lease_set_status(LEASE_REFUSED, psprintf("the coordinator would log the lease secret: %s", problem));
	return false;
}

/*
 * Run a lease call, whose SQL names the extension's schema with %s, in a
 * transaction of its own (lease_begin()), committed once its answer is
 * in; returns its rows (to be PQclear'd), or NULL with the status and
 * reason set.  Until the COMMIT is sent nothing can commit: a call that
 * failed, or was given up on, is not in doubt (lease_answer_lost false),
 * and its connection is closed, which ends its transaction.  Only a
 * COMMIT whose answer never came leaves the call in doubt.
 */
static PGresult *
lease_query(const char *sql, int nparams, const char *const *params)
{
	int64		timeout_us = (int64) LEASE_QUERY_TIMEOUT_MS(snowflake_lease_ttl_ms) * 1000;
	PGresult   *res;
	PGresult   *commit;
	bool		committed;

	/*
	 * Starting a session and the call each get the whole timeout: on a busy
	 * coordinator, a connection and the call together may take longer than
	 * either alone.
	 */
	if (lease_conn == NULL && !lease_session_start(ClockMonotonicUs() + timeout_us))
	{
		lease_answer_lost = false;	/* (the call was not sent) */
		return NULL;
	}
	if (!lease_begin(ClockMonotonicUs() + timeout_us))
	{
		lease_answer_lost = false;
		return NULL;
	}
	LWLockAcquire(lease->lock, LW_EXCLUSIVE);
	lease->requests++;
	LWLockRelease(lease->lock);
	res = lease_exec(psprintf(sql, lease_schema), nparams, params, ClockMonotonicUs() + timeout_us);
	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		if (res != NULL)
		{
			PQclear(res);
			lease_set_status(LEASE_REFUSED, "the call answered no rows");
		}
		lease_disconnect();		/* (rolls its transaction back) */
		lease_answer_lost = false;
		return NULL;
	}
	commit = lease_exec("COMMIT", -1, NULL, ClockMonotonicUs() + timeout_us);
	if (commit == NULL)
	{
		PQclear(res);
		return NULL;			/* (lease_answer_lost: whether it may have) */
	}
	/* (a transaction that had failed answers COMMIT with ROLLBACK) */
	committed = strcmp(PQcmdStatus(commit), "COMMIT") == 0;
	PQclear(commit);
	if (!committed)
	{
		PQclear(res);
		lease_disconnect();
		lease_answer_lost = false;
		lease_set_status(LEASE_REFUSED, "the call's transaction did not commit");
		return NULL;
	}
	return res;
}

/*
 * An answer the coordinator should not have given: refuse it, say so in
 * the log, and let the status say why.
 */
/* Do a and b say the same, but for the numbers in them? */
static bool
lease_same_but_numbers(const char *a, const char *b)
{
	for (;;)
	{
		if (isdigit((unsigned char) *a) && isdigit((unsigned char) *b))
		{
			while (isdigit((unsigned char) *a))
				a++;
			while (isdigit((unsigned char) *b))
				b++;
			continue;
		}
		if (*a != *b)
			return false;
		if (*a == '\0')
			return true;
		a++;
		b++;
	}
}

static void
lease_refuse_answer(const char *call, const char *problem)
{
	char	   *reason = psprintf("its answer to %s was refused: %s", call, problem);

	/*
	 * Once per problem (its numbers aside: a horizon short of the one asked
	 * for is short of a new one each time), as a coordinator that goes on
	 * lying is asked again every second.
	 */
	if (refusal_logged == NULL || !lease_same_but_numbers(refusal_logged, reason))
	{
		ereport(LOG,
				(errmsg("the snowflake lease coordinator %s gave a wrong answer to %s: %s",
						lease_coordinator_text, call, problem),
				 errdetail("No id is issued under it.")));
		if (refusal_logged != NULL)
			pfree(refusal_logged);
		refusal_logged = MemoryContextStrdup(TopMemoryContext, reason);
	}
	lease_set_status(LEASE_REFUSED, reason);
}

/*
 * The horizon to record now: the clock, a TTL and a mark interval ahead;
 * or, when a call waits for a farther one (ticks borrowed ahead of the
 * clock), that one and a mark interval more.  Without the interval, a call
 * that runs ahead of the clock would ask again for every tick it reaches,
 * a commit on the coordinator per millisecond, and each horizon would be
 * spent by the time it came back.
 */
static int64
lease_wanted_horizon(void)
{
	return Max(ClockNowMs() + snowflake_lease_ttl_ms + snowflake_mark_interval_ms,
			   (int64) pg_atomic_read_u64(&lease->need_horizon_ms) + snowflake_mark_interval_ms);
}

/* A lease renewed (or claimed) by a request sent at sent_us is valid until this. */
static int64
lease_valid_until_us(int64 sent_us)
{
	return sent_us +
		(int64) (snowflake_lease_ttl_ms - LEASE_MARGIN_MS(snowflake_lease_ttl_ms)) * 1000;
}

/* Publish the lease held: validity, limits for the calls, what stats show. */
static void
lease_publish(int64 sent_us)
{
	int64		now_us = ClockMonotonicUs();
	int64		valid_ms;
	TimestampTz now = GetCurrentTimestamp();

	held.valid_until_us = lease_valid_until_us(sent_us);
	lease_renew_from(sent_us);
	valid_ms = ClockNowMs() + (held.valid_until_us - now_us) / 1000;

	LWLockAcquire(lease->lock, LW_EXCLUSIVE);
	lease->node = held.node;
	lease->generation = held.generation;
	lease->horizon_ms = held.horizon_ms;
	lease->valid_until = SnowflakeMsToTimestamptz(valid_ms);
	lease->renewed_at = now;
	LWLockRelease(lease->lock);

	GeneratorSetLeaseLimits(held.valid_until_us, valid_ms, held.horizon_ms);
	lease_set_status(LEASE_HELD, NULL);
	if (refusal_logged != NULL)
	{
		pfree(refusal_logged);
		refusal_logged = NULL;	/* a lie after an answer taken is logged again */
	}
}

/* Close the worker id: the lease is gone, or about to be. */
static int64
lease_drop(LeaseStatus status, const char *reason)
{
	int64		end = GeneratorCloseWorker();

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
	const char *params[8];
	int64		sent_us = ClockMonotonicUs();
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
	lease_draw_secret();
	params[0] = lease_holder;
	params[1] = LeaseChainOffered(&lease_chain);
	params[2] = lease_chain.next_hash;
	params[3] = lease_lows_text;
	params[4] = lease_highs_text;
	params[5] = last >= 0 ? prefer : NULL;
	params[6] = ttl;
	params[7] = horizon;
	res = lease_query("SELECT node, generation, previous_horizon_ms, horizon_ms, expires_at "
					  "FROM %s.snowflake_lease_claim($1::pg_catalog.text, $2::pg_catalog.text[], "
					  "$3::pg_catalog.bytea, $4::pg_catalog.int4[], $5::pg_catalog.int4[], "
					  "$6::pg_catalog.int4, $7::pg_catalog.int4, $8::pg_catalog.int8)",
					  8, params);
	lease_chain_after(res != NULL);
	if (res == NULL)
		return false;
	lease_renew_from(sent_us);
	if (PQntuples(res) == 0 && PQnfields(res) == 5)
	{
		/* none of our secrets holds a lease there (it would be back) */
		PQclear(res);
		LeaseChainForget(&lease_chain);
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
	 * and a mark interval behind that.  The limits are set before it opens:
	 * a call must not find it open and lapsed.
	 */
	held.valid_until_us = lease_valid_until_us(sent_us);
	floor_ms = GeneratorOpenWorker(held.node, previous,
								   previous - snowflake_lease_ttl_ms - snowflake_mark_interval_ms,
								   held.valid_until_us,
								   ClockNowMs() + (held.valid_until_us - ClockMonotonicUs()) / 1000,
								   held.horizon_ms);
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
	const char *params[5];
	int64		sent_us = ClockMonotonicUs();
	int64		wanted = lease_wanted_horizon();
	int64		renewed_horizon;
	PGresult   *res;

	snprintf(node, sizeof(node), "%d", held.node);
	snprintf(ttl, sizeof(ttl), "%d", snowflake_lease_ttl_ms);
	snprintf(horizon, sizeof(horizon), INT64_FORMAT, wanted);
	lease_draw_secret();
	params[0] = node;
	params[1] = LeaseChainOffered(&lease_chain);
	params[2] = lease_chain.next_hash;
	params[3] = ttl;
	params[4] = horizon;
	res = lease_query("SELECT renewed, horizon_ms, expires_at "
					  "FROM %s.snowflake_lease_renew($1::pg_catalog.int4, $2::pg_catalog.text[], "
					  "$3::pg_catalog.bytea, $4::pg_catalog.int4, $5::pg_catalog.int8)",
					  5, params);
	lease_chain_after(res != NULL);
	if (res == NULL)
		return false;
	if (PQntuples(res) != 1 || PQnfields(res) != 3 ||
		(strcmp(PQgetvalue(res, 0, 0), "t") != 0 && strcmp(PQgetvalue(res, 0, 0), "f") != 0))
	{
		PQclear(res);
		/* not renewed: it lapses by itself */
		lease_retry_later();
		lease_refuse_answer("a renewal", "not one row of renewed, horizon_ms, expires_at");
		return true;
	}
	if (strcmp(PQgetvalue(res, 0, 0), "f") == 0)
	{
		PQclear(res);
		LeaseChainForget(&lease_chain);
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
		lease_retry_later();
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
	params[1] = LeaseChainOffered(&lease_chain);
	params[2] = end_text;
	lease_releasing = true;		/* let the calls run, within their timeout */
	res = lease_query("SELECT %s.snowflake_lease_release($1::pg_catalog.int4, $2::pg_catalog.text[], "
					  "$3::pg_catalog.int8)",
					  3, params);
	if (res != NULL && PQntuples(res) == 1 && PQnfields(res) == 1 &&
		strcmp(PQgetvalue(res, 0, 0), "t") == 0)
	{
		ereport(LOG,
				(errmsg("snowflake worker id %d released, its ids ending at %s",
						held.node, SnowflakeFormatMs(end))));
		PQclear(res);
	}
	else if (res != NULL)
	{
		/* (or a release whose answer was lost, offered again) */
		ereport(LOG,
				(errmsg("snowflake worker id %d not released: the coordinator no longer knows its lease",
						held.node)));
		PQclear(res);
	}
	else
	{
		char		reason[sizeof(lease->reason)];

		LWLockAcquire(lease->lock, LW_SHARED);
		strlcpy(reason, lease->reason, sizeof(reason));
		LWLockRelease(lease->lock);
		ereport(LOG,
				(errmsg("snowflake worker id %d not released, it lapses by itself: %s",
						held.node, reason)));
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
	char	   *problem;

	/* lease_check_final accepted the list */
	lease_nranges = lease_ranges(PG_INT32_MAX, &lease_lows, &lease_highs, &problem);
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

/* The client's start: who it is, what it asks for, where; announce it. */
static void
lease_client_start(void)
{
	char		hostname[256];
	MemoryContext old;

	if (gethostname(hostname, sizeof(hostname)) != 0)
		strlcpy(hostname, "?", sizeof(hostname));
	hostname[sizeof(hostname) - 1] = '\0';
	old = MemoryContextSwitchTo(TopMemoryContext);
	lease_holder = psprintf("%llu %s:%d %s", (unsigned long long) GetSystemIdentifier(),
							hostname, PostPortNumber, cluster_name[0] ? cluster_name : "-");
	lease_prepare_ranges();
	lease_coordinator_text = lease_describe_coordinator();
	MemoryContextSwitchTo(old);
	LWLockAcquire(lease->lock, LW_EXCLUSIVE);
	lease_copy_text(lease->coordinator, sizeof(lease->coordinator), lease_coordinator_text);
	lease->client_latch = MyLatch;
	LWLockRelease(lease->lock);

	memset(&held, 0, sizeof(held));
	held.node = -1;
	LeaseChainForget(&lease_chain);
	trouble_logged = false;
}

/* A lease whose validity lapsed issues nothing more: close the worker id. */
static void
lease_expire_if_lapsed(void)
{
	if (held.held && ClockMonotonicUs() >= held.valid_until_us)
	{
		(void) lease_drop(LEASE_EXPIRED, NULL);
		ereport(LOG,
				(errmsg("snowflake worker id %d: its lease expired before it could be renewed",
						held.node)));
	}
}

/* A request is due: a renewal's time, or a call waits for a farther horizon. */
static bool
lease_request_due(void)
{
	return ClockMonotonicUs() >= held.renew_at_us ||
		(held.held && (int64) pg_atomic_read_u64(&lease->need_horizon_ms) > held.horizon_ms);
}

/*
 * Claim a worker id, or renew the one held (each publishes what it got).
 * The first failure after an answer is logged; it is retried soon.
 */
static void
lease_claim_or_renew(void)
{
	bool		answered = held.held ? lease_renew() : lease_claim();

	if (answered)
	{
		trouble_logged = false;
		return;
	}
	if (!trouble_logged)
	{
		char		reason[sizeof(lease->reason)];

		LWLockAcquire(lease->lock, LW_SHARED);
		strlcpy(reason, lease->reason, sizeof(reason));
		LWLockRelease(lease->lock);
		ereport(LOG,
				(errmsg("the snowflake lease coordinator did not answer: %s", reason)));
		trouble_logged = true;
	}
	lease_retry_later();
}

/* Sleep until the next request or the end of validity, or a wake-up. */
static void
lease_sleep(void)
{
	int64		wake_us = held.renew_at_us;

	if (held.held)
		wake_us = Min(wake_us, held.valid_until_us);
	(void) lease_wait_socket(-1, 0, Max(wake_us, ClockMonotonicUs() + 1000));
}

/*
 * The client: start; then each turn expire a lapsed lease, claim or renew
 * when due (a session is connected on the way), and sleep; at shutdown
 * release the worker id with the exact end of its ids.
 */
void
SnowflakeLeaseClientMain(Datum arg)
{
	MemoryContext turn;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	lease_client_start();
	turn = AllocSetContextCreate(TopMemoryContext, "snowflake lease client",
								 ALLOCSET_DEFAULT_SIZES);
	while (!ShutdownRequestPending)
	{
		MemoryContext old = MemoryContextSwitchTo(turn);

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		lease_expire_if_lapsed();
		if (lease_request_due())
			lease_claim_or_renew();
		MemoryContextSwitchTo(old);
		MemoryContextReset(turn);
		lease_sleep();
	}

	if (held.held)
		lease_release();
	lease_disconnect();
	LWLockAcquire(lease->lock, LW_EXCLUSIVE);
	lease->client_latch = NULL;
	LWLockRelease(lease->lock);
	proc_exit(1);
}

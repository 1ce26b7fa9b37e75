/*-------------------------------------------------------------------------
 *
 * snowflake.c
 *	  Module entry: PG_MODULE_MAGIC, _PG_init, the GUCs and the
 *	  shared-memory hooks.
 *
 * Loading the library outside shared_preload_libraries (CREATE EXTENSION,
 * or a decoder called in a plain server) defines the GUCs but requests no
 * shared memory; the functions that need the generator then say so.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "compat.h"
#include "lease.h"
#include "snowflake.h"
#include "uuidv7.h"

SNOWFLAKE_MODULE_MAGIC;

int			snowflake_worker_id = 0;
int			snowflake_rollback_tolerance_ms = 5;
int			snowflake_mark_interval_ms = 1000;
int			snowflake_max_borrow_ms = 0;
char	   *snowflake_shards = NULL;
char	   *snowflake_lease_conninfo = NULL;
int			snowflake_lease_ttl_ms = 10000;
char	   *snowflake_lease_worker_ids = NULL;
static char *snowflake_epoch = NULL;
static char *snowflake_layout_text = NULL;

/* The epoch of "snowflake.epoch", for layouts that name none */
static int64 snowflake_epoch_ms = SNOWFLAKE_DEFAULT_EPOCH_MS;

/* Until "snowflake.layout" is assigned: the snowflake preset */
SnowflakeLayout snowflake_layout = {
	.name = "snowflake",
	.time_bits = 41,
	.node_bits = 10,
	.sequence_bits = 12,
	.sequence_last = true,
	.tick_ms = 1,
	.epoch_ms = SNOWFLAKE_DEFAULT_EPOCH_MS,
	.nparts = 1,
	.part_names = {"worker"},
	.part_bits = {10},
};

int		   *snowflake_nodes = NULL;
int			snowflake_nnodes = 0;
int			snowflake_worker_index = 0;

/* Shards a server may issue for: enough for 13 bits of Instagram shards. */
#define SNOWFLAKE_MAX_NODES		65536

#ifdef SNOWFLAKE_SHMEM_REQUEST_HOOK
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * The check hooks check syntax and static bounds only: they run for the
 * built-in defaults before postgresql.conf is read, in every backend where
 * backends are started by exec, and in any order.  What depends on two
 * settings is checked once the configuration is final (snowflake_check_final);
 * what depends on the clock, by the calls that issue ids.
 */
static bool
check_epoch(char **newval, void **extra, GucSource source)
{
	int64		epoch_ms;
	const char *problem;

	if (!SnowflakeParseEpoch(*newval, &epoch_ms, &problem))
	{
		GUC_check_errdetail("%s", problem);
		return false;
	}
	return true;
}

/* A layout that names no epoch takes "snowflake.epoch", whenever assigned. */
static void
assign_epoch(const char *newval, void *extra)
{
	const char *problem;

	/* check_epoch accepted it, so this cannot fail */
	(void) SnowflakeParseEpoch(newval, &snowflake_epoch_ms, &problem);
	if (!snowflake_layout.own_epoch)
		snowflake_layout.epoch_ms = snowflake_epoch_ms;
}

static bool
check_layout(char **newval, void **extra, GucSource source)
{
	SnowflakeLayout candidate;
	char	   *problem;

	if (!SnowflakeParseLayout(*newval, SNOWFLAKE_DEFAULT_EPOCH_MS, &candidate, &problem))
	{
		GUC_check_errdetail("%s", problem);
		return false;
	}
	return true;
}

static void
assign_layout(const char *newval, void *extra)
{
	char	   *problem;

	/*
	 * check_layout accepted it.  Under another epoch its lifetime may not
	 * fit PostgreSQL's timestamps; that is checked once both are final.
	 */
	if (!SnowflakeParseLayout(newval, snowflake_epoch_ms, &snowflake_layout, &problem))
		(void) SnowflakeParseLayout(newval, SNOWFLAKE_DEFAULT_EPOCH_MS,
									&snowflake_layout, &problem);
	if (!snowflake_layout.own_epoch)
		snowflake_layout.epoch_ms = snowflake_epoch_ms;
}

/*
 * Parse a list of numbers and ranges, such as "0-99, 200, 300-310",
 * ascending and disjoint, none above max (the largest shard or worker id:
 * noun says which).  Fills lows and highs (unless NULL) with the ranges; returns their count and sets *nvalues to the count
 * of values, or returns -1 with a palloc'd sentence in *problem.
 */
static int
snowflake_parse_ranges(const char *text, int64 max, const char *noun, int *lows,
					   int *highs, int64 *nvalues, char **problem)
{
	const char *p = text;
	int			count = 0;
	int64		previous = -1;

	*nvalues = 0;
	while (*p)
	{
		char	   *end;
		int64		low;
		int64		high;

		while (*p == ' ' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		if (*p < '0' || *p > '9' || strspn(p, "0123456789") > 10)
			goto malformed;
		if (p[0] == '0' && p[1] >= '0' && p[1] <= '9')
			goto leading_zero;
		low = high = strtoi64(p, &end, 10);
		p = end;
		if (*p == '-')
		{
			p++;
			if (*p < '0' || *p > '9' || strspn(p, "0123456789") > 10)
				goto malformed;
			if (p[0] == '0' && p[1] >= '0' && p[1] <= '9')
				goto leading_zero;
			high = strtoi64(p, &end, 10);
			p = end;
		}
		if (*p != '\0' && *p != ',' && *p != ' ')
			goto malformed;
		if (low > high || high > max)
		{
			*problem = psprintf("The range %lld-%lld is empty or beyond the largest %s of layout \"%s\", %lld.",
								(long long) low, (long long) high, noun,
								snowflake_layout.name, (long long) max);
			return -1;
		}
		if (low <= previous)
		{
			*problem = psprintf("%lld is listed twice or out of order: list numbers in ascending order.",
								(long long) low);
			return -1;
		}
		if (lows)
		{
			lows[count] = (int) low;
			highs[count] = (int) high;
		}
		count++;
		*nvalues += high - low + 1;
		previous = high;
	}
	return count;

malformed:
	*problem = psprintf("Write numbers and ranges, such as \"0-99, 200, 300-310\".");
	return -1;

leading_zero:
	*problem = psprintf("Write numbers in plain decimal, without leading zeros: \"%.*s\" could be read as octal.",
						(int) strspn(p, "0123456789"), p);
	return -1;
}

/*
 * Parse a list of shards into ascending values (of room for the count, or
 * NULL to count only).  Returns the count, or -1 with a sentence in problem.
 */
static int
snowflake_parse_shards(const char *text, int *values, int64 max_node, char **problem)
{
	int64		nvalues;
	int			nranges = snowflake_parse_ranges(text, max_node, "shard", NULL, NULL,
												 &nvalues, problem);
	int		   *lows;
	int		   *highs;
	int			count = 0;

	if (nranges < 0)
		return -1;
	if (nvalues > SNOWFLAKE_MAX_NODES)
	{
		*problem = psprintf("A server issues ids for at most %d shards.", SNOWFLAKE_MAX_NODES);
		return -1;
	}
	if (values == NULL)
		return (int) nvalues;
	lows = palloc(sizeof(int) * (nranges + 1));
	highs = palloc(sizeof(int) * (nranges + 1));
	(void) snowflake_parse_ranges(text, max_node, "shard", lows, highs, &nvalues, problem);
	for (int r = 0; r < nranges; r++)
		for (int64 v = lows[r]; v <= highs[r]; v++)
			values[count++] = (int) v;
	return count;
}

/*
 * What is wrong with a coordinator's connection string, or NULL.  It must
 * parse, and hold no secret: members of pg_read_all_settings (pg_monitor
 * among them) read GUC_SUPERUSER_ONLY settings too.  Syntax only, with no
 * I/O: this serves the check hook.
 */
static char *
snowflake_conninfo_problem(const char *conninfo)
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

#define SNOWFLAKE_CONNINFO_HINT \
	"Put the password in a password file (passfile=, or ~/.pgpass of the operating-system user the server runs as), or use client certificates."

/* The message names no value: the refused one may hold a password. */
static bool
check_lease_conninfo(char **newval, void **extra, GucSource source)
{
	char	   *problem = snowflake_conninfo_problem(*newval);

	if (problem == NULL)
		return true;
	GUC_check_errmsg("invalid value for parameter \"snowflake.lease_conninfo\"");
	GUC_check_errdetail("%s", problem);
	GUC_check_errhint(SNOWFLAKE_CONNINFO_HINT);
	return false;
}

static bool
check_lease_worker_ids(char **newval, void **extra, GucSource source)
{
	char	   *problem;
	int64		nvalues;

	if (snowflake_parse_ranges(*newval, PG_INT32_MAX, "worker id", NULL, NULL,
							   &nvalues, &problem) < 0)
	{
		GUC_check_errdetail("%s", problem);
		return false;
	}
	return true;
}

/*
 * The worker ids a lease may take, as ranges of which lows and highs
 * (palloc'd) hold the ends: every value of the layout by default.  Returns
 * their count.
 */
int
SnowflakeLeaseRanges(int **lows, int **highs)
{
	int64		nvalues;
	char	   *problem;
	int			n = snowflake_parse_ranges(snowflake_lease_worker_ids, PG_INT32_MAX,
										   "worker id", NULL, NULL, &nvalues, &problem);

	*lows = palloc(sizeof(int) * (n + 1));
	*highs = palloc(sizeof(int) * (n + 1));
	(void) snowflake_parse_ranges(snowflake_lease_worker_ids, PG_INT32_MAX,
								  "worker id", *lows, *highs, &nvalues, &problem);
	if (n == 0)
	{
		(*lows)[0] = 0;
		(*highs)[0] = SnowflakeMaxNode(&snowflake_layout);
		n = 1;
	}
	return n;
}

/*
 * Once start-up is over the layout can no longer change: from then on (an
 * ALTER SYSTEM, say) worker ids and shards are checked against it too.
 */
static bool snowflake_config_final = false;

static int64
snowflake_max_node_now(void)
{
	return snowflake_config_final ? SnowflakeMaxNode(&snowflake_layout) : PG_INT32_MAX;
}

static bool
check_shards(char **newval, void **extra, GucSource source)
{
	char	   *problem;

	if (snowflake_parse_shards(*newval, NULL, snowflake_max_node_now(), &problem) < 0)
	{
		GUC_check_errdetail("%s", problem);
		return false;
	}
	return true;
}

static bool
check_worker_id(int *newval, void **extra, GucSource source)
{
	if (*newval > snowflake_max_node_now())
	{
		GUC_check_errdetail("Layout \"%s\" has %d bits of worker id, for worker ids 0 to %d.",
							snowflake_layout.name, snowflake_layout.node_bits,
							SnowflakeMaxNode(&snowflake_layout));
		return false;
	}
	return true;
}

/*
 * The node values of this server: its shards ascending, then its worker id
 * (-1 with leases).  A worker id that is also listed as a shard is the
 * worker id.
 */
static void
snowflake_build_nodes(void)
{
	char	   *problem;
	int			count;
	int			kept = 0;

	/* snowflake_check_final accepted the list: it parses */
	count = snowflake_parse_shards(snowflake_shards, NULL, PG_INT32_MAX, &problem);
	snowflake_nodes = MemoryContextAlloc(TopMemoryContext, sizeof(int) * (count + 1));
	(void) snowflake_parse_shards(snowflake_shards, snowflake_nodes, PG_INT32_MAX, &problem);
	for (int i = 0; i < count; i++)
		if (SnowflakeLeases() || snowflake_nodes[i] != snowflake_worker_id)
			snowflake_nodes[kept++] = snowflake_nodes[i];
	snowflake_worker_index = kept;
	snowflake_nodes[kept] = SnowflakeLeases() ? -1 : snowflake_worker_id;
	snowflake_nnodes = kept + 1;
}

/*
 * The value postgresql.conf (or the command line) gives a GUC before the
 * library defines it, or NULL.
 */
static char *
snowflake_configured_value(const char *name)
{
	const char *value = GetConfigOption(name, true, false);

	return value ? pstrdup(value) : NULL;
}

static void
snowflake_refuse(const char *name, const char *value, const char *problem)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for parameter \"%s\": \"%s\"", name, value),
			 errdetail("%s", problem)));
}

/*
 * When a preloaded library defines a GUC, a configured value that fails its
 * check hook draws only a WARNING, and the default is used.  For a worker
 * id, an epoch, a layout or a list of shards that would silently mean
 * duplicate or misordered ids: validate what was configured, once the
 * configuration is final, and let the error stop the server.  Then the
 * checks that need two settings: the layout's lifetime under the epoch, and
 * the worker id and shards against the layout's node bits.
 */
static void
snowflake_check_final(const char *const *names, char **configured)
{
	int32		max_node = SnowflakeMaxNode(&snowflake_layout);
	char	   *problem;
	int64		ignored;
	const char *epoch_problem;
	SnowflakeLayout ignored_layout;

	for (int i = 0; names[i] != NULL; i++)
	{
		const char *value = configured[i];
		int			worker_id;

		if (value == NULL)
			continue;
		if (strcmp(names[i], "snowflake.epoch") == 0 &&
			!SnowflakeParseEpoch(value, &ignored, &epoch_problem))
			snowflake_refuse(names[i], value, epoch_problem);
		if (strcmp(names[i], "snowflake.layout") == 0 &&
			!SnowflakeParseLayout(value, SNOWFLAKE_DEFAULT_EPOCH_MS, &ignored_layout, &problem))
			snowflake_refuse(names[i], value, problem);
		if (strcmp(names[i], "snowflake.shards") == 0 &&
			snowflake_parse_shards(value, NULL, PG_INT32_MAX, &problem) < 0)
			snowflake_refuse(names[i], value, problem);
		if (strcmp(names[i], "snowflake.lease_worker_ids") == 0 &&
			snowflake_parse_ranges(value, PG_INT32_MAX, "worker id", NULL, NULL,
								   &ignored, &problem) < 0)
			snowflake_refuse(names[i], value, problem);
		if (strcmp(names[i], "snowflake.worker_id") == 0 &&
			(strspn(value, "0123456789") != strlen(value) || strlen(value) == 0 ||
			 strlen(value) > 10 || (value[0] == '0' && value[1] != '\0') ||
			 !parse_int(value, &worker_id, 0, NULL)))
			snowflake_refuse(names[i], value,
							 psprintf("A worker id is a whole number from 0 to %d in plain decimal digits, such as 7: no sign, leading zero, fraction or hexadecimal prefix.",
									  max_node));
		if (strcmp(names[i], "snowflake.lease_conninfo") == 0 &&
			(problem = snowflake_conninfo_problem(value)) != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid value for parameter \"%s\"", names[i]),
					 errdetail("%s", problem),
					 errhint(SNOWFLAKE_CONNINFO_HINT)));
	}

	problem = SnowflakeLayoutProblem(&snowflake_layout);
	if (problem != NULL)
		snowflake_refuse("snowflake.layout", snowflake_layout_text, problem);
	if (snowflake_worker_id > max_node)
		snowflake_refuse("snowflake.worker_id", psprintf("%d", snowflake_worker_id),
						 psprintf("Layout \"%s\" has %d bits of worker id, for worker ids 0 to %d.",
								  snowflake_layout.name, snowflake_layout.node_bits, max_node));
	if (snowflake_parse_shards(snowflake_shards, NULL, max_node, &problem) < 0)
		snowflake_refuse("snowflake.shards", snowflake_shards, problem);

	/* with leases the worker id comes from them, in their range */
	if (SnowflakeLeases())
	{
		int64		nvalues;
		int			nshards = snowflake_parse_shards(snowflake_shards, NULL, max_node, &problem);
		int		   *shards = palloc(sizeof(int) * (nshards + 1));
		int			nranges;
		int		   *lows;
		int		   *highs;

		for (int i = 0; names[i] != NULL; i++)
			if (strcmp(names[i], "snowflake.worker_id") == 0 && configured[i] != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("\"snowflake.worker_id\" and \"snowflake.lease_conninfo\" cannot both be set"),
						 errdetail("With \"snowflake.lease_conninfo\" the worker id comes from a lease."),
						 errhint("Remove \"snowflake.worker_id\", or \"snowflake.lease_conninfo\".")));
		nranges = snowflake_parse_ranges(snowflake_lease_worker_ids, max_node, "worker id", NULL, NULL,
										 &nvalues, &problem);
		if (nranges < 0)
			snowflake_refuse("snowflake.lease_worker_ids", snowflake_lease_worker_ids, problem);
		lows = palloc(sizeof(int) * (nranges + 1));
		highs = palloc(sizeof(int) * (nranges + 1));
		(void) snowflake_parse_ranges(snowflake_lease_worker_ids, max_node, "worker id", lows, highs,
									  &nvalues, &problem);
		(void) snowflake_parse_shards(snowflake_shards, shards, max_node, &problem);
		for (int i = 0; i < nshards; i++)
			for (int r = 0; r < nranges; r++)
				if (shards[i] >= lows[r] && shards[i] <= highs[r])
					snowflake_refuse("snowflake.lease_worker_ids", snowflake_lease_worker_ids,
									 psprintf("Shard %d of \"snowflake.shards\" is in the range: a worker id from a lease would share its ids.",
											  shards[i]));
	}
}

#ifdef SNOWFLAKE_SHMEM_REQUEST_HOOK
static void
snowflake_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	GeneratorShmemRequest();
	LeaseShmemRequest();
	Uuidv7ShmemRequest();
}
#endif

static void
snowflake_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	GeneratorShmemStartup();
	LeaseShmemStartup();
	Uuidv7ShmemStartup();
}

void
_PG_init(void)
{
	static const char *const names[] = {"snowflake.epoch", "snowflake.layout",
		"snowflake.worker_id", "snowflake.shards", "snowflake.lease_worker_ids",
		"snowflake.lease_conninfo", NULL};
	char	   *configured[lengthof(names)];

	/*
	 * A library loaded after start-up cannot define PGC_POSTMASTER variables.
	 * Then there is no generator either, only the decoders, which need the
	 * epoch and layout of postgresql.conf: read them as SIGHUP settings.
	 */
	GucContext	startup_context = process_shared_preload_libraries_in_progress ?
		PGC_POSTMASTER : PGC_SIGHUP;

	for (int i = 0; names[i] != NULL; i++)
		configured[i] = snowflake_configured_value(names[i]);

	DefineCustomStringVariable("snowflake.epoch",
							   "Time from which the timestamp of the ids counts, in UTC unless an offset is given.",
							   "Layouts that name their own epoch ignore it.",
							   &snowflake_epoch,
							   SNOWFLAKE_DEFAULT_EPOCH,
							   startup_context,
							   0,
							   check_epoch, assign_epoch, NULL);

	DefineCustomStringVariable("snowflake.layout",
							   "Bit layout of the ids: snowflake, twitter, discord, instagram, sonyflake, or a custom specification.",
							   NULL,
							   &snowflake_layout_text,
							   SNOWFLAKE_DEFAULT_LAYOUT,
							   startup_context,
							   0,
							   check_layout, assign_layout, NULL);

	DefineCustomIntVariable("snowflake.worker_id",
							"Worker id written into every id; each server issuing ids for the same tables needs its own.",
							NULL,
							&snowflake_worker_id,
							0,
							0,
							PG_INT32_MAX,
							startup_context,
							0,
							check_worker_id, NULL, NULL);

	DefineCustomStringVariable("snowflake.shards",
							   "Logical shards, besides its worker id, that this server issues ids for with snowflake_nextval(shard).",
							   "A list of numbers and ranges, such as \"0-99, 200\".",
							   &snowflake_shards,
							   "",
							   startup_context,
							   0,
							   check_shards, NULL, NULL);

	DefineCustomIntVariable("snowflake.rollback_tolerance_ms",
							"Largest backward clock step that is waited out rather than refused.",
							NULL,
							&snowflake_rollback_tolerance_ms,
							5,
							0,
							10000,
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
							1000,
							10,
							60000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("snowflake.max_borrow_ms",
							"How far ahead of the clock ids may be issued when a tick's sequence is exhausted, instead of waiting.",
							"0 waits for the next tick.",
							&snowflake_max_borrow_ms,
							0,
							0,
							60000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

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
							   startup_context,
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
							10000,
							500,
							600000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomStringVariable("snowflake.lease_worker_ids",
							   "Worker ids this server may lease, as numbers and ranges; empty: every worker id of the layout.",
							   NULL,
							   &snowflake_lease_worker_ids,
							   "",
							   startup_context,
							   0,
							   check_lease_worker_ids, NULL, NULL);

	SnowflakeReserveGucPrefix("snowflake");

	if (!process_shared_preload_libraries_in_progress)
		return;

	snowflake_check_final(names, configured);
	snowflake_config_final = true;
	snowflake_build_nodes();
	WorkerRegister();
	LeaseRegisterWorker();

#ifdef SNOWFLAKE_SHMEM_REQUEST_HOOK
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = snowflake_shmem_request;
#else
	GeneratorShmemRequest();
	LeaseShmemRequest();
	Uuidv7ShmemRequest();
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = snowflake_shmem_startup;
}

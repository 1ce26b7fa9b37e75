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
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/guc.h"

#include "snowflake.h"
#include "uuidv7.h"

#if PG_VERSION_NUM >= 180000
PG_MODULE_MAGIC_EXT(.name = "snowflake",.version = SNOWFLAKE_VERSION);
#else
PG_MODULE_MAGIC;
#endif

#if PG_VERSION_NUM < 160000
void		_PG_init(void);
#endif

int			snowflake_worker_id = 0;
int			snowflake_rollback_tolerance_ms = 5;
int			snowflake_mark_interval_ms = 1000;
static char *snowflake_epoch = NULL;

SnowflakeLayout snowflake_layout = {
	.time_bits = SNOWFLAKE_TIME_BITS,
	.worker_bits = SNOWFLAKE_WORKER_BITS,
	.sequence_bits = SNOWFLAKE_SEQUENCE_BITS,
	.epoch_ms = SNOWFLAKE_DEFAULT_EPOCH_MS,
};

#if PG_VERSION_NUM >= 150000
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static bool
check_epoch(char **newval, void **extra, GucSource source)
{
	SnowflakeLayout candidate = snowflake_layout;
	const char *problem;

	if (!SnowflakeParseEpoch(*newval, &candidate.epoch_ms, &problem))
	{
		GUC_check_errdetail("%s", problem);
		return false;
	}
	problem = SnowflakeCheckEpoch(&candidate, GeneratorClockMs());
	if (problem != NULL)
	{
		GUC_check_errdetail("%s", problem);
		return false;
	}
	return true;
}

static void
assign_epoch(const char *newval, void *extra)
{
	const char *problem;

	/* check_epoch accepted it, so this cannot fail */
	(void) SnowflakeParseEpoch(newval, &snowflake_layout.epoch_ms, &problem);
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

/*
 * When a preloaded library defines a GUC, a configured value that fails
 * validation draws only a WARNING and the default is used.  For a worker id
 * or an epoch that would silently mean duplicate or misordered ids, so check
 * the configured value again and let the error stop the server.
 */
static void
snowflake_require_valid(const char *name, const char *configured)
{
	if (configured != NULL)
		(void) set_config_option(name, configured, PGC_POSTMASTER, PGC_S_FILE,
								 GUC_ACTION_SET, false, ERROR, false);
}

#if PG_VERSION_NUM >= 150000
static void
snowflake_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	GeneratorShmemRequest();
	Uuidv7ShmemRequest();
}
#endif

static void
snowflake_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	GeneratorShmemStartup();
	Uuidv7ShmemStartup();
}

void
_PG_init(void)
{
	char	   *configured_worker_id = snowflake_configured_value("snowflake.worker_id");
	char	   *configured_epoch = snowflake_configured_value("snowflake.epoch");

	/*
	 * A library loaded after start-up cannot define PGC_POSTMASTER variables.
	 * Then there is no generator either, only the decoders, which need the
	 * epoch of postgresql.conf: read it as a SIGHUP setting.
	 */
	GucContext	startup_context = process_shared_preload_libraries_in_progress ?
		PGC_POSTMASTER : PGC_SIGHUP;

	DefineCustomIntVariable("snowflake.worker_id",
							"Worker id written into every id; each server issuing ids for the same tables needs its own.",
							NULL,
							&snowflake_worker_id,
							0,
							0,
							SnowflakeMaxWorker(&snowflake_layout),
							startup_context,
							0,
							NULL, NULL, NULL);

	DefineCustomStringVariable("snowflake.epoch",
							   "Time from which the timestamp of the ids counts, in UTC unless an offset is given.",
							   NULL,
							   &snowflake_epoch,
							   SNOWFLAKE_DEFAULT_EPOCH,
							   startup_context,
							   0,
							   check_epoch, assign_epoch, NULL);

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

#if PG_VERSION_NUM >= 150000
	MarkGUCPrefixReserved("snowflake");
#else
	EmitWarningsOnPlaceholders("snowflake");
#endif

	if (!process_shared_preload_libraries_in_progress)
		return;

	snowflake_require_valid("snowflake.worker_id", configured_worker_id);
	snowflake_require_valid("snowflake.epoch", configured_epoch);

#if PG_VERSION_NUM >= 150000
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = snowflake_shmem_request;
#else
	GeneratorShmemRequest();
	Uuidv7ShmemRequest();
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = snowflake_shmem_startup;
}

/*-------------------------------------------------------------------------
 *
 * snowflake.c
 *	  Module entry: PG_MODULE_MAGIC, _PG_init and the shared-memory hooks.
 *	  Each room defines its own settings in its Init; this file only calls
 *	  them, and chains the hooks.
 *
 * Loading the library outside shared_preload_libraries (CREATE EXTENSION,
 * or a decoder called in a plain server) defines the settings but requests
 * no shared memory; the functions that need the generator then say so.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/guc.h"

#include "compat.h"
#include "config.h"
#include "generator.h"
#include "lease.h"
#include "markwriter.h"
#include "rootkey.h"
#include "uuidv7.h"

SNOWFLAKE_MODULE_MAGIC;

#ifdef SNOWFLAKE_SHMEM_REQUEST_HOOK
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
snowflake_shmem_request(void)
{
#ifdef SNOWFLAKE_SHMEM_REQUEST_HOOK
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
#endif
	GeneratorShmemRequest();
	LeaseShmemRequest();
	Uuidv7ShmemRequest();
}

static void
snowflake_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	GeneratorShmemStartup();
	LeaseShmemStartup();
	Uuidv7ShmemStartup();
	RootKeyStartup();
}

/*
 * One Init per room, in the order of their dependencies: the lease settings
 * are checked against the layout and shards the config room has settled.
 */
void
_PG_init(void)
{
	ConfigInit();
	GeneratorInit();
	MarkWriterInit();
	LeaseInit();
	RootKeyInit();
	SnowflakeReserveGucPrefix("snowflake");

	if (!process_shared_preload_libraries_in_progress)
		return;

#ifdef SNOWFLAKE_SHMEM_REQUEST_HOOK
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = snowflake_shmem_request;
#else
	snowflake_shmem_request();
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = snowflake_shmem_startup;
}

/*-------------------------------------------------------------------------
 *
 * common.h
 *	  What every room of the extension has in common: an error code, the
 *	  report of a library that was not preloaded, and how its background
 *	  workers are registered.  Header only, below every room: no room calls
 *	  another through it.  The module entry is snowflake.c, whose
 *	  functions have their declarations in each room's own header.
 *
 * The rooms and who may call whom: doc/design.md, "Code layout"; the
 * ranks are in test/callgraph, which checks every call, include and call
 * of a static inline function against them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_COMMON_H
#define SNOWFLAKE_COMMON_H

#include "postmaster/bgworker.h"

#include "compat.h"

/* SQLSTATE of a refused clock rollback: an error external to PostgreSQL */
#define ERRCODE_SNOWFLAKE_CLOCK_ROLLBACK	ERRCODE_SYSTEM_ERROR

/* A function that needs shared memory, in a server that did not preload us */
SNOWFLAKE_NORETURN_BEFORE static inline void SnowflakeReportNotPreloaded(void) SNOWFLAKE_NORETURN_AFTER;

static inline void
SnowflakeReportNotPreloaded(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("snowflake must be loaded via \"shared_preload_libraries\""),
			 errhint("Add \"snowflake\" to \"shared_preload_libraries\" in postgresql.conf and restart the server.")));
	pg_unreachable();
}

/*
 * Register one of the extension's background workers.  Both connect to no
 * database (the connection only lists them in pg_stat_activity), start once
 * recovery is over (a standby issues no ids), and are started again a
 * second after they stop.
 */
static inline void
SnowflakeRegisterBackground(const char *name, const char *function)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 1;
	strlcpy(worker.bgw_library_name, "snowflake", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker.bgw_name, name, BGW_MAXLEN);
	strlcpy(worker.bgw_type, name, BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}

#endif							/* SNOWFLAKE_COMMON_H */

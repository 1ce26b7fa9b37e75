/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The mark writer: a background worker that extends the high-water
 *	  mark ahead of the clock, so that no call waits for a disk.
 *
 * It attaches to shared memory, starts once recovery is over (a standby
 * issues no ids and writes no mark), and takes a turn every
 * eighth of snowflake.mark_interval_ms, or as soon as a call wakes it; the
 * generator decides in each turn whether to write (generator.c).  Should it
 * stop, calls go on issuing ids and write the mark themselves when they
 * reach it; the postmaster starts it again a second later.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "compat.h"
#include "snowflake.h"

PGDLLEXPORT void SnowflakeMarkWriterMain(Datum arg);

/*
 * Register one of the extension's background workers.  Both connect to no
 * database (the connection only lists them in pg_stat_activity), start once
 * recovery is over (a standby issues no ids), and are started again a
 * second after they stop.
 */
void
WorkerRegisterBackground(const char *name, const char *function)
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

void
WorkerRegister(void)
{
	WorkerRegisterBackground("snowflake mark writer", "SnowflakeMarkWriterMain");
}

static void
worker_exit(int code, Datum arg)
{
	GeneratorSetMarkWriter(NULL);
}

void
SnowflakeMarkWriterMain(Datum arg)
{
	uint64	   *seen;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	/* what the nodes were at start: only ids issued from now on need a mark */
	seen = MemoryContextAlloc(TopMemoryContext, sizeof(uint64) * snowflake_nnodes);
	GeneratorNodeWords(seen);
	before_shmem_exit(worker_exit, (Datum) 0);
	GeneratorSetMarkWriter(MyLatch);

	while (!ShutdownRequestPending)
	{
		long		sleep_ms;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		sleep_ms = GeneratorMarkWriterTurn(seen);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms, GeneratorMarkWriterWaitEvent());
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}

	/*
	 * Exit code 1: the postmaster restarts a worker stopped by
	 * pg_terminate_backend(), and at shutdown it does not matter.
	 */
	proc_exit(1);
}

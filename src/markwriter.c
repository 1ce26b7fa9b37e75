/*-------------------------------------------------------------------------
 *
 * markwriter.c
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
#include SNOWFLAKE_WAIT_EVENT_HEADER
#include "common.h"
#include "generator.h"
#include "markwriter.h"

PGDLLEXPORT void SnowflakeMarkWriterMain(Datum arg);

/* When preloading: the mark writer, started once recovery is over. */
void
MarkWriterInit(void)
{
	if (process_shared_preload_libraries_in_progress)
		SnowflakeRegisterBackground("snowflake mark writer", "SnowflakeMarkWriterMain");
}

static void
markwriter_exit(int code, Datum arg)
{
	GeneratorSetMarkWriter(NULL);
}

void
SnowflakeMarkWriterMain(Datum arg)
{
	uint64	   *seen;
	uint32		wait_event;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	/* what the nodes were at start: only ids issued from now on need a mark */
	seen = GeneratorNodeWords(TopMemoryContext);
	before_shmem_exit(markwriter_exit, (Datum) 0);
	GeneratorSetMarkWriter(MyLatch);
	wait_event = SnowflakeWaitEvent("SnowflakeMarkWriterMain");

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
						 sleep_ms, wait_event);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}

	/*
	 * Exit code 1: the postmaster restarts a worker stopped by
	 * pg_terminate_backend(), and at shutdown it does not matter.
	 */
	proc_exit(1);
}

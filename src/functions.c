/*-------------------------------------------------------------------------
 *
 * functions.c
 *	  The SQL-callable functions: thin wrappers that check their arguments
 *	  and call the generator (generator.c) or the layout (layout.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/timestamp.h"

#include "snowflake.h"

PG_FUNCTION_INFO_V1(snowflake_nextval);
PG_FUNCTION_INFO_V1(snowflake_nextval_batch);
PG_FUNCTION_INFO_V1(snowflake_decode);
PG_FUNCTION_INFO_V1(snowflake_timestamp);
PG_FUNCTION_INFO_V1(snowflake_from_timestamp);
PG_FUNCTION_INFO_V1(snowflake_stats);

/* State of one snowflake_nextval_batch() call between its rows */
typedef struct BatchState
{
	int32		remaining;		/* ids still to return */
	int32		in_block;		/* ids left in the reserved block */
	int64		next_id;		/* next id of the reserved block */
} BatchState;

static void
fn_check_id(int64 id)
{
	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake id must not be negative"),
				 errdetail("The id was " INT64_FORMAT ".", id)));
}

static TupleDesc
fn_result_tupdesc(FunctionCallInfo fcinfo)
{
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	return BlessTupleDesc(tupdesc);
}

Datum
snowflake_nextval(PG_FUNCTION_ARGS)
{
	int32		reserved;

	PG_RETURN_INT64(GeneratorReserve(1, &reserved));
}

/*
 * Returns n ids, reserving them a millisecond's worth at a time: one lock
 * acquisition per block of up to 4096 ids rather than one per id.  Rows are
 * streamed, so memory does not grow with n, and ids a caller never fetches
 * (LIMIT) are never reserved.
 */
Datum
snowflake_nextval_batch(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	BatchState *state;
	int64		id;

	if (SRF_IS_FIRSTCALL())
	{
		int32		n = PG_GETARG_INT32(0);

		if (n < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("number of ids must not be negative")));
		funcctx = SRF_FIRSTCALL_INIT();
		state = MemoryContextAllocZero(funcctx->multi_call_memory_ctx,
									   sizeof(BatchState));
		state->remaining = n;
		funcctx->user_fctx = state;
	}

	funcctx = SRF_PERCALL_SETUP();
	state = (BatchState *) funcctx->user_fctx;
	if (state->remaining == 0)
		SRF_RETURN_DONE(funcctx);

	if (state->in_block == 0)
		state->next_id = GeneratorReserve(state->remaining, &state->in_block);
	id = state->next_id++;
	state->in_block--;
	state->remaining--;
	SRF_RETURN_NEXT(funcctx, Int64GetDatum(id));
}

/* One row: created_at, timestamp_ms, worker_id, sequence. */
Datum
snowflake_decode(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext oldcontext;

		fn_check_id(PG_GETARG_INT64(0));
		funcctx = SRF_FIRSTCALL_INIT();
		oldcontext = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		funcctx->tuple_desc = fn_result_tupdesc(fcinfo);
		MemoryContextSwitchTo(oldcontext);
	}

	funcctx = SRF_PERCALL_SETUP();
	if (funcctx->call_cntr == 0)
	{
		SnowflakeFields fields;
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};

		SnowflakeDecompose(&snowflake_layout, PG_GETARG_INT64(0), &fields);
		values[0] = TimestampTzGetDatum(SnowflakeMsToTimestamptz(fields.unix_ms));
		values[1] = Int64GetDatum(fields.unix_ms);
		values[2] = Int32GetDatum(fields.worker);
		values[3] = Int32GetDatum(fields.sequence);
		SRF_RETURN_NEXT(funcctx,
						HeapTupleGetDatum(heap_form_tuple(funcctx->tuple_desc,
														  values, nulls)));
	}
	SRF_RETURN_DONE(funcctx);
}

Datum
snowflake_timestamp(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	SnowflakeFields fields;

	fn_check_id(id);
	SnowflakeDecompose(&snowflake_layout, id, &fields);
	PG_RETURN_TIMESTAMPTZ(SnowflakeMsToTimestamptz(fields.unix_ms));
}

/*
 * The smallest id that can be issued in the millisecond containing ts:
 * "id >= snowflake_from_timestamp(ts)" selects every id issued from that
 * millisecond on.
 */
Datum
snowflake_from_timestamp(PG_FUNCTION_ARGS)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	int64		unix_ms;

	if (TIMESTAMP_NOT_FINITE(ts))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for snowflake ids"),
				 errdetail("Infinite timestamps have no snowflake id.")));

	unix_ms = SnowflakeTimestamptzToMs(ts);
	if (!SnowflakeTimeInRange(&snowflake_layout, unix_ms))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for snowflake ids"),
				 errdetail("Snowflake ids cover %s to %s.",
						   SnowflakeFormatMs(snowflake_layout.epoch_ms),
						   SnowflakeFormatMs(SnowflakeLastMs(&snowflake_layout)))));

	PG_RETURN_INT64(SnowflakeCompose(&snowflake_layout, unix_ms, 0, 0));
}

Datum
snowflake_stats(PG_FUNCTION_ARGS)
{
	SnowflakeStats stats;
	Datum		values[11];
	bool		nulls[11] = {false};

	GeneratorGetStats(&stats);

	values[0] = Int32GetDatum(snowflake_worker_id);
	values[1] = TimestampTzGetDatum(SnowflakeMsToTimestamptz(snowflake_layout.epoch_ms));
	values[2] = Int64GetDatum(stats.last_ms);
	nulls[2] = (stats.ids_issued == 0);
	values[3] = Int64GetDatum(stats.ids_issued);
	values[4] = Int64GetDatum(stats.sequence_waits);
	values[5] = Int64GetDatum(stats.rollbacks_waited);
	values[6] = Int64GetDatum(stats.rollbacks_refused);
	values[7] = TimestampTzGetDatum(SnowflakeMsToTimestamptz(stats.mark_ms));
	nulls[7] = (stats.mark_ms == 0);
	values[8] = Int64GetDatum(stats.mark_writes);
	values[9] = Int64GetDatum(stats.startup_wait_ms);
	values[10] = TimestampTzGetDatum(stats.started_at);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(fn_result_tupdesc(fcinfo),
													  values, nulls)));
}

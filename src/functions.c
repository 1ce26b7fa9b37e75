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
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"

#include "config.h"
#include "generator.h"
#include "layout.h"
#include "lease.h"

PG_FUNCTION_INFO_V1(snowflake_nextval);
PG_FUNCTION_INFO_V1(snowflake_nextval_shard);
PG_FUNCTION_INFO_V1(snowflake_nextval_batch);
PG_FUNCTION_INFO_V1(snowflake_decode);
PG_FUNCTION_INFO_V1(snowflake_timestamp);
PG_FUNCTION_INFO_V1(snowflake_from_timestamp);
PG_FUNCTION_INFO_V1(snowflake_layout_info);
PG_FUNCTION_INFO_V1(snowflake_stats);
PG_FUNCTION_INFO_V1(snowflake_stats_reset);

/* State of one snowflake_nextval_batch() call between its rows */
typedef struct BatchState
{
	int32		remaining;		/* ids still to return */
	int64		in_block;		/* ids left in the reserved block */
	int64		next_id;		/* next id of the reserved block */
	int64		step;			/* from one id of a block to the next */
} BatchState;

/*
 * The layout a decoder works with: the one of the argument at argno if the
 * function has one (a preset name or a specification, with the default
 * epoch if it names none), else the configured one.
 */
static const SnowflakeLayout *
fn_layout(FunctionCallInfo fcinfo, int argno, SnowflakeLayout *buffer)
{
	char	   *spec;
	char	   *problem;

	if (PG_NARGS() <= argno)
	{
		/* the settings of a server without the preload can change on reload */
		problem = SnowflakeLayoutProblem(&snowflake_layout);
		if (problem != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("\"snowflake.layout\" and \"snowflake.epoch\" do not make a valid layout"),
					 errdetail_internal("%s", problem)));
		return &snowflake_layout;
	}
	spec = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (!SnowflakeParseLayout(spec, SNOWFLAKE_DEFAULT_EPOCH_MS, buffer, &problem))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid snowflake layout \"%s\"", spec),
				 errdetail_internal("%s", problem),
				 errhint("Name a preset (snowflake, twitter, discord, instagram, sonyflake) or write fields such as \"time:41 worker:10 sequence:12 tick:1ms epoch:2025-01-01\".")));
	return buffer;
}

/* Ids of 63-bit layouts are never negative; 64-bit ones use the sign bit. */
static void
fn_check_id(const SnowflakeLayout *layout, int64 id)
{
	if (id < 0 && SnowflakeTimeShift(layout) + layout->time_bits < 64)
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

/* The result type of a function whose later versions add columns at the end */
static TupleDesc
fn_stats_tupdesc(FunctionCallInfo fcinfo, int max_columns)
{
	TupleDesc	tupdesc = fn_result_tupdesc(fcinfo);

	if (tupdesc->natts > max_columns)
		elog(ERROR, "return type has %d columns, more than the %d this library knows",
			 tupdesc->natts, max_columns);
	return tupdesc;
}

/*
 * The generator answered a GeneratorWait: run the lease's wait it asks for,
 * then reserve again, until it gives ids (or a wait throws).
 */
static pg_noinline int64
fn_reserve_after_wait(int64 answer, int64 until_ms, int32 node_value, int64 count,
					  bool may_borrow, const char *caller, int64 *reserved)
{
	while (answer < 0)
	{
		if (answer == GENERATOR_NEEDS_HORIZON)
			LeaseAwaitHorizon(until_ms, caller);
		else
			LeaseAwaitWorker(caller);	/* throws unless a lease came */
		answer = GeneratorReserve(node_value, count, may_borrow, caller, reserved,
								  &until_ms);
	}
	return answer;
}

/*
 * Reserve ids: the one place that puts the generator and the lease
 * together.  The common path is the first call alone.
 */
static inline int64
fn_reserve(int32 node_value, int64 count, bool may_borrow, const char *caller,
		   int64 *reserved)
{
	int64		until_ms;
	int64		answer = GeneratorReserve(node_value, count, may_borrow, caller,
										  reserved, &until_ms);

	if (likely(answer >= 0))
		return answer;
	return fn_reserve_after_wait(answer, until_ms, node_value, count, may_borrow,
								 caller, reserved);
}

Datum
snowflake_nextval(PG_FUNCTION_ARGS)
{
	int64		reserved;

	PG_RETURN_INT64(fn_reserve(-1, 1, true, "snowflake_nextval()", &reserved));
}

/* An id of a logical shard (Instagram's pattern) listed in snowflake.shards */
Datum
snowflake_nextval_shard(PG_FUNCTION_ARGS)
{
	int32		shard = PG_GETARG_INT32(0);
	int64		reserved;

	if (shard < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("shard must not be negative")));
	PG_RETURN_INT64(fn_reserve(shard, 1, true, "snowflake_nextval(integer)", &reserved));
}

/*
 * Returns n ids, reserving them a tick's worth at a time: one
 * compare-and-swap per block of ids rather than one per id.  Rows are
 * streamed, so memory does not grow with n.  A block is reserved whole when
 * its first row is fetched: a LIMIT stops the reservations after the block
 * it ends in (batch(4000) LIMIT 1 reserves up to 4000 ids; ids not returned
 * are never issued by anyone).  A batch never borrows ticks ahead of the
 * clock: it waits for the next tick instead, so that one caller cannot push
 * the generator up to snowflake.max_borrow_ms ahead and make every other
 * caller wait for the clock.
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
		state->step = SnowflakeSequenceStep(&snowflake_layout);
		funcctx->user_fctx = state;
	}

	funcctx = SRF_PERCALL_SETUP();
	state = (BatchState *) funcctx->user_fctx;
	if (state->remaining == 0)
		SRF_RETURN_DONE(funcctx);

	if (state->in_block == 0)
		state->next_id = fn_reserve(-1, state->remaining, false,
									"snowflake_nextval_batch(integer)",
									&state->in_block);
	id = state->next_id;
	state->next_id += state->step;
	state->in_block--;
	state->remaining--;
	SRF_RETURN_NEXT(funcctx, Int64GetDatum(id));
}

/* The node's named parts as a jsonb object, e.g. {"datacenter": 1, "worker": 3} */
static Datum
fn_parts_jsonb(const SnowflakeLayout *layout, const SnowflakeFields *fields)
{
	StringInfoData json;

	initStringInfo(&json);
	appendStringInfoChar(&json, '{');
	for (int i = 0; i < layout->nparts; i++)
		appendStringInfo(&json, "%s\"%s\": %d", i > 0 ? ", " : "",
						 layout->part_names[i], fields->parts[i]);
	appendStringInfoChar(&json, '}');
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(json.data));
}

/*
 * One row: created_at, timestamp_ms, worker_id, sequence, and with a layout
 * argument also the node's parts as jsonb.
 */
Datum
snowflake_decode(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext oldcontext;

		funcctx = SRF_FIRSTCALL_INIT();
		oldcontext = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		funcctx->tuple_desc = fn_result_tupdesc(fcinfo);
		funcctx->user_fctx = palloc(sizeof(SnowflakeLayout));
		*(SnowflakeLayout *) funcctx->user_fctx =
			*fn_layout(fcinfo, 1, (SnowflakeLayout *) funcctx->user_fctx);
		MemoryContextSwitchTo(oldcontext);
		fn_check_id(funcctx->user_fctx, PG_GETARG_INT64(0));
	}

	funcctx = SRF_PERCALL_SETUP();
	if (funcctx->call_cntr == 0)
	{
		const SnowflakeLayout *layout = funcctx->user_fctx;
		SnowflakeFields fields;
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

		SnowflakeDecompose(layout, PG_GETARG_INT64(0), &fields);
		values[0] = TimestampTzGetDatum(SnowflakeMsToTimestamptz(fields.unix_ms));
		values[1] = Int64GetDatum(fields.unix_ms);
		values[2] = Int32GetDatum(fields.node);
		values[3] = Int32GetDatum(fields.sequence);
		if (funcctx->tuple_desc->natts > 4)
			values[4] = fn_parts_jsonb(layout, &fields);
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

	SnowflakeLayout buffer;
	const SnowflakeLayout *layout = fn_layout(fcinfo, 1, &buffer);

	fn_check_id(layout, id);
	SnowflakeDecompose(layout, id, &fields);
	PG_RETURN_TIMESTAMPTZ(SnowflakeMsToTimestamptz(fields.unix_ms));
}

/*
 * The smallest id that can be issued in the tick containing ts:
 * "id >= snowflake_from_timestamp(ts)" selects every id issued from that
 * tick on.
 */
Datum
snowflake_from_timestamp(PG_FUNCTION_ARGS)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	SnowflakeLayout buffer;
	const SnowflakeLayout *layout = fn_layout(fcinfo, 1, &buffer);
	int64		tick = -1;

	if (!TIMESTAMP_NOT_FINITE(ts))
	{
		int64		unix_ms = SnowflakeTimestamptzToMs(ts);

		if (unix_ms >= layout->epoch_ms)
			tick = SnowflakeTickOf(layout, unix_ms);
	}
	if (tick < 0 || tick > SnowflakeMaxTick(layout))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for snowflake ids"),
				 errdetail("Snowflake ids of layout \"%s\" cover %s to %s.",
						   layout->name,
						   SnowflakeFormatMs(layout->epoch_ms),
						   SnowflakeFormatMs(SnowflakeLastMs(layout)))));

	PG_RETURN_INT64(SnowflakeCompose(layout, tick, 0, 0));
}

/* What a layout gives: widths, tick, epoch, lifetime, capacity. */
Datum
snowflake_layout_info(PG_FUNCTION_ARGS)
{
	SnowflakeLayout buffer;
	const SnowflakeLayout *layout = fn_layout(fcinfo, 0, &buffer);
	int64		ticks = SnowflakeMaxTick(layout) + 1;
	int64		per_tick = (int64) SnowflakeMaxSequence(layout) + 1;
	Datum		values[12];
	bool		nulls[12] = {false};

	values[0] = CStringGetTextDatum(layout->name);
	values[1] = CStringGetTextDatum(SnowflakeLayoutSpec(layout));
	values[2] = Int32GetDatum(layout->time_bits);
	values[3] = Int32GetDatum(layout->node_bits);
	values[4] = Int32GetDatum(layout->sequence_bits);
	values[5] = Int32GetDatum(layout->tick_ms);
	values[6] = TimestampTzGetDatum(SnowflakeMsToTimestamptz(layout->epoch_ms));
	values[7] = Float8GetDatum((double) ticks * layout->tick_ms /
							   (365.25 * 86400.0 * 1000.0));
	values[8] = TimestampTzGetDatum(SnowflakeMsToTimestamptz(SnowflakeLastMs(layout)));
	values[9] = Int64GetDatum((int64) SnowflakeMaxNode(layout) + 1);
	values[10] = Int64GetDatum(per_tick);
	values[11] = Int64GetDatum(per_tick * 1000 / layout->tick_ms);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(fn_result_tupdesc(fcinfo),
													  values, nulls)));
}

/*
 * The columns of the installed version's definition: new columns come last,
 * so that an older definition (before ALTER EXTENSION UPDATE) gets the
 * columns it knows.
 */
Datum
snowflake_stats(PG_FUNCTION_ARGS)
{
	SnowflakeStats stats;
	LeaseInfo	lease;
	int32		worker = -1;
	Datum		values[22];
	bool		nulls[22] = {false};

	GeneratorGetStats(&stats);
	LeaseGetInfo(&lease);
	worker = LeaseOn() ? GeneratorWorkerValue() : snowflake_worker_id;

	/* with leases: the worker id held now, NULL while none is */
	values[0] = Int32GetDatum(worker);
	nulls[0] = (worker < 0);
	values[1] = CStringGetTextDatum(snowflake_layout.name);
	values[2] = TimestampTzGetDatum(SnowflakeMsToTimestamptz(snowflake_layout.epoch_ms));
	values[3] = Int64GetDatum(stats.last_ms);
	nulls[3] = (stats.ids_issued == 0);
	values[4] = Int64GetDatum(stats.ids_issued);
	values[5] = Int64GetDatum(stats.sequence_waits);
	values[6] = Int64GetDatum(stats.borrowed_ticks);
	values[7] = Int64GetDatum(stats.rollbacks_waited);
	values[8] = Int64GetDatum(stats.rollbacks_refused);
	values[9] = TimestampTzGetDatum(SnowflakeMsToTimestamptz(stats.mark_ms));
	nulls[9] = (stats.mark_ms == 0);
	values[10] = Int64GetDatum(stats.mark_writes);
	values[11] = Int64GetDatum(stats.startup_wait_ms);
	values[12] = TimestampTzGetDatum(stats.stats_since);
	values[13] = Int64GetDatum(stats.backend_mark_writes);
	values[14] = Int64GetDatum(stats.mark_waits);
	values[15] = CStringGetTextDatum(lease.state);
	values[16] = Int64GetDatum(lease.generation);
	nulls[16] = (lease.generation == 0);
	values[17] = TimestampTzGetDatum(lease.valid_until);
	nulls[17] = (lease.valid_until == 0);
	values[18] = TimestampTzGetDatum(SnowflakeMsToTimestamptz(lease.horizon_ms));
	nulls[18] = (lease.horizon_ms == 0);
	values[19] = CStringGetTextDatum(lease.coordinator);
	nulls[19] = (lease.coordinator[0] == '\0');
	values[20] = TimestampTzGetDatum(lease.renewed_at);
	nulls[20] = (lease.renewed_at == 0);
	values[21] = Int64GetDatum(lease.requests);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(fn_stats_tupdesc(fcinfo, lengthof(values)),
													  values, nulls)));
}

/* Every counter of snowflake_stats from zero, and stats_since now. */
Datum
snowflake_stats_reset(PG_FUNCTION_ARGS)
{
	GeneratorResetStats();
	LeaseResetStats();
	PG_RETURN_VOID();
}

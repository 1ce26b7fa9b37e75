/*-------------------------------------------------------------------------
 *
 * convert.c
 *	  The trigger of the online conversion (snowflake_convert_column_online()):
 *	  it keeps each bigint shadow column equal to the integer column it
 *	  shadows, for every row inserted or updated while the conversion runs.
 *
 * One generic trigger function, told its columns by the trigger's
 * arguments (source, shadow, source, shadow, ...), so that the conversion
 * creates no function of its own in the user's schemas, and a row costs one
 * tuple copy rather than a PL/pgSQL call.  It holds no state and takes no
 * lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/rel.h"

/*
 * The value for the shadow column named shadow_name of the row, from its
 * source column source_name, as a bigint; *shadow is the shadow's number.
 */
static Datum
sync_shadow_value(Relation rel, HeapTuple tuple, const char *source_name,
				  const char *shadow_name, int *shadow, bool *isnull)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	int			source = SPI_fnumber(tupdesc, source_name);
	Datum		value;

	*shadow = SPI_fnumber(tupdesc, shadow_name);
	if (source <= 0 || *shadow <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of table \"%s\" does not exist",
						source <= 0 ? source_name : shadow_name,
						RelationGetRelationName(rel))));
	if (TupleDescAttr(tupdesc, *shadow - 1)->atttypid != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of table \"%s\" is not of type bigint",
						shadow_name, RelationGetRelationName(rel))));

	value = heap_getattr(tuple, source, tupdesc, isnull);
	if (*isnull)
		return value;
	switch (TupleDescAttr(tupdesc, source - 1)->atttypid)
	{
		case INT2OID:
			return Int64GetDatum((int64) DatumGetInt16(value));
		case INT4OID:
			return Int64GetDatum((int64) DatumGetInt32(value));
		case INT8OID:
			return value;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of table \"%s\" is not of an integer type",
							source_name, RelationGetRelationName(rel))));
	}
	return value;				/* keep the compiler quiet */
}

PG_FUNCTION_INFO_V1(snowflake_convert_sync);

Datum
snowflake_convert_sync(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	HeapTuple	tuple;
	int			npairs;
	int		   *columns;
	Datum	   *values;
	bool	   *nulls;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("snowflake_convert_sync() was not called by the trigger manager")));
	if (!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!(TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) ||
		  TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("snowflake_convert_sync() must be fired before insert or update, for each row")));

	trigger = trigdata->tg_trigger;
	if (trigger->tgnargs == 0 || trigger->tgnargs % 2 != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake_convert_sync() needs pairs of column names as arguments")));

	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
		trigdata->tg_newtuple : trigdata->tg_trigtuple;

	npairs = trigger->tgnargs / 2;
	columns = palloc(npairs * sizeof(int));
	values = palloc(npairs * sizeof(Datum));
	nulls = palloc(npairs * sizeof(bool));
	for (int i = 0; i < npairs; i++)
		values[i] = sync_shadow_value(trigdata->tg_relation, tuple,
									  trigger->tgargs[2 * i],
									  trigger->tgargs[2 * i + 1],
									  &columns[i], &nulls[i]);

	tuple = heap_modify_tuple_by_cols(tuple, RelationGetDescr(trigdata->tg_relation),
									  npairs, columns, values, nulls);
	return PointerGetDatum(tuple);
}

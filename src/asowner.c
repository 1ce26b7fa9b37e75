/*-------------------------------------------------------------------------
 *
 * asowner.c
 *	  The online conversion's row writes, run as the owner of the table they
 *	  write: _snowflake_online_sync_rows().
 *
 * A batch of the backfill (and of the validation's sweep) updates rows of
 * every table that references the converted one.  Each such update
 * evaluates the table's CHECK constraints, index expressions and triggers,
 * code written by the table's owner, which would otherwise run with the
 * rights of whoever calls the conversion, a superuser say.  PostgreSQL runs
 * its own maintenance of a table (REFRESH MATERIALIZED VIEW, index builds)
 * as the table's owner inside a security-restricted operation, with
 * search_path pinned; so does this.
 *
 * The function is not a way to run anything as anyone: it takes no SQL
 * text, only the table and the columns of the conversion, and gets its
 * statement from the extension's own _snowflake_online_batches() (in its own
 * schema, resolved from this function's, before the switch), which builds
 * it from catalog names; the caller must have the privileges of the table's
 * owner, the right that ALTER TABLE, and so the conversion, needs anyway;
 * and PUBLIC cannot execute it.  The user and the settings are restored when
 * the statement ends, and on error by the abort of the (sub)transaction, as
 * PostgreSQL's own callers of SetUserIdAndSecContext() rely on.  It takes
 * no lock of its own beyond ROW EXCLUSIVE on the table, which the update
 * takes anyway.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(_snowflake_online_sync_rows);

/*
 * The statement that sets the table's shadow columns from their columns:
 * the backfill's batch (sweep false) or the sweep's, from the extension's
 * builder, called as the caller with every argument typed.
 */
static char *
asowner_statement(Oid fn_oid, Oid relid, Datum rels, Datum atts, bool sweep)
{
	char	   *nsp = get_namespace_name(get_func_namespace(fn_oid));
	char	   *query;
	Oid			types[3] = {REGCLASSOID, OIDARRAYOID, NAMEARRAYOID};
	Datum		values[3];
	bool		isnull;
	Datum		stmt;

	if (nsp == NULL)
		elog(ERROR, "could not find the schema of function %u", fn_oid);
	query = psprintf("SELECT %s FROM %s._snowflake_online_batches($1::pg_catalog.regclass, "
					 "$2::pg_catalog.oid[], $3::pg_catalog.name[])",
					 sweep ? "sweep_sql" : "update_sql", quote_identifier(nsp));
	values[0] = ObjectIdGetDatum(relid);
	values[1] = rels;
	values[2] = atts;
	if (SPI_execute_with_args(query, 3, types, values, NULL, true, 1) != SPI_OK_SELECT
		|| SPI_processed != 1)
		elog(ERROR, "could not build the online conversion's statement for table %u", relid);
	stmt = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" has no column of the online conversion to set",
						get_rel_name(relid))));
	return TextDatumGetCString(stmt);
}

/*
 * _snowflake_online_sync_rows(tbl, rels, atts, sweep, after, upto, max_rows)
 * sets the shadow columns of a batch of rows of table tbl, as its owner, and
 * returns how many rows it updated.  rels and atts are the conversion's
 * columns (table, name); a batch (sweep false) takes the rows whose primary
 * key is after "after" and up to "upto" (NULL: no bound), a sweep at most
 * max_rows of the rows whose shadows differ.
 */
Datum
_snowflake_online_sync_rows(PG_FUNCTION_ARGS)
{
	Oid			relid;
	Relation	rel;
	Oid			owner;
	char		relkind;
	bool		sweep;
	char	   *stmt;
	Oid			types[2];
	Datum		values[2];
	char		nulls[2] = {' ', ' '};
	int			nargs;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	int			ret;
	uint64		processed;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the table, the columns and the kind of batch must not be null")));
	relid = PG_GETARG_OID(0);
	sweep = PG_GETARG_BOOL(3);
	if (sweep && (PG_ARGISNULL(6) || PG_GETARG_INT32(6) <= 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a sweep needs a positive number of rows")));

	/* the lock the update takes anyway, so that the owner cannot change */
	rel = try_relation_open(relid, RowExclusiveLock);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table with OID %u does not exist", relid)));
	owner = rel->rd_rel->relowner;
	relkind = rel->rd_rel->relkind;
	relation_close(rel, NoLock);
	if (relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an ordinary table", get_rel_name(relid))));
	/* the caller's own right first: that of the owner, as ALTER TABLE */
	if (!has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", get_rel_name(relid))));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	stmt = asowner_statement(fcinfo->flinfo->fn_oid, relid,
							 PG_GETARG_DATUM(1), PG_GETARG_DATUM(2), sweep);
	if (sweep)
	{
		nargs = 1;
		types[0] = INT4OID;
		values[0] = PG_GETARG_DATUM(6);
	}
	else
	{
		nargs = 2;
		types[0] = TEXTARRAYOID;
		types[1] = TEXTARRAYOID;
		values[0] = PG_ARGISNULL(4) ? (Datum) 0 : PG_GETARG_DATUM(4);
		values[1] = PG_ARGISNULL(5) ? (Datum) 0 : PG_GETARG_DATUM(5);
		nulls[0] = PG_ARGISNULL(4) ? 'n' : ' ';
		nulls[1] = PG_ARGISNULL(5) ? 'n' : ' ';
	}

	/* as the owner, restricted, with search_path pinned */
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);

	ret = SPI_execute_with_args(stmt, nargs, types, values, nulls, false, 0);
	processed = SPI_processed;

	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);

	if (ret != SPI_OK_UPDATE)
		elog(ERROR, "the online conversion's update of table \"%s\" failed: %s",
			 get_rel_name(relid), SPI_result_code_string(ret));
	SPI_finish();
	PG_RETURN_INT64((int64) processed);
}

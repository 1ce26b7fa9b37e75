/*-------------------------------------------------------------------------
 *
 * leasecoord.c
 *	  The coordinator's renewal of a worker-id lease, the call a fleet makes
 *	  most: snowflake_lease_renew(node, proofs, next_hash, ttl_ms,
 *	  wanted_horizon_ms), 0.4.0's, with the chain of secrets.
 *
 * It does what the claim and the release do in PL/pgSQL
 * (sql/install/lease.sql), with the same checks and messages, but keeps
 * its one statement planned for the session: the PL/pgSQL renewal planned
 * four dynamic statements on every call (they name the extension's schema,
 * which ALTER EXTENSION ... SET SCHEMA may change), and cost a coordinator
 * many times a plain one-row UPDATE.  The plan is made again when the
 * schema of this function, which moves with the extension, is another or
 * has another name.
 *
 * Every name in the statement is schema-qualified and every operator
 * written OPERATOR(pg_catalog.x), with typed parameters: whatever the
 * caller's search_path (under which PostgreSQL makes the plan again when it
 * changes), no object of another role can take part.  So the function
 * needs no SET clause pinning search_path, which the other lease functions
 * have and which costs each call a level of settings opened and closed; it
 * returns a named row type, snowflake_lease_renewal, whose tuple descriptor
 * comes from the type cache, where OUT parameters had PostgreSQL build it
 * from pg_proc three times per call.
 * SECURITY DEFINER, as the claim and the release: the row's owner writes
 * it; session_user, the caller's login, must be the role that claimed it.
 * The caller's proofs are hashed here (SHA-256, PostgreSQL's own sha256());
 * the table keeps hashes only.  No lock of its own: the row lock of the
 * UPDATE, under the caller's lock_timeout and statement_timeout.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"


PG_FUNCTION_INFO_V1(snowflake_lease_renew);

/* as many secrets as a call may offer (the lease client's last ones) */
#define COORD_MAX_PROOFS 8
/* a secret: 16 random bytes, as 32 lower-case hexadecimal digits */
#define COORD_SECRET_BYTES 16
#define COORD_HASH_BYTES 32

/* the bounds of _snowflake_lease_bounds() */
#define COORD_TTL_MIN_MS 500
#define COORD_TTL_MAX_MS 600000
#define COORD_HORIZON_SLACK_MS 300000

/* the session's plan, and the schema it names */
static SPIPlanPtr coord_plan = NULL;
static Oid	coord_plan_nsp = InvalidOid;
static char *coord_plan_nspname = NULL;

/* the value of one lower-case hexadecimal digit, or -1 */
static int
coord_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void
coord_invalid_proofs(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid lease proofs"),
			 errdetail("A call offers up to 8 secrets, each 32 lower-case hexadecimal digits drawn at random by the lease client.")));
}

/*
 * The hashes of the secrets a call offers, as a bytea[]; raises the
 * PL/pgSQL check's error for anything but up to 8 secrets of 32
 * lower-case hexadecimal digits.
 */
static Datum
coord_proof_hashes(ArrayType *proofs)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	Datum		hashes[COORD_MAX_PROOFS];

	if (ARR_NDIM(proofs) > 1)
		coord_invalid_proofs();
	deconstruct_array(proofs, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n > COORD_MAX_PROOFS)
		coord_invalid_proofs();
	for (int i = 0; i < n; i++)
	{
		text	   *t;
		bytea	   *secret;
		unsigned char *raw;

		if (nulls[i])
			coord_invalid_proofs();
		t = DatumGetTextPP(elems[i]);
		if (VARSIZE_ANY_EXHDR(t) != 2 * COORD_SECRET_BYTES)
			coord_invalid_proofs();
		secret = palloc(VARHDRSZ + COORD_SECRET_BYTES);
		SET_VARSIZE(secret, VARHDRSZ + COORD_SECRET_BYTES);
		raw = (unsigned char *) VARDATA(secret);
		for (int j = 0; j < COORD_SECRET_BYTES; j++)
		{
			int			hi = coord_hex_digit(VARDATA_ANY(t)[2 * j]);
			int			lo = coord_hex_digit(VARDATA_ANY(t)[2 * j + 1]);

			if (hi < 0 || lo < 0)
				coord_invalid_proofs();
			raw[j] = (unsigned char) (hi << 4 | lo);
		}
		hashes[i] = DirectFunctionCall1(sha256_bytea, PointerGetDatum(secret));
		/* (wiped: until the renewal commits, it is still good) */
		explicit_bzero(raw, COORD_SECRET_BYTES);
		pfree(secret);
	}
	return PointerGetDatum(construct_array(hashes, n, BYTEAOID, -1, false, TYPALIGN_INT));
}

/*
 * The renewal's statement, planned once per session and schema.  Under
 * the function's search_path (pg_catalog, pg_temp), with every name
 * qualified all the same.
 */
static SPIPlanPtr
coord_renew_plan(Oid fn_oid)
{
	Oid			nsp = get_func_namespace(fn_oid);
	char	   *nspname = OidIsValid(nsp) ? get_namespace_name(nsp) : NULL;
	Oid			types[5] = {INT4OID, BYTEAARRAYOID, BYTEAOID, INT4OID, INT8OID};
	char	   *query;
	SPIPlanPtr	plan;

	if (nspname == NULL)
		elog(ERROR, "could not find the schema of function %u", fn_oid);
	if (coord_plan != NULL && nsp == coord_plan_nsp && strcmp(nspname, coord_plan_nspname) == 0)
		return coord_plan;

	query = psprintf("UPDATE %s.snowflake_lease "
					 "   SET expires_at = pg_catalog.now() OPERATOR(pg_catalog.+) "
					 "           ($4::pg_catalog.float8 OPERATOR(pg_catalog.*) '1 ms'::pg_catalog.interval), "
					 "       horizon_ms = GREATEST(horizon_ms, $5), renewed_at = pg_catalog.now(), "
					 "       token_hash = $3 "
					 " WHERE node OPERATOR(pg_catalog.=) $1 "
					 "   AND token_hash OPERATOR(pg_catalog.=) ANY ($2) "
					 "   AND claimed_by OPERATOR(pg_catalog.=) SESSION_USER "
					 "   AND released_at IS NULL "
					 "RETURNING horizon_ms, expires_at",
					 quote_identifier(nspname));
	/*
	 * Generic: a custom plan would be made again at every call, which is
	 * what this function is here to avoid; the generic one looks the row up
	 * by its primary key all the same.
	 */
	plan = SPI_prepare_cursor(query, 5, types, CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "could not plan the lease renewal: %s", SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "could not keep the plan of the lease renewal");
	if (coord_plan != NULL)
		SPI_freeplan(coord_plan);
	if (coord_plan_nspname != NULL)
		pfree(coord_plan_nspname);
	coord_plan = plan;
	coord_plan_nsp = nsp;
	coord_plan_nspname = MemoryContextStrdup(TopMemoryContext, nspname);
	return plan;
}

/* milliseconds since 1970 of the statement's start, rounded */
static int64
coord_statement_ms(void)
{
	TimestampTz ts = GetCurrentStatementStartTimestamp();
	int64		us = ts + (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;

	return us >= 0 ? (us + 500) / 1000 : -((-us + 500) / 1000);
}

/*
 * Renews the lease held by one of the proofs, recording a horizon at least
 * wanted_horizon_ms and keeping next_hash: renewed, and the row's horizon
 * and expiry; renewed false and NULLs if no lease of the caller's is held
 * by those proofs.  The checks and their order are those of the PL/pgSQL
 * functions it replaces: the proofs, the next hash, NULLs, the bounds.
 */
Datum
snowflake_lease_renew(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		hashes;
	Datum		args[5];
	Datum		result[3];
	bool		result_null[3] = {false, false, false};
	bool		renewed;
	int64		stored_horizon_ms = 0;
	TimestampTz expires_at = 0;
	int32		ttl_ms;
	int64		horizon_ms;
	int64		now_ms;
	int			ret;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	if (PG_ARGISNULL(1))
		coord_invalid_proofs();
	hashes = coord_proof_hashes(PG_GETARG_ARRAYTYPE_P(1));
	if (PG_ARGISNULL(2) || VARSIZE_ANY_EXHDR(PG_GETARG_BYTEA_PP(2)) != COORD_HASH_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid next hash"),
				 errdetail("The hash of the next secret is its SHA-256, 32 bytes.")));
	if (PG_ARGISNULL(0) || PG_ARGISNULL(3) || PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("no argument may be NULL")));

	ttl_ms = PG_GETARG_INT32(3);
	horizon_ms = PG_GETARG_INT64(4);
	if (ttl_ms < COORD_TTL_MIN_MS || ttl_ms > COORD_TTL_MAX_MS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("time to live %d ms is out of range", ttl_ms),
				 errdetail("A lease lasts from 500 ms to 600000 ms, as \"snowflake.lease_ttl_ms\" allows.")));
	now_ms = coord_statement_ms();
	if (horizon_ms < 0 || horizon_ms > now_ms + ttl_ms + COORD_HORIZON_SLACK_MS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("horizon " INT64_FORMAT " is out of range", horizon_ms),
				 errdetail("A horizon lies from 0 to the time to live plus 300000 ms past the coordinator's clock, " INT64_FORMAT ".",
						   now_ms),
				 errhint("Check that the clocks of the issuing server and of the coordinator agree.")));

	args[0] = PG_GETARG_DATUM(0);
	args[1] = hashes;
	args[2] = PG_GETARG_DATUM(2);
	args[3] = Int32GetDatum(ttl_ms);
	args[4] = Int64GetDatum(horizon_ms);

	SPI_connect();
	ret = SPI_execute_plan(coord_renew_plan(fcinfo->flinfo->fn_oid), args, NULL, false, 1);
	if (ret != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not renew the lease: %s", SPI_result_code_string(ret));
	renewed = SPI_processed == 1;
	if (renewed)
	{
		bool		isnull;

		/* (copied out before SPI_finish frees the tuple) */
		stored_horizon_ms = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
														 1, &isnull));
		expires_at = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
														2, &isnull));
	}
	SPI_finish();

	result[0] = BoolGetDatum(renewed);
	result[1] = renewed ? Int64GetDatum(stored_horizon_ms) : (Datum) 0;
	result[2] = renewed ? TimestampTzGetDatum(expires_at) : (Datum) 0;
	result_null[1] = result_null[2] = !renewed;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), result, result_null)));
}

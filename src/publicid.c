/*-------------------------------------------------------------------------
 *
 * publicid.c
 *	  The text forms of ids for SQL, and the keys of public ids: the key
 *	  table, a per-backend cache of it, and the superuser functions that
 *	  create, drop and move keys.
 *
 * The keys live in the extension's table snowflake_public_key, one row per
 * version, each key wrapped under the root key (AES key wrap with padding,
 * src/keywrap.c; the root key from src/rootkey.c).  So WAL carries them to
 * standbys and through PITR, pg_dump carries the rows (the table is a
 * configuration table of the extension), and pg_upgrade the table; none of
 * these holds the root key.  The key functions write the table in the
 * caller's transaction: ROLLBACK undoes them.
 *
 * A backend reads the table (and unwraps its rows) at its first use of a
 * key, and again after a change commits: the key functions invalidate the
 * table's relcache entry, which every backend (on standbys too, from the
 * commit record) takes at its next lock of the table.  Readers scan with a
 * fresh snapshot, not the transaction's.  See publicid.h for the locks
 * that keep a dropped key from being used after its drop commits.
 *
 * Until 0.3.0's file "snowflake.publickeys" is moved into the table
 * (snowflake_public_keys_move_from_file(), in one transaction), an empty
 * table leaves the file in use, read as 0.3.0 read it (src/keyfile.c): by
 * the first call of a transaction that starts a second or more after the
 * last reading, and at once when a public id names a version the cache
 * lacks, fails the check, or there is no key.  While the extension's
 * objects are 0.3.0's (no table), the key functions write the file as
 * 0.3.0 did.
 *
 * No setting, view or function shows the keys, and no message contains
 * them; the table holds them only wrapped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "idtext.h"
#include "keyfile.h"
#include "keywrap.h"
#include "layout.h"
#include "publicid.h"
#include "rootkey.h"


PG_FUNCTION_INFO_V1(snowflake_to_text);
PG_FUNCTION_INFO_V1(snowflake_from_text);
PG_FUNCTION_INFO_V1(snowflake_public_id);
PG_FUNCTION_INFO_V1(snowflake_id_from_public);
PG_FUNCTION_INFO_V1(snowflake_public_key_create);
PG_FUNCTION_INFO_V1(snowflake_public_key_drop);
PG_FUNCTION_INFO_V1(snowflake_public_keys);
PG_FUNCTION_INFO_V1(snowflake_public_keys_move_from_file);
PG_FUNCTION_INFO_V1(snowflake_public_key_changed);
PG_FUNCTION_INFO_V1(snowflake_root_key_rewrap);

static void
idtext_check_id(int64 id)
{
	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("snowflake id must not be negative"),
				 errdetail("The id was " INT64_FORMAT ".", id)));
}

/*
 * The digit values of a text of expected_length Crockford base32
 * characters, or an error naming what is wrong: its length, or its first
 * bad character and where it is (what says "snowflake text id" or "public
 * id").
 */
static void
idtext_parse_digits(text *input, int expected_length, const char *what,
				 unsigned char *digits)
{
	const char *s = VARDATA_ANY(input);
	int			bytes = VARSIZE_ANY_EXHDR(input);
	int			length = pg_mbstrlen_with_len(s, bytes);
	int			position = 0;

	if (length != expected_length)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("%s has %d characters, not %d", what, length, expected_length)));
	for (int offset = 0; offset < bytes; position++)
	{
		int			width = pg_mblen(s + offset);
		int			value = width == 1 ? IdTextDigitValue((unsigned char) s[offset]) : -1;

		if (value < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid character \"%.*s\" at position %d of %s \"%s\"",
							width, s + offset, position + 1, what,
							text_to_cstring(input)),
					 errdetail("Crockford base32 has the digits 0 to 9 and the letters A to Z except U, in either case; I and L are read as 1, O as 0.")));
		digits[position] = (unsigned char) value;
		offset += width;
	}
}

/* ---- the unkeyed text form ---- */

/*
 * snowflake_to_text(id bigint) returns text: 13 characters of Crockford
 * base32, in id order.
 */
Datum
snowflake_to_text(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	char		out[SNOWFLAKE_TEXT_LENGTH + 1];

	idtext_check_id(id);
	IdTextEncode(id, out);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(out, SNOWFLAKE_TEXT_LENGTH));
}

Datum
snowflake_from_text(PG_FUNCTION_ARGS)
{
	text	   *input = PG_GETARG_TEXT_PP(0);
	unsigned char digits[SNOWFLAKE_TEXT_LENGTH];
	int64		id;

	idtext_parse_digits(input, SNOWFLAKE_TEXT_LENGTH, "snowflake text id", digits);
	id = IdTextDecode(digits);
	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid character \"%c\" at position 1 of snowflake text id \"%s\"",
						VARDATA_ANY(input)[0], text_to_cstring(input)),
				 errdetail("The first character of a snowflake text id is 0 to 7: a larger one makes a value beyond bigint.")));
	PG_RETURN_INT64(id);
}

/* ---- where the keys are ---- */

/*
 * Where this backend's keys came from: the table (0.4.0), or the file,
 * because the extension's objects are still 0.3.0's (no table) or because
 * the table is empty and the file's keys were not moved yet.
 */
typedef enum KeySource
{
	KEYS_NONE,
	KEYS_TABLE,
	KEYS_FILE
} KeySource;

/* This backend's keys (see the header for when they are read again) */
static struct
{
	KeySource	source;
	TimestampTz read_at;		/* the file's: start of the transaction that
								 * read it */
	uint64		generation;		/* counts the changes of keys */
	size_t		length;			/* the file's bytes, when source is
								 * KEYS_FILE; 0: no file */
	char		bytes[KEY_FILE_MAX_SIZE];
	KeySet		keys;
	Ff1Key		ff1[SNOWFLAKE_PUBLIC_VERSIONS];	/* prepared on first use */
}			key_cache;

/* The table, as this backend last found it */
static struct
{
	bool		callback;		/* the relcache callback is registered */
	bool		known;			/* oid answers for the calling functions */
	Oid			oid;			/* InvalidOid: 0.3.0's objects, no table */
	bool		read;			/* rows holds the table as of the last
								 * invalidation */
	int			rows;
}			key_table;

#define KEY_TABLE_NAME		"snowflake_public_key"

/*
 * A change of the table's rows by the key functions (and its drop or
 * ALTER) invalidates its relcache entry at commit, also on standbys, which
 * replay the commit's invalidations: read it again.
 */
static void
key_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == key_table.oid)
	{
		key_table.known = false;
		key_table.read = false;
	}
}

/*
 * The key table of the extension whose function fn_oid is: in that
 * function's schema, and a member of the same extension (a table of that
 * name that is not, which another role could have made before the update
 * from 0.3.0, is not the key table).  InvalidOid when there is none.
 */
static Oid
key_table_find(Oid fn_oid)
{
	Oid			relid;
	Oid			extension;

	if (!key_table.callback)
	{
		CacheRegisterRelcacheCallback(key_relcache_callback, (Datum) 0);
		key_table.callback = true;
	}
	if (key_table.known)
		return key_table.oid;
	relid = get_relname_relid(KEY_TABLE_NAME, get_func_namespace(fn_oid));
	extension = getExtensionOfObject(ProcedureRelationId, fn_oid);
	if (OidIsValid(relid) &&
		(!OidIsValid(extension) || getExtensionOfObject(RelationRelationId, relid) != extension))
		relid = InvalidOid;
	key_table.oid = relid;
	key_table.known = true;
	key_table.read = false;
	return relid;
}

/*
 * The key table locked in mode (until the end of the transaction), or
 * InvalidOid.  Readers take AccessShareLock, the lock a drop waits out: a
 * transaction that used a key has it until it ends, and one that starts
 * using keys after a drop commits reads the table again (the lock takes
 * the invalidation).
 */
static Oid
key_table_lock(Oid fn_oid, LOCKMODE mode)
{
	for (;;)
	{
		Oid			relid = key_table_find(fn_oid);

		if (!OidIsValid(relid))
			return InvalidOid;
		LockRelationOid(relid, mode);
		/* still the table once the invalidations the lock took are in? */
		if (key_table.known && key_table.oid == relid)
			return relid;
		UnlockRelationOid(relid, mode);
	}
}

static void
key_forget_ciphers(void)
{
	for (int v = 0; v < SNOWFLAKE_PUBLIC_VERSIONS; v++)
		Ff1KeyFree(&key_cache.ff1[v]);
}

/* Take keys, from source (with the file's bytes[0..length-1]) */
static void
key_cache_set(KeySource source, const char *bytes, size_t length, const KeySet *keys)
{
	key_forget_ciphers();
	key_cache.source = KEYS_NONE;
	explicit_bzero(&key_cache.keys, sizeof(KeySet));
	explicit_bzero(key_cache.bytes, sizeof(key_cache.bytes));
	if (length > 0)
		memcpy(key_cache.bytes, bytes, length);
	key_cache.length = length;
	memcpy(&key_cache.keys, keys, sizeof(KeySet));
	key_cache.source = source;
	key_cache.generation++;
}

/*
 * Read the key table's rows into *keys, unwrapping each under the root key,
 * or under the previous one (then under_previous[version] is set, when
 * under_previous is not NULL), the table being locked.  Returns the number
 * of rows.  A fresh snapshot,
 * not the transaction's: a REPEATABLE READ transaction that began before a
 * drop committed must not see the dropped key.  (The catalog snapshot is
 * one: taken anew for a relation that is not a catalog, and usable in
 * parallel workers, unlike GetLatestSnapshot().)
 */
static int
key_table_read(Oid relid, KeySet *keys, bool *under_previous)
{
	Relation	rel = table_open(relid, NoLock);
	TupleDesc	desc = RelationGetDescr(rel);
	Snapshot	snapshot;
	SysScanDesc scan;
	HeapTuple	tuple;
	const unsigned char *root = NULL;
	int			rows = 0;
	static const Oid types[] = {INT4OID, TIMESTAMPTZOID, BOOLOID, BYTEAOID, TEXTOID};

	memset(keys, 0, sizeof(KeySet));
	keys->current = -1;
	if (desc->natts != lengthof(types))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("table \"%s\" does not have the columns of the keys of public ids",
						RelationGetRelationName(rel))));
	for (int i = 0; i < (int) lengthof(types); i++)
		if (TupleDescAttr(desc, i)->atttypid != types[i] || TupleDescAttr(desc, i)->attisdropped)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("table \"%s\" does not have the columns of the keys of public ids",
							RelationGetRelationName(rel))));

	/* (a plain heap scan, which systable_* does without an index) */
	snapshot = RegisterSnapshot(GetCatalogSnapshot(relid));
	scan = systable_beginscan(rel, InvalidOid, false, snapshot, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Datum		values[5];
		bool		nulls[5];
		int32		version;
		bytea	   *wrapped;
		unsigned char key[KEYWRAP_MAX_KEY];
		int			length;

		heap_deform_tuple(tuple, desc, values, nulls);
		for (int i = 0; i < 5; i++)
		{
			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("a row of table \"%s\" has a null column",
								RelationGetRelationName(rel))));
		}
		version = DatumGetInt32(values[0]);
		if (version < 0 || version >= SNOWFLAKE_PUBLIC_VERSIONS || keys->present[version])
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("table \"%s\" holds an impossible or repeated key version",
							RelationGetRelationName(rel))));
		if (root == NULL)
			root = RootKeyRequire();
		wrapped = DatumGetByteaPP(values[3]);
		length = KeyUnwrap(root, ROOT_KEY_BYTES, (unsigned char *) VARDATA_ANY(wrapped),
						   VARSIZE_ANY_EXHDR(wrapped), key);
		if (length != SNOWFLAKE_KEY_BYTES && RootKeyPrevious() != NULL)
		{
			length = KeyUnwrap(RootKeyPrevious(), ROOT_KEY_BYTES,
							   (unsigned char *) VARDATA_ANY(wrapped),
							   VARSIZE_ANY_EXHDR(wrapped), key);
			if (length == SNOWFLAKE_KEY_BYTES && under_previous != NULL)
				under_previous[version] = true;
		}
		if (length != SNOWFLAKE_KEY_BYTES)
		{
			char	   *row_check = TextDatumGetCString(values[4]);
			char	   *own_check = RootKeyCheckValue();
			char	   *previous_check = RootKeyPrevious() == NULL ? NULL :
				RootKeyCheckValueOf(RootKeyPrevious());

			explicit_bzero(key, sizeof(key));
			explicit_bzero(keys, sizeof(KeySet));
			if (strcmp(row_check, own_check) == 0 ||
				(previous_check != NULL && strcmp(row_check, previous_check) == 0))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("key version %d of public ids fails the integrity check of its unwrap",
								version),
						 errdetail("It was wrapped under a root key this server has (check value %s): its wrapped bytes were changed.",
								   row_check),
						 errhint("Restore the row from a backup of the database.")));
			ereport(ERROR,
					(errcode(ERRCODE_SNOWFLAKE_ROOT_KEY),
					 errmsg("key version %d of public ids does not unwrap under this server's root key",
							version),
					 previous_check == NULL ?
					 errdetail("It was wrapped under the root key whose check value is %s; this server's root key has check value %s.",
							   row_check, own_check) :
					 errdetail("It was wrapped under the root key whose check value is %s; this server's root key has check value %s, its previous root key %s.",
							   row_check, own_check, previous_check),
					 errhint("Give this server the root key of the servers that made the key (\"snowflake.root_key_command\"), and restart it.")));
		}
		memcpy(keys->key[version], key, SNOWFLAKE_KEY_BYTES);
		explicit_bzero(key, sizeof(key));
		keys->present[version] = true;
		keys->created_ms[version] = SnowflakeTimestamptzToMs(DatumGetTimestampTz(values[1]));
		if (DatumGetBool(values[2]))
			keys->current = version;
		keys->nkeys++;
		rows++;
	}
	systable_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, NoLock);
	if (rows > 0 && keys->current < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("table \"%s\" has no current key", KEY_TABLE_NAME)));
	return rows;
}

/* A second: how stale the file's keys that make new public ids may be */
#define KEY_REREAD_INTERVAL_US	INT64CONST(1000000)

/*
 * The keys of the file, read again when the last reading is a second older
 * than this transaction (or at once when force is set).
 */
static const KeySet *
key_load_file(bool force)
{
	char		buffer[KEY_FILE_MAX_SIZE + 1];
	size_t		length;
	KeySet		keys;
	const char *problem;
	TimestampTz now = GetCurrentTransactionStartTimestamp();

	/* (a transaction that started before the reading, as after a clock step, reads again) */
	if (!force && key_cache.source == KEYS_FILE && now >= key_cache.read_at &&
		now - key_cache.read_at < KEY_REREAD_INTERVAL_US)
		return &key_cache.keys;

	/* the extension may have been updated meanwhile: look for the table again */
	if (!OidIsValid(key_table.oid))
		key_table.known = false;

	length = KeyFileRead(buffer);
	if (key_cache.source == KEYS_FILE && length == key_cache.length &&
		memcmp(buffer, key_cache.bytes, length) == 0)
	{
		explicit_bzero(buffer, sizeof(buffer));
		key_cache.read_at = now;
		return &key_cache.keys;
	}
	if (length == 0)
	{
		memset(&keys, 0, sizeof(keys));
		keys.current = -1;
		problem = NULL;
	}
	else
		problem = length > KEY_FILE_MAX_SIZE ? "The file is longer than any key file." :
			KeyFileParse(buffer, length, &keys);
	if (problem != NULL)
	{
		explicit_bzero(buffer, sizeof(buffer));
		explicit_bzero(&keys, sizeof(keys));
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid key file \"%s\"", SNOWFLAKE_KEY_FILE),
				 errdetail("%s", problem),
				 errhint("Restore the file from a backup or from another server of the same application.")));
	}
	key_cache_set(KEYS_FILE, buffer, length, &keys);
	explicit_bzero(buffer, sizeof(buffer));
	explicit_bzero(&keys, sizeof(keys));
	key_cache.read_at = now;
	return &key_cache.keys;
}

/*
 * The keys for the function fn_oid: the table's when it has rows; else the
 * file's (0.3.0's objects, or keys not moved yet).  force reads the file
 * again at once (the table's rows are read again on every change anyway).
 */
static const KeySet *
key_load(Oid fn_oid, bool force)
{
	Oid			relid = key_table_lock(fn_oid, AccessShareLock);

	if (OidIsValid(relid))
	{
		if (!key_table.read)
		{
			KeySet		keys;

			key_table.rows = key_table_read(relid, &keys, NULL);
			if (key_table.rows > 0)
				key_cache_set(KEYS_TABLE, NULL, 0, &keys);
			explicit_bzero(&keys, sizeof(keys));
			key_table.read = true;
		}
		if (key_table.rows > 0)
			return &key_cache.keys;
	}
	return key_load_file(force);
}

/* The prepared cipher of a version the cache holds */
static const Ff1Key *
key_cipher(int version)
{
	Ff1Key	   *ff1 = &key_cache.ff1[version];

	Assert(key_cache.keys.present[version]);
	if (ff1->cipher == NULL &&
		Ff1KeyInit(ff1, key_cache.keys.key[version], SNOWFLAKE_KEY_BYTES) != FF1_OK)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not prepare AES key version %d", version)));
	return ff1;
}

/* ---- the superuser functions ---- */

/*
 * A key administrator's preconditions: superuser, not in recovery (a
 * standby's keys come from its primary), and the writers' lock: mode on the
 * key table, or, with 0.3.0's objects, a cluster-wide advisory lock for
 * the file.  Returns the key table (InvalidOid for the file).
 */
static Oid
key_begin_change(FunctionCallInfo fcinfo, const char *function, LOCKMODE mode)
{
	Oid			fn_oid = fcinfo->flinfo->fn_oid;
	Oid			relid;
	LOCKTAG		tag;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function %s", function),
				 errdetail("Only superusers manage the keys of public ids.")));
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot change public id keys during recovery"),
				 errhint("Change the keys on the primary: the standbys replay the change.")));
	relid = key_table_lock(fn_oid, mode);
	if (OidIsValid(relid))
	{
		/* the rows as they are now, under the lock */
		key_table.read = false;
		(void) key_load(fn_oid, true);
		return relid;
	}
	/* database 0: one lock for the whole cluster, whose data directory holds the file */
	SET_LOCKTAG_ADVISORY(tag, InvalidOid, KEY_FILE_MAGIC, 0, 0x5346);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	(void) key_load_file(true);
	return InvalidOid;
}

/*
 * key_begin_change for what only the key table has (the move, the rewrap):
 * refused while the extension's objects are 0.3.0's.  Creators wait; readers
 * go on.
 */
static Oid
key_begin_table_change(FunctionCallInfo fcinfo, const char *function)
{
	Oid			relid = key_begin_change(fcinfo, function, ShareRowExclusiveLock);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the extension's objects are older than this library"),
				 errhint("Update them first: ALTER EXTENSION snowflake UPDATE.")));
	return relid;
}

/* Refuse to change the table's keys while the file's are not moved */
static void
key_check_moved(const char *function)
{
	if (key_table.rows == 0 && key_cache.source == KEYS_FILE && key_cache.keys.nkeys > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot run %s: the keys of public ids are still in the file \"%s\"",
						function, SNOWFLAKE_KEY_FILE),
				 errdetail("Public ids made with them must keep decoding."),
				 errhint("Move them into the table first: SELECT snowflake_public_keys_move_from_file();")));
}

/* The schema-qualified name of the key table, for statements */
static char *
key_table_qualified(Oid relid)
{
	return psprintf("%s.%s", quote_identifier(get_namespace_name(get_rel_namespace(relid))),
					KEY_TABLE_NAME);
}

/* A key version wrapped under the root key, as a bytea */
static Datum
key_wrapped_datum(int version, const unsigned char *key)
{
	unsigned char wrapped[KEYWRAP_WRAPPED_LEN(SNOWFLAKE_KEY_BYTES)];
	bytea	   *datum;

	if (!KeyWrap(RootKeyRequire(), ROOT_KEY_BYTES, key, SNOWFLAKE_KEY_BYTES, wrapped))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not wrap key version %d", version)));
	datum = (bytea *) palloc(VARHDRSZ + sizeof(wrapped));
	SET_VARSIZE(datum, VARHDRSZ + sizeof(wrapped));
	memcpy(VARDATA(datum), wrapped, sizeof(wrapped));
	return PointerGetDatum(datum);
}

/* Insert a key, wrapped under the root key, as the current one or not */
static void
key_table_insert(Oid relid, int version, int64 created_ms, const unsigned char *key, bool current)
{
	Oid			types[5] = {INT4OID, TIMESTAMPTZOID, BOOLOID, BYTEAOID, TEXTOID};
	Datum		values[5];
	char	   *sql;

	values[0] = Int32GetDatum(version);
	values[1] = TimestampTzGetDatum(SnowflakeMsToTimestamptz(created_ms));
	values[2] = BoolGetDatum(current);
	values[3] = key_wrapped_datum(version, key);
	values[4] = CStringGetTextDatum(RootKeyCheckValue());
	/* typed parameters and no operator: nothing another role made can take part */
	sql = psprintf("INSERT INTO %s (version, created, \"current\", wrapped, root_check) VALUES ($1, $2, $3, $4, $5)",
				   key_table_qualified(relid));
	if (SPI_execute_with_args(sql, 5, types, values, NULL, false, 0) != SPI_OK_INSERT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not insert key version %d", version)));
}

/*
 * Every session reads the table again once this transaction commits (its
 * trigger does the same for any other change of its rows).
 */
static void
key_table_changed(Oid relid)
{
	CacheInvalidateRelcacheByRelid(relid);
	key_table.read = false;
}

/* The key table's statement trigger: see key_table_changed */
Datum
snowflake_public_key_changed(PG_FUNCTION_ARGS)
{
	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("_snowflake_public_key_changed() must be called as a trigger")));
	key_table_changed(RelationGetRelid(((TriggerData *) fcinfo->context)->tg_relation));
	return PointerGetDatum(NULL);
}

Datum
snowflake_public_key_create(PG_FUNCTION_ARGS)
{
	/* (0.3.0's SQL function takes no argument) */
	bool		first = PG_NARGS() > 0 && !PG_ARGISNULL(0) && PG_GETARG_BOOL(0);
	KeySet		keys;
	int			version;
	Oid			relid;

	/* creators wait for each other, not for readers */
	relid = key_begin_change(fcinfo, "snowflake_public_key_create", ShareRowExclusiveLock);
	if (OidIsValid(relid))
	{
		key_check_moved("snowflake_public_key_create()");
		(void) RootKeyRequire();

		/*
		 * A database without keys may be one whose keys are missing: a
		 * standby promoted, or a backup restored, from before the first
		 * key.  A key made there would take version 1 with other bits than
		 * the application's version 1: its public ids would be refused, or
		 * decode to other ids.  Only the operator knows which it is.
		 */
		if (key_table.rows == 0 && !first)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("no key of public ids exists in this database"),
					 errdetail("If its application has made public ids before, their keys are missing here, and a new key would give one of their versions other bits."),
					 errhint("Restore the keys if they exist (they come with the database: replication, pg_dump, pg_upgrade, or their rows copied from another server of the application); for the application's first key, call snowflake_public_key_create(first => true).")));
	}
	memcpy(&keys, &key_cache.keys, sizeof(keys));
	if (OidIsValid(relid) && key_table.rows == 0)
	{
		memset(&keys, 0, sizeof(keys));
		keys.current = -1;
	}
	version = keys.current < 0 ? 1 : (keys.current + 1) % SNOWFLAKE_PUBLIC_VERSIONS;
	if (keys.present[version])
	{
		explicit_bzero(&keys, sizeof(keys));
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("key version %d, the next after the current one, still exists", version),
				 errdetail("Public ids carry one character of key version, 0 to 31, used in turn."),
				 errhint("Drop it with snowflake_public_key_drop(%d) once no public id made with it must decode.",
						 version)));
	}
	if (!pg_strong_random(keys.key[version], SNOWFLAKE_KEY_BYTES))
	{
		explicit_bzero(&keys, sizeof(keys));
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random key")));
	}
	keys.present[version] = true;
	keys.created_ms[version] = SnowflakeTimestamptzToMs(GetCurrentTimestamp());
	PG_TRY();
	{
		if (OidIsValid(relid))
		{
			char	   *sql = psprintf("UPDATE %s SET \"current\" = false WHERE \"current\"",
									   key_table_qualified(relid));

			SPI_connect();
			if (SPI_execute(sql, false, 0) != SPI_OK_UPDATE)
				ereport(ERROR,
						(errcode(ERRCODE_INTERNAL_ERROR),
						 errmsg("could not update the current key")));
			key_table_insert(relid, version, keys.created_ms[version], keys.key[version], true);
			SPI_finish();
			key_table_changed(relid);
		}
		else
		{
			char		bytes[KEY_FILE_MAX_SIZE];
			size_t		length;

			keys.current = version;
			keys.nkeys++;
			length = KeyFileWrite(&keys, bytes);
			/* this backend sees its own change at once */
			key_cache_set(KEYS_FILE, bytes, length, &keys);
			key_cache.read_at = GetCurrentTransactionStartTimestamp();
			explicit_bzero(bytes, sizeof(bytes));
		}
	}
	PG_FINALLY();
	{
		explicit_bzero(&keys, sizeof(keys));
	}
	PG_END_TRY();
	PG_RETURN_INT32(version);
}

Datum
snowflake_public_key_drop(PG_FUNCTION_ARGS)
{
	int32		version = PG_GETARG_INT32(0);
	KeySet		keys;
	Oid			relid;

	/* waits out every transaction that has used a key, and holds off new ones */
	relid = key_begin_change(fcinfo, "snowflake_public_key_drop", AccessExclusiveLock);
	if (OidIsValid(relid))
		key_check_moved("snowflake_public_key_drop()");
	if (version < 0 || version >= SNOWFLAKE_PUBLIC_VERSIONS || !key_cache.keys.present[version] ||
		(OidIsValid(relid) && key_table.rows == 0))
		PG_RETURN_BOOL(false);
	if (version == key_cache.keys.current)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot drop key version %d: it is the current key", version),
				 errhint("Create a new key with snowflake_public_key_create() first.")));
	if (OidIsValid(relid))
	{
		Oid			types[1] = {INT4OID};
		Datum		values[1] = {Int32GetDatum(version)};
		char	   *sql = psprintf("DELETE FROM %s WHERE version OPERATOR(pg_catalog.=) $1",
								   key_table_qualified(relid));

		SPI_connect();
		if (SPI_execute_with_args(sql, 1, types, values, NULL, false, 0) != SPI_OK_DELETE)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not delete key version %d", version)));
		SPI_finish();
		key_table_changed(relid);
		PG_RETURN_BOOL(true);
	}
	memcpy(&keys, &key_cache.keys, sizeof(keys));
	keys.present[version] = false;
	explicit_bzero(keys.key[version], SNOWFLAKE_KEY_BYTES);
	keys.nkeys--;
	PG_TRY();
	{
		char		bytes[KEY_FILE_MAX_SIZE];
		size_t		length = KeyFileWrite(&keys, bytes);

		key_cache_set(KEYS_FILE, bytes, length, &keys);
		key_cache.read_at = GetCurrentTransactionStartTimestamp();
		explicit_bzero(bytes, sizeof(bytes));
	}
	PG_FINALLY();
	{
		explicit_bzero(&keys, sizeof(keys));
	}
	PG_END_TRY();
	PG_RETURN_BOOL(true);
}

/*
 * snowflake_public_keys_move_from_file() returns integer: the keys of
 * 0.3.0's file, the same bits, versions, creation times and current key,
 * written into the table wrapped under the root key, in the caller's
 * transaction (so a failure half-way leaves the file in use).  From its
 * commit on, the table's keys are used and the file is not read.
 */
Datum
snowflake_public_keys_move_from_file(PG_FUNCTION_ARGS)
{
	Oid			relid;
	KeySet		keys;
	volatile int moved = 0;

	relid = key_begin_table_change(fcinfo, "snowflake_public_keys_move_from_file");
	if (key_table.rows > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the keys of public ids are already in the table"),
				 errdetail("The file \"%s\" is no longer read.", SNOWFLAKE_KEY_FILE)));
	if (key_cache.source != KEYS_FILE || key_cache.keys.nkeys == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("there is no key file \"%s\" to move", SNOWFLAKE_KEY_FILE)));
	(void) RootKeyRequire();
	memcpy(&keys, &key_cache.keys, sizeof(keys));
	PG_TRY();
	{
		SPI_connect();
		for (int v = 0; v < SNOWFLAKE_PUBLIC_VERSIONS; v++)
		{
			if (!keys.present[v])
				continue;
			key_table_insert(relid, v, keys.created_ms[v], keys.key[v], v == keys.current);
			moved++;
		}
		SPI_finish();
	}
	PG_FINALLY();
	{
		explicit_bzero(&keys, sizeof(keys));
	}
	PG_END_TRY();
	key_table_changed(relid);
	PG_RETURN_INT32(moved);
}

/*
 * snowflake_root_key_rewrap() returns integer: every key wrapped under the
 * previous root key ("snowflake.previous_root_key_command") wrapped again
 * under the root key, in the caller's transaction; the keys' bits, and so
 * every public id, stay the same.  Returns how many rows it rewrapped.
 * Creators wait for it; readers do not (the keys do not change).
 */
Datum
snowflake_root_key_rewrap(PG_FUNCTION_ARGS)
{
	Oid			relid;
	KeySet		keys;
	bool		under_previous[SNOWFLAKE_PUBLIC_VERSIONS] = {false};
	volatile int rewrapped = 0;

	relid = key_begin_table_change(fcinfo, "snowflake_root_key_rewrap");
	(void) RootKeyRequire();
	(void) key_table_read(relid, &keys, under_previous);
	PG_TRY();
	{
		Oid			types[3] = {INT4OID, BYTEAOID, TEXTOID};
		char	   *sql = psprintf("UPDATE %s SET wrapped = $2, root_check = $3 WHERE version OPERATOR(pg_catalog.=) $1",
								   key_table_qualified(relid));
		Datum		root_check = CStringGetTextDatum(RootKeyCheckValue());

		SPI_connect();
		for (int v = 0; v < SNOWFLAKE_PUBLIC_VERSIONS; v++)
		{
			Datum		values[3];

			if (!keys.present[v] || !under_previous[v])
				continue;
			values[0] = Int32GetDatum(v);
			values[1] = key_wrapped_datum(v, keys.key[v]);
			values[2] = root_check;
			if (SPI_execute_with_args(sql, 3, types, values, NULL, false, 0) != SPI_OK_UPDATE ||
				SPI_processed != 1)
				ereport(ERROR,
						(errcode(ERRCODE_INTERNAL_ERROR),
						 errmsg("could not rewrap key version %d", v)));
			rewrapped++;
		}
		SPI_finish();
	}
	PG_FINALLY();
	{
		explicit_bzero(&keys, sizeof(keys));
	}
	PG_END_TRY();
	key_table_changed(relid);
	PG_RETURN_INT32(rewrapped);
}

/*
 * The keys without their bits: version, creation, whether current, and a
 * check value (the first 3 bytes of AES-256 of a zero block under the key,
 * as key ceremonies compare keys) to compare the servers of a fleet.
 */
Datum
snowflake_public_keys(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	const KeySet *keys;
	int		   *next;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;
		TupleDesc	tupdesc;

		funcctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("function returning record called in context that cannot accept type record")));
		funcctx->tuple_desc = BlessTupleDesc(tupdesc);
		funcctx->user_fctx = palloc0(sizeof(int));
		MemoryContextSwitchTo(old);
	}
	funcctx = SRF_PERCALL_SETUP();
	next = (int *) funcctx->user_fctx;
	/* the keys as they are now, at the first row */
	keys = key_load(fcinfo->flinfo->fn_oid, *next == 0);
	for (; *next < SNOWFLAKE_PUBLIC_VERSIONS; (*next)++)
	{
		int			v = *next;
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};
		unsigned char zero[16] = {0};
		unsigned char block[16];
		char		hex[7];

		if (!keys->present[v])
			continue;
		if (!Ff1Block(key_cipher(v), zero, block))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not compute the check value of key version %d", v)));
		snprintf(hex, sizeof(hex), "%02X%02X%02X", block[0], block[1], block[2]);
		values[0] = Int32GetDatum(v);
		values[1] = TimestampTzGetDatum(SnowflakeMsToTimestamptz(keys->created_ms[v]));
		values[2] = BoolGetDatum(v == keys->current);
		values[3] = CStringGetTextDatum(hex);
		(*next)++;
		SRF_RETURN_NEXT(funcctx,
						HeapTupleGetDatum(heap_form_tuple(funcctx->tuple_desc, values, nulls)));
	}
	SRF_RETURN_DONE(funcctx);
}

/* ---- public ids ---- */

Datum
snowflake_public_id(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	Oid			fn_oid = fcinfo->flinfo->fn_oid;
	const KeySet *keys;
	char		out[SNOWFLAKE_PUBLIC_LENGTH + 1];

	idtext_check_id(id);
	keys = key_load(fn_oid, false);
	if (keys->current < 0)
		keys = key_load(fn_oid, true);	/* one may have been made since */
	if (keys->current < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no public id key exists"),
				 key_cache.source == KEYS_FILE && !OidIsValid(key_table.oid) ?
				 errhint("A superuser creates one with snowflake_public_key_create(), or copies the key file \"%s\" from a server of the same application.",
						 SNOWFLAKE_KEY_FILE) :
				 errhint("If this application has made public ids before, this database lacks its keys: they come with the database (replication, pg_dump, pg_upgrade); restore it from there rather than create another key.  Otherwise a superuser creates the first with snowflake_public_key_create(first => true).")));
	if (PublicIdEncrypt(key_cipher(keys->current), keys->current, id, out) != PUBLIC_ID_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not encrypt with key version %d", keys->current)));
	PG_RETURN_TEXT_P(cstring_to_text_with_len(out, SNOWFLAKE_PUBLIC_LENGTH));
}

Datum
snowflake_id_from_public(PG_FUNCTION_ARGS)
{
	text	   *input = PG_GETARG_TEXT_PP(0);
	Oid			fn_oid = fcinfo->flinfo->fn_oid;
	unsigned char digits[SNOWFLAKE_PUBLIC_LENGTH];
	const KeySet *keys;
	int			version;
	int64		id;
	PublicIdResult result;

	idtext_parse_digits(input, SNOWFLAKE_PUBLIC_LENGTH, "public id", digits);
	version = digits[0];
	keys = key_load(fn_oid, false);
	if (!keys->present[version])
		keys = key_load(fn_oid, true);	/* it may have been made since */

	/*
	 * The same code as a malformed string: anyone can type a version
	 * character, so the code cannot tell a stranger's string from a server
	 * that lacks a key; the message can.
	 */
	if (!keys->present[version])
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("public id \"%s\" needs key version %d, which this server does not have",
						text_to_cstring(input), version),
				 key_cache.source == KEYS_FILE && !OidIsValid(key_table.oid) ?
				 errhint("If a server of the same application made it, copy the key file \"%s\" from there.",
						 SNOWFLAKE_KEY_FILE) :
				 errhint("If a server of the same application made it, this database lacks that key: keys come with the database (replication, pg_dump, pg_upgrade).")));
	result = PublicIdDecrypt(key_cipher(version), version, digits + 1, &id);
	if (result == PUBLIC_ID_NOT_MADE_BY_KEY && key_cache.source == KEYS_FILE)
	{
		/* the version may have been dropped and made again since */
		uint64		generation = key_cache.generation;

		keys = key_load(fn_oid, true);
		if (key_cache.generation != generation && keys->present[version])
			result = PublicIdDecrypt(key_cipher(version), version, digits + 1, &id);
	}
	switch (result)
	{
		case PUBLIC_ID_OK:
			break;
		case PUBLIC_ID_NOT_MADE_BY_KEY:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("public id \"%s\" was not made with key version %d of this server",
							text_to_cstring(input), version),
					 errdetail("It fails the check: it is mistyped, or was made with another key.")));
			break;
		case PUBLIC_ID_CIPHER_FAILED:
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not decrypt with key version %d", version)));
			break;
	}
	PG_RETURN_INT64(id);
}

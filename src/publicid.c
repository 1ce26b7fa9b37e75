/*-------------------------------------------------------------------------
 *
 * publicid.c
 *	  The text forms of ids for SQL, and the keys of public ids: their file
 *	  (format, durable write, load and validation), a per-backend cache of
 *	  it, and the superuser functions that create and drop keys.
 *
 * The key file is a header (magic number, format version, the current key's
 * version, the number of keys), one entry per key (its version, when it was
 * made, its 256 bits) in ascending version order, then a CRC-32C over all of
 * it.  It is replaced whole, as the high-water mark is: written to a
 * temporary file, then moved into place by durable_rename(), so after an OS
 * crash there is the old file or the new one.  It is read only if it is a
 * regular file (not a link, a FIFO or a device), and only superusers can
 * reach its contents through SQL: no setting, view or function shows the
 * keys, and no message contains them.
 *
 * Writers (snowflake_public_key_create and _drop) serialise on a
 * cluster-wide advisory lock held to the end of their transaction, and
 * re-read the file under it.  A key takes effect when the file is written:
 * ROLLBACK does not undo it.
 *
 * The backend cache (key_cache) is read again by the first call of a
 * transaction that starts a second or more after the last reading (a read
 * costs a few system calls, about 20 us on a busy VM: too much for every
 * transaction), and at once when a public id names a version the cache
 * lacks, or fails the check, or when there is no key to make one.  So a key
 * created or a file copied in is used for new public ids by every session
 * within a second, and decodes at once.  A reading keeps the cached keys
 * (and their prepared AES contexts) when the file's bytes did not change.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "idtext.h"
#include "layout.h"
#include "publicid.h"

#define KEY_MAGIC			0x53464B59	/* "SFKY" */
#define KEY_FORMAT			1
#define KEY_TEMP_FILE		SNOWFLAKE_KEY_FILE ".tmp"

/* The records on disk, in the machine's byte order. */
typedef struct KeyFileHeader
{
	uint32		magic;
	uint32		format;
	int32		current;		/* the version new public ids use */
	int32		nkeys;
} KeyFileHeader;

typedef struct KeyFileEntry
{
	int32		version;
	int32		reserved;		/* zero */
	int64		created_ms;		/* Unix ms */
	uint8		key[SNOWFLAKE_KEY_BYTES];
} KeyFileEntry;

#define KEY_FILE_MAX_SIZE \
	(sizeof(KeyFileHeader) + SNOWFLAKE_PUBLIC_VERSIONS * sizeof(KeyFileEntry) + \
	 sizeof(pg_crc32c))

/* The keys as read, by version */
typedef struct KeySet
{
	int			current;		/* -1 when there is no key */
	int			nkeys;
	bool		present[SNOWFLAKE_PUBLIC_VERSIONS];
	int64		created_ms[SNOWFLAKE_PUBLIC_VERSIONS];
	uint8		key[SNOWFLAKE_PUBLIC_VERSIONS][SNOWFLAKE_KEY_BYTES];
} KeySet;

/* This backend's copy of the file (see the header for when it is read again) */
static struct
{
	bool		loaded;			/* bytes and keys hold a file's reading */
	TimestampTz read_at;		/* start of the transaction that read it */
	uint64		generation;		/* counts the changes of keys */
	size_t		length;			/* 0: no file */
	char		bytes[KEY_FILE_MAX_SIZE];
	KeySet		keys;
	Ff1Key		ff1[SNOWFLAKE_PUBLIC_VERSIONS];	/* prepared on first use */
}			key_cache;

PG_FUNCTION_INFO_V1(snowflake_to_text);
PG_FUNCTION_INFO_V1(snowflake_from_text);
PG_FUNCTION_INFO_V1(snowflake_public_id);
PG_FUNCTION_INFO_V1(snowflake_id_from_public);
PG_FUNCTION_INFO_V1(snowflake_public_key_create);
PG_FUNCTION_INFO_V1(snowflake_public_key_drop);
PG_FUNCTION_INFO_V1(snowflake_public_keys);

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

/* ---- the key file ---- */

static pg_crc32c
key_crc(const void *data, size_t length)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, length);
	FIN_CRC32C(crc);
	return crc;
}

/* What is wrong with the bytes of a key file, or NULL; fills *keys */
static const char *
key_parse(const char *bytes, size_t length, KeySet *keys)
{
	KeyFileHeader header;
	size_t		expected;
	pg_crc32c	stored;

	memset(keys, 0, sizeof(KeySet));
	keys->current = -1;
	if (length < sizeof(KeyFileHeader))
		return "The file is shorter than its header.";
	memcpy(&header, bytes, sizeof(header));
	if (header.magic != KEY_MAGIC)
		return "The file does not start with the magic number of a snowflake key file.";
	if (header.format != KEY_FORMAT)
		return psprintf("The file has format version %u; this build reads version %d.",
						header.format, KEY_FORMAT);
	if (header.nkeys < 1 || header.nkeys > SNOWFLAKE_PUBLIC_VERSIONS)
		return "The file's header gives an impossible number of keys.";
	expected = sizeof(KeyFileHeader) + header.nkeys * sizeof(KeyFileEntry) +
		sizeof(pg_crc32c);
	if (length != expected)
		return psprintf("The file is %zu bytes long; its header says %zu.", length, expected);
	memcpy(&stored, bytes + expected - sizeof(pg_crc32c), sizeof(stored));
	if (!EQ_CRC32C(stored, key_crc(bytes, expected - sizeof(pg_crc32c))))
		return "The file's checksum does not match its contents.";
	for (int i = 0; i < header.nkeys; i++)
	{
		KeyFileEntry e;

		memcpy(&e, bytes + sizeof(KeyFileHeader) + i * sizeof(KeyFileEntry), sizeof(e));
		if (e.version < 0 || e.version >= SNOWFLAKE_PUBLIC_VERSIONS ||
			keys->present[e.version])
			return "The file holds an impossible or repeated key version.";
		keys->present[e.version] = true;
		keys->created_ms[e.version] = e.created_ms;
		memcpy(keys->key[e.version], e.key, SNOWFLAKE_KEY_BYTES);
		explicit_bzero(&e, sizeof(e));
	}
	if (header.current < 0 || header.current >= SNOWFLAKE_PUBLIC_VERSIONS ||
		!keys->present[header.current])
		return "The file's current key version is not among its keys.";
	keys->current = header.current;
	keys->nkeys = header.nkeys;
	return NULL;
}

/*
 * Read the file into buffer (KEY_FILE_MAX_SIZE + 1 bytes); returns its
 * length, 0 when there is none.  Errors out on anything but a regular file
 * of a possible size.
 */
static size_t
key_read(char *buffer)
{
	int			fd;
	struct stat st;
	ssize_t		length;

	/* O_NONBLOCK: a FIFO put in its place must not hang the backend */
	fd = OpenTransientFile(SNOWFLAKE_KEY_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return 0;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", SNOWFLAKE_KEY_FILE),
				 errhint("The key file must be a regular file owned by the server's user, not a symbolic link.")));
	}
	if (fstat(fd, &st) != 0)
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", SNOWFLAKE_KEY_FILE)));
	}
	if (!S_ISREG(st.st_mode))
	{
		CloseTransientFile(fd);
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("\"%s\" is not a regular file", SNOWFLAKE_KEY_FILE)));
	}
	length = read(fd, buffer, KEY_FILE_MAX_SIZE + 1);
	if (length < 0)
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", SNOWFLAKE_KEY_FILE)));
	}
	CloseTransientFile(fd);
	if (length == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid key file \"%s\"", SNOWFLAKE_KEY_FILE),
				 errdetail("The file is empty.")));
	return (size_t) length;
}

static void
key_forget_ciphers(void)
{
	for (int v = 0; v < SNOWFLAKE_PUBLIC_VERSIONS; v++)
		Ff1KeyFree(&key_cache.ff1[v]);
}

/* Take the keys of bytes[0..length-1] (already parsed into *keys). */
static void
key_cache_set(const char *bytes, size_t length, const KeySet *keys)
{
	key_forget_ciphers();
	key_cache.loaded = false;
	explicit_bzero(&key_cache.keys, sizeof(KeySet));
	explicit_bzero(key_cache.bytes, sizeof(key_cache.bytes));
	memcpy(key_cache.bytes, bytes, length);
	key_cache.length = length;
	memcpy(&key_cache.keys, keys, sizeof(KeySet));
	key_cache.loaded = true;
	key_cache.generation++;
}

/* A second: how stale the keys that make new public ids may be */
#define KEY_REREAD_INTERVAL_US	INT64CONST(1000000)

/*
 * The keys, read from the file when the last reading is a second older
 * than this transaction (or at once when force is set).
 */
static const KeySet *
key_load(bool force)
{
	char		buffer[KEY_FILE_MAX_SIZE + 1];
	size_t		length;
	KeySet		keys;
	const char *problem;
	TimestampTz now = GetCurrentTransactionStartTimestamp();

	/* (a transaction that started before the reading, as after a clock step, reads again) */
	if (!force && key_cache.loaded && now >= key_cache.read_at &&
		now - key_cache.read_at < KEY_REREAD_INTERVAL_US)
		return &key_cache.keys;

	length = key_read(buffer);
	if (key_cache.loaded && length == key_cache.length &&
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
			key_parse(buffer, length, &keys);
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
	key_cache_set(buffer, length, &keys);
	explicit_bzero(buffer, sizeof(buffer));
	explicit_bzero(&keys, sizeof(keys));
	key_cache.read_at = now;
	return &key_cache.keys;
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

/* Write keys durably (temporary file, checked writes, durable_rename). */
static void
key_write(const KeySet *keys)
{
	size_t		length = sizeof(KeyFileHeader) + keys->nkeys * sizeof(KeyFileEntry) +
		sizeof(pg_crc32c);
	char		bytes[KEY_FILE_MAX_SIZE];
	KeyFileHeader header;
	pg_crc32c	crc;
	int			fd;
	int			i = 0;

	memset(bytes, 0, sizeof(bytes));
	memset(&header, 0, sizeof(header));
	header.magic = KEY_MAGIC;
	header.format = KEY_FORMAT;
	header.current = keys->current;
	header.nkeys = keys->nkeys;
	memcpy(bytes, &header, sizeof(header));
	for (int v = 0; v < SNOWFLAKE_PUBLIC_VERSIONS; v++)
	{
		KeyFileEntry e;

		if (!keys->present[v])
			continue;
		memset(&e, 0, sizeof(e));
		e.version = v;
		e.created_ms = keys->created_ms[v];
		memcpy(e.key, keys->key[v], SNOWFLAKE_KEY_BYTES);
		memcpy(bytes + sizeof(KeyFileHeader) + i++ * sizeof(KeyFileEntry), &e, sizeof(e));
		explicit_bzero(&e, sizeof(e));
	}
	Assert(i == keys->nkeys);
	crc = key_crc(bytes, length - sizeof(pg_crc32c));
	memcpy(bytes + length - sizeof(pg_crc32c), &crc, sizeof(crc));

	fd = OpenTransientFile(KEY_TEMP_FILE, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
	{
		explicit_bzero(bytes, sizeof(bytes));
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", KEY_TEMP_FILE)));
	}
	errno = 0;
	if (write(fd, bytes, length) != (ssize_t) length)
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		explicit_bzero(bytes, sizeof(bytes));
		unlink(KEY_TEMP_FILE);
		/* a short write without an error means the disk is full */
		errno = save_errno ? save_errno : ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", KEY_TEMP_FILE)));
	}
	if (CloseTransientFile(fd) != 0)
	{
		explicit_bzero(bytes, sizeof(bytes));
		unlink(KEY_TEMP_FILE);
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", KEY_TEMP_FILE)));
	}
	/* fsyncs the file and the directory; errors at ERROR */
	(void) durable_rename(KEY_TEMP_FILE, SNOWFLAKE_KEY_FILE, ERROR);
	/* this backend sees its own change at once */
	key_cache_set(bytes, length, keys);
	key_cache.read_at = GetCurrentTransactionStartTimestamp();
	explicit_bzero(bytes, sizeof(bytes));
}

/*
 * A key administrator's preconditions: superuser, not in recovery (a
 * standby's keys come from its primary), and the writers' lock.  Returns
 * the keys as the file has them now.
 */
static const KeySet *
key_begin_change(const char *function)
{
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
				 errhint("Change the keys on the primary, then copy its file \"%s\" to the standbys.",
						 SNOWFLAKE_KEY_FILE)));
	/* database 0: one lock for the whole cluster, whose data directory holds the file */
	SET_LOCKTAG_ADVISORY(tag, InvalidOid, KEY_MAGIC, 0, 0x5346);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	return key_load(true);
}

/* ---- the superuser functions ---- */

Datum
snowflake_public_key_create(PG_FUNCTION_ARGS)
{
	KeySet		keys;
	int			version;

	memcpy(&keys, key_begin_change("snowflake_public_key_create"), sizeof(keys));
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
	keys.current = version;
	keys.nkeys++;
	PG_TRY();
	{
		key_write(&keys);
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

	memcpy(&keys, key_begin_change("snowflake_public_key_drop"), sizeof(keys));
	if (version < 0 || version >= SNOWFLAKE_PUBLIC_VERSIONS || !keys.present[version])
	{
		explicit_bzero(&keys, sizeof(keys));
		PG_RETURN_BOOL(false);
	}
	if (version == keys.current)
	{
		explicit_bzero(&keys, sizeof(keys));
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot drop key version %d: it is the current key", version),
				 errhint("Create a new key with snowflake_public_key_create() first.")));
	}
	keys.present[version] = false;
	explicit_bzero(keys.key[version], SNOWFLAKE_KEY_BYTES);
	keys.nkeys--;
	PG_TRY();
	{
		key_write(&keys);
	}
	PG_FINALLY();
	{
		explicit_bzero(&keys, sizeof(keys));
	}
	PG_END_TRY();
	PG_RETURN_BOOL(true);
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
	/* the file as it is now, at the first row */
	keys = key_load(*next == 0);
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
	const KeySet *keys;
	char		out[SNOWFLAKE_PUBLIC_LENGTH + 1];

	idtext_check_id(id);
	keys = key_load(false);
	if (keys->current < 0)
		keys = key_load(true);	/* one may have been made since */
	if (keys->current < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no public id key exists"),
				 errhint("A superuser creates one with snowflake_public_key_create(), or copies the key file \"%s\" from a server of the same application.",
						 SNOWFLAKE_KEY_FILE)));
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
	unsigned char digits[SNOWFLAKE_PUBLIC_LENGTH];
	const KeySet *keys;
	int			version;
	int64		id;
	PublicIdResult result;

	idtext_parse_digits(input, SNOWFLAKE_PUBLIC_LENGTH, "public id", digits);
	version = digits[0];
	keys = key_load(false);
	if (!keys->present[version])
		keys = key_load(true);	/* it may have been made since */

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
				 errhint("If a server of the same application made it, copy the key file \"%s\" from there.",
						 SNOWFLAKE_KEY_FILE)));
	result = PublicIdDecrypt(key_cipher(version), version, digits + 1, &id);
	if (result == PUBLIC_ID_NOT_MADE_BY_KEY)
	{
		/* the version may have been dropped and made again since */
		uint64		generation = key_cache.generation;

		keys = key_load(true);
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

/*-------------------------------------------------------------------------
 *
 * keyfile.c
 *	  0.3.0's file of public-id keys, "snowflake.publickeys" in the data
 *	  directory: its format, its durable write, and its reading and
 *	  validation.  From 0.4.0 the keys live in a table; the file is read
 *	  until its keys are moved there (and written only while the
 *	  extension's objects are still 0.3.0's).
 *
 * The file is a header (magic number, format version, the current key's
 * version, the number of keys), one entry per key (its version, when it was
 * made, its 256 bits) in ascending version order, then a CRC-32C over all of
 * it.  It is replaced whole, as the high-water mark is: written to a
 * temporary file, then moved into place by durable_rename(), so after an OS
 * crash there is the old file or the new one.  It is read only if it is a
 * regular file (not a link, a FIFO or a device).
 *
 * Locking: none here; the callers serialise writers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "port/pg_crc32c.h"
#include "storage/fd.h"

#include "keyfile.h"

#define KEY_FORMAT			1
#define KEY_TEMP_FILE		SNOWFLAKE_KEY_FILE ".tmp"

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
const char *
KeyFileParse(const char *bytes, size_t length, KeySet *keys)
{
	KeyFileHeader header;
	size_t		expected;
	pg_crc32c	stored;

	memset(keys, 0, sizeof(KeySet));
	keys->current = -1;
	if (length < sizeof(KeyFileHeader))
		return "The file is shorter than its header.";
	memcpy(&header, bytes, sizeof(header));
	if (header.magic != KEY_FILE_MAGIC)
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
size_t
KeyFileRead(char *buffer)
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

/*
 * Write keys durably (temporary file, checked writes, durable_rename());
 * their bytes are left in bytes (KEY_FILE_MAX_SIZE), the length returned.
 */
size_t
KeyFileWrite(const KeySet *keys, char *bytes)
{
	size_t		length = sizeof(KeyFileHeader) + keys->nkeys * sizeof(KeyFileEntry) +
		sizeof(pg_crc32c);
	KeyFileHeader header;
	pg_crc32c	crc;
	int			fd;
	int			i = 0;

	memset(bytes, 0, KEY_FILE_MAX_SIZE);
	memset(&header, 0, sizeof(header));
	header.magic = KEY_FILE_MAGIC;
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
		explicit_bzero(bytes, KEY_FILE_MAX_SIZE);
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", KEY_TEMP_FILE)));
	}
	errno = 0;
	if (write(fd, bytes, length) != (ssize_t) length)
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		explicit_bzero(bytes, KEY_FILE_MAX_SIZE);
		unlink(KEY_TEMP_FILE);
		/* a short write without an error means the disk is full */
		errno = save_errno ? save_errno : ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", KEY_TEMP_FILE)));
	}
	if (CloseTransientFile(fd) != 0)
	{
		explicit_bzero(bytes, KEY_FILE_MAX_SIZE);
		unlink(KEY_TEMP_FILE);
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", KEY_TEMP_FILE)));
	}
	/* fsyncs the file and the directory; errors at ERROR */
	(void) durable_rename(KEY_TEMP_FILE, SNOWFLAKE_KEY_FILE, ERROR);
	return length;
}

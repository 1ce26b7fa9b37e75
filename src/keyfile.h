/*-------------------------------------------------------------------------
 *
 * keyfile.h
 *	  0.3.0's file of public-id keys in the data directory, read until its
 *	  keys are moved into the table of 0.4.0.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_KEYFILE_H
#define SNOWFLAKE_KEYFILE_H

#include "idtext.h"

/* In the data directory, next to the high-water mark */
#define SNOWFLAKE_KEY_FILE		"snowflake.publickeys"

/* AES-256 */
#define SNOWFLAKE_KEY_BYTES		32

/* The file's magic number, "SFKY" (also the writers' advisory lock) */
#define KEY_FILE_MAGIC			0x53464B59

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

/*
 * Read the file into buffer (KEY_FILE_MAX_SIZE + 1 bytes); returns its
 * length, 0 when there is none.  Errors out on anything but a regular file.
 */
extern size_t KeyFileRead(char *buffer);

/* What is wrong with the bytes of a key file, or NULL; fills *keys */
extern const char *KeyFileParse(const char *bytes, size_t length, KeySet *keys);

/*
 * Write keys durably; their bytes are left in bytes (KEY_FILE_MAX_SIZE),
 * and the length returned.
 */
extern size_t KeyFileWrite(const KeySet *keys, char *bytes);

#endif							/* SNOWFLAKE_KEYFILE_H */

/*-------------------------------------------------------------------------
 *
 * publicid.h
 *	  Keys of public ids: their durable file in the data directory.
 *
 * The functions of src/publicid.c need no shared memory and no preload:
 * each backend reads the key file (one open, fstat, read and close) at its
 * first use in a transaction a second or more after its last reading, and
 * at once when a public id names a key it lacks.
 *
 * Locking: no shared memory, so no LWLock.  Writers of the file
 * (snowflake_public_key_create and _drop) serialise on a cluster-wide
 * advisory lock held to the end of their transaction; readers need none,
 * as the file is replaced whole by durable_rename().
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_PUBLICID_H
#define SNOWFLAKE_PUBLICID_H

/* In the data directory, next to the high-water mark */
#define SNOWFLAKE_KEY_FILE		"snowflake.publickeys"

/* AES-256 */
#define SNOWFLAKE_KEY_BYTES		32

#endif							/* SNOWFLAKE_PUBLICID_H */

/*-------------------------------------------------------------------------
 *
 * publicid.h
 *	  Keys of public ids: their durable file in the data directory.
 *
 * The functions of src/publicid.c need no shared memory and no preload:
 * each backend reads the key file at its first use in a transaction (one
 * open, fstat, read and close) and keeps it until the transaction ends, so
 * a key created or a file copied in by another backend or by an
 * administrator is seen from the next transaction on.
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

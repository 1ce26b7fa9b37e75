/*-------------------------------------------------------------------------
 *
 * rootkey.h
 *	  The root key: 256 bits printed by "snowflake.root_key_command" when
 *	  the server starts, kept in the memory of the server's processes only,
 *	  under which the keys of public ids are kept wrapped; and, while they
 *	  are rewrapped under a new root key, the previous one.
 *
 * Locking: none.  The postmaster writes the key once, before it forks any
 * backend; every process reads its own inherited copy.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_ROOTKEY_H
#define SNOWFLAKE_ROOTKEY_H

/* AES-256 */
#define ROOT_KEY_BYTES		32

/* SQLSTATE of every refusal for want of a root key: F0000 config_file_error */
#define ERRCODE_SNOWFLAKE_ROOT_KEY	ERRCODE_CONFIG_FILE_ERROR

/* Define "snowflake.root_key_command" and "snowflake.previous_root_key_command" (from _PG_init) */
extern void RootKeyInit(void);

/*
 * Run the command, once, in the postmaster when it sets up shared memory
 * (from the shared-memory start-up hook).  Never fails: what went wrong is
 * logged and kept for RootKeyRequire's error.
 */
extern void RootKeyStartup(void);

/*
 * The root key's ROOT_KEY_BYTES bytes, or an error (SQLSTATE
 * ERRCODE_SNOWFLAKE_ROOT_KEY) saying why there is none.
 */
extern const unsigned char *RootKeyRequire(void);

/*
 * The previous root key (from "snowflake.previous_root_key_command"), while
 * the keys wrapped under it are rewrapped under the root key; NULL when
 * there is none (what went wrong with its command is in the log).
 */
extern const unsigned char *RootKeyPrevious(void);

/* A root key's check value (6 hex digits) */
extern char *RootKeyCheckValueOf(const unsigned char *key);

/* The root key's check value, or RootKeyRequire's error */
extern char *RootKeyCheckValue(void);

#endif							/* SNOWFLAKE_ROOTKEY_H */

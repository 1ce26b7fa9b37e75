/*-------------------------------------------------------------------------
 *
 * keywrap.h
 *	  AES key wrap with padding (NIST SP 800-38F KWP, RFC 5649), the
 *	  standard way to keep a key encrypted under another: the public ids'
 *	  keys are kept wrapped under the root key.
 *
 * OpenSSL's implementation (libcrypto, which FF1 already uses), not one of
 * ours.  The unwrap checks the integrity value of the wrapped key: a wrong
 * root key, or wrapped bytes changed, is told apart from a right one.
 *
 * No PostgreSQL state: the unit test (test/unit/keywrap_test.c) links this
 * file alone, with libcrypto.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_KEYWRAP_H
#define SNOWFLAKE_KEYWRAP_H

/* The wrapped form of a key of n bytes: padded to 8, plus 8 bytes */
#define KEYWRAP_WRAPPED_LEN(n)	((((n) + 7) / 8) * 8 + 8)

/* The longest key wrapped here */
#define KEYWRAP_MAX_KEY		64

/*
 * Wrap key (key_len bytes, 1 to KEYWRAP_MAX_KEY) under kek (16, 24 or 32
 * bytes) into out, KEYWRAP_WRAPPED_LEN(key_len) bytes; false on a bad
 * length or a failure of the library.
 */
extern bool KeyWrap(const unsigned char *kek, int kek_len, const unsigned char *key, int key_len,
					unsigned char *out);

/*
 * Unwrap wrapped (wrapped_len bytes) under kek into out (room for
 * KEYWRAP_MAX_KEY bytes); returns the key's length, or -1 when the
 * integrity check fails (another kek, or changed bytes) or a length is
 * wrong.
 */
extern int	KeyUnwrap(const unsigned char *kek, int kek_len, const unsigned char *wrapped,
					  int wrapped_len, unsigned char *out);

#endif							/* SNOWFLAKE_KEYWRAP_H */

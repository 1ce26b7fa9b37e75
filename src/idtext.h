/*-------------------------------------------------------------------------
 *
 * idtext.h
 *	  The text forms of an id: 13 characters of Crockford base32 (unkeyed,
 *	  in id order), and public ids (FF1-encrypted, keyed by a version).
 *
 * Pure functions of their arguments, no PostgreSQL state: src/publicid.c
 * wraps them for SQL, and test/unit/ff1_test.c tests them without a server.
 *
 * A public id is 16 characters of Crockford base32: the key's version (0 to
 * 31) in the first, then FF1 (radix 32, 15 digits, the tweak naming the
 * format and the version) of the plaintext 0 0 t1 ... t13, where t1 ... t13
 * are the id's 13 text digits.  Decrypted, a string no key made has the
 * first 12 bits (the two zero digits and the top two bits of t1, which are
 * zero for ids below 2^63) all zero with probability 2^-12: the check.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_IDTEXT_H
#define SNOWFLAKE_IDTEXT_H

#include "ff1.h"

#define SNOWFLAKE_TEXT_LENGTH		13
#define SNOWFLAKE_PUBLIC_LENGTH		16
#define SNOWFLAKE_PUBLIC_DIGITS		15	/* after the version character */
#define SNOWFLAKE_PUBLIC_VERSIONS	32	/* versions 0 to 31 */
#define SNOWFLAKE_PUBLIC_FORMAT		1	/* the first byte of the tweak */

/* The value of one Crockford base32 character, or -1 (case-insensitive; I
 * and L read as 1, O as 0; hyphens and check symbols are refused). */
extern int	IdTextDigitValue(unsigned char c);

/* The 13 characters of a non-negative id, and a terminating zero */
extern void IdTextEncode(int64 id, char *out);

/*
 * The id of 13 digit values (each 0 to 31), or -1 when the first is above 7
 * (the value would not fit a bigint).
 */
extern int64 IdTextDecode(const unsigned char *digits);

typedef enum PublicIdResult
{
	PUBLIC_ID_OK,
	PUBLIC_ID_NOT_MADE_BY_KEY,	/* the check bits are not zero */
	PUBLIC_ID_CIPHER_FAILED
} PublicIdResult;

/* The 16 characters of a non-negative id's public id, and a terminating zero */
extern PublicIdResult PublicIdEncrypt(const Ff1Key *key, int version, int64 id,
									  char *out);

/* The id from the 15 digit values after the version character */
extern PublicIdResult PublicIdDecrypt(const Ff1Key *key, int version,
									  const unsigned char *digits, int64 *id);

#endif							/* SNOWFLAKE_IDTEXT_H */

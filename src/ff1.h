/*-------------------------------------------------------------------------
 *
 * ff1.h
 *	  FF1 of NIST SP 800-38G (format-preserving encryption of numeral
 *	  strings) with AES from OpenSSL's libcrypto.
 *
 * No PostgreSQL state: the unit test (test/unit/ff1_test.c) links this
 * file alone and checks it against NIST's published sample vectors.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_FF1_H
#define SNOWFLAKE_FF1_H

/* A numeral string may have up to this many digits, a tweak this many bytes */
#define FF1_MAX_DIGITS		64
#define FF1_MAX_TWEAK		256

/* An AES key ready for use; opaque (an EVP_CIPHER_CTX) */
typedef struct Ff1Key
{
	void	   *cipher;
} Ff1Key;

typedef enum Ff1Result
{
	FF1_OK,
	FF1_BAD_ARGUMENT,			/* radix, length, tweak or a digit out of
								 * the bounds below */
	FF1_CIPHER_FAILED			/* libcrypto refused (out of memory) */
} Ff1Result;

/*
 * Prepare an AES key of 16, 24 or 32 bytes.  The key is copied into
 * libcrypto's context; the caller may wipe its own copy.
 */
extern Ff1Result Ff1KeyInit(Ff1Key *key, const unsigned char *bytes, int length);

/* Release a key's context (wiped by libcrypto); harmless on a released key */
extern void Ff1KeyFree(Ff1Key *key);

/* AES of one 16-byte block (for key check values) */
extern bool Ff1Block(const Ff1Key *key, const unsigned char *in, unsigned char *out);

/*
 * Encrypt or decrypt the numeral string in[0..n-1] (each digit below radix)
 * into out[0..n-1] (which may be in).  Bounds: radix 2 to 256, radix^n at
 * least 1,000,000 (SP 800-38G Rev. 1), radix^ceil(n/2) below 2^56 (so that
 * the round arithmetic fits 64 bits; 13 digits of radix 36, 11 of 2^8...),
 * n up to FF1_MAX_DIGITS, a tweak of up to FF1_MAX_TWEAK bytes.
 */
extern Ff1Result Ff1Encrypt(const Ff1Key *key, int radix,
							const unsigned char *tweak, int tweak_length,
							const unsigned char *in, int n, unsigned char *out);
extern Ff1Result Ff1Decrypt(const Ff1Key *key, int radix,
							const unsigned char *tweak, int tweak_length,
							const unsigned char *in, int n, unsigned char *out);

#endif							/* SNOWFLAKE_FF1_H */

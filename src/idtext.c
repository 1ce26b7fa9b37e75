/*-------------------------------------------------------------------------
 *
 * idtext.c
 *	  Crockford base32 for ids, and the public id format around FF1.
 *
 * The alphabet (https://www.crockford.com/base32.html) is in ASCII order,
 * and every id is written with 13 characters, leading zeros included, so
 * that the byte order of the texts (the C collation) is the order of the
 * ids.
 *
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "idtext.h"

static const char idtext_alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

int
IdTextDigitValue(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'z')
		c -= 'a' - 'A';
	switch (c)
	{
		case 'O':
			return 0;
		case 'I':
		case 'L':
			return 1;
		case 'U':
			return -1;
	}
	if (c < 'A' || c > 'Z')
		return -1;
	/* A=10 ... H=17, J=18, K=19, M=20, N=21, P=22 ... T=26, V=27 ... Z=31 */
	for (int v = 10; v < 32; v++)
		if (idtext_alphabet[v] == c)
			return v;
	return -1;
}

/* The 13 digit values of a 64-bit pattern, most significant first */
static void
idtext_digits(uint64 value, unsigned char *digits)
{
	for (int i = SNOWFLAKE_TEXT_LENGTH - 1; i >= 0; i--)
	{
		digits[i] = (unsigned char) (value & 31);
		value >>= 5;
	}
}

void
IdTextEncode(int64 id, char *out)
{
	unsigned char digits[SNOWFLAKE_TEXT_LENGTH];

	Assert(id >= 0);
	idtext_digits((uint64) id, digits);
	for (int i = 0; i < SNOWFLAKE_TEXT_LENGTH; i++)
		out[i] = idtext_alphabet[digits[i]];
	out[SNOWFLAKE_TEXT_LENGTH] = '\0';
}

int64
IdTextDecode(const unsigned char *digits)
{
	uint64		value = 0;

	/* 13 digits hold 65 bits: a bigint's 63 leave the first 0 to 7 */
	if (digits[0] > 7)
		return -1;
	for (int i = 0; i < SNOWFLAKE_TEXT_LENGTH; i++)
		value = (value << 5) | digits[i];
	return (int64) value;
}

static void
publicid_tweak(int version, unsigned char *tweak)
{
	tweak[0] = SNOWFLAKE_PUBLIC_FORMAT;
	tweak[1] = (unsigned char) version;
}

PublicIdResult
PublicIdEncrypt(const Ff1Key *key, int version, int64 id, char *out)
{
	unsigned char plain[SNOWFLAKE_PUBLIC_DIGITS];
	unsigned char cipher[SNOWFLAKE_PUBLIC_DIGITS];
	unsigned char tweak[2];

	Assert(id >= 0 && version >= 0 && version < SNOWFLAKE_PUBLIC_VERSIONS);
	/* two zero digits, the check, then the id's 13 */
	plain[0] = plain[1] = 0;
	idtext_digits((uint64) id, plain + 2);
	publicid_tweak(version, tweak);
	if (Ff1Encrypt(key, 32, tweak, sizeof(tweak), plain,
				   SNOWFLAKE_PUBLIC_DIGITS, cipher) != FF1_OK)
		return PUBLIC_ID_CIPHER_FAILED;
	out[0] = idtext_alphabet[version];
	for (int i = 0; i < SNOWFLAKE_PUBLIC_DIGITS; i++)
		out[1 + i] = idtext_alphabet[cipher[i]];
	out[SNOWFLAKE_PUBLIC_LENGTH] = '\0';
	return PUBLIC_ID_OK;
}

PublicIdResult
PublicIdDecrypt(const Ff1Key *key, int version, const unsigned char *digits,
				int64 *id)
{
	unsigned char plain[SNOWFLAKE_PUBLIC_DIGITS];
	unsigned char tweak[2];

	publicid_tweak(version, tweak);
	if (Ff1Decrypt(key, 32, tweak, sizeof(tweak), digits,
				   SNOWFLAKE_PUBLIC_DIGITS, plain) != FF1_OK)
		return PUBLIC_ID_CIPHER_FAILED;
	if (plain[0] != 0 || plain[1] != 0)
		return PUBLIC_ID_NOT_MADE_BY_KEY;
	*id = IdTextDecode(plain + 2);
	return *id < 0 ? PUBLIC_ID_NOT_MADE_BY_KEY : PUBLIC_ID_OK;
}

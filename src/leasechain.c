/*-------------------------------------------------------------------------
 *
 * leasechain.c
 *	  The lease client's chain of secrets (see leasechain.h).
 *
 * The hash is OpenSSL's SHA-256 (libcrypto, which the public ids' FF1
 * already uses), the coordinator's sha256() of the secret's 16 bytes.
 *
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include <openssl/evp.h>

#include "lib/stringinfo.h"

#include "leasechain.h"

static const char hexdigits[] = "0123456789abcdef";

static void
chain_hex(char *dest, const unsigned char *bytes, int n)
{
	for (int i = 0; i < n; i++)
	{
		dest[2 * i] = hexdigits[bytes[i] >> 4];
		dest[2 * i + 1] = hexdigits[bytes[i] & 15];
	}
	dest[2 * n] = '\0';
}

void
LeaseChainForget(LeaseChain *chain)
{
	memset(chain, 0, sizeof(LeaseChain));
}

bool
LeaseChainHash(const char *secret, char *dest)
{
	unsigned char bytes[LEASE_SECRET_BYTES];
	unsigned char hash[EVP_MAX_MD_SIZE];
	unsigned int hash_len = 0;

	if (strlen(secret) != 2 * LEASE_SECRET_BYTES)
		return false;
	for (int i = 0; i < LEASE_SECRET_BYTES; i++)
	{
		const char *hi = strchr(hexdigits, secret[2 * i]);
		const char *lo = strchr(hexdigits, secret[2 * i + 1]);

		if (hi == NULL || lo == NULL)
			return false;
		bytes[i] = (unsigned char) (((hi - hexdigits) << 4) | (lo - hexdigits));
	}
	if (EVP_Digest(bytes, sizeof(bytes), hash, &hash_len, EVP_sha256(), NULL) != 1 ||
		hash_len != 32)
		return false;
	dest[0] = '\\';
	dest[1] = 'x';
	chain_hex(dest + 2, hash, 32);
	return true;
}

bool
LeaseChainDraw(LeaseChain *chain)
{
	unsigned char bytes[LEASE_SECRET_BYTES];

	if (!pg_strong_random(bytes, sizeof(bytes)))
		return false;
	chain_hex(chain->next, bytes, sizeof(bytes));
	return LeaseChainHash(chain->next, chain->next_hash);
}

char *
LeaseChainOffered(const LeaseChain *chain)
{
	StringInfoData text;

	initStringInfo(&text);
	appendStringInfoChar(&text, '{');
	for (int i = 0; i < chain->nsecrets; i++)
		appendStringInfo(&text, "%s%s", i ? "," : "", chain->secrets[i]);
	appendStringInfoChar(&text, '}');
	return text.data;
}

void
LeaseChainSent(LeaseChain *chain)
{
	if (chain->nsecrets == LEASE_CHAIN_MAX)
	{
		memmove(chain->secrets[0], chain->secrets[1], (LEASE_CHAIN_MAX - 1) * LEASE_SECRET_HEX);
		chain->nsecrets--;
	}
	strlcpy(chain->secrets[chain->nsecrets++], chain->next, LEASE_SECRET_HEX);
}

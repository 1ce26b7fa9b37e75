/*-------------------------------------------------------------------------
 *
 * leasechain_test.c
 *	  Unit test of the lease client's chain of secrets (src/leasechain.c),
 *	  built without a server.
 *
 * The hash of a known secret (the coordinator's sha256(), as Python's
 * hashlib gives it); secrets drawn are fresh and hash as they should; and
 * the secrets a call offers: none first, then the last LEASE_CHAIN_MAX
 * registered, the oldest dropped, and none once the lease is lost.
 *
 *   leasechain_test
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "leasechain.h"
#include "unit.h"

int
main(void)
{
	LeaseChain chain;
	char		hash[2 + 64 + 1];
	char		drawn[LEASE_CHAIN_MAX + 2][LEASE_SECRET_HEX];
	char	   *offered;
	char		expected[(LEASE_SECRET_HEX + 1) * LEASE_CHAIN_MAX + 3];

	/* sha256(decode('00112233445566778899aabbccddeeff', 'hex')) */
	CHECK(LeaseChainHash("00112233445566778899aabbccddeeff", hash) &&
		  strcmp(hash, "\\xa8faed6abbf35c12a4b26e40f6feb19d736d90045c83b9f9a31f638d323e6811") == 0,
		  "hash %s", hash);
	CHECK(!LeaseChainHash("00112233445566778899aabbccddeef", hash), "31 digits hashed");
	CHECK(!LeaseChainHash("00112233445566778899aabbccddeeffa", hash), "33 digits hashed");
	CHECK(!LeaseChainHash("0011223344556677889XAABBCCDDEEFF", hash), "not hexadecimal, hashed");

	/* a first claim offers none */
	LeaseChainForget(&chain);
	offered = LeaseChainOffered(&chain);
	CHECK(strcmp(offered, "{}") == 0, "first claim offers %s", offered);

	/* every secret drawn is new, and its hash is the one registered */
	for (int i = 0; i < LEASE_CHAIN_MAX + 2; i++)
	{
		CHECK(LeaseChainDraw(&chain), "draw %d", i);
		CHECK(strlen(chain.next) == 32 && strspn(chain.next, "0123456789abcdef") == 32,
			  "secret %s", chain.next);
		CHECK(LeaseChainHash(chain.next, hash) && strcmp(hash, chain.next_hash) == 0,
			  "next hash %s of %s", chain.next_hash, chain.next);
		for (int j = 0; j < i; j++)
			CHECK(strcmp(drawn[j], chain.next) != 0, "secret %d drawn again", j);
		strlcpy(drawn[i], chain.next, LEASE_SECRET_HEX);
		LeaseChainSent(&chain);
		offered = LeaseChainOffered(&chain);
		CHECK(strstr(offered, drawn[i]) != NULL, "secret %d not offered after its call: %s", i, offered);
	}

	/* the last LEASE_CHAIN_MAX, oldest first */
	CHECK(chain.nsecrets == LEASE_CHAIN_MAX, "%d secrets offered", chain.nsecrets);
	expected[0] = '\0';
	strlcat(expected, "{", sizeof(expected));
	for (int i = 2; i < LEASE_CHAIN_MAX + 2; i++)
	{
		if (i > 2)
			strlcat(expected, ",", sizeof(expected));
		strlcat(expected, drawn[i], sizeof(expected));
	}
	strlcat(expected, "}", sizeof(expected));
	offered = LeaseChainOffered(&chain);
	CHECK(strcmp(offered, expected) == 0, "offered %s, expected %s", offered, expected);

	/* a lease lost: none */
	LeaseChainForget(&chain);
	offered = LeaseChainOffered(&chain);
	CHECK(strcmp(offered, "{}") == 0, "offered %s after a lost lease", offered);

	/* after a first claim, its secret alone */
	CHECK(LeaseChainDraw(&chain), "draw");
	LeaseChainSent(&chain);
	snprintf(expected, sizeof(expected), "{%s}", chain.next);
	offered = LeaseChainOffered(&chain);
	CHECK(strcmp(offered, expected) == 0, "offered %s after a claim, expected %s", offered, expected);

	if (failures > 0)
	{
		fprintf(stderr, "leasechain_test: %d failed\n", failures);
		return 1;
	}
	printf("leasechain_test: hashes, draws and the secrets offered as expected\n");
	return 0;
}

/*-------------------------------------------------------------------------
 *
 * keywrap_test.c
 *	  Unit test of AES key wrap with padding (src/keywrap.c), built without
 *	  a server.
 *
 * The two samples of RFC 5649 (section 6, a 192-bit key-encryption key);
 * two with a 256-bit one, as the Python package "cryptography" wraps them
 * (another implementation); then random keys and key-encryption keys:
 * each unwraps to itself, and under any other key-encryption key, or with
 * any one bit of it changed, fails the integrity check.
 *
 *   keywrap_test [seed]
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <time.h>

#include "keywrap.h"
#include "unit.h"

typedef struct WrapSample
{
	const char *kek;
	const char *key;
	const char *wrapped;
} WrapSample;

static const WrapSample samples[] = {
	/* RFC 5649, section 6 */
	{"5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8",
		"c37b7e6492584340bed12207808941155068f738",
	"138bdeaa9b8fa7fc61f97742e72248ee5ae6ae5360d1ae6a5f54f373fa543b6a"},
	{"5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8",
		"466f7250617369",
	"afbeb0f07dfbf5419200f2ccb50bb24f"},
	/* aes_key_wrap_with_padding() of Python's cryptography 48 */
	{"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"00112233445566778899aabbccddeeff000102030405060708090a0b0c0d0e0f",
	"4a8029243027353b0694cf1bd8fc745bb0ce8a739b19b1960b12426d4c39cfeda926d103ab34e9f6"},
	{"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"00112233445566778899aabbccddeeff0001020304",
	"308d49692b5f8cf638d54bb4b985633504237329964c76ebb3f669870a708dbc"},
};

static int
from_hex(const char *hex, unsigned char *out)
{
	int			n = strlen(hex) / 2;

	for (int i = 0; i < n; i++)
		sscanf(hex + 2 * i, "%2hhx", &out[i]);
	return n;
}

int
main(int argc, char **argv)
{
	uint64		seed = argc > 1 ? strtoull(argv[1], NULL, 10) : (uint64) time(NULL);
	int			rounds = 0;

	rng_state = seed;
	printf("keywrap_test: seed %llu\n", (unsigned long long) seed);

	for (int s = 0; s < (int) lengthof(samples); s++)
	{
		unsigned char kek[32];
		unsigned char key[KEYWRAP_MAX_KEY];
		unsigned char expected[KEYWRAP_WRAPPED_LEN(KEYWRAP_MAX_KEY)];
		unsigned char wrapped[KEYWRAP_WRAPPED_LEN(KEYWRAP_MAX_KEY)];
		unsigned char unwrapped[KEYWRAP_MAX_KEY];
		int			kek_len = from_hex(samples[s].kek, kek);
		int			key_len = from_hex(samples[s].key, key);
		int			wrapped_len = from_hex(samples[s].wrapped, expected);

		CHECK(KEYWRAP_WRAPPED_LEN(key_len) == wrapped_len, "sample %d: wrapped length %d", s, wrapped_len);
		CHECK(KeyWrap(kek, kek_len, key, key_len, wrapped) &&
			  memcmp(wrapped, expected, wrapped_len) == 0, "sample %d: wrap", s);
		CHECK(KeyUnwrap(kek, kek_len, expected, wrapped_len, unwrapped) == key_len &&
			  memcmp(unwrapped, key, key_len) == 0, "sample %d: unwrap", s);
	}

	/* lengths refused */
	{
		unsigned char kek[32] = {0};
		unsigned char key[KEYWRAP_MAX_KEY + 1] = {0};
		unsigned char out[KEYWRAP_WRAPPED_LEN(KEYWRAP_MAX_KEY + 1)];

		CHECK(!KeyWrap(kek, 32, key, 0, out), "an empty key wrapped");
		CHECK(!KeyWrap(kek, 32, key, KEYWRAP_MAX_KEY + 1, out), "a key too long wrapped");
		CHECK(!KeyWrap(kek, 31, key, 32, out), "a 31-byte kek used");
		CHECK(KeyUnwrap(kek, 32, key, 8, out) == -1, "8 bytes unwrapped");
		CHECK(KeyUnwrap(kek, 32, key, 20, out) == -1, "20 bytes unwrapped");
	}

	for (int r = 0; r < 2000; r++)
	{
		unsigned char kek[32];
		unsigned char other[32];
		unsigned char key[KEYWRAP_MAX_KEY];
		unsigned char wrapped[KEYWRAP_WRAPPED_LEN(KEYWRAP_MAX_KEY)];
		unsigned char unwrapped[KEYWRAP_MAX_KEY];
		int			key_len = r % 4 == 0 ? 32 : 1 + (int) (rng() % KEYWRAP_MAX_KEY);
		int			len = KEYWRAP_WRAPPED_LEN(key_len);
		int			bit = (int) (rng() % 256);

		for (int i = 0; i < 32; i++)
			kek[i] = (unsigned char) rng();
		for (int i = 0; i < key_len; i++)
			key[i] = (unsigned char) rng();
		memcpy(other, kek, 32);
		other[bit / 8] ^= (unsigned char) (1 << (bit % 8));

		CHECK(KeyWrap(kek, 32, key, key_len, wrapped), "round %d: wrap", r);
		CHECK(KeyUnwrap(kek, 32, wrapped, len, unwrapped) == key_len &&
			  memcmp(unwrapped, key, key_len) == 0, "round %d: unwrap", r);
		CHECK(KeyUnwrap(other, 32, wrapped, len, unwrapped) == -1,
			  "round %d: unwrapped under the kek with bit %d changed", r, bit);
		wrapped[rng() % len] ^= (unsigned char) (1 << (rng() % 8));
		CHECK(KeyUnwrap(kek, 32, wrapped, len, unwrapped) == -1, "round %d: a changed wrap unwrapped", r);
		rounds++;
	}

	if (failures > 0)
	{
		fprintf(stderr, "keywrap_test: %d failed\n", failures);
		return 1;
	}
	printf("keywrap_test: %d samples and %d random keys wrapped and unwrapped as expected\n",
		   (int) lengthof(samples), rounds);
	return 0;
}

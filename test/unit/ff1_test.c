/*-------------------------------------------------------------------------
 *
 * ff1_test.c
 *	  Unit test of FF1 (src/ff1.c) and of the text forms of ids
 *	  (src/idtext.c), built without a server.
 *
 * First every sample of NIST's published FF1 examples for SP 800-38G
 * ("FF1samples", samples 1 to 9: AES-128, -192 and -256, radix 10 with and
 * without a tweak, radix 36 with one), both ways.  Then the bounds FF1
 * refuses.  Then round trips of both text forms over random ids and the
 * edge values of every preset layout (0, 1, the largest id, ids with every
 * node bit set), that the text order is the id order, and the share of
 * random strings a key accepts (doc/public-ids.md: about 1 in 4096).
 *
 *   ff1_test [seed]
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <time.h>

#include "ff1.h"
#include "idtext.h"
#include "unit.h"

static int
hex_bytes(const char *hex, unsigned char *out)
{
	int			n = 0;

	for (; hex[0] && hex[1]; hex += 2)
	{
		unsigned int byte;

		sscanf(hex, "%2x", &byte);
		out[n++] = (unsigned char) byte;
	}
	return n;
}

/* digits of radix 10 or 36 written 0-9a-z */
static int
text_digits(const char *text, unsigned char *out)
{
	int			n = 0;

	for (; *text; text++)
		out[n++] = (unsigned char) (*text <= '9' ? *text - '0' : *text - 'a' + 10);
	return n;
}

static void
digits_text(const unsigned char *digits, int n, char *out)
{
	for (int i = 0; i < n; i++)
		out[i] = "0123456789abcdefghijklmnopqrstuvwxyz"[digits[i]];
	out[n] = '\0';
}

#define KEY128 "2B7E151628AED2A6ABF7158809CF4F3C"
#define KEY192 KEY128 "EF4359D8D580AA4F"
#define KEY256 KEY192 "7F036D6F04FC6A94"
#define TWEAK10 "39383736353433323130"
#define TWEAK11 "3737373770717273373737"
#define PT10 "0123456789"
#define PT36 "0123456789abcdefghi"

static const struct
{
	int			sample;
	const char *key;
	int			radix;
	const char *tweak;
	const char *plaintext;
	const char *ciphertext;
}			nist_samples[] =
{
	{1, KEY128, 10, "", PT10, "2433477484"},
	{2, KEY128, 10, TWEAK10, PT10, "6124200773"},
	{3, KEY128, 36, TWEAK11, PT36, "a9tv40mll9kdu509eum"},
	{4, KEY192, 10, "", PT10, "2830668132"},
	{5, KEY192, 10, TWEAK10, PT10, "2496655549"},
	{6, KEY192, 36, TWEAK11, PT36, "xbj3kv35jrawxv32ysr"},
	{7, KEY256, 10, "", PT10, "6657667009"},
	{8, KEY256, 10, TWEAK10, PT10, "1001623463"},
	{9, KEY256, 36, TWEAK11, PT36, "xs8a0azh2avyalyzuwd"},
};

static void
test_nist_samples(void)
{
	for (int s = 0; s < (int) lengthof(nist_samples); s++)
	{
		unsigned char key_bytes[32],
					tweak[32],
					plain[FF1_MAX_DIGITS],
					out[FF1_MAX_DIGITS],
					back[FF1_MAX_DIGITS];
		char		text[FF1_MAX_DIGITS + 1];
		int			key_length = hex_bytes(nist_samples[s].key, key_bytes);
		int			tweak_length = hex_bytes(nist_samples[s].tweak, tweak);
		int			n = text_digits(nist_samples[s].plaintext, plain);
		Ff1Key		key;

		CHECK(Ff1KeyInit(&key, key_bytes, key_length) == FF1_OK, "sample %d", nist_samples[s].sample);
		CHECK(Ff1Encrypt(&key, nist_samples[s].radix, tweak, tweak_length, plain, n, out) == FF1_OK,
			  "sample %d", nist_samples[s].sample);
		digits_text(out, n, text);
		CHECK(strcmp(text, nist_samples[s].ciphertext) == 0, "sample %d encrypts to %s, not %s",
			  nist_samples[s].sample, text, nist_samples[s].ciphertext);
		CHECK(Ff1Decrypt(&key, nist_samples[s].radix, tweak, tweak_length, out, n, back) == FF1_OK,
			  "sample %d", nist_samples[s].sample);
		digits_text(back, n, text);
		CHECK(strcmp(text, nist_samples[s].plaintext) == 0, "sample %d decrypts to %s",
			  nist_samples[s].sample, text);
		Ff1KeyFree(&key);
	}
}

static void
test_bounds(void)
{
	unsigned char key_bytes[32] = {0},
				digits[FF1_MAX_DIGITS + 1] = {0},
				out[FF1_MAX_DIGITS + 1];
	Ff1Key		key;

	CHECK(Ff1KeyInit(&key, key_bytes, 20) == FF1_BAD_ARGUMENT, "a 20-byte key");
	CHECK(Ff1KeyInit(&key, key_bytes, 32) == FF1_OK, "a 32-byte key");
	CHECK(Ff1Encrypt(&key, 1, NULL, 0, digits, 20, out) == FF1_BAD_ARGUMENT, "radix 1");
	CHECK(Ff1Encrypt(&key, 257, NULL, 0, digits, 20, out) == FF1_BAD_ARGUMENT, "radix 257");
	CHECK(Ff1Encrypt(&key, 10, NULL, 0, digits, 5, out) == FF1_BAD_ARGUMENT, "10^5 < 10^6");
	CHECK(Ff1Encrypt(&key, 10, NULL, 0, digits, 6, out) == FF1_OK, "10^6");
	CHECK(Ff1Encrypt(&key, 2, NULL, 0, digits, 112, out) == FF1_BAD_ARGUMENT, "too many digits");
	CHECK(Ff1Encrypt(&key, 256, NULL, 0, digits, 14, out) == FF1_BAD_ARGUMENT, "256^7 = 2^56");
	CHECK(Ff1Encrypt(&key, 256, NULL, 0, digits, 12, out) == FF1_OK, "256^6 = 2^48");
	CHECK(Ff1Encrypt(&key, 10, NULL, FF1_MAX_TWEAK + 1, digits, 10, out) == FF1_BAD_ARGUMENT, "tweak");
	digits[3] = 10;
	CHECK(Ff1Encrypt(&key, 10, NULL, 0, digits, 10, out) == FF1_BAD_ARGUMENT, "digit 10 of radix 10");
	Ff1KeyFree(&key);
	Ff1KeyFree(&key);
	CHECK(Ff1Encrypt(&key, 10, NULL, 0, digits, 10, out) == FF1_BAD_ARGUMENT, "a freed key");
}

static void
check_id(const Ff1Key *key, int version, int64 id)
{
	char		text[SNOWFLAKE_TEXT_LENGTH + 1];
	char		public_id[SNOWFLAKE_PUBLIC_LENGTH + 1];
	unsigned char digits[SNOWFLAKE_PUBLIC_DIGITS];
	int64		back = -2;

	IdTextEncode(id, text);
	CHECK(strlen(text) == SNOWFLAKE_TEXT_LENGTH, "id " INT64_FORMAT, id);
	for (int i = 0; i < SNOWFLAKE_TEXT_LENGTH; i++)
		digits[i] = (unsigned char) IdTextDigitValue((unsigned char) text[i]);
	CHECK(IdTextDecode(digits) == id, "text %s of " INT64_FORMAT " decodes to " INT64_FORMAT,
		  text, id, IdTextDecode(digits));

	CHECK(PublicIdEncrypt(key, version, id, public_id) == PUBLIC_ID_OK, "id " INT64_FORMAT, id);
	CHECK(strlen(public_id) == SNOWFLAKE_PUBLIC_LENGTH, "id " INT64_FORMAT, id);
	CHECK(IdTextDigitValue((unsigned char) public_id[0]) == version, "%s", public_id);
	for (int i = 0; i < SNOWFLAKE_PUBLIC_DIGITS; i++)
		digits[i] = (unsigned char) IdTextDigitValue((unsigned char) public_id[1 + i]);
	CHECK(PublicIdDecrypt(key, version, digits, &back) == PUBLIC_ID_OK && back == id,
		  "public id %s of " INT64_FORMAT " decodes to " INT64_FORMAT, public_id, id, back);
}

/* the presets of src/layout.c: time, node and sequence widths, field order */
static const struct
{
	const char *name;
	int			time_bits,
				node_bits,
				sequence_bits;
	bool		sequence_last;
}			presets[] =
{
	{"snowflake", 41, 10, 12, true},
	{"twitter", 41, 10, 12, true},
	{"discord", 42, 10, 12, true},
	{"instagram", 41, 13, 10, true},
	{"sonyflake", 39, 16, 8, false},
};

static int64
compose(int p, uint64 tick, uint64 node, uint64 sequence)
{
	int			node_shift = presets[p].sequence_last ? presets[p].sequence_bits : 0;
	int			sequence_shift = presets[p].sequence_last ? 0 : presets[p].node_bits;

	return (int64) ((tick << (presets[p].node_bits + presets[p].sequence_bits)) |
					(node << node_shift) | (sequence << sequence_shift));
}

static void
test_round_trips(void)
{
	unsigned char key_bytes[32];
	Ff1Key		key;
	int64		edges[] = {0, 1, 2, 31, 32, PG_INT64_MAX - 1, PG_INT64_MAX};
	int			ids = 0;

	for (int i = 0; i < 32; i++)
		key_bytes[i] = (unsigned char) rng();
	CHECK(Ff1KeyInit(&key, key_bytes, 32) == FF1_OK, "key");
	for (int i = 0; i < (int) lengthof(edges); i++, ids++)
		check_id(&key, i % SNOWFLAKE_PUBLIC_VERSIONS, edges[i]);
	for (int p = 0; p < (int) lengthof(presets); p++)
	{
		int			usable = Min(presets[p].time_bits,
								 63 - presets[p].node_bits - presets[p].sequence_bits);
		uint64		max_tick = (UINT64CONST(1) << usable) - 1;
		uint64		all_nodes = (UINT64CONST(1) << presets[p].node_bits) - 1;
		uint64		max_sequence = (UINT64CONST(1) << presets[p].sequence_bits) - 1;
		uint64		ticks[] = {0, 1, max_tick - 1, max_tick};
		uint64		sequences[] = {0, 1, max_sequence};

		for (int t = 0; t < (int) lengthof(ticks); t++)
			for (int s = 0; s < (int) lengthof(sequences); s++)
			{
				check_id(&key, 31, compose(p, ticks[t], all_nodes, sequences[s]));
				check_id(&key, 0, compose(p, ticks[t], 0, sequences[s]));
				ids += 2;
			}
		CHECK(compose(p, max_tick, all_nodes, max_sequence) == PG_INT64_MAX,
			  "the largest id of %s", presets[p].name);
	}
	for (int i = 0; i < 200000; i++, ids++)
		check_id(&key, (int) (rng() % SNOWFLAKE_PUBLIC_VERSIONS),
				 (int64) (rng() >> (1 + rng() % 63)));
	printf("round trips of both text forms: %d ids\n", ids);
	Ff1KeyFree(&key);
}

/* Text order is id order, byte by byte (the C collation). */
static void
test_order(void)
{
	char		previous[SNOWFLAKE_TEXT_LENGTH + 1];
	char		text[SNOWFLAKE_TEXT_LENGTH + 1];
	int64		id = 0;

	IdTextEncode(id, previous);
	for (int i = 0; i < 200000; i++)
	{
		uint64		step = rng() >> (1 + rng() % 63);

		if ((uint64) (PG_INT64_MAX - id) < step + 1)
			break;
		id += (int64) step + 1;
		IdTextEncode(id, text);
		CHECK(strcmp(previous, text) < 0, "%s then %s (" INT64_FORMAT ")", previous, text, id);
		memcpy(previous, text, sizeof(text));
	}
}

/*
 * Decryption of random strings: the check accepts 2^63 of 32^15 = 2^75
 * plaintexts, 1 in 4096.  With 2^20 trials the count is 256 on average,
 * with a standard deviation of 16: outside 160..352 (6 sigma) is a fault.
 */
static void
test_acceptance(void)
{
	unsigned char key_bytes[32],
				digits[SNOWFLAKE_PUBLIC_DIGITS];
	Ff1Key		key;
	int			accepted = 0;
	int			trials = 1 << 20;

	for (int i = 0; i < 32; i++)
		key_bytes[i] = (unsigned char) rng();
	CHECK(Ff1KeyInit(&key, key_bytes, 32) == FF1_OK, "key");
	for (int i = 0; i < trials; i++)
	{
		int64		id;

		for (int j = 0; j < SNOWFLAKE_PUBLIC_DIGITS; j++)
			digits[j] = (unsigned char) (rng() & 31);
		if (PublicIdDecrypt(&key, 1, digits, &id) == PUBLIC_ID_OK)
			accepted++;
	}
	printf("random strings accepted: %d of %d (1 in %.0f)\n", accepted, trials,
		   accepted ? (double) trials / accepted : 0.0);
	CHECK(accepted >= 160 && accepted <= 352, "%d accepted", accepted);
	Ff1KeyFree(&key);
}

static void
test_digits(void)
{
	const char *valid = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

	for (int i = 0; i < 32; i++)
	{
		CHECK(IdTextDigitValue((unsigned char) valid[i]) == i, "%c", valid[i]);
		CHECK(IdTextDigitValue((unsigned char) tolower(valid[i])) == i, "%c", tolower(valid[i]));
	}
	CHECK(IdTextDigitValue('O') == 0 && IdTextDigitValue('o') == 0, "O");
	CHECK(IdTextDigitValue('I') == 1 && IdTextDigitValue('i') == 1, "I");
	CHECK(IdTextDigitValue('L') == 1 && IdTextDigitValue('l') == 1, "L");
	for (int c = 0; c < 256; c++)
		if (!isalnum(c) || c >= 128)
			CHECK(IdTextDigitValue((unsigned char) c) == -1, "byte %d", c);
	CHECK(IdTextDigitValue('U') == -1 && IdTextDigitValue('u') == -1, "U");
	CHECK(IdTextDigitValue('-') == -1, "hyphen");
}

int
main(int argc, char **argv)
{
	uint64		seed = argc > 1 ? strtoull(argv[1], NULL, 10) : (uint64) time(NULL);

	printf("ff1_test seed %llu\n", (unsigned long long) seed);
	rng_state = seed;
	test_nist_samples();
	test_bounds();
	test_digits();
	test_round_trips();
	test_order();
	test_acceptance();
	if (failures)
	{
		printf("ff1_test: %d checks failed (seed %llu)\n", failures, (unsigned long long) seed);
		return 1;
	}
	printf("ff1_test: the 9 NIST FF1 samples and every check passed\n");
	return 0;
}

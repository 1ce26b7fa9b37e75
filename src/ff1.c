/*-------------------------------------------------------------------------
 *
 * ff1.c
 *	  FF1 (NIST SP 800-38G, Algorithms 7 and 8) over AES-128/192/256.
 *
 * Written from the standard's pseudocode; the step numbers in comments are
 * its own.  The PRF is CBC-MAC over P || Q with a zero IV, one AES call per
 * 16-byte block; with the bounds of ff1.h, S is the first d <= 12 bytes of
 * R, so step 6.iii never needs more blocks, and every NUM and modulus fits
 * 64 bits.  Nothing depends on PostgreSQL but its portable types, so the
 * unit test links this file alone.
 *
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include <openssl/evp.h>

#include "ff1.h"

#define FF1_BLOCK			16
#define FF1_ROUNDS			10
/* radix^ceil(n/2) stays below this, so that r * 256 + byte fits 64 bits */
#define FF1_MAX_MODULUS		(UINT64CONST(1) << 56)

Ff1Result
Ff1KeyInit(Ff1Key *key, const unsigned char *bytes, int length)
{
	const EVP_CIPHER *aes;
	EVP_CIPHER_CTX *ctx;

	key->cipher = NULL;
	switch (length)
	{
		case 16:
			aes = EVP_aes_128_ecb();
			break;
		case 24:
			aes = EVP_aes_192_ecb();
			break;
		case 32:
			aes = EVP_aes_256_ecb();
			break;
		default:
			return FF1_BAD_ARGUMENT;
	}
	ctx = EVP_CIPHER_CTX_new();
	if (ctx == NULL)
		return FF1_CIPHER_FAILED;
	if (EVP_EncryptInit_ex(ctx, aes, NULL, bytes, NULL) != 1 ||
		EVP_CIPHER_CTX_set_padding(ctx, 0) != 1)
	{
		EVP_CIPHER_CTX_free(ctx);
		return FF1_CIPHER_FAILED;
	}
	key->cipher = ctx;
	return FF1_OK;
}

void
Ff1KeyFree(Ff1Key *key)
{
	if (key->cipher != NULL)
		EVP_CIPHER_CTX_free((EVP_CIPHER_CTX *) key->cipher);
	key->cipher = NULL;
}

/* One AES block; ECB without padding encrypts whole blocks at once. */
bool
Ff1Block(const Ff1Key *key, const unsigned char *in, unsigned char *out)
{
	int			outl = 0;

	return EVP_EncryptUpdate((EVP_CIPHER_CTX *) key->cipher, out, &outl,
							 in, FF1_BLOCK) == 1 && outl == FF1_BLOCK;
}

/*
 * NUM_radix(X) of m digits; the caller keeps radix^m below 2^56.  A radix
 * that is a power of two (shift > 0: public ids use 32) takes shifts and
 * masks instead of divisions, which otherwise cost more than the AES calls.
 */
static uint64
ff1_num(const unsigned char *digits, int m, int radix, int shift)
{
	uint64		x = 0;

	if (shift > 0)
		for (int i = 0; i < m; i++)
			x = (x << shift) | digits[i];
	else
		for (int i = 0; i < m; i++)
			x = x * radix + digits[i];
	return x;
}

/* STR^m_radix(x) */
static void
ff1_str(uint64 x, int m, int radix, int shift, unsigned char *digits)
{
	if (shift > 0)
		for (int i = m - 1; i >= 0; i--)
		{
			digits[i] = (unsigned char) (x & (radix - 1));
			x >>= shift;
		}
	else
		for (int i = m - 1; i >= 0; i--)
		{
			digits[i] = (unsigned char) (x % radix);
			x /= radix;
		}
}

static uint64
ff1_pow(int radix, int m)
{
	uint64		p = 1;

	for (int i = 0; i < m; i++)
	{
		if (p >= FF1_MAX_MODULUS / radix + 1)
			return FF1_MAX_MODULUS;		/* "too large", whatever the rest */
		p *= radix;
	}
	return p;
}

/*
 * FF1.Encrypt and FF1.Decrypt (SP 800-38G, Algorithms 7 and 8) as one
 * function over 170 lines: the two differ only in the direction of the
 * rounds, and kept whole, in the standard's order of steps, it reads
 * against the standard line by line.
 */
static Ff1Result
ff1_crypt(const Ff1Key *key, bool encrypt, int radix,
		  const unsigned char *tweak, int t, const unsigned char *in, int n,
		  unsigned char *out)
{
	unsigned char x[FF1_MAX_DIGITS];
	unsigned char *a;
	unsigned char *b;
	unsigned char p[FF1_BLOCK];
	unsigned char q[FF1_MAX_TWEAK + 2 * FF1_BLOCK];
	unsigned char ep[FF1_BLOCK];
	unsigned char r[FF1_BLOCK];
	unsigned char block[FF1_BLOCK];
	int			u,
				v,
				bytes,
				d,
				qlen,
				pad;
	uint64		modulus_u,
				modulus_v,
				radix_v;
	int			shift = 0;

	if (key->cipher == NULL || radix < 2 || radix > 256 || n < 2 ||
		n > FF1_MAX_DIGITS || t < 0 || t > FF1_MAX_TWEAK ||
		(t > 0 && tweak == NULL))
		return FF1_BAD_ARGUMENT;
	/* 1. */
	u = n / 2;
	v = n - u;
	modulus_u = ff1_pow(radix, u);
	modulus_v = radix_v = ff1_pow(radix, v);
	if (radix_v >= FF1_MAX_MODULUS)
		return FF1_BAD_ARGUMENT;
	/* radix^n >= 1,000,000 (the product cannot overflow when both are small) */
	if (modulus_u < 1000000 && modulus_v < 1000000 &&
		modulus_u * modulus_v < 1000000)
		return FF1_BAD_ARGUMENT;
	for (int i = 0; i < n; i++)
		if (in[i] >= radix)
			return FF1_BAD_ARGUMENT;

	if ((radix & (radix - 1)) == 0)
		while ((1 << shift) < radix)
			shift++;

	/* 2. */
	memcpy(x, in, n);
	a = x;
	b = x + u;

	/*
	 * 3. b = ceil(ceil(v * log2(radix)) / 8): the bits of radix^v - 1, that
	 * is the least k with 2^k >= radix^v, in whole bytes.  4. d.
	 */
	{
		int			k = 0;

		while ((UINT64CONST(1) << k) < radix_v)
			k++;
		bytes = (k + 7) / 8;
	}
	d = 4 * ((bytes + 3) / 4) + 4;
	Assert(d <= FF1_BLOCK && bytes <= 8);

	/* 5. P = [1]^1 || [2]^1 || [1]^1 || [radix]^3 || [10]^1 || [u mod 256]^1 || [n]^4 || [t]^4 */
	p[0] = 1;
	p[1] = 2;
	p[2] = 1;
	p[3] = (unsigned char) (radix >> 16);
	p[4] = (unsigned char) (radix >> 8);
	p[5] = (unsigned char) radix;
	p[6] = 10;
	p[7] = (unsigned char) (u % 256);
	p[8] = (unsigned char) (n >> 24);
	p[9] = (unsigned char) (n >> 16);
	p[10] = (unsigned char) (n >> 8);
	p[11] = (unsigned char) n;
	p[12] = (unsigned char) (t >> 24);
	p[13] = (unsigned char) (t >> 16);
	p[14] = (unsigned char) (t >> 8);
	p[15] = (unsigned char) t;
	/* The first CBC-MAC block is the same in every round. */
	if (!Ff1Block(key, p, ep))
		return FF1_CIPHER_FAILED;

	/* Q = T || [0]^((-t-b-1) mod 16) || [i]^1 || [NUM(B or A)]^b */
	pad = ((-t - bytes - 1) % FF1_BLOCK + FF1_BLOCK) % FF1_BLOCK;
	qlen = t + pad + 1 + bytes;
	Assert(qlen % FF1_BLOCK == 0 && qlen <= (int) sizeof(q));
	if (t > 0)
		memcpy(q, tweak, t);
	memset(q + t, 0, pad);

	for (int round = 0; round < FF1_ROUNDS; round++)
	{
		/* 6. encrypting, i counts up; decrypting (Algorithm 8), down */
		int			i = encrypt ? round : FF1_ROUNDS - 1 - round;
		int			m = (i % 2 == 0) ? u : v;
		uint64		modulus = (i % 2 == 0) ? modulus_u : modulus_v;
		const unsigned char *source = encrypt ? b : a;
		unsigned char *target;
		uint64		num,
					y;

		/* 6.i. */
		q[t + pad] = (unsigned char) i;
		/* the half that is not replaced this round: n - m digits */
		num = ff1_num(source, n - m, radix, shift);
		for (int j = 0; j < bytes; j++)
			q[qlen - 1 - j] = (unsigned char) (num >> (8 * j));

		/* 6.ii. R = PRF(P || Q): CBC-MAC, zero IV */
		memcpy(r, ep, FF1_BLOCK);
		for (int off = 0; off < qlen; off += FF1_BLOCK)
		{
			for (int j = 0; j < FF1_BLOCK; j++)
				block[j] = r[j] ^ q[off + j];
			if (!Ff1Block(key, block, r))
				return FF1_CIPHER_FAILED;
		}

		/*
		 * 6.iii-iv. y = NUM(S), S the first d bytes of R; only y mod
		 * radix^m matters, computed byte by byte (the modulus is below
		 * 2^56, so y * 256 + byte fits 64 bits).
		 */
		y = 0;
		if (shift > 0)
		{
			/* the modulus divides 2^64: the last 8 bytes of S suffice */
			for (int j = Max(d - 8, 0); j < d; j++)
				y = (y << 8) | r[j];
			y &= modulus - 1;
		}
		else
			for (int j = 0; j < d; j++)
				y = ((y << 8) | r[j]) % modulus;

		/* 6.v-ix. */
		if (encrypt)
		{
			/* c = (NUM(A) + y) mod radix^m; A = B; B = C */
			uint64		c = ff1_num(a, m, radix, shift) + y;
			unsigned char *old_a = a;

			if (c >= modulus)	/* both terms are below the modulus */
				c -= modulus;
			a = b;
			b = old_a;
			target = b;
			/* A (the old B) has v or u digits: the halves swap lengths */
			ff1_str(c, m, radix, shift, target);
		}
		else
		{
			/* c = (NUM(B) - y) mod radix^m; B = A; A = C */
			uint64		num_b = ff1_num(b, m, radix, shift);
			uint64		c = num_b >= y ? num_b - y : num_b + modulus - y;
			unsigned char *old_b = b;

			b = a;
			a = old_b;
			target = a;
			ff1_str(c, m, radix, shift, target);
		}
	}
	/* 7. A || B */
	memcpy(out, a, u);
	memcpy(out + u, b, v);
	return FF1_OK;
}

Ff1Result
Ff1Encrypt(const Ff1Key *key, int radix, const unsigned char *tweak,
		   int tweak_length, const unsigned char *in, int n, unsigned char *out)
{
	return ff1_crypt(key, true, radix, tweak, tweak_length, in, n, out);
}

Ff1Result
Ff1Decrypt(const Ff1Key *key, int radix, const unsigned char *tweak,
		   int tweak_length, const unsigned char *in, int n, unsigned char *out)
{
	return ff1_crypt(key, false, radix, tweak, tweak_length, in, n, out);
}

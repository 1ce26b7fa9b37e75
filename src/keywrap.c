/*-------------------------------------------------------------------------
 *
 * keywrap.c
 *	  AES key wrap with padding, through OpenSSL (see keywrap.h).
 *
 * OpenSSL refuses its wrap modes in an EVP context unless the context
 * allows them (EVP_CIPHER_CTX_FLAG_WRAP_ALLOW): they are not for bulk data.
 * A wrap is one update and a final, with no IV of ours (KWP's alternative
 * initial value, with the key's length, is the default).
 *
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include <openssl/evp.h>

#include "keywrap.h"

static const EVP_CIPHER *
keywrap_cipher(int kek_len)
{
	switch (kek_len)
	{
		case 16:
			return EVP_aes_128_wrap_pad();
		case 24:
			return EVP_aes_192_wrap_pad();
		case 32:
			return EVP_aes_256_wrap_pad();
	}
	return NULL;
}

/* One pass of the cipher over in; returns the bytes written, or -1 */
static int
keywrap_run(bool encrypt, const unsigned char *kek, int kek_len, const unsigned char *in,
			int in_len, unsigned char *out)
{
	const EVP_CIPHER *cipher = keywrap_cipher(kek_len);
	EVP_CIPHER_CTX *ctx;
	int			len = 0;
	int			final = 0;
	int			ok;

	if (cipher == NULL || (ctx = EVP_CIPHER_CTX_new()) == NULL)
		return -1;
	EVP_CIPHER_CTX_set_flags(ctx, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
	ok = EVP_CipherInit_ex(ctx, cipher, NULL, kek, NULL, encrypt ? 1 : 0) == 1 &&
		EVP_CipherUpdate(ctx, out, &len, in, in_len) == 1 && len > 0 &&
		EVP_CipherFinal_ex(ctx, out + len, &final) == 1;
	EVP_CIPHER_CTX_free(ctx);
	return ok ? len + final : -1;
}

bool
KeyWrap(const unsigned char *kek, int kek_len, const unsigned char *key, int key_len,
		unsigned char *out)
{
	if (key_len < 1 || key_len > KEYWRAP_MAX_KEY)
		return false;
	return keywrap_run(true, kek, kek_len, key, key_len, out) == KEYWRAP_WRAPPED_LEN(key_len);
}

int
KeyUnwrap(const unsigned char *kek, int kek_len, const unsigned char *wrapped, int wrapped_len,
		  unsigned char *out)
{
	unsigned char buffer[KEYWRAP_WRAPPED_LEN(KEYWRAP_MAX_KEY)];
	int			len;

	/* (the unwrap writes up to the wrapped length, padding included) */
	if (wrapped_len < 16 || wrapped_len > (int) sizeof(buffer) || wrapped_len % 8 != 0)
		return -1;
	len = keywrap_run(false, kek, kek_len, wrapped, wrapped_len, buffer);
	if (len < 1 || len > KEYWRAP_MAX_KEY || KEYWRAP_WRAPPED_LEN(len) != wrapped_len)
		len = -1;
	else
		memcpy(out, buffer, len);
	explicit_bzero(buffer, sizeof(buffer));
	return len;
}

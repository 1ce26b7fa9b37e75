/*-------------------------------------------------------------------------
 *
 * leasechain.h
 *	  The lease client's chain of secrets: the secrets its next call
 *	  offers the coordinator, and the next secret, whose hash that call
 *	  registers.
 *
 * Each claim and renewal proves a secret and registers the SHA-256 of a
 * new one, drawn for it and sent nowhere; a release proves one.  So a
 * secret seen where a call went (a log, a packet capture) is spent once
 * that call commits.  Which secret the coordinator's row holds is not
 * always the newest, though:
 *
 * - a call whose answer was lost (a timeout, a connection broken after the
 *   call was sent) may have committed or not;
 * - a coordinator may lose its last commits: an asynchronous standby
 *   promoted, a restore to a point in time.
 *
 * So each call offers the last LEASE_CHAIN_MAX secrets that the
 * coordinator may hold, newest last: a call answered or maybe committed
 * adds its next secret (LeaseChainSent), an error adds none (it rolled
 * back), and a lease the coordinator no longer knows forgets them all
 * (LeaseChainForget).  The older ones were sent before and are spent on a
 * coordinator that kept its commits; on one that lost them, the secret its
 * row holds again is good again until the holder's next call, as it would
 * be to the holder.  A lease whose secret is dropped cannot be renewed,
 * and lapses, which is safe.  The coordinator refuses more than
 * LEASE_CHAIN_MAX (_snowflake_lease_proofs()).
 *
 * No PostgreSQL state: the unit test (test/unit/leasechain_test.c) links
 * this file alone, with libpgport and libcrypto.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SNOWFLAKE_LEASECHAIN_H
#define SNOWFLAKE_LEASECHAIN_H

/* A secret: 128 random bits, as 32 hexadecimal digits */
#define LEASE_SECRET_BYTES	16
#define LEASE_SECRET_HEX	(LEASE_SECRET_BYTES * 2 + 1)

/* The secrets a call may offer, as the coordinator allows */
#define LEASE_CHAIN_MAX		8

typedef struct LeaseChain
{
	int			nsecrets;		/* offered by the next call */
	char		secrets[LEASE_CHAIN_MAX][LEASE_SECRET_HEX];
	char		next[LEASE_SECRET_HEX]; /* drawn for the next call */
	char		next_hash[2 + 64 + 1];	/* its SHA-256, as a bytea literal */
} LeaseChain;

/* No secret yet: a first claim offers none. */
extern void LeaseChainForget(LeaseChain *chain);

/*
 * Draw the next secret and its hash, before a claim or a renewal; false if
 * no random bits or no hash could be had.
 */
extern bool LeaseChainDraw(LeaseChain *chain);

/*
 * The hash the coordinator keeps of a secret (32 hexadecimal digits), as
 * a bytea literal ("\\x" and 64 digits) into dest; false if no hash could
 * be had or the secret is not one.
 */
extern bool LeaseChainHash(const char *secret, char *dest);

/* The secrets offered, as an array literal: "{...,...}" (palloc'd) */
extern char *LeaseChainOffered(const LeaseChain *chain);

/*
 * The call that registered the next secret's hash committed, or may have:
 * offer that secret too from now on (the oldest dropped past the bound).
 */
extern void LeaseChainSent(LeaseChain *chain);

#endif							/* SNOWFLAKE_LEASECHAIN_H */

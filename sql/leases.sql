-- The coordinator's lease functions, on one server: claim, renew and
-- release with the holder's token and with others', expiry, the horizon
-- rules, and the checks of every argument.
SET timezone = 'UTC';
\set VERBOSITY default
-- (no CONTEXT: PostgreSQL 13 shows fewer lines of it for RETURN QUERY
-- EXECUTE, and the message says what was refused)
\set SHOW_CONTEXT never
-- tokens: 32 hexadecimal digits, one per claim
\set ta '''aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'''
\set tb '''bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'''
\set tc '''cccccccccccccccccccccccccccccccc'''
\set td '''dddddddddddddddddddddddddddddddd'''
\set te '''eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee'''
\set tf '''ffffffffffffffffffffffffffffffff'''
\set tx '''0123456789abcdef0123456789abcdef'''
-- horizons are milliseconds since 1970, bounded by the clock: "now" here
SELECT (extract(epoch FROM now()) * 1000)::bigint AS now_ms \gset

-- a first claim of 3-5: the lowest, generation 1, nothing issued before
SELECT node, generation, previous_horizon_ms, horizon_ms - :now_ms AS horizon, expires_at > now() AS valid
  FROM snowflake_lease_claim('server a', :ta, '{3}', '{5}', NULL, 60000, :now_ms + 1000);
-- the next claimers get the next free ones; a preferred one when free
SELECT node, generation FROM snowflake_lease_claim('server b', :tb, '{3}', '{5}', NULL, 60000, :now_ms + 2000);
SELECT node, generation FROM snowflake_lease_claim('server c', :tc, '{3}', '{5}', 3, 60000, :now_ms + 3000);
-- all three held: no row
SELECT count(*) FROM snowflake_lease_claim('server d', :td, '{3}', '{5}', NULL, 60000, :now_ms + 4000);
-- ranges: the lowest free value among them
SELECT node FROM snowflake_lease_claim('server d', :td, '{3,10}', '{5,12}', NULL, 60000, :now_ms + 4000);
-- the same token again (a claim whose answer was lost): the same lease,
-- not a second one, renewed, with the horizon the previous holder left
SELECT node, generation, previous_horizon_ms, horizon_ms - :now_ms AS horizon
  FROM snowflake_lease_claim('server d', :td, '{3,10}', '{5,12}', NULL, 60000, :now_ms + 4500);
SELECT count(*) AS leases_of_d FROM snowflake_lease WHERE holder = 'server d';

-- the table keeps the token's hash and the claiming role, never the token
SELECT node, token_hash = sha256(decode(:ta, 'hex')) AS hashed, claimed_by = current_user AS by_me
  FROM snowflake_lease WHERE node = 3;
SELECT count(*) AS tokens_in_clear FROM snowflake_lease
 WHERE position(decode(:ta, 'hex') IN token_hash) > 0 OR holder LIKE '%aaaaaaaa%';

-- renewal with the holder's token raises the horizon, never lowers it
SELECT renewed, horizon_ms - :now_ms AS horizon FROM snowflake_lease_renew(3, :ta, 60000, :now_ms + 5000);
SELECT renewed, horizon_ms - :now_ms AS horizon FROM snowflake_lease_renew(3, :ta, 60000, :now_ms + 10);
-- with any other token it is refused, and says nothing: no holder,
-- generation, horizon or expiry, not even whether the row exists
SELECT renewed, horizon_ms, expires_at FROM snowflake_lease_renew(3, :tb, 60000, :now_ms + 99999);
SELECT renewed, horizon_ms, expires_at FROM snowflake_lease_renew(3, :tx, 60000, :now_ms + 99999);
SELECT renewed, horizon_ms, expires_at FROM snowflake_lease_renew(42, :ta, 60000, :now_ms + 99999);
-- and changes nothing
SELECT node, generation, horizon_ms - :now_ms AS horizon, expires_at > now() + interval '50 s' AS renewed_for_60s
  FROM snowflake_lease WHERE node = 3;

-- expiry: a lease of 500 ms lapses, and the next claim takes the row over
-- with the next generation, issuing at or above the horizon it finds
SELECT renewed FROM snowflake_lease_renew(4, :tb, 500, :now_ms + 6000);
SELECT pg_sleep(0.6);
SELECT node, generation, previous_horizon_ms - :now_ms AS previous_horizon, horizon_ms - :now_ms AS horizon
  FROM snowflake_lease_claim('server e', :te, '{3}', '{5}', NULL, 60000, :now_ms + 100);
-- the old holder's renewal and release are then refused
SELECT renewed, horizon_ms FROM snowflake_lease_renew(4, :tb, 60000, :now_ms + 7000);
SELECT snowflake_lease_release(4, :tb, 0);
-- a lapsed lease nobody claimed is still its holder's to renew
SELECT renewed FROM snowflake_lease_renew(10, :td, 500, :now_ms);
SELECT pg_sleep(0.6);
SELECT renewed, expires_at > now() AS valid FROM snowflake_lease_renew(10, :td, 60000, :now_ms);

-- release: only with the holder's token; the exact end may lower the
-- horizon, never below what the previous holder issued, never raise it
SELECT snowflake_lease_release(5, :ta, 0);
SELECT snowflake_lease_release(5, :tx, 0);
SELECT snowflake_lease_release(5, :tc, :now_ms + 2500);
SELECT node, horizon_ms - :now_ms AS horizon, floor_ms, expires_at <= now() AS free
  FROM snowflake_lease WHERE node = 5;
-- released: the token renews and releases it no more
SELECT renewed FROM snowflake_lease_renew(5, :tc, 60000, :now_ms);
SELECT snowflake_lease_release(5, :tc, 0);
SELECT snowflake_lease_release(4, :te, 10);
SELECT node, horizon_ms - :now_ms AS horizon, floor_ms - :now_ms AS floor FROM snowflake_lease WHERE node = 4;
SELECT snowflake_lease_release(10, :td, :now_ms + 1000000000);
SELECT node, horizon_ms - :now_ms AS horizon_not_raised FROM snowflake_lease WHERE node = 10;
-- a released worker id is free at once, for its old holder too (with a
-- token of its new claim)
SELECT node, generation, previous_horizon_ms - :now_ms AS previous_horizon
  FROM snowflake_lease_claim('server c', :tf, '{3}', '{5}', 5, 60000, :now_ms + 3000);

-- bad input: NULLs, ranges, tokens, TTLs and horizons out of bounds
SELECT * FROM snowflake_lease_claim(NULL, :ta, '{3}', '{5}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', NULL, '{3}', '{5}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', :tx, '{3,4}', '{5}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', :tx, '{5}', '{3}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', :tx, '{-1}', '{3}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', :tx, '{1,NULL}', '{3,4}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', :tx, '{}', '{}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', :tx, array_fill(0, ARRAY[1025]), array_fill(0, ARRAY[1025]), NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim(repeat('x', 1025), :tx, '{3}', '{5}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', 'abc', '{3}', '{5}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', upper(:tx), '{3}', '{5}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', :tx || '0', '{3}', '{5}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', :tx, '{3}', '{5}', NULL, 0, 0);
SELECT * FROM snowflake_lease_claim('x', :tx, '{3}', '{5}', NULL, -1, 0);
SELECT * FROM snowflake_lease_claim('x', :tx, '{3}', '{5}', NULL, 499, 0);
SELECT * FROM snowflake_lease_claim('x', :tx, '{3}', '{5}', NULL, 600001, 0);
SELECT * FROM snowflake_lease_claim('x', :tx, '{3}', '{5}', NULL, 2147483647, 0);
-- (terse: the detail gives the coordinator's clock)
\set VERBOSITY terse
SELECT * FROM snowflake_lease_claim('x', :tx, '{3}', '{5}', NULL, 60000, -1);
SELECT * FROM snowflake_lease_claim('x', :tx, '{3}', '{5}', NULL, 60000, 9223372036854775807);
-- the bound: the TTL plus 5 minutes past the coordinator's clock (the
-- SQLSTATE alone: the message names the horizon)
\set VERBOSITY sqlstate
SELECT * FROM snowflake_lease_claim('x', :tx, '{3}', '{5}', NULL, 60000,
	(extract(epoch FROM clock_timestamp()) * 1000)::bigint + 60000 + 300000 + 60000);
SELECT count(*) FROM snowflake_lease_claim('x', :tx, '{3}', '{5}', NULL, 60000,
	(extract(epoch FROM clock_timestamp()) * 1000)::bigint + 60000 + 300000 - 60000);
\set VERBOSITY terse
SELECT renewed FROM snowflake_lease_renew(3, :ta, 60000, 9223372036854775807);
\set VERBOSITY default
SELECT renewed FROM snowflake_lease_renew(3, :ta, 600001, 0);
SELECT renewed FROM snowflake_lease_renew(3, 'not a token', 60000, 0);
SELECT renewed FROM snowflake_lease_renew(NULL, :ta, 60000, 0);
SELECT snowflake_lease_release(3, :ta, -1);
SELECT snowflake_lease_release(3, 'x', 0);
SELECT snowflake_lease_release(3, :ta, NULL);
-- none of them changed a lease
SELECT count(*) AS untouched FROM snowflake_lease WHERE node = 3 AND generation = 1 AND released_at IS NULL;

-- The chain of secrets (0.4.0's calls): each claim and renewal proves a
-- secret and registers the hash of the next one.  Secrets here: sN is
-- repeat('N', 32), hashed as the lease client does.
CREATE FUNCTION pg_temp.s(n integer) RETURNS text LANGUAGE sql AS $$ SELECT repeat(n::text, 32) $$;
CREATE FUNCTION pg_temp.h(n integer) RETURNS bytea LANGUAGE sql AS $$ SELECT sha256(decode(repeat(n::text, 32), 'hex')) $$;
-- a first claim offers no secret
SELECT node, generation FROM snowflake_lease_claim('chain', '{}', pg_temp.h(1), '{40}', '{49}', NULL, 60000, :now_ms + 1000);
SELECT token_hash = pg_temp.h(1) AS keeps_hash_of_next FROM snowflake_lease WHERE node = 40;
SELECT renewed FROM snowflake_lease_renew(40, ARRAY[pg_temp.s(1)], pg_temp.h(2), 60000, :now_ms + 1000);
-- a secret once used is spent: replayed, it neither renews nor releases
SELECT renewed FROM snowflake_lease_renew(40, ARRAY[pg_temp.s(1)], pg_temp.h(9), 60000, :now_ms + 1000);
SELECT snowflake_lease_release(40, ARRAY[pg_temp.s(1)], 0);
SELECT count(*) FROM snowflake_lease_claim('chain', ARRAY[pg_temp.s(1)], pg_temp.h(9), '{40}', '{40}', NULL, 60000, 0);
-- an answer lost: the renewal with s2 committed, the client does not
-- know it and offers s2 and s3 next; either way the lease is its
SELECT renewed FROM snowflake_lease_renew(40, ARRAY[pg_temp.s(2)], pg_temp.h(3), 60000, :now_ms + 1000);
SELECT renewed FROM snowflake_lease_renew(40, ARRAY[pg_temp.s(2), pg_temp.s(3)], pg_temp.h(4), 60000, :now_ms + 1000);
SELECT renewed FROM snowflake_lease_renew(40, ARRAY[pg_temp.s(3)], pg_temp.h(9), 60000, :now_ms + 1000);
-- a claim offering the current secret takes the same lease back
SELECT node, generation FROM snowflake_lease_claim('chain', ARRAY[pg_temp.s(4)], pg_temp.h(5), '{40}', '{49}', NULL, 60000, :now_ms + 1000);
SELECT count(*) AS leases_of_chain FROM snowflake_lease WHERE holder = 'chain';
-- a release with the current secret, however low the end it gives: the
-- horizon stays at or above the coordinator's clock, and no hash is kept
SELECT snowflake_lease_release(40, ARRAY[pg_temp.s(5)], 0);
SELECT horizon_ms >= (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 60000 AS not_below_clock,
	   horizon_ms <= :now_ms + 1000 AS lowered, token_hash IS NULL AS no_hash
  FROM snowflake_lease WHERE node = 40;
SELECT snowflake_lease_release(40, ARRAY[pg_temp.s(5)], 0);
-- the checks of proofs and next hashes
SELECT * FROM snowflake_lease_claim('chain', NULL, pg_temp.h(6), '{40}', '{49}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('chain', '{}', NULL, '{40}', '{49}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('chain', '{}', '\x00', '{40}', '{49}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('chain', '{abc}', pg_temp.h(6), '{40}', '{49}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('chain', ARRAY[NULL::text], pg_temp.h(6), '{40}', '{49}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('chain', ARRAY[upper(repeat('ab', 16))], pg_temp.h(6), '{40}', '{49}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('chain', ARRAY[[pg_temp.s(6)]], pg_temp.h(6), '{40}', '{49}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('chain', array_fill(pg_temp.s(6), ARRAY[9]), pg_temp.h(6), '{40}', '{49}', NULL, 60000, 0);
SELECT count(*) FROM snowflake_lease_claim('chain', array_fill(pg_temp.s(6), ARRAY[8]), pg_temp.h(6), '{40}', '{49}', NULL, 60000, :now_ms);
SELECT renewed FROM snowflake_lease_renew(40, ARRAY[pg_temp.s(6)], NULL, 60000, 0);
SELECT renewed FROM snowflake_lease_renew(NULL, ARRAY[pg_temp.s(6)], pg_temp.h(7), 60000, 0);
SELECT renewed FROM snowflake_lease_renew(40, ARRAY[pg_temp.s(6)], pg_temp.h(7), 499, 0);
-- the renewal plans its statement once per session, and again when the
-- extension moves to another schema or its schema is renamed
CREATE SCHEMA sfl;
ALTER EXTENSION snowflake SET SCHEMA sfl;
SELECT renewed FROM sfl.snowflake_lease_renew(40, ARRAY[pg_temp.s(6)], pg_temp.h(7), 60000, :now_ms + 1000);
ALTER SCHEMA sfl RENAME TO sfl2;
SELECT renewed FROM sfl2.snowflake_lease_renew(40, ARRAY[pg_temp.s(7)], pg_temp.h(8), 60000, :now_ms + 1000);
ALTER EXTENSION snowflake SET SCHEMA public;
DROP SCHEMA sfl2;
SELECT renewed FROM snowflake_lease_renew(40, ARRAY[pg_temp.s(8)], pg_temp.h(6), 60000, :now_ms + 1000);
-- (typed: an untyped array literal would call 0.3.0's release, of a token)
SELECT snowflake_lease_release(40, NULL::text[], 0);
SELECT snowflake_lease_release(40, '{}'::text[], -1);
SELECT snowflake_lease_release(40, '{}', 0);
-- the table keeps the hash of the next secret only
SELECT count(*) AS secrets_in_clear FROM snowflake_lease
 WHERE position(decode(pg_temp.s(6), 'hex') IN coalesce(token_hash, '')) > 0 OR token_hash = pg_temp.h(6) AND node <> 40;
SELECT node, token_hash = pg_temp.h(6) AS hash_of_next FROM snowflake_lease WHERE holder = 'chain';

-- privileges: a fleet's role needs EXECUTE only; the table is not its to
-- write, and a lease is its claimer's: another login role, even with the
-- token, cannot renew or release it (SESSION AUTHORIZATION: the functions
-- know the role that logged in)
CREATE ROLE snowflake_fleet;
CREATE ROLE snowflake_other;
SET SESSION AUTHORIZATION snowflake_fleet;
SELECT count(*) FROM snowflake_lease_claim('server f', :tf, '{20}', '{20}', NULL, 60000, 0);
SELECT count(*) FROM snowflake_lease;
SELECT * FROM _snowflake_lease_check(:tf, 60000, 0);
RESET SESSION AUTHORIZATION;
GRANT EXECUTE ON FUNCTION snowflake_lease_claim(text, text, integer[], integer[], integer, integer, bigint),
	snowflake_lease_renew(integer, text, integer, bigint),
	snowflake_lease_release(integer, text, bigint) TO snowflake_fleet, snowflake_other;
SET SESSION AUTHORIZATION snowflake_fleet;
SELECT node, generation FROM snowflake_lease_claim('server f', '12121212121212121212121212121212', '{20}', '{20}', NULL, 60000, 0);
SELECT renewed FROM snowflake_lease_renew(20, '12121212121212121212121212121212', 60000, 10);
SET SESSION AUTHORIZATION snowflake_other;
SELECT renewed FROM snowflake_lease_renew(20, '12121212121212121212121212121212', 60000, 10);
SELECT snowflake_lease_release(20, '12121212121212121212121212121212', 0);
-- nor take it with the same token as a "retried claim"
SELECT count(*) FROM snowflake_lease_claim('server g', '12121212121212121212121212121212', '{20}', '{20}', NULL, 60000, 0);
SET SESSION AUTHORIZATION snowflake_fleet;
SELECT snowflake_lease_release(20, '12121212121212121212121212121212', 10);
UPDATE snowflake_lease SET horizon_ms = 0;
RESET SESSION AUTHORIZATION;
REVOKE ALL ON FUNCTION snowflake_lease_claim(text, text, integer[], integer[], integer, integer, bigint),
	snowflake_lease_renew(integer, text, integer, bigint),
	snowflake_lease_release(integer, text, bigint) FROM snowflake_fleet, snowflake_other;
-- monitoring reads every column but the token hashes
GRANT pg_monitor TO snowflake_other;
SET SESSION AUTHORIZATION snowflake_other;
SELECT node, holder, generation FROM snowflake_lease WHERE node = 3;
SELECT token_hash FROM snowflake_lease;
RESET SESSION AUTHORIZATION;
DROP ROLE snowflake_fleet;
DROP ROLE snowflake_other;

-- a search_path that puts a look-alike table first changes nothing
CREATE SCHEMA evil;
CREATE TABLE evil.snowflake_lease (LIKE snowflake_lease);
SET search_path = evil, public;
SELECT node FROM public.snowflake_lease_claim('server g', '34343434343434343434343434343434', '{30}', '{30}', NULL, 60000, 0);
SELECT count(*) AS evil_rows FROM evil.snowflake_lease;
RESET search_path;
DROP SCHEMA evil CASCADE;

-- a negative worker id or a generation below 1 is refused wherever it is
-- written (domains, not CHECKs of the table, which every renewal ran)
\set VERBOSITY terse
INSERT INTO snowflake_lease (node, generation, holder, expires_at, horizon_ms, floor_ms, claimed_at)
VALUES (-1, 1, 'negative', now(), 0, 0, now());
UPDATE snowflake_lease SET generation = 0 WHERE node = 3;
UPDATE snowflake_lease SET generation = generation - generation WHERE node = 3;
\set VERBOSITY default
SELECT generation > 0 AS kept FROM snowflake_lease WHERE node = 3;

-- the table's bound, 65536 rows: past it a claim takes only a row that
-- expired, and one that would need a new row is refused
INSERT INTO snowflake_lease (node, generation, holder, expires_at, horizon_ms, floor_ms, claimed_at)
SELECT 100000 + g, 1, 'filler', now() - interval '1 hour', 0, 0, now() - interval '1 hour'
  FROM generate_series(1, 65536 - (SELECT count(*) FROM snowflake_lease)) g;
SELECT count(*) AS rows FROM snowflake_lease;
SELECT * FROM snowflake_lease_claim('server h', '56565656565656565656565656565656', '{50}', '{60}', NULL, 60000, 0);
SELECT node, generation FROM snowflake_lease_claim('server h', '56565656565656565656565656565656', '{50,100005}', '{60,100010}', NULL, 60000, 0);
-- a range whose every row is leased: no row, as ever (the bound is not
-- what keeps it)
SELECT count(*) FROM snowflake_lease_claim('server i', '78787878787878787878787878787878', '{100005}', '{100005}', NULL, 60000, 0);
SELECT count(*) AS rows FROM snowflake_lease;
DELETE FROM snowflake_lease;

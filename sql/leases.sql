-- The coordinator's lease functions, on one server: claim, renew with the
-- right and the wrong generation, expiry, release, and the horizon rules.
SET timezone = 'UTC';
\set VERBOSITY default

-- a first claim of 3-5: the lowest, generation 1, nothing issued before
SELECT node, generation, previous_horizon_ms, horizon_ms, expires_at > now() AS valid
  FROM snowflake_lease_claim('server a', '{3}', '{5}', NULL, 60000, 1000);
-- the next claimers get the next free ones; a preferred one when free
SELECT node, generation FROM snowflake_lease_claim('server b', '{3}', '{5}', NULL, 60000, 2000);
SELECT node, generation FROM snowflake_lease_claim('server c', '{3}', '{5}', 3, 60000, 3000);
-- all three held: no row
SELECT count(*) FROM snowflake_lease_claim('server d', '{3}', '{5}', NULL, 60000, 4000);
-- ranges: the lowest free value among them
SELECT node FROM snowflake_lease_claim('server d', '{3,10}', '{5,12}', NULL, 60000, 4000);

-- renewal with the right generation raises the horizon, never lowers it
SELECT renewed, holder, holder_generation, horizon_ms
  FROM snowflake_lease_renew(3, 1, 60000, 5000);
SELECT renewed, horizon_ms FROM snowflake_lease_renew(3, 1, 60000, 10);
-- with the wrong one it is refused, saying who holds the lease
SELECT renewed, holder, holder_generation, horizon_ms
  FROM snowflake_lease_renew(3, 7, 60000, 99999);
SELECT renewed, holder FROM snowflake_lease_renew(42, 1, 60000, 99999);

-- expiry: a lease of 1 ms lapses, and the next claim takes the row over
-- with the next generation, issuing at or above the horizon it finds
SELECT renewed FROM snowflake_lease_renew(4, 1, 1, 6000);
SELECT pg_sleep(0.01);
SELECT node, generation, previous_horizon_ms, horizon_ms
  FROM snowflake_lease_claim('server e', '{3}', '{5}', NULL, 60000, 100);
-- the old holder's renewal is then refused
SELECT renewed, holder, holder_generation FROM snowflake_lease_renew(4, 1, 60000, 7000);
-- a lapsed lease nobody claimed is still its holder's to renew
SELECT renewed FROM snowflake_lease_renew(10, 1, 1, 0);
SELECT pg_sleep(0.01);
SELECT renewed, expires_at > now() AS valid FROM snowflake_lease_renew(10, 1, 60000, 0);

-- release: only with the right generation; the exact end may lower the
-- horizon, never below what the previous holder issued
SELECT snowflake_lease_release(5, 9, 0);
SELECT snowflake_lease_release(5, 1, 2500);
SELECT node, horizon_ms, floor_ms, expires_at <= now() AS free FROM snowflake_lease WHERE node = 5;
SELECT snowflake_lease_release(4, 2, 10);
SELECT node, horizon_ms, floor_ms FROM snowflake_lease WHERE node = 4;
-- a released worker id is free at once, for its old holder too
SELECT node, generation, previous_horizon_ms
  FROM snowflake_lease_claim('server b', '{3}', '{5}', 5, 60000, 3000);

-- bad input
SELECT * FROM snowflake_lease_claim(NULL, '{3}', '{5}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', '{3,4}', '{5}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', '{5}', '{3}', NULL, 60000, 0);
SELECT * FROM snowflake_lease_claim('x', '{3}', '{5}', NULL, 0, 0);

-- privileges: a fleet's role needs EXECUTE only; the table is not its to write
CREATE ROLE snowflake_fleet;
SET ROLE snowflake_fleet;
SELECT count(*) FROM snowflake_lease_claim('server f', '{20}', '{20}', NULL, 60000, 0);
SELECT count(*) FROM snowflake_lease;
RESET ROLE;
GRANT EXECUTE ON FUNCTION snowflake_lease_claim(text, integer[], integer[], integer, integer, bigint),
	snowflake_lease_renew(integer, bigint, integer, bigint),
	snowflake_lease_release(integer, bigint, bigint) TO snowflake_fleet;
SET ROLE snowflake_fleet;
SELECT node, generation FROM snowflake_lease_claim('server f', '{20}', '{20}', NULL, 60000, 0);
SELECT renewed FROM snowflake_lease_renew(20, 1, 60000, 10);
SELECT snowflake_lease_release(20, 1, 10);
UPDATE snowflake_lease SET horizon_ms = 0;
RESET ROLE;
REVOKE ALL ON FUNCTION snowflake_lease_claim(text, integer[], integer[], integer, integer, bigint),
	snowflake_lease_renew(integer, bigint, integer, bigint),
	snowflake_lease_release(integer, bigint, bigint) FROM snowflake_fleet;
DROP ROLE snowflake_fleet;

-- a search_path that puts a look-alike table first changes nothing
CREATE SCHEMA evil;
CREATE TABLE evil.snowflake_lease (LIKE snowflake_lease);
SET search_path = evil, public;
SELECT node FROM public.snowflake_lease_claim('server g', '{30}', '{30}', NULL, 60000, 0);
SELECT count(*) AS evil_rows FROM evil.snowflake_lease;
RESET search_path;
DROP SCHEMA evil CASCADE;
DELETE FROM snowflake_lease;

-- Text forms of ids and public ids: round trips, refusals, order, keys.
\set VERBOSITY default

-- The unkeyed text form: 13 characters of Crockford base32
SELECT id, snowflake_to_text(id), snowflake_from_text(snowflake_to_text(id)) = id AS back
  FROM unnest(ARRAY[0, 1, 31, 32, 1023, 253918188092289024,
                    9223372036854775806, 9223372036854775807]::bigint[]) id;
-- either case; I and L read as 1, O as 0
SELECT snowflake_from_text('0000000000001'), snowflake_from_text('000000000000i'),
       snowflake_from_text('000000000000L'), snowflake_from_text('00000000000oO'),
       snowflake_from_text('70zzzzzzzzzzz') = snowflake_from_text('70ZZZZZZZZZZZ');
-- refusals, each naming the fault
SELECT snowflake_from_text('');
SELECT snowflake_from_text('000000000001');
SELECT snowflake_from_text('00000000000001');
SELECT snowflake_from_text('00000000000U1');
SELECT snowflake_from_text('000000-000001');
SELECT snowflake_from_text('00000000000é1');
SELECT snowflake_from_text('8000000000000');
SELECT snowflake_to_text(-1);
SELECT snowflake_to_text(NULL), snowflake_from_text(NULL);

-- Text order is id order under the C collation: 100,000 increasing ids,
-- small ones and ones spread over the whole range
WITH ids AS (
	SELECT g::bigint AS id FROM generate_series(0, 49999) g
	UNION ALL
	SELECT (g::numeric * 184467440000000 + (hashint4(g) & 65535))::bigint
	  FROM generate_series(1, 50000) g
), texts AS (
	SELECT id, snowflake_to_text(id) AS t,
	       row_number() OVER (ORDER BY id) AS by_id
	  FROM ids
)
SELECT count(*) AS ids, count(DISTINCT t) AS texts,
       bool_and(by_id = by_text) AS same_order
  FROM (SELECT t, by_id, row_number() OVER (ORDER BY t COLLATE "C") AS by_text FROM texts) s;

-- Public ids: none before a key exists
SELECT snowflake_public_id(1);
SELECT snowflake_id_from_public('1ABCDEFGHJKMNPQ0');
SELECT count(*) FROM snowflake_public_keys();

-- The first key takes first => true: a database without keys may be one
-- whose keys are missing
SELECT snowflake_public_key_create() AS version;
SELECT snowflake_public_key_create(first => true) AS version;
SELECT version, current, length(check_value) FROM snowflake_public_keys();
CREATE TEMP TABLE first_key AS
	SELECT id, snowflake_public_id(id) AS public_id
	  FROM unnest(ARRAY[0, 1, 2, 1023, 4194303, 253918188092289024,
	                    9223372036854775806, 9223372036854775807]::bigint[]) id;
-- 16 characters, the key version first; each decodes to its id
SELECT id, length(public_id), left(public_id, 1) AS version,
       snowflake_id_from_public(public_id) = id AS back,
       snowflake_id_from_public(lower(public_id)) = id AS back_lower,
       public_id = snowflake_public_id(id) AS same_twice
  FROM first_key;
-- they hide the id's order and its bits: neighbours share no pattern
SELECT count(DISTINCT substr(public_id, 2, 4)) AS distinct_prefixes FROM first_key;

-- refusals: length, characters, a version this server does not have
SELECT snowflake_id_from_public('1ABCDEFGHJKMNPQ');
SELECT snowflake_id_from_public('1ABCDEFGHJKMNPQRS');
SELECT snowflake_id_from_public('1ABCDEFGHJKMNPQU');
SELECT snowflake_id_from_public('1ABCDEF HJKMNPQR');
SELECT snowflake_id_from_public('5ABCDEFGHJKMNPQR');
SELECT snowflake_public_id(-5);

-- A string no key made: a real public id with one character changed
-- decrypts to a plaintext whose 12 check bits are zero 1 time in 4096, so
-- of 30 such strings none or at most one is accepted.
CREATE FUNCTION pg_temp.refused(s text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM snowflake_id_from_public(s);
	RETURN 'accepted';
EXCEPTION WHEN invalid_text_representation THEN
	RETURN regexp_replace(SQLERRM, '"[0-9A-Z]+"', '"..."');
END $$;
WITH mutated AS (
	SELECT overlay(p.public_id PLACING substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ',
	                 (strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZ', substr(p.public_id, pos, 1)) + k - 1) % 32 + 1, 1)
	               FROM pos) AS s
	  FROM first_key p, generate_series(2, 16, 5) pos, generate_series(1, 1) k
	 WHERE p.id < 9223372036854775806
)
SELECT count(*) AS strings, count(*) FILTER (WHERE pg_temp.refused(s) <> 'accepted') >= count(*) - 1 AS refused,
       min(pg_temp.refused(s)) FILTER (WHERE pg_temp.refused(s) <> 'accepted') AS message
  FROM mutated;

-- Rotation: a second key becomes current; the first one's public ids still decode
SELECT snowflake_public_key_create() AS version;
SELECT version, current FROM snowflake_public_keys() ORDER BY version;
SELECT left(snowflake_public_id(42), 1) AS new_version,
       snowflake_id_from_public(snowflake_public_id(42)) AS id;
SELECT count(*) FILTER (WHERE snowflake_id_from_public(public_id) = id) AS still_decode FROM first_key;
-- a first-key public id presented as the second key's: refused (with the
-- same 1-in-4096 chance as above, hence at most one of 8)
SELECT count(*) FILTER (WHERE pg_temp.refused('2' || substr(public_id, 2)) <> 'accepted') >= 7 AS refused
  FROM first_key;
-- the current key cannot be dropped; an absent one is not there to drop
SELECT snowflake_public_key_drop(2);
SELECT snowflake_public_key_drop(7), snowflake_public_key_drop(-1), snowflake_public_key_drop(32);
-- once dropped, its public ids are refused naming the version
SELECT snowflake_public_key_drop(1);
SELECT pg_temp.refused(public_id) FROM first_key LIMIT 1;
SELECT version, current FROM snowflake_public_keys();

-- The key table: one row per key, each key wrapped (40 bytes) under the
-- root key of test/snowflake.conf, whose check value the row keeps
SELECT version, "current", octet_length(wrapped) AS wrapped_bytes, root_check
  FROM snowflake_public_key ORDER BY version;
SELECT 'snowflake_public_key'::regclass = ANY (extconfig) AS dumped_by_pg_dump
  FROM pg_extension WHERE extname = 'snowflake';

-- ROLLBACK undoes a create, in the session that made it too
BEGIN;
SELECT snowflake_public_key_create() AS version;
SELECT left(snowflake_public_id(42), 1) AS inside;
ROLLBACK;
SELECT left(snowflake_public_id(42), 1) AS after_rollback,
       (SELECT string_agg(version::text, ',') FROM snowflake_public_keys()) AS versions;
-- and a drop
BEGIN;
SELECT snowflake_public_key_create() AS version;
SELECT snowflake_public_key_drop(2);
ROLLBACK;
SELECT snowflake_id_from_public(snowflake_public_id(42)) AS key_2_kept;

-- A wrapped key changed fails the unwrap's integrity check; so does one
-- wrapped under another root key (here a row claiming another root key's
-- check value): refused, naming which, never used
CREATE TEMP TABLE saved_key AS SELECT * FROM snowflake_public_key;
-- (a byte's bits all flipped: set to a constant, it was that already once
-- in 256 runs)
UPDATE snowflake_public_key SET wrapped = set_byte(wrapped, 8, get_byte(wrapped, 8) # 255);
SELECT snowflake_public_id(42);
UPDATE snowflake_public_key SET root_check = 'ABCDEF';
SELECT snowflake_public_id(42);
DO $$
BEGIN
	PERFORM snowflake_id_from_public('2ABCDEFGHJKMNPQR');
EXCEPTION WHEN config_file_error THEN
	RAISE NOTICE 'config_file_error (F0000)';
END $$;
UPDATE snowflake_public_key SET wrapped = s.wrapped, root_check = s.root_check FROM saved_key s
 WHERE s.version = snowflake_public_key.version;
SELECT snowflake_id_from_public(snowflake_public_id(42)) AS restored;

-- The file of 0.3.0 is not there to move, and the keys are in the table
SELECT snowflake_public_keys_move_from_file();
-- No previous root key: nothing to rewrap
SELECT snowflake_root_key_rewrap();

-- 1,000,000 distinct ids give 1,000,000 distinct public ids
SELECT count(DISTINCT snowflake_public_id(g * 4194304 + g % 4096)) AS public_ids,
       count(DISTINCT g) AS ids
  FROM generate_series(1::bigint, 1000000) g;

-- Only superusers manage keys; a GRANT does not open them
CREATE ROLE publicid_app;
SET ROLE publicid_app;
SELECT snowflake_public_key_create();
SELECT * FROM snowflake_public_keys();
SELECT snowflake_public_key_drop(2);
SELECT snowflake_id_from_public(snowflake_public_id(42)) AS app_may_encode;
SELECT snowflake_root_key_check();
SELECT snowflake_public_keys_move_from_file();
SELECT snowflake_root_key_rewrap();
SELECT count(*) FROM snowflake_public_key;
RESET ROLE;
-- pg_monitor reads no key row either
CREATE ROLE publicid_monitor IN ROLE pg_monitor;
SET ROLE publicid_monitor;
SELECT count(*) FROM snowflake_public_key;
SELECT * FROM snowflake_public_keys();
RESET ROLE;
DROP ROLE publicid_monitor;
GRANT EXECUTE ON FUNCTION snowflake_public_key_create(boolean), snowflake_public_key_drop(integer) TO publicid_app;
SET ROLE publicid_app;
SELECT snowflake_public_key_create();
SELECT snowflake_public_key_drop(2);
RESET ROLE;
REVOKE EXECUTE ON FUNCTION snowflake_public_key_create(boolean), snowflake_public_key_drop(integer) FROM publicid_app;
DROP ROLE publicid_app;

-- Volatility as declared
SELECT proname, provolatile, proisstrict, proparallel
  FROM pg_proc
 WHERE proname IN ('snowflake_to_text', 'snowflake_from_text', 'snowflake_public_id',
                   'snowflake_id_from_public', 'snowflake_public_key_create',
                   'snowflake_public_key_drop', 'snowflake_public_keys',
                   'snowflake_root_key_check', 'snowflake_public_keys_move_from_file',
                   'snowflake_root_key_rewrap')
 ORDER BY proname;

-- The root key of test/snowflake.conf (000102...1f): its check value is
-- AES-256 of a zero block under it (F29000..., from openssl enc
-- -aes-256-ecb); the command is run at start only
SELECT snowflake_root_key_check();
SELECT setting <> '' AS command_set, context
  FROM pg_settings WHERE name = 'snowflake.root_key_command';


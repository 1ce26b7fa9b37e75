-- ---------------------------------------------------------------------------
-- Text forms of ids and public ids (0.3.0).  None of these needs the
-- library preloaded: they read no shared memory.

-- 13 characters of Crockford base32, in id order under the C collation.
-- IMMUTABLE: the text depends on the id alone.  Anyone may call them.
CREATE FUNCTION snowflake_to_text(id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_to_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_to_text(bigint) IS
'an id as 13 characters of Crockford base32, in id order (unkeyed: it hides nothing)';

CREATE FUNCTION snowflake_from_text(text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_from_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_from_text(text) IS
'the id of 13 characters of Crockford base32 (either case; I and L read as 1, O as 0)';

-- Public ids: FF1 (NIST SP 800-38G) with AES-256 under the current key of
-- the key table (or of 0.3.0's key file, until it is moved).  STABLE, not
-- IMMUTABLE: the result changes when a key is created or dropped, so it
-- must not be folded into plans or indexes.  PARALLEL SAFE: a worker reads
-- the same table, and holds its lock in the leader's lock group.  Anyone may call them: they encrypt and
-- decrypt, never show a key (REVOKE EXECUTE ... FROM PUBLIC where roles
-- that may read a table's ids should not decode public ids).
CREATE FUNCTION snowflake_public_id(id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_public_id'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_public_id(bigint) IS
'the public id of an id: 16 characters, its key version then FF1-AES-256 of the id';

CREATE FUNCTION snowflake_id_from_public(public_id text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'snowflake_id_from_public'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_id_from_public(text) IS
'the id of a public id, with the key of the version it names; refuses a string no key made';

-- Key management: superusers only (checked in C as well, so a GRANT does
-- not open it).  VOLATILE and PARALLEL UNSAFE: they write the key table
-- (0.3.0's file while the extension's objects are 0.3.0's).  Not STRICT:
-- a NULL first is false.  The first key of an application takes
-- first => true (0.4.0): a database without keys may be one whose keys are
-- missing, where a new key would give a version its application already
-- used other bits.
CREATE FUNCTION snowflake_public_key_create(first boolean DEFAULT false)
RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_public_key_create'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_public_key_create(boolean) IS
'create a key of 256 random bits; it becomes the current key, and its version is returned (first => true for an application''s first key)';

CREATE FUNCTION snowflake_public_key_drop(version integer)
RETURNS boolean
AS 'MODULE_PATHNAME', 'snowflake_public_key_drop'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_public_key_drop(integer) IS
'drop a key version that is not the current one; its public ids no longer decode';

-- The keys without their bits.  Revoked from PUBLIC, grantable (to a
-- monitoring role, say): the check value is 3 bytes of AES of a zero block,
-- which tells whether two servers hold the same key and nothing of it.
CREATE FUNCTION snowflake_public_keys(
	OUT version integer,
	OUT created timestamptz,
	OUT current boolean,
	OUT check_value text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'snowflake_public_keys'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_public_keys() IS
'the public id keys: version, creation, whether current, and a check value to compare servers';

REVOKE ALL ON FUNCTION snowflake_public_key_create(boolean), snowflake_public_key_drop(integer),
	snowflake_public_keys() FROM PUBLIC;

-- The keys of public ids (0.4.0): one row per version, the key wrapped
-- under the root key (AES key wrap with padding, NIST SP 800-38F, from
-- snowflake.root_key_command) with the check value of that root key, so a
-- wrong root key is named as such.  A table, so that WAL carries the keys
-- to standbys and through PITR, pg_dump carries the rows (a configuration
-- table of the extension) and pg_upgrade the table; none of them holds
-- the root key.  Written only by the key functions below (C, superusers
-- only), in the caller's transaction.  Readable by no role but its owner
-- (superusers, and members of pg_read_all_data, read every table: the
-- rows are useless without the root key).
CREATE TABLE snowflake_public_key (
	version integer PRIMARY KEY
		CHECK (version OPERATOR(pg_catalog.>=) 0 AND version OPERATOR(pg_catalog.<=) 31),
	created timestamptz NOT NULL,
	"current" boolean NOT NULL,
	wrapped bytea NOT NULL CHECK (pg_catalog.octet_length(wrapped) OPERATOR(pg_catalog.=) 40),
	root_check text NOT NULL
);

-- one current key
CREATE UNIQUE INDEX snowflake_public_key_current ON snowflake_public_key ("current")
	WHERE "current";

-- Any change of the rows, by the key functions or not (a restore's COPY,
-- a superuser's UPDATE), makes every backend read the table again once it
-- commits, standbys included (the commit record carries the
-- invalidation).  Internal: a trigger function, not PUBLIC's.
CREATE FUNCTION _snowflake_public_key_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'snowflake_public_key_changed'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION _snowflake_public_key_changed() FROM PUBLIC;

CREATE TRIGGER snowflake_public_key_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON snowflake_public_key
	FOR EACH STATEMENT EXECUTE FUNCTION _snowflake_public_key_changed();

SELECT pg_catalog.pg_extension_config_dump('snowflake_public_key', '');

REVOKE ALL ON snowflake_public_key FROM PUBLIC;

-- The move of 0.3.0's key file into the table: the same keys, versions
-- and current key, in the caller's transaction; the file is not read once
-- it commits.  Superusers only (checked in C as well).  VOLATILE, PARALLEL
-- UNSAFE: it writes.
CREATE FUNCTION snowflake_public_keys_move_from_file()
RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_public_keys_move_from_file'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_public_keys_move_from_file() IS
'move the keys of the 0.3.0 key file snowflake.publickeys into the table, wrapped under the root key';

REVOKE ALL ON FUNCTION snowflake_public_keys_move_from_file() FROM PUBLIC;

-- Root rotation (0.4.0): every key wrapped under the previous root key
-- (snowflake.previous_root_key_command) wrapped again under the root key,
-- in the caller's transaction; no public id changes.  Superusers only
-- (checked in C as well).  VOLATILE, PARALLEL UNSAFE: it writes.
CREATE FUNCTION snowflake_root_key_rewrap()
RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_root_key_rewrap'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_root_key_rewrap() IS
'wrap the keys wrapped under the previous root key under the root key; returns how many';

REVOKE ALL ON FUNCTION snowflake_root_key_rewrap() FROM PUBLIC;

-- The root key's check value (0.4.0): 3 bytes of AES of a zero block
-- under it, to see that every server of an application holds the same
-- root key.  STABLE: the root key changes only with a restart.  PARALLEL
-- SAFE: workers inherit the key as backends do.  Revoked from PUBLIC,
-- grantable, as snowflake_public_keys().
CREATE FUNCTION snowflake_root_key_check()
RETURNS text
AS 'MODULE_PATHNAME', 'snowflake_root_key_check'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION snowflake_root_key_check() IS
'the check value of this server''s root key (from snowflake.root_key_command), to compare servers';

REVOKE ALL ON FUNCTION snowflake_root_key_check() FROM PUBLIC;

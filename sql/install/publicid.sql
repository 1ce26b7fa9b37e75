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
-- the key file in the data directory.  STABLE, not IMMUTABLE: the result
-- changes when a key is created or dropped, so it must not be folded into
-- plans or indexes (a backend reads the file at most once a second, and
-- at once on a version it lacks).  PARALLEL SAFE:
-- a worker reads the same file.  Anyone may call them: they encrypt and
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
-- not open it).  VOLATILE and PARALLEL UNSAFE: they write the key file,
-- at once (ROLLBACK does not undo it).
CREATE FUNCTION snowflake_public_key_create()
RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_public_key_create'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_public_key_create() IS
'create a key of 256 random bits; it becomes the current key, and its version is returned';

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

REVOKE ALL ON FUNCTION snowflake_public_key_create(), snowflake_public_key_drop(integer),
	snowflake_public_keys() FROM PUBLIC;

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

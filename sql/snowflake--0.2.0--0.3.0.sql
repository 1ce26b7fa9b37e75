-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '0.3.0'" to load this file. \quit

-- From 0.2.0 to 0.3.0: each change below repeats one of
-- snowflake--0.3.0.sql, where the comments explain it; the regress test
-- "upgrade" checks that an updated extension equals a fresh one.

-- Leases belong to their holders: the claim takes a secret token, renewals
-- and releases take it again, and the table keeps its hash and the role
-- that claimed it.  Existing rows keep their horizons; they have no token,
-- so no one renews them again: they expire, and the next claim of their
-- worker id issues above their horizon.  The 0.2.0 functions, which
-- trusted a generation that anyone could learn, are dropped (with the
-- grants on them: grant EXECUTE on the new ones).
ALTER TABLE snowflake_lease ADD COLUMN claimed_by name, ADD COLUMN token_hash bytea UNIQUE;
REVOKE SELECT ON snowflake_lease FROM pg_monitor;
GRANT SELECT (node, generation, holder, expires_at, horizon_ms, floor_ms, claimed_at,
			  renewed_at, released_at, claimed_by) ON snowflake_lease TO pg_monitor;
DROP FUNCTION snowflake_lease_claim(text, integer[], integer[], integer, integer, bigint);
DROP FUNCTION snowflake_lease_renew(integer, bigint, integer, bigint);
DROP FUNCTION snowflake_lease_release(integer, bigint, bigint);

-- The checks every lease call makes of its arguments, and the hash of the
-- holder's secret, which is all the table keeps of it.  Internal to the
-- three functions below.  The bounds: a TTL within those of
-- snowflake.lease_ttl_ms (500 ms to 10 min); a horizon no further than the
-- TTL plus 5 minutes past this server's clock.  A holder asks for its own
-- clock plus the TTL plus snowflake.mark_interval_ms (at most 1 min), or,
-- for borrowed ticks, at most snowflake.max_borrow_ms (1 min) ahead; that
-- leaves 3 minutes for the clocks of a holder and of the coordinator to
-- disagree, and no caller can fence a worker id off for longer than the
-- bound.  NULL ttl_ms and horizon_ms are not checked (a release has
-- neither).  STABLE (it reads the clock), PARALLEL SAFE, and not STRICT: a
-- NULL token is an error.
CREATE FUNCTION _snowflake_lease_check(token text, ttl_ms integer, horizon_ms bigint)
RETURNS bytea
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	now_ms bigint := (extract(epoch FROM statement_timestamp()) * 1000)::bigint;
BEGIN
	IF token IS NULL OR token !~ '^[0-9a-f]{32}$' THEN
		RAISE EXCEPTION 'invalid lease token'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A lease token is 32 lower-case hexadecimal digits, drawn at random by the lease client.';
	END IF;
	IF ttl_ms NOT BETWEEN 500 AND 600000 THEN
		RAISE EXCEPTION 'time to live % ms is out of range', ttl_ms
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A lease lasts from 500 ms to 600000 ms, as "snowflake.lease_ttl_ms" allows.';
	END IF;
	IF horizon_ms < 0 OR horizon_ms > now_ms + ttl_ms + 300000 THEN
		RAISE EXCEPTION 'horizon % is out of range', horizon_ms
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('A horizon lies from 0 to the time to live plus 300000 ms past the coordinator''s clock, %s.', now_ms),
				  HINT = 'Check that the clocks of the issuing server and of the coordinator agree.';
	END IF;
	RETURN sha256(decode(token, 'hex'));
END
$$;

COMMENT ON FUNCTION _snowflake_lease_check(text, integer, bigint) IS
'internal to the lease functions: checks their arguments, returns the hash of the token';

-- The functions are SECURITY DEFINER, so that an issuing server's role needs
-- only EXECUTE on them, not write access to the table; with a fixed
-- search_path, and the table found through the extension's schema (the
-- extension is relocatable), so a caller's search_path cannot hijack them.
-- VOLATILE (they write), PARALLEL UNSAFE (they write), not STRICT where a
-- NULL has a meaning (prefer).
CREATE FUNCTION snowflake_lease_claim(
	holder text,
	token text,
	lows integer[],
	highs integer[],
	prefer integer,
	ttl_ms integer,
	wanted_horizon_ms bigint,
	OUT node integer,
	OUT generation bigint,
	OUT previous_horizon_ms bigint,
	OUT horizon_ms bigint,
	OUT expires_at timestamptz)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER ROWS 1
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	-- the extension's schema, wherever it is now, and the table in it
	ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				  WHERE e.extname = 'snowflake');
	tbl regclass := format('%I.snowflake_lease', ext)::regclass;
	hash bytea;
	candidate integer;
	stored record;
	wanted bigint := wanted_horizon_ms;
BEGIN
	IF holder IS NULL OR token IS NULL OR lows IS NULL OR highs IS NULL OR ttl_ms IS NULL OR wanted IS NULL THEN
		RAISE EXCEPTION 'only prefer may be NULL'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF length(holder) > 1024 THEN
		RAISE EXCEPTION 'holder name is too long'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A holder names its server in at most 1024 characters.';
	END IF;
	IF cardinality(lows) <> cardinality(highs) OR cardinality(lows) NOT BETWEEN 1 AND 1024 OR
	   EXISTS (SELECT FROM unnest(lows, highs) r(lo, hi)
			    WHERE lo IS NULL OR hi IS NULL OR lo < 0 OR lo > hi) THEN
		RAISE EXCEPTION 'invalid range of worker ids'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'lows and highs are the ends of 1 to 1024 ranges, as many of each, each low from 0 to its high.';
	END IF;
	EXECUTE format('SELECT %I._snowflake_lease_check($1, $2, $3)', ext)
		INTO hash USING token, ttl_ms, wanted;

	-- The same holder again with the same secret: a claim of its that
	-- committed but whose answer never reached it (a timeout, a
	-- coordinator frozen and woken), or its own lease that lapsed on its
	-- side while a late renewal kept it alive here.  It gets it back,
	-- renewed, with the horizon the holder before it left, rather than
	-- being locked out of its worker id for a TTL: it issued nothing under
	-- the first, and keeps above what it issued under the second by its
	-- own high-water mark of the worker id.
	EXECUTE format($q$
		UPDATE %s
		   SET expires_at = now() + $2 * interval '1 ms',
		       horizon_ms = greatest(horizon_ms, $3), renewed_at = now()
		 WHERE token_hash = $1 AND claimed_by = session_user AND released_at IS NULL
		RETURNING node, generation, floor_ms, horizon_ms, expires_at
		$q$, tbl)
		INTO node, generation, previous_horizon_ms, horizon_ms, expires_at
		USING hash, ttl_ms, wanted;
	IF node IS NOT NULL THEN
		RETURN NEXT;
		RETURN;
	END IF;

	LOOP
		-- the preferred worker id if it is free (a restart takes its own
		-- back), else the lowest free one: a released or expired row, or a
		-- value without a row
		EXECUTE format($q$
			SELECT min(v) FROM (
				SELECT l.node AS v FROM %1$s l
				 WHERE l.node = $3 AND l.expires_at <= now()
				UNION ALL
				SELECT $3 WHERE NOT EXISTS (SELECT FROM %1$s WHERE node = $3)
			) p
			 WHERE v IS NOT NULL
			   AND EXISTS (SELECT FROM unnest($1, $2) r(lo, hi) WHERE v BETWEEN lo AND hi)
			$q$, tbl)
			INTO candidate USING lows, highs, prefer;
		IF candidate IS NULL THEN
			EXECUTE format($q$
				SELECT min(v) FROM (
					SELECT l.node AS v
					  FROM %1$s l, unnest($1, $2) r(lo, hi)
					 WHERE l.node BETWEEN lo AND hi AND l.expires_at <= now()
					UNION ALL
					SELECT lo FROM unnest($1, $2) r(lo, hi)
					 WHERE NOT EXISTS (SELECT FROM %1$s WHERE node = lo)
					UNION ALL
					SELECT l.node + 1
					  FROM %1$s l, unnest($1, $2) r(lo, hi)
					 WHERE l.node >= lo AND l.node < hi
					   AND NOT EXISTS (SELECT FROM %1$s m WHERE m.node = l.node + 1)
				) c
				$q$, tbl)
				INTO candidate USING lows, highs;
		END IF;
		IF candidate IS NULL THEN
			RETURN;				-- every worker id of the ranges is leased
		END IF;

		-- take it under its row lock; another claimer may be quicker.
		-- (A released lease of this secret gives the secret up first: the
		-- secret holds one lease at a time.)
		EXECUTE format('UPDATE %s SET token_hash = NULL WHERE token_hash = $1 AND released_at IS NOT NULL', tbl)
			USING hash;
		EXECUTE format('SELECT horizon_ms, expires_at FROM %s WHERE node = $1 FOR UPDATE', tbl)
			INTO stored USING candidate;
		IF stored IS NULL THEN
			EXECUTE format($q$
				INSERT INTO %s (node, generation, holder, expires_at, horizon_ms, floor_ms, claimed_at,
								claimed_by, token_hash)
				VALUES ($1, 1, $2, now() + $3 * interval '1 ms', $4, 0, now(), session_user, $5)
				ON CONFLICT (node) DO NOTHING
				RETURNING node, generation, 0::bigint, horizon_ms, expires_at
				$q$, tbl)
				INTO node, generation, previous_horizon_ms, horizon_ms, expires_at
				USING candidate, holder, ttl_ms, wanted, hash;
		ELSIF stored.expires_at <= now() THEN
			EXECUTE format($q$
				UPDATE %s
				   SET generation = generation + 1, holder = $2,
				       expires_at = now() + $3 * interval '1 ms',
				       floor_ms = horizon_ms, horizon_ms = greatest(horizon_ms, $4),
				       claimed_at = now(), renewed_at = NULL, released_at = NULL,
				       claimed_by = session_user, token_hash = $5
				 WHERE node = $1
				RETURNING node, generation, floor_ms, horizon_ms, expires_at
				$q$, tbl)
				INTO node, generation, previous_horizon_ms, horizon_ms, expires_at
				USING candidate, holder, ttl_ms, wanted, hash;
		ELSE
			node := NULL;		-- taken meanwhile: look again
		END IF;
		IF node IS NOT NULL THEN
			RETURN NEXT;
			RETURN;
		END IF;
	END LOOP;
END
$$;

COMMENT ON FUNCTION snowflake_lease_claim(text, text, integer[], integer[], integer, integer, bigint) IS
'claim a free worker id among the ranges, held by the secret token: prefer it if free, else the lowest free; no row if none is';

CREATE FUNCTION snowflake_lease_renew(
	node integer,
	token text,
	ttl_ms integer,
	wanted_horizon_ms bigint,
	OUT renewed boolean,
	OUT horizon_ms bigint,
	OUT expires_at timestamptz)
RETURNS record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	-- the extension's schema, wherever it is now, and the table in it
	ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				  WHERE e.extname = 'snowflake');
	tbl regclass := format('%I.snowflake_lease', ext)::regclass;
	hash bytea;
BEGIN
	IF $1 IS NULL OR token IS NULL OR ttl_ms IS NULL OR wanted_horizon_ms IS NULL THEN
		RAISE EXCEPTION 'no argument may be NULL'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	EXECUTE format('SELECT %I._snowflake_lease_check($1, $2, $3)', ext)
		INTO hash USING token, ttl_ms, wanted_horizon_ms;
	-- only the holder's secret and role renew it, lapsed or not (a lapsed
	-- lease nobody claimed is still its holder's); anyone else learns
	-- nothing, not even whether the row exists
	EXECUTE format($q$
		UPDATE %s
		   SET expires_at = now() + $3 * interval '1 ms',
		       horizon_ms = greatest(horizon_ms, $4), renewed_at = now()
		 WHERE node = $1 AND token_hash = $2 AND claimed_by = session_user AND released_at IS NULL
		RETURNING true, horizon_ms, expires_at
		$q$, tbl)
		INTO renewed, horizon_ms, expires_at
		USING $1, hash, ttl_ms, wanted_horizon_ms;
	renewed := coalesce(renewed, false);
END
$$;

COMMENT ON FUNCTION snowflake_lease_renew(integer, text, integer, bigint) IS
'renew the lease held by this secret token, recording a horizon at least that far; renewed is false otherwise';

CREATE FUNCTION snowflake_lease_release(node integer, token text, end_ms bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	-- the extension's schema, wherever it is now, and the table in it
	ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				  WHERE e.extname = 'snowflake');
	tbl regclass := format('%I.snowflake_lease', ext)::regclass;
	hash bytea;
	released boolean;
BEGIN
	IF $1 IS NULL OR token IS NULL OR end_ms IS NULL OR end_ms < 0 THEN
		RAISE EXCEPTION 'invalid release'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A release names a worker id, its token and the end of its ids, from 0.';
	END IF;
	EXECUTE format('SELECT %I._snowflake_lease_check($1, NULL, NULL)', ext)
		INTO hash USING token;
	-- the holder's ids all lie below end_ms: their exact end may lower the
	-- horizon, never below what an earlier holder issued, and never raise it
	EXECUTE format($q$
		UPDATE %s
		   SET expires_at = now(), released_at = now(),
		       horizon_ms = greatest(floor_ms, least(horizon_ms, $3))
		 WHERE node = $1 AND token_hash = $2 AND claimed_by = session_user AND released_at IS NULL
		RETURNING true
		$q$, tbl)
		INTO released USING $1, hash, end_ms;
	RETURN coalesce(released, false);
END
$$;

COMMENT ON FUNCTION snowflake_lease_release(integer, text, bigint) IS
'release the lease held by this secret token, with the exact end of its ids; false otherwise';

-- Issuing servers connect with a role granted EXECUTE on these three:
--   GRANT EXECUTE ON FUNCTION snowflake_lease_claim(text, text, integer[], integer[], integer, integer, bigint),
--     snowflake_lease_renew(integer, text, integer, bigint),
--     snowflake_lease_release(integer, text, bigint) TO snowflake_fleet;
REVOKE ALL ON FUNCTION _snowflake_lease_check(text, integer, bigint),
	snowflake_lease_claim(text, text, integer[], integer[], integer, integer, bigint),
	snowflake_lease_renew(integer, text, integer, bigint),
	snowflake_lease_release(integer, text, bigint) FROM PUBLIC;

-- snowflake_convert_column() converts temporary tables with identity
-- columns: the sequence it creates for an identity is created in pg_temp.
-- The definition is that of snowflake--0.3.0.sql.
CREATE OR REPLACE FUNCTION _snowflake_convert_statements(
	tbl regclass,
	col name,
	drop_sequence boolean,
	rels oid[],
	atts name[],
	identity_rels oid[],
	identity_seqs oid[],
	owned_seqs oid[],
	drop_seqs oid[],
	set_default boolean,
	detach_rels oid[],
	nextval_call text)
RETURNS SETOF text
LANGUAGE plpgsql
VOLATILE PARALLEL SAFE SECURITY INVOKER
ROWS 10
SET search_path = pg_catalog, pg_temp
AS $statements$
DECLARE
	v_r record;
	v_c record;
	v_children regclass[] := '{}';	-- the tables detached, in that order,
	v_parents regclass[] := '{}';	-- ... and their parents
	v_i integer;
	v_last bigint;
	v_called boolean;
BEGIN
	FOR v_r IN
		SELECT a.attrelid::regclass AS rel
		  FROM pg_attribute a
		 WHERE a.attrelid = ANY (identity_rels) AND a.attname = col
		 ORDER BY a.attrelid = tbl DESC, a.attrelid::regclass::text
	LOOP
		RETURN NEXT format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', v_r.rel, col);
	END LOOP;

	FOR v_r IN
		SELECT c::regclass AS child, i.inhparent::regclass AS parent
		  FROM unnest(detach_rels) AS c
		  JOIN pg_inherits i ON i.inhrelid = c
		 ORDER BY c::regclass::text
	LOOP
		v_children := v_children || v_r.child;
		v_parents := v_parents || v_r.parent;
		RETURN NEXT format('ALTER TABLE %s NO INHERIT %s', v_r.child, v_r.parent);
	END LOOP;

	FOR v_r IN
		SELECT rels[k.n] AS relid,
			   string_agg(format('ALTER COLUMN %I TYPE bigint', atts[k.n]), ', ' ORDER BY k.n) AS cols
		  FROM generate_subscripts(rels, 1) AS k(n)
		  JOIN pg_attribute a ON a.attrelid = rels[k.n] AND a.attname = atts[k.n]
		 WHERE a.atttypid <> 'int8'::regtype
		 GROUP BY rels[k.n]
		 ORDER BY min(k.n)
	LOOP
		RETURN NEXT format('ALTER TABLE %s %s', v_r.relid::regclass, v_r.cols);
		FOR v_c IN
			WITH RECURSIVE tree(relid) AS (
				SELECT v_r.relid
				UNION
				SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.relid
			)
			SELECT t.relid::regclass AS rel
			  FROM tree t
			 WHERE t.relid = ANY (detach_rels)
			 ORDER BY t.relid::regclass::text
		LOOP
			RETURN NEXT format('ALTER TABLE %s %s', v_c.rel, v_r.cols);
		END LOOP;
	END LOOP;

	FOR v_i IN REVERSE cardinality(v_children) .. 1 LOOP
		RETURN NEXT format('ALTER TABLE %s INHERIT %s', v_children[v_i], v_parents[v_i]);
	END LOOP;

	IF set_default OR cardinality(identity_rels) > 0 THEN
		RETURN NEXT format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', tbl, col, nextval_call);
	END IF;

	FOR v_r IN
		SELECT s::regclass AS seq FROM unnest(owned_seqs) AS s
		 WHERE s <> ALL (drop_seqs)
		 ORDER BY s::regclass::text
	LOOP
		RETURN NEXT format('ALTER SEQUENCE %s OWNED BY NONE', v_r.seq);
	END LOOP;
	FOR v_r IN
		SELECT s::regclass AS seq FROM unnest(drop_seqs) AS s ORDER BY s::regclass::text
	LOOP
		RETURN NEXT format('DROP SEQUENCE %s', v_r.seq);
	END LOOP;
	IF NOT drop_sequence THEN
		FOR v_r IN
			-- (a temporary sequence is created in pg_temp: search_path,
			-- pinned to pg_catalog first, would put it there)
			SELECT CASE WHEN c.relpersistence = 't' THEN format('pg_temp.%I', c.relname)
						ELSE s.seqrelid::regclass::text END AS name,
				   s.*, c.relowner
			  FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
			 WHERE s.seqrelid = ANY (identity_seqs)
			 ORDER BY 1
		LOOP
			RETURN NEXT format(
				'CREATE SEQUENCE %s AS %s INCREMENT BY %s MINVALUE %s MAXVALUE %s START WITH %s CACHE %s%s',
				v_r.name, format_type(v_r.seqtypid, NULL), v_r.seqincrement, v_r.seqmin,
				v_r.seqmax, v_r.seqstart, v_r.seqcache,
				CASE WHEN v_r.seqcycle THEN ' CYCLE' ELSE ' NO CYCLE' END);
			-- (read under the table's lock: no insert can move it any more)
			EXECUTE format('SELECT last_value, is_called FROM %s', v_r.name) INTO v_last, v_called;
			IF v_called THEN
				RETURN NEXT format('SELECT pg_catalog.setval(%L, %s, true)', v_r.name, v_last);
			END IF;
			IF v_r.relowner <> (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user) THEN
				-- (regrole prints a quoted name where one is needed)
				RETURN NEXT format('ALTER SEQUENCE %s OWNER TO %s', v_r.name, v_r.relowner::regrole);
			END IF;
		END LOOP;
	END IF;
END;
$statements$;

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

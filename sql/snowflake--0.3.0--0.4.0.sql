-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '0.4.0'" to load this file. \quit

-- From 0.3.0 to 0.4.0: each change below repeats one of
-- snowflake--0.4.0.sql (assembled from sql/install/), where the comments
-- explain it; the regress test "upgrade" checks that an updated extension
-- equals a fresh one.

-- == Leases ==

-- The chain of secrets: each claim and renewal proves a secret and
-- registers the hash of the next one (0.4.0's calls, taking proofs and a
-- next hash); 0.3.0's three calls kept for servers not updated yet, on the
-- same code; a release keeps no hash and lowers no horizon below the
-- coordinator's clock; the table bounded at 65536 rows; every call of the
-- extension's own functions with each argument cast to its parameter's
-- type.

-- The bounds every claim and renewal checks: a TTL within those of
-- snowflake.lease_ttl_ms (500 ms to 10 min); a horizon no further than the
-- TTL plus 5 minutes past this server's clock.  A holder asks for its own
-- clock plus the TTL plus snowflake.mark_interval_ms (at most 1 min), or,
-- for borrowed ticks, the tick (at most snowflake.max_borrow_ms, 1 min,
-- ahead) plus a mark interval; that
-- leaves 3 minutes for the clocks of a holder and of the coordinator to
-- disagree, and no caller can fence a worker id off for longer than the
-- bound.  NULLs are not checked (a release has neither).  STABLE (it reads
-- the clock), PARALLEL SAFE.
CREATE FUNCTION _snowflake_lease_bounds(ttl_ms integer, horizon_ms bigint)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	now_ms bigint := (extract(epoch FROM statement_timestamp()) * 1000)::bigint;
BEGIN
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
END
$$;

COMMENT ON FUNCTION _snowflake_lease_bounds(integer, bigint) IS
'internal to the lease functions: checks a time to live and a horizon';

-- The proofs of a call (the secrets it offers, none for a first claim)
-- and the hash of the next secret it registers: returns the hashes of the
-- proofs, which is all the table keeps of a secret.  A next hash is 32
-- bytes (SHA-256); NULL is a release's.  Not STRICT: NULL proofs are an
-- error.  IMMUTABLE would be true, but it raises errors of its arguments
-- only; STABLE like its neighbours.
CREATE FUNCTION _snowflake_lease_proofs(proofs text[], next_hash bytea)
RETURNS bytea[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF proofs IS NULL OR cardinality(proofs) > 8 OR array_ndims(proofs) > 1 OR
	   EXISTS (SELECT FROM unnest(proofs) p WHERE p IS NULL OR p !~ '^[0-9a-f]{32}$') THEN
		RAISE EXCEPTION 'invalid lease proofs'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A call offers up to 8 secrets, each 32 lower-case hexadecimal digits drawn at random by the lease client.';
	END IF;
	IF length(next_hash) <> 32 THEN
		RAISE EXCEPTION 'invalid next hash'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'The hash of the next secret is its SHA-256, 32 bytes.';
	END IF;
	RETURN ARRAY(SELECT sha256(decode(p, 'hex')) FROM unnest(proofs) p);
END
$$;

COMMENT ON FUNCTION _snowflake_lease_proofs(text[], bytea) IS
'internal to the lease functions: checks the secrets a call offers, returns their hashes';

-- 0.3.0's check of a call's one secret, TTL and horizon; returns the
-- secret's hash.
CREATE OR REPLACE FUNCTION _snowflake_lease_check(token text, ttl_ms integer, horizon_ms bigint)
RETURNS bytea
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				  WHERE e.extname = 'snowflake');
BEGIN
	IF token IS NULL OR token !~ '^[0-9a-f]{32}$' THEN
		RAISE EXCEPTION 'invalid lease token'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A lease token is 32 lower-case hexadecimal digits, drawn at random by the lease client.';
	END IF;
	EXECUTE format('SELECT %I._snowflake_lease_bounds($1::pg_catalog.int4, $2::pg_catalog.int8)', ext)
		USING ttl_ms, horizon_ms;
	RETURN sha256(decode(token, 'hex'));
END
$$;

COMMENT ON FUNCTION _snowflake_lease_check(text, integer, bigint) IS
'internal to 0.3.0''s lease functions: checks their arguments, returns the hash of the token';

-- What a claim does, once its secrets are hashed (hashes: those of the
-- proofs; next_hash: what the row keeps).  Internal: run by the SECURITY
-- DEFINER claims below, as the extension's owner; session_user is still
-- the caller's login.
CREATE FUNCTION _snowflake_lease_take(
	holder text,
	hashes bytea[],
	next_hash bytea,
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
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE ROWS 1
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	-- the extension's schema, wherever it is now, and the table in it
	ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				  WHERE e.extname = 'snowflake');
	tbl regclass := format('%I.snowflake_lease', ext)::regclass;
	candidate integer;
	stored record;
	wanted bigint := wanted_horizon_ms;
	room boolean;
	busy integer[] := '{}';		-- candidates another claim holds locked
	rows_busy boolean := false;	-- every free row is another claim's
	locked boolean;
BEGIN
	IF holder IS NULL OR hashes IS NULL OR next_hash IS NULL OR lows IS NULL OR highs IS NULL OR
	   ttl_ms IS NULL OR wanted IS NULL THEN
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
	EXECUTE format('SELECT %I._snowflake_lease_bounds($1::pg_catalog.int4, $2::pg_catalog.int8)', ext)
		USING ttl_ms, wanted;

	-- The same holder again with a secret of its lease: a claim of its
	-- that committed but whose answer never reached it (a timeout, a
	-- coordinator frozen and woken), or its own lease that lapsed on its
	-- side while a late renewal kept it alive here.  It gets it back,
	-- renewed, with the horizon the holder before it left, rather than
	-- being locked out of its worker id for a TTL: it issued nothing under
	-- the first, and keeps above what it issued under the second by its
	-- own high-water mark of the worker id.  Not a row another
	-- transaction holds locked (a long one's, or a call of the holder's
	-- that it gave up on and that has not ended yet): rather than wait past
	-- its lock_timeout at every try, the holder claims another worker id
	-- below, and its lease here lapses.
	EXECUTE format($q$
		UPDATE %1$s
		   SET expires_at = now() + $3 * interval '1 ms',
		       horizon_ms = greatest(horizon_ms, $4), renewed_at = now(), token_hash = $2
		 WHERE node = (SELECT l.node FROM %1$s l
						WHERE l.token_hash = ANY ($1) AND l.claimed_by = session_user
						  AND l.released_at IS NULL
						ORDER BY l.node LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING node, generation, floor_ms, horizon_ms, expires_at
		$q$, tbl)
		INTO node, generation, previous_horizon_ms, horizon_ms, expires_at
		USING hashes, next_hash, ttl_ms, wanted;
	IF node IS NOT NULL THEN
		RETURN NEXT;
		RETURN;
	END IF;

	LOOP
		-- A new row only while the table has fewer than 65536 (64 times the
		-- worker ids of the default layout): rows are never deleted (an
		-- expired row keeps the horizon that fences its worker id), so
		-- without a bound any role that may claim could grow the table
		-- without end, a worker id at a time.  A fleet needs a row per
		-- worker id it ever uses; released and expired rows are taken again.
		EXECUTE format('SELECT count(*) < 65536 FROM %s', tbl) INTO room;
		-- the preferred worker id if it is free (a restart takes its own
		-- back), else the lowest free one: a released or expired row, or a
		-- value without a row; none that another claim holds locked
		EXECUTE format($q$
			SELECT min(v) FROM (
				SELECT l.node AS v FROM %1$s l
				 WHERE l.node = $3 AND l.expires_at <= now() AND NOT $6
				UNION ALL
				SELECT $3 WHERE $4 AND NOT EXISTS (SELECT FROM %1$s WHERE node = $3)
			) p
			 WHERE v IS NOT NULL AND v <> ALL ($5)
			   AND EXISTS (SELECT FROM unnest($1, $2) r(lo, hi) WHERE v BETWEEN lo AND hi)
			$q$, tbl)
			INTO candidate USING lows, highs, prefer, room, busy, rows_busy;
		IF candidate IS NULL THEN
			EXECUTE format($q$
				SELECT min(v) FROM (
					SELECT l.node AS v
					  FROM %1$s l, unnest($1, $2) r(lo, hi)
					 WHERE l.node BETWEEN lo AND hi AND l.expires_at <= now() AND NOT $5
					UNION ALL
					SELECT lo FROM unnest($1, $2) r(lo, hi)
					 WHERE $3 AND NOT EXISTS (SELECT FROM %1$s WHERE node = lo)
					UNION ALL
					SELECT l.node + 1
					  FROM %1$s l, unnest($1, $2) r(lo, hi)
					 WHERE $3 AND l.node >= lo AND l.node < hi
					   AND NOT EXISTS (SELECT FROM %1$s m WHERE m.node = l.node + 1)
				) c
				 WHERE v <> ALL ($4)
				$q$, tbl)
				INTO candidate USING lows, highs, room, busy, rows_busy;
		END IF;
		IF candidate IS NULL AND NOT room THEN
			-- a worker id of the ranges without a row: the bound, not the
			-- leases, keeps the caller from it
			EXECUTE format($q$
				SELECT EXISTS (SELECT FROM unnest($1, $2) r(lo, hi)
								WHERE (SELECT count(*) FROM %1$s l WHERE l.node BETWEEN lo AND hi) < hi::bigint - lo + 1)
				$q$, tbl)
				INTO room USING lows, highs;
			IF room THEN
				RAISE EXCEPTION 'the lease table is full'
					USING ERRCODE = 'program_limit_exceeded',
						  DETAIL = 'It holds 65536 rows, its limit, and every worker id of the ranges asked for that has a row is leased.',
						  HINT = 'As the extension''s owner on the coordinator, delete the rows of worker ids no server uses any more (see doc/fleet.md, "A bounded table").';
			END IF;
		END IF;
		IF candidate IS NULL THEN
			RETURN;				-- every worker id of the ranges is leased,
								-- or being claimed
		END IF;

		-- Take it under its row lock; another claimer may be quicker.  A row
		-- another claim holds locked is not waited for: when a fleet
		-- starts, every claim would queue on the lowest free worker id, each
		-- for the time of all the claims before it, past its lock_timeout
		-- (test/bench/fleet).  The claim takes instead, in one statement,
		-- the lowest free row no claim holds, and if there is none, a value
		-- without a row, or nothing.
		EXECUTE format('SELECT horizon_ms, expires_at FROM %s WHERE node = $1 FOR UPDATE SKIP LOCKED', tbl)
			INTO stored USING candidate;
		IF stored IS NULL THEN
			EXECUTE format('SELECT EXISTS (SELECT FROM %s WHERE node = $1)', tbl) INTO locked USING candidate;
			IF locked THEN
				busy := busy || candidate;
				EXECUTE format($q$
					SELECT l.node, l.horizon_ms, l.expires_at FROM %1$s l
					 WHERE l.expires_at <= now()
					   AND EXISTS (SELECT FROM unnest($1, $2) r(lo, hi) WHERE l.node BETWEEN lo AND hi)
					 ORDER BY l.node LIMIT 1
					   FOR UPDATE SKIP LOCKED
					$q$, tbl)
					INTO stored USING lows, highs;
				IF stored IS NULL THEN
					rows_busy := true;
					CONTINUE;
				END IF;
				candidate := stored.node;
			END IF;
		END IF;
		IF stored IS NULL THEN
			-- A value without a row: the first from it on (up to 1024 on,
			-- in its range) that has no row and that no other claim is
			-- inserting, which each marks with a transaction-level advisory
			-- lock (key 1936617335, the value) until it commits.  Without
			-- it, every claim of a fleet starting on an empty table picks
			-- the same value, and its insert waits for the first's commit,
			-- a round trip of that client's away; then the next value, the
			-- same again (test/bench/fleet).  Any role may take advisory
			-- locks: one that held those of every value would keep claims
			-- from adding rows, not from taking free ones.
			EXECUTE format($q$
				SELECT s.v FROM (
					SELECT g.v::integer AS v
					  FROM generate_series($1::bigint, least($1::bigint + 1023,
											(SELECT max(r.hi) FROM unnest($2, $3) r(lo, hi)
											  WHERE $1 BETWEEN r.lo AND r.hi))) g(v)
					 WHERE g.v <> ALL ($4)
					   AND NOT EXISTS (SELECT FROM %1$s l WHERE l.node = g.v)
					 ORDER BY g.v
					OFFSET 0
				) s
				 WHERE pg_try_advisory_xact_lock(1936617335, s.v)
				 LIMIT 1
				$q$, tbl)
				INTO stored USING candidate, lows, highs, busy;
			IF stored IS NULL OR stored.v IS NULL THEN
				busy := busy || candidate;
				CONTINUE;
			END IF;
			candidate := stored.v;
			stored := NULL;
			EXECUTE format($q$
				INSERT INTO %s (node, generation, holder, expires_at, horizon_ms, floor_ms, claimed_at,
								claimed_by, token_hash)
				VALUES ($1, 1, $2, now() + $3 * interval '1 ms', $4, 0, now(), session_user, $5)
				ON CONFLICT (node) DO NOTHING
				RETURNING node, generation, 0::bigint, horizon_ms, expires_at
				$q$, tbl)
				INTO node, generation, previous_horizon_ms, horizon_ms, expires_at
				USING candidate, holder, ttl_ms, wanted, next_hash;
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
				USING candidate, holder, ttl_ms, wanted, next_hash;
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

COMMENT ON FUNCTION _snowflake_lease_take(text, bytea[], bytea, integer[], integer[], integer, integer, bigint) IS
'internal to the lease claims: takes back the lease of one of the hashes, or a free worker id, keeping next_hash';

-- What a renewal does: only the holder's secret and role renew it, lapsed
-- or not (a lapsed lease nobody claimed is still its holder's); anyone
-- else learns nothing, not even whether the row exists.  Internal, as
-- _snowflake_lease_take.
CREATE FUNCTION _snowflake_lease_extend(
	node integer,
	hashes bytea[],
	next_hash bytea,
	ttl_ms integer,
	wanted_horizon_ms bigint,
	OUT renewed boolean,
	OUT horizon_ms bigint,
	OUT expires_at timestamptz)
RETURNS record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				  WHERE e.extname = 'snowflake');
	tbl regclass := format('%I.snowflake_lease', ext)::regclass;
BEGIN
	IF $1 IS NULL OR hashes IS NULL OR next_hash IS NULL OR ttl_ms IS NULL OR wanted_horizon_ms IS NULL THEN
		RAISE EXCEPTION 'no argument may be NULL'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	EXECUTE format('SELECT %I._snowflake_lease_bounds($1::pg_catalog.int4, $2::pg_catalog.int8)', ext)
		USING ttl_ms, wanted_horizon_ms;
	EXECUTE format($q$
		UPDATE %s
		   SET expires_at = now() + $4 * interval '1 ms',
		       horizon_ms = greatest(horizon_ms, $5), renewed_at = now(), token_hash = $3
		 WHERE node = $1 AND token_hash = ANY ($2) AND claimed_by = session_user AND released_at IS NULL
		RETURNING true, horizon_ms, expires_at
		$q$, tbl)
		INTO renewed, horizon_ms, expires_at
		USING $1, hashes, next_hash, ttl_ms, wanted_horizon_ms;
	renewed := coalesce(renewed, false);
END
$$;

COMMENT ON FUNCTION _snowflake_lease_extend(integer, bytea[], bytea, integer, bigint) IS
'internal to the lease renewals: renews the lease held by one of the hashes, keeping next_hash';

-- What a release does: the holder's ids all lie below end_ms, so their
-- exact end may lower the horizon, but never below what an earlier holder
-- issued (floor_ms), nor below the coordinator's clock (what the holder
-- may have issued by now, whoever calls), and never raise it.  The row
-- keeps no hash: a released lease is nobody's.  Internal, as
-- _snowflake_lease_take.
CREATE FUNCTION _snowflake_lease_end(node integer, hashes bytea[], end_ms bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				  WHERE e.extname = 'snowflake');
	tbl regclass := format('%I.snowflake_lease', ext)::regclass;
	released boolean;
BEGIN
	IF $1 IS NULL OR hashes IS NULL OR end_ms IS NULL THEN
		RAISE EXCEPTION 'no argument may be NULL'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF end_ms < 0 THEN
		RAISE EXCEPTION 'invalid release'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'The end of a release''s ids is a time in milliseconds, from 0.';
	END IF;
	EXECUTE format($q$
		UPDATE %s
		   SET expires_at = now(), released_at = now(), token_hash = NULL,
		       horizon_ms = greatest(floor_ms,
									 least(horizon_ms,
										   greatest($3, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)))
		 WHERE node = $1 AND token_hash = ANY ($2) AND claimed_by = session_user AND released_at IS NULL
		RETURNING true
		$q$, tbl)
		INTO released USING $1, hashes, end_ms;
	RETURN coalesce(released, false);
END
$$;

COMMENT ON FUNCTION _snowflake_lease_end(integer, bytea[], bigint) IS
'internal to the lease releases: releases the lease held by one of the hashes';

-- The calls of the issuing servers.  SECURITY DEFINER, so that an issuing
-- server's role needs only EXECUTE on them, not write access to the
-- table; with a fixed search_path (the renewal below: every name
-- qualified instead), and the functions found through the extension's
-- schema (the extension is relocatable), so a caller's search_path cannot
-- hijack them.  VOLATILE (they write), PARALLEL UNSAFE
-- (they write), not STRICT where a NULL has a meaning (prefer).
CREATE FUNCTION snowflake_lease_claim(
	holder text,
	proofs text[],
	next_hash bytea,
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
	ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				  WHERE e.extname = 'snowflake');
	hashes bytea[];
BEGIN
	EXECUTE format('SELECT %I._snowflake_lease_proofs($1::pg_catalog.text[], $2::pg_catalog.bytea)', ext)
		INTO hashes USING proofs, coalesce(next_hash, ''::pg_catalog.bytea);
	RETURN QUERY EXECUTE format(
		'SELECT * FROM %I._snowflake_lease_take($1::pg_catalog.text, $2::pg_catalog.bytea[], $3::pg_catalog.bytea, '
		'$4::pg_catalog.int4[], $5::pg_catalog.int4[], $6::pg_catalog.int4, $7::pg_catalog.int4, $8::pg_catalog.int8)', ext)
		USING holder, hashes, next_hash, lows, highs, prefer, ttl_ms, wanted_horizon_ms;
END
$$;

COMMENT ON FUNCTION snowflake_lease_claim(text, text[], bytea, integer[], integer[], integer, integer, bigint) IS
'claim a free worker id among the ranges, or take back the lease of one of the proofs; next_hash is the hash of the secret of the next call; no row if none is free';

-- The renewal, the call a fleet makes most, is C (src/leasecoord.c): the
-- same checks as the claim's and the release's, in that order (proofs,
-- next hash, NULLs, bounds), and the statement of _snowflake_lease_extend,
-- planned once per session instead of four dynamic statements per call.
-- Two things the other lease functions have, it does without, for what
-- they cost each call (test/bench/lease_renew, doc/benchmarks.md):
-- - OUT parameters: PostgreSQL builds the row type of a function with OUT
--   parameters from its pg_proc row three times per call (the caller's
--   parse, its executor, the function), where a named row type comes from
--   the session's cache of types;
-- - a SET clause pinning search_path, which opens and closes a level of
--   settings around each call: the function looks no name up but in its
--   one statement, which names every object, operator and type with its
--   schema (regress planted calls it under a search_path listing another
--   role's now() and = first).
CREATE TYPE snowflake_lease_renewal AS (
	renewed boolean,
	horizon_ms bigint,
	expires_at timestamptz);

COMMENT ON TYPE snowflake_lease_renewal IS
'what snowflake_lease_renew() returns: renewed, and the lease''s horizon and expiry (NULL if not renewed)';

CREATE FUNCTION snowflake_lease_renew(
	node integer,
	proofs text[],
	next_hash bytea,
	ttl_ms integer,
	wanted_horizon_ms bigint)
RETURNS snowflake_lease_renewal
AS 'MODULE_PATHNAME', 'snowflake_lease_renew'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER;

COMMENT ON FUNCTION snowflake_lease_renew(integer, text[], bytea, integer, bigint) IS
'renew the lease held by one of the proofs, recording a horizon at least that far; next_hash is the hash of the secret of the next call; renewed is false otherwise';

CREATE FUNCTION snowflake_lease_release(node integer, proofs text[], end_ms bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				  WHERE e.extname = 'snowflake');
	hashes bytea[];
	released boolean;
BEGIN
	EXECUTE format('SELECT %I._snowflake_lease_proofs($1::pg_catalog.text[], NULL::pg_catalog.bytea)', ext)
		INTO hashes USING proofs;
	EXECUTE format('SELECT %I._snowflake_lease_end($1::pg_catalog.int4, $2::pg_catalog.bytea[], $3::pg_catalog.int8)', ext)
		INTO released USING $1, hashes, end_ms;
	RETURN released;
END
$$;

COMMENT ON FUNCTION snowflake_lease_release(integer, text[], bigint) IS
'release the lease held by one of the proofs, with the exact end of its ids; false otherwise';

-- 0.3.0's calls, one secret for the holder's life (see the top): the same
-- code, with the secret's hash as both the proof and the next hash.
CREATE OR REPLACE FUNCTION snowflake_lease_claim(
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
	ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				  WHERE e.extname = 'snowflake');
	hash bytea;
BEGIN
	EXECUTE format('SELECT %I._snowflake_lease_check($1::pg_catalog.text, $2::pg_catalog.int4, $3::pg_catalog.int8)', ext)
		INTO hash USING token, ttl_ms, wanted_horizon_ms;
	RETURN QUERY EXECUTE format(
		'SELECT * FROM %I._snowflake_lease_take($1::pg_catalog.text, $2::pg_catalog.bytea[], $3::pg_catalog.bytea, '
		'$4::pg_catalog.int4[], $5::pg_catalog.int4[], $6::pg_catalog.int4, $7::pg_catalog.int4, $8::pg_catalog.int8)', ext)
		USING holder, ARRAY[hash], hash, lows, highs, prefer, ttl_ms, wanted_horizon_ms;
END
$$;

COMMENT ON FUNCTION snowflake_lease_claim(text, text, integer[], integer[], integer, integer, bigint) IS
'0.3.0''s claim, for issuing servers not updated yet: its token stays good while its holder runs';

CREATE OR REPLACE FUNCTION snowflake_lease_renew(
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
	ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				  WHERE e.extname = 'snowflake');
	hash bytea;
BEGIN
	EXECUTE format('SELECT %I._snowflake_lease_check($1::pg_catalog.text, $2::pg_catalog.int4, $3::pg_catalog.int8)', ext)
		INTO hash USING token, ttl_ms, wanted_horizon_ms;
	EXECUTE format('SELECT * FROM %I._snowflake_lease_extend($1::pg_catalog.int4, $2::pg_catalog.bytea[], '
				   '$3::pg_catalog.bytea, $4::pg_catalog.int4, $5::pg_catalog.int8)', ext)
		INTO renewed, horizon_ms, expires_at
		USING $1, ARRAY[hash], hash, ttl_ms, wanted_horizon_ms;
END
$$;

COMMENT ON FUNCTION snowflake_lease_renew(integer, text, integer, bigint) IS
'0.3.0''s renewal, for issuing servers not updated yet: its token stays good while its holder runs';

CREATE OR REPLACE FUNCTION snowflake_lease_release(node integer, token text, end_ms bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				  WHERE e.extname = 'snowflake');
	hash bytea;
	released boolean;
BEGIN
	EXECUTE format('SELECT %I._snowflake_lease_check($1::pg_catalog.text, NULL::pg_catalog.int4, NULL::pg_catalog.int8)', ext)
		INTO hash USING token;
	EXECUTE format('SELECT %I._snowflake_lease_end($1::pg_catalog.int4, $2::pg_catalog.bytea[], $3::pg_catalog.int8)', ext)
		INTO released USING $1, ARRAY[hash], end_ms;
	RETURN released;
END
$$;

COMMENT ON FUNCTION snowflake_lease_release(integer, text, bigint) IS
'0.3.0''s release, for issuing servers not updated yet: its token stays good while its holder runs';

REVOKE ALL ON FUNCTION _snowflake_lease_bounds(integer, bigint),
	_snowflake_lease_proofs(text[], bytea),
	_snowflake_lease_take(text, bytea[], bytea, integer[], integer[], integer, integer, bigint),
	_snowflake_lease_extend(integer, bytea[], bytea, integer, bigint),
	_snowflake_lease_end(integer, bytea[], bigint),
	snowflake_lease_claim(text, text[], bytea, integer[], integer[], integer, integer, bigint),
	snowflake_lease_renew(integer, text[], bytea, integer, bigint),
	snowflake_lease_release(integer, text[], bigint) FROM PUBLIC;

-- Whoever may call 0.3.0's claim, renewal or release (the fleet's role)
-- may call 0.4.0's, so that each issuing server takes the chain of
-- secrets when it is updated, with no GRANT of the operator's.
DO $$
DECLARE
	ext name := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
				  WHERE e.extname = 'snowflake');
	pair record;
BEGIN
	FOR pair IN
		SELECT DISTINCT p.new, CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END AS grantee
		  FROM (VALUES ('snowflake_lease_claim(text, text, integer[], integer[], integer, integer, bigint)',
						'snowflake_lease_claim(text, text[], bytea, integer[], integer[], integer, integer, bigint)'),
					   ('snowflake_lease_renew(integer, text, integer, bigint)',
						'snowflake_lease_renew(integer, text[], bytea, integer, bigint)'),
					   ('snowflake_lease_release(integer, text, bigint)',
						'snowflake_lease_release(integer, text[], bigint)')) p(old, new)
		  JOIN pg_catalog.pg_proc f ON f.oid = pg_catalog.to_regprocedure(pg_catalog.quote_ident(ext) || '.' || p.old)
		  CROSS JOIN LATERAL pg_catalog.aclexplode(f.proacl) a
		  LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
		 WHERE a.privilege_type = 'EXECUTE' AND a.grantee <> f.proowner
	LOOP
		EXECUTE format('GRANT EXECUTE ON FUNCTION %I.%s TO %s', ext, pair.new, pair.grantee);
	END LOOP;
END
$$;

-- A released lease keeps no hash (0.3.0's kept it).
UPDATE snowflake_lease SET token_hash = NULL WHERE released_at IS NOT NULL;

-- Constraints a renewal paid for, whatever their names: the table's
-- CHECKs on node and generation, which every renewal ran (domains check
-- them now, see the install script; the CHECKs go first so that the
-- domains' checks have the names they have in a new install), and the
-- UNIQUE constraint on token_hash, whose index kept a renewal from being a
-- HOT update.
DO $$
DECLARE
	con name;
BEGIN
	FOR con IN
		SELECT c.conname FROM pg_catalog.pg_constraint c
		 WHERE c.conrelid OPERATOR(pg_catalog.=) 'snowflake_lease'::pg_catalog.regclass
		   AND (c.contype OPERATOR(pg_catalog.=) 'c'::pg_catalog.char
				OR c.contype OPERATOR(pg_catalog.=) 'u'::pg_catalog.char
				AND c.conkey OPERATOR(pg_catalog.=) ARRAY[(SELECT a.attnum FROM pg_catalog.pg_attribute a
				 WHERE a.attrelid OPERATOR(pg_catalog.=) 'snowflake_lease'::pg_catalog.regclass
				   AND a.attname OPERATOR(pg_catalog.=) 'token_hash'::pg_catalog.name)])
	LOOP
		EXECUTE pg_catalog.format('ALTER TABLE snowflake_lease DROP CONSTRAINT %I', con);
	END LOOP;
END
$$;
CREATE DOMAIN snowflake_lease_node AS integer CHECK (VALUE >= 0);
CREATE DOMAIN snowflake_lease_generation AS bigint CHECK (VALUE > 0);
COMMENT ON DOMAIN snowflake_lease_node IS
'a worker id in the lease table: 0 or more';
COMMENT ON DOMAIN snowflake_lease_generation IS
'the generation of a lease: 1 or more, one more at every claim';
ALTER TABLE snowflake_lease
	ALTER COLUMN node TYPE snowflake_lease_node,
	ALTER COLUMN generation TYPE snowflake_lease_generation;

-- == Conversion ==

-- The same for the offline conversion.

CREATE OR REPLACE FUNCTION snowflake_convert_column(
	tbl regclass,
	col name DEFAULT 'id',
	dry_run boolean DEFAULT false,
	drop_sequence boolean DEFAULT false)
RETURNS SETOF text
LANGUAGE plpgsql
VOLATILE PARALLEL UNSAFE SECURITY INVOKER
ROWS 10
SET search_path = pg_catalog, pg_temp
AS $convert$
DECLARE
	v_nsp name;
BEGIN
	SELECT n.nspname INTO v_nsp
	  FROM pg_depend d
	  JOIN pg_extension e ON e.oid = d.refobjid
	  JOIN pg_proc p ON p.oid = d.objid
	  JOIN pg_namespace n ON n.oid = p.pronamespace
	 WHERE d.classid = 'pg_proc'::regclass
	   AND d.refclassid = 'pg_extension'::regclass
	   AND d.deptype = 'e'
	   AND e.extname = 'snowflake'
	   AND p.proname = 'snowflake_nextval'
	   AND p.pronargs = 0;
	RETURN QUERY EXECUTE format('SELECT s FROM %I._snowflake_convert_column($1::pg_catalog.regclass,
			$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.bool, $5::pg_catalog.name) s', v_nsp)
	  USING tbl, col, dry_run, drop_sequence, v_nsp;
END;
$convert$;

COMMENT ON FUNCTION snowflake_convert_column(regclass, name, boolean, boolean) IS
'replace the serial, identity or nextval() default of a column, and the type of every column referencing it, with Snowflake ids';

-- The work of snowflake_convert_column(), with the snowflake_nextval() of
-- schema home; the markings and search_path of snowflake_convert_column(),
-- for the same reasons.  Any role may call it with any schema: it runs
-- with its caller's rights, on a table its caller owns, and could do
-- nothing the caller could not do by hand.
CREATE FUNCTION _snowflake_convert_column(
	tbl regclass,
	col name,
	dry_run boolean,
	drop_sequence boolean,
	home name)
RETURNS SETOF text
LANGUAGE plpgsql
VOLATILE PARALLEL UNSAFE SECURITY INVOKER
ROWS 10
SET search_path = pg_catalog, pg_temp
AS $convert$
DECLARE
	v_nsp name := home;		-- schema of snowflake_nextval()
	v_call text;			-- the new DEFAULT: "schema".snowflake_nextval()
	v_ours text;			-- a DEFAULT calling it, as pg_get_expr() prints it here
	v_kind "char";
	v_rels oid[];			-- the closure: root tables of the columns to give bigint,
	v_atts name[];			-- ... and their names (tbl's column first)
	v_plan record;			-- what the obstacle scan found
	v_locked oid[] := '{}';	-- tables locked so far
	v_new oid[];			-- ... and those to lock next
	v_stmts text[];
	v_stmt text;
	v_max bigint;
	v_next bigint;
	v_text text;
BEGIN
	IF tbl IS NULL OR col IS NULL OR dry_run IS NULL OR drop_sequence IS NULL THEN
		RAISE EXCEPTION 'arguments of snowflake_convert_column() must not be null'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;

	SELECT p.oid::regproc::text || '()' INTO v_ours
	  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
	 WHERE n.nspname = v_nsp
	   AND p.proname = 'snowflake_nextval'
	   AND p.pronargs = 0;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'no snowflake_nextval() in schema %', coalesce(quote_ident(v_nsp), 'NULL')
			USING ERRCODE = 'object_not_in_prerequisite_state';
	END IF;
	v_call := format('%I.snowflake_nextval()', v_nsp);

	-- What can be known without a lock, to refuse before LOCK TABLE would
	-- with a message of its own: that it is a table, and the caller's.
	-- (Neither changes without a lock that ours waits for; the scan below
	-- checks ownership again under it.)
	SELECT c.relkind INTO v_kind FROM pg_class c WHERE c.oid = tbl;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'relation with OID % does not exist', tbl::oid
			USING ERRCODE = 'undefined_table';
	END IF;
	IF v_kind NOT IN ('r', 'p') THEN
		RAISE EXCEPTION '% is not a table', tbl
			USING ERRCODE = 'wrong_object_type',
				  DETAIL = format('It is %s; only ordinary and partitioned tables can be converted.',
								  CASE v_kind
									  WHEN 'v' THEN 'a view'
									  WHEN 'm' THEN 'a materialized view'
									  WHEN 'f' THEN 'a foreign table'
									  WHEN 'S' THEN 'a sequence'
									  WHEN 'c' THEN 'a composite type'
									  ELSE 'an index'
								  END);
	END IF;
	IF NOT pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = tbl), 'USAGE') THEN
		RAISE EXCEPTION 'must be owner of table %', tbl
			USING ERRCODE = 'insufficient_privilege';
	END IF;

	IF NOT dry_run THEN
		IF current_setting('transaction_isolation') <> 'read committed' THEN
			RAISE EXCEPTION 'snowflake_convert_column() cannot run in a % transaction',
							upper(current_setting('transaction_isolation'))
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = 'The transaction''s snapshot was taken before the function''s locks, so the function could not see a foreign key or a row committed just before them.',
					  HINT = 'Convert in a READ COMMITTED transaction; a dry run works at any isolation level.';
		END IF;
		EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);
		v_locked := ARRAY[tbl::oid];
	END IF;

	-- The closure and the obstacle scan, under the locks taken so far; then
	-- the locks on the tables they named, and again, until nothing new
	-- comes up (see "Locks" above).  The scan refuses in each round, so a
	-- refusal comes before a lock on tables that another role may own.  A
	-- column converted already needs no more locks: nothing will change.
	LOOP
		EXECUTE format('SELECT coalesce(array_agg(c.rel::oid ORDER BY c.n), ''{}''),
							   coalesce(array_agg(c.att ORDER BY c.n), ''{}'')
						  FROM %I._snowflake_convert_fk_closure($1::pg_catalog.regclass,
								$2::pg_catalog.name) WITH ORDINALITY AS c(rel, att, n)',
					   v_nsp)
		   INTO v_rels, v_atts
		  USING tbl, col;
		EXECUTE format('SELECT * FROM %I._snowflake_convert_obstacles($1::pg_catalog.regclass,
				$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.oid[], $5::pg_catalog.name[],
				$6::pg_catalog.text, $7::pg_catalog.text)', v_nsp)
		   INTO v_plan
		  USING tbl, col, drop_sequence, v_rels, v_atts, v_ours, v_call;
		EXIT WHEN dry_run OR v_plan.converted OR v_rels <@ v_locked;

		-- (named from pg_class, now: a table dropped since the closure was
		-- read is not locked, and the next reading leaves it out)
		SELECT array_agg(c.oid ORDER BY c.oid::regclass::text),
			   string_agg(format('%I.%I', n.nspname, c.relname), ', ' ORDER BY c.oid::regclass::text)
		  INTO v_new, v_text
		  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE c.oid = ANY (v_rels) AND c.oid <> ALL (v_locked);
		IF v_new IS NOT NULL THEN
			EXECUTE 'LOCK TABLE ' || v_text || ' IN ACCESS EXCLUSIVE MODE';
			v_locked := v_locked || v_new;
		END IF;
	END LOOP;

	-- Converted already (by an earlier call, or by hand): a no-op.
	IF v_plan.converted THEN
		RAISE NOTICE 'column "%" of table % already takes Snowflake ids, skipping', col, tbl;
		RETURN;
	END IF;

	-- The locks, as one statement: those taken (or, in a dry run, those a
	-- real run would take), the table first.
	RETURN NEXT 'LOCK TABLE '
		|| (SELECT string_agg(x.name, ', ' ORDER BY NOT x.first, x.name)
			  FROM (SELECT DISTINCT r::regclass::text AS name, r = tbl AS first
					  FROM unnest(v_rels) AS r) x)
		|| ' IN ACCESS EXCLUSIVE MODE';

	-- Every existing id must stay below every id issued from now on, or a
	-- new id could collide with an old one.  Drawing an id (one is spent,
	-- even in a dry run) gives the exact bound, since each id of this
	-- server is greater than every earlier one, and makes sure the
	-- generator works here at all (snowflake in shared_preload_libraries)
	-- before the default depends on it.  Read under the lock: no row can
	-- arrive between this check and the change.
	EXECUTE format('SELECT max(%I)::bigint FROM %s', col, tbl) INTO v_max;
	EXECUTE format('SELECT %s', v_call) INTO v_next;
	IF v_max >= v_next THEN
		EXECUTE format('SELECT %I.snowflake_timestamp($1::pg_catalog.int8)::text', v_nsp) INTO v_text USING v_max;
		RAISE EXCEPTION 'column "%" of table % holds values not below the next Snowflake id', col, tbl
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Its largest value is %s, which Snowflake ids reach only at %s: until then new ids could repeat existing values.', v_max, v_text),
				  HINT = 'Keep the column''s current default, or renumber those rows first.';
	END IF;

	-- Every statement is built before the first one runs (they read the
	-- catalogs as they are now).
	EXECUTE format('SELECT coalesce(array_agg(s.stmt ORDER BY s.n), ''{}'')
					  FROM %I._snowflake_convert_statements($1::pg_catalog.regclass, $2::pg_catalog.name,
							$3::pg_catalog.bool, $4::pg_catalog.oid[], $5::pg_catalog.name[],
							$6::pg_catalog.oid[], $7::pg_catalog.oid[], $8::pg_catalog.oid[],
							$9::pg_catalog.oid[], $10::pg_catalog.bool, $11::pg_catalog.oid[],
							$12::pg_catalog.text)
						   WITH ORDINALITY AS s(stmt, n)',
				   v_nsp)
	   INTO v_stmts
	  USING tbl, col, drop_sequence, v_rels, v_atts, v_plan.identity_rels, v_plan.identity_seqs,
			v_plan.owned_seqs, v_plan.drop_seqs, v_plan.set_default, v_plan.detach_rels, v_call;
	FOREACH v_stmt IN ARRAY v_stmts LOOP
		IF NOT dry_run THEN
			EXECUTE v_stmt;
		END IF;
		RETURN NEXT v_stmt;
	END LOOP;
END;
$convert$;

COMMENT ON FUNCTION _snowflake_convert_column(regclass, name, boolean, boolean, name) IS
'internal: the work of snowflake_convert_column(), with the snowflake_nextval() of a given schema';

-- The offline converter names a publication's column list or row filter
-- that uses a column to convert.
CREATE OR REPLACE FUNCTION _snowflake_convert_obstacles(
	tbl regclass,
	col name,
	drop_sequence boolean,
	rels oid[],
	atts name[],
	nextval_expr text,
	nextval_call text,
	OUT tree_rels oid[],
	OUT widen_rels oid[],
	OUT identity_rels oid[],
	OUT identity_seqs oid[],
	OUT owned_seqs oid[],
	OUT drop_seqs oid[],
	OUT set_default boolean,
	OUT detach_rels oid[],
	OUT converted boolean)
RETURNS record
LANGUAGE plpgsql
STABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $obstacles$
DECLARE
	v_att record;			-- the column converted
	v_default text;
	v_used oid[];			-- sequences the defaults call nextval() on
	v_r record;
	v_text text;
	v_text2 text;
	v_others text;
	v_isid boolean;
BEGIN
	converted := false;
	detach_rels := '{}';

	SELECT a.attnum, a.atttypid, a.attidentity, a.attgenerated, a.attinhcount,
		   format_type(a.atttypid, a.atttypmod) AS typname
	  INTO v_att
	  FROM pg_attribute a
	 WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" of table % does not exist', col, tbl
			USING ERRCODE = 'undefined_column',
				  HINT = 'Name the column to convert as the second argument; it defaults to "id".';
	END IF;
	-- PostgreSQL changes an inherited column's type only from the top.
	IF v_att.attinhcount > 0 THEN
		SELECT i.inhparent::regclass::text INTO v_text
		  FROM pg_inherits i
		  JOIN pg_attribute a ON a.attrelid = i.inhparent AND a.attname = col
							 AND NOT a.attisdropped
		 WHERE i.inhrelid = tbl
		 ORDER BY i.inhseqno
		 LIMIT 1;
		RAISE EXCEPTION 'column "%" of table % is inherited from table %', col, tbl, v_text
			USING ERRCODE = 'invalid_table_definition',
				  HINT = format('Convert the column of table %s: the conversion covers its partitions and child tables.', v_text);
	END IF;
	IF v_att.atttypid NOT IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype) THEN
		RAISE EXCEPTION 'column "%" of table % is of type %, not an integer type',
						col, tbl, v_att.typname
			USING ERRCODE = 'datatype_mismatch',
				  HINT = 'Only smallint, integer and bigint columns can take Snowflake ids.';
	END IF;

	-- What issues its values now: an identity, nextval() of a sequence
	-- (serial, bigserial, or written by hand), or already snowflake_nextval().
	-- Anything else is not a migration this function understands.
	SELECT pg_get_expr(ad.adbin, ad.adrelid) INTO v_default
	  FROM pg_attrdef ad
	 WHERE ad.adrelid = tbl AND ad.adnum = v_att.attnum;
	IF v_att.attgenerated <> '' THEN
		RAISE EXCEPTION 'column "%" of table % is a generated column', col, tbl
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('It is generated as %s.', v_default);
	END IF;
	IF v_att.attidentity = ''
	   AND v_default IS DISTINCT FROM nextval_expr
	   AND NOT EXISTS (SELECT FROM pg_attrdef ad
						 JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass
										 AND d.objid = ad.oid
										 AND d.refclassid = 'pg_class'::regclass
						 JOIN pg_class s ON s.oid = d.refobjid AND s.relkind = 'S'
						WHERE ad.adrelid = tbl AND ad.adnum = v_att.attnum
						  AND v_default = format('nextval(%L::regclass)', s.oid::regclass)) THEN
		RAISE EXCEPTION 'column "%" of table % has no sequence or identity to replace', col, tbl
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = CASE WHEN v_default IS NULL THEN 'It has no default.'
								ELSE format('Its default is %s.', v_default) END,
				  HINT = format('To give it Snowflake ids anyway, set its default to %s.', nextval_call);
	END IF;

	-- The tree: PostgreSQL's ALTER TABLE recurses from tbl to every
	-- partition and child table, so each of them is part of the change.
	WITH RECURSIVE tree(relid) AS (
		SELECT tbl::oid
		UNION
		SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.relid
	)
	SELECT array_agg(relid) INTO tree_rels FROM tree;

	SELECT c.oid::regclass::text INTO v_text
	  FROM pg_class c
	 WHERE c.oid = ANY (tree_rels) AND c.relkind = 'f'
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'partition % of table % is a foreign table', v_text, tbl
			USING ERRCODE = 'wrong_object_type',
				  DETAIL = 'The type of a foreign table''s column changes only here, not on the server that stores its rows, which could not hold the new ids.';
	END IF;

	-- A referencing column of another type (a domain, say) would lose it.
	SELECT format('column "%s" of table %s is of type %s', a.attname, a.attrelid::regclass,
				  format_type(a.atttypid, a.atttypmod)) INTO v_text
	  FROM generate_subscripts(rels, 1) AS k(n)
	  JOIN pg_attribute a ON a.attrelid = rels[k.n] AND a.attname = atts[k.n]
	 WHERE a.atttypid NOT IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype)
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION '% and references column "%" of table %', v_text, col, tbl
			USING ERRCODE = 'datatype_mismatch',
				  DETAIL = 'A column referencing a converted one becomes bigint, and only smallint, integer and bigint columns are changed.';
	END IF;

	SELECT array_agg(DISTINCT a.attrelid ORDER BY a.attrelid) INTO widen_rels
	  FROM generate_subscripts(rels, 1) AS k(n)
	  JOIN pg_attribute a ON a.attrelid = rels[k.n] AND a.attname = atts[k.n]
	 WHERE a.atttypid <> 'int8'::regtype;
	widen_rels := coalesce(widen_rels, '{}');

	-- The sequences: identities' (dropped with the identity), those owned
	-- by the column (serial), those the defaults call.
	-- (A partition's identity, from PostgreSQL 17 on, is its parent's, and
	-- goes with it: DROP IDENTITY on the parent drops it from every
	-- partition.  Before 17 partitions have none.)
	SELECT array_agg(DISTINCT a.attrelid), array_agg(DISTINCT d.objid)
	  INTO identity_rels, identity_seqs
	  FROM pg_attribute a
	  JOIN pg_class c ON c.oid = a.attrelid AND NOT c.relispartition
	  JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
					  AND d.refobjid = a.attrelid AND d.refobjsubid = a.attnum AND d.deptype = 'i'
	 WHERE a.attrelid = ANY (tree_rels) AND a.attname = col AND a.attidentity <> '';
	SELECT array_agg(DISTINCT d.objid ORDER BY d.objid) INTO owned_seqs
	  FROM pg_attribute a
	  JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
					  AND d.refobjid = a.attrelid AND d.refobjsubid = a.attnum AND d.deptype = 'a'
	  JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
	 WHERE a.attrelid = ANY (tree_rels) AND a.attname = col;
	SELECT array_agg(DISTINCT d.refobjid ORDER BY d.refobjid) INTO v_used
	  FROM pg_attribute a
	  JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
	  JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid
					  AND d.refclassid = 'pg_class'::regclass
	  JOIN pg_class s ON s.oid = d.refobjid AND s.relkind = 'S'
	 WHERE a.attrelid = ANY (tree_rels) AND a.attname = col;
	identity_rels := coalesce(identity_rels, '{}');
	identity_seqs := coalesce(identity_seqs, '{}');
	owned_seqs := coalesce(owned_seqs, '{}');
	v_used := coalesce(v_used, '{}');
	drop_seqs := '{}';
	IF drop_sequence THEN
		SELECT coalesce(array_agg(DISTINCT s ORDER BY s), '{}') INTO drop_seqs
		  FROM unnest(owned_seqs || v_used) AS s;
	END IF;

	-- Does some table of the tree not take snowflake_nextval() by default?
	SELECT EXISTS (
		SELECT FROM pg_attribute a
		  LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
		 WHERE a.attrelid = ANY (tree_rels) AND a.attname = col
		   AND pg_get_expr(ad.adbin, ad.adrelid) IS DISTINCT FROM nextval_expr)
	  INTO set_default;

	-- Converted already (by an earlier call, or by hand): nothing to check.
	IF cardinality(widen_rels) = 0 AND cardinality(identity_rels) = 0 AND NOT set_default
	   AND cardinality(owned_seqs) = 0 AND cardinality(drop_seqs) = 0 THEN
		converted := true;
		RETURN;
	END IF;

	-- Refuse now, rather than half-way: every table changed must be the
	-- caller's (ALTER TABLE recurses into partitions and child tables, and
	-- the referencing tables are altered too), and so must every sequence
	-- detached or dropped.
	WITH RECURSIVE tables(relid) AS (
		SELECT unnest(widen_rels || tree_rels)
		UNION
		SELECT i.inhrelid FROM pg_inherits i JOIN tables t ON i.inhparent = t.relid
	)
	SELECT c.oid::regclass::text INTO v_text
	  FROM pg_class c
	 WHERE (c.oid IN (SELECT relid FROM tables) OR c.oid = ANY (owned_seqs || drop_seqs))
	   AND NOT pg_has_role(c.relowner, 'USAGE')
	 ORDER BY 1
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'must be owner of % %',
						CASE WHEN v_text::regclass = ANY (owned_seqs || drop_seqs)
							 THEN 'sequence' ELSE 'table' END, v_text
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = format('Converting column "%s" of table %s changes %s too.', col, tbl, v_text);
	END IF;

	-- PostgreSQL cannot change the type of a column that a view, rule,
	-- trigger, policy, generated column or a publication's column list or
	-- row filter uses: name every such object.
	WITH RECURSIVE tables(relid, attname) AS (
		SELECT rels[k.n], atts[k.n]
		  FROM generate_subscripts(rels, 1) AS k(n)
		 WHERE rels[k.n] = ANY (widen_rels)
		UNION
		SELECT i.inhrelid, t.attname FROM pg_inherits i JOIN tables t ON i.inhparent = t.relid
	),
	obstacles AS (
		SELECT DISTINCT a.attname, a.attrelid,
			   CASE d.classid
				   WHEN 'pg_rewrite'::regclass THEN
					   (SELECT CASE WHEN r.rulename = '_RETURN' AND c.relkind = 'm'
									THEN format('materialized view %s', c.oid::regclass)
									WHEN r.rulename = '_RETURN'
									THEN format('view %s', c.oid::regclass)
									ELSE format('rule "%s" on table %s', r.rulename, c.oid::regclass)
							   END
						  FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class
						 WHERE r.oid = d.objid)
				   WHEN 'pg_trigger'::regclass THEN
					   (SELECT format('trigger "%s" on table %s', tg.tgname, tg.tgrelid::regclass)
						  FROM pg_trigger tg WHERE tg.oid = d.objid)
				   WHEN 'pg_policy'::regclass THEN
					   (SELECT format('policy "%s" on table %s', p.polname, p.polrelid::regclass)
						  FROM pg_policy p WHERE p.oid = d.objid)
				   WHEN 'pg_publication_rel'::regclass THEN
					   -- (15 and later: a column list or a row filter;
					   -- PostgreSQL's own error calls both a WHERE clause)
					   (SELECT format('the column list or row filter of table %s in publication "%s"',
									  pr.prrelid::regclass, pb.pubname)
						  FROM pg_publication_rel pr JOIN pg_publication pb ON pb.oid = pr.prpubid
						 WHERE pr.oid = d.objid)
				   WHEN 'pg_class'::regclass THEN
					   -- before 14 a generated column depends on the column itself
					   (SELECT format('generated column "%s" of table %s', ga.attname, ga.attrelid::regclass)
						  FROM pg_attribute ga
						 WHERE ga.attrelid = d.objid AND ga.attnum = d.objsubid)
				   ELSE
					   (SELECT format('generated column "%s" of table %s', ga.attname, ga.attrelid::regclass)
						  FROM pg_attrdef ad
						  JOIN pg_attribute ga ON ga.attrelid = ad.adrelid AND ga.attnum = ad.adnum
						 WHERE ad.oid = d.objid)
			   END AS what
		  FROM tables t
		  JOIN pg_attribute a ON a.attrelid = t.relid AND a.attname = t.attname
		  JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = a.attrelid
						  AND d.refobjsubid = a.attnum
		 WHERE d.classid IN ('pg_rewrite'::regclass, 'pg_trigger'::regclass, 'pg_policy'::regclass,
							 'pg_publication_rel'::regclass)
			OR (d.classid = 'pg_class'::regclass AND d.objid = a.attrelid
				AND d.objsubid <> a.attnum
				AND EXISTS (SELECT FROM pg_attribute ga
							 WHERE ga.attrelid = d.objid AND ga.attnum = d.objsubid
							   AND ga.attgenerated <> ''))
			OR (d.classid = 'pg_attrdef'::regclass
				AND NOT EXISTS (SELECT FROM pg_attrdef own
								 WHERE own.oid = d.objid AND own.adnum = a.attnum))
	)
	SELECT format('%s depends on the type of column "%s" of table %s',
				  o.what, o.attname, o.attrelid::regclass),
		   o.what,
		   (SELECT string_agg(o2.what, ', ' ORDER BY o2.what) FROM obstacles o2 WHERE o2.what <> o.what)
	  INTO v_text, v_text2, v_others
	  FROM obstacles o
	 ORDER BY o.what
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION '%', v_text
			USING ERRCODE = 'dependent_objects_still_exist',
				  DETAIL = 'Converting column "' || col || '" of table ' || tbl::text
						   || ' changes that column to bigint, and PostgreSQL cannot change the type of a column that a view, rule, trigger, policy, generated column or a publication''s column list or row filter uses.'
						   || CASE WHEN v_others IS NULL THEN ''
								   ELSE format(' Also in the way: %s.', v_others) END,
				  HINT = format('Drop %s, convert the column, and create it again, in one transaction.', v_text2);
	END IF;

	-- A sequence to be dropped must serve nothing else: an identity's goes
	-- with DROP IDENTITY, and DROP SEQUENCE's own hint (CASCADE) would drop
	-- the other users' defaults.
	SELECT format('sequence %s is used by other objects', s.seq::regclass),
		   string_agg(pg_describe_object(d.classid, d.objid, d.objsubid), ', '
					  ORDER BY pg_describe_object(d.classid, d.objid, d.objsubid)),
		   s.seq = ANY (identity_seqs)
	  INTO v_text, v_text2, v_isid
	  FROM unnest(identity_seqs || drop_seqs) AS s(seq)
	  JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = s.seq
	 WHERE d.deptype = 'n'
	   AND NOT (d.classid = 'pg_attrdef'::regclass
				AND d.objid IN (SELECT ad.oid
								  FROM pg_attrdef ad
								  JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
								 WHERE ad.adrelid = ANY (tree_rels) AND a.attname = col))
	 GROUP BY s.seq
	 ORDER BY s.seq
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION '%', v_text
			USING ERRCODE = 'dependent_objects_still_exist',
				  DETAIL = format('Used by: %s.', v_text2),
				  HINT = CASE WHEN v_isid THEN
							 'It belongs to the identity of the column, and dropping the identity drops it: make those objects use another sequence first.'
						 ELSE
							 'Keep the sequence (drop_sequence => false), or make those objects use another one first.'
						 END;
	END IF;

	-- PostgreSQL 18 catalogs not-null constraints, and its ALTER COLUMN TYPE
	-- fails on a partition or child table whose not-null constraint on the
	-- column is its own (conislocal) as well as inherited, under another
	-- name than its parent's ("cannot create not-null constraint ..."): it
	-- re-creates the parent's constraint first, which reaches the child
	-- under the parent's name, then the child's, under its own.  (Before 18
	-- there are no such constraints, and this finds nothing.)  A child
	-- table with one parent, whose inherited columns and constraints are
	-- all its own as well (a table made alone, then attached with ALTER
	-- TABLE ... INHERIT), is detached for the change and attached again,
	-- which leaves the catalogs as they were; for any other, detaching would
	-- make its inherited columns and constraints its own: refused.
	FOR v_r IN
		WITH RECURSIVE tables(relid, attname) AS (
			SELECT rels[k.n], atts[k.n]
			  FROM generate_subscripts(rels, 1) AS k(n)
			 WHERE rels[k.n] = ANY (widen_rels)
			UNION
			SELECT i.inhrelid, t.attname FROM pg_inherits i JOIN tables t ON i.inhparent = t.relid
		),
		problems AS (
			SELECT DISTINCT t.relid, t.attname, con.conname, pcon.conname AS parent_conname,
				   c.relispartition,
				   (SELECT count(*) FROM pg_inherits i2 WHERE i2.inhrelid = t.relid) = 1
				   AND NOT EXISTS (SELECT FROM pg_attribute x
									WHERE x.attrelid = t.relid AND x.attnum > 0 AND NOT x.attisdropped
									  AND x.attinhcount > 0 AND NOT x.attislocal)
				   AND NOT EXISTS (SELECT FROM pg_constraint x
									WHERE x.conrelid = t.relid AND x.coninhcount > 0 AND NOT x.conislocal)
					 AS detachable
			  FROM tables t
			  JOIN pg_class c ON c.oid = t.relid
			  JOIN pg_attribute a ON a.attrelid = t.relid AND a.attname = t.attname
			  JOIN pg_constraint con ON con.conrelid = t.relid AND con.contype = 'n'
									AND con.conkey = ARRAY[a.attnum] AND con.conislocal
									AND con.coninhcount > 0
			  JOIN pg_inherits i ON i.inhrelid = t.relid
			  JOIN pg_attribute pa ON pa.attrelid = i.inhparent AND pa.attname = t.attname
			  JOIN pg_constraint pcon ON pcon.conrelid = i.inhparent AND pcon.contype = 'n'
									 AND pcon.conkey = ARRAY[pa.attnum]
			 WHERE pcon.conname <> con.conname
		)
		-- (refusals first)
		SELECT * FROM problems p
		 ORDER BY NOT p.relispartition, p.detachable, p.relid::regclass::text, p.attname
	LOOP
		IF v_r.relispartition THEN
			RAISE EXCEPTION 'partition % has a not-null constraint of its own on column "%"',
							v_r.relid::regclass, v_r.attname
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('Its constraint "%s" is named differently from the parent''s "%s", and PostgreSQL cannot then change the column''s type.',
									  v_r.conname, v_r.parent_conname),
					  HINT = 'Detach the partition and attach it again, which leaves it the parent''s constraint only; then convert.';
		ELSIF NOT v_r.detachable THEN
			RAISE EXCEPTION 'table % has a not-null constraint of its own on inherited column "%"',
							v_r.relid::regclass, v_r.attname
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  DETAIL = format('Its constraint "%s" is named differently from the parent''s "%s", and PostgreSQL cannot then change the column''s type.',
									  v_r.conname, v_r.parent_conname),
					  HINT = format('Give the two constraints one name (detach the table with ALTER TABLE ... NO INHERIT, rename its constraint to "%s", attach it again with ALTER TABLE ... INHERIT); then convert.',
									v_r.parent_conname);
		END IF;
		IF v_r.relid <> ALL (detach_rels) THEN
			detach_rels := detach_rels || v_r.relid;
		END IF;
	END LOOP;
END;
$obstacles$;

-- == Online conversion ==

-- The same for the online conversion, and the procedure's variables of
-- types written with their schema (resolved under the caller's search_path
-- when it is compiled).

CREATE OR REPLACE FUNCTION _snowflake_online_plan(
	tbl regclass,
	col name,
	drop_sequence boolean,
	rels oid[],
	atts name[],
	nsp name,
	mode text)
RETURNS TABLE (step text, rel regclass, object name, statement text)
LANGUAGE plpgsql
VOLATILE PARALLEL UNSAFE SECURITY INVOKER
ROWS 30
SET search_path = pg_catalog, pg_temp
AS $plan$
DECLARE
	v_call text := format('%I.snowflake_nextval()', nsp);
	v_offline constant text := 'Convert it with snowflake_convert_column(), which rewrites the tables under an ACCESS EXCLUSIVE lock.';
	v_refuse boolean := mode <> 'abort';
	v_tables oid[];			-- every table of the closure, tbl first, then by name
	v_stables oid[];		-- those with shadow columns, in that order
	v_srel oid[];			-- the shadowed columns: table,
	v_snum int2[];			-- ... number,
	v_satt name[];			-- ... name,
	v_snew name[];			-- ... shadow's name,
	v_snn boolean[];		-- ... NOT NULL?
	v_key_shadowed boolean;
	v_mrel oid[];			-- every table of the trees of v_stables: the
	v_mdepth int4[];		-- ... depth below its root, 0 for the root,
	v_mkind "char"[];		-- ... relkind
	v_xrel oid[];			-- the shadowed columns in every such table:
	v_xnum int2[];			-- ... table, number (a partition's may differ
	v_xatt name[];			-- from its root's), name, shadow's name
	v_xnew name[];
	v_btables oid[];		-- the tables the backfill updates: not partitioned
	v_parts text[] := '{}';	-- the swap's statements on partitioned tables,
	v_pdepth int4[] := '{}';	-- ... done from the deepest level up
	v_fkparts text[] := '{}';	-- the foreign keys referencing one, after them
	v_finish text[] := '{}';	-- their validation, after the swap
	v_plan record;
	v_r record;
	v_i record;
	v_c record;
	v_k oid;
	v_text text;
	v_keys text[];
	v_incl text[];
	v_expr text;
	v_why text;
	v_was text;
	v_still text;
	v_stmt text;
	v_after text[] := '{}';	-- the swap's statements after the column swap
	v_swap_fk text[] := '{}';
	v_abort text[] := '{}';
	v_validate text[] := '{}';
BEGIN
	SELECT array_agg(r ORDER BY r <> tbl::oid, r::regclass::text)
	  INTO v_tables
	  FROM (SELECT DISTINCT unnest(rels) AS r) x;

	SELECT coalesce(array_agg(rels[k.n] ORDER BY k.n), '{}'), coalesce(array_agg(a.attnum ORDER BY k.n), '{}'),
		   coalesce(array_agg(a.attname ORDER BY k.n), '{}'),
		   coalesce(array_agg((a.attname || '_snowflake')::name ORDER BY k.n), '{}'),
		   coalesce(array_agg(a.attnotnull ORDER BY k.n), '{}')
	  INTO v_srel, v_snum, v_satt, v_snew, v_snn
	  FROM generate_subscripts(rels, 1) AS k(n)
	  JOIN pg_attribute a ON a.attrelid = rels[k.n] AND a.attname = atts[k.n] AND NOT a.attisdropped
	 WHERE a.atttypid <> 'int8'::regtype;
	SELECT coalesce(array_agg(t ORDER BY k.n), '{}') INTO v_stables
	  FROM unnest(v_tables) WITH ORDINALITY AS k(t, n)
	 WHERE t = ANY (v_srel);
	v_key_shadowed := EXISTS (SELECT FROM unnest(v_srel, v_satt) s(r, a) WHERE r = tbl AND a = col);

	-- A partitioned table's partitions, at every level, have the shadow
	-- columns, the checks and the trigger of their root, which ALTER TABLE
	-- and CREATE TRIGGER add to each; the backfill updates the tables that
	-- hold rows, and each index is built on each of them.
	WITH RECURSIVE tree(n, relid, depth) AS (
		SELECT k.n, k.t, 0
		  FROM unnest(v_stables) WITH ORDINALITY AS k(t, n)
		UNION ALL
		SELECT tr.n, i.inhrelid, tr.depth + 1
		  FROM tree tr
		  JOIN pg_inherits i ON i.inhparent = tr.relid
		  JOIN pg_class c ON c.oid = i.inhrelid
		 WHERE c.relispartition
	)
	SELECT coalesce(array_agg(tr.relid ORDER BY tr.n, tr.depth, tr.relid::regclass::text), '{}'),
		   coalesce(array_agg(tr.depth ORDER BY tr.n, tr.depth, tr.relid::regclass::text), '{}'),
		   coalesce(array_agg(c.relkind ORDER BY tr.n, tr.depth, tr.relid::regclass::text), '{}')
	  INTO v_mrel, v_mdepth, v_mkind
	  FROM tree tr JOIN pg_class c ON c.oid = tr.relid;
	SELECT coalesce(array_agg(m.r ORDER BY m.n, s.n), '{}'), coalesce(array_agg(a.attnum ORDER BY m.n, s.n), '{}'),
		   coalesce(array_agg(s.att ORDER BY m.n, s.n), '{}'), coalesce(array_agg(s.new ORDER BY m.n, s.n), '{}')
	  INTO v_xrel, v_xnum, v_xatt, v_xnew
	  FROM unnest(v_mrel) WITH ORDINALITY AS m(r, n)
	  JOIN unnest(v_srel, v_satt, v_snew) WITH ORDINALITY AS s(rel, att, new, n)
		ON s.rel = coalesce(pg_partition_root(m.r::regclass)::oid, m.r)
	  JOIN pg_attribute a ON a.attrelid = m.r AND a.attname = s.att AND NOT a.attisdropped;
	SELECT coalesce(array_agg(m.r ORDER BY m.n), '{}') INTO v_btables
	  FROM unnest(v_mrel, v_mkind) WITH ORDINALITY AS m(r, kind, n)
	 WHERE m.kind <> 'p';

	IF v_refuse THEN
		-- Inheritance: a child table is a table of its own, with its own
		-- indexes and keys, which a shadow column added to the parent would
		-- not give it.  (Partitions, which share their root's columns,
		-- constraints, triggers and indexes, are converted with it.)
		SELECT c.oid::regclass AS r,
			   CASE WHEN c.relispartition THEN 'is a partition'
					WHEN EXISTS (SELECT FROM pg_inherits i WHERE i.inhparent = c.oid) THEN 'has inheritance children'
					ELSE 'inherits from another table' END AS what
		  INTO v_r
		  FROM unnest(v_tables) WITH ORDINALITY AS t(relid, n)
		  JOIN pg_class c ON c.oid = t.relid
		 WHERE c.relispartition
			OR (c.relkind <> 'p' AND EXISTS (SELECT FROM pg_inherits i WHERE i.inhparent = c.oid OR i.inhrelid = c.oid))
		 ORDER BY t.n
		 LIMIT 1;
		IF FOUND THEN
			RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = format('Table %s %s: inheritance children have indexes and keys of their own, which the online conversion does not build.',
									  v_r.r, v_r.what),
					  HINT = v_offline;
		END IF;

		-- A partition key's column cannot change type (PostgreSQL refuses
		-- it, offline too), nor can a partition be a foreign table here.
		SELECT s.rel::regclass AS r, s.att, c.relkind INTO v_r
		  FROM unnest(v_xrel, v_xnum, v_xatt) AS s(rel, num, att)
		  JOIN pg_class c ON c.oid = s.rel
		  LEFT JOIN pg_partitioned_table pt ON pt.partrelid = s.rel
		 WHERE c.relkind = 'f'
			OR s.num = ANY (pt.partattrs::int2[])
			OR position(format(':varattno %s ', s.num) IN coalesce(pt.partexprs::text, '')) > 0
		 LIMIT 1;
		IF FOUND AND v_r.relkind = 'f' THEN
			RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = format('Partition %s is a foreign table, which has no trigger nor index of the online conversion''s.', v_r.r),
					  HINT = v_offline;
		ELSIF FOUND THEN
			RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = format('Column "%s" is in the partition key of table %s, and PostgreSQL cannot change the type of a partition key''s column, nor drop it.',
									  v_r.att, v_r.r),
					  HINT = 'Neither conversion can change it in place: copy the rows into a new table partitioned by a bigint column.';
		END IF;

		-- Anything else that uses an old column would be dropped with it,
		-- or keep the old type: name it.  (Indexes, the primary key, unique
		-- and foreign keys, defaults, sequences and not-null constraints are
		-- carried over; views, rules, triggers, policies and generated
		-- columns were refused already, as offline.)
		SELECT pg_describe_object(d.classid, d.objid, d.objsubid) AS what, s.rel::regclass AS r, s.att
		  INTO v_r
		  FROM unnest(v_xrel, v_xnum, v_xatt) AS s(rel, num, att)
		  JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = s.rel
						  AND d.refobjsubid = s.num
		 WHERE NOT ((d.classid = 'pg_class'::regclass
					 AND EXISTS (SELECT FROM pg_class x WHERE x.oid = d.objid AND x.relkind IN ('i', 'I', 'S')))
					OR (d.classid = 'pg_attrdef'::regclass
						AND EXISTS (SELECT FROM pg_attrdef ad
									 WHERE ad.oid = d.objid AND ad.adrelid = s.rel AND ad.adnum = s.num))
					OR (d.classid = 'pg_constraint'::regclass
						AND EXISTS (SELECT FROM pg_constraint x
									 WHERE x.oid = d.objid
									   AND (x.contype IN ('p', 'u', 'f', 'n')
											-- (the conversion's own check, once added)
											OR x.contype = 'c' AND x.conrelid = s.rel
											   AND x.conname = s.att || '_snowflake_equal'))))
		 ORDER BY 1
		 LIMIT 1;
		IF FOUND THEN
			RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = format('%s uses column "%s" of table %s, and the online conversion carries over only indexes, unique, primary and foreign keys, defaults and not-null constraints.',
									  upper(left(v_r.what, 1)) || substr(v_r.what, 2), v_r.att, v_r.r),
					  HINT = v_offline;
		END IF;

		SELECT s.rel::regclass AS r, s.att INTO v_r
		  FROM unnest(v_xrel, v_xnum, v_xatt) AS s(rel, num, att)
		  JOIN pg_attribute a ON a.attrelid = s.rel AND a.attnum = s.num
		 WHERE a.attacl IS NOT NULL
		 LIMIT 1;
		IF FOUND THEN
			RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = format('Column "%s" of table %s has privileges of its own, which the online conversion does not carry over.', v_r.att, v_r.r),
					  HINT = v_offline;
		END IF;

		-- The backfill updates every row of these tables: what that would
		-- fire besides the conversion's trigger (see
		-- _snowflake_online_firing(); each batch checks again), as the
		-- session's session_replication_role has it.  When the replica
		-- setting would keep all of it from firing, the batches update
		-- with that setting, if the caller and the table's owner may set it
		-- (_snowflake_online_replica()); what would fire even so (ENABLE
		-- ALWAYS and ENABLE REPLICA triggers and rules, row-level security)
		-- is refused.
		FOREACH v_k IN ARRAY (SELECT coalesce(array_agg(s.t ORDER BY s.t::regclass::text), '{}') FROM unnest(v_btables) AS s(t)) LOOP
			v_was := current_setting('session_replication_role');
			EXECUTE format('SELECT %1$I._snowflake_online_firing($1::pg_catalog.regclass, $2::pg_catalog.oid[],
					$3::pg_catalog.name[], $4::pg_catalog.name, $5::pg_catalog.text),
				%1$I._snowflake_online_firing($1::pg_catalog.regclass, $2::pg_catalog.oid[],
					$3::pg_catalog.name[], $4::pg_catalog.name, ''replica''::pg_catalog.text)', nsp)
			   INTO v_text, v_still USING v_k, rels, atts, nsp, v_was;
			CONTINUE WHEN v_text IS NULL;
			v_why := NULL;
			IF v_still IS NULL THEN
				-- (set if it may be, and set back at once: the batches set it)
				EXECUTE format('SELECT %I._snowflake_online_replica($1::pg_catalog.regclass)', nsp)
				   INTO v_why USING v_k;
				IF v_why IS NULL THEN
					PERFORM set_config('session_replication_role', v_was, true);
					CONTINUE;
				END IF;
			END IF;
			RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = format('Table %s has %s.', v_k::regclass, coalesce(v_still, v_text)),
					  HINT = coalesce(v_why || ' Or drop or disable it, or convert with snowflake_convert_column(), which rewrites the tables under an ACCESS EXCLUSIVE lock.',
									  v_offline);
		END LOOP;

		-- The backfill's updates of a table run as its owner (see
		-- asowner.c), through a function PUBLIC cannot execute; a caller
		-- that is not the owner needs the right to.
		SELECT c.oid::regclass AS r, c.relowner::regrole AS what INTO v_r
		  FROM unnest(v_btables) AS s(t)
		  JOIN pg_class c ON c.oid = s.t
		 WHERE c.relowner <> (SELECT o.oid FROM pg_roles o WHERE o.rolname = current_user)
		   AND NOT has_function_privilege(format('%I._snowflake_online_sync_rows(pg_catalog.regclass, pg_catalog.oid[], pg_catalog.name[], pg_catalog.bool, pg_catalog.text[], pg_catalog.text[], pg_catalog.int4)', nsp), 'EXECUTE')
		 ORDER BY c.oid::regclass::text
		 LIMIT 1;
		IF FOUND THEN
			RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
				USING ERRCODE = 'insufficient_privilege',
					  DETAIL = format('Table %s belongs to role %s, as whom the backfill updates its rows, which needs EXECUTE on function %I._snowflake_online_sync_rows().',
									  v_r.r, v_r.what, nsp),
					  HINT = format('Call the procedure as role %s, or have a superuser grant you EXECUTE on function %I._snowflake_online_sync_rows().',
									v_r.what, nsp);
		END IF;

		-- A trigger before each inserted or updated row that fires after
		-- the conversion's (triggers fire in the order of their names)
		-- could change a column after its shadow was set: every such write
		-- would fail the check that keeps them equal.
		SELECT t.tgrelid::regclass AS r, t.tgname AS what INTO v_r
		  FROM pg_trigger t
		 WHERE t.tgrelid = ANY (v_mrel) AND NOT t.tgisinternal AND t.tgenabled <> 'D'
		   AND (t.tgtype & 3) = 3 AND (t.tgtype & 20) <> 0
		   AND t.tgname::text COLLATE "C" > 'zz_snowflake_sync'
		 ORDER BY 1, 2
		 LIMIT 1;
		IF FOUND THEN
			RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = format('Trigger "%s" of table %s fires before each inserted or updated row after the conversion''s trigger zz_snowflake_sync (triggers fire in the order of their names), and could change a column after its shadow column is set.',
									  v_r.what, v_r.r),
					  HINT = 'Rename the trigger to sort before zz_snowflake_sync, or convert with snowflake_convert_column().';
		END IF;

		-- A published table would send its shadow column to the
		-- subscribers, whose tables lack it: they would stop applying
		-- changes ("missing replicated column"), and this server keep the
		-- WAL they have not confirmed.  (pg_publication_tables lists the
		-- tables of every kind of publication: of tables, of all tables,
		-- of schemas.)
		SELECT c.oid::regclass AS r, p.pubname AS what INTO v_r
		  FROM pg_class c
		  JOIN pg_namespace n ON n.oid = c.relnamespace
		  JOIN pg_publication_tables p ON p.schemaname = n.nspname AND p.tablename = c.relname
		 WHERE c.oid = ANY (v_mrel)
		 ORDER BY 1, 2
		 LIMIT 1;
		IF FOUND THEN
			RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = format('Table %s is in publication "%s": its subscribers would receive the shadow column, which their tables lack, and stop applying changes.',
									  v_r.r, v_r.what),
					  HINT = 'Make the columns bigint on every subscriber first, then convert them here with snowflake_convert_column(), which adds no column.';
		END IF;

		SELECT s.att INTO v_text
		  FROM unnest(v_satt) AS s(att)
		 WHERE octet_length(s.att) > 63 - octet_length('_snowflake_not_null')
		 LIMIT 1;
		IF FOUND THEN
			RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
				USING ERRCODE = 'name_too_long',
					  DETAIL = format('The names of the shadow column of "%s" and of its constraint would be too long.', v_text),
					  HINT = v_offline;
		END IF;
	END IF;

	-- add: the shadow columns and their checks, then the triggers (ENABLE
	-- ALWAYS, so that they fire also for logical replication and under
	-- session_replication_role = replica; named to fire after the table's
	-- other BEFORE triggers, which fire in name order).
	IF cardinality(v_stables) > 0 THEN
		RETURN QUERY SELECT 'add'::text, NULL::regclass, NULL::name,
			'LOCK TABLE ' || string_agg(t::regclass::text, ', ' ORDER BY k.n) || ' IN ACCESS EXCLUSIVE MODE'
		  FROM unnest(v_stables) WITH ORDINALITY AS k(t, n);
	END IF;
	FOR v_r IN
		SELECT t AS relid, k.n,
			   string_agg(format('ADD COLUMN %I bigint', s.new), ', ' ORDER BY s.n) AS cols,
			   string_agg(CASE WHEN s.nn
							   THEN format(', ADD CONSTRAINT %I CHECK (%I IS NOT NULL) NOT VALID',
										   s.new || '_not_null', s.new)
							   ELSE '' END
						  || format(', ADD CONSTRAINT %I CHECK (%I IS NOT DISTINCT FROM %I) NOT VALID',
									s.new || '_equal', s.new, s.att), '' ORDER BY s.n) AS checks,
			   string_agg(format('%L, %L', s.att, s.new), ', ' ORDER BY s.n) AS args
		  FROM unnest(v_stables) WITH ORDINALITY AS k(t, n)
		  JOIN unnest(v_srel, v_satt, v_snew, v_snn) WITH ORDINALITY AS s(rel, att, new, nn, n) ON s.rel = t
		 GROUP BY t, k.n
		 ORDER BY k.n
	LOOP
		IF mode = 'check' THEN
			SELECT a.attname INTO v_text
			  FROM pg_attribute a
			 WHERE a.attrelid = v_r.relid AND NOT a.attisdropped
			   AND a.attname IN (SELECT s.new FROM unnest(v_srel, v_snew) s(rel, new) WHERE s.rel = v_r.relid)
			 LIMIT 1;
			IF FOUND THEN
				RAISE EXCEPTION 'column "%" of table % already exists', v_text, v_r.relid::regclass
					USING ERRCODE = 'duplicate_column',
						  DETAIL = 'The online conversion names its shadow columns so.',
						  HINT = 'Rename that column, or convert with snowflake_convert_column().';
			END IF;
			SELECT t.tgname INTO v_text
			  FROM pg_trigger t
			 WHERE t.tgrelid = v_r.relid AND t.tgname = 'zz_snowflake_sync';
			IF FOUND THEN
				RAISE EXCEPTION 'trigger "%" for table % already exists', v_text, v_r.relid::regclass
					USING ERRCODE = 'duplicate_object',
						  HINT = 'Drop it: the online conversion names its trigger so.';
			END IF;
		END IF;
		RETURN QUERY SELECT 'add'::text, v_r.relid::regclass, NULL::name,
			format('ALTER TABLE %s %s%s', v_r.relid::regclass, v_r.cols, coalesce(v_r.checks, ''));
		RETURN QUERY SELECT 'add'::text, v_r.relid::regclass, 'zz_snowflake_sync'::name,
			format('CREATE TRIGGER zz_snowflake_sync BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION %I.snowflake_convert_sync(%s)',
				   v_r.relid::regclass, nsp, v_r.args);
		RETURN QUERY SELECT 'add'::text, v_r.relid::regclass, NULL::name,
			format('ALTER TABLE %s ENABLE ALWAYS TRIGGER zz_snowflake_sync', v_r.relid::regclass);
		v_abort := v_abort || format('DROP TRIGGER IF EXISTS zz_snowflake_sync ON %s', v_r.relid::regclass);
	END LOOP;

	-- backfill: described (the procedure builds the batches)
	FOR v_r IN
		SELECT t AS relid,
			   (SELECT string_agg(format('%I = %I', s.new, s.att), ', ' ORDER BY s.n)
				  FROM unnest(v_xrel, v_xatt, v_xnew) WITH ORDINALITY AS s(rel, att, new, n)
				 WHERE s.rel = t) AS sets,
			   (SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY k.n)
				  FROM pg_index i
				  CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(num, n)
				  JOIN pg_attribute a ON a.attrelid = t AND a.attnum = k.num
				 WHERE i.indrelid = t AND i.indisprimary) AS pk
		  FROM unnest(v_btables) WITH ORDINALITY AS k(t, n)
		 ORDER BY k.n
	LOOP
		RETURN QUERY SELECT 'backfill'::text, v_r.relid::regclass, NULL::name,
			format('UPDATE %s SET %s, in batches %s', v_r.relid::regclass, v_r.sets,
				   CASE WHEN v_r.pk IS NULL THEN 'by physical position (ctid)' ELSE format('in the order of (%s)', v_r.pk) END);
	END LOOP;

	-- index: every index using a shadowed column, again on the shadow
	-- columns, and what the swap makes of it
	FOR v_i IN
		SELECT i.*, c.relname, c.relnamespace, c.reloptions, c.reltablespace, am.amname,
			   con.oid AS conoid, con.conname, con.contype, con.condeferrable, con.condeferred,
			   obj_description(i.indexrelid, 'pg_class') AS index_comment,
			   obj_description(con.oid, 'pg_constraint') AS con_comment,
			   (to_jsonb(i) ->> 'indnullsnotdistinct') = 'true' AS nulls_not_distinct,
			   k.n AS tn, k.depth, k.kind AS tkind
		  FROM unnest(v_mrel, v_mdepth, v_mkind) WITH ORDINALITY AS k(t, depth, kind, n)
		  JOIN pg_index i ON i.indrelid = k.t
		  JOIN pg_class c ON c.oid = i.indexrelid
		  JOIN pg_am am ON am.oid = c.relam
		  LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid
									 AND con.contype IN ('p', 'u', 'x')
		 WHERE EXISTS (SELECT FROM unnest(v_xrel, v_xnum) s(rel, num)
						WHERE s.rel = i.indrelid
						  AND (s.num = ANY (i.indkey::int2[])
							   OR position(format(':varattno %s ', s.num) IN coalesce(i.indexprs::text, '')) > 0
							   OR position(format(':varattno %s ', s.num) IN coalesce(i.indpred::text, '')) > 0))
		 ORDER BY k.n, c.relname
	LOOP
		IF v_refuse THEN
			SELECT s.att INTO v_text
			  FROM unnest(v_xrel, v_xnum, v_xatt) s(rel, num, att)
			 WHERE s.rel = v_i.indrelid
			   AND (position(format(':varattno %s ', s.num) IN coalesce(v_i.indexprs::text, '')) > 0
					OR position(format(':varattno %s ', s.num) IN coalesce(v_i.indpred::text, '')) > 0)
			 LIMIT 1;
			IF FOUND OR v_i.contype = 'x' THEN
				RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
					USING ERRCODE = 'feature_not_supported',
						  DETAIL = format('%s uses column "%s" of table %s in an expression, a predicate or an exclusion constraint, which the online conversion does not rebuild.',
										  CASE WHEN v_i.contype = 'x' THEN format('Constraint "%s"', v_i.conname)
											   ELSE format('Index %s', v_i.indexrelid::regclass) END,
										  coalesce(v_text, (SELECT string_agg(s.att, '", "') FROM unnest(v_xrel, v_xatt) s(rel, att)
															  WHERE s.rel = v_i.indrelid)),
										  v_i.indrelid::regclass),
						  HINT = v_offline;
			END IF;
			IF v_i.tkind <> 'p' AND octet_length(v_i.relname) > 63 - octet_length('_snowflake') THEN
				RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
					USING ERRCODE = 'name_too_long',
						  DETAIL = format('The name of the new index of %s would be too long.', v_i.indexrelid::regclass),
						  HINT = 'Rename the index, or convert with snowflake_convert_column().';
			END IF;
			IF v_i.tkind <> 'p' AND mode = 'check' AND EXISTS (SELECT FROM pg_class x WHERE x.relnamespace = v_i.relnamespace
											 AND x.relname = v_i.relname || '_snowflake') THEN
				RAISE EXCEPTION 'relation "%" already exists', v_i.relname || '_snowflake'
					USING ERRCODE = 'duplicate_table',
						  DETAIL = format('The online conversion names the new index of %s so.', v_i.indexrelid::regclass),
						  HINT = 'Rename that relation, or convert with snowflake_convert_column().';
			END IF;
		END IF;

		v_keys := '{}';
		v_incl := '{}';
		FOR v_c IN
			SELECT k.num, k.n - 1 AS pos, a.attname, a.attcollation, ia.attcollation AS icoll,
				   ia.atttypid AS itype, s.new, opc.opcdefault, opc.oid AS opcoid, opc.opcname, opcn.nspname AS opcnsp,
				   (i.indoption::int2[])[k.n - 1] AS opt,
				   i.indcollation::oid[] AS colls
			  FROM pg_index i
			  CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(num, n)
			  JOIN pg_attribute ia ON ia.attrelid = i.indexrelid AND ia.attnum = k.n
			  LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.num
			  LEFT JOIN unnest(v_xrel, v_xnum, v_xnew) AS s(rel, num, new) ON s.rel = i.indrelid AND s.num = k.num
			  LEFT JOIN pg_opclass opc ON opc.oid = (i.indclass::oid[])[k.n - 1]
			  LEFT JOIN pg_namespace opcn ON opcn.oid = opc.opcnamespace
			 WHERE i.indexrelid = v_i.indexrelid
			 ORDER BY k.n
		LOOP
			IF v_c.num = 0 THEN
				v_expr := '(' || pg_get_indexdef(v_i.indexrelid, v_c.pos + 1, false) || ')';
			ELSIF v_c.new IS NOT NULL AND v_i.tkind <> 'p' THEN
				v_expr := quote_ident(v_c.new);
			ELSE
				v_expr := quote_ident(v_c.attname);
			END IF;
			IF v_c.pos >= v_i.indnkeyatts THEN
				v_incl := v_incl || v_expr;
				CONTINUE;
			END IF;
			IF v_c.new IS NOT NULL THEN
				-- the shadow column takes bigint's default operator class
				IF v_refuse AND (NOT v_c.opcdefault
								 OR NOT EXISTS (SELECT FROM pg_opclass x
												 WHERE x.opcmethod = (SELECT c.relam FROM pg_class c WHERE c.oid = v_i.indexrelid)
												   AND x.opcintype = 'int8'::regtype AND x.opcdefault)) THEN
					RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
						USING ERRCODE = 'feature_not_supported',
							  DETAIL = format('Index %s uses operator class %s, and the online conversion builds the new index with bigint''s default one.',
											  v_i.indexrelid::regclass, v_c.opcname),
							  HINT = v_offline;
				END IF;
			ELSE
				-- (a collation other than the column's, or the type's)
				v_k := coalesce(v_c.attcollation, (SELECT t.typcollation FROM pg_type t WHERE t.oid = v_c.itype));
				IF v_c.colls[v_c.pos] <> 0 AND v_c.colls[v_c.pos] <> v_k THEN
					v_expr := v_expr || ' COLLATE ' || (SELECT format('%I.%I', n.nspname, co.collname)
														  FROM pg_collation co JOIN pg_namespace n ON n.oid = co.collnamespace
														 WHERE co.oid = v_c.colls[v_c.pos]);
				END IF;
				IF NOT v_c.opcdefault THEN
					v_expr := v_expr || format(' %I.%I', v_c.opcnsp, v_c.opcname);
				END IF;
			END IF;
			IF v_c.opt & 1 <> 0 THEN
				v_expr := v_expr || ' DESC' || CASE WHEN v_c.opt & 2 = 0 THEN ' NULLS LAST' ELSE '' END;
			ELSIF v_c.opt & 2 <> 0 THEN
				v_expr := v_expr || ' NULLS FIRST';
			END IF;
			v_keys := v_keys || v_expr;
		END LOOP;

		-- A partitioned table's index is made again in the swap, after the
		-- column's: its partitions' indexes, built beside the old ones,
		-- are then there, and PostgreSQL attaches them to it rather than
		-- building any (as ALTER INDEX ... ATTACH PARTITION would, which a
		-- primary key of a partitioned table cannot take: USING INDEX is
		-- not for those); from the deepest level up, each level's index
		-- attaching the one below.
		IF v_i.tkind = 'p' THEN
			IF v_i.contype IN ('p', 'u') THEN
				v_stmt := format('ALTER TABLE %s ADD CONSTRAINT %I %s%s (%s)', v_i.indrelid::regclass, v_i.conname,
								 CASE v_i.contype WHEN 'p' THEN 'PRIMARY KEY' ELSE 'UNIQUE' END,
								 CASE WHEN v_i.nulls_not_distinct THEN ' NULLS NOT DISTINCT' ELSE '' END,
								 array_to_string(v_keys, ', '));
			ELSE
				v_stmt := format('CREATE %sINDEX %I ON %s USING %I (%s)',
								 CASE WHEN v_i.indisunique THEN 'UNIQUE ' ELSE '' END,
								 v_i.relname, v_i.indrelid::regclass, v_i.amname, array_to_string(v_keys, ', '));
			END IF;
			IF cardinality(v_incl) > 0 THEN
				v_stmt := v_stmt || ' INCLUDE (' || array_to_string(v_incl, ', ') || ')';
			END IF;
			IF v_i.nulls_not_distinct AND v_i.contype IS DISTINCT FROM 'p' AND v_i.contype IS DISTINCT FROM 'u' THEN
				v_stmt := v_stmt || ' NULLS NOT DISTINCT';
			END IF;
			IF v_i.reloptions IS NOT NULL THEN
				v_stmt := v_stmt || ' WITH (' || array_to_string(v_i.reloptions, ', ') || ')';
			END IF;
			IF v_i.reltablespace <> 0 THEN
				v_stmt := v_stmt || CASE WHEN v_i.contype IN ('p', 'u') THEN ' USING INDEX' ELSE '' END
						  || ' TABLESPACE ' || quote_ident((SELECT s.spcname FROM pg_tablespace s WHERE s.oid = v_i.reltablespace));
			END IF;
			IF v_i.contype IN ('p', 'u') THEN
				v_stmt := v_stmt || CASE WHEN v_i.condeferred THEN ' DEFERRABLE INITIALLY DEFERRED'
										 WHEN v_i.condeferrable THEN ' DEFERRABLE' ELSE '' END;
			END IF;
			v_parts := v_parts || v_stmt;
			v_pdepth := v_pdepth || v_i.depth;
			IF v_i.con_comment IS NOT NULL THEN
				v_parts := v_parts || format('COMMENT ON CONSTRAINT %I ON %s IS %L', v_i.conname, v_i.indrelid::regclass, v_i.con_comment);
				v_pdepth := v_pdepth || v_i.depth;
			END IF;
			IF v_i.index_comment IS NOT NULL THEN
				v_parts := v_parts || format('COMMENT ON INDEX %I.%I IS %L',
											 (SELECT n.nspname FROM pg_namespace n WHERE n.oid = v_i.relnamespace),
											 v_i.relname, v_i.index_comment);
				v_pdepth := v_pdepth || v_i.depth;
			END IF;
			IF v_i.indisreplident THEN
				v_parts := v_parts || format('ALTER TABLE %s REPLICA IDENTITY USING INDEX %I', v_i.indrelid::regclass, v_i.relname);
				v_pdepth := v_pdepth || v_i.depth;
			END IF;
			CONTINUE;
		END IF;

		v_stmt := format('CREATE %sINDEX CONCURRENTLY %I ON %s USING %I (%s)',
						 CASE WHEN v_i.indisunique THEN 'UNIQUE ' ELSE '' END,
						 v_i.relname || '_snowflake', v_i.indrelid::regclass, v_i.amname,
						 array_to_string(v_keys, ', '));
		IF cardinality(v_incl) > 0 THEN
			v_stmt := v_stmt || ' INCLUDE (' || array_to_string(v_incl, ', ') || ')';
		END IF;
		IF v_i.nulls_not_distinct THEN
			v_stmt := v_stmt || ' NULLS NOT DISTINCT';
		END IF;
		IF v_i.reloptions IS NOT NULL THEN
			v_stmt := v_stmt || ' WITH (' || array_to_string(v_i.reloptions, ', ') || ')';
		END IF;
		IF v_i.reltablespace <> 0 THEN
			v_stmt := v_stmt || ' TABLESPACE ' || quote_ident((SELECT s.spcname FROM pg_tablespace s WHERE s.oid = v_i.reltablespace));
		END IF;
		IF v_i.indpred IS NOT NULL THEN
			v_stmt := v_stmt || ' WHERE ' || pg_get_expr(v_i.indpred, v_i.indrelid);
		END IF;
		RETURN QUERY SELECT 'index'::text, v_i.indrelid::regclass, (v_i.relname || '_snowflake')::name, v_stmt;

		v_text := format('%I.%I', (SELECT n.nspname FROM pg_namespace n WHERE n.oid = v_i.relnamespace),
						 v_i.relname || '_snowflake');
		v_abort := v_abort || format('DROP INDEX IF EXISTS %s', v_text);
		IF v_i.contype IN ('p', 'u') THEN
			v_after := v_after || format('ALTER TABLE %s ADD CONSTRAINT %I %s USING INDEX %I%s',
										 v_i.indrelid::regclass, v_i.conname,
										 CASE v_i.contype WHEN 'p' THEN 'PRIMARY KEY' ELSE 'UNIQUE' END,
										 v_i.relname || '_snowflake',
										 CASE WHEN v_i.condeferred THEN ' DEFERRABLE INITIALLY DEFERRED'
											  WHEN v_i.condeferrable THEN ' DEFERRABLE' ELSE '' END);
			IF v_i.con_comment IS NOT NULL THEN
				v_after := v_after || format('COMMENT ON CONSTRAINT %I ON %s IS %L',
											 v_i.conname, v_i.indrelid::regclass, v_i.con_comment);
			END IF;
		ELSE
			v_after := v_after || format('ALTER INDEX %s RENAME TO %I', v_text, v_i.relname);
		END IF;
		IF v_i.indisreplident THEN
			v_after := v_after || format('ALTER TABLE %s REPLICA IDENTITY USING INDEX %I', v_i.indrelid::regclass, v_i.relname);
		END IF;
		IF v_i.indisclustered THEN
			v_after := v_after || format('ALTER TABLE %s CLUSTER ON %I', v_i.indrelid::regclass, v_i.relname);
		END IF;
		IF v_i.index_comment IS NOT NULL THEN
			v_after := v_after || format('COMMENT ON INDEX %I.%I IS %L',
										 (SELECT n.nspname FROM pg_namespace n WHERE n.oid = v_i.relnamespace),
										 v_i.relname, v_i.index_comment);
		END IF;
	END LOOP;

	-- (a foreign key referencing one partition would lose the key it
	-- references when the old column goes, before the swap could make it
	-- again)
	SELECT c.conname, c.conrelid::regclass AS r, c.confrelid::regclass AS p INTO v_r
	  FROM pg_constraint c
	  JOIN pg_class p ON p.oid = c.confrelid
	 WHERE c.contype = 'f' AND c.conparentid = 0 AND p.relispartition
	   AND EXISTS (SELECT FROM unnest(v_xrel, v_xnum) s(rel, num) WHERE s.rel = c.confrelid AND s.num = ANY (c.confkey))
	 ORDER BY 2, 1
	 LIMIT 1;
	IF v_refuse AND FOUND THEN
		RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = format('Foreign key "%s" of table %s references partition %s, not its partitioned table, and the online conversion makes only the partitioned table''s foreign keys again.',
								  v_r.conname, v_r.r, v_r.p),
				  HINT = v_offline;
	END IF;

	-- validate: the foreign keys on the shadow columns (NOT VALID, then
	-- validated if the old one was), and the not-null checks
	FOR v_c IN
		SELECT c.*, obj_description(c.oid, 'pg_constraint') AS con_comment,
			   (to_jsonb(c) -> 'confdelsetcols') AS delsetcols,
			   (SELECT string_agg(quote_ident(coalesce(s.new, a.attname)), ', ' ORDER BY k.n)
				  FROM unnest(c.conkey) WITH ORDINALITY AS k(num, n)
				  JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.num
				  LEFT JOIN unnest(v_srel, v_snum, v_snew) AS s(rel, num, new) ON s.rel = c.conrelid AND s.num = k.num) AS cols,
			   (SELECT string_agg(quote_ident(coalesce(s.new, a.attname)), ', ' ORDER BY k.n)
				  FROM unnest(c.confkey) WITH ORDINALITY AS k(num, n)
				  JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.num
				  LEFT JOIN unnest(v_srel, v_snum, v_snew) AS s(rel, num, new) ON s.rel = c.confrelid AND s.num = k.num) AS refcols,
			   (SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY k.n)
				  FROM unnest(c.conkey) WITH ORDINALITY AS k(num, n)
				  JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.num) AS oldcols,
			   (SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY k.n)
				  FROM unnest(c.confkey) WITH ORDINALITY AS k(num, n)
				  JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.num) AS oldrefcols,
			   (SELECT x.relkind FROM pg_class x WHERE x.oid = c.conrelid) AS kind,
			   (SELECT x.relkind FROM pg_class x WHERE x.oid = c.confrelid) AS refkind
		  FROM pg_constraint c
		 WHERE c.contype = 'f' AND c.conparentid = 0
		   AND EXISTS (SELECT FROM unnest(v_srel, v_snum) s(rel, num)
						WHERE (s.rel = c.conrelid AND s.num = ANY (c.conkey))
						   OR (s.rel = c.confrelid AND s.num = ANY (c.confkey)))
		 ORDER BY c.conrelid::regclass::text, c.conname
	LOOP
		IF v_refuse AND jsonb_typeof(v_c.delsetcols) = 'array' AND jsonb_array_length(v_c.delsetcols) > 0 THEN
			RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = format('Foreign key "%s" of table %s sets only some columns to NULL on delete, which the online conversion does not rebuild.',
									  v_c.conname, v_c.conrelid::regclass),
					  HINT = v_offline;
		END IF;
		-- (both partitioned: the new foreign key needs the swap's key, so
		-- the swap adds it NOT VALID, as below, which a partitioned table
		-- takes only from PostgreSQL 18 on; before, it would be checked
		-- under the swap's locks)
		IF v_refuse AND v_c.kind = 'p' AND v_c.refkind = 'p'
		   AND current_setting('server_version_num')::int4 < 180000 THEN
			RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = format('Foreign key "%s" of partitioned table %s references partitioned table %s, and before PostgreSQL 18 the online conversion cannot make it again without checking every row under its locks.',
									  v_c.conname, v_c.conrelid::regclass, v_c.confrelid::regclass),
					  HINT = v_offline;
		END IF;
		-- (what follows the columns, as the old one has it)
		v_text := format('%s ON UPDATE %s ON DELETE %s%s',
						 CASE v_c.confmatchtype WHEN 'f' THEN ' MATCH FULL' WHEN 'p' THEN ' MATCH PARTIAL' ELSE '' END,
						 CASE v_c.confupdtype WHEN 'r' THEN 'RESTRICT' WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL'
											  WHEN 'd' THEN 'SET DEFAULT' ELSE 'NO ACTION' END,
						 CASE v_c.confdeltype WHEN 'r' THEN 'RESTRICT' WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL'
											  WHEN 'd' THEN 'SET DEFAULT' ELSE 'NO ACTION' END,
						 CASE WHEN v_c.condeferred THEN ' DEFERRABLE INITIALLY DEFERRED'
							  WHEN v_c.condeferrable THEN ' DEFERRABLE' ELSE '' END);
		v_swap_fk := v_swap_fk || format('ALTER TABLE %s DROP CONSTRAINT %I', v_c.conrelid::regclass, v_c.conname);
		-- A foreign key referencing a partitioned table needs a unique
		-- index on the referenced columns of that table itself, which the
		-- swap makes (see the indexes above): it is added in the swap, NOT
		-- VALID, where it checks no row, and validated after it, a scan
		-- that blocks no writer.  (The old one held for every row, and
		-- each shadow column equals its column.)
		IF v_c.refkind = 'p' THEN
			v_fkparts := v_fkparts || format('ALTER TABLE %s ADD CONSTRAINT %I FOREIGN KEY (%s) REFERENCES %s (%s)%s NOT VALID',
				   v_c.conrelid::regclass, v_c.conname, v_c.oldcols, v_c.confrelid::regclass, v_c.oldrefcols, v_text);
			IF v_c.con_comment IS NOT NULL THEN
				v_fkparts := v_fkparts || format('COMMENT ON CONSTRAINT %I ON %s IS %L', v_c.conname,
												 v_c.conrelid::regclass, v_c.con_comment);
			END IF;
			IF v_c.convalidated THEN
				v_finish := v_finish || format('ALTER TABLE %s VALIDATE CONSTRAINT %I', v_c.conrelid::regclass, v_c.conname);
			END IF;
			CONTINUE;
		END IF;
		IF v_refuse AND octet_length(v_c.conname) > 63 - octet_length('_snowflake') THEN
			RAISE EXCEPTION 'cannot convert column "%" of table % online', col, tbl
				USING ERRCODE = 'name_too_long',
					  DETAIL = format('The name of the new foreign key of table %s, after "%s", would be too long.', v_c.conrelid::regclass, v_c.conname),
					  HINT = 'Rename the constraint, or convert with snowflake_convert_column().';
		END IF;
		-- The new foreign key, NOT VALID, then validated: on the table, or,
		-- for a partitioned table (which takes no NOT VALID foreign key
		-- before PostgreSQL 18), on each of its partitions that hold rows,
		-- as their old ones' copies are named; the swap then adds the
		-- partitioned table's, which takes them as its partitions' rather
		-- than checking a row again.
		FOR v_r IN
			WITH RECURSIVE tree(relid) AS (
				SELECT v_c.conrelid
				UNION ALL
				SELECT i.inhrelid
				  FROM pg_inherits i
				  JOIN tree t ON i.inhparent = t.relid
				  JOIN pg_class c ON c.oid = i.inhrelid AND c.relispartition
			), copies(oid) AS (
				SELECT v_c.oid
				UNION ALL
				SELECT x.oid FROM pg_constraint x JOIN copies y ON x.conparentid = y.oid
			)
			SELECT t.relid::regclass AS r,
				   coalesce((SELECT x.conname FROM pg_constraint x JOIN copies y ON y.oid = x.oid
							  WHERE x.conrelid = t.relid LIMIT 1), v_c.conname) AS was
			  FROM tree t JOIN pg_class c ON c.oid = t.relid
			 WHERE c.relkind <> 'p'
			 ORDER BY t.relid <> v_c.conrelid, t.relid::regclass::text
		LOOP
			IF mode = 'check' AND EXISTS (SELECT FROM pg_constraint x WHERE x.conrelid = v_r.r
											 AND x.conname = v_c.conname || '_snowflake') THEN
				RAISE EXCEPTION 'constraint "%" for relation % already exists', v_c.conname || '_snowflake', v_r.r
					USING ERRCODE = 'duplicate_object',
						  DETAIL = 'The online conversion names its new foreign key so.',
						  HINT = 'Rename that constraint, or convert with snowflake_convert_column().';
			END IF;
			RETURN QUERY SELECT 'constrain'::text, v_r.r, (v_c.conname || '_snowflake')::name,
				format('ALTER TABLE %s ADD CONSTRAINT %I FOREIGN KEY (%s) REFERENCES %s (%s)%s NOT VALID',
					   v_r.r, v_c.conname || '_snowflake', v_c.cols, v_c.confrelid::regclass, v_c.refcols, v_text);
			IF v_c.convalidated THEN
				v_validate := v_validate || format('%s|%s|ALTER TABLE %s VALIDATE CONSTRAINT %I',
												   v_r.r::oid, v_c.conname || '_snowflake',
												   v_r.r, v_c.conname || '_snowflake');
			END IF;
			v_abort := format('ALTER TABLE %s DROP CONSTRAINT IF EXISTS %I', v_r.r, v_c.conname || '_snowflake')
					   || v_abort;
			IF v_c.kind = 'p' THEN
				v_fkparts := v_fkparts || format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', v_r.r,
												 v_c.conname || '_snowflake', v_r.was);
			ELSE
				v_after := v_after || format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', v_r.r,
											 v_c.conname || '_snowflake', v_c.conname);
			END IF;
		END LOOP;
		IF v_c.kind = 'p' THEN
			v_fkparts := v_fkparts || format('ALTER TABLE %s ADD CONSTRAINT %I FOREIGN KEY (%s) REFERENCES %s (%s)%s%s',
				   v_c.conrelid::regclass, v_c.conname, v_c.oldcols, v_c.confrelid::regclass, v_c.oldrefcols, v_text,
				   CASE WHEN v_c.convalidated THEN '' ELSE ' NOT VALID' END);
			IF v_c.con_comment IS NOT NULL THEN
				v_fkparts := v_fkparts || format('COMMENT ON CONSTRAINT %I ON %s IS %L', v_c.conname,
												 v_c.conrelid::regclass, v_c.con_comment);
			END IF;
		ELSIF v_c.con_comment IS NOT NULL THEN
			v_after := v_after || format('COMMENT ON CONSTRAINT %I ON %s IS %L', v_c.conname,
										 v_c.conrelid::regclass, v_c.con_comment);
		END IF;
	END LOOP;
	FOR v_r IN
		SELECT s.rel, s.new FROM unnest(v_srel, v_snew, v_snn) WITH ORDINALITY AS s(rel, new, nn, n)
		 WHERE s.nn
		 ORDER BY array_position(v_stables, s.rel), s.n
	LOOP
		v_validate := format('%s|%s|ALTER TABLE %s VALIDATE CONSTRAINT %I', v_r.rel, v_r.new || '_not_null',
							 v_r.rel::regclass, v_r.new || '_not_null') || v_validate;
	END LOOP;
	-- Each shadow column equal to its column: checked on every write from
	-- the add step on (a write the trigger did not see, with triggers
	-- disabled or by a trigger firing after it, fails rather than being
	-- lost at the swap), and validated here, so that the swap needs no scan.
	FOR v_r IN
		SELECT s.rel, s.new FROM unnest(v_srel, v_snew) WITH ORDINALITY AS s(rel, new, n)
		 ORDER BY array_position(v_stables, s.rel), s.n
	LOOP
		v_validate := v_validate || format('%s|%s|ALTER TABLE %s VALIDATE CONSTRAINT %I', v_r.rel, v_r.new || '_equal',
										   v_r.rel::regclass, v_r.new || '_equal');
	END LOOP;
	FOREACH v_text IN ARRAY v_validate LOOP
		RETURN QUERY SELECT 'validate'::text, split_part(v_text, '|', 1)::oid::regclass,
			split_part(v_text, '|', 2)::name, substr(v_text, length(split_part(v_text, '|', 1)) + length(split_part(v_text, '|', 2)) + 3);
	END LOOP;
	FOR v_r IN
		SELECT t AS relid, (SELECT string_agg(quote_ident(s.new), ', ' ORDER BY s.n)
							  FROM unnest(v_srel, v_snew) WITH ORDINALITY AS s(rel, new, n) WHERE s.rel = t) AS cols
		  FROM unnest(v_stables) WITH ORDINALITY AS k(t, n)
		 ORDER BY k.n
	LOOP
		RETURN QUERY SELECT 'validate'::text, v_r.relid::regclass, NULL::name,
			format('ANALYZE %s (%s)', v_r.relid::regclass, v_r.cols);
	END LOOP;

	-- abort: the new foreign keys, indexes, triggers, checks and columns
	FOR v_r IN
		SELECT t AS relid,
			   (SELECT string_agg(CASE WHEN s.nn THEN format('DROP CONSTRAINT IF EXISTS %I, ', s.new || '_not_null') ELSE '' END
								  || format('DROP CONSTRAINT IF EXISTS %I, ', s.new || '_equal')
								  || format('DROP COLUMN IF EXISTS %I', s.new), ', ' ORDER BY s.n)
				  FROM unnest(v_srel, v_snew, v_snn) WITH ORDINALITY AS s(rel, new, nn, n) WHERE s.rel = t) AS drops
		  FROM unnest(v_stables) WITH ORDINALITY AS k(t, n)
		 ORDER BY k.n
	LOOP
		v_abort := v_abort || format('ALTER TABLE %s %s', v_r.relid::regclass, v_r.drops);
	END LOOP;
	IF mode = 'abort' THEN
		RETURN QUERY SELECT 'abort'::text, NULL::regclass, NULL::name,
			'LOCK TABLE ' || string_agg(t::regclass::text, ', ' ORDER BY k.n) || ' IN ACCESS EXCLUSIVE MODE'
		  FROM unnest(v_tables) WITH ORDINALITY AS k(t, n);
		RETURN QUERY SELECT 'abort'::text, NULL::regclass, NULL::name, s FROM unnest(v_abort) AS s;
		RETURN;
	END IF;

	-- swap: in one transaction, under the locks of its first statement
	RETURN QUERY SELECT 'swap'::text, NULL::regclass, NULL::name,
		'LOCK TABLE ' || string_agg(t::regclass::text, ', ' ORDER BY k.n) || ' IN ACCESS EXCLUSIVE MODE'
	  FROM unnest(v_tables) WITH ORDINALITY AS k(t, n);
	-- (object "before": what goes before the sequence's statements)
	RETURN QUERY SELECT 'swap'::text, t::regclass, 'before'::name,
		format('DROP TRIGGER zz_snowflake_sync ON %s', t::regclass)
	  FROM unnest(v_stables) WITH ORDINALITY AS k(t, n) ORDER BY k.n;
	RETURN QUERY SELECT 'swap'::text, NULL::regclass, 'before'::name, s FROM unnest(v_swap_fk) AS s;
	-- the sequence, identity and default of the key, as offline (object
	-- "sequence": the swap computes them again under its locks)
	EXECUTE format('SELECT * FROM %I._snowflake_convert_obstacles($1::pg_catalog.regclass,
			$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.oid[], $5::pg_catalog.name[],
			$6::pg_catalog.text, $7::pg_catalog.text)', nsp)
	   INTO v_plan
	  USING tbl, col, drop_sequence, rels, atts,
			(SELECT p.oid::regproc::text || '()' FROM pg_proc p
			  WHERE p.pronamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = nsp)
				AND p.proname = 'snowflake_nextval' AND p.pronargs = 0),
			v_call;
	IF NOT v_plan.converted THEN
		RETURN QUERY EXECUTE format(
			'SELECT ''swap''::text, NULL::regclass, ''sequence''::name, s
			   FROM %I._snowflake_convert_statements($1::pg_catalog.regclass, $2::pg_catalog.name,
					$3::pg_catalog.bool, ''{}''::pg_catalog.oid[], ''{}''::pg_catalog.name[],
					$4::pg_catalog.oid[], $5::pg_catalog.oid[], $6::pg_catalog.oid[], $7::pg_catalog.oid[],
					$8::pg_catalog.bool, ''{}''::pg_catalog.oid[], $9::pg_catalog.text) AS s', nsp)
		  USING tbl, col, drop_sequence, v_plan.identity_rels, v_plan.identity_seqs,
				v_plan.owned_seqs, v_plan.drop_seqs, v_plan.set_default OR v_key_shadowed, v_call;
	END IF;
	FOR v_r IN
		SELECT t AS relid,
			   (SELECT string_agg(format('DROP CONSTRAINT %I, DROP COLUMN %I', s.new || '_equal', s.att), ', '
								  ORDER BY s.n)
				  FROM unnest(v_srel, v_satt, v_snew) WITH ORDINALITY AS s(rel, att, new, n) WHERE s.rel = t) AS drops
		  FROM unnest(v_stables) WITH ORDINALITY AS k(t, n)
		 ORDER BY k.n
	LOOP
		RETURN QUERY SELECT 'swap'::text, v_r.relid::regclass, NULL::name,
			format('ALTER TABLE %s %s', v_r.relid::regclass, v_r.drops);
	END LOOP;
	RETURN QUERY SELECT 'swap'::text, s.rel::regclass, NULL::name,
		format('ALTER TABLE %s RENAME COLUMN %I TO %I', s.rel::regclass, s.new, s.att)
	  FROM unnest(v_srel, v_satt, v_snew) WITH ORDINALITY AS s(rel, att, new, n)
	 ORDER BY array_position(v_stables, s.rel), s.n;
	-- (SET NOT NULL finds the validated check and skips the scan; the
	-- check goes after it, not in the same ALTER TABLE, which would drop
	-- it first)
	FOR v_r IN
		SELECT s.rel, s.att, s.new FROM unnest(v_srel, v_satt, v_snew, v_snn) WITH ORDINALITY AS s(rel, att, new, nn, n)
		 WHERE s.nn
		 ORDER BY array_position(v_stables, s.rel), s.n
	LOOP
		RETURN QUERY SELECT 'swap'::text, v_r.rel::regclass, NULL::name,
			format('ALTER TABLE %s ALTER COLUMN %I SET NOT NULL', v_r.rel::regclass, v_r.att);
		RETURN QUERY SELECT 'swap'::text, v_r.rel::regclass, NULL::name,
			format('ALTER TABLE %s DROP CONSTRAINT %I', v_r.rel::regclass, v_r.new || '_not_null');
	END LOOP;
	-- the defaults of the other columns, the key's
	RETURN QUERY SELECT 'swap'::text, s.rel::regclass, NULL::name,
		format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', s.rel::regclass, s.att, pg_get_expr(ad.adbin, ad.adrelid))
	  FROM unnest(v_srel, v_snum, v_satt) WITH ORDINALITY AS s(rel, num, att, n)
	  JOIN pg_attrdef ad ON ad.adrelid = s.rel AND ad.adnum = s.num
	 WHERE NOT (s.rel = tbl AND s.att = col)
	 ORDER BY array_position(v_stables, s.rel), s.n;
	RETURN QUERY SELECT 'swap'::text, NULL::regclass, NULL::name, s FROM unnest(v_after) AS s;
	RETURN QUERY SELECT 'swap'::text, NULL::regclass, NULL::name, x.s
	  FROM unnest(v_parts, v_pdepth) WITH ORDINALITY AS x(s, d, n) ORDER BY x.d DESC, x.n;
	RETURN QUERY SELECT 'swap'::text, NULL::regclass, NULL::name, s FROM unnest(v_fkparts) AS s;
	IF v_key_shadowed THEN
		RETURN QUERY SELECT 'swap'::text, tbl, NULL::name,
			format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', tbl, col, v_call);
	END IF;
	RETURN QUERY SELECT 'swap'::text, s.rel::regclass, NULL::name,
		format('COMMENT ON COLUMN %s.%I IS %L', s.rel::regclass, s.att, col_description(s.rel, s.num))
	  FROM unnest(v_srel, v_snum, v_satt) WITH ORDINALITY AS s(rel, num, att, n)
	 WHERE col_description(s.rel, s.num) IS NOT NULL
	 ORDER BY array_position(v_stables, s.rel), s.n;
	-- after it, in transactions of their own
	RETURN QUERY SELECT 'finish'::text, NULL::regclass, NULL::name, s FROM unnest(v_finish) AS s;
END;
$plan$;

-- (partitioned tables: their partitions are part of what the plan depends on)
CREATE OR REPLACE FUNCTION _snowflake_online_fingerprint(rels oid[])
RETURNS text
LANGUAGE sql
STABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $fingerprint$
WITH RECURSIVE tree(relid) AS (
	SELECT unnest(rels)
	UNION
	SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.relid
)
SELECT md5(concat_ws('|',
	(SELECT string_agg(concat_ws(' ', a.attrelid, a.attnum, a.attname, a.atttypid, a.attnotnull,
								 a.attidentity, a.attisdropped, a.attacl), ',' ORDER BY a.attrelid, a.attnum)
	   FROM pg_attribute a WHERE a.attrelid = ANY (m.rels) AND a.attnum > 0),
	(SELECT string_agg(concat_ws(' ', d.adrelid, d.adnum, d.adbin), ',' ORDER BY d.adrelid, d.adnum)
	   FROM pg_attrdef d WHERE d.adrelid = ANY (m.rels)),
	(SELECT string_agg(concat_ws(' ', c.oid, c.conname, c.contype, c.convalidated, c.conrelid, c.confrelid),
					   ',' ORDER BY c.oid)
	   FROM pg_constraint c WHERE c.conrelid = ANY (m.rels) OR c.confrelid = ANY (m.rels)),
	(SELECT string_agg(concat_ws(' ', i.indexrelid, x.relname, i.indisvalid, i.indkey), ',' ORDER BY i.indexrelid)
	   FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid WHERE i.indrelid = ANY (m.rels)),
	(SELECT string_agg(concat_ws(' ', d.classid, d.objid, d.objsubid, d.refobjid, d.refobjsubid, d.deptype),
					   ',' ORDER BY d.classid, d.objid, d.objsubid, d.refobjid, d.refobjsubid)
	   FROM pg_depend d
	  WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = ANY (m.rels) AND d.refobjsubid > 0),
	(SELECT string_agg(concat_ws(' ', i.inhrelid, i.inhparent), ',' ORDER BY i.inhrelid, i.inhparent)
	   FROM pg_inherits i WHERE i.inhrelid = ANY (m.rels) OR i.inhparent = ANY (m.rels)),
	(SELECT string_agg(concat_ws(' ', c.oid, c.relowner, c.relkind, c.relname, c.relnamespace), ',' ORDER BY c.oid)
	   FROM pg_class c WHERE c.oid = ANY (m.rels)),
	(SELECT string_agg(concat_ws(' ', d.objoid, d.objsubid, md5(d.description)), ',' ORDER BY d.objoid, d.objsubid)
	   FROM pg_description d WHERE d.classoid = 'pg_class'::regclass AND d.objoid = ANY (m.rels))))
  FROM (SELECT array_agg(t.relid) AS rels FROM tree t) m;
$fingerprint$;

CREATE OR REPLACE FUNCTION _snowflake_online_state_problem(tbl regclass, col name, rels regclass[], atts name[],
												backfill_tables regclass[], nsp name, refuse boolean)
RETURNS text
LANGUAGE plpgsql
STABLE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $problem$
DECLARE
	v_rels oid[] := '{}';		-- the closure as the catalogs have it
	v_atts name[] := '{}';
	v_bad regclass;
	v_mark text;
	v_problem text;
BEGIN
	IF rels IS NULL OR atts IS NULL OR backfill_tables IS NULL
	   OR cardinality(rels) IS DISTINCT FROM cardinality(atts) OR cardinality(rels) = 0
	   OR rels[1] IS DISTINCT FROM tbl OR atts[1] IS DISTINCT FROM col THEN
		v_problem := 'its tables and columns do not start with the table''s own, or do not match';
	ELSE
		BEGIN
			EXECUTE format('SELECT coalesce(array_agg(c.rel::oid), ''{}''), coalesce(array_agg(c.att), ''{}'')
							  FROM %I._snowflake_convert_fk_closure($1::pg_catalog.regclass,
									$2::pg_catalog.name) AS c(rel, att)', nsp)
			   INTO v_rels, v_atts USING tbl, col;
		EXCEPTION WHEN undefined_column OR undefined_table OR object_not_in_prerequisite_state
					   OR wrong_object_type OR feature_not_supported OR insufficient_privilege THEN
			NULL;				-- (the column is gone: only the owner's rule is left)
		END;
		SELECT s.r::regclass INTO v_bad
		  FROM unnest(rels::oid[], atts) AS s(r, a)
		  JOIN pg_class c ON c.oid = s.r
		 WHERE NOT EXISTS (SELECT FROM unnest(v_rels, v_atts) AS k(r, a) WHERE k.r = s.r AND k.a = s.a)
		   AND NOT pg_has_role((SELECT t.relowner FROM pg_class t WHERE t.oid = tbl), c.relowner, 'USAGE')
		 LIMIT 1;
		IF v_bad IS NOT NULL THEN
			v_problem := format('it names table %s, which neither references the table nor belongs to its owner', v_bad);
		END IF;
	END IF;
	-- The tables are the conversion's own: every table it gives shadow
	-- columns (those of the row, and those whose columns are not bigint
	-- yet), if it still exists, has the trigger its add step marked.
	IF v_problem IS NULL THEN
		EXECUTE format('SELECT %I._snowflake_online_mark(s.started_at)
						  FROM %I.snowflake_online_state s WHERE s.tbl = $1', nsp, nsp)
		   INTO v_mark USING tbl;
		SELECT c.oid::regclass INTO v_bad
		  FROM pg_class c
		 WHERE ((c.oid = ANY (backfill_tables::oid[]) AND coalesce(pg_partition_root(c.oid), c.oid::regclass) = ANY (rels))
				OR EXISTS (SELECT FROM unnest(rels::oid[], atts) AS s(r, a)
							 JOIN pg_attribute a ON a.attrelid = s.r AND a.attname = s.a AND NOT a.attisdropped
							WHERE s.r = c.oid AND a.atttypid <> 'int8'::regtype))
		   AND NOT EXISTS (SELECT FROM pg_trigger t
							 JOIN pg_description d ON d.classoid = 'pg_trigger'::regclass AND d.objoid = t.oid
												  AND d.objsubid = 0
							WHERE t.tgrelid = c.oid AND t.tgname = 'zz_snowflake_sync'
							  AND d.description = v_mark)
		 LIMIT 1;
		IF v_bad IS NOT NULL THEN
			v_problem := format('table %s does not carry the conversion''s mark: it is not the table whose conversion the row began', v_bad);
		END IF;
	END IF;
	IF refuse AND v_problem IS NOT NULL THEN
		RAISE EXCEPTION 'the state of the online conversion of table % was not written by the procedure: %', tbl, v_problem
			USING ERRCODE = 'insufficient_privilege',
				  HINT = 'The procedure alone writes snowflake_online_state; the table''s owner can delete the row, and drop what the conversion added by hand.';
	END IF;
	RETURN v_problem;
END
$problem$;

CREATE OR REPLACE FUNCTION _snowflake_online_pending(tbl regclass, col name, drop_sequence boolean, rels regclass[],
										  atts name[], backfill_tables regclass[])
RETURNS text[]
LANGUAGE plpgsql
VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $pending$
DECLARE
	v_nsp name;
	v_pending text[] := '{}';
	v_r record;
	v_bad boolean;
BEGIN
	SELECT n.nspname INTO v_nsp
	  FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
	 WHERE e.extname = 'snowflake';
	EXECUTE format('SELECT %I._snowflake_online_state_problem($1::pg_catalog.regclass, $2::pg_catalog.name,
			$3::pg_catalog.regclass[], $4::pg_catalog.name[], $5::pg_catalog.regclass[], $6::pg_catalog.name,
			false::pg_catalog.bool) IS NOT NULL', v_nsp)
	   INTO v_bad USING tbl, col, rels, atts, backfill_tables, v_nsp;
	IF v_bad THEN
		RETURN NULL;
	END IF;
	FOR v_r IN EXECUTE format('SELECT * FROM %I._snowflake_online_plan($1::pg_catalog.regclass,
			$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.oid[], $5::pg_catalog.name[],
			$6::pg_catalog.name, ''run''::pg_catalog.text)', v_nsp)
				USING tbl, col, drop_sequence, rels::oid[], atts, v_nsp
	LOOP
		IF v_r.step = 'index'
		   AND NOT EXISTS (SELECT FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
							WHERE i.indrelid = v_r.rel AND c.relname = v_r.object AND i.indisvalid) THEN
			v_pending := v_pending || v_r.statement;
		END IF;
	END LOOP;
	RETURN v_pending;
EXCEPTION WHEN object_not_in_prerequisite_state OR feature_not_supported OR undefined_column
			   OR undefined_table OR wrong_object_type OR insufficient_privilege THEN
	RETURN NULL;
END
$pending$;

CREATE OR REPLACE FUNCTION _snowflake_online_locked(
	lock_stmt text,
	rels oid[],
	fingerprint text,
	stmts text[],
	nsp name)
RETURNS float8
LANGUAGE plpgsql
VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $locked$
DECLARE
	v_stmt text;
	v_now text;
	v_locked timestamptz;
BEGIN
	EXECUTE lock_stmt;
	v_locked := clock_timestamp();
	IF fingerprint IS NOT NULL THEN
		EXECUTE format('SELECT %I._snowflake_online_fingerprint($1::pg_catalog.oid[])', nsp) INTO v_now USING rels;
		IF v_now IS DISTINCT FROM fingerprint THEN
			RETURN NULL;
		END IF;
	END IF;
	FOREACH v_stmt IN ARRAY stmts LOOP
		EXECUTE v_stmt;
	END LOOP;
	RETURN extract(epoch FROM clock_timestamp() - v_locked);
END;
$locked$;

CREATE OR REPLACE FUNCTION _snowflake_online_below(tbl regclass, col name, next_id bigint, nsp name)
RETURNS void
LANGUAGE plpgsql
STABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $below$
DECLARE
	v_max bigint;
	v_text text;
BEGIN
	EXECUTE format('SELECT max(%I)::bigint FROM %s', col, tbl) INTO v_max;
	IF v_max >= next_id THEN
		EXECUTE format('SELECT %I.snowflake_timestamp($1::pg_catalog.int8)::text', nsp) INTO v_text USING v_max;
		RAISE EXCEPTION 'column "%" of table % holds values not below the next Snowflake id', col, tbl
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Its largest value is %s, which Snowflake ids reach only at %s: until then new ids could repeat existing values.', v_max, v_text),
				  HINT = 'Keep the column''s current default, or renumber those rows first.';
	END IF;
END
$below$;

CREATE OR REPLACE FUNCTION _snowflake_online_swap(
	lock_stmt text,
	rels oid[],
	fingerprint text,
	before text[],
	after text[],
	tbl regclass,
	col name,
	drop_sequence boolean,
	nsp name,
	next_id bigint,
	identity_rels oid[],
	identity_seqs oid[],
	owned_seqs oid[],
	drop_seqs oid[],
	set_default boolean)
RETURNS float8
LANGUAGE plpgsql
VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
SET client_min_messages = warning
AS $swap$
DECLARE
	v_stmt text;
	v_now text;
	v_locked timestamptz;
BEGIN
	EXECUTE lock_stmt;
	v_locked := clock_timestamp();
	EXECUTE format('SELECT %I._snowflake_online_fingerprint($1::pg_catalog.oid[])', nsp) INTO v_now USING rels;
	IF v_now IS DISTINCT FROM fingerprint THEN
		RETURN NULL;
	END IF;
	EXECUTE format('SELECT %I._snowflake_online_below($1::pg_catalog.regclass, $2::pg_catalog.name,
			$3::pg_catalog.int8, $4::pg_catalog.name)', nsp) USING tbl, col, next_id, nsp;
	FOREACH v_stmt IN ARRAY before LOOP
		EXECUTE v_stmt;
	END LOOP;
	FOR v_stmt IN EXECUTE format(
		'SELECT s FROM %I._snowflake_convert_statements($1::pg_catalog.regclass, $2::pg_catalog.name,
				$3::pg_catalog.bool, ''{}''::pg_catalog.oid[], ''{}''::pg_catalog.name[],
				$4::pg_catalog.oid[], $5::pg_catalog.oid[], $6::pg_catalog.oid[], $7::pg_catalog.oid[],
				$8::pg_catalog.bool, ''{}''::pg_catalog.oid[], $9::pg_catalog.text) AS s', nsp)
		USING tbl, col, drop_sequence, identity_rels, identity_seqs, owned_seqs, drop_seqs, set_default,
			  format('%I.snowflake_nextval()', nsp)
	LOOP
		EXECUTE v_stmt;
	END LOOP;
	FOREACH v_stmt IN ARRAY after LOOP
		EXECUTE v_stmt;
	END LOOP;
	EXECUTE format('DELETE FROM %I.snowflake_online_state WHERE tbl = $1', nsp) USING tbl;
	RETURN extract(epoch FROM clock_timestamp() - v_locked);
END;
$swap$;

-- The tables whose rows the backfill sets: of each table of the closure
-- whose column is not bigint yet (a root), the table itself or, for a
-- partitioned one, its partitions that hold rows, at every level; tbl's
-- first, then by name.  And the roots.  From the catalogs as they are now.
CREATE FUNCTION _snowflake_online_leaves(tbl regclass, rels oid[], atts name[], OUT tables oid[], OUT roots oid[])
RETURNS record
LANGUAGE sql
STABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $leaves$
WITH RECURSIVE r(t) AS (
	SELECT DISTINCT rels[k.n]
	  FROM generate_subscripts(rels, 1) AS k(n)
	  JOIN pg_attribute a ON a.attrelid = rels[k.n] AND a.attname = atts[k.n] AND NOT a.attisdropped
	 WHERE a.atttypid <> 'int8'::regtype
), tree(root, relid) AS (
	SELECT r.t, r.t FROM r
	UNION ALL
	SELECT tr.root, i.inhrelid
	  FROM tree tr
	  JOIN pg_inherits i ON i.inhparent = tr.relid
	  JOIN pg_class c ON c.oid = i.inhrelid AND c.relispartition
)
SELECT coalesce(array_agg(tr.relid ORDER BY tr.root <> tbl::oid, tr.root::regclass::text, tr.relid::regclass::text)
					FILTER (WHERE c.relkind <> 'p'), '{}'),
	   (SELECT coalesce(array_agg(r.t), '{}') FROM r)
  FROM tree tr JOIN pg_class c ON c.oid = tr.relid
$leaves$;

COMMENT ON FUNCTION _snowflake_online_leaves(regclass, oid[], name[]) IS
'internal to snowflake_convert_column_online(): the tables the backfill sets, and the tables they belong to';

-- Partitions attached, created, detached or dropped since the conversion
-- began, followed, before each step: a partition of a converted table that
-- the state row does not list joins the backfill, its trigger (the
-- partitioned table's, which PostgreSQL gives every partition) marked as
-- the add step marks the others, and a conversion past the backfill goes
-- back to it (an attached table brings rows whose shadow columns nothing
-- set, and none of the index step's indexes); a listed table that is no
-- longer one leaves the row, with a NOTICE of what the conversion left on
-- it.  The new tables come from the catalogs, never from the row.  Returns
-- whether the row changed.
CREATE FUNCTION _snowflake_online_follow(tbl regclass, nsp name)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $follow$
DECLARE
	v_state record;
	v_now oid[];
	v_kept oid[];
	v_gone oid[];
	v_new oid[];
	v_mark text;
	v_pos integer;
	v_after text[];
	v_step text;
	v_t oid;
	v_left text;
	v_rows bigint;
BEGIN
	EXECUTE format('SELECT * FROM %I.snowflake_online_state WHERE tbl = $1 FOR UPDATE', nsp) INTO v_state USING tbl;
	IF v_state.tbl IS NULL THEN
		RETURN false;
	END IF;
	EXECUTE format('SELECT l.tables FROM %I._snowflake_online_leaves($1::pg_catalog.regclass,
			$2::pg_catalog.oid[], $3::pg_catalog.name[]) AS l', nsp)
	   INTO v_now USING tbl, v_state.rels::oid[], v_state.atts;
	SELECT coalesce(array_agg(b.t ORDER BY b.n) FILTER (WHERE b.t = ANY (v_now)), '{}'),
		   coalesce(array_agg(b.t ORDER BY b.n) FILTER (WHERE NOT b.t = ANY (v_now)), '{}')
	  INTO v_kept, v_gone
	  FROM unnest(v_state.backfill_tables::oid[]) WITH ORDINALITY AS b(t, n);
	v_new := ARRAY(SELECT x.t FROM unnest(v_now) WITH ORDINALITY AS x(t, n)
					WHERE NOT x.t = ANY (v_state.backfill_tables::oid[]) ORDER BY x.n);
	IF v_gone = '{}' AND v_new = '{}' THEN
		RETURN false;
	END IF;
	-- where the backfill goes on: at the table it was at, if still there;
	-- else the next one; a new table sends a later step back to it
	v_t := v_state.backfill_tables[v_state.backfill_table];
	v_step := v_state.step;
	v_after := NULL;
	IF v_step = 'backfill' AND v_t = ANY (v_kept) THEN
		v_pos := array_position(v_kept, v_t);
		v_after := v_state.backfill_after;
	ELSIF v_step = 'backfill' THEN
		v_pos := 1 + (SELECT count(*) FROM unnest(v_state.backfill_tables[1:v_state.backfill_table - 1]) AS b(t)
					   WHERE b.t = ANY (v_kept));
	ELSE
		v_pos := cardinality(v_kept) + 1;
		IF v_new <> '{}' THEN
			v_step := 'backfill';
		END IF;
	END IF;
	EXECUTE format('SELECT %I._snowflake_online_mark($1::pg_catalog.timestamptz)', nsp)
	   INTO v_mark USING v_state.started_at;
	FOREACH v_t IN ARRAY v_new LOOP
		EXECUTE format('COMMENT ON TRIGGER zz_snowflake_sync ON %s IS %L', v_t::regclass, v_mark);
	END LOOP;
	SELECT coalesce(sum(greatest(c.reltuples, 0)), 0)::bigint INTO v_rows FROM pg_class c WHERE c.oid = ANY (v_new);
	EXECUTE format('UPDATE %I.snowflake_online_state
					   SET backfill_tables = $2::pg_catalog.oid[]::pg_catalog.regclass[], backfill_table = $3,
						   backfill_after = $4, step = $5, rows_estimated = rows_estimated + $6, updated_at = now()
					 WHERE tbl = $1', nsp)
	   USING tbl, v_kept || v_new, v_pos, v_after, v_step, v_rows;
	FOREACH v_t IN ARRAY v_new LOOP
		RAISE NOTICE 'table % became a partition of the conversion''s tables since it began: its rows are backfilled%',
			v_t::regclass, CASE WHEN v_state.step <> 'backfill' THEN ' (back to the backfill step)' ELSE '' END;
	END LOOP;
	FOREACH v_t IN ARRAY v_gone LOOP
		-- (a dropped one: nothing to say)
		CONTINUE WHEN NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = v_t);
		SELECT string_agg(format('DROP COLUMN %I', a.attname), ', ' ORDER BY a.attnum) INTO v_left
		  FROM pg_attribute a
		 WHERE a.attrelid = v_t AND NOT a.attisdropped
		   AND a.attname IN (SELECT s.a || '_snowflake' FROM unnest(v_state.atts) AS s(a));
		RAISE NOTICE 'table % is no longer a partition of the conversion''s tables: the conversion leaves it', v_t::regclass
			USING HINT = CASE WHEN v_left IS NULL THEN 'Nothing of the conversion is left on it.'
							  ELSE format('Its shadow columns, their checks and indexes are left on it: ALTER TABLE %s %s.',
										  v_t::regclass, v_left) END;
	END LOOP;
	RETURN true;
END
$follow$;

COMMENT ON FUNCTION _snowflake_online_follow(regclass, name) IS
'internal to snowflake_convert_column_online(): the partitions attached or detached since the conversion began';

CREATE OR REPLACE PROCEDURE snowflake_convert_column_online(
	tbl regclass,
	col name DEFAULT 'id',
	batch_size integer DEFAULT 10000,
	lock_timeout interval DEFAULT '500ms',
	max_retries integer DEFAULT 10,
	stop_after text DEFAULT NULL,
	abort boolean DEFAULT false,
	drop_sequence boolean DEFAULT false,
	dry_run boolean DEFAULT false)
LANGUAGE plpgsql
SECURITY INVOKER
AS $online$
DECLARE
	v_nsp pg_catalog.name;
	v_ours pg_catalog.text;
	v_relkind pg_catalog."char";
	v_state record;
	v_lock record;
	v_plan record;
	v_r record;
	v_sql pg_catalog.text;
	v_kind pg_catalog.text;		-- the step's locked transaction, if any
	v_lock_stmt pg_catalog.text;
	v_fp pg_catalog.text;
	v_stmts pg_catalog.text[];
	v_after pg_catalog.text[];
	v_rels pg_catalog.oid[];
	v_atts pg_catalog.name[];
	v_tables pg_catalog.oid[];
	v_try pg_catalog.int4 := 0;
	v_failed pg_catalog.text;
	v_lt pg_catalog.text;
	v_key pg_catalog.int8;
	v_bool pg_catalog.bool;
	v_held pg_catalog.float8;	-- how long a step held its locks, in seconds
	v_n pg_catalog.int8;
	v_last pg_catalog.text[];
	v_b record;
	v_t pg_catalog.regclass;
	v_started pg_catalog.timestamptz;
	v_begun pg_catalog.timestamptz;	-- the conversion's start, as its add step records it
	v_mark pg_catalog.text;
	v_noticed pg_catalog.timestamptz;
	v_holder record;		-- a session holding a long lock on a table of the step
	v_done0 pg_catalog.int8;
	v_swept pg_catalog.int8 := 0;
	v_by_block pg_catalog.bool;
	v_rate pg_catalog.float8;
	v_pending pg_catalog.text[];
	v_dry_rows pg_catalog.int4 := 0;
	v_stop pg_catalog.bool := false; -- nothing more to do after the checks
	v_finish pg_catalog.text[];	-- the swap's validations, after it
	v_roots pg_catalog.oid[];
BEGIN
	PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
	IF tbl IS NULL OR col IS NULL OR batch_size IS NULL OR lock_timeout IS NULL OR max_retries IS NULL
	   OR abort IS NULL OR drop_sequence IS NULL OR dry_run IS NULL THEN
		RAISE EXCEPTION 'arguments of snowflake_convert_column_online() must not be null'
			USING ERRCODE = 'null_value_not_allowed',
				  HINT = 'Only stop_after may be null.';
	END IF;
	IF batch_size < 1 OR max_retries < 0 OR lock_timeout <= interval '0'
	   OR lock_timeout > interval '1 hour' OR stop_after NOT IN ('add', 'backfill', 'validate') THEN
		RAISE EXCEPTION 'invalid argument of snowflake_convert_column_online()'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'batch_size must be positive, max_retries at least 0, lock_timeout between 0 and 1 hour (excluded) and stop_after one of add, backfill, validate or null.';
	END IF;
	-- (half of it: see above)
	v_lt := greatest(ceil(extract(epoch FROM lock_timeout) * 1000 / 2), 1)::bigint::text;

	SELECT n.nspname, p.oid::regproc::text || '()' INTO v_nsp, v_ours
	  FROM pg_depend d
	  JOIN pg_extension e ON e.oid = d.refobjid
	  JOIN pg_proc p ON p.oid = d.objid
	  JOIN pg_namespace n ON n.oid = p.pronamespace
	 WHERE d.classid = 'pg_proc'::regclass
	   AND d.refclassid = 'pg_extension'::regclass
	   AND d.deptype = 'e'
	   AND e.extname = 'snowflake'
	   AND p.proname = 'snowflake_nextval'
	   AND p.pronargs = 0;

	-- As offline: a table, the caller's.
	SELECT c.relkind INTO v_relkind FROM pg_class c WHERE c.oid = tbl;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'relation with OID % does not exist', tbl::oid
			USING ERRCODE = 'undefined_table';
	END IF;
	IF v_relkind NOT IN ('r', 'p') THEN
		RAISE EXCEPTION '% is not a table', tbl
			USING ERRCODE = 'wrong_object_type',
				  DETAIL = format('It is %s; only ordinary and partitioned tables can be converted.',
								  CASE v_relkind
									  WHEN 'v' THEN 'a view'
									  WHEN 'm' THEN 'a materialized view'
									  WHEN 'f' THEN 'a foreign table'
									  WHEN 'S' THEN 'a sequence'
									  WHEN 'c' THEN 'a composite type'
									  ELSE 'an index'
								  END);
	END IF;
	IF NOT pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = tbl), 'USAGE') THEN
		RAISE EXCEPTION 'must be owner of table %', tbl
			USING ERRCODE = 'insufficient_privilege';
	END IF;

	EXECUTE format('SELECT * FROM %I.snowflake_online_state WHERE tbl = $1', v_nsp) INTO v_state USING tbl;
	IF v_state.tbl IS NOT NULL AND v_state.col <> col THEN
		RAISE EXCEPTION 'an online conversion of column "%" of table % is in progress', v_state.col, tbl
			USING ERRCODE = 'object_in_use',
				  HINT = 'Finish it or abort it first.';
	END IF;
	-- (and before each step: see _snowflake_online_state_problem())
	IF v_state.tbl IS NOT NULL THEN
		EXECUTE format('SELECT %I._snowflake_online_state_problem($1::pg_catalog.regclass,
				$2::pg_catalog.name, $3::pg_catalog.regclass[], $4::pg_catalog.name[],
				$5::pg_catalog.regclass[], $6::pg_catalog.name, true::pg_catalog.bool)', v_nsp)
		   USING tbl, v_state.col, v_state.rels, v_state.atts, v_state.backfill_tables, v_nsp;
	END IF;

	IF NOT dry_run THEN
		IF current_setting('transaction_isolation') <> 'read committed' THEN
			RAISE EXCEPTION 'snowflake_convert_column_online() cannot run in a % transaction',
							upper(current_setting('transaction_isolation'))
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = 'Each step reads the catalogs and the rows under its own locks, which needs a new snapshot for each statement.',
					  HINT = 'Call it with default_transaction_isolation set to READ COMMITTED.';
		END IF;

		-- One session at a time per table.  Taken again by the same session,
		-- it only counts up: every hold is released at the end.
		v_key := (1936617335::bigint << 32) | tbl::oid::bigint;
		IF NOT pg_try_advisory_lock(v_key) THEN
			RAISE EXCEPTION 'another session is converting table % online', tbl
				USING ERRCODE = 'object_in_use',
					  DETAIL = format('Session %s holds the conversion''s advisory lock.',
									  (SELECT string_agg(l.pid::text, ', ') FROM pg_locks l
									    WHERE l.locktype = 'advisory' AND l.granted
										  AND l.classid = 1936617335 AND l.objid = tbl::oid AND l.objsubid = 1)),
					  HINT = 'Wait for it to finish; a session whose call failed holds the lock until it calls the procedure again or disconnects.';
		END IF;
	END IF;

	-- The refusals, offline's then online's, before anything changes (and
	-- again before the add step), or the dry run; the advisory lock let go
	-- if the call stops here.  (pg_get_expr() takes ACCESS SHARE on the
	-- table from PostgreSQL 15 on: the lock above refuses a second session
	-- before it would queue behind a first one's locks.)
	BEGIN
		IF abort THEN
			IF v_state.tbl IS NULL THEN
				RAISE NOTICE 'no online conversion of table % is in progress', tbl;
				v_stop := true;
			ELSIF dry_run THEN
				FOR v_r IN EXECUTE format('SELECT * FROM %I._snowflake_online_plan($1::pg_catalog.regclass,
						$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.oid[],
						$5::pg_catalog.name[], $6::pg_catalog.name, ''abort''::pg_catalog.text)', v_nsp)
							USING tbl, col, v_state.drop_sequence, v_state.rels::oid[], v_state.atts, v_nsp
				LOOP
					IF v_r.step = 'abort' THEN
						RAISE NOTICE '%: %', v_r.step, v_r.statement;
					END IF;
				END LOOP;
				v_stop := true;
			END IF;
		ELSE
			EXECUTE format('SELECT coalesce(array_agg(c.rel::oid ORDER BY c.n), ''{}'') AS rels,
								   coalesce(array_agg(c.att ORDER BY c.n), ''{}'') AS atts
							  FROM %I._snowflake_convert_fk_closure($1::pg_catalog.regclass,
									$2::pg_catalog.name) WITH ORDINALITY AS c(rel, att, n)', v_nsp)
			   INTO v_lock USING tbl, col;
			EXECUTE format('SELECT * FROM %I._snowflake_convert_obstacles($1::pg_catalog.regclass,
					$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.oid[], $5::pg_catalog.name[],
					$6::pg_catalog.text, $7::pg_catalog.text)', v_nsp)
			   INTO v_plan
			  USING tbl, col, drop_sequence, v_lock.rels, v_lock.atts, v_ours, format('%I.snowflake_nextval()', v_nsp);
			IF v_plan.converted AND v_state.tbl IS NULL THEN
				RAISE NOTICE 'column "%" of table % already takes Snowflake ids, skipping', col, tbl;
				v_stop := true;
			ELSE
				IF v_state.tbl IS NOT NULL THEN
					v_lock.rels := v_state.rels::oid[];
					v_lock.atts := v_state.atts;
					drop_sequence := v_state.drop_sequence;
				END IF;
				FOR v_r IN EXECUTE format('SELECT * FROM %I._snowflake_online_plan($1::pg_catalog.regclass,
						$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.oid[],
						$5::pg_catalog.name[], $6::pg_catalog.name, $7::pg_catalog.text)', v_nsp)
							USING tbl, col, drop_sequence, v_lock.rels, v_lock.atts, v_nsp,
								  CASE WHEN v_state.tbl IS NULL THEN 'check' ELSE 'run' END
				LOOP
					IF dry_run THEN
						RAISE NOTICE '%: %', v_r.step, v_r.statement;
						v_dry_rows := v_dry_rows + 1;
					END IF;
				END LOOP;
				IF v_state.tbl IS NULL AND NOT v_plan.converted THEN
					EXECUTE format('SELECT %I._snowflake_online_below($1::pg_catalog.regclass,
							$2::pg_catalog.name, %I.snowflake_nextval()::pg_catalog.int8,
							$3::pg_catalog.name)', v_nsp, v_nsp)
					  USING tbl, col, v_nsp;
				END IF;
				IF dry_run THEN
					IF v_state.tbl IS NOT NULL THEN
						RAISE NOTICE 'in progress: at step %', v_state.step;
					END IF;
					v_stop := true;
				END IF;
			END IF;
		END IF;
	EXCEPTION WHEN OTHERS THEN
		IF NOT dry_run THEN
			EXECUTE format('SELECT %I._snowflake_online_unlock($1::pg_catalog.regclass)', v_nsp) USING tbl;
		END IF;
		RAISE;
	END;
	IF v_stop THEN
		IF NOT dry_run THEN
			EXECUTE format('SELECT %I._snowflake_online_unlock($1::pg_catalog.regclass)', v_nsp) USING tbl;
		END IF;
		RETURN;
	END IF;

	-- Here a call inside a transaction block, or from a function, fails
	-- ("invalid transaction termination") before anything has changed.
	COMMIT;
	PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

	<<steps>>
	LOOP
		EXECUTE format('SELECT * FROM %I.snowflake_online_state WHERE tbl = $1', v_nsp) INTO v_state USING tbl;
		IF v_state.tbl IS NOT NULL THEN
			EXECUTE format('SELECT %I._snowflake_online_state_problem($1::pg_catalog.regclass,
					$2::pg_catalog.name, $3::pg_catalog.regclass[], $4::pg_catalog.name[],
					$5::pg_catalog.regclass[], $6::pg_catalog.name, true::pg_catalog.bool)', v_nsp)
			   USING tbl, v_state.col, v_state.rels, v_state.atts, v_state.backfill_tables, v_nsp;
			-- (partitions attached or detached since: _snowflake_online_follow())
			IF NOT abort THEN
				EXECUTE format('SELECT %I._snowflake_online_follow($1::pg_catalog.regclass, $2::pg_catalog.name)', v_nsp)
				   INTO v_bool USING tbl, v_nsp;
				IF v_bool THEN
					COMMIT;
					PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
					CONTINUE steps;
				END IF;
			END IF;
		END IF;
		-- (the step to do next, from 1, against the last one to do)
		v_n := coalesce(array_position(ARRAY['backfill', 'index', 'validate', 'swap'], v_state.step::text) + 1, 1);
		IF NOT abort AND v_n > coalesce(array_position(ARRAY['add', 'backfill', 'index', 'validate'], stop_after), 5) THEN
			RAISE NOTICE 'stopping after step %, as asked', stop_after;
			EXIT steps;
		END IF;
		-- The step's transaction that takes locks blocking writers, if it
		-- has one: planned first, without locks, in a transaction of its
		-- own; then run under lock_timeout, retried (see
		-- _snowflake_online_fingerprint()).
		v_kind := NULL;
		v_fp := NULL;
		v_stmts := '{}';
		v_after := '{}';
		v_finish := '{}';
		IF abort THEN
			EXIT steps WHEN v_state.tbl IS NULL;
			v_kind := 'abort';
			SELECT coalesce(array_agg(r ORDER BY n), '{}'), coalesce(array_agg(a ORDER BY n), '{}')
			  INTO v_rels, v_atts
			  FROM unnest(v_state.rels::oid[], v_state.atts) WITH ORDINALITY AS s(r, a, n)
			 WHERE EXISTS (SELECT FROM pg_class c WHERE c.oid = s.r);	-- (not those dropped since)
			FOR v_r IN EXECUTE format('SELECT * FROM %I._snowflake_online_plan($1::pg_catalog.regclass,
					$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.oid[], $5::pg_catalog.name[],
					$6::pg_catalog.name, ''abort''::pg_catalog.text)', v_nsp)
						USING tbl, v_state.col, v_state.drop_sequence, v_rels, v_atts, v_nsp
			LOOP
				CONTINUE WHEN v_r.step <> 'abort';
				IF v_r.statement LIKE 'LOCK TABLE %' THEN
					v_lock_stmt := v_r.statement;
				ELSE
					v_stmts := v_stmts || v_r.statement;
				END IF;
			END LOOP;
			v_stmts := v_stmts || format('DELETE FROM %I.snowflake_online_state WHERE tbl = %s', v_nsp, tbl::oid);
		ELSIF v_state.tbl IS NULL OR v_state.step = 'swap' THEN
			-- the closure and the refusals, as at the start
			EXECUTE format('SELECT coalesce(array_agg(c.rel::oid ORDER BY c.n), ''{}'') AS rels,
								   coalesce(array_agg(c.att ORDER BY c.n), ''{}'') AS atts
							  FROM %I._snowflake_convert_fk_closure($1::pg_catalog.regclass,
									$2::pg_catalog.name) WITH ORDINALITY AS c(rel, att, n)', v_nsp)
			   INTO v_lock USING tbl, col;
			v_rels := v_lock.rels;
			v_atts := v_lock.atts;
			EXECUTE format('SELECT * FROM %I._snowflake_convert_obstacles($1::pg_catalog.regclass,
					$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.oid[], $5::pg_catalog.name[],
					$6::pg_catalog.text, $7::pg_catalog.text)', v_nsp)
			   INTO v_plan
			  USING tbl, col, coalesce(v_state.drop_sequence, drop_sequence), v_rels, v_atts, v_ours,
					format('%I.snowflake_nextval()', v_nsp);
			IF v_state.tbl IS NULL THEN
				IF v_plan.converted THEN
					RAISE NOTICE 'column "%" of table % already takes Snowflake ids, skipping', col, tbl;
					EXIT steps;
				END IF;
				v_kind := 'add';
				RAISE NOTICE 'step 1 of 5, add: shadow columns and triggers on %', tbl;
			ELSE
				IF v_plan.converted
				   OR EXISTS (SELECT unnest(v_rels)::regclass, unnest(v_atts)
							  EXCEPT SELECT unnest(v_state.rels), unnest(v_state.atts))
				   OR EXISTS (SELECT unnest(v_state.rels), unnest(v_state.atts)
							  EXCEPT SELECT unnest(v_rels)::regclass, unnest(v_atts)) THEN
					RAISE EXCEPTION 'the columns referencing column "%" of table % changed during its online conversion', col, tbl
						USING ERRCODE = 'object_not_in_prerequisite_state',
							  DETAIL = 'A foreign key was added or dropped, or a column changed, after the conversion began: the shadow columns no longer match.',
							  HINT = format('Undo the conversion with CALL snowflake_convert_column_online(%L, %L, abort => true), then start it again.', tbl::text, col);
				END IF;
				-- every shadow column still checked equal to its column,
				-- and the check validated: no write since the validation
				-- can have left them apart (the fingerprint, compared
				-- under the swap's locks, holds that until then)
				SELECT format('%s.%I', s.r::regclass, s.a || '_snowflake_equal') AS what,
					   c.conname IS NOT NULL AS present
				  INTO v_r
				  FROM unnest(v_state.rels::oid[], v_state.atts) AS s(r, a)
				  JOIN pg_attribute x ON x.attrelid = s.r AND x.attname = s.a || '_snowflake' AND NOT x.attisdropped
				  LEFT JOIN pg_constraint c ON c.conrelid = s.r AND c.conname = s.a || '_snowflake_equal'
											AND c.contype = 'c'
				 WHERE c.conname IS NULL OR NOT c.convalidated
				 LIMIT 1;
				IF FOUND AND NOT v_r.present THEN
					RAISE EXCEPTION 'the check % of the online conversion of table % is gone', v_r.what, tbl
						USING ERRCODE = 'object_not_in_prerequisite_state',
							  DETAIL = 'It keeps each shadow column equal to its column until the swap; without it, a write made with triggers disabled could be lost.',
							  HINT = format('Undo the conversion with CALL snowflake_convert_column_online(%L, %L, abort => true), then start it again.', tbl::text, col);
				ELSIF FOUND THEN
					RAISE NOTICE 'check % is not validated: back to the validate step', v_r.what;
					EXECUTE format('UPDATE %I.snowflake_online_state SET step = ''validate'', updated_at = now() WHERE tbl = $1', v_nsp)
					   USING tbl;
					COMMIT;
					PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
					CONTINUE steps;
				END IF;
				-- every index the swap attaches or turns into a key built:
				-- a partition created since the index step has none yet
				EXECUTE format('SELECT %I._snowflake_online_pending($1::pg_catalog.regclass, $2::pg_catalog.name,
						$3::pg_catalog.bool, $4::pg_catalog.regclass[], $5::pg_catalog.name[],
						$6::pg_catalog.regclass[])', v_nsp)
				   INTO v_pending
				  USING tbl, v_state.col, v_state.drop_sequence, v_state.rels, v_state.atts, v_state.backfill_tables;
				IF v_pending <> '{}' THEN
					RAISE NOTICE 'indexes of the conversion are missing (on a partition created since?): back to the index step';
					EXECUTE format('UPDATE %I.snowflake_online_state SET step = ''index'', updated_at = now() WHERE tbl = $1', v_nsp)
					   USING tbl;
					COMMIT;
					PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
					CONTINUE steps;
				END IF;
				v_kind := 'swap';
				RAISE NOTICE 'step 5 of 5, swap';
			END IF;
			FOR v_r IN EXECUTE format('SELECT * FROM %I._snowflake_online_plan($1::pg_catalog.regclass,
					$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.oid[], $5::pg_catalog.name[],
					$6::pg_catalog.name, $7::pg_catalog.text)', v_nsp)
						USING tbl, col, coalesce(v_state.drop_sequence, drop_sequence), v_rels, v_atts, v_nsp,
							  CASE v_kind WHEN 'add' THEN 'check' ELSE 'run' END
			LOOP
				IF v_r.step = 'finish' AND v_kind = 'swap' THEN
					v_finish := v_finish || v_r.statement;
				END IF;
				CONTINUE WHEN v_r.step <> v_kind;
				IF v_r.statement LIKE 'LOCK TABLE %' THEN
					v_lock_stmt := v_r.statement;
				ELSIF v_r.object = 'sequence' THEN
					NULL;				-- (computed again under the locks)
				ELSIF v_r.object = 'before' OR v_kind = 'add' THEN
					v_stmts := v_stmts || v_r.statement;
				ELSE
					v_after := v_after || v_r.statement;
				END IF;
			END LOOP;
			-- the whole closure is locked, the table first, then by name
			SELECT 'LOCK TABLE ' || string_agg(format('%I.%I', n.nspname, c.relname), ', '
											   ORDER BY c.oid <> tbl::oid, c.oid::regclass::text)
				   || ' IN ACCESS EXCLUSIVE MODE'
			  INTO v_lock_stmt
			  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			 WHERE c.oid = ANY (v_rels);
			IF v_kind = 'add' THEN
				-- the state row, with the tables to backfill (the table
				-- first, then by name) and the rows to expect: the
				-- planner's estimate, or a count for a table never
				-- vacuumed nor analyzed (a new one, likely small)
				-- (of a partitioned table, its partitions that hold rows,
				-- at every level, by name)
				EXECUTE format('SELECT l.tables, l.roots FROM %I._snowflake_online_leaves($1::pg_catalog.regclass,
						$2::pg_catalog.oid[], $3::pg_catalog.name[]) AS l', v_nsp)
				   INTO v_tables, v_roots USING tbl, v_rels, v_atts;
				v_n := 0;
				FOR v_r IN SELECT c.oid::regclass AS r, c.reltuples, c.relpages FROM pg_class c WHERE c.oid = ANY (v_tables) LOOP
					IF v_r.reltuples > 0 OR (v_r.reltuples = 0 AND v_r.relpages > 0) THEN
						v_n := v_n + v_r.reltuples::bigint;
					ELSE
						EXECUTE format('SELECT %s + count(*) FROM %s', v_n, v_r.r) INTO v_n;
					END IF;
				END LOOP;
				-- and the conversion's mark on each table's trigger, from the
				-- start time the row records (fixed here, so that a retry
				-- of the step writes the same)
				v_begun := pg_catalog.clock_timestamp();
				v_stmts := v_stmts || format(
					'INSERT INTO %I.snowflake_online_state (tbl, col, step, rels, atts, drop_sequence, backfill_tables,
															rows_estimated, started_at)
					 VALUES (%s, %L, ''backfill'', %L::oid[]::regclass[], %L, %L, %L::oid[]::regclass[], %s, %L)',
					v_nsp, tbl::oid, col, v_rels, v_atts, drop_sequence, v_tables, v_n, v_begun);
				EXECUTE format('SELECT %I._snowflake_online_mark($1::pg_catalog.timestamptz)', v_nsp)
				   INTO v_mark USING v_begun;
				v_stmts := v_stmts || ARRAY(SELECT format('COMMENT ON TRIGGER zz_snowflake_sync ON %s IS %L', t::regclass, v_mark)
											   FROM (SELECT unnest(v_tables) UNION SELECT unnest(v_roots)) AS x(t)
											  ORDER BY t::regclass::text);
			END IF;
			EXECUTE format('SELECT %I._snowflake_online_fingerprint($1::pg_catalog.oid[])', v_nsp) INTO v_fp USING v_rels;
		ELSIF v_state.step = 'validate' THEN
			-- the new foreign keys that are not there yet, in one
			-- transaction, its locks taken first in the order of every
			-- other step (the table, then the others by name), as a
			-- writer inserting a row and then rows referencing it takes
			-- them; a foreign key locks both its tables
			FOR v_r IN EXECUTE format('SELECT * FROM %I._snowflake_online_plan($1::pg_catalog.regclass,
					$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.oid[], $5::pg_catalog.name[],
					$6::pg_catalog.name, ''run''::pg_catalog.text)', v_nsp)
						USING tbl, col, v_state.drop_sequence, v_state.rels::oid[], v_state.atts, v_nsp
			LOOP
				IF v_r.step = 'constrain'
				   AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conrelid = v_r.rel AND c.conname = v_r.object) THEN
					v_stmts := v_stmts || v_r.statement;
				END IF;
			END LOOP;
			IF v_stmts <> '{}' THEN
				v_kind := 'constrain';
				SELECT 'LOCK TABLE ' || string_agg(format('%I.%I', n.nspname, c.relname), ', '
												   ORDER BY c.oid <> tbl::oid, c.oid::regclass::text)
					   || ' IN SHARE ROW EXCLUSIVE MODE'
				  INTO v_lock_stmt
				  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
				 WHERE c.oid = ANY (v_state.rels::oid[]);
			END IF;
		ELSIF v_state.step = 'index' THEN
			-- an index left invalid by a cancelled CREATE INDEX CONCURRENTLY
			-- is dropped, to be built again
			FOR v_r IN EXECUTE format('SELECT * FROM %I._snowflake_online_plan($1::pg_catalog.regclass,
					$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.oid[], $5::pg_catalog.name[],
					$6::pg_catalog.name, ''run''::pg_catalog.text)', v_nsp)
						USING tbl, col, v_state.drop_sequence, v_state.rels::oid[], v_state.atts, v_nsp
			LOOP
				IF v_r.step = 'index'
				   AND EXISTS (SELECT FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
								WHERE i.indrelid = v_r.rel AND c.relname = v_r.object AND NOT i.indisvalid) THEN
					v_stmts := v_stmts || format('DROP INDEX %I.%I',
												 (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
												   WHERE c.oid = v_r.rel), v_r.object);
				END IF;
			END LOOP;
			IF v_stmts <> '{}' THEN
				v_kind := 'drop';
				v_lock_stmt := 'SELECT';		-- (DROP INDEX takes its own)
			END IF;
		END IF;
		COMMIT;
		PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

		WHILE v_kind IS NOT NULL LOOP
			-- A session holding a lock on a table of the step that only
			-- long operations take (SHARE UPDATE EXCLUSIVE and stronger:
			-- autovacuum, VACUUM, ANALYZE, CREATE INDEX, ...) would make
			-- every attempt fail: the step waits for its locks for half of
			-- lock_timeout, and PostgreSQL cancels an autovacuum that
			-- blocks a lock request only after deadlock_timeout (1 s by
			-- default).  Such a session is waited out first, holding no
			-- lock, so that no writer queues behind the step meanwhile;
			-- a NOTICE every 10 s says who it is.  This wait is no attempt.
			v_noticed := NULL;
			LOOP
				SELECT l.pid, l.mode, l.relation::regclass AS rel,
					   (SELECT a.backend_type FROM pg_stat_activity a WHERE a.pid = l.pid) AS kind
				  INTO v_holder
				  FROM pg_locks l
				 WHERE l.locktype = 'relation'
				   AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
				   AND l.relation = ANY (coalesce(v_rels, '{}') || coalesce(v_state.rels::oid[], '{}')
										 || coalesce(v_state.backfill_tables::oid[], '{}'))
				   AND l.granted AND l.pid IS DISTINCT FROM pg_backend_pid()
				   AND l.mode IN ('ShareUpdateExclusiveLock', 'ShareLock', 'ShareRowExclusiveLock',
								  'ExclusiveLock', 'AccessExclusiveLock')
				 LIMIT 1;
				EXIT WHEN NOT FOUND;
				IF v_noticed IS NULL OR clock_timestamp() - v_noticed >= interval '10 s' THEN
					RAISE NOTICE 'waiting for %, which holds % on table %, to finish before taking the locks',
						CASE WHEN v_holder.pid IS NULL THEN 'a prepared transaction'
							 ELSE format('process %s (%s)', v_holder.pid, coalesce(v_holder.kind, 'another role''s session')) END,
						v_holder.mode, v_holder.rel;
					v_noticed := clock_timestamp();
				END IF;
				PERFORM pg_sleep(0.2);
				COMMIT;
				PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
			END LOOP;
			v_try := v_try + 1;
			v_failed := NULL;
			BEGIN
				PERFORM set_config('lock_timeout', v_lt, true);
				IF v_kind = 'swap' THEN
					EXECUTE format('SELECT %I._snowflake_online_swap($1::pg_catalog.text,
							$2::pg_catalog.oid[], $3::pg_catalog.text, $4::pg_catalog.text[],
							$5::pg_catalog.text[], $6::pg_catalog.regclass, $7::pg_catalog.name,
							$8::pg_catalog.bool, $9::pg_catalog.name, %I.snowflake_nextval()::pg_catalog.int8,
																	 $10::pg_catalog.oid[],
																			$11::pg_catalog.oid[],
																			$12::pg_catalog.oid[],
																			$13::pg_catalog.oid[],
																			$14::pg_catalog.bool)', v_nsp, v_nsp)
					   INTO v_held
					  USING v_lock_stmt, v_rels, v_fp, v_stmts, v_after, tbl, col, v_state.drop_sequence, v_nsp,
							v_plan.identity_rels, v_plan.identity_seqs, v_plan.owned_seqs, v_plan.drop_seqs,
							v_plan.set_default OR EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = tbl
															 AND a.attname = col AND a.atttypid <> 'int8'::regtype);
				ELSE
					EXECUTE format('SELECT %I._snowflake_online_locked($1::pg_catalog.text,
							$2::pg_catalog.oid[], $3::pg_catalog.text, $4::pg_catalog.text[],
							$5::pg_catalog.name)', v_nsp)
					   INTO v_held USING v_lock_stmt, v_rels, v_fp, v_stmts, v_nsp;
				END IF;
			EXCEPTION WHEN lock_not_available THEN
				GET STACKED DIAGNOSTICS v_failed = MESSAGE_TEXT;
			END;
			PERFORM set_config('lock_timeout', '0', true);
			COMMIT;
			PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
			IF v_failed IS NULL AND v_held IS NOT NULL THEN
				-- (DEBUG1: SET client_min_messages = debug1 to see it)
				RAISE DEBUG '%: locks held for % ms', v_kind, round((v_held * 1000)::numeric, 1);
				EXIT;
			END IF;
			IF v_try > max_retries THEN
				EXECUTE format('SELECT %I._snowflake_online_unlock($1::pg_catalog.regclass)', v_nsp) USING tbl;
				RAISE EXCEPTION 'could not take the locks of the online conversion of table % within lock_timeout, % times', tbl, v_try
					USING ERRCODE = 'lock_not_available',
						  DETAIL = format('Last: %s.', coalesce(v_failed, 'the tables changed while the step waited for its locks')),
						  HINT = 'Call the procedure again when the tables are less busy, or with a longer lock_timeout: the conversion resumes where it stopped.';
			END IF;
			IF v_failed IS NULL THEN
				-- the tables changed between the plan and the locks: plan again
				RAISE NOTICE 'the tables changed while the step waited for its locks, planning it again';
				CONTINUE steps;
			END IF;
			v_rate := least(0.1 * 2 ^ (v_try - 1), 5.0) * (0.5 + random() / 2);
			RAISE NOTICE 'could not take a lock within lock_timeout (%), retrying in % s (attempt % of %)',
				v_failed, round(v_rate::numeric, 2), v_try + 1, max_retries + 1;
			PERFORM pg_sleep(v_rate);
			COMMIT;
			PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
		END LOOP;
		v_try := 0;				-- (attempts count until a step succeeds)

		IF abort THEN
			RAISE NOTICE 'online conversion of table % undone', tbl;
			EXIT steps;
		END IF;
		EXECUTE format('SELECT * FROM %I.snowflake_online_state WHERE tbl = $1', v_nsp) INTO v_state USING tbl;
		IF v_state.tbl IS NULL THEN
			-- the foreign keys the swap added NOT VALID (those referencing a
			-- partitioned table), validated: scans that block no writer
			FOREACH v_sql IN ARRAY v_finish LOOP
				RAISE NOTICE 'after the swap: %', v_sql;
				EXECUTE v_sql;
				COMMIT;
				PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
			END LOOP;
			RAISE NOTICE 'column "%" of table % now takes Snowflake ids', col, tbl;
			EXIT steps;
		END IF;
		IF v_state.tbl IS NOT NULL THEN
			EXECUTE format('SELECT %I._snowflake_online_state_problem($1::pg_catalog.regclass,
					$2::pg_catalog.name, $3::pg_catalog.regclass[], $4::pg_catalog.name[],
					$5::pg_catalog.regclass[], $6::pg_catalog.name, true::pg_catalog.bool)', v_nsp)
			   USING tbl, v_state.col, v_state.rels, v_state.atts, v_state.backfill_tables, v_nsp;
		END IF;

		IF v_state.step = 'backfill' THEN
			CONTINUE steps WHEN stop_after = 'add';
			RAISE NOTICE 'step 2 of 5, backfill: about % rows in %', v_state.rows_estimated,
				array_to_string(v_state.backfill_tables::text[], ', ');
			v_started := clock_timestamp();
			v_noticed := v_started;
			v_done0 := v_state.rows_done;
			WHILE v_state.backfill_table <= cardinality(v_state.backfill_tables) LOOP
				v_t := v_state.backfill_tables[v_state.backfill_table];
				EXECUTE format('SELECT * FROM %I._snowflake_online_batches($1::pg_catalog.regclass,
						$2::pg_catalog.oid[], $3::pg_catalog.name[])', v_nsp)
				   INTO v_b USING v_t, v_state.rels::oid[], v_state.atts;
				-- batches in key order (or by block, for a table without a
				-- primary key), one transaction each, with the position; a
				-- position of the other kind (a primary key added or dropped
				-- since) starts the table again, where the batches pass over
				-- the rows done
				v_by_block := strpos(v_b.range_sql, '''ctid''') > 0;
				IF (v_state.backfill_after[cardinality(v_state.backfill_after)] = 'ctid') <> v_by_block THEN
					v_state.backfill_after := NULL;
				END IF;
				v_last := v_state.backfill_after;
				LOOP
					EXECUTE v_b.range_sql INTO v_n, v_last USING v_state.backfill_after, batch_size;
					EXIT WHEN v_last IS NULL;
					EXECUTE format('SELECT %I._snowflake_online_sync($1::pg_catalog.regclass, $2::pg_catalog.regclass,
							$3::pg_catalog.oid[], $4::pg_catalog.name[], $5::pg_catalog.name, false::pg_catalog.bool,
							$6::pg_catalog.text[], $7::pg_catalog.text[], NULL::pg_catalog.int4)', v_nsp)
					   USING v_t, tbl, v_state.rels::oid[], v_state.atts, v_nsp,
										  v_state.backfill_after, v_last;
					EXECUTE format('UPDATE %I.snowflake_online_state
									   SET backfill_after = $2, rows_done = rows_done + $3, updated_at = now()
									 WHERE tbl = $1
									RETURNING *', v_nsp)
					   INTO v_state USING tbl, v_last, v_n;
					COMMIT;
					PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
					IF clock_timestamp() - v_noticed >= interval '5 s' THEN
						v_noticed := clock_timestamp();
						v_rate := (v_state.rows_done - v_done0) / greatest(extract(epoch FROM v_noticed - v_started), 0.001);
						RAISE NOTICE 'backfill: % of about % rows (% %%), % rows/s, about % s left (table %)',
							v_state.rows_done, v_state.rows_estimated,
							round(100.0 * least(v_state.rows_done, v_state.rows_estimated) / greatest(v_state.rows_estimated, 1)),
							round(v_rate), round(greatest(v_state.rows_estimated - v_state.rows_done, 0) / greatest(v_rate, 1)), v_t;
					END IF;
					-- (by key, a short batch was the last: the keys after it
					-- are the writers', which the trigger sets)
					EXIT WHEN v_n < batch_size AND NOT v_by_block;
				END LOOP;
				-- the sweep: rows a batch skipped because a writer held them
				-- and did not update them in the end
				v_try := 0;
				LOOP
					EXECUTE format('SELECT %I._snowflake_online_sync($1::pg_catalog.regclass, $2::pg_catalog.regclass,
							$3::pg_catalog.oid[], $4::pg_catalog.name[], $5::pg_catalog.name, true::pg_catalog.bool,
							NULL::pg_catalog.text[], NULL::pg_catalog.text[], $6::pg_catalog.int4)', v_nsp)
					   INTO v_n USING v_t, tbl, v_state.rels::oid[], v_state.atts, v_nsp, batch_size;
					COMMIT;
					PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
					v_swept := v_swept + v_n;
					CONTINUE WHEN v_n > 0;
					EXECUTE v_b.left_sql INTO v_bool;
					EXIT WHEN NOT v_bool;
					v_try := v_try + 1;
					IF v_try > 600 THEN
						EXECUTE format('SELECT %I._snowflake_online_unlock($1::pg_catalog.regclass)', v_nsp) USING tbl;
						RAISE EXCEPTION 'rows of table % stayed locked for a minute during the backfill', v_t
							USING ERRCODE = 'lock_not_available',
								  HINT = 'Call the procedure again: the conversion resumes where it stopped.';
					END IF;
					PERFORM pg_sleep(0.1);
				END LOOP;
				EXECUTE format('UPDATE %I.snowflake_online_state
								   SET backfill_table = backfill_table + 1, backfill_after = NULL, updated_at = now()
								 WHERE tbl = $1
								RETURNING *', v_nsp)
				   INTO v_state USING tbl;
				COMMIT;
				PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
				IF v_state.tbl IS NOT NULL THEN
					EXECUTE format('SELECT %I._snowflake_online_state_problem($1::pg_catalog.regclass,
							$2::pg_catalog.name, $3::pg_catalog.regclass[], $4::pg_catalog.name[],
							$5::pg_catalog.regclass[], $6::pg_catalog.name, true::pg_catalog.bool)', v_nsp)
					   USING tbl, v_state.col, v_state.rels, v_state.atts, v_state.backfill_tables, v_nsp;
				END IF;
			END LOOP;
			RAISE NOTICE 'backfill: done, % rows in % s; the sweep set % rows the batches had skipped',
				v_state.rows_done - v_done0, round(extract(epoch FROM clock_timestamp() - v_started)::numeric, 1), v_swept;
			EXECUTE format('UPDATE %I.snowflake_online_state SET step = ''index'', updated_at = now() WHERE tbl = $1', v_nsp)
			  USING tbl;
			COMMIT;
			PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
		ELSIF v_state.step = 'index' THEN
			-- the indexes not built yet (or dropped above, invalid)
			EXECUTE format('SELECT %I._snowflake_online_pending($1::pg_catalog.regclass, $2::pg_catalog.name,
					$3::pg_catalog.bool, $4::pg_catalog.regclass[], $5::pg_catalog.name[],
					$6::pg_catalog.regclass[])', v_nsp)
			   INTO v_pending
			  USING tbl, v_state.col, v_state.drop_sequence, v_state.rels, v_state.atts, v_state.backfill_tables;
			IF v_pending IS NULL THEN
				RAISE EXCEPTION 'the indexes of the online conversion of table % could not be planned', tbl
					USING ERRCODE = 'object_not_in_prerequisite_state',
						  DETAIL = 'A table or column of the conversion changed since it began.',
						  HINT = format('Undo the conversion with CALL snowflake_convert_column_online(%L, %L, abort => true), then start it again.', tbl::text, v_state.col);
			END IF;
			EXECUTE format('UPDATE %I.snowflake_online_state
							   SET step = CASE WHEN $2 = ''{}'' THEN ''validate'' ELSE step END,
								   updated_at = now()
							 WHERE tbl = $1', v_nsp)
			  USING tbl, v_pending;
			COMMIT;
			PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
			IF v_pending <> '{}' THEN
				RAISE NOTICE 'step 3 of 5, index: run these statements, outside any transaction block, then call the procedure again:%',
					(SELECT string_agg(E'\n' || s || ';', '') FROM unnest(v_pending) AS s)
					USING HINT = format('In psql: SELECT unnest(pending) FROM snowflake_online_conversions WHERE table_name = %L::regclass \gexec',
										tbl::text);
				EXIT steps;
			END IF;
		ELSIF v_state.step = 'validate' THEN
			RAISE NOTICE 'step 4 of 5, validate';
			-- each validation a transaction of its own: a scan that blocks
			-- no writer (SHARE UPDATE EXCLUSIVE)
			FOR v_r IN EXECUTE format('SELECT * FROM %I._snowflake_online_plan($1::pg_catalog.regclass,
					$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.oid[], $5::pg_catalog.name[],
					$6::pg_catalog.name, ''run''::pg_catalog.text)', v_nsp)
						USING tbl, col, v_state.drop_sequence, v_state.rels::oid[], v_state.atts, v_nsp
			LOOP
				CONTINUE WHEN v_r.step <> 'validate';
				-- (the checks of equal shadow columns after the sweep below)
				CONTINUE WHEN v_r.object LIKE '%\_snowflake\_equal';
				CONTINUE WHEN v_r.object IS NOT NULL
							  AND EXISTS (SELECT FROM pg_constraint c WHERE c.conrelid = v_r.rel
											 AND c.conname = v_r.object AND c.convalidated);
				EXECUTE v_r.statement;
				COMMIT;
				PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
			END LOOP;
			-- every shadow equal to its column, once more (a sweep that finds
			-- nothing unless rows changed without the trigger)
			FOREACH v_t IN ARRAY v_state.backfill_tables LOOP
				EXECUTE format('SELECT * FROM %I._snowflake_online_batches($1::pg_catalog.regclass,
						$2::pg_catalog.oid[], $3::pg_catalog.name[])', v_nsp)
				   INTO v_b USING v_t, v_state.rels::oid[], v_state.atts;
				v_try := 0;
				LOOP
					EXECUTE format('SELECT %I._snowflake_online_sync($1::pg_catalog.regclass, $2::pg_catalog.regclass,
							$3::pg_catalog.oid[], $4::pg_catalog.name[], $5::pg_catalog.name, true::pg_catalog.bool,
							NULL::pg_catalog.text[], NULL::pg_catalog.text[], $6::pg_catalog.int4)', v_nsp)
					   INTO v_n USING v_t, tbl, v_state.rels::oid[], v_state.atts, v_nsp, batch_size;
					IF v_n > 0 THEN
						RAISE WARNING '% rows of table % differed from their shadow columns', v_n, v_t
							USING DETAIL = 'Rows changed without the conversion''s trigger (was it disabled?); they are set again.';
					END IF;
					COMMIT;
					PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
					CONTINUE WHEN v_n > 0;
					EXECUTE v_b.left_sql INTO v_bool;
					EXIT WHEN NOT v_bool;
					v_try := v_try + 1;
					IF v_try > 600 THEN
						EXECUTE format('SELECT %I._snowflake_online_unlock($1::pg_catalog.regclass)', v_nsp) USING tbl;
						RAISE EXCEPTION 'rows of table % stayed locked for a minute during the validation', v_t
							USING ERRCODE = 'lock_not_available',
								  HINT = 'Call the procedure again: the conversion resumes where it stopped.';
					END IF;
					PERFORM pg_sleep(0.1);
				END LOOP;
			END LOOP;
			-- then the checks that keep each shadow column equal to its
			-- column, which no write can undo until the swap
			FOR v_r IN EXECUTE format('SELECT * FROM %I._snowflake_online_plan($1::pg_catalog.regclass,
					$2::pg_catalog.name, $3::pg_catalog.bool, $4::pg_catalog.oid[], $5::pg_catalog.name[],
					$6::pg_catalog.name, ''run''::pg_catalog.text)', v_nsp)
						USING tbl, col, v_state.drop_sequence, v_state.rels::oid[], v_state.atts, v_nsp
			LOOP
				CONTINUE WHEN v_r.step <> 'validate' OR v_r.object IS NULL OR v_r.object NOT LIKE '%\_snowflake\_equal'
							  OR EXISTS (SELECT FROM pg_constraint c WHERE c.conrelid = v_r.rel
											AND c.conname = v_r.object AND c.convalidated);
				EXECUTE v_r.statement;
				COMMIT;
				PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
			END LOOP;
			EXECUTE format('UPDATE %I.snowflake_online_state SET step = ''swap'', updated_at = now() WHERE tbl = $1', v_nsp)
			  USING tbl;
			COMMIT;
			PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
		END IF;
	END LOOP;

	-- every hold of this session (one per call, failed calls included)
	EXECUTE format('SELECT %I._snowflake_online_unlock($1::pg_catalog.regclass)', v_nsp) USING tbl;
END;
$online$;

-- Who may write a state row: a trigger rather than row-level security, so
-- that a backup role dumps every row; a row written must name existing
-- tables of its writer.
DROP POLICY snowflake_online_state_owner ON snowflake_online_state;
ALTER TABLE snowflake_online_state DISABLE ROW LEVEL SECURITY;
CREATE FUNCTION _snowflake_online_state_guard()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $guard$
BEGIN
	IF pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = TG_RELID), 'USAGE') THEN
		NULL;
	ELSIF TG_OP IN ('UPDATE', 'DELETE')
		  AND (pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = OLD.tbl), 'USAGE')
			   AND NOT EXISTS (SELECT FROM pg_class c
								WHERE c.oid = ANY (OLD.rels::oid[] || OLD.backfill_tables::oid[])
								  AND NOT pg_has_role(c.relowner, 'USAGE'))) IS NOT TRUE THEN
		RAISE EXCEPTION 'permission denied for the online conversion of table %', OLD.tbl
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = 'A role may change the state of an online conversion only if it owns every table the conversion names.';
	ELSIF TG_OP IN ('INSERT', 'UPDATE')
		  AND EXISTS (SELECT FROM unnest(NEW.tbl::oid || NEW.rels::oid[] || NEW.backfill_tables::oid[]) AS r(o)
					   WHERE NOT EXISTS (SELECT FROM pg_class c
										  WHERE c.oid = r.o AND pg_has_role(c.relowner, 'USAGE'))) THEN
		RAISE EXCEPTION 'permission denied for the online conversion of table %', NEW.tbl
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = 'The state of an online conversion may name only existing tables that its writer owns.';
	END IF;
	IF TG_OP = 'DELETE' THEN
		RETURN OLD;
	END IF;
	RETURN NEW;
END
$guard$;

COMMENT ON FUNCTION _snowflake_online_state_guard() IS
'trigger of snowflake_online_state: who may write which row';

CREATE TRIGGER snowflake_online_state_guard
	BEFORE INSERT OR UPDATE OR DELETE ON snowflake_online_state
	FOR EACH ROW EXECUTE FUNCTION _snowflake_online_state_guard();
ALTER TABLE snowflake_online_state ENABLE ALWAYS TRIGGER snowflake_online_state_guard;

-- A conversion's mark on the triggers of its tables.
CREATE FUNCTION _snowflake_online_mark(started_at timestamptz)
RETURNS text
LANGUAGE sql
STABLE PARALLEL SAFE STRICT
SET search_path = pg_catalog, pg_temp
AS $mark$
SELECT 'snowflake_convert_column_online(), started '
	   || to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || ' UTC'
$mark$;

COMMENT ON FUNCTION _snowflake_online_mark(timestamptz) IS
'internal to snowflake_convert_column_online(): the comment on the triggers of a conversion';

-- Conversions in progress, begun under 0.3.0, get their mark, so that they
-- can go on or be aborted: on the trigger of each table they gave shadow
-- columns; and the check that keeps each shadow column equal to its
-- column, not validated (the validate step does it, after its sweep, and
-- the swap of a conversion past it goes back to it first).  A table that
-- this role cannot alter (it would need to own it) is named in a warning;
-- its conversion is then refused until its owner aborts it, as the
-- error's hint says.
DO $mark$
DECLARE
	v_row record;
	v_t pg_catalog.regclass;
	v_c record;
BEGIN
	FOR v_c IN
		SELECT s.r::pg_catalog.regclass AS r, s.a
		  FROM snowflake_online_state o, unnest(o.rels::pg_catalog.oid[], o.atts) AS s(r, a)
		 WHERE EXISTS (SELECT FROM pg_catalog.pg_attribute x
						WHERE x.attrelid = s.r AND x.attname = s.a || '_snowflake' AND NOT x.attisdropped)
		   AND NOT EXISTS (SELECT FROM pg_catalog.pg_constraint c
							WHERE c.conrelid = s.r AND c.conname = s.a || '_snowflake_equal')
	LOOP
		BEGIN
			EXECUTE pg_catalog.format('ALTER TABLE %s ADD CONSTRAINT %I CHECK (%I IS NOT DISTINCT FROM %I) NOT VALID',
									  v_c.r, v_c.a || '_snowflake_equal', v_c.a || '_snowflake', v_c.a);
		EXCEPTION WHEN insufficient_privilege THEN
			RAISE WARNING 'could not add the check of the online conversion of column "%" to table %', v_c.a, v_c.r
				USING ERRCODE = '01000', DETAIL = SQLERRM;
		END;
	END LOOP;
	FOR v_row IN SELECT s.tbl, s.backfill_tables, s.started_at FROM snowflake_online_state s LOOP
		FOREACH v_t IN ARRAY v_row.backfill_tables LOOP
			CONTINUE WHEN NOT EXISTS (SELECT FROM pg_catalog.pg_trigger t
									   WHERE t.tgrelid = v_t AND t.tgname = 'zz_snowflake_sync');
			BEGIN
				EXECUTE pg_catalog.format('COMMENT ON TRIGGER zz_snowflake_sync ON %s IS %L', v_t,
										  _snowflake_online_mark(v_row.started_at));
			EXCEPTION WHEN insufficient_privilege THEN
				RAISE WARNING 'could not mark the online conversion of table % on table %', v_row.tbl, v_t
					USING ERRCODE = '01000', DETAIL = SQLERRM;
			END;
		END LOOP;
	END LOOP;
END
$mark$;

-- The backfill's updates, as each table's owner, checked under each
-- batch's lock.
-- (no statements for a table without a shadow column)
CREATE OR REPLACE FUNCTION _snowflake_online_batches(
	tbl regclass,
	rels oid[],
	atts name[],
	OUT range_sql text,
	OUT update_sql text,
	OUT sweep_sql text,
	OUT left_sql text)
RETURNS record
LANGUAGE plpgsql
STABLE PARALLEL SAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $batches$
DECLARE
	v_sets text;
	v_diff text;
	v_keys text;
	v_desc text;
	v_text text;
	v_after text;
	v_upto text;
	v_blocks text;
BEGIN
	SELECT string_agg(format('%I = %I', a.attname || '_snowflake', a.attname), ', ' ORDER BY k.n),
		   string_agg(format('%I IS DISTINCT FROM %I', a.attname || '_snowflake', a.attname), ' OR ' ORDER BY k.n)
	  INTO v_sets, v_diff
	  FROM generate_subscripts(rels, 1) AS k(n)
	  JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = atts[k.n] AND NOT a.attisdropped
	 WHERE rels[k.n] = coalesce(pg_partition_root(tbl)::oid, tbl::oid) AND a.atttypid <> 'int8'::regtype;
	IF v_sets IS NULL THEN
		RETURN;				-- (no shadow column in this table: no statement)
	END IF;
	sweep_sql := format('UPDATE %s SET %s WHERE ctid = ANY (ARRAY(SELECT ctid FROM %s WHERE %s LIMIT $1 FOR NO KEY UPDATE SKIP LOCKED))',
						tbl, v_sets, tbl, v_diff);
	left_sql := format('SELECT EXISTS (SELECT FROM %s WHERE %s)', tbl, v_diff);
	IF NOT EXISTS (SELECT FROM pg_index i WHERE i.indrelid = tbl AND i.indisprimary) THEN
		-- No primary key: batches of whole blocks, by physical position.
		-- A position is ARRAY[block, end, 'ctid']: the last block done, and
		-- the table's number of blocks when its walk began (or resumed); a
		-- batch is the blocks after it, as many as hold about $2 rows by
		-- the table's statistics (MaxHeapTuplesPerPage each, without them).
		-- The walk ends at that end: the rows of the blocks beyond it, as
		-- those a writer moved to a block done, were written since the
		-- trigger was there (and the sweep finds any other), so it does not
		-- chase the writers' inserts.
		-- (the condition that a row lies in the blocks after block %1$s up
		-- to block %2$s: from PostgreSQL 14 a range of TIDs, which a TID
		-- range scan reads directly; before, for a TID scan, every TID
		-- those blocks could hold, as a range would be a scan of the whole
		-- table)
		IF current_setting('server_version_num')::int >= 140000 THEN
			v_blocks := 'ctid >= (''('' || (%1$s + 1) || '',0)'')::pg_catalog.tid AND ctid < (''('' || (%2$s + 1) || '',0)'')::pg_catalog.tid';
		ELSE
			v_blocks := format('ctid = ANY (ARRAY(SELECT (''('' || g.b || '','' || o.o || '')'')::pg_catalog.tid
											   FROM pg_catalog.generate_series(%%1$s + 1, %%2$s) AS g(b),
													pg_catalog.generate_series(1, %s) AS o(o)))',
							   (current_setting('block_size')::int - 24) / 28);
		END IF;
		v_after := 'coalesce(($1::text[])[1]::int8, -1)';
		v_upto := '($2::text[])[1]::int8';
		v_keys := format('greatest(1, floor($2 / CASE WHEN c.relpages > 0 AND c.reltuples > 0
											 THEN c.reltuples / c.relpages ELSE %s END))::int8',
						 (current_setting('block_size')::int - 24) / 28);
		range_sql := format('WITH p AS (SELECT %s AS a,
											 coalesce(($1::text[])[2]::int8,
													  pg_relation_size(c.oid) / current_setting(''block_size'')::int8) AS nblocks,
											 %s AS k
										FROM pg_class c WHERE c.oid = %L::regclass),
								  q AS (SELECT p.a, least(p.a + p.k, p.nblocks - 1) AS b, p.nblocks FROM p WHERE p.a + 1 < p.nblocks)
							 SELECT (SELECT count(*) FROM %s WHERE %s), (SELECT ARRAY[q.b::text, q.nblocks::text, ''ctid''] FROM q)',
							v_after, v_keys, tbl, tbl,
							format(v_blocks, '(SELECT q.a FROM q)', '(SELECT q.b FROM q)'));
		update_sql := format('UPDATE %s SET %s WHERE ctid = ANY (ARRAY(SELECT ctid FROM %s WHERE %s AND (%s) FOR NO KEY UPDATE SKIP LOCKED))',
							 tbl, v_sets, tbl, format(v_blocks, v_after, v_upto), v_diff);
		RETURN;
	END IF;
	SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY k.n),
		   string_agg(quote_ident(a.attname) || ' DESC', ', ' ORDER BY k.n),
		   string_agg(format('%I::text', a.attname), ', ' ORDER BY k.n),
		   string_agg(format('($1::text[])[%s]::%s', k.n, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY k.n),
		   string_agg(format('($2::text[])[%s]::%s', k.n, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY k.n)
	  INTO v_keys, v_desc, v_text, v_after, v_upto
	  FROM pg_index i
	  CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(num, n)
	  JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.num
	 WHERE i.indrelid = tbl AND i.indisprimary;
	v_after := format('($1::text[] IS NULL OR ROW(%s) > ROW(%s))', v_keys, v_after);
	v_upto := format('($2::text[] IS NULL OR ROW(%s) <= ROW(%s))', v_keys, v_upto);
	range_sql := format('WITH b AS (SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT $2)
						 SELECT (SELECT count(*) FROM b), (SELECT ARRAY[%s] FROM b ORDER BY %s LIMIT 1)',
						v_keys, tbl, v_after, v_keys, v_text, v_desc);
	update_sql := format('UPDATE %s SET %s WHERE ctid = ANY (ARRAY(SELECT ctid FROM %s WHERE %s AND %s AND (%s) FOR NO KEY UPDATE SKIP LOCKED))',
						 tbl, v_sets, tbl, v_after, v_upto, v_diff);
END;
$batches$;

-- What an update of table tbl's shadow columns would fire besides the
-- conversion's own trigger, as text naming it for a message, or NULL: a
-- trigger or rule on UPDATE (with no column list, or one naming a shadow
-- column), enabled as this session's session_replication_role sees it,
-- which would run for every row the backfill updates, changing rows (an
-- updated_at) or writing for each (an audit log), where the offline
-- rewrite fires none; or row-level security that applies to the caller or
-- to the table's owner (the backfill reads as the one and writes as the
-- other), which would hide rows from the backfill, to lose their values at
-- the swap.  The plan refuses these when a call starts; each batch checks
-- again, under its ROW EXCLUSIVE lock on the table, which CREATE TRIGGER,
-- ENABLE TRIGGER, CREATE RULE and FORCE ROW LEVEL SECURITY wait for.
CREATE FUNCTION _snowflake_online_firing(tbl regclass, rels oid[], atts name[], nsp name, srr text)
RETURNS text
LANGUAGE sql
STABLE PARALLEL SAFE STRICT SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $firing$
SELECT x.what
  FROM (SELECT 1 AS o, x.what
		  FROM (SELECT format('trigger "%s" on UPDATE, which would fire for every row the backfill updates', t.tgname) AS what,
					   t.tgenabled AS enabled
				  FROM pg_trigger t
				 WHERE t.tgrelid = tbl AND (t.tgtype & 16) <> 0
				   -- (a partition's clone of its parent's trigger is internal
				   -- before PostgreSQL 15; a foreign key's are internal)
				   AND (NOT t.tgisinternal
						OR (t.tgparentid <> 0
							AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.oid = t.tgconstraint AND c.contype = 'f')))
				   AND NOT (t.tgname = 'zz_snowflake_sync'
							AND t.tgfoid IN (SELECT p.oid FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
											  WHERE n.nspname = nsp AND p.proname = 'snowflake_convert_sync'))
				   AND (cardinality(t.tgattr::int2[]) = 0
						OR EXISTS (SELECT FROM pg_attribute a
									WHERE a.attrelid = t.tgrelid AND a.attnum = ANY (t.tgattr::int2[])
									  AND a.attname IN (SELECT (atts[k.n] || '_snowflake')::name
														  FROM generate_subscripts(rels, 1) AS k(n)
														 WHERE rels[k.n] = coalesce(pg_partition_root(tbl)::oid, tbl::oid))))
				UNION ALL
				SELECT format('rule "%s" on UPDATE, which would fire for every row the backfill updates', w.rulename),
					   w.ev_enabled
				  FROM pg_rewrite w
				 WHERE w.ev_class = tbl AND w.ev_type = '2') x
		 WHERE x.enabled = 'A'
			OR x.enabled = CASE srr WHEN 'replica' THEN 'R' ELSE 'O' END
		UNION ALL
		SELECT 2, format('row-level security that applies to %s, so the backfill would not see every row',
						 CASE WHEN y.to_caller THEN 'you' ELSE format('its owner %s', y.owner) END)
		  FROM (SELECT quote_ident(o.rolname) AS owner,
					   c.relforcerowsecurity AND NOT o.rolsuper AND NOT o.rolbypassrls AS to_owner,
					   (c.relforcerowsecurity OR NOT pg_has_role(c.relowner, 'USAGE'))
					   AND NOT EXISTS (SELECT FROM pg_roles u
										WHERE u.rolname = current_user AND (u.rolsuper OR u.rolbypassrls)) AS to_caller
				  FROM pg_class c
				  JOIN pg_roles o ON o.oid = c.relowner
				 WHERE c.oid = tbl AND c.relrowsecurity) y
		 WHERE y.to_owner OR y.to_caller) x
 ORDER BY x.o, x.what
 LIMIT 1
$firing$;

COMMENT ON FUNCTION _snowflake_online_firing(regclass, oid[], name[], name, text) IS
'internal to snowflake_convert_column_online(): what the backfill''s updates of a table would fire';

-- The backfill's updates of a table whose triggers or rules on UPDATE would
-- fire run with session_replication_role = replica, as logical
-- replication's apply does: the table's own triggers and rules (ENABLE,
-- the default) do not fire, ENABLE ALWAYS and ENABLE REPLICA ones do (and
-- _snowflake_online_firing() names them), and so does the conversion's,
-- which is ALWAYS.  The setting needs the right to set it (a superuser, or
-- from PostgreSQL 15 the SET privilege on it) for the caller, who sets
-- it, and for the table's owner, as whom the update runs (asowner.c): the
-- owner's CHECK constraints and index expressions run under it, and may
-- not write to other tables with their triggers off unless the owner could
-- have done so itself.  Sets it for the rest of the transaction and
-- returns NULL, or returns a hint that says what is missing; the caller
-- sets it back once its update is done.  Foreign keys' own triggers do
-- not fire either: the updates set shadow columns only, before the
-- foreign keys on them exist, or, in the validate step's last sweep, to
-- values their columns hold (which the old foreign keys check), and each
-- shadow column's check that it equals its column is validated after it.
CREATE FUNCTION _snowflake_online_replica(t regclass)
RETURNS text
LANGUAGE plpgsql
VOLATILE PARALLEL UNSAFE STRICT SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $replica$
DECLARE
	v_granting boolean := to_regprocedure('pg_catalog.has_parameter_privilege(pg_catalog.oid, pg_catalog.text, pg_catalog.text)') IS NOT NULL;
	v_role record;
	v_may boolean;
	v_lacking text;
BEGIN
	FOR v_role IN SELECT DISTINCT r.oid, r.rolname, r.rolsuper
					FROM pg_roles r
				   WHERE r.rolname = current_user
					  OR r.oid = (SELECT c.relowner FROM pg_class c WHERE c.oid = t)
				   ORDER BY r.rolname LOOP
		IF v_granting THEN
			EXECUTE 'SELECT pg_catalog.has_parameter_privilege($1::pg_catalog.oid, ''session_replication_role'', ''SET'')'
			   INTO v_may USING v_role.oid;
		ELSE
			v_may := v_role.rolsuper;
		END IF;
		IF NOT v_may THEN
			v_lacking := concat_ws(', ', v_lacking, quote_ident(v_role.rolname));
		END IF;
	END LOOP;
	IF v_lacking IS NULL THEN
		PERFORM set_config('session_replication_role', 'replica', true);
		RETURN NULL;
	END IF;
	RETURN format('The backfill keeps a table''s triggers and rules from firing by updating with session_replication_role = replica, which both you and the table''s owner (its CHECK constraints run as the owner) must be allowed to set; %s.',
				  CASE WHEN v_granting
					   THEN format('a superuser can allow it with GRANT SET ON PARAMETER session_replication_role TO %s', v_lacking)
					   ELSE format('before PostgreSQL 15 only superusers may, and %s is none', v_lacking) END);
END
$replica$;

COMMENT ON FUNCTION _snowflake_online_replica(regclass) IS
'internal to snowflake_convert_column_online(): keeps a table''s triggers from firing for the backfill''s updates, if it may';

-- The backfill's and the sweeps' updates of a table, run as the table's
-- owner inside a security-restricted operation (src/asowner.c): the
-- table's CHECKs, index expressions and triggers run with its owner's
-- rights, not the caller's.  It runs only the statement of
-- _snowflake_online_batches() for the columns given, and only for a caller
-- with the owner's privileges; still, PUBLIC cannot execute it.  Not
-- STRICT: the bounds of a batch may be NULL.
CREATE FUNCTION _snowflake_online_sync_rows(tbl regclass, rels oid[], atts name[], sweep boolean,
	after text[], upto text[], max_rows integer)
RETURNS bigint
AS 'MODULE_PATHNAME', '_snowflake_online_sync_rows'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION _snowflake_online_sync_rows(regclass, oid[], name[], boolean, text[], text[], integer) FROM PUBLIC;

COMMENT ON FUNCTION _snowflake_online_sync_rows(regclass, oid[], name[], boolean, text[], text[], integer) IS
'internal to snowflake_convert_column_online(): a batch of the backfill, as the table''s owner';

-- One batch (sweep false: the rows after "after" up to "upto" by primary
-- key) or one sweep (at most max_rows rows whose shadows differ) of table
-- t, in the caller's transaction: it takes the table's ROW EXCLUSIVE lock,
-- checks what the update would fire again, then updates, as the table's
-- owner.  A caller that is the owner updates itself (nothing to switch);
-- any other, a superuser say, through _snowflake_online_sync_rows().
-- Returns the number of rows updated.
CREATE FUNCTION _snowflake_online_sync(t regclass, tbl regclass, rels oid[], atts name[], nsp name,
	sweep boolean, after text[], upto text[], max_rows integer)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $sync$
DECLARE
	v_what text;
	v_why text;
	v_still text;
	v_was text := current_setting('session_replication_role');
	v_replica boolean := false;
	v_b record;
	v_n bigint;
BEGIN
	EXECUTE format('LOCK TABLE %s IN ROW EXCLUSIVE MODE', t);
	EXECUTE format('SELECT %I._snowflake_online_firing($1::pg_catalog.regclass, $2::pg_catalog.oid[],
			$3::pg_catalog.name[], $4::pg_catalog.name, $5::pg_catalog.text)', nsp)
	   INTO v_what USING t, rels, atts, nsp, v_was;
	-- the table's own triggers and rules kept from firing, where that may
	-- be done (_snowflake_online_replica()); set back after the update
	IF v_what IS NOT NULL AND v_was <> 'replica' THEN
		EXECUTE format('SELECT %I._snowflake_online_firing($1::pg_catalog.regclass, $2::pg_catalog.oid[],
				$3::pg_catalog.name[], $4::pg_catalog.name, ''replica''::pg_catalog.text)', nsp)
		   INTO v_still USING t, rels, atts, nsp;
		IF v_still IS NULL THEN
			EXECUTE format('SELECT %I._snowflake_online_replica($1::pg_catalog.regclass)', nsp)
			   INTO v_why USING t;
			v_replica := v_why IS NULL;
		END IF;
	END IF;
	IF v_what IS NOT NULL AND NOT v_replica THEN
		EXECUTE format('SELECT %I._snowflake_online_unlock($1::pg_catalog.regclass)', nsp) USING tbl;
		RAISE EXCEPTION 'cannot go on with the online conversion of table %', tbl
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Table %s now has %s.', t, coalesce(v_still, v_what)),
				  HINT = coalesce(v_why || ' Or drop or disable it. Then call the procedure again: the conversion resumes where it stopped.',
								  'Drop or disable it, then call the procedure again: the conversion resumes where it stopped.');
	END IF;
	IF (SELECT c.relowner FROM pg_class c WHERE c.oid = t) = (SELECT o.oid FROM pg_roles o WHERE o.rolname = current_user) THEN
		EXECUTE format('SELECT * FROM %I._snowflake_online_batches($1::pg_catalog.regclass,
				$2::pg_catalog.oid[], $3::pg_catalog.name[])', nsp)
		   INTO v_b USING t, rels, atts;
		IF sweep THEN
			EXECUTE v_b.sweep_sql USING max_rows;
		ELSE
			EXECUTE v_b.update_sql USING after, upto;
		END IF;
		GET DIAGNOSTICS v_n = ROW_COUNT;
	ELSE
		EXECUTE format('SELECT %I._snowflake_online_sync_rows($1::pg_catalog.regclass, $2::pg_catalog.oid[],
				$3::pg_catalog.name[], $4::pg_catalog.bool, $5::pg_catalog.text[], $6::pg_catalog.text[],
				$7::pg_catalog.int4)', nsp)
		   INTO v_n USING t, rels, atts, sweep, after, upto, max_rows;
	END IF;
	IF v_replica THEN
		PERFORM set_config('session_replication_role', v_was, true);
	END IF;
	RETURN v_n;
END
$sync$;

COMMENT ON FUNCTION _snowflake_online_sync(regclass, regclass, oid[], name[], name, boolean, text[], text[], integer) IS
'internal to snowflake_convert_column_online(): a batch of the backfill, checked under its lock';

-- == Public ids ==
-- The keys of public ids: one row per version, the key wrapped
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

-- Root rotation: every key wrapped under the previous root key
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

-- The first key of an application takes first => true: a database
-- without keys may be one whose keys are missing (a standby promoted, or a
-- backup restored, from before them), where a new key would give a
-- version its application already used other bits.
DROP FUNCTION snowflake_public_key_create();

CREATE FUNCTION snowflake_public_key_create(first boolean DEFAULT false)
RETURNS integer
AS 'MODULE_PATHNAME', 'snowflake_public_key_create'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION snowflake_public_key_create(boolean) IS
'create a key of 256 random bits; it becomes the current key, and its version is returned (first => true for an application''s first key)';

REVOKE ALL ON FUNCTION snowflake_public_key_create(boolean) FROM PUBLIC;

-- The root key's check value: 3 bytes of AES of a zero block
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

-- == The schema ==

-- A warning when roles other than the extension's owner can create objects
-- in its schema.
DO $check$
DECLARE
	v_nsp pg_catalog.name := pg_catalog.current_schema();
	v_who pg_catalog.text;
BEGIN
	SELECT pg_catalog.string_agg(CASE WHEN h.holder = 0 THEN 'PUBLIC'
									  ELSE pg_catalog.quote_ident(r.rolname) END,
								 ', ' ORDER BY h.holder <> 0, r.rolname)
	  INTO v_who
	  FROM (SELECT DISTINCT a.grantee AS holder
			  FROM pg_catalog.pg_namespace n,
				   pg_catalog.aclexplode(COALESCE(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) a
			 WHERE n.nspname = v_nsp AND a.privilege_type = 'CREATE'
			UNION
			SELECT n.nspowner FROM pg_catalog.pg_namespace n WHERE n.nspname = v_nsp) h
	  LEFT JOIN pg_catalog.pg_roles r ON r.oid = h.holder
	 WHERE h.holder = 0
		OR NOT (r.rolname = current_user OR r.rolsuper
				-- (the owner of public from PostgreSQL 15: the database's owner)
				OR r.rolname = 'pg_database_owner'
				   AND (SELECT o.rolname = current_user OR o.rolsuper
						  FROM pg_catalog.pg_database d
						  JOIN pg_catalog.pg_roles o ON o.oid = d.datdba
						 WHERE d.datname = pg_catalog.current_database()));
	IF v_who IS NOT NULL THEN
		RAISE WARNING 'roles other than the owner of extension "snowflake" can create objects in its schema "%": %',
			v_nsp, v_who
			USING ERRCODE = '01000',
				  DETAIL = 'They can plant functions and types beside the extension''s: make its calls fail, and take calls that applications make with untyped arguments.',
				  HINT = format('Revoke that right (REVOKE CREATE ON SCHEMA %I FROM ...), or keep the extension in a schema of its own (CREATE SCHEMA snowflake; ALTER EXTENSION snowflake SET SCHEMA snowflake).', v_nsp);
	END IF;
END
$check$;

-- Worker-id leases: the coordinator's side.  Any server with the extension
-- (no preload needed) can be the coordinator of a fleet: each issuing
-- server's lease client claims a worker id here, renews it three times per
-- TTL and releases it at a clean shutdown.
--
-- One row per worker id (node value).  generation rises with every claim.
-- expires_at is on the coordinator's clock.  horizon_ms is the fence: the
-- holder issues ids of that worker id only below it, and a new holder only
-- at or above the horizon it finds (previous_horizon_ms of its claim).
-- floor_ms is that value, kept so that a release never lowers the horizon
-- below what an earlier holder issued.
--
-- A lease belongs to its holder, by a chain of secrets.  The row keeps the
-- SHA-256 of the holder's current secret (token_hash) and the role that
-- claimed it (claimed_by); a secret is 128 random bits, as 32 hexadecimal
-- digits, drawn by the holder's lease client for one call.  Each claim and
-- renewal proves a secret and registers the hash of the next one; a
-- release proves one and registers none.  So a secret read where a call
-- went (a log, a packet capture, a pooler) is spent by the time anyone
-- reads it: once that call commits, the row asks for the next secret,
-- which has crossed no wire.  The client's calls offer its last secrets
-- (up to 8), of which the row holds the hash of one: a call whose answer
-- was lost may have committed or not, and a coordinator may lose its last
-- commits (an asynchronous standby promoted).  Only a call that failed, or
-- commits lost that way, leave a secret that was sent good, until the
-- holder's next call; the lease client sends no secret to a session that
-- would log it (see src/leasechain.h and src/leaselog.c).  A release
-- records the holder's end, never a horizon below the coordinator's
-- clock: whoever releases, the holder issued nothing above its clock.
--
-- Another caller, even one that may execute the functions, can claim a
-- free worker id (a denial of service, which snowflake.lease_worker_ids,
-- the table's bound of 65536 rows and separate coordinators limit) but
-- can neither renew, release nor learn anything of a lease that is not its
-- own.
--
-- 0.3.0's lease client sent one secret, drawn when it started, with every
-- call: its three functions are kept, for a fleet's servers not updated
-- yet (a coordinator is updated first), and share the code of 0.4.0's.
-- Their secrets stay good as long as their holder runs.

-- node and generation are checked by their domains, not by CHECK
-- constraints of the table: PostgreSQL runs a table's CHECKs at every
-- UPDATE of a row, whichever columns it sets, reading their expressions
-- from the catalog at every statement, and the renewal, which sets
-- neither, is the statement a coordinator runs most; a domain's check
-- runs where a value is written to its column.
CREATE DOMAIN snowflake_lease_node AS integer CHECK (VALUE >= 0);
CREATE DOMAIN snowflake_lease_generation AS bigint CHECK (VALUE > 0);
COMMENT ON DOMAIN snowflake_lease_node IS
'a worker id in the lease table: 0 or more';
COMMENT ON DOMAIN snowflake_lease_generation IS
'the generation of a lease: 1 or more, one more at every claim';

CREATE TABLE snowflake_lease (
	node snowflake_lease_node PRIMARY KEY,
	generation snowflake_lease_generation NOT NULL,
	holder text NOT NULL,
	expires_at timestamptz NOT NULL,
	horizon_ms bigint NOT NULL,
	floor_ms bigint NOT NULL,
	claimed_at timestamptz NOT NULL,
	renewed_at timestamptz,
	released_at timestamptz,
	claimed_by name,
	token_hash bytea
);

COMMENT ON TABLE snowflake_lease IS
'worker-id leases of the servers this coordinator serves';

-- No index on token_hash: every renewal changes it, and an index on it
-- would make each renewal write a new entry in every index of the table
-- (no HOT update), which a coordinator of a thousand servers pays a
-- thousand times per TTL.  A lookup by hash alone, a claim taking its own
-- lease back, reads at most the table's 65536 rows; renewals and releases
-- find their row by node.

-- Rows survive pg_dump and restore: losing a horizon would unfence a worker id.
SELECT pg_catalog.pg_extension_config_dump('snowflake_lease', '');

-- Only the lease functions write it; monitoring may read every column but
-- the token hashes.
REVOKE ALL ON snowflake_lease FROM PUBLIC;
GRANT SELECT (node, generation, holder, expires_at, horizon_ms, floor_ms, claimed_at,
			  renewed_at, released_at, claimed_by) ON snowflake_lease TO pg_monitor;

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
CREATE FUNCTION _snowflake_lease_check(token text, ttl_ms integer, horizon_ms bigint)
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
-- _snowflake_lease_take; 0.3.0's renewal calls it, and 0.4.0's runs the
-- same statement in C (src/leasecoord.c).
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

CREATE FUNCTION snowflake_lease_release(node integer, token text, end_ms bigint)
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

-- Issuing servers connect with a role granted EXECUTE on the three calls
-- (doc/fleet.md, "A bounded table"):
--   GRANT EXECUTE ON FUNCTION
--     snowflake_lease_claim(text, text[], bytea, integer[], integer[], integer, integer, bigint),
--     snowflake_lease_renew(integer, text[], bytea, integer, bigint),
--     snowflake_lease_release(integer, text[], bigint) TO snowflake_fleet;
REVOKE ALL ON FUNCTION _snowflake_lease_bounds(integer, bigint),
	_snowflake_lease_proofs(text[], bytea),
	_snowflake_lease_check(text, integer, bigint),
	_snowflake_lease_take(text, bytea[], bytea, integer[], integer[], integer, integer, bigint),
	_snowflake_lease_extend(integer, bytea[], bytea, integer, bigint),
	_snowflake_lease_end(integer, bytea[], bigint),
	snowflake_lease_claim(text, text[], bytea, integer[], integer[], integer, integer, bigint),
	snowflake_lease_renew(integer, text[], bytea, integer, bigint),
	snowflake_lease_release(integer, text[], bigint),
	snowflake_lease_claim(text, text, integer[], integer[], integer, integer, bigint),
	snowflake_lease_renew(integer, text, integer, bigint),
	snowflake_lease_release(integer, text, bigint) FROM PUBLIC;

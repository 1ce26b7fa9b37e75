-- snowflake, the plain-SQL edition: Snowflake ids where C extensions cannot
-- load (managed PostgreSQL), with the C edition's default layout, epoch and
-- function names, in SQL and PL/pgSQL only.  PostgreSQL 13 and later.
--
--   psql -v schema=snowflake -f sql/portable/snowflake.sql    (default schema: snowflake)
--   SELECT snowflake.snowflake_set_worker_id(1);               -- once per server
--   CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake.snowflake_nextval(), ...);
--
-- Installs into one schema, made if missing, owned by whoever runs it: no
-- superuser needed beyond creating a schema in the database.  Running it
-- again replaces the functions and keeps the state and the worker id.  It
-- includes the C edition's conversion from serial, ../install/convert.sql
-- (plain PL/pgSQL): run it from a checkout or a release's tree.
--
-- An id is (ms since 2025-01-01 UTC) << 22 | worker id << 12 | sequence,
-- bit for bit the C edition's default layout, so either edition decodes the
-- other's ids.
--
-- Why no id is issued twice
-- -------------------------
-- The state is one sequence, _snowflake_state, whose value is
--     worker id << 53 | tick << 12 | sequence
-- (41 bits of ms since the epoch, 12 of sequence, the worker id above):
-- the id is that value with the worker id moved to its place.  A sequence is
-- the one thing plain SQL has that many sessions can advance atomically
-- without holding a lock to the end of their transactions: nextval() is
-- non-transactional, never returns a value twice, and is WAL-logged.  A row
-- locked by UPDATE would be held until commit, and a long transaction that
-- inserted a row would stall every other writer.
--
-- A call reads the clock's tick when it begins, and draws with nextval()
-- (the common path); it keeps the value only if it lies in that tick or a
-- later one: a value of an earlier tick means the state is behind the
-- clock, and it is moved forward ("a jump") with setval() to the clock's
-- tick.  setval() overwrites: a jump made from an old reading would move
-- the state back below values other sessions drew meanwhile, and they would
-- be drawn again.  So jumps run one at a time (a session-level advisory
-- lock, taken without waiting and released before the call returns: never
-- held across a commit), and the common path validates each draw against a
-- second sequence, _snowflake_gen, used as a sequence lock: a jump advances
-- it to an odd value, reads the state with a nextval() of its own, moves
-- the state to the clock's tick if that reading lies in an earlier one, and
-- advances _snowflake_gen to an even value again.  A draw reads
-- _snowflake_gen before and after its nextval() and keeps its value only if
-- both readings are the same even value.  A value drawn before a jump's
-- first advance is below the jump's reading of the state, and so below
-- where the jump moves it (a jump only moves the state forward in (tick,
-- sequence)); a value drawn after the jump's second advance is above it; a
-- value drawn in between, however the two interleave, sees an odd reading
-- or two different ones, and is dropped, never returned.  So every value
-- returned was drawn from a state that only moves forward: unique, and
-- increasing in the order of the draws, across every session of the
-- server.  A batch takes its ids a block at a time the same way: inside
-- the sequence lock, after the jump's reading of the state, it sets the
-- state to the block's last value, so that every value drawn outside is
-- below the reading or above the block.  Only the jump (SECURITY DEFINER)
-- may advance _snowflake_gen or set the state; other roles may draw (USAGE
-- on the state: a draw only wastes values) and read the lock.
--
-- When 4,096 ids are drawn in one millisecond, the sequence runs into the
-- next tick, ahead of the clock, and the call waits (a busy loop of at most
-- a millisecond) until the clock gets there, as the C edition does.  When
-- the clock steps back, a call waits out a step of up to 5 ms and refuses
-- a larger one with system_error (58000) until the clock passes the last
-- id: values are never taken below the state, whatever the clock says.
-- Every id returned lies in a tick from the one in which the call began to
-- the one the clock has reached when it returns.  (Measured from the call's
-- start, not from its draw: a session that slept or lost its CPU for a few
-- milliseconds keeps a draw that a jump made meanwhile moved into a later
-- tick, instead of asking for a jump of its own, which on a busy server
-- would leave every session asking for one in turn.)
--
-- After a crash, the sequence's WAL brings the state back: every id of a
-- transaction that committed (with synchronous_commit on: its commit
-- flushed the nextval() and setval() records before it) stays below the
-- state.  Ids of transactions that had not committed may be issued again
-- only if the restart also took the clock back to before them: a restart
-- takes longer than a millisecond, so a call made after it begins in a tick
-- past every id issued before the crash, and the first draw jumps to the
-- clock.  On a standby, nextval() refuses (read_only_sql_transaction,
-- 25006), so no id is issued there.  After a promotion the state is the
-- one replayed, and the first draw jumps to the clock: a promoted server
-- whose old primary still issues ids under the same worker id would issue
-- the same ids, as with the C edition: give it a worker id of its own
-- before its first id (snowflake_set_worker_id()), or keep the old primary
-- from issuing.
--
-- The worker id is set once per server with snowflake_set_worker_id(n), by
-- the schema's owner, and recorded with the server's system identifier; a
-- jump refuses (object_not_in_prerequisite_state, 55000) when none is set,
-- and when the database was restored or copied into another cluster (a
-- dump restored elsewhere, pg_upgrade), whose system identifier differs,
-- until that server is given its own.  A physical standby has its
-- primary's system identifier and refuses to issue ids anyway.

\set ON_ERROR_STOP on
\if :{?schema}
\else
\set schema snowflake
\endif
SELECT pg_catalog.set_config('snowflake_portable.schema', :'schema', false);

DO $install$
DECLARE
	s pg_catalog.text := pg_catalog.current_setting('snowflake_portable.schema');
	q pg_catalog.text := pg_catalog.quote_ident(s);
BEGIN
	IF pg_catalog.current_setting('server_version_num')::pg_catalog.int4 < 130000 THEN
		RAISE EXCEPTION 'the plain-SQL edition of snowflake needs PostgreSQL 13 or later'
			USING ERRCODE = 'feature_not_supported';
	END IF;
	-- no notice for each object kept when the script runs again
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	EXECUTE pg_catalog.format('CREATE SCHEMA IF NOT EXISTS %s', q);

	-- the state and the sequence lock; kept when the script runs again
	EXECUTE pg_catalog.format('CREATE SEQUENCE IF NOT EXISTS %s._snowflake_state AS bigint MINVALUE 0 NO CYCLE', q);
	EXECUTE pg_catalog.format('CREATE SEQUENCE IF NOT EXISTS %s._snowflake_gen AS bigint MINVALUE 0 START 0 NO CYCLE', q);
	-- One value a nextval(), every one through shared buffers: a session's
	-- cache of values would hide its draws from the others.
	EXECUTE pg_catalog.format('ALTER SEQUENCE %1$s._snowflake_state INCREMENT 1 CACHE 1 NO CYCLE', q);
	EXECUTE pg_catalog.format('ALTER SEQUENCE %1$s._snowflake_gen INCREMENT 1 CACHE 1 NO CYCLE', q);
	IF pg_catalog.pg_sequence_last_value(pg_catalog.format('%s._snowflake_gen', q)::pg_catalog.regclass) IS NULL THEN
		-- 0: even, no jump in progress
		EXECUTE pg_catalog.format('SELECT pg_catalog.nextval(%L::pg_catalog.regclass)', q || '._snowflake_gen');
	END IF;
	EXECUTE pg_catalog.format($sql$
		CREATE TABLE IF NOT EXISTS %s._snowflake_worker (
			one pg_catalog.bool PRIMARY KEY DEFAULT true CHECK (one),
			worker_id pg_catalog.int4 NOT NULL CHECK (worker_id BETWEEN 0 AND 1023),
			system_identifier pg_catalog.int8 NOT NULL,
			set_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()
		)$sql$, q);
	EXECUTE pg_catalog.format('REVOKE ALL ON %1$s._snowflake_state, %1$s._snowflake_gen, %1$s._snowflake_worker FROM PUBLIC', q);
	EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA %s TO PUBLIC', q);
	-- draws only waste values; the lock is only read
	EXECUTE pg_catalog.format('GRANT USAGE ON SEQUENCE %s._snowflake_state TO PUBLIC', q);
	EXECUTE pg_catalog.format('GRANT SELECT ON SEQUENCE %s._snowflake_gen TO PUBLIC', q);

	-- The jump: moves the state forward to the clock's tick, one session
	-- at a time, inside the sequence lock; or, asked for a block of ids,
	-- also takes up to that many values after the state's (in one tick)
	-- for the caller alone, by setting the state past them in the same
	-- way.  The lock is an advisory lock, session-level (released before
	-- the call returns, never held across a commit, let go by the handler
	-- on every error, cancels included), and taken without waiting.  Any
	-- role may take an advisory lock, so a session that finds it taken
	-- waits at most 1 s for it, then names the holder in an error.
	-- (0.4.0's earlier forms)
	EXECUTE pg_catalog.format('DROP FUNCTION IF EXISTS %s._snowflake_jump()', q);
	EXECUTE pg_catalog.format('DROP FUNCTION IF EXISTS %s._snowflake_jump(pg_catalog.int8)', q);
	EXECUTE pg_catalog.format($sql$
		CREATE OR REPLACE FUNCTION %1$s._snowflake_jump(since_tick pg_catalog.int8, block pg_catalog.int4)
		RETURNS pg_catalog.int8
		LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
		SET search_path = pg_catalog, pg_temp
		AS $f$
		DECLARE
			gen CONSTANT pg_catalog.regclass := %2$L;
			state CONSTANT pg_catalog.regclass := %3$L;
			started CONSTANT pg_catalog.timestamptz := clock_timestamp();
			g pg_catalog.int8;
			w pg_catalog.int8;
			first pg_catalog.int8;
			now_tick pg_catalog.int8;
			worker pg_catalog.int4;
			sysid pg_catalog.int8;
			holders pg_catalog.text;
		BEGIN
			-- since_tick is the clock's tick when the caller began, never
			-- taken beyond the clock's now: a caller cannot force jumps.  A
			-- jump (block 0) is done when the state has reached it.  One
			-- session jumps.  The others that find it jumping sleep a
			-- millisecond at a time until the state has moved, not on the
			-- lock: a lock's waiters are woken one after another, each
			-- holding the lock until it gets a CPU, which on a busy server is
			-- a queue no session gets through.  Sleeping, they leave the CPU
			-- to the session that jumps.
			now_tick := floor(date_part('epoch', clock_timestamp()) * 1000)::int8 - 1735689600000;
			since_tick := least(since_tick, now_tick);
			IF block IS NULL OR block < 0 OR block > 4096 THEN
				RAISE EXCEPTION 'a block of snowflake ids is 0 to 4096 ids, not %%', coalesce(block::pg_catalog.text, 'null')
					USING ERRCODE = 'invalid_parameter_value';
			END IF;
			WHILE NOT pg_try_advisory_lock(1936617325, gen::oid::int4) LOOP
				PERFORM pg_sleep(0.001);
				w := pg_sequence_last_value(state);
				g := pg_sequence_last_value(gen);
				IF block = 0 AND (w IS NULL OR ((w >> 12) & 2199023255551) >= since_tick) AND g %% 2 = 0 THEN
					RETURN NULL;
				END IF;
				IF clock_timestamp() - started > interval '1 s' THEN
					RAISE EXCEPTION USING ERRCODE = 'lock_not_available';
				END IF;
			END LOOP;
			-- Another session may have jumped since the caller looked: a look
			-- at the state spares a second jump, whose sequence lock would
			-- make every draw in flight draw again (a state just set, not yet
			-- drawn from, shows its value only to a select).
			w := pg_sequence_last_value(state);
			IF w IS NULL THEN
				SELECT s.last_value INTO w FROM %1$s._snowflake_state s;
			END IF;
			g := pg_sequence_last_value(gen);
			-- (the sequence lock left odd by a jump that failed half-way is
			-- set even here, or draws would wait for it for ever)
			IF block > 0 OR ((w >> 12) & 2199023255551) < since_tick OR g IS NULL OR g %% 2 = 1 THEN
				SELECT r.worker_id, r.system_identifier INTO worker, sysid FROM %1$s._snowflake_worker r;
				IF NOT FOUND THEN
					RAISE EXCEPTION 'no worker id is set for snowflake ids in schema %%', %4$L
						USING ERRCODE = 'object_not_in_prerequisite_state',
							  HINT = pg_catalog.format('Give this server a worker id of its own: SELECT %%s.snowflake_set_worker_id(n), n in 0..1023.', %1$L);
				END IF;
				IF sysid <> (SELECT c.system_identifier FROM pg_control_system() c) THEN
					RAISE EXCEPTION 'the worker id of schema %% was set on another server', %4$L
						USING ERRCODE = 'object_not_in_prerequisite_state',
							  DETAIL = pg_catalog.format('It was set on the server with system identifier %%s; this one is %%s. A database restored or copied from another server keeps that server''s worker id.',
														 sysid, (SELECT c.system_identifier FROM pg_control_system() c)),
							  HINT = pg_catalog.format('Give this server a worker id of its own: SELECT %%s.snowflake_set_worker_id(n).', %1$L);
				END IF;
				-- a jump that failed half-way left the lock odd: no jump runs
				-- now (never drawn from, it gives its start, 0, first)
				IF g IS NULL OR g %% 2 = 1 THEN
					PERFORM nextval(gen);
				END IF;
				-- odd: a jump in progress.  Its reading of the state is drawn
				-- inside, so that every value drawn outside is below or above it.
				PERFORM nextval(gen);
				w := nextval(state);
				now_tick := floor(date_part('epoch', clock_timestamp()) * 1000)::int8 - 1735689600000;
				IF block = 0 THEN
					IF ((w >> 12) & 2199023255551) < now_tick THEN
						PERFORM setval(state, (worker::int8 << 53) | (now_tick << 12), false);
					END IF;
				ELSE
					-- the block: from the value after the reading, or from the
					-- clock's tick if the reading lies before the caller's; up
					-- to the end of its tick.  None of a tick the clock has not
					-- reached: then nothing is taken, and the caller waits for
					-- the clock and asks again (a batch taking ticks ahead would
					-- keep every other caller waiting for the clock).
					IF ((w >> 12) & 2199023255551) < since_tick THEN
						first := (worker::int8 << 53) | (now_tick << 12);
					ELSE
						first := w + 1;
					END IF;
					IF ((first >> 12) & 2199023255551) - now_tick > 5 THEN
						PERFORM nextval(gen);	-- even again, nothing taken
						RAISE EXCEPTION 'clock moved backwards by %% ms', ((first >> 12) & 2199023255551) - now_tick
							USING ERRCODE = 'system_error',
								  DETAIL = 'The last id was issued at a time more than 5 ms after the clock''s current time.',
								  HINT = 'Ids are issued again once the clock passes the time of the last id; check the server''s time synchronisation.';
					END IF;
					IF ((first >> 12) & 2199023255551) > now_tick THEN
						first := NULL;
					ELSE
						PERFORM setval(state, first + least(block, 4096 - (first & 4095)) - 1, true);
					END IF;
				END IF;
				PERFORM nextval(gen);	-- even again
			END IF;
			PERFORM pg_advisory_unlock(1936617325, gen::oid::int4);
			RETURN first;
		EXCEPTION WHEN OTHERS OR query_canceled THEN
			-- let go of the lock whatever the error, also one taken just before it
			PERFORM pg_advisory_unlock(1936617325, gen::oid::int4)
			   FROM pg_locks l
			  WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.granted AND l.mode = 'ExclusiveLock'
				AND l.classid = 1936617325 AND l.objid = gen::oid AND l.objsubid = 2
				AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database());
			IF SQLSTATE = '55P03' THEN
				SELECT string_agg(DISTINCT l.pid::text, ', ') INTO holders
				  FROM pg_locks l
				 WHERE l.locktype = 'advisory' AND l.pid <> pg_backend_pid() AND l.granted
				   AND l.classid = 1936617325 AND l.objid = gen::oid AND l.objsubid = 2
				   AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database());
				RAISE EXCEPTION 'could not move the state of snowflake ids in schema %%: its lock is held by process %%', %4$L, coalesce(holders, '(gone)')
					USING ERRCODE = 'lock_not_available',
						  DETAIL = pg_catalog.format('The state''s lock (advisory lock 1936617325, %%s) is held for moments by the session moving the state to the clock; it was not let go for 1 s.', gen::oid::int4),
						  HINT = 'A session that holds this lock stops every snowflake_nextval() of the schema: end it with pg_terminate_backend() if it is not one of these functions.';
			END IF;
			RAISE;
		END
		$f$$sql$, q, q || '._snowflake_gen', q || '._snowflake_state', s);
	EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s._snowflake_jump(pg_catalog.int8, pg_catalog.int4) FROM PUBLIC', q);
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s._snowflake_jump(pg_catalog.int8, pg_catalog.int4) TO PUBLIC', q);

	EXECUTE pg_catalog.format($sql$
		CREATE OR REPLACE FUNCTION %1$s.snowflake_nextval() RETURNS pg_catalog.int8
		LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
		AS $f$
		-- No SET search_path, which would cost every call: every name and
		-- operator is pg_catalog's, written so.
		DECLARE
			-- the clock's tick when the call began: the id lies in it or in
			-- a later tick the clock reaches before the call returns
			since_tick CONSTANT pg_catalog.int8 := pg_catalog.int8mi(pg_catalog.floor(pg_catalog.float8mul(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()), 1000))::pg_catalog.int8, 1735689600000);
			g1 pg_catalog.int8;
			v pg_catalog.int8;
			t pg_catalog.int8;
			now_tick pg_catalog.int8;
		BEGIN
			LOOP
				g1 := pg_catalog.pg_sequence_last_value(%2$L::pg_catalog.regclass);
				IF pg_catalog.int8mod(g1, 2) OPERATOR(pg_catalog.=) 0 THEN
					v := pg_catalog.nextval(%3$L::pg_catalog.regclass);
					IF pg_catalog.pg_sequence_last_value(%2$L::pg_catalog.regclass) OPERATOR(pg_catalog.=) g1 THEN
						t := pg_catalog.int8and(pg_catalog.int8shr(v, 12), 2199023255551);
						IF t OPERATOR(pg_catalog.>=) since_tick THEN
							IF t OPERATOR(pg_catalog.>) since_tick THEN
								now_tick := pg_catalog.int8mi(pg_catalog.floor(pg_catalog.float8mul(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()), 1000))::pg_catalog.int8, 1735689600000);
								IF pg_catalog.int8mi(t, now_tick) OPERATOR(pg_catalog.>) 5 THEN
									RAISE EXCEPTION 'clock moved backwards by %% ms', pg_catalog.int8mi(t, now_tick)
										USING ERRCODE = 'system_error',
											  DETAIL = 'The last id was issued at a time more than 5 ms after the clock''s current time.',
											  HINT = 'Ids are issued again once the clock passes the time of the last id; check the server''s time synchronisation.';
								END IF;
								-- the sequence ran into a tick the clock has not reached
								WHILE now_tick OPERATOR(pg_catalog.<) t LOOP
									now_tick := pg_catalog.int8mi(pg_catalog.floor(pg_catalog.float8mul(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()), 1000))::pg_catalog.int8, 1735689600000);
								END LOOP;
							END IF;
							RETURN pg_catalog.int8or(pg_catalog.int8or(pg_catalog.int8shl(t, 22),
														pg_catalog.int8shl(pg_catalog.int8shr(v, 53), 12)),
									 pg_catalog.int8and(v, 4095));
						END IF;
					END IF;
				END IF;
				-- Behind the call's tick, or a jump ran meanwhile: draw again,
				-- after moving the state unless it has moved since (a state
				-- just set by a jump and not yet drawn from reads as null), or
				-- after waiting for a jump in progress.
				t := pg_catalog.int8and(pg_catalog.int8shr(pg_catalog.pg_sequence_last_value(%3$L::pg_catalog.regclass), 12), 2199023255551);
				IF t OPERATOR(pg_catalog.<) since_tick OR pg_catalog.int8mod(g1, 2) OPERATOR(pg_catalog.=) 1 THEN
					PERFORM %1$s._snowflake_jump(since_tick, 0);
				END IF;
			END LOOP;
		END
		$f$$sql$, q, q || '._snowflake_gen', q || '._snowflake_state');

	-- n ids, increasing, taken a block (up to a tick's 4,096) at a time
	-- with one jump each, instead of one draw each.  PL/pgSQL returns a set
	-- whole, so all n are taken before the first row is returned (a LIMIT
	-- on the batch leaves the rest issued to no one).  As in the C edition,
	-- a batch takes no tick ahead of the clock: it waits for the clock, so
	-- that one caller asking for millions of ids cannot push the state
	-- ahead and make every other caller wait.
	EXECUTE pg_catalog.format($sql$
		CREATE OR REPLACE FUNCTION %1$s.snowflake_nextval_batch(n pg_catalog.int4) RETURNS SETOF pg_catalog.int8
		LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE ROWS 1000
		SET search_path = pg_catalog, pg_temp
		AS $f$
		DECLARE
			since_tick CONSTANT pg_catalog.int8 := pg_catalog.int8mi(pg_catalog.floor(pg_catalog.float8mul(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()), 1000))::pg_catalog.int8, 1735689600000);
			remaining pg_catalog.int4 := n;
			v pg_catalog.int8;
			k pg_catalog.int4;
			t pg_catalog.int8;
			first_id pg_catalog.int8;
		BEGIN
			IF n < 0 THEN
				RAISE EXCEPTION 'number of ids must not be negative'
					USING ERRCODE = 'invalid_parameter_value';
			END IF;
			WHILE remaining > 0 LOOP
				v := %1$s._snowflake_jump(since_tick, least(remaining, 4096));
				IF v IS NULL THEN
					-- the state is in a tick the clock has not reached (up to
					-- 5 ms): wait for the clock's next tick, and ask again
					t := pg_catalog.int8mi(pg_catalog.floor(pg_catalog.float8mul(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()), 1000))::pg_catalog.int8, 1735689600000);
					WHILE pg_catalog.int8mi(pg_catalog.floor(pg_catalog.float8mul(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()), 1000))::pg_catalog.int8, 1735689600000) <= t LOOP
						NULL;
					END LOOP;
					CONTINUE;
				END IF;
				k := least(remaining, 4096 - (v & 4095)::pg_catalog.int4);
				t := (v >> 12) & 2199023255551;
				first_id := (t << 22) | ((v >> 53) << 12) | (v & 4095);
				RETURN QUERY SELECT generate_series(first_id, first_id + k - 1);
				remaining := remaining - k;
			END LOOP;
		END
		$f$$sql$, q);

	EXECUTE pg_catalog.format($sql$
		CREATE OR REPLACE FUNCTION %1$s.snowflake_set_worker_id(worker_id pg_catalog.int4) RETURNS pg_catalog.int4
		LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE STRICT
		SET search_path = pg_catalog, pg_temp
		AS $f$
		BEGIN
			IF worker_id < 0 OR worker_id > 1023 THEN
				RAISE EXCEPTION 'worker id %% is out of range', worker_id
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = 'A worker id is 0 to 1023.';
			END IF;
			INSERT INTO %1$s._snowflake_worker AS r (worker_id, system_identifier)
			VALUES (worker_id, (SELECT c.system_identifier FROM pg_control_system() c))
			ON CONFLICT (one) DO UPDATE
			   SET worker_id = excluded.worker_id, system_identifier = excluded.system_identifier,
				   set_at = now();
			RETURN worker_id;
		END
		$f$$sql$, q);
	EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s.snowflake_set_worker_id(pg_catalog.int4) FROM PUBLIC', q);

	EXECUTE pg_catalog.format($sql$
		CREATE OR REPLACE FUNCTION %1$s.snowflake_decode(id pg_catalog.int8,
			OUT created_at pg_catalog.timestamptz, OUT timestamp_ms pg_catalog.int8,
			OUT worker_id pg_catalog.int4, OUT sequence pg_catalog.int4)
		RETURNS SETOF record
		LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
		SET search_path = pg_catalog, pg_temp
		AS $f$
		BEGIN
			IF id < 0 THEN
				RAISE EXCEPTION 'snowflake id must not be negative'
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = format('The id was %%s.', id);
			END IF;
			timestamp_ms := (id >> 22) + 1735689600000;
			created_at := pg_catalog.to_timestamp(0) + timestamp_ms * interval '1 millisecond';
			worker_id := ((id >> 12) & 1023)::pg_catalog.int4;
			sequence := (id & 4095)::pg_catalog.int4;
			RETURN NEXT;
		END
		$f$$sql$, q);

	EXECUTE pg_catalog.format($sql$
		CREATE OR REPLACE FUNCTION %1$s.snowflake_timestamp(id pg_catalog.int8) RETURNS pg_catalog.timestamptz
		LANGUAGE sql STABLE STRICT PARALLEL SAFE
		SET search_path = pg_catalog, pg_temp
		AS $f$
			SELECT d.created_at FROM %1$s.snowflake_decode(id) d
		$f$$sql$, q);

	EXECUTE pg_catalog.format($sql$
		CREATE OR REPLACE FUNCTION %1$s.snowflake_from_timestamp(ts pg_catalog.timestamptz) RETURNS pg_catalog.int8
		LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
		SET search_path = pg_catalog, pg_temp
		AS $f$
		DECLARE
			ms pg_catalog.int8;
		BEGIN
			IF pg_catalog.isfinite(ts) THEN
				-- truncated to the millisecond first: a float8 of seconds with
				-- microseconds may fall just below a millisecond it lies on
				ms := pg_catalog.round(pg_catalog.date_part('epoch', pg_catalog.date_trunc('milliseconds', ts)) * 1000)::pg_catalog.int8
					  - 1735689600000;
			END IF;
			IF ms IS NULL OR ms < 0 OR ms > 2199023255551 THEN
				RAISE EXCEPTION 'timestamp out of range for snowflake ids'
					USING ERRCODE = 'datetime_field_overflow',
						  DETAIL = 'Snowflake ids run from 2025-01-01 00:00:00+00 for 2^41 ms.';
			END IF;
			RETURN ms << 22;
		END
		$f$$sql$, q);

	-- text ids: 13 characters of Crockford base32, in id order
	EXECUTE pg_catalog.format($sql$
		CREATE OR REPLACE FUNCTION %1$s.snowflake_to_text(id pg_catalog.int8) RETURNS pg_catalog.text
		LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
		SET search_path = pg_catalog, pg_temp
		AS $f$
		DECLARE
			out text := '';
		BEGIN
			IF id < 0 THEN
				RAISE EXCEPTION 'snowflake id must not be negative'
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = format('The id was %%s.', id);
			END IF;
			FOR k IN REVERSE 12..0 LOOP
				out := out || substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((id >> (5 * k)) & 31)::int4 + 1, 1);
			END LOOP;
			RETURN out;
		END
		$f$$sql$, q);

	EXECUTE pg_catalog.format($sql$
		CREATE OR REPLACE FUNCTION %1$s.snowflake_from_text(pg_catalog.text) RETURNS pg_catalog.int8
		LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
		SET search_path = pg_catalog, pg_temp
		AS $f$
		DECLARE
			input CONSTANT text := $1;
			c text;
			value int4;
			id int8 := 0;
		BEGIN
			IF length(input) <> 13 THEN
				RAISE EXCEPTION 'snowflake text id has %% characters, not 13', length(input)
					USING ERRCODE = 'invalid_text_representation';
			END IF;
			FOR i IN 1..13 LOOP
				c := substr(input, i, 1);
				-- ASCII only, either case; I and L read as 1, O as 0
				value := strpos('0123456789ABCDEFGHJKMNPQRSTVWXYZIOL',
								translate(c, 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ')) - 1;
				IF octet_length(c) <> 1 OR value < 0 THEN
					RAISE EXCEPTION 'invalid character "%%" at position %% of snowflake text id "%%"', c, i, input
						USING ERRCODE = 'invalid_text_representation',
							  DETAIL = 'Crockford base32 has the digits 0 to 9 and the letters A to Z except U, in either case; I and L are read as 1, O as 0.';
				END IF;
				value := CASE value WHEN 32 THEN 1 WHEN 33 THEN 0 WHEN 34 THEN 1 ELSE value END;
				IF i = 1 AND value > 7 THEN
					-- checked once every character is: the C edition's order
					id := -1;
				ELSIF id >= 0 THEN
					id := id * 32 + value;
				END IF;
			END LOOP;
			IF id < 0 THEN
				RAISE EXCEPTION 'invalid character "%%" at position 1 of snowflake text id "%%"', substr(input, 1, 1), input
					USING ERRCODE = 'invalid_text_representation',
						  DETAIL = 'The first character of a snowflake text id is 0 to 7: a larger one makes a value beyond bigint.';
			END IF;
			RETURN id;
		END
		$f$$sql$, q);
END
$install$;

-- The conversion from serial: the C edition's own functions
-- (sql/install/convert.sql, which needs nothing compiled), created in the
-- schema; then snowflake_convert_column() made to call their work with
-- this schema's snowflake_nextval().  They are dropped first, to be made
-- again when the script runs again.  (search_path names only the schema:
-- pg_catalog, searched first when it is not named, resolves every type.)
DO $drop$
DECLARE
	q pg_catalog.text := pg_catalog.quote_ident(pg_catalog.current_setting('snowflake_portable.schema'));
	f pg_catalog.text;
BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	FOREACH f IN ARRAY ARRAY[
		'snowflake_convert_column(pg_catalog.regclass, pg_catalog.name, pg_catalog.bool, pg_catalog.bool)',
		'_snowflake_convert_column(pg_catalog.regclass, pg_catalog.name, pg_catalog.bool, pg_catalog.bool, pg_catalog.name)',
		'_snowflake_convert_fk_closure(pg_catalog.regclass, pg_catalog.name)',
		'_snowflake_convert_obstacles(pg_catalog.regclass, pg_catalog.name, pg_catalog.bool, pg_catalog.oid[], pg_catalog.name[], pg_catalog.text, pg_catalog.text)',
		'_snowflake_convert_statements(pg_catalog.regclass, pg_catalog.name, pg_catalog.bool, pg_catalog.oid[], pg_catalog.name[], pg_catalog.oid[], pg_catalog.oid[], pg_catalog.oid[], pg_catalog.oid[], pg_catalog.bool, pg_catalog.oid[], pg_catalog.text)'] LOOP
		EXECUTE pg_catalog.format('DROP FUNCTION IF EXISTS %s.%s', q, f);
	END LOOP;
END
$drop$;
SELECT pg_catalog.set_config('search_path', pg_catalog.quote_ident(:'schema'), false) IS NOT NULL AS search_path_set \gset
\ir ../install/convert.sql
RESET search_path;
DO $convert$
DECLARE
	s pg_catalog.text := pg_catalog.current_setting('snowflake_portable.schema');
	q pg_catalog.text := pg_catalog.quote_ident(s);
BEGIN
	EXECUTE pg_catalog.format($sql$
		CREATE OR REPLACE FUNCTION %1$s.snowflake_convert_column(
			tbl pg_catalog.regclass,
			col pg_catalog.name DEFAULT 'id',
			dry_run pg_catalog.bool DEFAULT false,
			drop_sequence pg_catalog.bool DEFAULT false)
		RETURNS SETOF pg_catalog.text
		LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
		ROWS 10
		SET search_path = pg_catalog, pg_temp
		AS $f$
		BEGIN
			RETURN QUERY SELECT c FROM %1$s._snowflake_convert_column(tbl, col, dry_run, drop_sequence, %2$L::pg_catalog.name) c;
		END
		$f$$sql$, q, s);
END
$convert$;

RESET snowflake_portable.schema;

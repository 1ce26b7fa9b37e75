-- Objects planted by another role cannot capture the extension's own SQL.
-- A role with CREATE on the extension's schema (PUBLIC has it on "public"
-- in PostgreSQL 13 and 14, and in databases upgraded from them) plants,
-- beside every function of the extension, a look-alike taking text at
-- every position whose real type is not text, in that schema and in
-- "public"; and types named like pg_catalog's in a schema of its own.
-- Then a superuser runs every flow: the lease functions, the offline
-- conversion, the online conversion (dry run, a full run, a read of the
-- progress view while it waits at its index step, an abort), the public
-- ids.  A plant that runs says so with a WARNING (which the expected
-- output does not have) and a row that outlives an error's rollback only
-- if the flow went on; none may run.  (A call with two untyped arguments
-- would rather fail, "not unique", between the plants taking text at
-- either: that shows too.)
--
-- In a database of its own, so that the plants stay out of the other tests.
SET timezone = 'UTC';
\set VERBOSITY default
\set SHOW_CONTEXT never
SELECT current_database() AS regress_db \gset
CREATE DATABASE snowflake_planted;
\c snowflake_planted
SET timezone = 'UTC';
\set VERBOSITY default
\set SHOW_CONTEXT never
REVOKE CREATE ON SCHEMA public FROM PUBLIC;	-- (as 15 and later have it)
CREATE ROLE regress_planter;

-- CREATE EXTENSION and ALTER EXTENSION ... UPDATE warn when roles other
-- than the one installing it (and superusers) can create objects in the
-- extension's schema: PUBLIC, a role granted CREATE, the schema's owner.
CREATE SCHEMA sfw;
GRANT CREATE ON SCHEMA sfw TO PUBLIC, regress_planter;
CREATE EXTENSION snowflake SCHEMA sfw;
DROP EXTENSION snowflake;
REVOKE CREATE ON SCHEMA sfw FROM PUBLIC;
CREATE EXTENSION snowflake VERSION '0.3.0' SCHEMA sfw;
SET client_min_messages = warning;
ALTER EXTENSION snowflake UPDATE;
RESET client_min_messages;
DROP EXTENSION snowflake;
REVOKE CREATE ON SCHEMA sfw FROM regress_planter;
ALTER SCHEMA sfw OWNER TO regress_planter;
CREATE EXTENSION snowflake SCHEMA sfw;
DROP EXTENSION snowflake;
-- none when only the installing role can: the schema its own, or public
-- with CREATE for its owner alone
ALTER SCHEMA sfw OWNER TO CURRENT_USER;
CREATE EXTENSION snowflake SCHEMA sfw;
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake SCHEMA public;
DROP EXTENSION snowflake;
DROP SCHEMA sfw;

CREATE SCHEMA sfp;
CREATE EXTENSION snowflake SCHEMA sfp;
-- The hole: another role may create in the extension's schema and in public.
GRANT USAGE, CREATE ON SCHEMA sfp, public TO regress_planter;
CREATE SCHEMA planter AUTHORIZATION regress_planter;
GRANT USAGE ON SCHEMA planter TO PUBLIC;

SET ROLE regress_planter;
CREATE TABLE planter.ran (what text, as_role name);
GRANT INSERT ON planter.ran TO PUBLIC;
CREATE FUNCTION planter.spy(what text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO planter.ran VALUES (what, current_user);
	RAISE WARNING 'plant % ran as %', what, current_user;
	RETURN true;
END
$$;
-- The look-alikes, in the extension's schema and in public: for each
-- function, one with text at every position whose real type is not text,
-- one with text at each such position alone, and one with text at every
-- array's position (an untyped literal at those positions would make it
-- the better match).  Each records that it ran and returns
-- NULL or no row, so that the flow goes on.
DO $plant$
DECLARE
	p record;
	nsp text;
	i integer;
	types text[];
	args text;
BEGIN
	FOR p IN
		SELECT f.oid, f.proname, f.proretset, f.proargtypes::regtype[]::text[] AS types,
			   pg_get_function_result(f.oid) AS result
		  FROM pg_proc f
		  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = f.oid AND d.deptype = 'e'
		  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'snowflake'
		 WHERE f.prokind = 'f'
		   AND EXISTS (SELECT FROM unnest(f.proargtypes::oid[]) t WHERE t <> 'text'::regtype)
		 ORDER BY f.proname, f.oid
	LOOP
		FOR i IN -1 .. cardinality(p.types) LOOP
			CONTINUE WHEN i > 0 AND p.types[i] = 'text';
			-- (0: text everywhere; i: text at position i alone; -1: text
			-- for every array)
			types := (SELECT array_agg(CASE WHEN i = 0 OR n = i OR i = -1 AND t LIKE '%[]' THEN 'text'
											ELSE t END ORDER BY n)
						FROM unnest(p.types) WITH ORDINALITY AS a(t, n));
			args := (SELECT string_agg(format('a%s %s', n, t), ', ' ORDER BY n)
					   FROM unnest(types) WITH ORDINALITY AS a(t, n));
			FOREACH nsp IN ARRAY ARRAY['sfp', 'public'] LOOP
				CONTINUE WHEN to_regprocedure(format('%I.%I(%s)', nsp, p.proname,
													 array_to_string(types, ','))) IS NOT NULL;
				EXECUTE format($f$
					CREATE FUNCTION %I.%I(%s) RETURNS %s
					LANGUAGE plpgsql AS $body$
					BEGIN
						PERFORM planter.spy(%L);
						RETURN%s;
					END
					$body$$f$,
					nsp, p.proname, args, p.result,
					format('%s.%s(%s)', nsp, p.proname, array_to_string(types, ',')),
					CASE WHEN p.proretset OR p.result = 'void' THEN '' ELSE ' NULL' END);
			END LOOP;
		END LOOP;
	END LOOP;
END
$plant$;
-- Types of pg_catalog's names, whose CHECK runs the spy, in a schema a
-- superuser may list before pg_catalog.
CREATE DOMAIN planter.text AS pg_catalog.text CHECK (planter.spy('domain text'));
CREATE DOMAIN planter.name AS pg_catalog.name CHECK (planter.spy('domain name'));
CREATE DOMAIN planter.regclass AS pg_catalog.regclass CHECK (planter.spy('domain regclass'));
CREATE DOMAIN planter."char" AS pg_catalog."char" CHECK (planter.spy('domain "char"'));
CREATE DOMAIN planter.float8 AS pg_catalog.float8 CHECK (planter.spy('domain float8'));
CREATE DOMAIN planter.timestamptz AS pg_catalog.timestamptz CHECK (planter.spy('domain timestamptz'));
-- now() and = between integers, which the renewal's statement uses, for a
-- search_path that lists the planter's schema before pg_catalog.
CREATE FUNCTION planter.now() RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM planter.spy('now()');
	RETURN pg_catalog.now();
END
$$;
CREATE FUNCTION planter.int4_eq(a pg_catalog.int4, b pg_catalog.int4) RETURNS pg_catalog.bool
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM planter.spy('= (integer)');
	RETURN a OPERATOR(pg_catalog.=) b;
END
$$;
CREATE OPERATOR planter.= (LEFTARG = pg_catalog.int4, RIGHTARG = pg_catalog.int4,
						   FUNCTION = planter.int4_eq);
RESET ROLE;
-- (how many were planted in each of the two schemas)
SELECT n.nspname, count(*) AS plants
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE p.proowner = 'regress_planter'::regrole AND n.nspname IN ('sfp', 'public')
 GROUP BY n.nspname ORDER BY n.nspname;

-- The superuser's flows, with the caller's search_path the extension's
-- schema then public: every call of the test itself typed.
SET search_path = sfp, public;

-- Leases: claim, renew, release.
SELECT node, generation, previous_horizon_ms
  FROM sfp.snowflake_lease_claim('planted'::text, repeat('5', 32)::text, '{0}'::int4[], '{3}'::int4[],
								 NULL::int4, 5000::int4, 1000::int8);
SELECT renewed, horizon_ms FROM sfp.snowflake_lease_renew(0::int4, repeat('5', 32)::text, 5000::int4, 2000::int8);
SELECT sfp.snowflake_lease_release(0::int4, repeat('5', 32)::text, 1500::int8) AS released;
-- and 0.4.0's, with the chain of secrets
SELECT node, generation
  FROM sfp.snowflake_lease_claim('chained'::text, '{}'::text[], sha256(decode(repeat('6', 32), 'hex')),
								 '{0}'::int4[], '{3}'::int4[], NULL::int4, 5000::int4, 1000::int8);
SELECT renewed FROM sfp.snowflake_lease_renew(0::int4, ARRAY[repeat('6', 32)]::text[],
											  sha256(decode(repeat('7', 32), 'hex')), 5000::int4, 2000::int8);
SELECT sfp.snowflake_lease_release(0::int4, ARRAY[repeat('7', 32)]::text[], 1500::int8) AS released;

-- The offline conversion, dry run then for real.
CREATE SCHEMA shop;
CREATE TABLE shop.offline (id serial PRIMARY KEY, n integer);
CREATE TABLE shop.offline_refs (id serial PRIMARY KEY, offline_id integer REFERENCES shop.offline);
INSERT INTO shop.offline (n) SELECT g FROM generate_series(1, 50) g;
INSERT INTO shop.offline_refs (offline_id) SELECT g FROM generate_series(1, 50) g;
SELECT count(*) AS statements
  FROM sfp.snowflake_convert_column('shop.offline'::regclass, 'id'::name, true, false);
SELECT count(*) AS statements
  FROM sfp.snowflake_convert_column('shop.offline'::regclass, 'id'::name, false, false);
SELECT format_type(atttypid, atttypmod) AS offline_refs_type
  FROM pg_attribute WHERE attrelid = 'shop.offline_refs'::regclass AND attname = 'offline_id';

-- The online conversion: a dry run, then a run that stops at its index
-- step, the progress view read meanwhile, the indexes built, the rest.
CREATE TABLE shop.online (id serial PRIMARY KEY, n integer);
CREATE TABLE shop.online_refs (id serial PRIMARY KEY, online_id integer REFERENCES shop.online);
CREATE INDEX online_refs_online_id ON shop.online_refs (online_id);
INSERT INTO shop.online (n) SELECT g FROM generate_series(1, 50) g;
INSERT INTO shop.online_refs (online_id) SELECT g FROM generate_series(1, 50) g;
SET client_min_messages = warning;
CALL sfp.snowflake_convert_column_online('shop.online'::regclass, dry_run => true);
CALL sfp.snowflake_convert_column_online('shop.online'::regclass);
SELECT table_name, step, cardinality(pending) AS pending FROM sfp.snowflake_online_conversions;
SELECT unnest(pending) FROM sfp.snowflake_online_conversions \gexec
CALL sfp.snowflake_convert_column_online('shop.online'::regclass);
RESET client_min_messages;
SELECT count(*) AS conversions FROM sfp.snowflake_online_conversions;
SELECT format_type(atttypid, atttypmod) AS online_refs_type
  FROM pg_attribute WHERE attrelid = 'shop.online_refs'::regclass AND attname = 'online_id';

-- And one undone after its add step.
CREATE TABLE shop.undone (id serial PRIMARY KEY);
SET client_min_messages = warning;
CALL sfp.snowflake_convert_column_online('shop.undone'::regclass, stop_after => 'add'::text);
CALL sfp.snowflake_convert_column_online('shop.undone'::regclass, abort => true);
RESET client_min_messages;
SELECT count(*) AS conversions FROM sfp.snowflake_online_conversions;

-- Public ids: a key, an id there and back.
SELECT sfp.snowflake_public_key_create() > 0 AS key_made;
SELECT sfp.snowflake_id_from_public(sfp.snowflake_public_id(123456789::int8)) AS back;

-- A fresh session (PL/pgSQL resolves a function's types when it compiles
-- it, once per session) whose search_path lists the planter's types,
-- now() and = before pg_catalog: a lease claimed, renewed (the renewal,
-- C, pins no search_path: its statement is planned here, under this one)
-- and released; a dry run of each conversion.
\c snowflake_planted
SET search_path = planter, pg_catalog, sfp, public;
SELECT node, generation
  FROM sfp.snowflake_lease_claim('fresh'::pg_catalog.text, '{}'::pg_catalog.text[],
								 pg_catalog.sha256(pg_catalog.decode(pg_catalog.repeat('8', 32), 'hex')),
								 '{0}'::pg_catalog.int4[], '{3}'::pg_catalog.int4[], NULL::pg_catalog.int4,
								 5000::pg_catalog.int4, 1000::pg_catalog.int8);
SELECT renewed, horizon_ms
  FROM sfp.snowflake_lease_renew(0::pg_catalog.int4, ARRAY[pg_catalog.repeat('8', 32)]::pg_catalog.text[],
								 pg_catalog.sha256(pg_catalog.decode(pg_catalog.repeat('9', 32), 'hex')),
								 5000::pg_catalog.int4, 2500::pg_catalog.int8);
SELECT sfp.snowflake_lease_release(0::pg_catalog.int4, ARRAY[pg_catalog.repeat('9', 32)]::pg_catalog.text[],
								   1500::pg_catalog.int8) AS released;
CREATE TABLE shop.domains (id serial PRIMARY KEY);
SET client_min_messages = warning;
CALL sfp.snowflake_convert_column_online('shop.domains'::pg_catalog.regclass, dry_run => true);
SELECT count(*) AS statements
  FROM sfp.snowflake_convert_column('shop.domains'::pg_catalog.regclass, 'id'::pg_catalog.name, true, false);
RESET client_min_messages;
RESET search_path;

-- No plant ran.
SELECT count(*) AS plants_ran FROM planter.ran;

\c :regress_db
DROP DATABASE snowflake_planted;
DROP ROLE regress_planter;

-- The upgrade path: the objects of an extension created at the previous
-- release (0.1.0, whose install script is kept frozen in sql/) and then
-- brought to the current version with ALTER EXTENSION ... UPDATE must equal
-- those of a fresh CREATE EXTENSION of the current version, attribute by
-- attribute.  A change to the install script that the upgrade script does
-- not repeat (or the reverse) shows up as rows of the difference below.
--
-- In a database of its own, so that the other tests' objects (and their
-- dependencies on the extension) are not in the way.
SELECT current_database() AS regress_db \gset
CREATE DATABASE snowflake_upgrade;
\c snowflake_upgrade

-- One row per (member, attribute): every member of the extension that
-- pg_depend lists, what a user of it can observe, and the extension's own
-- settings.  Privileges are compared with the owner's role written as
-- "owner" (the two installs are made by the same role anyway) and a NULL
-- ACL as the default it stands for; bodies as hashes, to keep a difference
-- short.
CREATE FUNCTION upgrade_describe()
RETURNS TABLE (object text, attribute text, value text)
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $describe$
WITH ext AS (
	SELECT * FROM pg_extension WHERE extname = 'snowflake'
),
members AS (
	SELECT d.classid, d.objid, pg_describe_object(d.classid, d.objid, 0) AS object
	  FROM pg_depend d JOIN ext ON d.refobjid = ext.oid
	 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
),
acls AS (
	-- (object's identity, ACL with the owner named "owner")
	SELECT m.object,
		   string_agg(format('%s=%s%s/%s',
							 CASE WHEN a.grantee = 0 THEN 'PUBLIC'
								  WHEN a.grantee = o.owner THEN 'owner'
								  ELSE a.grantee::regrole::text END,
							 a.privilege_type,
							 CASE WHEN a.is_grantable THEN '*' ELSE '' END,
							 CASE WHEN a.grantor = o.owner THEN 'owner'
								  ELSE a.grantor::regrole::text END),
					  ', ' ORDER BY a.grantee, a.privilege_type) AS acl
	  FROM members m
	  JOIN (SELECT 'pg_proc'::regclass AS classid, p.oid, p.proowner AS owner,
				   coalesce(p.proacl, acldefault('f', p.proowner)) AS acl
			  FROM pg_proc p
			UNION ALL
			SELECT 'pg_class'::regclass, c.oid, c.relowner,
				   coalesce(c.relacl, acldefault((CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END)::"char",
												 c.relowner))
			  FROM pg_class c
			UNION ALL
			SELECT 'pg_type'::regclass, t.oid, t.typowner,
				   coalesce(t.typacl, acldefault('T', t.typowner))
			  FROM pg_type t) o ON o.classid = m.classid AND o.oid = m.objid
	  CROSS JOIN LATERAL aclexplode(o.acl) a
	 GROUP BY m.object
)
-- the extension itself
SELECT 'extension', 'version', extversion FROM ext
UNION ALL
SELECT 'extension', 'relocatable', extrelocatable::text FROM ext
UNION ALL
SELECT 'extension', 'schema', extnamespace::regnamespace::text FROM ext
UNION ALL
SELECT 'extension', 'configuration tables',
	   (SELECT string_agg(c::regclass::text, ', ' ORDER BY c::regclass::text)
		  FROM unnest(extconfig) AS c)
  FROM ext
UNION ALL
SELECT 'extension', 'configuration conditions', array_to_string(extcondition, ', ') FROM ext
UNION ALL
-- every member: that it is one, its comment and its privileges
SELECT m.object, 'member', pg_identify_object(m.classid, m.objid, 0)::text FROM members m
UNION ALL
SELECT m.object, 'comment', obj_description(m.objid, m.classid::regclass::name) FROM members m
UNION ALL
SELECT a.object, 'privileges', a.acl FROM acls a
UNION ALL
-- functions and procedures
SELECT m.object, x.attribute, x.value
  FROM members m
  JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
  JOIN pg_language l ON l.oid = p.prolang
 CROSS JOIN LATERAL (VALUES
	('arguments', pg_get_function_arguments(p.oid)),
	('result', pg_get_function_result(p.oid)),
	('kind', p.prokind::text),
	('language', l.lanname::text),
	('volatility', p.provolatile::text),
	('strict', p.proisstrict::text),
	('parallel', p.proparallel::text),
	('security', CASE WHEN p.prosecdef THEN 'definer' ELSE 'invoker' END),
	('leakproof', p.proleakproof::text),
	('cost', p.procost::text),
	('rows', p.prorows::text),
	('configuration', array_to_string(p.proconfig, ', ')),
	('support function', p.prosupport::regproc::text),
	('library', p.probin),
	('source', CASE WHEN l.lanname IN ('c', 'internal') THEN p.prosrc
					ELSE md5(p.prosrc) END)
 ) AS x(attribute, value)
UNION ALL
-- tables, views, sequences: kind, options, definition, columns
SELECT m.object, x.attribute, x.value
  FROM members m
  JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
 CROSS JOIN LATERAL (VALUES
	('relation kind', c.relkind::text),
	('options', array_to_string(c.reloptions, ', ')),
	('persistence', c.relpersistence::text),
	('row security', c.relrowsecurity::text),
	('definition', CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END)
 ) AS x(attribute, value)
UNION ALL
SELECT m.object, format('column %s', a.attnum),
	   concat_ws(' ', quote_ident(a.attname), format_type(a.atttypid, a.atttypmod),
				 CASE WHEN a.attnotnull THEN 'NOT NULL' END,
				 'DEFAULT ' || pg_get_expr(ad.adbin, ad.adrelid),
				 'COLLATE ' || CASE WHEN a.attcollation <> 0 THEN a.attcollation::regcollation::text END,
				 'COMMENT ' || quote_literal(col_description(a.attrelid, a.attnum)))
  FROM members m
  JOIN pg_attribute a ON m.classid = 'pg_class'::regclass AND a.attrelid = m.objid
					 AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
UNION ALL
-- indexes, constraints, triggers and policies of member tables
SELECT m.object, 'index ' || i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
  FROM members m
  JOIN pg_index i ON m.classid = 'pg_class'::regclass AND i.indrelid = m.objid
UNION ALL
SELECT m.object, 'constraint ' || co.conname, pg_get_constraintdef(co.oid)
  FROM members m
  JOIN pg_constraint co ON m.classid = 'pg_class'::regclass AND co.conrelid = m.objid
UNION ALL
-- (and of member domains)
SELECT m.object, 'constraint ' || co.conname, pg_get_constraintdef(co.oid)
  FROM members m
  JOIN pg_constraint co ON m.classid = 'pg_type'::regclass AND co.contypid = m.objid
UNION ALL
SELECT m.object, 'trigger ' || t.tgname, pg_get_triggerdef(t.oid)
  FROM members m
  JOIN pg_trigger t ON m.classid = 'pg_class'::regclass AND t.tgrelid = m.objid
 WHERE NOT t.tgisinternal
UNION ALL
SELECT m.object, 'policy ' || po.polname,
	   concat_ws(' ', po.polcmd, po.polpermissive, po.polroles::text,
				 'USING ' || pg_get_expr(po.polqual, po.polrelid),
				 'WITH CHECK ' || pg_get_expr(po.polwithcheck, po.polrelid))
  FROM members m
  JOIN pg_policy po ON m.classid = 'pg_class'::regclass AND po.polrelid = m.objid
$describe$;

-- (as in test layout: PUBLIC's CREATE on public, on 13 and 14, would draw
-- a warning)
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- the previous release, brought up to date
CREATE EXTENSION snowflake VERSION '0.1.0';
ALTER EXTENSION snowflake UPDATE;
SELECT e.extversion = a.default_version AS updated_to_default
  FROM pg_extension e JOIN pg_available_extensions a ON a.name = e.extname
 WHERE e.extname = 'snowflake';
CREATE TABLE upgraded AS SELECT * FROM upgrade_describe();

-- the current version, installed fresh
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake;
CREATE TABLE fresh AS SELECT * FROM upgrade_describe();

-- both described something, the same number of members
SELECT count(DISTINCT u.object) > 10 AS described,
	   count(DISTINCT u.object) = (SELECT count(DISTINCT object) FROM fresh) AS same_count
  FROM upgraded u;

-- what differs: no rows
(SELECT 'only after the update' AS side, * FROM upgraded
 EXCEPT
 SELECT 'only after the update', * FROM fresh)
UNION ALL
(SELECT 'only when fresh', * FROM fresh
 EXCEPT
 SELECT 'only when fresh', * FROM upgraded)
ORDER BY object, attribute, side;

-- Leases across the update from 0.2.0: the rows keep their horizons.  A
-- 0.2.0 lease has no token, so nobody renews or releases it again; once it
-- expires, the next claim of its worker id issues above its horizon.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '0.2.0';
SELECT node, generation FROM snowflake_lease_claim('old a', '{1}', '{2}', NULL, 60000, 1000000);
SELECT node, generation FROM snowflake_lease_claim('old b', '{1}', '{2}', NULL, 1, 2000000);
SELECT (snowflake_lease_renew(1, 1, 60000, 1500000)).renewed AS renewed_under_0_2_0;
ALTER EXTENSION snowflake UPDATE;
SELECT node, holder, generation, horizon_ms, floor_ms, claimed_by IS NULL AS no_role,
	   token_hash IS NULL AS no_token
  FROM snowflake_lease ORDER BY node;
-- no token renews or releases them, and the answer tells nothing
SELECT * FROM snowflake_lease_renew(1, repeat('0', 32), 60000, 0);
SELECT snowflake_lease_release(1, repeat('0', 32), 0);
-- worker id 2 expired: a new claim takes it over, above its horizon;
-- worker id 1 stays its old holder's until it expires
SELECT pg_sleep(0.01);
SELECT node, generation, previous_horizon_ms
  FROM snowflake_lease_claim('new', repeat('1', 32), '{1}', '{2}', NULL, 60000,
							 (extract(epoch FROM now()) * 1000)::bigint);
SELECT count(*) AS worker_id_1_free
  FROM snowflake_lease_claim('newer', repeat('2', 32), '{1}', '{1}', NULL, 60000,
							 (extract(epoch FROM now()) * 1000)::bigint);
SELECT node, holder, generation, horizon_ms > 2000000 AS above_old_horizon, floor_ms
  FROM snowflake_lease ORDER BY node;

-- Leases across the update from 0.3.0: a fleet's role granted 0.3.0's
-- calls may call 0.4.0's; a 0.3.0 server's lease goes on with its token,
-- by 0.3.0's calls; a released lease keeps no hash.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '0.3.0';
CREATE ROLE regress_fleet_03;
GRANT EXECUTE ON FUNCTION snowflake_lease_claim(text, text, integer[], integer[], integer, integer, bigint),
	snowflake_lease_renew(integer, text, integer, bigint),
	snowflake_lease_release(integer, text, bigint) TO regress_fleet_03;
SELECT node FROM snowflake_lease_claim('old', repeat('3', 32), '{1}', '{2}', NULL, 60000,
									   (extract(epoch FROM now()) * 1000)::bigint);
SELECT node FROM snowflake_lease_claim('gone', repeat('4', 32), '{1}', '{2}', NULL, 60000,
									   (extract(epoch FROM now()) * 1000)::bigint);
SELECT snowflake_lease_release(2, repeat('4', 32), 0);
ALTER EXTENSION snowflake UPDATE;
SELECT p.oid::regprocedure AS callable_by_the_fleet
  FROM pg_proc p
 WHERE p.proname LIKE 'snowflake\_lease\_%' AND has_function_privilege('regress_fleet_03', p.oid, 'EXECUTE')
 ORDER BY 1::text;
SELECT renewed FROM snowflake_lease_renew(1, repeat('3', 32), 60000, (extract(epoch FROM now()) * 1000)::bigint);
SELECT node, token_hash IS NULL AS no_hash FROM snowflake_lease ORDER BY node;
SELECT node FROM snowflake_lease_claim('new', '{}'::text[], sha256(decode(repeat('5', 32), 'hex')), '{1}', '{2}',
									   NULL, 60000, (extract(epoch FROM now()) * 1000)::bigint);
DROP OWNED BY regress_fleet_03;
DROP ROLE regress_fleet_03;

-- An online conversion begun under 0.3.0, across the update: the update
-- marks its triggers, and it finishes (or would abort) as one begun now.
DROP EXTENSION snowflake;
CREATE EXTENSION snowflake VERSION '0.3.0';
CREATE TABLE items (id serial PRIMARY KEY, n integer);
CREATE TABLE item_refs (id serial PRIMARY KEY, item_id integer REFERENCES items);
INSERT INTO items (n) SELECT g FROM generate_series(1, 20) g;
INSERT INTO item_refs (item_id) SELECT g FROM generate_series(1, 20) g;
SET client_min_messages = warning;
CALL snowflake_convert_column_online('items', stop_after => 'backfill');
ALTER EXTENSION snowflake UPDATE;
RESET client_min_messages;
SELECT t.tgrelid::regclass AS marked, d.description LIKE 'snowflake_convert_column_online(), started %' AS mark
  FROM pg_trigger t JOIN pg_description d ON d.classoid = 'pg_trigger'::regclass AND d.objoid = t.oid
 WHERE t.tgname = 'zz_snowflake_sync' ORDER BY 1;
SET client_min_messages = warning;
CALL snowflake_convert_column_online('items');
SELECT unnest(pending) FROM snowflake_online_conversions \gexec
CALL snowflake_convert_column_online('items');
RESET client_min_messages;
SELECT table_name, step FROM snowflake_online_conversions;
SELECT count(*) AS converted FROM pg_attribute
 WHERE attrelid IN ('items'::regclass, 'item_refs'::regclass) AND attname IN ('id', 'item_id')
   AND atttypid = 'int8'::regtype;

\c :regress_db
DROP DATABASE snowflake_upgrade;

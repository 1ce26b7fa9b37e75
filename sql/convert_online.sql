-- snowflake_convert_column_online(): the refusals (the offline converter's,
-- with the same SQLSTATEs, and those of the online path), the dry run, a
-- small conversion stopped and undone, and who may see and change the
-- state.  Ids are never printed.  The concurrency, interruptions and the
-- end state against the offline converter's are in TAP test 250.
SET timezone = 'UTC';
\set VERBOSITY default
\set SHOW_CONTEXT never

-- The extension in a schema of its own: the procedure finds it at run time.
CREATE SCHEMA sfx;
ALTER EXTENSION snowflake SET SCHEMA sfx;
GRANT USAGE ON SCHEMA sfx TO PUBLIC;
SET search_path = public;

CREATE SCHEMA shop;
CREATE TABLE shop.customers (
    id serial PRIMARY KEY,
    region text NOT NULL DEFAULT 'eu',
    referred_by integer REFERENCES shop.customers,
    name text,
    UNIQUE (id, region));
COMMENT ON COLUMN shop.customers.id IS 'the key';
CREATE TABLE shop.addresses (
    id serial PRIMARY KEY,
    customer_id integer NOT NULL DEFAULT 0,
    region text NOT NULL,
    FOREIGN KEY (customer_id, region) REFERENCES shop.customers (id, region) ON DELETE CASCADE);
CREATE TABLE shop.orders (
    id bigserial PRIMARY KEY,
    customer_id integer REFERENCES shop.customers ON DELETE SET NULL,
    amount integer);
CREATE INDEX orders_customer_idx ON shop.orders (customer_id DESC, amount) INCLUDE (id) WHERE amount > 0;
INSERT INTO shop.customers (name, referred_by)
    SELECT 'c' || g, CASE WHEN g > 1 THEN g - 1 END FROM generate_series(1, 300) g;
INSERT INTO shop.addresses (customer_id, region) SELECT id, region FROM shop.customers;
INSERT INTO shop.orders (customer_id, amount) SELECT 1 + g % 300, g FROM generate_series(1, 900) g;

-- The dry run: every statement of every step, changing nothing.
CALL sfx.snowflake_convert_column_online('shop.customers', dry_run => true);
SELECT count(*) AS conversions FROM sfx.snowflake_online_conversions;

-- The offline converter's refusals, with its SQLSTATEs.
\set VERBOSITY sqlstate
CALL sfx.snowflake_convert_column_online(NULL);
CALL sfx.snowflake_convert_column_online('shop.customers', batch_size => 0);
CALL sfx.snowflake_convert_column_online('shop.customers', stop_after => 'swap');
\set VERBOSITY default
CREATE VIEW shop.names AS SELECT name FROM shop.customers;
CALL sfx.snowflake_convert_column_online('shop.names');
CALL sfx.snowflake_convert_column_online('shop.customers', 'nope');
CALL sfx.snowflake_convert_column_online('shop.customers', 'name');
CALL sfx.snowflake_convert_column_online('shop.customers', 'referred_by');
CREATE VIEW shop.customer_ids AS SELECT id FROM shop.customers;
CALL sfx.snowflake_convert_column_online('shop.customers');
DROP VIEW shop.customer_ids;
CREATE ROLE regress_online_clerk;
GRANT USAGE ON SCHEMA shop TO regress_online_clerk;
SET ROLE regress_online_clerk;
CALL sfx.snowflake_convert_column_online('shop.customers');
RESET ROLE;
BEGIN ISOLATION LEVEL REPEATABLE READ;
CALL sfx.snowflake_convert_column_online('shop.customers');
ROLLBACK;
-- (in a transaction block, PostgreSQL's own refusal, at the first COMMIT,
-- before anything has changed)
BEGIN;
CALL sfx.snowflake_convert_column_online('shop.customers');
ROLLBACK;
SELECT count(*) AS conversions FROM sfx.snowflake_online_conversions;

-- What only the online path refuses, naming the offline function.
-- (a partitioned table is converted with its partitions, TAP 258, but not
-- one partitioned by the column: PostgreSQL cannot change its type)
CREATE TABLE shop.events (id serial, day date NOT NULL, PRIMARY KEY (id, day)) PARTITION BY RANGE (id);
CALL sfx.snowflake_convert_column_online('shop.events');
-- (an inheritance tree: each child has keys and indexes of its own)
CREATE TABLE shop.logs (id serial PRIMARY KEY, line text);
CREATE TABLE shop.logs_old () INHERITS (shop.logs);
CALL sfx.snowflake_convert_column_online('shop.logs');
DROP TABLE shop.logs CASCADE;
-- (a table without a primary key is walked by physical position: TAP 257)
CREATE TABLE shop.notes (customer_id integer REFERENCES shop.customers, note text);
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('shop.customers', dry_run => true);
RESET client_min_messages;
CREATE INDEX notes_expr ON shop.notes ((customer_id % 10));
CALL sfx.snowflake_convert_column_online('shop.customers');
DROP INDEX shop.notes_expr;
ALTER TABLE shop.notes ADD CHECK (customer_id > 0);
CALL sfx.snowflake_convert_column_online('shop.customers');
ALTER TABLE shop.notes DROP CONSTRAINT notes_customer_id_check;
GRANT SELECT (customer_id) ON shop.notes TO regress_online_clerk;
CALL sfx.snowflake_convert_column_online('shop.customers');
REVOKE SELECT (customer_id) ON shop.notes FROM regress_online_clerk;
ALTER TABLE shop.notes ADD COLUMN customer_id_snowflake text;
CALL sfx.snowflake_convert_column_online('shop.customers');
DROP TABLE shop.notes;
-- Triggers and rules that the backfill's updates would fire, on UPDATE
-- with no column list: those enabled as usual are kept from firing by
-- session_replication_role = replica, which a superuser caller and owner
-- may set (TAP 256 has the other roles); ENABLE ALWAYS and ENABLE REPLICA
-- ones would fire still, and are refused; disabled ones, or ones on other
-- columns, are no matter.  The setting is the session's again after each
-- call.
CREATE FUNCTION shop.touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
CREATE TRIGGER orders_touch BEFORE UPDATE ON shop.orders FOR EACH ROW EXECUTE FUNCTION shop.touch();
CREATE RULE orders_log AS ON UPDATE TO shop.orders DO ALSO NOTIFY orders;
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('shop.customers', dry_run => true);
RESET client_min_messages;
SHOW session_replication_role;
ALTER TABLE shop.orders ENABLE REPLICA TRIGGER orders_touch;
CALL sfx.snowflake_convert_column_online('shop.customers', dry_run => true);
SHOW session_replication_role;
ALTER TABLE shop.orders DISABLE TRIGGER orders_touch;
ALTER TABLE shop.orders ENABLE ALWAYS RULE orders_log;
CALL sfx.snowflake_convert_column_online('shop.customers', dry_run => true);
DROP RULE orders_log ON shop.orders;
CREATE TRIGGER orders_audit AFTER UPDATE ON shop.orders FOR EACH STATEMENT EXECUTE FUNCTION shop.touch();
ALTER TABLE shop.orders ENABLE ALWAYS TRIGGER orders_audit;
CALL sfx.snowflake_convert_column_online('shop.customers', dry_run => true);
DROP TRIGGER orders_audit ON shop.orders;
CREATE TRIGGER orders_amount BEFORE UPDATE OF amount ON shop.orders FOR EACH ROW EXECUTE FUNCTION shop.touch();
ALTER TABLE shop.orders ENABLE ALWAYS TRIGGER orders_amount;
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('shop.customers', dry_run => true);
RESET client_min_messages;
DROP TRIGGER orders_touch ON shop.orders;
DROP TRIGGER orders_amount ON shop.orders;
DROP FUNCTION shop.touch();
-- Values not below the next id: refused before anything changes, as offline.
CREATE TABLE shop.future (id bigserial PRIMARY KEY);
INSERT INTO shop.future VALUES (9000000000000000000);
\set VERBOSITY sqlstate
CALL sfx.snowflake_convert_column_online('shop.future');
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('shop.future', dry_run => true);
RESET client_min_messages;
\set VERBOSITY default
SELECT count(*) AS conversions, (SELECT count(*) FROM pg_attribute WHERE attrelid = 'shop.future'::regclass AND attname = 'id_snowflake') AS shadows
  FROM sfx.snowflake_online_conversions;
DROP TABLE shop.future;

-- Stopped after the backfill: the state and the view show it, and the
-- trigger keeps the shadow columns.  (Quietly: the backfill's notices
-- tell times.)
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('shop.customers', batch_size => 100, stop_after => 'backfill');
RESET client_min_messages;
SELECT table_name, column_name, step, rows_done, rows_estimated, percent_done, pending
  FROM sfx.snowflake_online_conversions;
SELECT count(*) AS unsynced FROM shop.customers WHERE id_snowflake IS DISTINCT FROM id;
INSERT INTO shop.orders (customer_id, amount) VALUES (7, 1) RETURNING customer_id_snowflake;

-- Every role reads the row; nobody but the table's owner changes it.
SET ROLE regress_online_clerk;
SELECT count(*) AS rows_seen FROM sfx.snowflake_online_state;
UPDATE sfx.snowflake_online_state SET step = 'swap';
INSERT INTO sfx.snowflake_online_state (tbl, col, step, rels, atts, drop_sequence, backfill_tables)
VALUES ('shop.customers', 'id', 'swap', '{}', '{}', false, '{}');
SELECT table_name, step FROM sfx.snowflake_online_conversions;
RESET ROLE;

-- The owner of a table whose conversion also widens another role's table
-- cannot change its row: the clerk's table, referenced from a
-- table of the superuser's, converted by the superuser.  So the clerk
-- cannot skip the backfill of the superuser's table by editing the row,
-- nor write a row naming a table that is not the clerk's.
CREATE SCHEMA clerk AUTHORIZATION regress_online_clerk;
SET ROLE regress_online_clerk;
CREATE TABLE clerk.items (id serial PRIMARY KEY);
INSERT INTO clerk.items SELECT FROM generate_series(1, 20);
RESET ROLE;
CREATE TABLE shop.item_refs (id serial PRIMARY KEY, item_id integer REFERENCES clerk.items);
INSERT INTO shop.item_refs (item_id) SELECT g FROM generate_series(1, 20) g;
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('clerk.items', stop_after => 'add');
RESET client_min_messages;
SET ROLE regress_online_clerk;
SELECT count(*) AS rows_seen FROM sfx.snowflake_online_state WHERE tbl = 'clerk.items'::regclass;
UPDATE sfx.snowflake_online_state SET step = 'swap', backfill_tables = '{clerk.items}'
 WHERE tbl = 'clerk.items'::regclass;
DELETE FROM sfx.snowflake_online_state WHERE tbl = 'clerk.items'::regclass;
SELECT step, backfill_tables FROM sfx.snowflake_online_state WHERE tbl = 'clerk.items'::regclass;
INSERT INTO sfx.snowflake_online_state (tbl, col, step, rels, atts, drop_sequence, backfill_tables)
VALUES ('clerk.items', 'id', 'index', '{clerk.items,shop.orders}', '{id,customer_id}', false, '{clerk.items,shop.orders}');
-- Nor a row naming a table that does not exist (yet): whatever table later
-- gets that OID, a superuser's say, would find it.
INSERT INTO sfx.snowflake_online_state (tbl, col, step, rels, atts, drop_sequence, backfill_tables)
VALUES (4000000000::oid::regclass, 'id', 'swap', '{4000000000}', '{id}', false, '{4000000000}');
INSERT INTO sfx.snowflake_online_state (tbl, col, step, rels, atts, drop_sequence, backfill_tables)
VALUES ('clerk.items', 'id', 'index', '{clerk.items,4000000000}', '{id,item_id}', false, '{clerk.items}');
-- The clerk's conversion of a table of its own writes, reads and deletes
-- its row as before.
CREATE TABLE clerk.own (id serial PRIMARY KEY);
INSERT INTO clerk.own SELECT FROM generate_series(1, 20);
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('clerk.own', stop_after => 'backfill');
RESET client_min_messages;
SELECT table_name, step, rows_done FROM sfx.snowflake_online_conversions WHERE table_name = 'clerk.own'::regclass;
SELECT tbl, step FROM sfx.snowflake_online_state;
CALL sfx.snowflake_convert_column_online('clerk.own', abort => true);
-- Row-level security that applies to the clerk: refused, for the backfill
-- would not see every row.
ALTER TABLE clerk.own ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CALL sfx.snowflake_convert_column_online('clerk.own', dry_run => true);
RESET ROLE;
SELECT table_name, step FROM sfx.snowflake_online_conversions;
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('clerk.items', abort => true);
RESET client_min_messages;
DROP TABLE shop.item_refs;

-- Nor can a row written by hand (by a superuser, or restored from a dump of
-- another database) steer a call: the clerk's own table, its row naming
-- shop.orders (neither the clerk's nor referencing the clerk's table).  A
-- superuser's call and its abort refuse it, and the view lists no
-- statement for it.
INSERT INTO sfx.snowflake_online_state (tbl, col, step, rels, atts, drop_sequence, backfill_tables)
VALUES ('clerk.items', 'id', 'index', '{clerk.items,shop.orders}', '{id,customer_id}', false, '{clerk.items,shop.orders}');
\set VERBOSITY sqlstate
CALL sfx.snowflake_convert_column_online('clerk.items');
CALL sfx.snowflake_convert_column_online('clerk.items', abort => true);
\set VERBOSITY default
CALL sfx.snowflake_convert_column_online('clerk.items');
SELECT table_name, step, pending FROM sfx.snowflake_online_conversions WHERE table_name = 'clerk.items'::regclass;
DELETE FROM sfx.snowflake_online_state WHERE tbl = 'clerk.items'::regclass;
DROP SCHEMA clerk CASCADE;

-- A row whose tables do not carry its conversion's mark (on the trigger of
-- each table the add step gave shadow columns): a table dropped and made
-- again with the same OID, a row written by hand.  The procedure neither
-- goes on nor aborts, and the table's own column named like a shadow
-- column stays.
CREATE TABLE shop.fresh (id serial PRIMARY KEY, id_snowflake text DEFAULT 'mine');
INSERT INTO shop.fresh DEFAULT VALUES;
INSERT INTO sfx.snowflake_online_state (tbl, col, step, rels, atts, drop_sequence, backfill_tables)
VALUES ('shop.fresh', 'id', 'validate', '{shop.fresh}', '{id}', false, '{shop.fresh}');
CALL sfx.snowflake_convert_column_online('shop.fresh');
CALL sfx.snowflake_convert_column_online('shop.fresh', abort => true);
SELECT table_name, step, pending FROM sfx.snowflake_online_conversions WHERE table_name = 'shop.fresh'::regclass;
SELECT id, id_snowflake FROM shop.fresh;
DELETE FROM sfx.snowflake_online_state WHERE tbl = 'shop.fresh'::regclass;
DROP TABLE shop.fresh;
SELECT table_name FROM sfx.snowflake_online_conversions;

-- The next step lists the indexes to build; then undo it all.
CALL sfx.snowflake_convert_column_online('shop.customers');
SELECT unnest(pending) FROM sfx.snowflake_online_conversions \gexec
CALL sfx.snowflake_convert_column_online('shop.customers', stop_after => 'validate');
SELECT step FROM sfx.snowflake_online_conversions;
-- A foreign key added meanwhile: the swap refuses, changing nothing.
CREATE TABLE shop.late (id serial PRIMARY KEY, customer_id integer REFERENCES shop.customers);
CALL sfx.snowflake_convert_column_online('shop.customers');
SELECT step FROM sfx.snowflake_online_conversions;
DROP TABLE shop.late;
CALL sfx.snowflake_convert_column_online('shop.customers', abort => true, dry_run => true);
CALL sfx.snowflake_convert_column_online('shop.customers', abort => true);
CALL sfx.snowflake_convert_column_online('shop.customers', abort => true);
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'shop.customers'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
SELECT count(*) AS conversions FROM sfx.snowflake_online_conversions;

-- Then the whole way, and once more: converted already.
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('shop.customers', batch_size => 250);
SELECT unnest(pending) FROM sfx.snowflake_online_conversions \gexec
CALL sfx.snowflake_convert_column_online('shop.customers');
RESET client_min_messages;
CALL sfx.snowflake_convert_column_online('shop.customers');
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
 WHERE adrelid = 'shop.customers'::regclass
   AND adnum = (SELECT attnum FROM pg_attribute WHERE attrelid = 'shop.customers'::regclass AND attname = 'id');
SELECT c.conrelid::regclass, pg_get_constraintdef(c.oid) FROM pg_constraint c
 WHERE c.conrelid IN ('shop.customers'::regclass, 'shop.addresses'::regclass, 'shop.orders'::regclass)
   AND c.contype <> 'n'   -- (NOT NULL, in pg_constraint from PostgreSQL 18)
 ORDER BY 1, 2;
SELECT pg_get_indexdef('shop.orders_customer_idx'::regclass);
SELECT col_description('shop.customers'::regclass, (SELECT attnum FROM pg_attribute WHERE attrelid = 'shop.customers'::regclass AND attname = 'id'));
SELECT count(*) AS customers, count(*) FILTER (WHERE id <= 300) AS old_ids FROM shop.customers;
INSERT INTO shop.customers (name) VALUES ('new') RETURNING id > 300 AS snowflake_id;
SELECT pg_get_serial_sequence('shop.customers', 'id') AS serial_sequence;

-- An identity: a free-standing sequence of the same name, parameters and
-- position takes its place, as offline; a serial whose sequence is dropped.
CREATE TABLE shop.tickets (id integer GENERATED ALWAYS AS IDENTITY (START 100) PRIMARY KEY, note text);
INSERT INTO shop.tickets (note) SELECT 't' || g FROM generate_series(1, 40) g;
CREATE TABLE shop.labels (id serial PRIMARY KEY, ticket_id integer REFERENCES shop.tickets);
INSERT INTO shop.labels (ticket_id) SELECT 100 + g FROM generate_series(0, 39) g;
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('shop.tickets');
SELECT unnest(pending) FROM sfx.snowflake_online_conversions \gexec
CALL sfx.snowflake_convert_column_online('shop.tickets');
CALL sfx.snowflake_convert_column_online('shop.labels', drop_sequence => true);
SELECT unnest(pending) FROM sfx.snowflake_online_conversions \gexec
CALL sfx.snowflake_convert_column_online('shop.labels', drop_sequence => true);
RESET client_min_messages;
SELECT a.attrelid::regclass, a.attname, format_type(a.atttypid, a.atttypmod), a.attidentity, pg_get_expr(d.adbin, d.adrelid)
  FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE a.attrelid IN ('shop.tickets'::regclass, 'shop.labels'::regclass) AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY 1, 2;
SELECT last_value, is_called FROM shop.tickets_id_seq;
SELECT to_regclass('shop.labels_id_seq') AS labels_sequence;
SELECT count(*) AS labels, count(*) FILTER (WHERE t.id IS NOT NULL) AS referencing
  FROM shop.labels l LEFT JOIN shop.tickets t ON t.id = l.ticket_id;

-- Partitions attached, created or detached during a conversion: before
-- each step the procedure compares the tables to backfill with the
-- catalogs.  A table attached brings rows whose shadow columns nothing set
-- (it needs the shadow column and the checks, NOT VALID, to be attached at
-- all): its rows are backfilled, from a later step too; one detached leaves
-- the conversion, with the hint of what to drop.
CREATE TABLE shop.visits (id serial, day date NOT NULL, note text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE shop.visits_2020 PARTITION OF shop.visits FOR VALUES FROM ('2020-01-01') TO ('2021-01-01');
CREATE TABLE shop.visits_2021 PARTITION OF shop.visits FOR VALUES FROM ('2021-01-01') TO ('2022-01-01');
CREATE TABLE shop.visits_2024 PARTITION OF shop.visits FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE TABLE shop.marks (id serial PRIMARY KEY, visit_id integer, day date, FOREIGN KEY (visit_id, day) REFERENCES shop.visits);
INSERT INTO shop.visits (day, note) SELECT '2020-01-01'::date + g % 730, 'v' || g FROM generate_series(1, 300) g;
INSERT INTO shop.visits (day, note) SELECT '2024-01-01'::date + g, 'w' || g FROM generate_series(1, 20) g;
INSERT INTO shop.marks (visit_id, day) SELECT id, day FROM shop.visits WHERE id % 3 = 0 AND day < '2024-01-01';
-- (an audit trigger on the partitioned table, which PostgreSQL gives each
-- partition, attached ones too: it records the writers' updates, never the
-- backfill's)
CREATE TABLE shop.visit_audit (id integer, note text);
CREATE FUNCTION shop.visit_audit() RETURNS trigger LANGUAGE plpgsql
	AS $$BEGIN INSERT INTO shop.visit_audit VALUES (NEW.id, NEW.note); RETURN NULL; END$$;
CREATE TRIGGER visits_audit AFTER UPDATE ON shop.visits FOR EACH ROW EXECUTE FUNCTION shop.visit_audit();
CREATE TABLE shop.visits_2022 (LIKE shop.visits INCLUDING DEFAULTS);
INSERT INTO shop.visits_2022 (day, note) SELECT '2022-01-01'::date + g, 'a' || g FROM generate_series(0, 49) g;
ALTER TABLE shop.visits_2022 ADD PRIMARY KEY (id, day);
CREATE TABLE shop.visits_2019 (LIKE shop.visits_2022 INCLUDING DEFAULTS);
INSERT INTO shop.visits_2019 (day, note) SELECT '2019-01-01'::date + g, 'b' || g FROM generate_series(0, 9) g;
ALTER TABLE shop.visits_2019 ADD PRIMARY KEY (id, day);
CREATE TEMP TABLE visits_before AS SELECT * FROM shop.visits UNION ALL SELECT * FROM shop.visits_2022
	UNION ALL SELECT * FROM shop.visits_2019;
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('shop.visits', stop_after => 'add');
RESET client_min_messages;
ALTER TABLE shop.visits_2022 ADD COLUMN id_snowflake bigint,
	ADD CONSTRAINT id_snowflake_not_null CHECK (id_snowflake IS NOT NULL) NOT VALID,
	ADD CONSTRAINT id_snowflake_equal CHECK (id_snowflake IS NOT DISTINCT FROM id) NOT VALID;
ALTER TABLE shop.visits ATTACH PARTITION shop.visits_2022 FOR VALUES FROM ('2022-01-01') TO ('2023-01-01');
ALTER TABLE shop.visits DETACH PARTITION shop.visits_2024;
CREATE TABLE shop.visits_2023 PARTITION OF shop.visits FOR VALUES FROM ('2023-01-01') TO ('2024-01-01');
INSERT INTO shop.visits (day, note) VALUES ('2023-03-01', 'new');
INSERT INTO visits_before SELECT id, day, note FROM shop.visits_2023;
UPDATE shop.visits SET note = note || '!' WHERE note IN ('v7', 'a3');
UPDATE visits_before SET note = note || '!' WHERE note IN ('v7', 'a3');
-- (stop_after => 'add': only what is followed before the next step)
CALL sfx.snowflake_convert_column_online('shop.visits', stop_after => 'add');
SELECT backfill_tables, step FROM sfx.snowflake_online_state WHERE tbl = 'shop.visits'::regclass;
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('shop.visits', stop_after => 'backfill');
RESET client_min_messages;
SELECT count(*) AS visits, count(*) FILTER (WHERE id_snowflake IS DISTINCT FROM id) AS unset FROM shop.visits;
-- attached after the backfill: back to it
ALTER TABLE shop.visits_2019 ADD COLUMN id_snowflake bigint,
	ADD CONSTRAINT id_snowflake_not_null CHECK (id_snowflake IS NOT NULL) NOT VALID,
	ADD CONSTRAINT id_snowflake_equal CHECK (id_snowflake IS NOT DISTINCT FROM id) NOT VALID;
ALTER TABLE shop.visits ATTACH PARTITION shop.visits_2019 FOR VALUES FROM ('2019-01-01') TO ('2020-01-01');
CALL sfx.snowflake_convert_column_online('shop.visits', stop_after => 'add');
SELECT backfill_tables, step FROM sfx.snowflake_online_state WHERE tbl = 'shop.visits'::regclass;
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('shop.visits');
SELECT unnest(pending) FROM sfx.snowflake_online_conversions \gexec
CALL sfx.snowflake_convert_column_online('shop.visits');
RESET client_min_messages;
SELECT c.relname, format_type(a.atttypid, a.atttypmod) AS id_type
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
 WHERE c.relnamespace = 'shop'::regnamespace AND c.relname LIKE 'visits%' AND c.relkind IN ('r', 'p')
   AND a.attname = 'id'
 ORDER BY 1;
SELECT (SELECT count(*) FROM shop.visits) AS visits,
	   (SELECT count(*) FROM (SELECT * FROM visits_before WHERE day < '2024-01-01') b
			   FULL JOIN shop.visits v USING (id, day, note)
		 WHERE b.id IS NULL OR v.id IS NULL) AS differ,
	   (SELECT count(*) FROM shop.visits_2024) AS left_detached;
SELECT note FROM shop.visit_audit ORDER BY note;
-- (where the backfill goes on when a table before it, or its own, leaves)
CREATE TABLE shop.days (id serial, day date NOT NULL, PRIMARY KEY (id, day)) PARTITION BY LIST (day);
CREATE TABLE shop.days_a PARTITION OF shop.days FOR VALUES IN ('2020-01-01');
CREATE TABLE shop.days_b PARTITION OF shop.days FOR VALUES IN ('2020-01-02');
CREATE TABLE shop.days_c PARTITION OF shop.days FOR VALUES IN ('2020-01-03');
CREATE TABLE shop.days_d PARTITION OF shop.days FOR VALUES IN ('2020-01-04');
INSERT INTO shop.days (day) SELECT '2020-01-01'::date + g % 4 FROM generate_series(0, 39) g;
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('shop.days', stop_after => 'add');
RESET client_min_messages;
-- (as a call cancelled in the middle of days_c leaves the row)
UPDATE sfx.snowflake_online_state SET backfill_table = 3, backfill_after = '{22,2020-01-03}'
 WHERE tbl = 'shop.days'::regclass;
ALTER TABLE shop.days DETACH PARTITION shop.days_b;
SELECT sfx._snowflake_online_follow('shop.days', 'sfx');
SELECT backfill_tables, backfill_table, backfill_after FROM sfx.snowflake_online_state WHERE tbl = 'shop.days'::regclass;
ALTER TABLE shop.days DETACH PARTITION shop.days_c;
SELECT sfx._snowflake_online_follow('shop.days', 'sfx');
SELECT backfill_tables, backfill_table, backfill_after FROM sfx.snowflake_online_state WHERE tbl = 'shop.days'::regclass;
SELECT sfx._snowflake_online_follow('shop.days', 'sfx') AS changed;
SET client_min_messages = warning;
CALL sfx.snowflake_convert_column_online('shop.days', abort => true);
RESET client_min_messages;

SET client_min_messages = warning;
DROP SCHEMA shop CASCADE;
RESET client_min_messages;
DROP ROLE regress_online_clerk;
ALTER EXTENSION snowflake SET SCHEMA public;
DROP SCHEMA sfx;

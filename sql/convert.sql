-- snowflake_convert_column(): serial, bigserial, identity and nextval()
-- columns turned into Snowflake ids, with every foreign key referencing
-- them.  Ids are never printed: only comparisons and counts.
SET timezone = 'UTC';
\set VERBOSITY default
-- (no PL/pgSQL CONTEXT lines: their line numbers say nothing here)
\set SHOW_CONTEXT never

-- The extension moved to a schema of its own, after it was created: the
-- function finds it at run time and writes the new DEFAULT qualified with
-- it, so the defaults below read sfx.snowflake_nextval().
CREATE SCHEMA sfx;
ALTER EXTENSION snowflake SET SCHEMA sfx;
GRANT USAGE ON SCHEMA sfx TO PUBLIC;
SET search_path = public;

-- A shop, with data.
CREATE SCHEMA shop;
CREATE TABLE shop.customers (
    id serial PRIMARY KEY,
    region text NOT NULL DEFAULT 'eu',
    referred_by integer REFERENCES shop.customers,     -- self-referencing
    name text,
    UNIQUE (id, region));
CREATE TABLE shop.addresses (                           -- composite key
    customer_id integer NOT NULL,
    region text NOT NULL,
    street text,
    FOREIGN KEY (customer_id, region) REFERENCES shop.customers (id, region));
CREATE TABLE shop.profiles (                            -- 1:1, referenced in turn
    customer_id integer PRIMARY KEY REFERENCES shop.customers,
    bio text);
CREATE TABLE shop.badges (
    customer_id integer NOT NULL REFERENCES shop.profiles,
    badge text);
CREATE TABLE shop.orders (
    id bigserial PRIMARY KEY,
    customer_id integer NOT NULL REFERENCES shop.customers);
CREATE TABLE shop.order_lines (                         -- int4 on a bigserial
    order_id integer NOT NULL REFERENCES shop.orders,
    line integer NOT NULL,
    PRIMARY KEY (order_id, line));
CREATE TABLE shop.events (
    id integer GENERATED ALWAYS AS IDENTITY,
    day date NOT NULL,
    PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE shop.events_2024 PARTITION OF shop.events
    FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE TABLE shop.events_2025 PARTITION OF shop.events
    FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
CREATE TABLE shop.event_notes (
    event_id integer NOT NULL,
    day date NOT NULL,
    note text,
    FOREIGN KEY (event_id, day) REFERENCES shop.events);
CREATE TABLE shop.tickets (id smallserial PRIMARY KEY, subject text);
CREATE SEQUENCE shop.invoice_numbers;
CREATE TABLE shop.invoices (
    id integer PRIMARY KEY DEFAULT nextval('shop.invoice_numbers'), total numeric);
CREATE TABLE shop.credit_notes (
    id integer PRIMARY KEY DEFAULT nextval('shop.invoice_numbers'), total numeric);
-- a view on a column that must change, and one on a column that need not
CREATE VIEW shop.order_counts AS
    SELECT customer_id, count(*) AS orders FROM shop.orders GROUP BY customer_id;
CREATE VIEW shop.customer_names AS SELECT name FROM shop.customers;

INSERT INTO shop.customers (name, referred_by)
    SELECT 'c' || g, CASE WHEN g > 1 THEN g - 1 END FROM generate_series(1, 100) g;
INSERT INTO shop.addresses SELECT id, region, 'street ' || id FROM shop.customers;
INSERT INTO shop.profiles SELECT id, 'bio' FROM shop.customers WHERE id % 2 = 0;
INSERT INTO shop.badges SELECT customer_id, 'gold' FROM shop.profiles WHERE customer_id % 10 = 0;
INSERT INTO shop.orders (customer_id) SELECT 1 + g % 100 FROM generate_series(1, 300) g;
INSERT INTO shop.order_lines SELECT id, l FROM shop.orders, generate_series(1, 2) l;
INSERT INTO shop.events (day) SELECT date '2024-12-01' + g FROM generate_series(1, 40) g;
INSERT INTO shop.event_notes SELECT id, day, 'note' FROM shop.events WHERE id % 4 = 0;
INSERT INTO shop.tickets (subject) SELECT 't' || g FROM generate_series(1, 10) g;
INSERT INTO shop.invoices (total) SELECT g FROM generate_series(1, 5) g;
INSERT INTO shop.credit_notes (total) SELECT -g FROM generate_series(1, 3) g;

-- Helpers.  Plain SQL functions, not views: a view on these columns would
-- itself block their conversion.
-- Every id and every reference, to compare before and after.
CREATE FUNCTION all_ids(OUT tbl text, OUT id bigint, OUT ref bigint) RETURNS SETOF record
LANGUAGE sql AS $$
    SELECT 'customers', id, referred_by FROM shop.customers
    UNION ALL SELECT 'addresses', customer_id, NULL FROM shop.addresses
    UNION ALL SELECT 'profiles', customer_id, NULL FROM shop.profiles
    UNION ALL SELECT 'badges', customer_id, NULL FROM shop.badges
    UNION ALL SELECT 'orders', id, customer_id FROM shop.orders
    UNION ALL SELECT 'order_lines', order_id, line FROM shop.order_lines
    UNION ALL SELECT 'events', id, day - date '2024-01-01' FROM shop.events
    UNION ALL SELECT 'event_notes', event_id, day - date '2024-01-01' FROM shop.event_notes
    UNION ALL SELECT 'tickets', id, NULL FROM shop.tickets
    UNION ALL SELECT 'invoices', id, NULL FROM shop.invoices
    UNION ALL SELECT 'credit_notes', id, NULL FROM shop.credit_notes
$$;
-- The shape of the schema: types, not-null, defaults, identities,
-- sequences and their owners, constraints.  The same on every version of
-- PostgreSQL: a partition's identity is left out (from 17 on, partitions
-- carry their parent's; checked on its own below), and so are not-null
-- constraints, which 18 catalogs (attnotnull says the same on every
-- version).
CREATE FUNCTION shape() RETURNS SETOF text LANGUAGE sql AS $$
    SELECT format('%s.%s %s', a.attrelid::regclass, a.attname, format_type(a.atttypid, a.atttypmod))
           || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
           || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')
           || CASE WHEN c.relispartition THEN ''
                   ELSE CASE a.attidentity WHEN 'a' THEN ' generated always as identity'
                                           WHEN 'd' THEN ' generated by default as identity'
                                           ELSE '' END END
      FROM pg_attribute a
      JOIN pg_class c ON c.oid = a.attrelid AND c.relkind IN ('r', 'p')
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE c.relnamespace = 'shop'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT format('sequence %s: %s', s.oid::regclass,
                  coalesce((SELECT string_agg(CASE d.deptype WHEN 'i' THEN 'identity of ' ELSE 'owned by ' END
                                              || pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid), ', ')
                              FROM pg_depend d
                             WHERE d.classid = 'pg_class'::regclass AND d.objid = s.oid
                               AND d.refclassid = 'pg_class'::regclass),
                           'free-standing'))
      FROM pg_class s
     WHERE s.relnamespace = 'shop'::regnamespace AND s.relkind = 'S'
    UNION ALL
    SELECT format('%s %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid))
           || CASE WHEN convalidated THEN '' ELSE ' (not valid)' END
      FROM pg_constraint
     WHERE connamespace = 'shop'::regnamespace AND contype <> 'n'
$$;
CREATE TABLE ids_before AS SELECT * FROM all_ids();
CREATE TABLE shape_before AS SELECT * FROM shape();
SELECT count(*) AS ids, count(DISTINCT tbl) AS tables FROM ids_before;
-- The partitions' identity: their parent's from PostgreSQL 17 on, none
-- before.
SELECT a.attrelid::regclass AS partition,
       a.attidentity = CASE WHEN current_setting('server_version_num')::int >= 170000
                            THEN 'a' ELSE '' END AS as_the_server_gives
  FROM pg_attribute a
 WHERE a.attrelid IN ('shop.events_2024'::regclass, 'shop.events_2025'::regclass)
   AND a.attname = 'id'
 ORDER BY 1;

--
-- Refusals.  Each names the obstacle; nothing changes.
--
SELECT sfx.snowflake_convert_column(NULL);
SELECT sfx.snowflake_convert_column('shop.customers', NULL);
SELECT sfx.snowflake_convert_column('shop.order_counts');
SELECT sfx.snowflake_convert_column('shop.invoice_numbers');
-- no such column
SELECT sfx.snowflake_convert_column('shop.addresses');
SELECT sfx.snowflake_convert_column('shop.customers', 'no_such_column');
-- not an integer type
SELECT sfx.snowflake_convert_column('shop.customers', 'name');
-- an integer column, but nothing generates its values
SELECT sfx.snowflake_convert_column('shop.addresses', 'customer_id');
-- a partition: PostgreSQL changes its columns only from the parent
SELECT sfx.snowflake_convert_column('shop.events_2025');
-- a view on a column that would change, two foreign keys away
SELECT sfx.snowflake_convert_column('shop.customers');
-- not the owner
CREATE ROLE regress_convert_clerk;
GRANT USAGE ON SCHEMA shop TO regress_convert_clerk;
SET ROLE regress_convert_clerk;
SELECT sfx.snowflake_convert_column('shop.tickets');
SELECT sfx.snowflake_convert_column('shop.tickets', dry_run => true);
RESET ROLE;
-- a real run under a transaction snapshot, which predates its locks; a dry
-- run works there
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT sfx.snowflake_convert_column('shop.tickets');
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT sfx.snowflake_convert_column('shop.tickets');
ROLLBACK;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT count(*) AS statements FROM sfx.snowflake_convert_column('shop.tickets', dry_run => true);
ROLLBACK;
-- the shared sequence cannot be dropped: another table's default uses it
SELECT sfx.snowflake_convert_column('shop.invoices', drop_sequence => true);
-- an identity's sequence used by another table: DROP IDENTITY would drop it
CREATE TABLE shop.borrower (n bigint DEFAULT nextval('shop.events_id_seq'));
SELECT sfx.snowflake_convert_column('shop.events');
DROP TABLE shop.borrower;
-- ids that new ids would not stay above
CREATE SEQUENCE shop.legacy_seq;
CREATE TABLE shop.legacy (id bigint PRIMARY KEY DEFAULT nextval('shop.legacy_seq'));
INSERT INTO shop.legacy VALUES (DEFAULT), (DEFAULT), (9000000000000000000);
SELECT sfx.snowflake_convert_column('shop.legacy', dry_run => true);
SELECT sfx.snowflake_convert_column('shop.legacy');
-- just below a fresh id is fine (in a rehearsal)
BEGIN;
UPDATE shop.legacy SET id = sfx.snowflake_from_timestamp(now()) WHERE id = 9000000000000000000;
SELECT count(*) AS statements FROM sfx.snowflake_convert_column('shop.legacy');
ROLLBACK;
DROP TABLE shop.legacy;
DROP SEQUENCE shop.legacy_seq;
-- triggers and generated columns block a type change as views do
CREATE TABLE shop.gen (id serial PRIMARY KEY, twice bigint GENERATED ALWAYS AS (id * 2) STORED);
SELECT sfx.snowflake_convert_column('shop.gen');
SELECT sfx.snowflake_convert_column('shop.gen', 'twice');
DROP TABLE shop.gen;
CREATE TABLE shop.trig (id serial PRIMARY KEY);
CREATE FUNCTION shop.noop() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
CREATE TRIGGER keep_id BEFORE UPDATE OF id ON shop.trig FOR EACH ROW EXECUTE FUNCTION shop.noop();
SELECT sfx.snowflake_convert_column('shop.trig');
DROP TABLE shop.trig;
DROP FUNCTION shop.noop();
-- a foreign partition would keep its int4 column on the remote side
CREATE EXTENSION file_fdw;
CREATE SERVER files FOREIGN DATA WRAPPER file_fdw;
CREATE TABLE shop.feed (id serial, day date) PARTITION BY RANGE (day);
CREATE FOREIGN TABLE shop.feed_old PARTITION OF shop.feed
    FOR VALUES FROM ('2000-01-01') TO ('2020-01-01')
    SERVER files OPTIONS (filename '/dev/null');
SELECT sfx.snowflake_convert_column('shop.feed');
DROP TABLE shop.feed;
DROP EXTENSION file_fdw CASCADE;

-- Nothing above changed anything.
SELECT count(*) AS changed FROM (
    (SELECT * FROM shape() EXCEPT SELECT * FROM shape_before)
    UNION ALL (SELECT * FROM shape_before EXCEPT SELECT * FROM shape())) s;

--
-- A dry run: the statements, none of them run.
--
DROP VIEW shop.order_counts;
SELECT * FROM sfx.snowflake_convert_column('shop.customers', dry_run => true);
SELECT count(*) AS changed FROM (
    (SELECT * FROM shape() EXCEPT SELECT * FROM shape_before)
    UNION ALL (SELECT * FROM shape_before EXCEPT SELECT * FROM shape())) s;

-- The locks of a dry run: only those of reading the largest id, none of
-- its own.
CREATE FUNCTION shop_locks(OUT locked regclass, OUT mode text) RETURNS SETOF record
LANGUAGE sql AS $$
    SELECT l.relation::regclass, l.mode
      FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
     WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation'
       AND c.relnamespace::regnamespace::text IN ('shop', 'chain')
       AND c.relkind IN ('r', 'p')
     ORDER BY l.relation::regclass::text, l.mode
$$;
BEGIN;
SELECT count(*) AS statements FROM sfx.snowflake_convert_column('shop.customers', dry_run => true);
SELECT * FROM shop_locks();
ROLLBACK;

-- A rehearsal: the real thing, rolled back.  It holds ACCESS EXCLUSIVE on
-- every table in the LOCK statement.
BEGIN;
SELECT count(*) AS statements FROM sfx.snowflake_convert_column('shop.customers');
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'shop.badges'::regclass AND attname = 'customer_id';
SELECT * FROM shop_locks() WHERE mode = 'AccessExclusiveLock';
ROLLBACK;
SELECT count(*) AS changed FROM (
    (SELECT * FROM shape() EXCEPT SELECT * FROM shape_before)
    UNION ALL (SELECT * FROM shape_before EXCEPT SELECT * FROM shape())) s;

--
-- The conversions.
--
-- With the view dropped and created again around it, as the hint says.
BEGIN;
SELECT * FROM sfx.snowflake_convert_column('shop.customers');
CREATE VIEW shop.order_counts AS
    SELECT customer_id, count(*) AS orders FROM shop.orders GROUP BY customer_id;
COMMIT;
-- bigserial: only the referencing int4 column changes type
SELECT * FROM sfx.snowflake_convert_column('shop.orders');
-- a partitioned table with an identity, and a foreign key to it
SELECT * FROM sfx.snowflake_convert_column('shop.events');
-- smallserial, its sequence dropped
SELECT * FROM sfx.snowflake_convert_column('shop.tickets', drop_sequence => true);
-- under a hostile search_path: look-alike functions and catalogs first
CREATE SCHEMA evil;
CREATE FUNCTION evil.snowflake_nextval() RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint';
CREATE FUNCTION evil.snowflake_timestamp(bigint) RETURNS timestamptz LANGUAGE sql AS 'SELECT now()';
CREATE TABLE evil.pg_class (oid oid, relkind "char", relowner oid);
CREATE TABLE evil.pg_attribute (attrelid oid, attname name);
SET search_path = evil, pg_catalog, shop, sfx;
SELECT * FROM sfx.snowflake_convert_column('shop.invoices');
RESET search_path;
SET search_path = public;

-- No identity left, on the partitions either.
SELECT count(*) AS identities
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
 WHERE c.relnamespace = 'shop'::regnamespace AND a.attidentity <> '';

-- Every id and every reference as it was.
SELECT count(*) AS ids,
       (SELECT count(*) FROM (SELECT * FROM ids_before EXCEPT ALL SELECT * FROM all_ids()) s) AS missing,
       (SELECT count(*) FROM (SELECT * FROM all_ids() EXCEPT ALL SELECT * FROM ids_before) s) AS changed
  FROM all_ids();

-- What changed in the schema: the lines that went, the lines that came;
-- the rest stayed.
SELECT * FROM shape_before EXCEPT SELECT * FROM shape() ORDER BY 1;
SELECT * FROM shape() EXCEPT SELECT * FROM shape_before ORDER BY 1;
SELECT count(*) AS unchanged FROM (SELECT * FROM shape() INTERSECT SELECT * FROM shape_before) s;

-- The foreign keys: valid, holding, enforced.
SELECT count(*) AS foreign_keys, bool_and(convalidated) AS all_valid
  FROM pg_constraint WHERE connamespace = 'shop'::regnamespace AND contype = 'f';
SELECT (SELECT count(*) FROM shop.customers c
         WHERE referred_by IS NOT NULL
           AND NOT EXISTS (SELECT FROM shop.customers p WHERE p.id = c.referred_by)) AS customers,
       (SELECT count(*) FROM shop.addresses a
         WHERE NOT EXISTS (SELECT FROM shop.customers c WHERE (c.id, c.region) = (a.customer_id, a.region))) AS addresses,
       (SELECT count(*) FROM shop.badges b
         WHERE NOT EXISTS (SELECT FROM shop.profiles p WHERE p.customer_id = b.customer_id)) AS badges,
       (SELECT count(*) FROM shop.order_lines l
         WHERE NOT EXISTS (SELECT FROM shop.orders o WHERE o.id = l.order_id)) AS order_lines,
       (SELECT count(*) FROM shop.event_notes n
         WHERE NOT EXISTS (SELECT FROM shop.events e WHERE (e.id, e.day) = (n.event_id, n.day))) AS event_notes;
INSERT INTO shop.orders (customer_id) VALUES (1000000);
INSERT INTO shop.addresses VALUES (1, 'us', 'nowhere');
INSERT INTO shop.event_notes VALUES (1, '2025-06-01', 'no such event');

-- New rows take Snowflake ids, above every old one, through the defaults.
INSERT INTO shop.customers (name, referred_by) VALUES ('new', 1)
    RETURNING id > (SELECT max(id) FROM ids_before WHERE tbl = 'customers') AS above_old,
              (SELECT worker_id FROM sfx.snowflake_decode(id)) AS worker;
INSERT INTO shop.profiles SELECT id, 'new' FROM shop.customers WHERE name = 'new';
INSERT INTO shop.badges SELECT id, 'new' FROM shop.customers WHERE name = 'new';
INSERT INTO shop.addresses SELECT id, region, 'new street' FROM shop.customers WHERE name = 'new';
WITH o AS (
    INSERT INTO shop.orders (customer_id)
    SELECT id FROM shop.customers WHERE name = 'new' RETURNING id
)
INSERT INTO shop.order_lines SELECT o.id, 1 FROM o
    RETURNING order_id > (SELECT max(id) FROM ids_before WHERE tbl = 'orders') AS above_old;
INSERT INTO shop.events (day) VALUES ('2024-12-31'), ('2025-03-01')
    RETURNING id > (SELECT max(id) FROM ids_before WHERE tbl = 'events') AS above_old, day;
-- a partition takes the default too (before, its column had none, or,
-- from PostgreSQL 17 on, its parent's identity)
INSERT INTO shop.events_2025 (day) VALUES ('2025-04-01')
    RETURNING id > (SELECT max(id) FROM ids_before WHERE tbl = 'events') AS above_old;
INSERT INTO shop.event_notes SELECT id, day, 'new' FROM shop.events WHERE day >= '2025-03-01';
INSERT INTO shop.tickets (subject) VALUES ('new')
    RETURNING id > 10 AS above_old, (SELECT worker_id FROM sfx.snowflake_decode(id)) AS worker;
-- (converted under the hostile search_path: the real generator all the same)
INSERT INTO shop.invoices (total) VALUES (6)
    RETURNING id > 5 AS above_old, (SELECT worker_id FROM sfx.snowflake_decode(id)) AS worker;
-- (GENERATED ALWAYS is gone: an explicit id is accepted now)
INSERT INTO shop.events (id, day) VALUES (-1, '2025-05-01') RETURNING id;

-- The old sequences: left in place, detached, where they were; the
-- identity's sequence stands alone now with its old position; the
-- smallserial's is gone; the shared one still serves credit notes.
SELECT s AS sequence, to_regclass(s) IS NOT NULL AS exists
  FROM unnest(ARRAY['shop.customers_id_seq', 'shop.orders_id_seq', 'shop.events_id_seq',
                    'shop.tickets_id_seq', 'shop.invoice_numbers']) s;
SELECT last_value, is_called FROM shop.customers_id_seq;
SELECT last_value, is_called FROM shop.events_id_seq;
SELECT pg_get_serial_sequence('shop.customers', 'id') AS customers,
       pg_get_serial_sequence('shop.orders', 'id') AS orders,
       pg_get_serial_sequence('shop.events', 'id') AS events;
INSERT INTO shop.credit_notes (total) VALUES (-4) RETURNING id;

-- Twice is a no-op, with a notice; a dry run says the same.
SELECT * FROM sfx.snowflake_convert_column('shop.customers');
SELECT * FROM sfx.snowflake_convert_column('shop.events', dry_run => true);
SELECT * FROM sfx.snowflake_convert_column('shop.orders', drop_sequence => true);

-- Inheritance: the children follow the parent, including one with a
-- sequence of its own; a child alone is refused.
CREATE TABLE shop.log (id serial PRIMARY KEY, msg text);
CREATE TABLE shop.log_archive () INHERITS (shop.log);
CREATE TABLE shop.log_legacy (id serial, msg text);
ALTER TABLE shop.log_legacy INHERIT shop.log;
INSERT INTO shop.log (msg) VALUES ('a'), ('b');
INSERT INTO shop.log_archive (msg) VALUES ('c');
INSERT INTO shop.log_legacy (msg) VALUES ('d');
SELECT sfx.snowflake_convert_column('shop.log_archive');
-- (what inheritance and not-null look like, to compare afterwards)
CREATE FUNCTION log_tree() RETURNS SETOF text LANGUAGE sql AS $$
    SELECT format('%s.%s local %s inherited %s not null %s', attrelid::regclass, attname,
                  attislocal, attinhcount, attnotnull)
      FROM pg_attribute
     WHERE attrelid::regclass::text LIKE 'shop.log%' AND attnum > 0
    UNION ALL
    SELECT format('%s inherits %s (%s)', inhrelid::regclass, inhparent::regclass, inhseqno)
      FROM pg_inherits WHERE inhrelid::regclass::text LIKE 'shop.log%'
    UNION ALL
    SELECT format('%s constraint %s %s local %s inherited %s', conrelid::regclass, conname,
                  contype, conislocal, coninhcount)
      FROM pg_constraint WHERE conrelid::regclass::text LIKE 'shop.log%'
$$;
CREATE TABLE log_tree_before AS SELECT * FROM log_tree();
CREATE TABLE log_statements AS
    SELECT * FROM sfx.snowflake_convert_column('shop.log') WITH ORDINALITY AS s(statement, n);
-- PostgreSQL 18 catalogs not-null constraints, and cannot change the type
-- of log_legacy's column from the top: its not-null constraint is its own
-- too, named differently from its parent's.  There the function detaches
-- it during the change (which leaves the catalogs as they were: see
-- log_tree() below); the other statements are those of every version.
SELECT statement FROM log_statements
 WHERE statement !~ '^ALTER TABLE shop.log_legacy ' ORDER BY n;
SELECT array_agg(statement ORDER BY n) =
       CASE WHEN current_setting('server_version_num')::int >= 180000 THEN
           ARRAY['LOCK TABLE shop.log IN ACCESS EXCLUSIVE MODE',
                 'ALTER TABLE shop.log_legacy NO INHERIT shop.log',
                 'ALTER TABLE shop.log ALTER COLUMN id TYPE bigint',
                 'ALTER TABLE shop.log_legacy ALTER COLUMN id TYPE bigint',
                 'ALTER TABLE shop.log_legacy INHERIT shop.log',
                 'ALTER TABLE shop.log ALTER COLUMN id SET DEFAULT sfx.snowflake_nextval()',
                 'ALTER SEQUENCE shop.log_id_seq OWNED BY NONE',
                 'ALTER SEQUENCE shop.log_legacy_id_seq OWNED BY NONE']
       ELSE (SELECT array_agg(statement ORDER BY n) FROM log_statements
              WHERE statement !~ '^ALTER TABLE shop.log_legacy ') END AS as_the_server_needs
  FROM log_statements;
-- the same columns, inheritance and constraints, but for the types
SELECT (SELECT count(*) FROM (SELECT * FROM log_tree() EXCEPT SELECT * FROM log_tree_before) s) AS appeared,
       (SELECT count(*) FROM (SELECT * FROM log_tree_before EXCEPT SELECT * FROM log_tree()) s) AS vanished;
SELECT a.attrelid::regclass AS tbl, format_type(a.atttypid, a.atttypmod) AS type,
       pg_get_expr(d.adbin, d.adrelid) AS default
  FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE a.attrelid IN ('shop.log'::regclass, 'shop.log_archive'::regclass, 'shop.log_legacy'::regclass)
   AND a.attname = 'id'
 ORDER BY 1;
INSERT INTO shop.log_legacy (msg) VALUES ('e') RETURNING id > 1 AS above_old;
SELECT string_agg(msg, ',' ORDER BY msg) AS msgs, count(*) FILTER (WHERE id < 10) AS old_ids
  FROM shop.log;

-- Where detaching would not leave the catalogs as they were, PostgreSQL
-- 18's refusal comes first, with a way out: a child table whose other
-- columns are inherited only, and a partition, each with a not-null
-- constraint of its own.  (Before 18 there are no such constraints, and
-- both convert.)
CREATE TABLE shop.notes (id serial PRIMARY KEY, body text);
CREATE TABLE shop.notes_kid (id integer NOT NULL) INHERITS (shop.notes);
CREATE TABLE shop.readings (id serial, day date, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE shop.readings_2025 PARTITION OF shop.readings (id NOT NULL)
    FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
CREATE FUNCTION convert_or_refusal(t regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_message text;
    v_detail text;
    v_hint text;
BEGIN
    PERFORM sfx.snowflake_convert_column(t);
    RETURN 'converted';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT,
                            v_detail = PG_EXCEPTION_DETAIL, v_hint = PG_EXCEPTION_HINT;
    RETURN format(E'%s: %s\nDETAIL: %s\nHINT: %s', v_state, v_message, v_detail, v_hint);
END
$$;
BEGIN;
SELECT convert_or_refusal('shop.notes') =
       CASE WHEN current_setting('server_version_num')::int >= 180000 THEN
           E'55000: table shop.notes_kid has a not-null constraint of its own on inherited column "id"\n'
           'DETAIL: Its constraint "notes_kid_id_not_null" is named differently from the parent''s "notes_id_not_null", and PostgreSQL cannot then change the column''s type.\n'
           'HINT: Give the two constraints one name (detach the table with ALTER TABLE ... NO INHERIT, rename its constraint to "notes_id_not_null", attach it again with ALTER TABLE ... INHERIT); then convert.'
       ELSE 'converted' END AS as_the_server_needs;
SELECT convert_or_refusal('shop.readings') =
       CASE WHEN current_setting('server_version_num')::int >= 180000 THEN
           E'55000: partition shop.readings_2025 has a not-null constraint of its own on column "id"\n'
           'DETAIL: Its constraint "readings_2025_id_not_null" is named differently from the parent''s "readings_id_not_null", and PostgreSQL cannot then change the column''s type.\n'
           'HINT: Detach the partition and attach it again, which leaves it the parent''s constraint only; then convert.'
       ELSE 'converted' END AS as_the_server_needs;
ROLLBACK;
-- the hints, followed (before 18 there is nothing to rename)
BEGIN;
ALTER TABLE shop.notes_kid NO INHERIT shop.notes;
DO $$
BEGIN
    IF current_setting('server_version_num')::int >= 180000 THEN
        ALTER TABLE shop.notes_kid RENAME CONSTRAINT notes_kid_id_not_null TO notes_id_not_null;
    END IF;
END
$$;
ALTER TABLE shop.notes_kid INHERIT shop.notes;
SELECT convert_or_refusal('shop.notes');
ALTER TABLE shop.readings DETACH PARTITION shop.readings_2025;
ALTER TABLE shop.readings ATTACH PARTITION shop.readings_2025
    FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
SELECT convert_or_refusal('shop.readings');
SELECT a.attrelid::regclass AS tbl, format_type(a.atttypid, a.atttypmod) AS type
  FROM pg_attribute a
 WHERE a.attrelid IN ('shop.notes'::regclass, 'shop.notes_kid'::regclass,
                      'shop.readings'::regclass, 'shop.readings_2025'::regclass)
   AND a.attname = 'id'
 ORDER BY a.attrelid::regclass::text;
ROLLBACK;

-- Every table in the closure is locked, also one whose column is bigint
-- already and that no statement changes (chain.flags): else a foreign key
-- could come to reference it, from an integer column, before the
-- conversion commits.
CREATE SCHEMA chain;
CREATE TABLE chain.accounts (id bigserial PRIMARY KEY);
CREATE TABLE chain.flags (account_id bigint PRIMARY KEY REFERENCES chain.accounts);
CREATE TABLE chain.flag_notes (account_id integer REFERENCES chain.flags);
INSERT INTO chain.accounts DEFAULT VALUES;
SELECT * FROM sfx.snowflake_convert_column('chain.accounts', dry_run => true);
BEGIN;
SELECT count(*) AS statements FROM sfx.snowflake_convert_column('chain.accounts');
SELECT * FROM shop_locks() WHERE mode = 'AccessExclusiveLock';
ROLLBACK;
-- So the caller must be allowed to lock it (LOCK TABLE's own refusal),
-- though not to own it.  (REFERENCES, for flag_notes' foreign key to be
-- rebuilt, it needed before.)
CREATE ROLE regress_convert_chain;
GRANT USAGE ON SCHEMA chain TO regress_convert_chain;
ALTER TABLE chain.accounts OWNER TO regress_convert_chain;
ALTER TABLE chain.flag_notes OWNER TO regress_convert_chain;
GRANT REFERENCES ON chain.flags TO regress_convert_chain;
SET ROLE regress_convert_chain;
SELECT sfx.snowflake_convert_column('chain.accounts');
RESET ROLE;
GRANT UPDATE ON chain.flags TO regress_convert_chain;
SET ROLE regress_convert_chain;
BEGIN;
SELECT count(*) AS statements FROM sfx.snowflake_convert_column('chain.accounts');
ROLLBACK;
RESET ROLE;

-- Names that need quoting, everywhere: tables, columns, sequence, role.
CREATE ROLE "regress_convert Odd";
GRANT USAGE ON SCHEMA shop TO "regress_convert Odd";
CREATE TABLE shop."Odd Table" ("Id" integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY);
CREATE TABLE shop."odd refs" ("Odd ""Id""" smallint REFERENCES shop."Odd Table");
ALTER TABLE shop."Odd Table" OWNER TO "regress_convert Odd";
INSERT INTO shop."Odd Table" VALUES (DEFAULT), (DEFAULT);
INSERT INTO shop."odd refs" VALUES (2);
SELECT sfx.snowflake_convert_column('shop."Odd Table"');
SELECT * FROM sfx.snowflake_convert_column('shop."Odd Table"', 'Id');
SELECT format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 'shop."odd refs"'::regclass AND attname = 'Odd "Id"';
SELECT pg_get_userbyid(relowner) AS owner, last_value FROM pg_class, shop."Odd Table_Id_seq"
 WHERE oid = 'shop."Odd Table_Id_seq"'::regclass;
WITH t AS (INSERT INTO shop."Odd Table" DEFAULT VALUES RETURNING "Id")
INSERT INTO shop."odd refs" SELECT "Id" FROM t RETURNING "Odd ""Id""" > 2 AS new_id;

-- The table's owner, not a superuser, converts its own tables; tables of
-- another role that reference them stop it.
CREATE ROLE regress_convert_owner;
CREATE ROLE regress_convert_other;
CREATE SCHEMA ledger;
GRANT USAGE, CREATE ON SCHEMA ledger TO regress_convert_owner, regress_convert_other;
SET ROLE regress_convert_owner;
CREATE TABLE ledger.accounts (id integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY);
INSERT INTO ledger.accounts DEFAULT VALUES;
GRANT REFERENCES ON ledger.accounts TO regress_convert_other;
SET ROLE regress_convert_other;
CREATE TABLE ledger.entries (account_id integer REFERENCES ledger.accounts);
SET ROLE regress_convert_owner;
SELECT sfx.snowflake_convert_column('ledger.accounts');
RESET ROLE;
ALTER TABLE ledger.entries OWNER TO regress_convert_owner;
SET ROLE regress_convert_owner;
SELECT * FROM sfx.snowflake_convert_column('ledger.accounts');
INSERT INTO ledger.accounts DEFAULT VALUES RETURNING id > 1 AS above_old;
SELECT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE oid = 'ledger.accounts_id_seq'::regclass;
RESET ROLE;

-- A superuser converting another role's identity hands the recreated
-- sequence back to that role.
SET ROLE regress_convert_owner;
CREATE TABLE ledger.journals (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY);
RESET ROLE;
SELECT * FROM sfx.snowflake_convert_column('ledger.journals');
SELECT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE oid = 'ledger.journals_id_seq'::regclass;

-- A temporary table with an identity column: the sequence that takes the
-- identity's place is a temporary one too (search_path is pinned to
-- pg_catalog first, so an unqualified CREATE SEQUENCE would land there).
CREATE TEMP TABLE scratch (id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note text);
INSERT INTO scratch (note) VALUES ('a'), ('b');
SELECT * FROM sfx.snowflake_convert_column('scratch');
SELECT c.relpersistence, c.relnamespace = pg_my_temp_schema() AS in_my_temp_schema,
	   (SELECT last_value FROM scratch_id_seq) AS position
  FROM pg_class c WHERE c.relname = 'scratch_id_seq';
INSERT INTO scratch (note) VALUES ('c');
SELECT count(*) AS rows, count(*) FILTER (WHERE id > 1000000) AS snowflake_ids FROM scratch;
DROP TABLE scratch;
DROP SEQUENCE scratch_id_seq;

-- (quietly: the list of what a cascade drops comes in catalog order)
SET client_min_messages = warning;
DROP SCHEMA ledger, shop, evil, chain CASCADE;
RESET client_min_messages;
DROP ROLE regress_convert_owner, regress_convert_other, regress_convert_clerk,
    "regress_convert Odd", regress_convert_chain;
DROP TABLE ids_before, shape_before, log_tree_before, log_statements;
DROP FUNCTION all_ids(), shape(), shop_locks(), log_tree(), convert_or_refusal(regclass);
ALTER EXTENSION snowflake SET SCHEMA public;
DROP SCHEMA sfx;

-- Migration: replace a serial, bigserial, identity or nextval() column with
-- Snowflake ids, in the caller's transaction: snowflake_convert_column(),
-- and the three internal helpers it is built from (the foreign-key closure,
-- the obstacle scan, the statement builder).
--
-- Where the extension lives.  The extension is relocatable (ALTER EXTENSION
-- ... SET SCHEMA), so the install script cannot name its schema:
-- PostgreSQL substitutes @extschema@ only for non-relocatable extensions,
-- precisely because a name baked into a function body would go stale on a
-- move.  Nothing needs it baked in: a column DEFAULT stores the function's
-- OID, not its name, so converted defaults follow a relocation, and pg_dump
-- prints them qualified with wherever the function is at dump time.  So the
-- function finds snowflake_nextval() at each call through the extension's
-- own membership records (pg_depend), which also ignores any look-alike
-- created in another schema, writes the DEFAULT qualified with that
-- schema, and calls its helpers qualified with it: they then mean the same
-- thing under any search_path.  The work itself is done by
-- _snowflake_convert_column(), told that schema: the plain-SQL edition
-- (sql/portable/), which is no extension, installs this file too and calls
-- it with the schema it was installed in.
--
-- Locks: lock first, then read.  A real run takes ACCESS EXCLUSIVE on the
-- table before it reads anything about it, then computes the closure (every
-- column that must become bigint with it), locks the tables it names that
-- are not locked yet, and computes it again, until a computation names no
-- new table; everything it decides (the checks, the statements, the largest
-- existing id) comes from that last computation, under all the locks.  That
-- computation is final: adding a foreign key takes SHARE ROW EXCLUSIVE on
-- the table it references, and attaching or inheriting a table takes at
-- least SHARE UPDATE EXCLUSIVE on the parent, both in conflict with ACCESS
-- EXCLUSIVE, which LOCK TABLE takes on every partition and child table too;
-- so no foreign key can come to reference a locked table before this
-- transaction ends, and one that was being added held its lock until it
-- committed, before ours was granted.  Each statement of a VOLATILE
-- function in READ COMMITTED takes a new snapshot, so the computation under
-- the locks sees everything committed before them.  Under REPEATABLE READ or
-- SERIALIZABLE the snapshot is the transaction's, taken before the locks, so
-- a real run refuses to start there.  Locks are taken in one order: the
-- table first, then by name; ACCESS EXCLUSIVE on every table involved at
-- once, so that no lock is upgraded half-way (which could deadlock).  A dry
-- run locks nothing itself and reads once: it holds only the ACCESS SHARE
-- locks of reading the largest id (the table, its partitions and children,
-- their indexes) and an identity's position (its sequence).
--
-- The helpers are internal, as their leading underscore says: not an
-- interface, free to change in any release.  Each is SECURITY INVOKER with
-- search_path pinned as for snowflake_convert_column(), and changes
-- nothing.  EXECUTE stays granted to PUBLIC: snowflake_convert_column()
-- calls them with its caller's rights (any table's owner, not only a
-- superuser), and there is nothing to guard, as they read only catalogs
-- that every role can read, and the position of an identity's sequence,
-- which needs the caller's own SELECT on it.
--
-- snowflake_convert_column(): SECURITY INVOKER: every statement runs with
-- the caller's rights, so it can do nothing the caller could not do by
-- hand; the function checks ownership first only to refuse clearly, before
-- any work.  search_path is pinned to pg_catalog (then pg_temp, last, so
-- temporary objects cannot shadow catalog ones) so that a hostile
-- search_path cannot redirect its calls and catalog lookups; table and
-- sequence names come from regclass values and are printed
-- schema-qualified under that path (and in messages as regclass prints
-- them, quoted where SQL needs it, like PostgreSQL's own "must be owner of
-- table ..." messages).  VOLATILE, PARALLEL UNSAFE: it runs DDL.  Not
-- STRICT: a NULL table (from to_regclass, say) must be an error, not
-- silently nothing.  ROWS 10: it returns a few statements.
CREATE FUNCTION snowflake_convert_column(
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

-- The closure: every column that must become bigint when tbl.col does,
-- tbl.col first, as (root table, column name): each column whose foreign
-- key references it, directly or through another such column (a 1:1 table
-- whose key references this one, and a table referencing that), in any
-- table.  A breadth-first walk over the foreign keys, by root table: a
-- foreign key declared on a partition or child table has its column
-- changed at the top of its own tree, and one referencing a partition or
-- child table of a listed table references that table's column.  STABLE,
-- PARALLEL SAFE: it reads catalogs, under the caller's snapshot.  STRICT:
-- no table, no closure.  ROWS 10: a few columns.
CREATE FUNCTION _snowflake_convert_fk_closure(tbl regclass, col name)
RETURNS TABLE (rel regclass, att name)
LANGUAGE plpgsql
STABLE PARALLEL SAFE STRICT SECURITY INVOKER
ROWS 10
SET search_path = pg_catalog, pg_temp
AS $closure$
DECLARE
	v_rels oid[] := ARRAY[tbl::oid];
	v_atts name[] := ARRAY[col];
	v_i integer := 1;
	v_r record;
BEGIN
	WHILE v_i <= cardinality(v_rels) LOOP
		FOR v_r IN
			WITH RECURSIVE members(relid) AS (
				SELECT v_rels[v_i]
				UNION
				SELECT i.inhrelid FROM pg_inherits i JOIN members m ON i.inhparent = m.relid
			),
			fkcols AS (
				SELECT c.conrelid AS relid, fa.attname, fa.attinhcount > 0 AS inherited
				  FROM members m
				  JOIN pg_attribute a ON a.attrelid = m.relid AND a.attname = v_atts[v_i]
									 AND NOT a.attisdropped
				  JOIN pg_constraint c ON c.confrelid = m.relid AND c.contype = 'f'
									  AND c.conparentid = 0
				  CROSS JOIN LATERAL generate_subscripts(c.confkey, 1) AS k(n)
				  JOIN pg_attribute fa ON fa.attrelid = c.conrelid AND fa.attnum = c.conkey[k.n]
				 WHERE c.confkey[k.n] = a.attnum
			),
			up(relid, attname, inherited) AS (
				SELECT * FROM fkcols
				UNION
				SELECT i.inhparent, u.attname, pa.attinhcount > 0
				  FROM up u
				  JOIN pg_inherits i ON i.inhrelid = u.relid
				  JOIN pg_attribute pa ON pa.attrelid = i.inhparent AND pa.attname = u.attname
									  AND NOT pa.attisdropped
				 WHERE u.inherited
			)
			SELECT u.relid, u.attname
			  FROM up u
			 WHERE NOT u.inherited
			 GROUP BY u.relid, u.attname
			 ORDER BY u.relid::regclass::text, u.attname
		LOOP
			IF NOT EXISTS (SELECT FROM generate_subscripts(v_rels, 1) AS k(n)
							WHERE v_rels[k.n] = v_r.relid AND v_atts[k.n] = v_r.attname) THEN
				v_rels := v_rels || v_r.relid;
				v_atts := v_atts || v_r.attname;
			END IF;
		END LOOP;
		v_i := v_i + 1;
	END LOOP;

	RETURN QUERY
		SELECT v_rels[k.n]::regclass, v_atts[k.n]
		  FROM generate_subscripts(v_rels, 1) AS k(n)
		 ORDER BY k.n;
END;
$closure$;

COMMENT ON FUNCTION _snowflake_convert_fk_closure(regclass, name) IS
'internal to snowflake_convert_column(): the columns that must become bigint with a column';

-- The obstacle scan: every refusal but the last (existing values above the
-- next id, which needs the locks and draws an id), in this order, and what
-- the statements need to know: the tree of tbl (its partitions and child
-- tables), the root tables whose columns are not bigint yet, the
-- identities and sequences involved, whether some table of the tree still
-- needs the default, the child tables to detach during the type change,
-- and whether the column is converted already (then nothing past that is
-- checked).  rels and atts are the closure; nextval_expr and nextval_call
-- are the extension's DEFAULT as pg_get_expr() prints it and as written.
-- STABLE, PARALLEL SAFE: it reads catalogs, and raises.  Not STRICT:
-- called only by snowflake_convert_column(), with no NULL.
CREATE FUNCTION _snowflake_convert_obstacles(
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

COMMENT ON FUNCTION _snowflake_convert_obstacles(regclass, name, boolean, oid[], name[], text, text) IS
'internal to snowflake_convert_column(): refuses what cannot be converted, and reports what must change';

-- The statement builder: the statements of a conversion, in order.  The
-- identity goes first (a column with an identity takes no DEFAULT).  Then
-- the types: one ALTER TABLE a table, so each is rewritten once; the
-- converted column's table first.  PostgreSQL rebuilds and revalidates the
-- foreign keys between them, and int4 referencing int8 (or the reverse) is
-- a valid foreign key in between.  A child table to detach (see the
-- obstacle scan) is detached before, changed right after its root, and
-- attached again after all the types.  Then the default, on tbl (it
-- recurses into partitions and child tables, replacing their own
-- defaults), then the sequences.  Old sequences stay (detached: no longer
-- dropped with the column or moved with it) unless drop_sequence says
-- otherwise.  An identity's sequence cannot be detached, and DROP IDENTITY
-- drops it: to keep it like the others, a free-standing sequence with its
-- name, parameters, position and owner takes its place (its grants are not
-- copied).  VOLATILE: it reads an identity sequence's position, which moves
-- outside any snapshot.  PARALLEL SAFE: it only reads.
CREATE FUNCTION _snowflake_convert_statements(
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

COMMENT ON FUNCTION _snowflake_convert_statements(regclass, name, boolean, oid[], name[], oid[], oid[], oid[], oid[], boolean, oid[], text) IS
'internal to snowflake_convert_column(): the statements of a conversion, in order';

-- The extension's schema: a role that may create objects in it, other than
-- the one creating or updating the extension (and superusers), can plant
-- functions and types beside the extension's.  The extension's own calls
-- name their types and cannot be taken over, but such a role can make them
-- ambiguous, so that they fail, and can take the calls that applications
-- make with untyped arguments.  So CREATE EXTENSION and ALTER EXTENSION
-- ... UPDATE (whose script repeats this) warn of it.  current_schema() is
-- the extension's schema while its script runs.
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

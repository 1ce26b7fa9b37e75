-- A misspelt setting under the extension's prefix is refused: from
-- PostgreSQL 15 on the library reserves the prefix for the names it
-- defines.  13 and 14 can only warn about unknown names found in the
-- configuration files when the library loads, and accept a SET of any
-- name under the prefix: their server's output is reserved_prefix_1.out.
SET snowflake.no_such_setting = 1;
SHOW snowflake.no_such_setting;

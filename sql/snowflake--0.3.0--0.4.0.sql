-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION snowflake UPDATE TO '0.4.0'" to load this file. \quit

-- From 0.3.0 to 0.4.0: each change below repeats one of
-- snowflake--0.4.0.sql (assembled from sql/install/), where the comments
-- explain it; the regress test "upgrade" checks that an updated extension
-- equals a fresh one.

-- == Leases ==

-- == Online conversion ==

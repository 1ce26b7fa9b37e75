-- order_trials(conninfo, expr, type, trials, burst): causal order across two
-- sessions, for test/t/200_causal_order.pl and test/bench/uuidv7_order.
-- Needs dblink.  Each trial: session a, holding a lock on "handoff", draws
-- burst values of expr (the largest is kept); session b's draw, sent
-- asynchronously, reads "handoff" and so waits for that lock; once b is
-- seen waiting, a commits and b's value arrives.  Returns how many trials
-- gave b a value not larger than a's, compared as type.
CREATE TABLE handoff (x int);
INSERT INTO handoff VALUES (1);

CREATE FUNCTION order_trials(conninfo text, expr text, type text, trials int, burst int)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	b_pid int;
	a_val text;
	b_val text;
	after boolean;
	not_after int := 0;
BEGIN
	PERFORM dblink_connect('a', conninfo);
	PERFORM dblink_connect('b', conninfo);
	SELECT pid INTO b_pid FROM dblink('b', 'SELECT pg_backend_pid()') AS t(pid int);
	FOR i IN 1 .. trials LOOP
		PERFORM dblink_exec('a', 'BEGIN');
		PERFORM dblink_exec('a', 'LOCK TABLE handoff IN ACCESS EXCLUSIVE MODE');
		SELECT v INTO a_val
		  FROM dblink('a', format('SELECT v::text FROM (SELECT %s AS v FROM generate_series(1, %s)) s ORDER BY v DESC LIMIT 1',
								  expr, burst)) AS t(v text);
		PERFORM dblink_send_query('b', format('SELECT %s::text FROM handoff', expr));
		WHILE NOT EXISTS (SELECT FROM pg_locks
						   WHERE pid = b_pid AND NOT granted AND relation = 'handoff'::regclass) LOOP
			PERFORM pg_sleep(0.0001);
		END LOOP;
		PERFORM dblink_exec('a', 'COMMIT');
		SELECT v INTO b_val FROM dblink_get_result('b') AS t(v text);
		-- (the result set's end)
		PERFORM * FROM dblink_get_result('b') AS t(v text);
		EXECUTE format('SELECT %L::%s > %L::%s', b_val, type, a_val, type) INTO after;
		IF NOT after THEN
			not_after := not_after + 1;
		END IF;
	END LOOP;
	PERFORM dblink_disconnect('a');
	PERFORM dblink_disconnect('b');
	RETURN not_after;
END;
$$;

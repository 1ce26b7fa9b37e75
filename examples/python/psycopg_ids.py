"""psycopg 3 and snowflake ids: ids arrive as Python ints, exact above 2^53;
INSERT ... RETURNING id, executemany() (with the ids of every row), and COPY
in and out, binary-safe both ways.

Connects with the libpq environment variables (PGHOST, PGPORT, PGUSER,
PGDATABASE) to a database with CREATE EXTENSION snowflake:
    python3 psycopg_ids.py
"""
import sys

import psycopg


def check(condition, message):
    if not condition:
        sys.exit(f"psycopg: {message}")


def main():
    with psycopg.connect() as conn:
        conn.execute("DROP TABLE IF EXISTS events, archive")
        conn.execute("""
            CREATE TABLE events (
                id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
                payload text NOT NULL
            )""")
        conn.execute("CREATE TABLE archive (id bigint PRIMARY KEY, payload text NOT NULL)")

        # readme:psycopg-returning
        event_id = conn.execute(
            "INSERT INTO events (payload) VALUES (%s) RETURNING id", ("signup",)
        ).fetchone()[0]  # an int: 253918188092289024
        # end
        check(type(event_id) is int, f"the id arrived as {type(event_id).__name__}, not int")
        check(event_id > 2**53, f"{event_id} is not above 2^53")
        text = conn.execute("SELECT id::text FROM events WHERE id = %s", (event_id,)).fetchone()[0]
        check(str(event_id) == text, f"{event_id} differs from the server's id::text {text}")

        # readme:psycopg-executemany
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO events (payload) VALUES (%s) RETURNING id",
                [(f"click {i}",) for i in range(100)],
                returning=True,
            )
            ids = []
            while True:  # one result per row of parameters
                ids.append(cur.fetchone()[0])
                if not cur.nextset():
                    break
        # end
        check(len(ids) == 100, f"executemany returned {len(ids)} ids, not 100")
        check(ids == sorted(set(ids)), "executemany's ids are not distinct and increasing")
        check(ids[0] > event_id, "executemany's ids are not above the one inserted before")

        # readme:psycopg-copy
        with conn.cursor() as cur:
            with cur.copy("COPY events (payload) FROM STDIN") as copy:
                for i in range(1000):
                    copy.write_row((f"view {i}",))
            with cur.copy("COPY (SELECT id, payload FROM events ORDER BY id) TO STDOUT") as copy:
                copy.set_types(["int8", "text"])
                rows = list(copy.rows())  # [(253918188092289024, 'signup'), ...]
        # end
        check(len(rows) == 1101, f"COPY out gave {len(rows)} rows, not 1101")
        check(all(type(r[0]) is int for r in rows), "COPY out gave ids that are not ints")
        selected = conn.execute("SELECT id, id::text AS text FROM events ORDER BY id").fetchall()
        check([r[0] for r in rows] == [r[0] for r in selected], "COPY out and SELECT disagree")
        check(all(str(i) == t for i, t in selected), "an int differs from the server's id::text")
        check(rows[0] == (event_id, "signup"), "the first row out is not the first inserted")

        # Ints copied in as explicit ids land exactly, in text and in binary COPY.
        with conn.cursor() as cur:
            with cur.copy("COPY archive (id, payload) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "text"])
                for row in rows[:500]:
                    copy.write_row(row)
            with cur.copy("COPY archive (id, payload) FROM STDIN") as copy:
                for row in rows[500:]:
                    copy.write_row(row)
        same = conn.execute(
            "SELECT count(*) FROM archive a JOIN events e USING (id, payload)").fetchone()[0]
        check(same == 1101, f"{same} of 1101 rows copied back in kept their id")


main()
print("psycopg: ok")

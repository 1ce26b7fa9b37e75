"""An HTTP API (http.server and psycopg 3) that shows public ids, never
snowflake ids: POST /events returns the new event's public id, GET
/events/<public id> finds it again, and a string no key made (or a mistyped
one) is a 404, like an id that matches no row.  Runs the server on
127.0.0.1 with an ephemeral port in a thread, calls it with urllib, and
checks the answers.

Connects with the libpq environment variables (PGHOST, PGPORT, PGUSER,
PGDATABASE) to a database with CREATE EXTENSION snowflake, as a superuser the
first time (to create the server's public id key if it has none):
    python3 psycopg_public_ids.py
"""
import json
import re
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg
from psycopg import errors


def check(condition, message):
    if not condition:
        sys.exit(f"psycopg public ids: {message}")


# readme:psycopg-public-handler
class Events(BaseHTTPRequestHandler):
    def send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        with psycopg.connect() as conn:
            public_id, payload = conn.execute(
                "INSERT INTO events (payload) VALUES (%s)"
                " RETURNING snowflake_public_id(id), payload", ("signup",)
            ).fetchone()
        self.send(201, {"id": public_id, "payload": payload})

    def do_GET(self):
        match = re.fullmatch(r"/events/([0-9A-Za-z]+)", self.path)
        if not match:
            return self.send(404, {"error": "not found"})
        try:
            with psycopg.connect() as conn:
                row = conn.execute(
                    "SELECT snowflake_public_id(id), payload FROM events"
                    " WHERE id = snowflake_id_from_public(%s)", (match[1],)
                ).fetchone()
        except errors.InvalidTextRepresentation:  # 22P02: mistyped, forged
            row = None
        if row is None:
            return self.send(404, {"error": "no such event"})
        self.send(200, {"id": row[0], "payload": row[1]})
# end

    def log_message(self, *args):
        pass


def call(base, method, path):
    request = urllib.request.Request(base + path, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def main():
    with psycopg.connect(autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS events")
        conn.execute("""
            CREATE TABLE events (
                id bigint PRIMARY KEY DEFAULT snowflake_nextval(),
                payload text NOT NULL
            )""")
        # Once per server (fleet: see doc/public-ids.md): a superuser's job.
        conn.execute("SELECT snowflake_public_key_create(first => true)"
                     " WHERE NOT EXISTS (SELECT FROM snowflake_public_keys())")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Events)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        status, event = call(base, "POST", "/events")
        check(status == 201, f"POST gave {status}")
        public_id = event["id"]
        check(re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{16}", public_id), f"{public_id} is not a public id")
        with psycopg.connect() as conn:
            event_id, again = conn.execute(
                "SELECT id, snowflake_public_id(id) FROM events").fetchone()
        check(again == public_id, "the server makes another public id for the same id")

        check(call(base, "GET", f"/events/{public_id}") == (200, {"id": public_id, "payload": "signup"}),
              "GET of the public id did not find the event")
        check(call(base, "GET", f"/events/{public_id.lower()}")[0] == 200, "lower case was not found")
        # One character changed: the key refuses it, or (1 time in 4096) it
        # decodes to an id no row has.
        wrong = public_id[:-1] + ("Y" if public_id[-1] == "Z" else "Z")
        check(call(base, "GET", f"/events/{wrong}") == (404, {"error": "no such event"}),
              f"the mistyped {wrong} was not a 404")
        check(call(base, "GET", f"/events/{event_id}")[0] == 404, "a snowflake id was accepted")
        check(call(base, "GET", "/events/ABC")[0] == 404, "a short string was accepted")

        ids = [call(base, "POST", "/events")[1]["id"] for _ in range(50)]
        check(len(set(ids)) == 50, "public ids repeat")
        for i in ids:
            check(call(base, "GET", f"/events/{i}")[1]["id"] == i, f"{i} did not find its event")
    finally:
        server.shutdown()


main()
print("psycopg public ids: ok")

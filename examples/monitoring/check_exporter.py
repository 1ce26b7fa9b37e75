"""prometheus-postgres-exporter with examples/monitoring/queries.yaml: the
metrics it serves on /metrics are snowflake_stats, with the same values.

Runs the exporter on a free loopback port against the database of PGHOST,
PGPORT, PGUSER and PGDATABASE.
"""
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

import psycopg

QUERIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "queries.yaml")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port, deadline):
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                text = r.read().decode()
            if "snowflake_ids_issued" in text:
                return text
        except OSError:
            pass
        if time.monotonic() > deadline:
            sys.exit("the exporter served no snowflake metrics")
        time.sleep(0.2)


def main():
    with psycopg.connect(autocommit=True) as conn:
        conn.execute("SELECT count(snowflake_nextval()) FROM generate_series(1, 12345)")
        expected = conn.execute(
            "SELECT ids_issued, mark_writes, rollbacks_refused, worker_id, layout FROM snowflake_stats"
        ).fetchone()

    dsn = "host={} port={} user={} dbname={} sslmode=disable".format(
        os.environ["PGHOST"], os.environ["PGPORT"], os.environ["PGUSER"], os.environ["PGDATABASE"])
    port = free_port()
    exporter = subprocess.Popen(
        ["prometheus-postgres-exporter", f"--web.listen-address=127.0.0.1:{port}",
         f"--extend.query-path={QUERIES}", "--disable-default-metrics",
         "--disable-settings-metrics"],
        env={**os.environ, "DATA_SOURCE_NAME": dsn},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        text = scrape(port, time.monotonic() + 60)
    finally:
        exporter.terminate()
        exporter.wait(10)

    # The mark writer may write once more while the exporter starts (the
    # mark's lead shrinks as the clock runs): the scraped count lies between
    # the counts read before and after.
    with psycopg.connect(autocommit=True) as conn:
        writes_after = conn.execute("SELECT mark_writes FROM snowflake_stats").fetchone()[0]

    def metric(name):
        m = re.search(rf"^snowflake_{name}{{([^}}]*)}} (\S+)$", text, re.M)
        if not m:
            sys.exit(f"no metric snowflake_{name} in:\n{text}")
        return m.group(1), float(m.group(2))

    labels, issued = metric("ids_issued")
    assert issued == expected[0], f"ids_issued {issued} != {expected[0]}"
    writes = metric("mark_writes")[1]
    assert expected[1] <= writes <= writes_after, \
        f"mark_writes {writes} not in [{expected[1]}, {writes_after}]"
    assert metric("rollbacks_refused")[1] == expected[2], "rollbacks_refused differs"
    assert metric("worker_id")[1] == expected[3], "worker_id differs"
    assert f'layout="{expected[4]}"' in labels, f"labels {labels}"
    assert 'lease_state="off"' in labels, f"labels {labels}"
    assert metric("lease_ok")[1] == 1, "lease_ok is not 1"
    for name in ("sequence_waits", "mark_waits", "backend_mark_writes", "mark_lead_seconds",
                 "stats_since_seconds", "lease_valid_seconds", "lease_requests"):
        metric(name)
    print(f"exporter: {len(re.findall(r'^snowflake_', text, re.M))} snowflake metrics, "
          f"ids_issued {issued:.0f} as in snowflake_stats")


if __name__ == "__main__":
    main()

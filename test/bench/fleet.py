"""A fleet of simulated issuing servers against one lease coordinator.

Each simulated server speaks the lease client's protocol (src/lease.c):
its own connection (to the coordinator, or to a transaction-pooling
pgbouncer in front of it); the extension's schema looked up once; each
call one transaction, as lease_query() runs it: BEGIN with the call's
settings set locally (search_path, statement_timeout, lock_timeout and
idle_in_transaction_session_timeout from the TTL) and the check that the
session would log no secret (current_setting() of each logging setting),
in one round trip of the simple protocol; the call; COMMIT.  A claim of a worker id among
0-1023, then a renewal every TTL / 3 from the moment the previous call
was sent, each proving the current secret of the chain and registering
the hash of the next (SHA-256 of 16 random bytes); a claim again when a
renewal is refused (the lease lapsed and another server took it); a
release at the end.
The servers start at random moments over the first renewal interval, as
a fleet's do.  Statements are sent with parameters, unprepared, as
PQexecParams does.

It prints one line of JSON: the calls made and refused, the latency of
each renewal (its three round trips, as the client waits for them)
against the client's deadline for a call, and the CPU time and
memory (PSS) of the coordinator's processes over the measured window.

    python3 fleet.py --dsn DSN --postmaster-pid PID --clients N --ttl-ms T --seconds S
"""
import argparse
import asyncio
import hashlib
import json
import os
import random
import resource
import signal
import time

import psycopg

LOGGING_SETTINGS = ["log_statement", "log_min_duration_statement", "log_min_duration_sample",
                    "log_statement_sample_rate", "log_transaction_sample_rate",
                    "log_parameter_max_length", "log_parameter_max_length_on_error",
                    "log_min_error_statement", "auto_explain.log_min_duration",
                    "pgaudit.log_parameter", "debug_print_plan"]


def query_timeout_ms(ttl):
    """The client's deadline for one call (LEASE_QUERY_TIMEOUT_MS)."""
    return min(max(ttl // 3, 200), 5000)


def process_times(postmaster):
    """CPU seconds and PSS bytes of the postmaster and its children."""
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = 0.0
    pss = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(name) != postmaster and int(fields[1]) != postmaster:
                continue
            cpu += (int(fields[11]) + int(fields[12])) / ticks
            with open(f"/proc/{name}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1]) * 1024
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
    return cpu, pss


class Fleet:
    def __init__(self, args):
        self.args = args
        self.latencies = []
        self.late = 0
        self.calls = {"claim": 0, "renew": 0, "release": 0}
        self.refused = {"claim": 0, "renew": 0, "release": 0}
        self.errors = {}
        self.measuring = False
        self.stopping = False   # SIGTERM: the window ends, the servers release

    def error(self, what, e):
        key = f"{what}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        self.errors[key] = self.errors.get(key, 0) + 1

    async def server(self, i, start_at, end_at):
        args = self.args
        ttl = args.ttl_ms
        deadline = query_timeout_ms(ttl) / 1000
        statement_timeout_ms = query_timeout_ms(ttl) * 3 // 4
        lock_timeout_ms = query_timeout_ms(ttl) // 2
        try:
            conn = await psycopg.AsyncConnection.connect(args.dsn, autocommit=True, prepare_threshold=None)
        except Exception as e:
            self.error("connect", e)
            return
        secrets = []            # the secrets offered (the one the row holds)
        node = None
        begin = (
            "BEGIN; "
            "SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true), "
            f"pg_catalog.set_config('statement_timeout', '{statement_timeout_ms}', true), "
            f"pg_catalog.set_config('lock_timeout', '{lock_timeout_ms}', true), "
            f"pg_catalog.set_config('idle_in_transaction_session_timeout', '{query_timeout_ms(ttl)}', true); "
            "SELECT s.name, pg_catalog.current_setting(s.name, true), current_user "
            "FROM pg_catalog.unnest('{" + ",".join(LOGGING_SETTINGS) + "}'::pg_catalog.text[]) AS s(name) "
            "WHERE pg_catalog.current_setting(s.name, true) IS NOT NULL")
        try:
            cur = await conn.execute(
                "SELECT n.nspname FROM pg_catalog.pg_extension e "
                "JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace "
                "WHERE e.extname OPERATOR(pg_catalog.=) 'snowflake'")
            schema = (await cur.fetchone())[0]
            schema_id = '"' + schema.replace('"', '""') + '"'

            async def call(sql, params):
                """One call in a transaction of its own, as lease_query() runs it
                (a connection lost is made again, as the client does)."""
                nonlocal conn
                if conn.closed or conn.broken:
                    await conn.close()
                    conn = await psycopg.AsyncConnection.connect(args.dsn, autocommit=True,
                                                                 prepare_threshold=None)
                try:
                    cur = await conn.execute(begin)
                    while cur.nextset():
                        pass
                    await cur.fetchall()
                    cur = await conn.execute(sql, params)
                    row = await cur.fetchone()
                    await conn.execute("COMMIT")
                    return row
                except Exception:
                    if not conn.closed and not conn.broken:
                        try:
                            await conn.execute("ROLLBACK")
                        except psycopg.Error:
                            pass
                    raise

            def chain():
                secret = os.urandom(16).hex()
                return secret, hashlib.sha256(bytes.fromhex(secret)).digest()

            await asyncio.sleep(max(0.0, start_at - time.monotonic()))
            # claim, renew every TTL / 3 from the call's sending, and claim
            # again when a renewal is refused (the lease lapsed and is
            # another's), as the lease client does
            renew_at = time.monotonic()
            while True:
                await asyncio.sleep(max(0.0, renew_at - time.monotonic()))
                if time.monotonic() >= end_at or self.stopping:
                    break
                sent = time.monotonic()
                renew_at = sent + ttl / 3000
                nxt, next_hash = chain()
                if node is None:
                    self.calls["claim"] += 1
                    try:
                        row = await call(
                            f"SELECT node, generation, previous_horizon_ms, horizon_ms, expires_at "
                            f"FROM {schema_id}.snowflake_lease_claim(%s::pg_catalog.text, %s::pg_catalog.text[], "
                            f"%s::pg_catalog.bytea, %s::pg_catalog.int4[], %s::pg_catalog.int4[], "
                            f"%s::pg_catalog.int4, %s::pg_catalog.int4, %s::pg_catalog.int8)",
                            (f"simulated server {i}", secrets, next_hash, [0], [1023], None, ttl,
                             int(time.time() * 1000) + ttl + 1000))
                    except Exception as e:
                        self.error("claim", e)
                        row = None
                    if row is None:
                        self.refused["claim"] += 1
                    else:
                        node = row[0]
                        secrets = [nxt]
                    continue
                try:
                    row = await call(
                        f"SELECT renewed, horizon_ms, expires_at "
                        f"FROM {schema_id}.snowflake_lease_renew(%s::pg_catalog.int4, %s::pg_catalog.text[], "
                        f"%s::pg_catalog.bytea, %s::pg_catalog.int4, %s::pg_catalog.int8)",
                        (node, secrets, next_hash, ttl, int(time.time() * 1000) + ttl + 1000))
                    renewed = row[0]
                except Exception as e:
                    self.error("renew", e)
                    renewed = None
                took = time.monotonic() - sent
                if self.measuring:
                    self.calls["renew"] += 1
                    self.latencies.append(took)
                    if took > deadline:
                        self.late += 1
                    if not renewed:
                        self.refused["renew"] += 1
                if renewed:
                    secrets = [nxt]
                elif renewed is False:
                    node = None
            if node is None:
                return
            self.calls["release"] += 1
            row = await call(
                f"SELECT {schema_id}.snowflake_lease_release(%s::pg_catalog.int4, %s::pg_catalog.text[], "
                f"%s::pg_catalog.int8)", (node, secrets, int(time.time() * 1000)))
            if not row[0]:
                self.refused["release"] += 1
        except Exception as e:
            self.error("session", e)
        finally:
            await conn.close()

    async def run(self):
        args = self.args
        ttl = args.ttl_ms / 1000
        start = time.monotonic() + args.connect_seconds
        end = start + ttl / 3 + args.seconds
        tasks = [asyncio.create_task(self.server(i, start + random.uniform(0, ttl / 3), end))
                 for i in range(args.clients)]
        # (SIGTERM ends the run early, reported as the window so far)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)

        async def pause(seconds):
            try:
                await asyncio.wait_for(stop.wait(), max(0.0, seconds))
            except asyncio.TimeoutError:
                pass

        # measured: after every server has claimed and renewed once
        await pause(start + ttl / 3 - time.monotonic())
        self.measuring = True
        # (read in a thread: /proc of a thousand backends takes the event
        # loop seconds, past the calls' idle_in_transaction_session_timeout)
        cpu0, _ = await asyncio.to_thread(process_times, args.postmaster_pid)
        own0 = os.times()
        t0 = time.monotonic()
        await pause((end - time.monotonic()) * 0.5)
        _, pss = await asyncio.to_thread(process_times, args.postmaster_pid)
        await pause(end - time.monotonic())
        cpu1, _ = await asyncio.to_thread(process_times, args.postmaster_pid)
        own1 = os.times()
        window = time.monotonic() - t0
        self.measuring = False
        self.stopping = True
        await asyncio.gather(*tasks)
        lat = sorted(self.latencies)

        def pct(p):
            return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 2) if lat else None
        print(json.dumps({
            "clients": args.clients, "ttl_ms": args.ttl_ms, "window_s": round(window, 1),
            "calls": self.calls, "refused": self.refused, "errors": self.errors,
            "renewals_per_s": round(len(lat) / window, 1),
            "latency_ms": {"p50": pct(0.50), "p99": pct(0.99), "max": round(lat[-1] * 1000, 2) if lat else None},
            "deadline_ms": query_timeout_ms(args.ttl_ms), "late": self.late,
            "coordinator_cpu_pct": round(100 * (cpu1 - cpu0) / window, 1),
            "coordinator_pss_mb": round(pss / 2 ** 20, 1),
            "simulator_cpu_pct": round(100 * ((own1.user + own1.system) - (own0.user + own0.system)) / window, 1),
        }))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dsn", required=True)
    p.add_argument("--postmaster-pid", type=int, required=True)
    p.add_argument("--clients", type=int, required=True)
    p.add_argument("--ttl-ms", type=int, required=True)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--connect-seconds", type=float, default=10)
    # a socket per simulated server
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    asyncio.run(Fleet(p.parse_args()).run())


if __name__ == "__main__":
    main()

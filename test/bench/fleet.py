"""A fleet of simulated issuing servers against one lease coordinator.

Each simulated server speaks the lease client's protocol (src/lease.c):
its own connection; the session's settings as lease_session_start() sets
them (search_path, statement_timeout and lock_timeout from the TTL); the
extension's schema looked up once; before every call the check that the
session would log no secret (pg_settings at the session's first call and
after a reload, pg_conf_load_time() otherwise); a claim of a worker id among
0-1023, then a renewal every TTL / 3 from the moment the previous call
was sent, each proving the current secret of the chain and registering
the hash of the next (SHA-256 of 16 random bytes); a claim again when a
renewal is refused (the lease lapsed and another server took it); a
release at the end.
The servers start at random moments over the first renewal interval, as
a fleet's do.  Statements are sent with parameters, unprepared, as
PQexecParams does.

It prints one line of JSON: the calls made and refused, the latency of
each renewal (the settings check and the renewal, as the client waits for
both) against the client's deadline for a call, and the CPU time and
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
        try:
            await conn.execute(
                "SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false), "
                "pg_catalog.set_config('statement_timeout', %s, false), "
                "pg_catalog.set_config('lock_timeout', %s, false)",
                (str(statement_timeout_ms), str(lock_timeout_ms)))
            cur = await conn.execute(
                "SELECT (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
                "         WHERE e.extname = 'snowflake'), pg_backend_pid()")
            schema = (await cur.fetchone())[0]
            schema_id = '"' + schema.replace('"', '""') + '"'

            checked = [None]    # pg_conf_load_time() of the last full check

            async def check():
                if checked[0] is not None:
                    cur = await conn.execute("SELECT pg_catalog.pg_conf_load_time()")
                    if (await cur.fetchone())[0] == checked[0]:
                        return
                cur = await conn.execute(
                    "SELECT s.name, s.setting, current_user, pg_catalog.pg_conf_load_time() "
                    "FROM pg_catalog.pg_settings s "
                    "WHERE s.name OPERATOR(pg_catalog.=) ANY (%s::pg_catalog.text[])", (LOGGING_SETTINGS,))
                checked[0] = (await cur.fetchall())[0][3]

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
                if time.monotonic() >= end_at:
                    break
                sent = time.monotonic()
                renew_at = sent + ttl / 3000
                nxt, next_hash = chain()
                if node is None:
                    self.calls["claim"] += 1
                    try:
                        await check()
                        cur = await conn.execute(
                            f"SELECT node, generation, previous_horizon_ms, horizon_ms, expires_at "
                            f"FROM {schema_id}.snowflake_lease_claim(%s::pg_catalog.text, %s::pg_catalog.text[], "
                            f"%s::pg_catalog.bytea, %s::pg_catalog.int4[], %s::pg_catalog.int4[], "
                            f"%s::pg_catalog.int4, %s::pg_catalog.int4, %s::pg_catalog.int8)",
                            (f"simulated server {i}", secrets, next_hash, [0], [1023], None, ttl,
                             int(time.time() * 1000) + ttl + 1000))
                        row = await cur.fetchone()
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
                    await check()
                    cur = await conn.execute(
                        f"SELECT renewed, horizon_ms, expires_at "
                        f"FROM {schema_id}.snowflake_lease_renew(%s::pg_catalog.int4, %s::pg_catalog.text[], "
                        f"%s::pg_catalog.bytea, %s::pg_catalog.int4, %s::pg_catalog.int8)",
                        (node, secrets, next_hash, ttl, int(time.time() * 1000) + ttl + 1000))
                    renewed = (await cur.fetchone())[0]
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
            await check()
            cur = await conn.execute(
                f"SELECT {schema_id}.snowflake_lease_release(%s::pg_catalog.int4, %s::pg_catalog.text[], "
                f"%s::pg_catalog.int8)", (node, secrets, int(time.time() * 1000)))
            if not (await cur.fetchone())[0]:
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
        # measured: after every server has claimed and renewed once
        await asyncio.sleep(max(0.0, start + ttl / 3 - time.monotonic()))
        self.measuring = True
        cpu0, _ = process_times(args.postmaster_pid)
        own0 = os.times()
        t0 = time.monotonic()
        await asyncio.sleep(max(0.0, end - time.monotonic()) * 0.5)
        _, pss = process_times(args.postmaster_pid)
        await asyncio.sleep(max(0.0, end - time.monotonic()))
        cpu1, _ = process_times(args.postmaster_pid)
        own1 = os.times()
        window = time.monotonic() - t0
        self.measuring = False
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

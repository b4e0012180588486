"""``kraft-testkit serve``: an in-process cluster on loopback for any Kafka client, until Ctrl-C."""

from __future__ import annotations

import argparse
import sys
import time


def add_parser(sub: argparse._SubParsersAction) -> None:
    from .arguments import at_least

    p = sub.add_parser(
        "serve", help="serve an in-process cluster to real Kafka clients on 127.0.0.1",
        description="Boot a cluster and serve Kafka's wire protocol on one loopback port per "
                    "node; print the bootstrap addresses and serve until Ctrl-C. Virtual time "
                    "follows the wall clock at --speed (1 = real time).")
    p.add_argument("--controllers", type=at_least(1), default=3)
    p.add_argument("--brokers", type=at_least(1), default=3)
    p.add_argument("--seed", type=int, default=0, help="the cluster's seed (default 0)")
    p.add_argument("--speed", type=float, default=1.0,
                   help="virtual ms per wall ms (default 1.0); 0 steps time only when a "
                        "request needs it")
    p.add_argument("--sasl", action="store_true",
                   help="listeners require SASL (PLAIN, SCRAM-SHA-256/512)")
    p.add_argument("--scram-user", action="append", default=[], metavar="USER:PASSWORD",
                   help="create a SCRAM-SHA-256 and -512 credential (repeatable)")
    p.add_argument("--seconds", type=float, default=None,
                   help="stop after this many seconds instead of waiting for Ctrl-C")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kraft_testkit.cluster import Cluster
    from kraft_testkit.gateway import serve

    if args.speed < 0:
        print("kraft-testkit serve: --speed must be >= 0", file=sys.stderr)
        return 2
    users = []
    for spec in args.scram_user:
        user, sep, password = spec.partition(":")
        if not sep or not user or not password:
            print(f"kraft-testkit serve: --scram-user wants USER:PASSWORD, got {spec!r}",
                  file=sys.stderr)
            return 2
        users.append((user, password))
    cluster = Cluster(args.controllers, args.brokers, seed=args.seed)
    for user, password in users:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            cluster.upsert_scram_credential(user, password, mechanism=mechanism)
    with serve(cluster, speed=args.speed or None, sasl=args.sasl) as srv:
        print(f"bootstrap.servers={srv.bootstrap_servers}")
        print(f"bootstrap.controllers={srv.bootstrap_controllers}")
        print(f"cluster.id={cluster.cluster_id} seed={args.seed} "
              f"speed={'stepping' if not args.speed else args.speed}", flush=True)
        deadline = None if args.seconds is None else time.monotonic() + args.seconds
        try:
            while deadline is None or time.monotonic() < deadline:
                time.sleep(0.2)
                srv.raise_failure()
        except KeyboardInterrupt:
            pass
        print(f"stopped at virtual time {cluster.now_ms} ms after "
              f"{srv.requests_served} requests", flush=True)
    return 0

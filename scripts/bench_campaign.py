#!/usr/bin/env python3
"""Campaign throughput on Dask workers: programs per second, and the cost of a task.

Runs ``zatile.sw.campaign.run_campaign`` on an embedded ``LocalCluster`` of 1, 2, ... worker
processes (and in this process, ``workers 0``) for model-vs-QEMU and model-vs-RTL campaigns,
measures the overhead of one task (empty chunks through the same cluster), and estimates what a
farm of ``--farm-cores`` one-thread workers gives for a ``--sign-off`` program campaign.

Usage: ``python scripts/bench_campaign.py [--workers 0 1 2] [--qemu-programs 200]
[--rtl-programs 40] [--farm-cores 100] [--sign-off 1000000]``
"""

from __future__ import annotations

import argparse
import sys
import time

from zatile.sw.campaign import MAX_CHUNK, Chunk, run_campaign, run_chunk
from zatile.sw.cluster import campaign_client

#: Empty tasks timed for the overhead of one task.
OVERHEAD_TASKS = 400


def programs_per_second(workers: int, programs: int, backends: list[str], length: int) -> float:
    """Programs per second of a campaign at SVL 128, the cluster already running (its start is
    not counted; each worker's first program pays its imports and is counted)."""
    with campaign_client(workers=workers) as client:
        report = run_campaign(programs, [128], length, 1, backends, client=client)
    if not report.ok:
        raise SystemExit(f"the benchmark campaign failed: {report.summary()}")
    return programs / report.distribution.seconds


def task_overhead(workers: int) -> float:
    """Seconds per task of empty chunks (no program) on ``workers`` workers: the scheduler's,
    the transport's and the result's cost of a task, in throughput terms."""
    with campaign_client(workers=workers) as client:
        client.gather([client.submit(run_chunk, 1, Chunk(128, 0, 0), 1, ["model", "qemu"], 128,
                                     pure=False) for _ in range(workers * 4)])   # warm up
        started = time.monotonic()
        client.gather([client.submit(run_chunk, 1, Chunk(128, 0, 0), 1, ["model", "qemu"], 128,
                                     pure=False) for _ in range(OVERHEAD_TASKS)])
        return (time.monotonic() - started) / OVERHEAD_TASKS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--qemu-programs", type=int, default=200,
                        help="programs of the model-vs-QEMU campaigns (length 40)")
    parser.add_argument("--rtl-programs", type=int, default=40,
                        help="programs of the model-vs-RTL campaigns (length 40; 0 skips them)")
    parser.add_argument("--farm-cores", type=int, default=100)
    parser.add_argument("--sign-off", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    rates = {}
    for label, backends, programs in (("model-vs-QEMU", ["model", "qemu"], args.qemu_programs),
                                      ("model-vs-RTL", ["model", "rtl"], args.rtl_programs)):
        if programs == 0:
            continue
        for workers in args.workers:
            rate = programs_per_second(workers, programs, backends, 40)
            rates[label, workers] = rate
            print(f"{label:14} workers {workers}: {rate:8.2f} programs/s "
                  f"({programs} programs of 40 instructions, SVL 128)")
    overhead = task_overhead(max(args.workers))
    print(f"task overhead ({max(args.workers)} workers, empty chunks): {overhead * 1e3:.1f} ms "
          f"per task; a chunk holds up to {MAX_CHUNK} programs")
    chunks = -(-args.sign_off // MAX_CHUNK)
    for (label, workers), rate in sorted(rates.items()):
        if workers != 1:
            continue
        # One worker's rate on each of the farm's one-thread workers, against the scheduler
        # handing out every chunk one after another (the measured overhead, all of it counted
        # as the scheduler's: pessimistic).
        computing = args.sign_off / (rate * args.farm_cores)
        scheduling = chunks * overhead
        print(f"estimate: {args.sign_off:,} {label} programs on {args.farm_cores} cores: "
              f"{max(computing, scheduling) / 3600:.2f} h (computing {computing:,.0f} s, "
              f"scheduling {chunks:,} chunks at most {scheduling:,.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

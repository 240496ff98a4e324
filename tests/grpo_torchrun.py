"""Test helper (not a test): run several `mvp train` command lines one after another inside the
same torchrun worker processes, through the CLI's own `main(argv)`.

Used by test_grpo_dist.py. On the 2-core CI machine starting torchrun and importing torch and
transformers in two workers costs ~15-30 s per launch, far more than the tiny runs themselves, so
the DDP run and the first FSDP run share one launch. (An FSDP run after another FSDP run in the
same process fails: torch caches the device mesh of the first, whose group is gone.) Each
`train()` joins the process group itself and leaves it at the end, exactly as in its own launch.
One catch: torch names a new default group "0" again after `destroy_process_group`, so a
re-joined group would find the previous group's rendezvous keys in the torchrun store (a rank
then connects to a stale address and hangs); the counter that names groups is moved on before
each further call so each group's keys are fresh.

    torchrun --standalone --nproc_per_node 2 tests/grpo_torchrun.py ARGV_LISTS.json

Rank 0 prints `=== mvp call K exit RC` after each command line so the test can split the output."""
from __future__ import annotations

import json
import os
import sys

from torch.distributed import distributed_c10d

from app.cli import main

if __name__ == "__main__":
    rank0 = os.environ.get("RANK", "0") == "0"
    for k, argv in enumerate(json.loads(open(sys.argv[1]).read())):
        distributed_c10d._world.group_count = 1000 * k      # fresh store keys for this call's group
        rc = main(argv)
        if rank0:
            print(f"=== mvp call {k} exit {rc}", flush=True)
        if rc:
            sys.exit(rc)

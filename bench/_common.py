"""What the benchmark scripts share: a command line described by the script's docstring, with
--threads for torch's CPU threads.

The scripts run as `python bench/NAME.py`, so this folder is on sys.path and `from _common import ...` finds it.
"""

from __future__ import annotations

import argparse

import torch


def bench_parser(doc: str, *, threads: int = 1) -> argparse.ArgumentParser:
    """A parser described by the first line of `doc`, with --threads (default `threads`); the script adds its own options."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--threads", type=int, default=threads, help="torch's CPU threads")
    return parser


def parse_and_set_threads(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The parsed command line, after limiting torch to --threads CPU threads."""
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    return args

"""The `serve` command; `repo2rlenv/cli/main.py` registers it with `main.add_command`.

Thin: check the dataset, build a `DatasetScorer` (or, with `--ray-address`, a `RayDatasetScorer` over a Ray
cluster's Docker nodes) behind a `ScoringService`, bind the HTTP server and serve until SIGINT or SIGTERM,
then close the warm pools. Bad input (no dataset, a port in use, a bad limit) is
one line and exit 2 through `repo2rlenv.cli.guard.guard`. The scoring modules load inside the body, so
`repo2rlenv --help` imports none of them.
"""

from __future__ import annotations

import importlib.util
import signal
from pathlib import Path

import click

from repo2rlenv.cli.guard import Failing, guard


@click.command()
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback exposes the service: set --token then.")
@click.option("--port", type=int, default=8765, show_default=True, help="Port to bind (0: any free port).")
@click.option("--token", envvar="REPO2RLENV_SERVE_TOKEN", default=None,
              help="Require `Authorization: Bearer TOKEN` on /score and /metrics "
                   "(or set REPO2RLENV_SERVE_TOKEN, which keeps it out of the process list).")
@click.option("--concurrency", type=int, default=None,
              help="Scores running at once [default: 2]; with --ray-address, per node [default: the node's "
                   "repo2rlenv_docker resource].")
@click.option("--queue", type=int, default=16, show_default=True,
              help="Requests that may wait for a slot; beyond them the answer is 429 with Retry-After.")
@click.option("--group", type=int, default=8, show_default=True,
              help="Waiting requests for one task scored together in one container (1: each alone). "
                   "Groups form only when requests wait, so an idle service answers as fast either way.")
@click.option("--timeout", "timeout_sec", type=float, default=900.0, show_default=True,
              help="Seconds one request may take, waiting included; past it: reward null, error timeout.")
@click.option("--max-body", "max_body_bytes", type=int, default=1 << 20, show_default=True,
              help="Largest request body in bytes (413 beyond).")
@click.option("--warm", type=int, default=1, show_default=True, help="Idle containers kept ready per open task.")
@click.option("--ray-address", default=None, metavar="ADDRESS",
              help="Score on the Ray cluster at ADDRESS ('auto', HOST:PORT), one scorer per node offering the "
                   "repo2rlenv_docker resource; 'local' starts one on this machine. Needs the ray extra.")
@click.option("--quiet", is_flag=True, help="Do not log each request on stderr.")
def serve(dataset: Path, host: str, port: int, token: str | None, concurrency: int | None, queue: int, group: int,
          timeout_sec: float, max_body_bytes: int, warm: int, ray_address: str | None, quiet: bool) -> None:
    """Score submissions to DATASET's tasks over HTTP: POST /score, GET /health, GET /metrics
    (docs/scoring.md, "The scoring service")."""
    state = Failing()

    def body() -> int:
        from repo2rlenv.dataset.taskdir import DatasetPaths
        from repo2rlenv.errors import UserError

        paths = DatasetPaths(dataset)
        if not paths.tasks.is_dir() or not paths.task_ids():
            raise UserError(f"not a repo2rlenv dataset (no tasks/ with tasks): {dataset}")
        if ((concurrency is not None and concurrency < 1) or queue < 0 or timeout_sec <= 0 or max_body_bytes < 1
                or warm < 0 or group < 1):
            raise UserError("--concurrency, --group and --max-body must be at least 1, --queue and --warm at "
                            "least 0, --timeout above 0")
        if token is not None and not token.strip():
            raise UserError("--token is empty")
        if ray_address is not None and importlib.util.find_spec("ray") is None:
            raise UserError("--ray-address needs Ray here and on every node: pip install 'repo2rlenv[ray]'")
        return _serve(dataset, host, port, token, concurrency, queue, group, timeout_sec, max_body_bytes, warm,
                      ray_address, quiet)

    guard(body, state)


def _serve(dataset: Path, host: str, port: int, token: str | None, concurrency: int | None, queue: int, group: int,
           timeout_sec: float, max_body_bytes: int, warm: int, ray_address: str | None, quiet: bool) -> int:
    from repo2rlenv.scoring.server import make_server
    from repo2rlenv.scoring.service import ScoringService, ServiceLimits

    backend, slots, where = _backend(dataset, concurrency, warm, ray_address)
    limits = ServiceLimits(concurrency=slots, queue=queue, group=group, score_timeout_sec=timeout_sec,
                           max_body_bytes=max_body_bytes)
    service = ScoringService(backend, limits)
    try:
        server = make_server(service, host, port, token=token, log=None if quiet else _log)
    except Exception:
        service.close()
        raise
    if token is None and host not in ("127.0.0.1", "localhost", "::1"):
        _log(f"warning: serving on {host} without --token: anyone who reaches it can run code in containers here")

    def stop(signum: int, _frame: object) -> None:
        _log(f"{signal.Signals(signum).name}: finishing admitted scores and closing the warm pools")
        server.request_stop()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    _log(f"scoring {len(service.backend.task_ids())} tasks of {dataset} at {server.url} "
         f"(concurrency {slots}{where}, queue {queue}, groups of up to {group}"
         f"{', token required' if token else ''})")
    try:
        server.serve_forever()
    finally:
        server.close()
    return 0


def _backend(dataset: Path, concurrency: int | None, warm: int, ray_address: str | None):
    """The scorer behind the service, the scores it runs at once, and where (for the start-up line)."""
    from repo2rlenv.scoring.backend import open_scorer
    from repo2rlenv.scoring.scorer import DEFAULT_CONCURRENCY

    if ray_address is None:
        from repo2rlenv.sandbox.docker import docker_client

        docker_client()  # no daemon: one line and exit 2 before binding
        slots = concurrency or DEFAULT_CONCURRENCY
        return open_scorer(dataset, concurrency=slots, warm=warm), slots, ""
    backend = open_scorer(dataset, ray_address=ray_address, concurrency=concurrency, warm=warm)
    # The admission bound is fixed at start: nodes that join later add capacity the service does not admit.
    nodes = backend.nodes()
    return backend, backend.slots, f" on {len(nodes)} Ray node{'s' if len(nodes) != 1 else ''}"


def _log(line: str) -> None:
    click.echo(line, err=True)


COMMANDS = [serve]

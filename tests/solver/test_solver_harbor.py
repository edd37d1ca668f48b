"""The solver as a Harbor agent in real Harbor: `harbor run --agent-import-path
repo2rlenv.solver.harbor_agent:R2ESolverAgent -e podman` on tasks generated from examples/minicart, the
model scripted over HTTP — and its rewards equal what `repo2rlenv eval` reports for the same replies.

Harbor needs Python >= 3.12, so it runs from its own venv (scripts/harbor_setup.sh) with this checkout
on PYTHONPATH. Outside CI a missing Harbor set-up skips; under CI (`CI` set) it fails.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from repo2rlenv.eval.harness import run_eval
from repo2rlenv.sandbox.docker import docker_client
from repo2rlenv.solver.config import SolverConfig
from repo2rlenv.solver.harbor_session import HarborSession

pytestmark = [pytest.mark.docker, pytest.mark.slow]

AGENT = "repo2rlenv.solver.harbor_agent:R2ESolverAgent"
BASE_IMAGE = os.environ.get("R2E_BASE_IMAGE", "repo2rlenv-base:bookworm")


def _harbor_env(kit) -> dict[str, str]:
    problem = kit.harbor_problem(BASE_IMAGE)
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI requires Harbor with podman for this test: {problem}")
        pytest.skip(f"{problem}; this test fails instead of skipping when CI is set")
    bin_dir = str(kit.harbor_venv() / "bin")
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(kit.ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "VIRTUAL_ENV": str(kit.harbor_venv()), "COLUMNS": "120"}


def test_harbor_agent_rewards_match_eval_for_the_same_replies(docker_ready, r2e_cache, tmp_path, scripted,
                                                              scripted_server, solver_kit):
    env = _harbor_env(solver_kit)
    dataset = solver_kit.ensure_dataset(r2e_cache)
    first, second = solver_kit.task_dirs(dataset)
    replies = {solver_kit.oracle_text(first)[0]: solver_kit.oracle_text(first)[1],
               solver_kit.oracle_text(second)[0]: solver_kit.weak_tests(second)}
    scripted_server.responder = solver_kit.task_responder(scripted, replies)

    jobs = tmp_path / "jobs"
    proc = subprocess.run(
        [str(solver_kit.harbor_venv() / "bin" / "harbor"), "run", "-p", str(dataset / "tasks"),
         "--agent-import-path", AGENT, "-m", solver_kit.MODEL, "--ak", f"llm_base_url={scripted_server.base_url}",
         "--ak", "api_key_env=R2E_TEST_LLM_KEY", "-e", "podman", "-o", str(jobs), "--job-name", "solver",
         "-n", "2", "-y"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200, check=False, stdin=subprocess.DEVNULL)
    print(f"$ harbor run -p <dataset>/tasks --agent-import-path {AGENT} -e podman   (exit {proc.returncode})")
    print(proc.stdout[-2500:])
    assert proc.returncode == 0, f"harbor run failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"

    trials = [json.loads(p.read_text()) for p in sorted((jobs / "solver").glob("*/result.json"))]
    assert len(trials) == 2
    # The oracle's tests stop at "solved" after plan + generate (2 calls of 100 prompt tokens); the weak tests
    # never call the function, so the solver repairs once and stops with no progress (3 calls).
    expected_stops = {first.name: ("solved", 200), second.name: ("no_progress", 300)}
    harbor_rewards = {}
    for trial in trials:
        task = trial["task_name"].split("/")[-1]
        stop_reason, prompt_tokens = expected_stops[task]
        assert trial["exception_info"] is None, trial["exception_info"]
        assert trial["agent_info"]["name"] == "repo2rlenv-solver"
        assert trial["agent_result"]["metadata"]["stop_reason"] == stop_reason
        assert trial["agent_result"]["n_input_tokens"] == prompt_tokens
        agent_dir = jobs / "solver" / trial["trial_name"] / "agent"
        stop = json.loads((agent_dir / "trajectory.jsonl").read_text().splitlines()[-1])
        assert stop["kind"] == "stop" and stop["data"]["stop_reason"] == stop_reason
        harbor_rewards[task] = trial["verifier_result"]["rewards"]["reward"]

    config = SolverConfig(model=solver_kit.MODEL, base_url=scripted_server.base_url, api_key_env="R2E_TEST_LLM_KEY")
    results = run_eval(dataset, tmp_path / "eval", config, docker=docker_client())
    eval_rewards = {r.task_id: r.reward for r in results.tasks}
    print(f"harbor: {harbor_rewards}\neval:   {eval_rewards}")
    assert harbor_rewards == eval_rewards == {first.name: 1.0, second.name: 0.0}


class _FakeEnvironment:
    """Harbor's environment contract as the session uses it: `await exec(command, cwd, env, timeout_sec)`
    answered by a real `bash -c` on the host (unit-level: the Harbor run above crosses the real boundary)."""

    def __init__(self, root):
        self.root = root
        self.commands: list[str] = []
        self.envs: list[dict[str, str]] = []

    async def exec(self, command, cwd=None, env=None, timeout_sec=None):
        import asyncio
        from types import SimpleNamespace

        self.commands.append(command)
        self.envs.append(dict(env or {}))
        proc = await asyncio.create_subprocess_exec("bash", "-c", command, cwd=cwd if cwd and cwd != "/workspace" else self.root,
                                                    env={**os.environ, **(env or {})}, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        return SimpleNamespace(stdout=out.decode(), stderr=err.decode(), return_code=proc.returncode)


def test_harbor_session_moves_files_in_chunks_and_reports_timeouts(tmp_path):
    import asyncio

    fake = _FakeEnvironment(str(tmp_path))
    target = tmp_path / "deep" / "file.bin"
    payload = bytes(range(256)) * 800  # 200 KiB: several heredoc chunks, each far below the argument limit

    async def main():
        session = HarborSession(fake, asyncio.get_running_loop())
        await session.prepare()

        def work():
            session.write_files({str(target): payload})
            read = session.read_file(str(target))
            missing = session.read_file(str(tmp_path / "nothing"))
            slow = session.exec(["sleep", "5"], timeout=1)
            ok = session.exec(["bash", "-c", "echo $HOME; echo err >&2"], env={"API_TOKEN": "secret"})
            return read, missing, slow, ok

        return await asyncio.to_thread(work)

    read, missing, slow, ok = asyncio.run(main())
    assert read == payload and target.read_bytes() == payload and missing is None
    assert slow.timed_out and slow.exit_code == 124
    assert ok.exit_code == 0 and ok.stdout.strip() == "/tmp/r2e-solver/home" and ok.stderr.strip() == "err"
    assert max(len(c) for c in fake.commands) < 128 * 1024
    # Commands get an environment built from scratch; names that look like secrets never pass.
    assert fake.envs[-1]["HOME"] == "/tmp/r2e-solver/home" and "API_TOKEN" not in fake.envs[-1]

"""Run verl's own reward loop on `repo2rlenv.scoring.verl.compute_score` (called by test_verl_real.py).

    $R2E_VERL_VENV/bin/python tests/scoring/verl_reward_loop.py DATASET RL_PARQUET WORKDIR

verl needs older transformers/huggingface_hub than this project's environment, so it lives in its own
venv and this script runs there. verl's code does everything from loading the custom reward function by
path and name (`load_reward_manager` → `get_custom_reward_fn`, the config's reward_kwargs merged in)
to decoding the responses and calling it (`RewardLoopWorker.compute_score_batch` → `NaiveRewardManager.
run_single`, sync functions through `run_in_executor`) and placing the scores (`assemble_rm_scores`).
What this script adds: the rollout batch a trainer would hand over (token ids from a tokenizer made on
the spot, whose vocabulary holds whole answers) and the gathering of the extra keys into columns, as
`RewardLoopManager.compute_rm_score` does after its Ray actors return. Prints one JSON object."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def main(dataset_dir: str, table: str, workdir: str) -> None:
    import datasets
    import numpy as np
    import torch
    import verl
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    import repo2rlenv.scoring.verl as adapter
    from repo2rlenv.dataset.taskdir import DatasetPaths

    rows = list(datasets.load_dataset("parquet", data_files=table)["train"])
    data = DatasetPaths(Path(dataset_dir))
    oracles = {r["task_id"]: next(data.task(r["task_id"]).solution.glob("test_*.py")).read_text() for r in rows}
    fence = "```python\n{}\n```".format
    weak = fence("def test_it_runs():\n    assert True")
    answers = [fence(source.rstrip()) for source in oracles.values()] + [weak]

    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(["<pad>", "<eos>", "<unk>"] + answers)}
    core = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    model_dir = Path(workdir) / "tokenizer"
    tokenizer.save_pretrained(model_dir)  # verl loads the tokenizer from the model path

    config = OmegaConf.create({
        "actor_rollout_ref": {"model": {"path": str(model_dir), "tokenizer_path": None}},
        "reward": {
            "reward_manager": {"source": "register", "name": "naive"},
            "reward_model": {"enable": False},
            "custom_reward_function": {"path": adapter.__file__, "name": "compute_score",
                                       "reward_kwargs": {"dataset_dir": dataset_dir}},
        },
    })
    worker = RewardLoopWorker(config)

    # The rollout: for each row, its task's reference file, the weak file and an empty response (eos only),
    # left-padded prompts and right-padded responses as verl's rollout returns them.
    samples = []
    for row in rows:
        for answer, expected in ((fence(oracles[row["task_id"]].rstrip()), 1.0), (weak, 0.0), (None, 0.0)):
            samples.append((row, answer, expected))
    pad, eos, prompt_len, response_len = tokenizer.pad_token_id, tokenizer.eos_token_id, 4, 2
    prompts = torch.full((len(samples), prompt_len), pad)
    responses = torch.full((len(samples), response_len), pad)
    mask = torch.zeros((len(samples), prompt_len + response_len), dtype=torch.long)
    for i, (_, answer, _) in enumerate(samples):
        prompts[i, -2:] = torch.tensor(tokenizer("user: <unk>")["input_ids"][-2:])
        mask[i, prompt_len - 2:prompt_len] = 1
        ids = ([vocab[answer]] if answer else []) + [eos]
        responses[i, :len(ids)] = torch.tensor(ids)
        mask[i, prompt_len:prompt_len + len(ids)] = 1
    batch = DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": mask,
                 "input_ids": torch.cat([prompts, responses], dim=1)},
        non_tensors={key: np.array([row[key] for row, _, _ in samples], dtype=object)
                     for key in ("data_source", "reward_model", "extra_info")},
    )
    outputs = worker.loop.run_until_complete(worker.compute_score_batch(batch))
    scores = [out["reward_score"] for out in outputs]
    rm_scores = type(worker.reward_manager).assemble_rm_scores(batch, scores)
    extras = [out.get("reward_extra_info", {}) for out in outputs]
    columns = {key: np.array([info[key] for info in extras]).tolist() for key in extras[0]}
    print(json.dumps({
        "verl": verl.__version__, "manager": type(worker.reward_manager).__name__,
        "scores": scores, "expected": [e for _, _, e in samples], "task_ids": [r["task_id"] for r, _, _ in samples],
        "rm_scores": rm_scores.tolist(), "extra_keys": [sorted(info) for info in extras], "columns": columns,
    }))


if __name__ == "__main__":
    main(*sys.argv[1:4])

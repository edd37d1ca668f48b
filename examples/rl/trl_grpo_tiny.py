r"""One real `trl.GRPOTrainer` step on a dataset's tasks, rewarded by `repo2rlenv.scoring.trl.TestReward`.

    pip install torch==2.13.0                                  # the CPU build here (docs/scoring.md)
    printf 'torch==2.13.0\ntrl==1.16.0\n' > rl-constraints.txt && pip install -c rl-constraints.txt -e ".[rl]"
    python examples/rl/trl_grpo_tiny.py DATASET [--out OUT] [--generations 4] [--steps 1]

DATASET is a validated repo2rlenv dataset (`repo2rlenv generate … --out DATASET`). The script writes the
prompt table (`repo2rlenv export DATASET OUT/rl --format rl`), builds a tiny randomly initialised
Llama (2 layers, hidden size 16) with a tokenizer made on the spot (no download), and trains it with
GRPO on CPU, every completion scored by the task's own verifier in Docker. It prints each completion's
reward and the step's log (`rewards/repo2rlenv_tests/mean`, `repo2rlenv/infra_errors`, the loss).

A random model writes no test file from words, so the tokenizer's vocabulary is made of whole candidate
answers, one token each: every task's reference test file (read from the dataset's `solution/`, fenced as
the prompt asks) and one weak file that catches nothing. A completion is one token, so the group for a
prompt mixes rewards of 1.0 and 0.0 and the step gets a real advantage to learn from. This is a smoke
test of the plumbing (TRL's calling convention, Docker scoring, the logged metrics), not of learning:
with a real policy, pass its name to `GRPOTrainer(model=…)` and drop the tokenizer and model built here.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

SPECIALS = ["<pad>", "<eos>", "<unk>"]
WEAK = "def test_it_runs():\n    assert True\n"
CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant: {% endif %}")


def fenced(source: str) -> str:
    return f"```python\n{source.rstrip()}\n```"


def candidate_answers(dataset_dir: Path, task_ids: list[str]) -> list[str]:
    """The completions the tiny model can write: each task's reference file and a weak file, fenced."""
    from repo2rlenv.dataset.taskdir import DatasetPaths

    data = DatasetPaths(dataset_dir)
    oracles = [next(data.task(task_id).solution.glob("test_*.py")).read_text() for task_id in task_ids]
    return [fenced(source) for source in oracles] + [fenced(WEAK)]


def tiny_tokenizer(answers: list[str]) -> Any:
    """A word-level tokenizer whose vocabulary is the special tokens and `answers` (one token each).

    Prompt words are not in the vocabulary (they encode as <unk>), so the model's choice is among answers."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(SPECIALS + answers)}
    core = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>",
                                        unk_token="<unk>")
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def tiny_model(tokenizer: Any, seed: int = 0) -> Any:
    """A randomly initialised 2-layer Llama sized for `tokenizer`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=tokenizer.eos_token_id, tie_word_embeddings=False)
    return LlamaForCausalLM(config)


def rl_table(dataset_dir: Path, out: Path) -> Any:
    """`repo2rlenv export DATASET OUT --format rl`, loaded as a `datasets.Dataset`."""
    import datasets

    from repo2rlenv.hub.rl_table import RL_MARKER, RL_TABLE, export_rl

    if not (out / RL_MARKER).is_file():
        export_rl(dataset_dir, out)
    return datasets.load_dataset("parquet", data_files=str(out / RL_TABLE))["train"]


def build_trainer(dataset_dir: Path, out: Path, *, reward: Any = None, generations: int = 4, steps: int = 1,
                  seed: int = 0) -> Any:
    """A `GRPOTrainer` over every task of `dataset_dir`, `generations` completions per prompt, on CPU."""
    from trl import GRPOConfig, GRPOTrainer

    from repo2rlenv.scoring.trl import TestReward

    train = rl_table(dataset_dir, out / "rl")
    tokenizer = tiny_tokenizer(candidate_answers(dataset_dir, list(train["task_id"])))
    args = GRPOConfig(
        output_dir=str(out / "trainer"), report_to="none", use_cpu=True, bf16=False, fp16=False,
        max_steps=steps, logging_steps=1, save_strategy="no", seed=seed, learning_rate=1e-2,
        per_device_train_batch_size=generations * len(train), num_generations=generations,
        max_completion_length=1,  # one token: one whole candidate answer
        temperature=1.0, dataloader_num_workers=0, disable_tqdm=True,
    )
    return GRPOTrainer(model=tiny_model(tokenizer, seed), processing_class=tokenizer,
                       reward_funcs=[reward if reward is not None else TestReward(dataset_dir, concurrency=2)],
                       args=args, train_dataset=train)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path, help="a validated repo2rlenv dataset directory")
    parser.add_argument("--out", type=Path, default=Path("out-trl-tiny"))
    parser.add_argument("--generations", type=int, default=4, help="completions per prompt (GRPO group size)")
    parser.add_argument("--steps", type=int, default=1)
    args = parser.parse_args(argv)

    trainer = build_trainer(args.dataset, args.out, generations=args.generations, steps=args.steps)
    try:
        trainer.train()
    finally:
        for reward in trainer.reward_funcs:
            getattr(reward, "close", lambda: None)()
    logs = trainer._logs
    for reward, reason, completion in zip(logs["rewards"]["repo2rlenv_tests"], logs["extra"]["repo2rlenv_reason"],
                                          logs["completion"]):
        text = completion if isinstance(completion, str) else completion[-1]["content"]
        lines = text.strip().splitlines()
        print(f"reward {reward:.1f}  {(lines[1] if len(lines) > 1 else text)[:60]!r:64} {reason[:60]}")
    for entry in trainer.state.log_history:
        print({k: v for k, v in entry.items() if k.startswith(("rewards/", "repo2rlenv/", "reward", "loss", "grad"))})


if __name__ == "__main__":
    main()

"""User-supplied prices: config mapping, R2E_PRICE_* environment, exact model ids, clear errors."""

from __future__ import annotations

import pytest

from repo2rlenv.llm import LLMConfigError, ModelPrice, Prices
from repo2rlenv.llm.prices import env_var


@pytest.mark.parametrize(("model", "name"), [
    ("openai/gpt-4o-mini", "R2E_PRICE_OPENAI_GPT_4O_MINI"),
    ("hosted_vllm/Qwen/Qwen2.5-Coder-7B", "R2E_PRICE_HOSTED_VLLM_QWEN_QWEN2_5_CODER_7B"),
    ("nebius/meta-llama/Llama-3.3-70B-Instruct", "R2E_PRICE_NEBIUS_META_LLAMA_LLAMA_3_3_70B_INSTRUCT"),
])
def test_env_var_name(model, name):
    assert env_var(model) == name


def test_config_then_environment_wins():
    config = {"a/m": {"input_per_mtok": 1, "output_per_mtok": 2}, "b/m": {"input_per_mtok": 3, "output_per_mtok": 4}}
    prices = Prices.load(["a/m", "c/m"], config=config, environ={"R2E_PRICE_A_M": "10, 20", "R2E_PRICE_C_M": "0.5,1"})

    assert prices.for_model("a/m") == ModelPrice(input_per_mtok=10, output_per_mtok=20)
    assert prices.for_model("b/m") == ModelPrice(input_per_mtok=3, output_per_mtok=4)
    assert prices.cost("c/m", 2_000_000, 1_000_000) == pytest.approx(2.0)


def test_exact_model_id_only():
    prices = Prices(models={"openai/gpt-4o": ModelPrice(input_per_mtok=1, output_per_mtok=1)})
    # No guessing from a similar name or another provider's id for the same model.
    assert prices.cost("openai/gpt-4o-mini", 10, 10) is None
    assert prices.cost("azure/gpt-4o", 10, 10) is None


@pytest.mark.parametrize("text", ["0.15", "a,b", "1,2,3", "-1,2"])
def test_bad_environment_price_is_one_clear_error(text):
    with pytest.raises(LLMConfigError, match=r"R2E_PRICE_X_Y=.*expected '<input>,<output>'"):
        Prices.load(["x/y"], environ={"R2E_PRICE_X_Y": text})


def test_bad_config_price():
    with pytest.raises(LLMConfigError, match="price of 'x/y'"):
        Prices.load([], config={"x/y": {"input_per_mtok": 1}}, environ={})

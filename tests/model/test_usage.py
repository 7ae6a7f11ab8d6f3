"""Usage per generation and per run: the reference's derived figures, summed."""

from __future__ import annotations

import msgspec
import pytest

from turnwire.model.usage import GenerationStats, Usage

API = {
    "input_tokens": 1000,
    "input_tokens_details": {"cached_tokens": 800},
    "output_tokens": 120,
    "output_tokens_details": {"reasoning_tokens": 64},
    "total_tokens": 1120,
}


def test_prompt_tokens_are_input_minus_cached_and_completion_is_output():
    usage = Usage.from_api(API)
    assert usage == Usage(
        input_tokens=1000,
        cached_tokens=800,
        prompt_tokens=200,
        completion_tokens=120,
        reasoning_tokens=64,
        total_tokens=1120,
    )


def test_cached_over_input_clamps_prompt_tokens_at_zero():
    usage = Usage.from_api({"input_tokens": 5, "input_tokens_details": {"cached_tokens": 9}})
    assert usage is not None and usage.prompt_tokens == 0


@pytest.mark.parametrize(
    "raw",
    [
        {"input_tokens": "10", "output_tokens": True, "input_tokens_details": "x"},
        {"input_tokens": -3, "output_tokens": None},
        {},
    ],
)
def test_figures_that_are_not_whole_numbers_count_as_zero(raw):
    assert Usage.from_api(raw) == Usage()


def test_no_usage_object_is_no_usage():
    assert Usage.from_api(None) is None
    assert Usage.from_api([1, 2]) is None  # type: ignore[arg-type]


def test_total_defaults_to_input_plus_output():
    usage = Usage.from_api({"input_tokens": 7, "output_tokens": 3})
    assert usage is not None and usage.total_tokens == 10


def test_a_run_total_sums_the_generations_and_skips_those_without_usage():
    first = Usage.from_api(API)
    second = Usage.from_api({"input_tokens": 10, "output_tokens": 2, "total_tokens": 12})
    total = Usage.sum([first, None, second])
    assert total is not None
    assert (total.prompt_tokens, total.completion_tokens, total.total_tokens) == (210, 122, 1132)
    assert Usage.sum([None, None]) is None


def test_stats_name_the_provider():
    assert GenerationStats(finish_reason="stop").provider == "openai_responses"


def test_cache_writes_are_read_summed_and_the_hit_ratio_is_cached_over_input():
    raw = {
        "input_tokens": 1000,
        "input_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 300},
        "output_tokens": 10,
    }
    usage = Usage.from_api(raw)
    assert usage is not None
    assert (usage.cached_tokens, usage.cache_write_tokens) == (600, 300)
    assert usage.cache_hit_ratio == 0.6
    total = usage + Usage(input_tokens=1000, cached_tokens=1000, cache_write_tokens=0)
    assert total.cache_write_tokens == 300
    assert total.cache_hit_ratio == 0.8
    assert Usage().cache_hit_ratio is None  # no input, no ratio
    assert "cache_hit_ratio" not in msgspec.to_builtins(usage)  # derived, never stored

"""Prompt caching as the API reports it: a request that extends an earlier one of the same
prompt_cache_key and model reports the shared prefix as cached_tokens; a changed first item,
another key or another model reports none."""

from __future__ import annotations

from turnwire.emulate.caching import PromptCache, count_tokens, prompt_text

LONG = " ".join(f"fact {n}: the sky over city {n} is clear today." for n in range(400))
FIRST = [{"role": "user", "content": LONG}, {"role": "assistant", "content": "Noted."}]


def _usage(sdk, input_items, **request):
    return sdk.responses.create(model="gpt-5", input=input_items, **request).usage


def test_an_extended_request_hits_and_a_changed_first_item_misses(sdk):
    first = _usage(sdk, FIRST, prompt_cache_key="thread-1")
    assert first.input_tokens > 2048
    assert first.input_tokens_details.cached_tokens == 0
    extended = _usage(
        sdk, [*FIRST, {"role": "user", "content": "And Rome?"}], prompt_cache_key="thread-1"
    )
    cached = extended.input_tokens_details.cached_tokens
    assert cached > 1024
    assert cached % 128 == 0
    assert cached <= extended.input_tokens
    changed = [{"role": "user", "content": "Changed. " + LONG}, *FIRST[1:]]
    assert _usage(sdk, changed, prompt_cache_key="thread-1").input_tokens_details.cached_tokens == 0


def test_another_key_or_model_does_not_share(sdk):
    _usage(sdk, FIRST, prompt_cache_key="a")
    assert _usage(sdk, FIRST, prompt_cache_key="b").input_tokens_details.cached_tokens == 0
    other = sdk.responses.create(model="gpt-5-mini", input=FIRST, prompt_cache_key="a").usage
    assert other.input_tokens_details.cached_tokens == 0
    assert _usage(sdk, FIRST, prompt_cache_key="a").input_tokens_details.cached_tokens > 0


def test_cache_writes_are_reported_under_prompt_cache_options(sdk):
    usage = _usage(sdk, FIRST, prompt_cache_key="w", extra_body={"prompt_cache_options": {}})
    assert usage.input_tokens_details.cache_write_tokens == usage.input_tokens
    assert _usage(sdk, FIRST, prompt_cache_key="x").input_tokens_details.cache_write_tokens == 0


def test_a_short_prefix_is_not_cached_and_the_options_say_so():
    prompt = prompt_text({"input": "short question"})
    strict = PromptCache()
    assert strict.lookup("k", "m", prompt) == (count_tokens(prompt), 0)
    assert strict.lookup("k", "m", prompt)[1] == 0  # under 1,024 tokens
    loose = PromptCache(min_tokens=0, block_tokens=1)
    loose.lookup("k", "m", prompt)
    total, cached = loose.lookup("k", "m", prompt)
    assert cached == total > 0


def test_the_memory_stays_within_its_budget():
    cache = PromptCache(budget_chars=1000, keys=4, prompts_per_key=2)
    for n in range(50):
        cache.lookup(f"k{n % 7}", "m", "x" * 300)
    assert cache._held <= 1000
    assert len(cache._prompts) <= 4

"""Prompt caching as the API reports it: ``cached_tokens`` is the longest prefix a request
shares with an earlier one of the same ``prompt_cache_key`` and model.

The prompt is what the model reads, in order: the tools, the instructions, then each input item
(:func:`turnwire.emulate.state.normalized`). Its tokens are counted with the offline tokenizer
(``toktok``, the ``tokens`` extra) when it is installed, else estimated at four characters a
token. As the API does (its prompt caching guide), a prefix shorter than 1,024 tokens is not
cached, and a longer one counts in blocks of 128 tokens; both are options.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec

from turnwire.emulate.state import normalized

__all__ = ["PromptCache", "count_tokens", "prompt_text"]

_ENCODE = msgspec.json.Encoder(order="sorted")


def prompt_text(body: Mapping[str, Any]) -> str:
    """The prompt of a request body, as one string the cache compares."""
    parts = [
        _ENCODE.encode(body.get("tools") or []).decode(),
        _ENCODE.encode(body.get("instructions")).decode(),
    ]
    raw = body.get("input")
    items: Iterable[object] = (
        [{"role": "user", "content": raw}] if isinstance(raw, str) else raw or []
    )
    parts.extend(_ENCODE.encode(normalized(item)).decode() for item in items)
    return "\n".join(parts) + "\n"


def _counter() -> Callable[[str], int]:
    try:
        import toktok
    except ImportError:
        return lambda text: (len(text) + 3) // 4

    def count(text: str) -> int:
        return int(sum(toktok.batch_count([text], "o200k_base", threads=1))) if text else 0

    return count


def count_tokens(text: str) -> int:
    """The tokens of ``text`` (the offline tokenizer's count, else an estimate)."""
    return _COUNT(text)


_COUNT = _counter()


def _common(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (a binary search over
    slice comparisons, each one ``memcmp``)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class PromptCache:
    """The recent prompts of each ``(prompt_cache_key, model)``: at most ``prompts_per_key``
    of ``keys`` keys, and ``budget_chars`` characters in all (the least recently used key goes
    first).

    :param min_tokens: the shortest prefix that counts (1,024, as the API).
    :param block_tokens: cached tokens are a multiple of this (128, as the API).
    """

    def __init__(
        self,
        *,
        min_tokens: int = 1024,
        block_tokens: int = 128,
        keys: int = 1024,
        prompts_per_key: int = 8,
        budget_chars: int = 64 << 20,
    ) -> None:
        self.min_tokens = min_tokens
        self.block_tokens = max(1, block_tokens)
        self._keys = keys
        self._per_key = prompts_per_key
        self._budget = budget_chars
        self._held = 0
        self._prompts: OrderedDict[tuple[str, str], list[str]] = OrderedDict()
        self._lock = threading.Lock()

    def lookup(self, key: str, model: str, prompt: str) -> tuple[int, int]:
        """``(input_tokens, cached_tokens)`` of ``prompt``, which is remembered for later."""
        total = count_tokens(prompt)
        with self._lock:
            earlier = list(self._prompts.get((key, model), ()))
            self._remember((key, model), prompt)
        shared = max((_common(prompt, old) for old in earlier), default=0)
        if shared == 0:
            return total, 0
        cached = min(count_tokens(prompt[:shared]), total)
        if cached < self.min_tokens:
            return total, 0
        return total, cached - cached % self.block_tokens

    def _remember(self, where: tuple[str, str], prompt: str) -> None:
        if len(prompt) > self._budget:
            return
        prompts = self._prompts.pop(where, [])
        prompts.append(prompt)
        self._held += len(prompt)
        while len(prompts) > self._per_key:
            self._held -= len(prompts.pop(0))
        self._prompts[where] = prompts
        while len(self._prompts) > self._keys or self._held > self._budget:
            _, dropped = self._prompts.popitem(last=False)
            self._held -= sum(map(len, dropped))

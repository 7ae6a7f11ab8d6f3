"""``turnwire.errors``: every error class lives there, and the common ones are importable from the
top."""

from __future__ import annotations

import turnwire
import turnwire.wire


def test_every_error_class_lives_in_errors_and_the_common_ones_are_top_level():
    import inspect

    import turnwire.errors

    classes = {
        name
        for name, value in vars(turnwire.errors).items()
        if inspect.isclass(value)
        and issubclass(value, Exception)
        and value.__module__ == "turnwire.errors"
    }
    assert classes <= set(turnwire.errors.__all__)
    for module in _source_modules():
        for name, value in vars(module).items():
            ours = inspect.isclass(value) and value.__module__ == module.__name__
            if ours and issubclass(value, Exception) and not name.startswith("_"):
                assert module is turnwire.errors, f"{module.__name__}.{name}"
    top = {name for name in turnwire.__all__ if name.endswith("Error")}
    assert top <= classes
    assert {"TurnwireError", "InputError", "ClientError"} <= top


def _source_modules():
    import importlib
    from pathlib import Path

    src = Path(turnwire.__file__).parent
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if parts[-1] == "__main__":
            continue
        yield importlib.import_module(".".join(parts))
